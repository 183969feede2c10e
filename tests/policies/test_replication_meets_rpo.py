"""replication-meets-rpo: each mechanism's guarantee against the class's RPO, per cloud."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpudr.contract import azcopy_job
from gpudr.contract.azure_onprem import (
    BLOB_PRIVATE_ZONE,
    START_JOB_ACTIONS,
    schedule_definition,
    started_jobs,
)
from policies.common import (
    AZ_CONTAINER_APP_JOB,
    AZ_LOGIC_WORKFLOW,
    AZ_MOVER_ENDPOINT,
    AZ_MOVER_JOB,
    AZ_OBJECT_REPLICATION,
    AZ_PRIVATE_DNS_LINK,
    AZ_PRIVATE_DNS_ZONE,
    AZ_PRIVATE_DNS_ZONE_GROUP,
    AZ_PRIVATE_ENDPOINT,
    AZ_ROLE_ASSIGNMENT,
    AZ_ROLE_DEFINITION,
    DATASYNC_S3_LOCATION,
    DATASYNC_TASK,
    GCS_TRANSFER_JOB,
)
from policies.replication_meets_rpo import replication_meets_rpo
from tests.policies.builders import (
    AZURE_CHECKPOINTS,
    CHECKPOINTS,
    DATASETS,
    SUBSCRIPTION,
    WEIGHTS,
    azure,
    gcs,
    labels,
    readers,
    rtc_rule,
    s3,
    tags,
)
from tests.policies.harness import Res, check, run_stack

Mutation = Callable[[dict[str, Res]], Any]


def retag(r: dict[str, Res], key: str = "bucket", **changes: str | None) -> dict[str, Res]:
    """Change the bucket's gpudr tags (labels on GCP) from its current facts."""
    bucket = r[key]
    if "labels" in bucket.inputs:
        current = {k[len("gpudr-") :]: v for k, v in bucket.inputs["labels"].items()}
        bucket.inputs["labels"] = labels(current, **changes)
    else:
        current = {k[len("gpudr:") :]: v for k, v in bucket.inputs["tags"].items()}
        bucket.inputs["tags"] = tags(current, **changes)
    return r


# --- S3 cross-region replication, checked on the source ---------------------------------


def rules(r: dict[str, Res]) -> list[dict[str, Any]]:
    return r["replication"].inputs["rules"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="rtc-45m-interval-4h-rpo"),
        pytest.param(lambda r: retag(r, mechanism="crr"), None, id="tag-crr-but-rtc-configured"),
        pytest.param(lambda r: retag(r, rpo_s="3600"), None, id="rpo-exactly-interval-plus-15m"),
        pytest.param(lambda r: retag(r, rpo_s="3000"), "= 1h", id="rpo-below-interval-plus-15m"),
        pytest.param(lambda r: retag(r, rpo_s="0"), "dual-write", id="rpo-zero"),
        pytest.param(
            lambda r: rules(r).__setitem__(0, rtc_rule(rtc=False)),
            "without RTC S3 guarantees no replication time",
            id="crr-without-rtc",
        ),
        pytest.param(
            lambda r: rules(r)[0]["destination"].pop("metrics"),
            "Replication Time Control",
            id="rtc-without-metrics",
        ),
        pytest.param(
            lambda r: rules(r)[0].update(filter={"prefix": "no-such-prefix/"}),
            "covers the whole bucket",
            id="rule-filtered-to-a-prefix",
        ),
        pytest.param(
            lambda r: rules(r)[0].update(filter={"tag": {"key": "dr", "value": "yes"}}),
            "covers the whole bucket",
            id="rule-filtered-to-a-tag",
        ),
        pytest.param(
            lambda r: rules(r)[0].update(status="Disabled"),
            "no enabled replication rule",
            id="rule-disabled",
        ),
        pytest.param(lambda r: r.pop("replication"), "no BucketReplicationConfig", id="none"),
        pytest.param(lambda r: retag(r, rpo_s="none"), None, id="no-rpo-replicated"),
        pytest.param(
            lambda r: (rules(r).__setitem__(0, rtc_rule(rtc=False)), retag(r, rpo_s="none")),
            None,
            id="no-rpo-without-rtc-still-replicated",
        ),
        pytest.param(
            lambda r: (r.pop("replication"), retag(r, rpo_s="none")),
            "no BucketReplicationConfig",
            id="no-rpo-is-no-switch",
        ),
        pytest.param(
            lambda r: (r.pop("replication"), retag(r, dr_role="data-replica")),
            None,
            id="replica-side-has-nothing-to-check",
        ),
        pytest.param(
            lambda r: (r.pop("replication"), retag(r, mechanism="none")),
            "replicated by nothing",
            id="mechanism-none",
        ),
        pytest.param(
            lambda r: retag(r, mechanism="carrier-pigeon"), "unknown mechanism", id="unknown"
        ),
        pytest.param(lambda r: retag(r, rpo_s=None), "without the tags gpudr:rpo-s", id="no-tag"),
    ],
)
def test_s3_crr(mutate: Mutation, expected: str | None) -> None:
    r = s3()
    mutate(r)
    check(run_stack(replication_meets_rpo, list(r.values())), r["bucket"], expected)


# A dataset's interval-s is its refresh period: how often its burst comes, not data lost (the
# refresh is whole at the primary before it replicates). RTC's bound is then 15 min alone.
REFRESH = {**DATASETS, "interval-s": "604800", "burst-bytes": "100000000000000"}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param({**REFRESH, "rpo-s": "3600"}, None, id="refresh-weekly-rpo-1h"),
        pytest.param({**REFRESH, "rpo-s": "600"}, "= 15m", id="refresh-rpo-below-rtc-bound"),
        pytest.param({**CHECKPOINTS, "rpo-s": "3000"}, "= 1h", id="checkpoint-interval-is-loss"),
    ],
)
def test_s3_rtc_bound_adds_only_the_loss(facts: dict[str, str], expected: str | None) -> None:
    r = s3(facts["data-class"], facts)
    check(run_stack(replication_meets_rpo, list(r.values())), r["bucket"], expected)


def test_dual_write_holds_rpo_zero_at_the_writer() -> None:
    r = s3("weights", WEIGHTS)
    assert run_stack(replication_meets_rpo, list(r.values())) == []


# --- GCS dual-region, checked on the one bucket (the DR stack's) ----------------------------


def gcs_inputs(r: dict[str, Res]) -> dict[str, Any]:
    return r["bucket"].inputs


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="turbo-custom-dual-region"),
        pytest.param(
            lambda r: (
                gcs_inputs(r).pop("customPlacementConfig"),
                gcs_inputs(r).update(location="NAM4"),
            ),
            None,
            id="turbo-predefined-dual-region",
        ),
        pytest.param(
            lambda r: gcs_inputs(r).pop("rpo"), "not a guarantee", id="default-replication"
        ),
        pytest.param(
            lambda r: gcs_inputs(r).update(rpo="DEFAULT"), "not a guarantee", id="rpo-default"
        ),
        pytest.param(
            lambda r: (
                gcs_inputs(r).pop("customPlacementConfig"),
                gcs_inputs(r).update(location="US-EAST4"),
            ),
            "not a dual-region",
            id="single-region",
        ),
        pytest.param(lambda r: retag(r, rpo_s="1800"), "= 1h", id="rpo-below-interval-plus-15m"),
        pytest.param(
            lambda r: (gcs_inputs(r).pop("rpo"), retag(r, rpo_s="none")), None, id="no-rpo"
        ),
        pytest.param(
            lambda r: (
                gcs_inputs(r).pop("customPlacementConfig"),
                gcs_inputs(r).update(location="US-EAST4"),
                retag(r, rpo_s="none"),
            ),
            "not a dual-region",
            id="no-rpo-single-region",
        ),
    ],
)
def test_gcs_dual_region(mutate: Mutation, expected: str | None) -> None:
    r = gcs()
    mutate(r)
    check(run_stack(replication_meets_rpo, list(r.values())), r["bucket"], expected)


# --- scheduled pulls, checked on the replica (the DR stack holds the job) ------------------

PULLED_CHECKPOINTS = {**CHECKPOINTS, "dr-role": "data-replica", "quota-mbps": "10000"}


END_DATE = {"year": 2020, "month": 1, "day": 1}


def sts(every: str | None = "7200s", **inputs: Any) -> dict[str, Res]:
    """A GCS replica pulled from S3 every `every` (examples/aws-to-gcp.yaml's checkpoints)."""
    r = gcs("checkpoints", {**PULLED_CHECKPOINTS, "mechanism": "sts"})
    sink = r["bucket"]
    job_inputs: dict[str, Any] = {
        "transferSpec": {
            "awsS3DataSource": {"bucketName": "llm-use1-checkpoints-abc123"},
            "gcsDataSink": {"bucketName": sink.inputs["name"]},
        },
        "status": "ENABLED",
        "schedule": {"repeatInterval": every} if every else {},
        **inputs,
    }
    r["job"] = Res(GCS_TRANSFER_JOB, "checkpoints-transfer", job_inputs).link("transferSpec", sink)
    return r


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        # 2 h + one run (711 GB at 10 Gbps: 9m29s) + the 45 min interval = 2h54m29s <= 4 h
        pytest.param(lambda: sts(), None, id="every-2h"),
        pytest.param(lambda: sts("10800s"), None, id="every-3h"),
        pytest.param(lambda: sts("14400s"), "runs every 4h", id="every-4h"),
        pytest.param(lambda: sts(None, schedule=None), "no repeating schedule", id="one-shot"),
        pytest.param(lambda: sts(None), "runs every 24h", id="sts-default-24h"),
        pytest.param(lambda: sts(status="DISABLED"), "no enabled", id="disabled"),
        pytest.param(
            lambda: sts(
                transferSpec={
                    "awsS3DataSource": {"bucketName": "llm-use1-checkpoints-abc123"},
                    "gcsDataSink": {"bucketName": "llm-use4-checkpoints-abc123"},
                    "objectConditions": {"includePrefixes": ["nothing/"]},
                }
            ),
            "pulls the whole source",
            id="filtered-job",
        ),
        pytest.param(
            lambda: sts(
                schedule={
                    "repeatInterval": "7200s",
                    "scheduleEndDate": {"year": 2020, "month": 1, "day": 1},
                }
            ),
            "pulls the whole source",
            id="job-with-an-end-date",
        ),
        pytest.param(
            lambda: {k: v for k, v in sts().items() if k != "job"}, "no enabled", id="no-job"
        ),
    ],
)
def test_sts_pull(build: Callable[[], dict[str, Res]], expected: str | None) -> None:
    r = build()
    if "job" in r and r["job"].inputs.get("schedule") is None:
        r["job"].inputs.pop("schedule", None)
    check(run_stack(replication_meets_rpo, list(r.values())), r["bucket"], expected)


def test_sts_job_linked_by_sink_name_only() -> None:
    r = sts()
    r["job"].property_dependencies.clear()
    assert run_stack(replication_meets_rpo, list(r.values())) == []


def test_sts_run_time_counts_at_the_asserted_rate() -> None:
    """A 2 h run holds up to three 45 min checkpoints (3 x 266.67 GB = 800 GB, more than the
    711 GB the steady rate alone suggests): 3h33m20s at 500 Mbps, and 2h + 3h33m20s + 45m misses
    the 4 h RPO."""
    r = sts()
    retag(r, quota_mbps="500")
    found = run_stack(replication_meets_rpo, list(r.values()))
    check(found, r["bucket"], "a run takes 3h33m20s")


def test_sts_source_bucket_is_checked_in_the_dr_stack_not_here() -> None:
    """The job and its schedule live at the DR site; here only the reader's grant counts."""
    r = readers(s3("checkpoints", {**CHECKPOINTS, "mechanism": "sts"}))
    r.pop("replication", None)
    assert run_stack(replication_meets_rpo, list(r.values())) == []


def test_datasets_daily_pull_fits_a_day() -> None:
    r = gcs("datasets", {**DATASETS, "dr-role": "data-replica", "mechanism": "sts"})
    sink = r["bucket"]
    r["job"] = Res(
        GCS_TRANSFER_JOB,
        "datasets-transfer",
        {
            "transferSpec": {"gcsDataSink": {"bucketName": sink.inputs["name"]}},
            "schedule": {"repeatInterval": "82800s"},
        },
    ).link("transferSpec", sink)
    assert run_stack(replication_meets_rpo, list(r.values())) == []


def datasync(expression: str | None = "rate(2 hours)", by_name: bool = False) -> dict[str, Res]:
    """An S3 replica pulled from GCS by DataSync (examples/gcp-to-aws.yaml's checkpoints)."""
    r = s3("checkpoints", {**PULLED_CHECKPOINTS, "mechanism": "datasync"})
    bucket = r["bucket"]
    location = Res(
        DATASYNC_S3_LOCATION,
        "checkpoints-sink",
        {"s3BucketArn": f"arn:aws:s3:::{bucket.inputs['bucket']}", "subdirectory": "/"},
    )
    if not by_name:
        location.link("s3BucketArn", bucket)
    schedule = {"scheduleExpression": expression, "status": "ENABLED"} if expression else None
    task = Res(
        DATASYNC_TASK,
        "checkpoints-from-usc1",
        {"taskMode": "ENHANCED", **({"schedule": schedule} if schedule else {})},
    ).link("destinationLocationArn", location)
    r.update(location=location, task=task)
    return r


def _filtered(task: Res) -> Res:
    task.inputs["excludes"] = {"filterType": "SIMPLE_PATTERN", "value": "*"}
    return task


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(lambda: datasync(), None, id="rate-2-hours"),
        pytest.param(lambda: datasync("rate(1 hour)"), None, id="rate-1-hour"),
        pytest.param(lambda: datasync(by_name=True), None, id="location-by-bucket-arn"),
        pytest.param(lambda: datasync("rate(4 hours)"), "runs every 4h", id="rate-4-hours"),
        pytest.param(lambda: datasync("cron(0 */2 * * ? *)"), "no repeating schedule", id="cron"),
        pytest.param(lambda: datasync(None), "no repeating schedule", id="unscheduled"),
        pytest.param(
            lambda: {**(r := datasync()), "task": _filtered(r["task"])},
            "pulls the whole source",
            id="filtered-task",
        ),
        pytest.param(
            lambda: {k: v for k, v in datasync().items() if k != "task"},
            "no enabled DataSync task",
            id="no-task",
        ),
    ],
)
def test_datasync_pull(build: Callable[[], dict[str, Res]], expected: str | None) -> None:
    r = build()
    check(run_stack(replication_meets_rpo, list(r.values())), r["bucket"], expected)


def onprem_datasync(name: str, facts: dict[str, str], expression: str) -> dict[str, Res]:
    """An S3 replica pulled from on premises by DataSync agents (examples/onprem-to-aws.yaml),
    its keys prefixed by the class so that two classes can share a stack."""
    r = s3(name, {**facts, "mechanism": "datasync-agent"})
    bucket = r["bucket"]
    location = Res(
        DATASYNC_S3_LOCATION,
        f"{name}-sink",
        {"s3BucketArn": f"arn:aws:s3:::{bucket.inputs['bucket']}", "subdirectory": "/"},
    ).link("s3BucketArn", bucket)
    task = Res(
        DATASYNC_TASK,
        f"{name}-from-fra1",
        {
            "taskMode": "ENHANCED",
            "schedule": {"scheduleExpression": expression, "status": "ENABLED"},
        },
    ).link("destinationLocationArn", location)
    r.update(location=location, task=task)
    return {f"{name}-{k}": v for k, v in r.items()}


# A 6 TB dataset refresh: at the asserted 10 Gbps its run takes 4,800 s.
BIG_DATASETS = {
    **DATASETS,
    "dr-role": "data-replica",
    "rpo-s": "none",
    "burst-bytes": "6000000000000",
    "steady-kbps": "0",
    "interval-s": "86400",
    "quota-mbps": "10000",
}


@pytest.mark.parametrize(
    ("with_datasets", "expected"),
    [
        pytest.param(False, None, id="alone"),
        # 2h + 4,800 s behind the datasets run + 213 s + the 45 min checkpoint interval > 4h
        pytest.param(True, "behind the other classes' runs", id="queued-behind-datasets"),
    ],
)
def test_a_datasync_run_from_on_premises_waits_for_the_other_classes_runs(
    with_datasets: bool, expected: str | None
) -> None:
    """An agent runs one task at a time and every task uses every agent: a class's run may
    queue behind every other class's run."""
    r = onprem_datasync("checkpoints", PULLED_CHECKPOINTS, "rate(2 hours)")
    if with_datasets:
        r.update(onprem_datasync("datasets", BIG_DATASETS, "rate(2 hours)"))
    found = run_stack(replication_meets_rpo, list(r.values()))
    check(found, r["checkpoints-bucket"], expected)


# --- Azure object replication has no SLA -----------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({}, None, id="dual-write"),
        pytest.param({"mechanism": "azure-or"}, "no replication-time SLA", id="object-replication"),
        pytest.param({"mechanism": "azure-or", "rpo_s": "none"}, None, id="or-without-rpo"),
        pytest.param(
            {"mechanism": "azure-or", "dr_role": "data-replica"}, None, id="or-replica-side"
        ),
    ],
)
def test_azure(changes: dict[str, str], expected: str | None) -> None:
    r = azure("checkpoints", AZURE_CHECKPOINTS)
    retag(r, "account", **changes)
    r["policy"] = Res(
        AZ_OBJECT_REPLICATION,
        "checkpoints-to-wus-source",
        {
            "accountName": r["account"].inputs["accountName"],
            "rules": [{"sourceContainer": "checkpoints", "destinationContainer": "checkpoints"}],
        },
    ).link("accountName", r["account"])
    check(run_stack(replication_meets_rpo, list(r.values())), r["account"], expected)


def test_azure_or_without_rpo_still_needs_its_replication_policy() -> None:
    """`rpo-s=none` is no switch: the object replication policy must exist all the same."""
    r = azure("checkpoints", AZURE_CHECKPOINTS)
    retag(r, "account", mechanism="azure-or", rpo_s="none")
    found = run_stack(replication_meets_rpo, list(r.values()))
    check(found, r["account"], "no ObjectReplicationPolicy")


# --- a dual-write claim needs a write grant on the copy, on every cloud -----------------------


@pytest.mark.parametrize(
    ("build", "target"),
    [
        pytest.param(lambda: s3("weights", WEIGHTS), "bucket", id="s3"),
        pytest.param(
            lambda: gcs("weights", {**WEIGHTS, "dr-role": "data-replica"}), "bucket", id="gcs"
        ),
        pytest.param(lambda: azure("weights", {**WEIGHTS}), "account", id="azure"),
    ],
)
def test_dual_write_without_a_write_grant_is_refused(
    build: Callable[[], dict[str, Res]], target: str
) -> None:
    r = build()
    assert run_stack(replication_meets_rpo, list(r.values())) == []
    r.pop("writer")
    found = run_stack(replication_meets_rpo, list(r.values()))
    check(found, r[target], "grants no identity write access")


# --- the source of a scheduled pull: its stack must let the puller read it ---------------------


@pytest.mark.parametrize(
    ("build", "mechanism", "target"),
    [
        pytest.param(s3, "sts", "bucket", id="s3-to-gcs-sts"),
        pytest.param(gcs, "datasync", "bucket", id="gcs-to-s3-datasync"),
        pytest.param(azure, "sts", "account", id="azure-to-gcs-sts"),
    ],
)
def test_a_pull_source_without_a_read_grant_is_refused(
    build: Callable[[str, dict[str, str]], dict[str, Res]], mechanism: str, target: str
) -> None:
    facts = {**CHECKPOINTS, "mechanism": mechanism, "dr-role": "data-source"}
    r = readers(build("checkpoints", facts))
    assert run_stack(replication_meets_rpo, list(r.values())) == []
    r.pop("reader")
    check(run_stack(replication_meets_rpo, list(r.values())), r[target], "lets no identity read")


# --- Storage Mover from on premises, checked on the Azure replica ----------------------------


MOVER_PATH = "/providers/Microsoft.StorageMover/storageMovers/gpudr-iad-training-eus"


def storage_mover(**job: Any) -> dict[str, Res]:
    """An Azure replica written by a Storage Mover job definition (components/azure/onprem.py):
    the Blob container target endpoint of its account and the job, with an agent assigned; the
    Logic App starting it every 2 h; and the uploads' private path (components/azure/
    private_blob.py): the account's Blob private endpoint, the privatelink zone linked to the
    network and the zone group keeping the endpoint's record there. The WAN path is asserted at
    2 Gbps (quota-mbps), and so is the job's one agent (agent-mbps), as the plan tags them."""
    r = azure("checkpoints", AZURE_CHECKPOINTS)
    retag(
        r,
        "account",
        mechanism="storage-mover",
        dr_role="data-replica",
        quota_mbps="2000",
        agent_mbps="2000",
    )
    account = r["account"].inputs["accountName"]
    target = Res(
        AZ_MOVER_ENDPOINT,
        "checkpoints-target",
        {
            "endpointName": "checkpoints-replica",
            "properties": {
                "endpointType": "AzureStorageBlobContainer",
                "storageAccountResourceId": "/subscriptions/s/resourceGroups/g/providers/"
                f"Microsoft.Storage/storageAccounts/{account}",
                "blobContainerName": "checkpoints",
            },
        },
    )
    source = Res(
        AZ_MOVER_ENDPOINT,
        "iad1-nfs",
        {
            "endpointName": "iad1-nfs",
            "properties": {"endpointType": "NfsMount", "host": "10.50.8.10", "export": "/ml"},
        },
    )
    inputs = {
        "jobDefinitionName": "checkpoints",
        "resourceGroupName": "rg-dr",
        "storageMoverName": "gpudr-iad-training-eus",
        "projectName": "iad1",
        "targetName": "checkpoints-replica",
        "sourceName": "iad1-nfs",
        "sourceSubpath": "checkpoints",
        "agentName": "iad1-sma-1",
        **job,
    }
    uri = (
        f"https://management.azure.com/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-dr"
        f"{MOVER_PATH}/projects/iad1/jobDefinitions/checkpoints/startJob?api-version=2024-07-01"
    )
    schedule = Res(
        AZ_LOGIC_WORKFLOW,
        "checkpoints-schedule",
        {
            "workflowName": "gpudr-iad-training-eus-checkpoints-every",
            "state": "Enabled",
            "identity": {"type": "SystemAssigned"},
            "definition": schedule_definition(uri, 7200),
        },
    )
    endpoint = Res(
        AZ_PRIVATE_ENDPOINT,
        "checkpoints-endpoint",
        {
            "privateLinkServiceConnections": [
                {"name": "checkpoints-blob", "privateLinkServiceId": "", "groupIds": ["blob"]}
            ]
        },
    ).link("privateLinkServiceConnections", r["account"])
    zone = Res(AZ_PRIVATE_DNS_ZONE, "zone", {"privateZoneName": BLOB_PRIVATE_ZONE})
    link = Res(AZ_PRIVATE_DNS_LINK, "zone-link", {"registrationEnabled": False})
    link.link("privateZoneName", zone)
    group = Res(AZ_PRIVATE_DNS_ZONE_GROUP, "checkpoints-dns", {})
    group.link("privateEndpointName", endpoint).link("privateDnsZoneConfigs", zone)
    job_res = Res(AZ_MOVER_JOB, "checkpoints-job", inputs)
    starter = Res(
        AZ_ROLE_DEFINITION,
        "job-starter",
        {"permissions": [{"actions": list(START_JOB_ACTIONS)}]},
    )
    start = Res(AZ_ROLE_ASSIGNMENT, "checkpoints-schedule-start", {})
    start.link("scope", job_res).link("principalId", schedule).link("roleDefinitionId", starter)
    r.update(
        source=source,
        target=target,
        job=job_res,
        starter=starter,
        start=start,
        schedule=schedule,
        endpoint=endpoint,
        zone=zone,
        link=link,
        group=group,
    )
    return r


def without(*keys: str, **job: Any) -> dict[str, Res]:
    return {k: v for k, v in storage_mover(**job).items() if k not in keys}


def mover_changed(key: str, change: Callable[[Res], object]) -> dict[str, Res]:
    r = storage_mover()
    change(r[key])
    return r


def every(hours: int) -> Callable[[Res], object]:
    def change(flow: Res) -> object:
        uri = started_jobs(flow.inputs["definition"])[0]
        flow.inputs["definition"] = schedule_definition(uri, hours * 3600)
        return flow

    return change


def _unlinked_endpoint(e: Res) -> None:
    e.property_dependencies.clear()  # an endpoint of some other account
    e.dependencies.clear()


def _file_endpoint(e: Res) -> None:
    e.inputs["privateLinkServiceConnections"][0]["groupIds"] = ["file"]


def _basic_auth(flow: Res) -> None:
    action = flow.inputs["definition"]["actions"]["start_job"]
    action["inputs"]["authentication"] = {"type": "Basic", "username": "u", "password": "p"}


def _other_job(flow: Res) -> None:
    action = flow.inputs["definition"]["actions"]["start_job"]
    action["inputs"]["uri"] = action["inputs"]["uri"].replace("/checkpoints/", "/weights/")


def _recurrence(**extra: str) -> Callable[[Res], object]:
    def change(flow: Res) -> object:
        flow.inputs["definition"]["triggers"]["every_interval"]["recurrence"].update(extra)
        return flow

    return change


def _never_fires(flow: Res) -> None:
    trigger = flow.inputs["definition"]["triggers"]["every_interval"]
    trigger["conditions"] = [{"expression": "@equals(1, 2)"}]


def _after_failure(flow: Res) -> None:
    flow.inputs["definition"]["actions"]["start_job"]["runAfter"] = {"x": ["Failed"]}


def _names_another_account(e: Res) -> None:
    e.inputs["privateLinkServiceConnections"][0]["privateLinkServiceId"] = (
        "/subscriptions/x/resourceGroups/y/providers/Microsoft.Storage/storageAccounts/other"
    )


def _untag_agent(account: Res) -> None:
    account.inputs["tags"].pop("gpudr:agent-mbps")


def _slow_agent(account: Res) -> None:
    account.inputs["tags"]["gpudr:agent-mbps"] = "1000"  # a 1h47m run: 2h + 1h47m + 45m > 4h


def _daily_trigger(flow: Res) -> None:
    trigger = flow.inputs["definition"]["triggers"]["every_interval"]
    trigger["type"] = "Request"  # started by an HTTP call: no interval anyone can read


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(lambda: storage_mover(), None, id="job-with-agent"),
        pytest.param(
            lambda: {k: v for k, v in storage_mover().items() if k != "job"},
            "no Storage Mover job definition",
            id="no-job",
        ),
        pytest.param(
            lambda: storage_mover(agentName=None),
            "no Storage Mover job definition",
            id="no-agent",
        ),
        pytest.param(
            lambda: storage_mover(targetName="other-replica"),
            "no Storage Mover job definition",
            id="another-target",
        ),
        pytest.param(
            lambda: storage_mover(targetSubpath="part"),
            "no Storage Mover job definition",
            id="part-of-the-container",
        ),
        # how often the job is started: a Logic App the pack can read, or the RPO is not shown
        pytest.param(
            lambda: without("schedule"), "no enabled Storage Mover schedule", id="no-schedule"
        ),
        pytest.param(
            lambda: mover_changed("schedule", lambda f: f.inputs.update(state="Disabled")),
            "no enabled Storage Mover schedule",
            id="schedule-disabled",
        ),
        pytest.param(
            lambda: mover_changed("schedule", _other_job),
            "no enabled Storage Mover schedule",
            id="other-job",
        ),
        pytest.param(
            lambda: mover_changed("schedule", _basic_auth),
            "no enabled Storage Mover schedule",
            id="not-its-managed-identity",
        ),
        pytest.param(
            lambda: mover_changed("schedule", _daily_trigger),
            "no repeating schedule gpudr can read",
            id="not-a-recurrence",
        ),
        # 2 h (the builder's) + a 1h11m run at 2 Gbps + the 45 min checkpoint interval: 3h56m
        pytest.param(lambda: mover_changed("schedule", every(1)), None, id="every-1h"),
        pytest.param(
            lambda: mover_changed("schedule", every(3)), "runs every 3h", id="every-3h-too-slow"
        ),
        # a schedule that may not fire, or not start the job, is no schedule
        pytest.param(
            lambda: mover_changed("schedule", _recurrence(endTime="2020-01-01T00:00:00Z")),
            "no repeating schedule gpudr can read",
            id="ended",
        ),
        pytest.param(
            lambda: mover_changed("schedule", _recurrence(startTime="2099-01-01T00:00:00Z")),
            "no repeating schedule gpudr can read",
            id="starts-in-2099",
        ),
        pytest.param(
            lambda: mover_changed("schedule", _never_fires),
            "no repeating schedule gpudr can read",
            id="trigger-condition",
        ),
        pytest.param(
            lambda: mover_changed("schedule", _after_failure),
            "no enabled Storage Mover schedule",
            id="runs-after-a-failure",
        ),
        pytest.param(
            lambda: without("start"), "no enabled Storage Mover schedule", id="may-not-start-it"
        ),
        pytest.param(
            lambda: mover_changed("starter", lambda s: s.inputs.update(permissions=[])),
            "no enabled Storage Mover schedule",
            id="role-without-start-job",
        ),
        # the job must read the class's directory of an NFS source
        pytest.param(
            lambda: storage_mover(sourceSubpath="empty-dir"),
            "no Storage Mover job definition",
            id="another-directory",
        ),
        pytest.param(
            lambda: storage_mover(sourceName="elsewhere"),
            "no Storage Mover job definition",
            id="another-source",
        ),
        # one agent runs a job: its rate bounds each run, and the replica must state it
        pytest.param(
            lambda: mover_changed("account", _untag_agent),
            "does not state one agent's rate",
            id="no-agent-rate",
        ),
        pytest.param(
            lambda: mover_changed("account", _slow_agent), "runs every 2h", id="slow-agent"
        ),
        # the private path the WAN sizing assumes
        pytest.param(
            lambda: without("endpoint"), "no Blob private endpoint", id="no-private-endpoint"
        ),
        pytest.param(
            lambda: mover_changed("endpoint", _unlinked_endpoint),
            "no Blob private endpoint",
            id="endpoint-of-another-account",
        ),
        pytest.param(
            lambda: mover_changed("endpoint", _names_another_account),
            "no Blob private endpoint",
            id="endpoint-names-another-account",
        ),
        pytest.param(
            lambda: mover_changed("endpoint", _file_endpoint),
            "no Blob private endpoint",
            id="endpoint-not-blob",
        ),
        pytest.param(lambda: without("link"), "zone linked to a virtual network", id="no-link"),
        pytest.param(
            lambda: mover_changed("zone", lambda z: z.inputs.update(privateZoneName="x.local")),
            "zone linked to a virtual network",
            id="another-zone",
        ),
        pytest.param(lambda: without("group"), "no zone group", id="no-zone-group"),
    ],
)
def test_storage_mover_pull(build: Callable[[], dict[str, Res]], expected: str | None) -> None:
    r = build()
    check(run_stack(replication_meets_rpo, list(r.values())), r["account"], expected)


# --- AzCopy from S3, checked on the Azure replica --------------------------------------------

AZCOPY_SOURCE = "llm-use1-checkpoints-abc123"
AZCOPY_IDENTITY = (
    "/subscriptions/s/resourceGroups/gpudr-llm-eus-azcopy-identity/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/gpudr-llm-eus-azcopy"
)


def azcopy(
    every_h: int = 2, name: str = "checkpoints", facts: dict[str, str] | None = None, **config: Any
) -> dict[str, Res]:
    """An Azure replica of checkpoints (4 h RPO, 2.7 TB bursts every 45 min at 10 Gbps), or of
    the class `facts` describe, written by an AzCopy job (components/azure/azcopy.py):
    scheduled every `every_h` hours, one replica, its replica timeout the interval and no retry
    (a retry given the whole timeout would overlap the next run), as the identity, reading the
    class's source, mirroring the source's deletes for checkpoints only."""
    r = azure(name, facts or AZURE_CHECKPOINTS)
    retag(
        r,
        "account",
        mechanism="azcopy",
        dr_role="data-replica",
        quota_mbps="10000",
        source_bucket=AZCOPY_SOURCE,
    )
    account = r["account"].inputs["accountName"]
    env = {
        azcopy_job.ENV_SOURCE: AZCOPY_SOURCE,
        azcopy_job.ENV_SOURCE_REGION: "us-east-1",
        azcopy_job.ENV_DESTINATION: azcopy_job.blob_destination(account, name),
        azcopy_job.ENV_ROLE_ARN: "arn:aws:iam::111122223333:role/gpudr-llm-eus-azcopy-reader",
        azcopy_job.ENV_SESSION_S: "43200",
        azcopy_job.ENV_MIRROR_DELETES: "true" if name == "checkpoints" else "false",
        azcopy_job.ENV_CLIENT_ID: "3f1c2b7a-0000-4000-8000-000000000001",
        azcopy_job.ENV_LOGIN: "MSI",
    }
    configuration: dict[str, Any] = {
        "triggerType": "Schedule",
        "scheduleTriggerConfig": {
            "cronExpression": f"0 */{every_h} * * *",
            "parallelism": 1,
            "replicaCompletionCount": 1,
        },
        "replicaTimeout": every_h * 3600,
        "replicaRetryLimit": 0,
    }
    configuration.update(config)
    job = Res(
        AZ_CONTAINER_APP_JOB,
        f"{name}-azcopy",
        {
            "jobName": f"azcopy-{name}-0123abcd",
            "identity": {"type": "UserAssigned", "userAssignedIdentities": [AZCOPY_IDENTITY]},
            "configuration": configuration,
            "template": {
                "containers": [
                    {
                        "name": "azcopy",
                        "image": AZCOPY_IMAGE,
                        "command": list(azcopy_job.COMMAND),
                        "env": [{"name": k, "value": v} for k, v in env.items()],
                    }
                ]
            },
        },
    )
    r["job"] = job
    return r


AZCOPY_IMAGE = "acr.azurecr.io/gpudr-azcopy@sha256:" + "ab" * 32
# Datasets pulled by AzCopy: a daily RPO, the source only adds (no delete is mirrored).
AZURE_DATASETS = {**{k: v for k, v in DATASETS.items() if k != "quota-mbps"}}


def _container(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        inputs["template"]["containers"][0].update(changes)

    return change


def _sidecar(inputs: dict[str, Any]) -> None:
    inputs["template"]["containers"].append(
        {"name": "sidecar", "image": AZCOPY_IMAGE, "command": ["sh", "-c", "sleep infinity"]}
    )


def _init_container(inputs: dict[str, Any]) -> None:
    inputs["template"]["initContainers"] = [
        {"name": "init", "image": AZCOPY_IMAGE, "command": ["sh", "-c", "true"]}
    ]


def azcopy_changed(change: Callable[[dict[str, Any]], object], **config: Any) -> dict[str, Res]:
    r = azcopy(**config)
    change(r["job"].inputs)
    return r


def _set_env(name: str, value: str | None) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        (container,) = inputs["template"]["containers"]
        container["env"] = [e for e in container["env"] if e["name"] != name]
        if value is not None:
            container["env"].append({"name": name, "value": value})

    return change


def _trigger(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        inputs["configuration"]["scheduleTriggerConfig"].update(changes)

    return change


@pytest.mark.parametrize(
    ("build", "on_job", "on_account"),
    [
        pytest.param(lambda: azcopy(), None, None, id="every-2h"),
        # every 4 h: 4 h + a run + the 45 min checkpoint interval > the 4 h RPO
        pytest.param(lambda: azcopy(4), None, "runs every 4h", id="fires-less-often-than-rpo"),
        pytest.param(
            lambda: azcopy_changed(_trigger(cronExpression="0 0 31 2 *")),
            None,
            "no repeating schedule",
            id="never-fires",
        ),
        pytest.param(
            lambda: azcopy_changed(_trigger(cronExpression="0 3 * * 1")),
            None,
            "no repeating schedule",
            id="weekly-not-daily",
        ),
        pytest.param(
            lambda: azcopy_changed(lambda i: i["configuration"].update(triggerType="Manual")),
            "not a Schedule",
            None,
            id="manual-trigger",
        ),
        pytest.param(
            lambda: azcopy_changed(_set_env(azcopy_job.ENV_SOURCE, "someone-elses-bucket")),
            "not the class's source bucket",
            None,
            id="reads-another-bucket",
        ),
        pytest.param(
            lambda: azcopy_changed(lambda i: i.pop("identity")),
            "no user-assigned identity",
            None,
            id="no-identity",
        ),
        pytest.param(
            lambda: azcopy_changed(_set_env(azcopy_job.ENV_CLIENT_ID, None)),
            "names no identity",
            None,
            id="identity-not-named-to-azcopy",
        ),
        pytest.param(
            lambda: azcopy_changed(
                lambda i: i["template"]["containers"][0].update(command=["sh", "-c", "true"])
            ),
            "not gpudr's AzCopy entrypoint",
            None,
            id="another-command",
        ),
        pytest.param(
            lambda: azcopy_changed(_trigger(parallelism=2)),
            "parallelism is 2",
            None,
            id="two-replicas",
        ),
        # --- the session, the container, the deletes, the retries, the replica counts ---
        pytest.param(
            lambda: azcopy_changed(_set_env(azcopy_job.ENV_SESSION_S, "3600")),
            "GPUDR_SESSION_SECONDS is '3600', not the plan's 43200",
            None,
            id="session-shorter-than-plan",
        ),
        pytest.param(
            lambda: azcopy_changed(_set_env(azcopy_job.ENV_SESSION_S, "86400")),
            "GPUDR_SESSION_SECONDS is '86400'",
            None,
            id="session-longer-than-aws-grants",
        ),
        pytest.param(
            lambda: azcopy_changed(_set_env(azcopy_job.ENV_SESSION_S, None)),
            "GPUDR_SESSION_SECONDS is None",
            None,
            id="no-session",
        ),
        pytest.param(
            lambda: azcopy_changed(_sidecar),
            "runs 2 container(s) and 0 init container(s)",
            None,
            id="sidecar",
        ),
        pytest.param(
            lambda: azcopy_changed(_init_container),
            "runs 1 container(s) and 1 init container(s)",
            None,
            id="init-container",
        ),
        pytest.param(
            lambda: azcopy_changed(_container(image="acr.azurecr.io/gpudr-azcopy:latest")),
            "not pinned by digest",
            None,
            id="image-by-tag",
        ),
        pytest.param(
            lambda: azcopy_changed(_container(image="acr.azurecr.io/gpudr-azcopy@sha256:abc")),
            "not pinned by digest",
            None,
            id="image-short-digest",
        ),
        pytest.param(
            lambda: azcopy_changed(_set_env(azcopy_job.ENV_MIRROR_DELETES, "false")),
            "GPUDR_MIRROR_DELETES is 'false', not 'true'",
            None,
            id="checkpoints-keep-deleted",
        ),
        pytest.param(
            lambda: azcopy_changed(_set_env(azcopy_job.ENV_MIRROR_DELETES, None)),
            "GPUDR_MIRROR_DELETES is None, not 'true'",
            None,
            id="checkpoints-mirror-unset",
        ),
        pytest.param(
            lambda: azcopy(name="datasets", facts=AZURE_DATASETS),
            None,
            None,
            id="datasets-every-2h",
        ),
        pytest.param(
            lambda: azcopy_changed(
                _set_env(azcopy_job.ENV_MIRROR_DELETES, "true"),
                name="datasets",
                facts=AZURE_DATASETS,
            ),
            "GPUDR_MIRROR_DELETES is 'true', not 'false'",
            None,
            id="datasets-mirror-deletes",
        ),
        pytest.param(
            lambda: azcopy(replicaRetryLimit=1),
            "7200 s x (1 + replicaRetryLimit 1) = 4h",
            None,
            id="retry-overlaps-next-run",
        ),
        pytest.param(
            lambda: azcopy(replicaTimeout=3 * 3600),
            "10800 s x (1 + replicaRetryLimit 0) = 3h",
            None,
            id="timeout-overlaps-next-run",
        ),
        pytest.param(
            lambda: azcopy(replicaTimeout=3600, replicaRetryLimit=1),
            None,
            None,
            id="one-retry-within-interval",
        ),
        pytest.param(
            lambda: retag(azcopy(replicaRetryLimit=1), "account", quota_mbps="100"),
            None,
            "cannot copy one run",
            id="run-too-long-reported-before-overlap",
        ),
        pytest.param(
            lambda: azcopy(replicaRetryLimit=None),
            "replicaRetryLimit is None",
            None,
            id="no-retry-limit",
        ),
        pytest.param(
            lambda: azcopy(replicaRetryLimit="0"),
            "replicaRetryLimit is '0'",
            None,
            id="retry-limit-not-a-number",
        ),
        pytest.param(
            lambda: azcopy_changed(_trigger(parallelism="2")),
            "parallelism is '2'",
            None,
            id="parallelism-a-string",
        ),
        pytest.param(
            lambda: azcopy_changed(_trigger(replicaCompletionCount=True)),
            "replicaCompletionCount is True",
            None,
            id="completion-count-a-bool",
        ),
        pytest.param(
            lambda: azcopy(replicaTimeout=300),
            None,
            "replica timeout is 300",
            id="timeout-shorter-than-a-run",
        ),
        pytest.param(
            lambda: azcopy(replicaTimeout=None),
            None,
            "replica timeout is None",
            id="no-timeout",
        ),
        pytest.param(
            lambda: {k: v for k, v in azcopy().items() if k != "job"},
            None,
            "no enabled AzCopy job",
            id="no-job",
        ),
        pytest.param(
            lambda: retag(azcopy(), "account", source_bucket=None),
            "does not name its source",
            None,
            id="replica-names-no-source",
        ),
    ],
)
def test_azcopy_pull(
    build: Callable[[], dict[str, Res]], on_job: str | None, on_account: str | None
) -> None:
    r = build()
    found = run_stack(replication_meets_rpo, list(r.values()))
    job = [m for m, where in found if "job" in r and where == r["job"].urn]
    account = [m for m, where in found if where == r["account"].urn]
    assert len(found) == len(job) + len(account), found
    for expected, messages in ((on_job, job), (on_account, account)):
        if expected is None:
            assert messages == [], messages
        else:
            assert len(messages) == 1 and expected in messages[0], messages


def test_azcopy_run_longer_than_its_session_is_refused() -> None:
    """At 100 Mbps a 266 GB checkpoint run takes ~6 h: past the 2 h interval, so the run would
    be stopped before it ends; daily, it would outlast the 12 h session."""
    r = retag(azcopy(), "account", quota_mbps="100")
    found = run_stack(replication_meets_rpo, list(r.values()))
    messages = [m for m, where in found if where == r["account"].urn]
    assert len(found) == len(messages) == 1 and "cannot copy one run" in messages[0], found
    assert "43200" in messages[0] or "12h" in messages[0], messages
