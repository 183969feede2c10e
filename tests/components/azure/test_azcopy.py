"""The Azure DR site's AzCopy jobs (components/azure/azcopy.py), run through the real program
under mocks for examples/aws-to-azure.yaml's DR site with the identity an operator copies from
the primary's outputs and an image set by digest; asserted on what it registered. The config is
written here, not read from the primary's run: the DR stack never needs the primary."""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

import pytest

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import build_site_configs, stack_config_values, stack_name
from gpudr.contract import azcopy_job
from gpudr.contract.azcopy import cron_expression, cron_interval_s
from gpudr.contract.grants import STORAGE_BLOB_DATA_CONTRIBUTOR
from gpudr.contract.stack import AZCOPY_CREDENTIALS, AZCOPY_IMAGE_KEY, key
from gpudr.core.design import design
from gpudr.core.enums import CRON_INTERVAL_HOURS
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "aws-to-azure.yaml"
DR = "eus"
JOB = "azure-native:app:Job"
ENVIRONMENT = "azure-native:app:ManagedEnvironment"
ROLE = "azure-native:authorization:RoleAssignment"
SETTING = "azure-native:monitor:DiagnosticSetting"
WORKSPACE = "azure-native:operationalinsights:Workspace"
IDENTITY_ID = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/"
    "gpudr-llm-azdr-eus-azcopy-identity/providers/Microsoft.ManagedIdentity/"
    "userAssignedIdentities/gpudr-llm-azdr-eus-azcopy"
)
IDENTITY = {
    "azcopy_identity_id": IDENTITY_ID,
    "azcopy_client_id": "3f1c2b7a-0000-4000-8000-000000000001",
    "azcopy_principal_id": "3f1c2b7a-0000-4000-8000-000000000002",
    "azcopy_tenant_id": "11111111-1111-1111-1111-111111111111",
}
IMAGE = "acmedr.azurecr.io/gpudr-azcopy@sha256:" + "ab" * 32


def run(mode: str = "standby", **extra: str) -> StackRun:
    plan = load_plan(EXAMPLE)
    site = plan.sites[DR]
    config: dict[str, Any] = stack_config_values(design(plan), site)
    config.update({key(k): v for k, v in extra.items()})
    config["gpudr:mode"] = mode
    return run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))


@cache
def dr() -> StackRun:
    return run(**IDENTITY, azcopy_image=IMAGE)


def of_type(r: StackRun, typ: str) -> list[Registration]:
    return [x for x in r.resources if x.type == typ]


def jobs() -> dict[str, Registration]:
    return {j.inputs["jobName"].split("-")[1]: j for j in of_type(dr(), JOB)}


def env(job: Registration) -> dict[str, str]:
    (container,) = job.inputs["template"]["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


def inbound() -> dict[str, Any]:
    cfg = build_site_configs(design(load_plan(EXAMPLE)))[DR]
    return {b.data_class: (b, b.inbound[0]) for b in cfg.buckets if b.inbound}


def test_one_scheduled_job_per_pulled_class_on_the_plans_interval() -> None:
    assert set(jobs()) == set(inbound()) == {"checkpoints", "datasets"}
    for cls, job in jobs().items():
        _, t = inbound()[cls]
        config = job.inputs["configuration"]
        assert config["triggerType"] == "Schedule", job.urn
        trigger = config["scheduleTriggerConfig"]
        assert trigger["cronExpression"] == cron_expression(t.schedule_s), job.urn
        assert cron_interval_s(trigger["cronExpression"]) == t.schedule_s, job.urn
        assert (trigger["parallelism"], trigger["replicaCompletionCount"]) == (1, 1), job.urn
        # a run ends before the next is due, and within its 12 h AWS session
        assert config["replicaTimeout"] == min(43200, t.schedule_s), job.urn
        assert config["replicaRetryLimit"] == 0, job.urn  # no retry overlapping the next run
    # the example: checkpoints every 2 h (4 h RPO), datasets every 12 h (24 h RPO)
    crons = {
        c: j.inputs["configuration"]["scheduleTriggerConfig"]["cronExpression"]
        for c, j in jobs().items()
    }
    assert crons == {"checkpoints": "0 */2 * * *", "datasets": "0 */12 * * *"}


def test_the_job_runs_gpudrs_entrypoint_as_the_copied_identity_from_the_image_by_digest() -> None:
    for cls, job in jobs().items():
        bucket, t = inbound()[cls]
        (container,) = job.inputs["template"]["containers"]
        assert container["image"] == IMAGE, job.urn
        assert container["command"] == list(azcopy_job.COMMAND), job.urn
        assert container["resources"] == {"cpu": 1.0, "memory": "2Gi"}, job.urn
        assert job.inputs["identity"] == {
            "type": "UserAssigned",
            "userAssignedIdentities": [IDENTITY_ID],
        }, job.urn
        # the registry (an ACR) is pulled from as the same identity: no registry password
        assert job.inputs["configuration"]["registries"] == [
            {"server": "acmedr.azurecr.io", "identity": IDENTITY_ID}
        ], job.urn
        assert "secrets" not in job.inputs["configuration"], job.urn
        values = env(job)
        assert values[azcopy_job.ENV_SOURCE] == t.source_bucket, job.urn
        assert values[azcopy_job.ENV_SOURCE_REGION] == "us-east-1", job.urn
        assert values[azcopy_job.ENV_ROLE_ARN] == (
            "arn:aws:iam::111122223333:role/gpudr-llm-azdr-eus-azcopy-reader"
        ), job.urn
        assert values[azcopy_job.ENV_SESSION_S] == "43200", job.urn
        assert values[azcopy_job.ENV_CLIENT_ID] == IDENTITY["azcopy_client_id"], job.urn
        assert values[azcopy_job.ENV_LOGIN] == "MSI", job.urn
        assert values[azcopy_job.ENV_DESTINATION].endswith(
            f".blob.core.windows.net/{bucket.name}"
        ), job.urn
        # only the checkpoint pull deletes what the source no longer keeps
        assert values[azcopy_job.ENV_MIRROR_DELETES] == str(cls == "checkpoints").lower()
        assert not any("KEY" in k and "AZCOPY" not in k for k in values), values  # no keys


def test_the_identity_writes_each_replica_container_only() -> None:
    grants = [r for r in of_type(dr(), ROLE) if "azcopy" in r.name]
    assert len(grants) == 2
    for g in grants:
        assert g.inputs["roleDefinitionId"].endswith(STORAGE_BLOB_DATA_CONTRIBUTOR), g.urn
        assert g.inputs["principalId"] == IDENTITY["azcopy_principal_id"], g.urn
        assert g.inputs["principalType"] == "ServicePrincipal", g.urn
        assert "/blobServices/default/containers/" in g.inputs["scope"], g.urn
    scopes = {g.inputs["scope"].rsplit("/", 1)[-1] for g in grants}
    assert scopes == {b.name for b, _ in inbound().values()}


def test_the_environment_is_consumption_only_with_its_logs_in_the_site_workspace() -> None:
    (environment,) = of_type(dr(), ENVIRONMENT)
    (profile,) = environment.inputs["workloadProfiles"]
    assert (profile["name"], profile["workloadProfileType"]) == ("Consumption", "Consumption")
    assert environment.inputs["appLogsConfiguration"] == {"destination": "azure-monitor"}
    assert "vnetConfiguration" not in environment.inputs  # jobs take no requests: no ingress
    (setting,) = [s for s in of_type(dr(), SETTING) if "azcopy" in s.name]
    (workspace,) = of_type(dr(), WORKSPACE)
    assert setting.inputs["workspaceId"] == workspace.outputs["id"], setting.urn
    assert setting.inputs["logs"] == [{"categoryGroup": "allLogs", "enabled": True}]
    for job in jobs().values():
        assert job.inputs["environmentId"] == environment.outputs["id"], job.urn
        assert job.inputs["workloadProfileName"] == "Consumption", job.urn


@pytest.mark.parametrize("missing", [*(n for n, _ in AZCOPY_CREDENTIALS), "azcopy_image"])
def test_without_every_identity_id_and_the_image_no_job_is_declared(
    missing: str, caplog: pytest.LogCaptureFixture
) -> None:
    values = {**IDENTITY, "azcopy_image": IMAGE}
    del values[missing]
    with caplog.at_level(logging.WARNING):
        r = run(**values)
    assert of_type(r, JOB) == [] and of_type(r, ENVIRONMENT) == []
    (text,) = [x.getMessage() for x in caplog.records if "AzCopy jobs" in x.getMessage()]
    assert f"gpudr:{missing}" in text.split(" not set")[0], text
    assert "pulumi stack output transfer_credentials" in text, text
    assert f"pulumi config set {AZCOPY_IMAGE_KEY} " in text, text


@pytest.mark.parametrize(
    "image",
    [
        "acmedr.azurecr.io/gpudr-azcopy:10.32.7",  # a tag can be moved
        "acmedr.azurecr.io/gpudr-azcopy@sha256:" + "ab" * 31,  # a short digest
        "gpudr-azcopy@sha256:" + "ab" * 32,  # no registry
    ],
)
def test_an_image_not_named_by_digest_is_refused(image: str) -> None:
    with pytest.raises(Exception, match="does not name an image by digest"):
        run(**IDENTITY, azcopy_image=image)


def test_in_failover_a_removed_identity_is_left_removed() -> None:
    r = run("failover", **IDENTITY, azcopy_image=IMAGE)
    for job in of_type(r, JOB):
        assert job.ignore_changes == ("identity",), job.urn
    for job in jobs().values():
        assert job.ignore_changes == (), job.urn


def test_cron_intervals_are_what_cron_keeps() -> None:
    for hours in CRON_INTERVAL_HOURS:
        assert cron_interval_s(cron_expression(hours * 3600)) == hours * 3600
    with pytest.raises(ValueError, match="not one cron keeps"):
        cron_expression(5 * 3600)


def test_an_identity_of_another_tenant_is_refused() -> None:
    other = {**IDENTITY, "azcopy_tenant_id": "22222222-2222-2222-2222-222222222222"}
    with pytest.raises(Exception, match="this stack's Azure tenant is"):
        run(**other, azcopy_image=IMAGE)
