"""cluster-control-plane-logged: EKS log types, GKE logging components, AKS diagnostic settings
and Container Insights; one setting at a time, untagged clusters and API-version modules too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy import StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from policies.cluster_control_plane_logged import cluster_control_plane_logged
from tests.policies.builders import aks, eks, workspace
from tests.policies.harness import (
    UNKNOWN,
    Res,
    Violations,
    check,
    collector,
    policy_resources,
    records,
    run_stack,
)

EKS, GKE = "aws:eks/cluster:Cluster", "gcp:container/cluster:Cluster"
EKS_LOGS = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
GKE_LOGS = ["SYSTEM_COMPONENTS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER", "WORKLOADS"]

Mutation = Callable[[dict[str, Res]], Any]


@pytest.mark.parametrize(
    ("token", "inputs", "expected"),
    [
        pytest.param(EKS, {"enabledClusterLogTypes": EKS_LOGS}, None, id="eks-all-five"),
        pytest.param(
            EKS,
            {"enabledClusterLogTypes": ["api", "audit", "authenticator"]},
            "controllerManager, scheduler are off",
            id="eks-three",
        ),
        pytest.param(EKS, {}, "api, audit, authenticator", id="eks-none"),
        pytest.param(GKE, {"loggingConfig": {"enableComponents": GKE_LOGS}}, None, id="gke-all"),
        pytest.param(
            GKE,
            {"loggingConfig": {"enableComponents": GKE_LOGS[:4]}},
            None,
            id="gke-without-workloads",
        ),
        pytest.param(
            GKE,
            {"loggingConfig": {"enableComponents": ["SYSTEM_COMPONENTS", "WORKLOADS"]}},
            "lacks APISERVER, CONTROLLER_MANAGER, SCHEDULER",
            id="gke-default-components",
        ),
        pytest.param(
            GKE,
            {"loggingConfig": {"enableComponents": GKE_LOGS[1:]}},
            "lacks SYSTEM_COMPONENTS",
            id="gke-no-system-components",
        ),
        pytest.param(GKE, {}, "logging_config is not set", id="gke-unset"),
        pytest.param(
            GKE,
            {"loggingConfig": {"enableComponents": GKE_LOGS}, "loggingService": "none"},
            'logging_service is "none"',
            id="gke-logging-service-none",
        ),
    ],
)
def test_eks_and_gke(token: str, inputs: dict[str, Any], expected: str | None) -> None:
    if token == EKS:  # named, with its control-plane log group declared
        r = eks()
        cluster = r["cluster"]
        cluster.inputs = {"name": cluster.inputs["name"], **inputs}
        resources = list(r.values())
    else:
        cluster = Res(token, "train", inputs)
        resources = [cluster]
    check(run_stack(cluster_control_plane_logged, resources), cluster, expected)


# --- Fix 2: the EKS control-plane log group, declared with a key and a retention -------------

GROUP = "/aws/eks/llm-use1-train/cluster"


def group(**changes: Any) -> Mutation:
    """The log group's inputs changed (None removes one)."""

    def mutate(r: dict[str, Res]) -> None:
        r["group"].inputs.update(changes)
        r["group"].inputs = {k: v for k, v in r["group"].inputs.items() if v is not None}

    return mutate


def name_from_the_cluster(r: dict[str, Res], cluster_name: Any) -> None:
    """The group's name computed from the cluster's (unknown during preview)."""
    r["group"].inputs["name"] = UNKNOWN
    r["group"].link("name", r["cluster"])
    r["cluster"].inputs["name"] = cluster_name


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="declared-with-key-and-retention"),
        pytest.param(group(kmsKeyId=UNKNOWN), None, id="key-unknown-from-this-stack"),
        pytest.param(group(region=None), None, id="group-in-the-providers-region"),
        pytest.param(lambda r: name_from_the_cluster(r, "llm-use1-train"), None,
                     id="name-unknown-computed-from-the-cluster"),
        pytest.param(lambda r: name_from_the_cluster(r, UNKNOWN), None,
                     id="cluster-name-unknown-group-computed-from-it"),
        pytest.param(lambda r: r.pop("group"),
                     f"no aws.cloudwatch.LogGroup named {GROUP} in this stack", id="no-group"),
        pytest.param(group(name="/aws/eks/llm-use1-serve/cluster"), "no aws.cloudwatch.LogGroup",
                     id="another-clusters-group"),
        pytest.param(group(name=f"{GROUP}/x"), "no aws.cloudwatch.LogGroup", id="another-name"),
        pytest.param(group(region="us-west-2"), "no aws.cloudwatch.LogGroup",
                     id="group-in-another-region"),
        pytest.param(group(name=UNKNOWN), "no aws.cloudwatch.LogGroup",
                     id="name-unknown-not-from-the-cluster"),
        pytest.param(group(kmsKeyId=None), f"its log group train-control-plane-logs ({GROUP}) "
                     "has no kms_key_id", id="no-key"),
        pytest.param(group(kmsKeyId=""), "no kms_key_id", id="empty-key"),
        pytest.param(group(retentionInDays=None), "no retention_in_days", id="kept-forever"),
        pytest.param(group(retentionInDays=0.0), "no retention_in_days", id="retention-0"),
        pytest.param(group(kmsKeyId=None, retentionInDays=None),
                     "no kms_key_id (CloudWatch Logs' own encryption, not the site's key); no "
                     "retention_in_days", id="neither"),
        pytest.param(lambda r: r["cluster"].inputs.pop("name"), "its name is not set",
                     id="cluster-unnamed"),
        pytest.param(lambda r: (r.pop("group"), r["cluster"].inputs.update(name=UNKNOWN)),
                     "/aws/eks/<cluster name>/cluster", id="cluster-name-unknown-no-group"),
    ],
)  # fmt: skip
def test_eks_log_group(mutate: Mutation, expected: str | None) -> None:
    r = eks()
    mutate(r)
    check(run_stack(cluster_control_plane_logged, list(r.values())), r["cluster"], expected)


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda r: r["cluster"].inputs.update(name=UNKNOWN), id="cluster-name"),
        pytest.param(
            lambda r: (
                r["group"].property_dependencies.pop("kmsKeyId"),
                r["group"].inputs.update(kmsKeyId=UNKNOWN),
            ),
            id="key-from-outside-the-stack",
        ),
    ],
)
def test_an_unknown_value_that_decides_the_log_group_cannot_be_judged_yet(
    mutate: Mutation,
) -> None:
    r = eks()
    mutate(r)
    with pytest.raises(UnknownValueError):
        args = StackValidationArgs(policy_resources(records(list(r.values()))))
        cluster_control_plane_logged.validate(args, collector([]))


def oms(r: dict[str, Res]) -> dict[str, Any]:
    return r["cluster"].inputs["addonProfiles"]["omsagent"]  # type: ignore[no-any-return]


def categories(*names: str) -> Mutation:
    def mutate(r: dict[str, Res]) -> None:
        r["diagnostics"].inputs["logs"] = [{"category": c, "enabled": True} for c in names]

    return mutate


def workspace_from_this_stack(r: dict[str, Res]) -> None:
    logs = workspace()
    r["workspace"] = logs
    oms(r)["config"]["logAnalyticsWorkspaceResourceID"] = UNKNOWN
    r["cluster"].link("addonProfiles", logs)


def retype(resource: Res, token: str) -> None:
    resource.type = token


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="audit-admin-and-container-insights"),
        pytest.param(categories("kube-audit"), None, id="kube-audit"),
        pytest.param(
            lambda r: r["diagnostics"].inputs.update(
                logs=[{"categoryGroup": "allLogs", "enabled": True}]
            ),
            None,
            id="all-logs-group",
        ),
        pytest.param(
            lambda r: r["diagnostics"].property_dependencies.clear(), None, id="uri-spelt-out"
        ),
        pytest.param(
            lambda r: r["diagnostics"].inputs.update(resourceUri=UNKNOWN),
            None,
            id="uri-unknown-from-the-cluster",
        ),
        pytest.param(
            lambda r: (
                r["cluster"]
                .inputs["addonProfiles"]
                .update(omsAgent=r["cluster"].inputs["addonProfiles"].pop("omsagent"))
            ),
            None,
            id="add-on-key-case",
        ),
        pytest.param(workspace_from_this_stack, None, id="workspace-unknown-from-this-stack"),
        pytest.param(
            lambda r: retype(
                r["cluster"], "azure-native:containerservice/v20240801:ManagedCluster"
            ),
            None,
            id="api-version-module",
        ),
        pytest.param(
            categories("kube-apiserver", "guard"),
            "neither kube-audit nor kube-audit-admin enabled",
            id="no-audit-category",
        ),
        pytest.param(
            lambda r: r["diagnostics"].inputs["logs"][0].update(enabled=False),
            "neither kube-audit",
            id="audit-disabled",
        ),
        pytest.param(
            lambda r: r["diagnostics"].inputs.pop("workspaceId"),
            "no destination",
            id="no-destination",
        ),
        pytest.param(
            lambda r: r.pop("diagnostics"),
            "no DiagnosticSetting has its id as resource_uri",
            id="no-diagnostic-setting",
        ),
        pytest.param(
            lambda r: (
                r["diagnostics"].property_dependencies.clear(),
                r["diagnostics"].inputs.update(
                    resourceUri=r["diagnostics"].inputs["resourceUri"] + "-other"
                ),
            ),
            "no DiagnosticSetting",
            id="another-clusters-uri",
        ),
        pytest.param(lambda r: oms(r).update(enabled=False), "omsagent add-on", id="oms-off"),
        pytest.param(
            lambda r: r["cluster"].inputs.pop("addonProfiles"), "Container Insights", id="no-oms"
        ),
        pytest.param(
            lambda r: oms(r).pop("config"), "names no workspace", id="oms-without-workspace"
        ),
    ],
)
def test_aks(mutate: Mutation, expected: str | None) -> None:
    r = aks()
    mutate(r)
    check(run_stack(cluster_control_plane_logged, list(r.values())), r["cluster"], expected)


def test_aks_reports_every_gap_in_one_message() -> None:
    r = aks()
    r.pop("diagnostics")
    r["cluster"].inputs.pop("addonProfiles")
    found = run_stack(cluster_control_plane_logged, list(r.values()))
    check(found, r["cluster"], "no DiagnosticSetting")
    assert "omsagent" in found[0][0], found


def test_an_unknown_workspace_from_outside_the_stack_stops_only_its_cluster() -> None:
    """The engine turns the raised error into its advisory "can't run during preview"
    diagnostic; the other clusters' violations are already reported."""
    unknown = aks("serve")
    oms(unknown)["config"]["logAnalyticsWorkspaceResourceID"] = UNKNOWN
    bare = Res(EKS, "eks", {})
    found: Violations = []
    with pytest.raises(UnknownValueError):
        args = StackValidationArgs(policy_resources(records([*unknown.values(), bare])))
        cluster_control_plane_logged.validate(args, collector(found))
    assert [u for _, u in found] == [bare.urn]


def test_an_exemption_in_the_pack_config_exempts_that_cluster_only() -> None:
    eks, gke = Res(EKS, "legacy", {}), Res(GKE, "train", {})
    reason = "retired cluster, removed in Q3 (SEC-42)"
    config = {"exemptions": [{"resource": "legacy", "stack": "test", "reason": reason}]}
    found = run_stack(cluster_control_plane_logged, [eks, gke], config)
    assert [u for _, u in found] == [gke.urn]
