"""DataSyncPull and DataSyncLogs on their own, under a recording monitor: the inputs they
register (Pulumi's unit-test style, `@pulumi.runtime.test`), and the checks that refuse what
an AWS site cannot pull."""

from __future__ import annotations

import json
from dataclasses import replace

import pulumi
import pytest
from pulumi.runtime import rpc

from components.aws.datasync import (
    DataSyncLogs,
    DataSyncLogsArgs,
    DataSyncPull,
    DataSyncPullArgs,
    check_inbound,
    schedule_expression,
)
from gpudr.app.offline.mocks import GpudrMocks, RecordingMonitor, Registration
from gpudr.contract.site import InboundTransfer

REGION = "us-east-1"
ACCOUNT = "123456789012"
SINK_ARN = "arn:aws:s3:::vision-use1-checkpoints-abc123"
KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/mrk-offline"
HMAC_SECRET = "offline-hmac-secret-not-real-0000000000"
CHECKPOINTS = InboundTransfer(
    service="datasync",
    source_cloud="gcp",
    source_site="usc1",
    source_region="us-central1",
    source_bucket="vision-usc1-checkpoints-def456",
    source_account=None,
    source_project="acme-vision-prod",
    schedule_s=3 * 3600,
    role_name="unused-by-datasync",
    mirror_deletes=True,
)
DATASETS = replace(
    CHECKPOINTS,
    source_bucket="vision-usc1-datasets-0a1b2c",
    schedule_s=23 * 3600,
    mirror_deletes=False,
)


@pytest.fixture
def monitor() -> RecordingMonitor:
    """The mocks again, with a monitor that keeps every registration's inputs."""
    mocks = GpudrMocks(default_region=REGION)
    recording = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True, monitor=recording)
    return recording


def pull(transfer: InboundTransfer, secret: pulumi.Output[str] | None = None) -> DataSyncPull:
    return DataSyncPull(
        f"t-{transfer.source_bucket.split('-')[2]}",
        DataSyncPullArgs(
            region=REGION,
            account_id=ACCOUNT,
            role_name="gpudr-vision-use1-checkpoints-datasync",
            sink_bucket_arn=SINK_ARN,
            key_arn=KEY_ARN,
            transfers=[transfer],
            hmac_access_id="GOOG1EOFFLINEACCESSID",
            hmac_secret=secret if secret is not None else pulumi.Output.secret(HMAC_SECRET),
            log_group_arn=f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/datasync",
            task_name="gpudr-vision-use1-checkpoints",
            tags={"gpudr:system": "vision"},
        ),
    )


def registered(monitor: RecordingMonitor, typ: str) -> list[Registration]:
    return [r for r in monitor.registrations if r.type == f"aws:datasync/{typ}" or r.type == typ]


@pulumi.runtime.test
def test_task_is_enhanced_on_the_planned_schedule(monitor: RecordingMonitor) -> pulumi.Output[None]:
    component = pull(CHECKPOINTS)

    def check(_: object) -> None:
        (task,) = registered(monitor, "task:Task")
        assert task.inputs["taskMode"] == "ENHANCED", task.urn
        assert task.inputs["schedule"] == {
            "scheduleExpression": "rate(3 hours)",
            "status": "ENABLED",
        }, task.urn
        assert task.inputs["cloudwatchLogGroupArn"].endswith(":log-group:/aws/datasync"), task.urn
        (source,) = registered(monitor, "locationObjectStorage:LocationObjectStorage")
        (sink,) = registered(monitor, "s3Location:S3Location")
        assert task.inputs["sourceLocationArn"] == source.id, task.urn
        assert task.inputs["destinationLocationArn"] == sink.id, task.urn

    return component.task_arns.apply(check)


@pulumi.runtime.test
def test_gcs_source_is_agentless_https_with_a_secret_key(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull(CHECKPOINTS)

    def check(_: object) -> None:
        (source,) = registered(monitor, "locationObjectStorage:LocationObjectStorage")
        i = source.inputs
        assert "agentArns" not in i, source.urn  # Enhanced mode: no agent for other clouds
        assert (i["serverHostname"], i["serverProtocol"], i["serverPort"]) == (
            "storage.googleapis.com",
            "HTTPS",
            443,
        ), source.urn
        assert i["bucketName"] == CHECKPOINTS.source_bucket, source.urn
        assert i["accessKey"] == "GOOG1EOFFLINEACCESSID", source.urn
        assert rpc.is_rpc_secret(i["secretKey"]), source.urn
        assert i["secretKey"]["value"] == HMAC_SECRET, source.urn
        # Nowhere else in plain text.
        for r in monitor.registrations:
            if r is not source:
                assert HMAC_SECRET not in json.dumps(r.inputs), r.urn

    return component.task_arns.apply(check)


@pytest.mark.parametrize(("transfer", "deleted"), [(CHECKPOINTS, "REMOVE"), (DATASETS, "PRESERVE")])
def test_only_mirrored_classes_remove_deleted_objects(
    monitor: RecordingMonitor, transfer: InboundTransfer, deleted: str
) -> None:
    @pulumi.runtime.test
    def body() -> pulumi.Output[None]:
        component = pull(transfer)

        def check(_: object) -> None:
            (task,) = registered(monitor, "task:Task")
            options = task.inputs["options"]
            assert options["preserveDeletedFiles"] == deleted, task.urn
            assert options["verifyMode"] == "ONLY_FILES_TRANSFERRED", task.urn
            assert options["transferMode"] == "CHANGED", task.urn
            assert options["overwriteMode"] == "ALWAYS", task.urn
            assert options["logLevel"] in ("BASIC", "TRANSFER"), task.urn
            hours = transfer.schedule_s // 3600
            assert task.inputs["schedule"]["scheduleExpression"] == f"rate({hours} hours)"

        return component.task_arns.apply(check)

    body()


@pulumi.runtime.test
def test_role_is_for_datasync_of_this_account_and_writes_only_the_sink(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull(CHECKPOINTS)

    def check(_: object) -> None:
        (role,) = registered(monitor, "aws:iam/role:Role")
        (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        assert statement["Principal"] == {"Service": "datasync.amazonaws.com"}, role.urn
        assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": ACCOUNT}, role.urn
        (policy,) = registered(monitor, "aws:iam/rolePolicy:RolePolicy")
        statements = json.loads(policy.inputs["policy"])["Statement"]
        resources = {s["Resource"] for s in statements}
        assert resources == {SINK_ARN, f"{SINK_ARN}/*", KEY_ARN}, policy.urn
        kms = next(s for s in statements if s["Resource"] == KEY_ARN)
        assert set(kms["Action"]) == {"kms:GenerateDataKey", "kms:Decrypt"}, policy.urn
        (sink,) = registered(monitor, "s3Location:S3Location")
        assert sink.inputs["s3Config"]["bucketAccessRoleArn"] == role.outputs["arn"], sink.urn
        assert sink.inputs["s3BucketArn"] == SINK_ARN, sink.urn
        for r in monitor.registrations:
            if r.custom and not r.type.startswith("aws:iam/"):  # IAM is global: no region
                assert r.inputs.get("region") == REGION, r.urn

    return component.task_arns.apply(check)


@pulumi.runtime.test
def test_log_group_is_the_enhanced_mode_group_with_a_retention_under_the_site_key(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    logs = DataSyncLogs("t-logs", DataSyncLogsArgs(region=REGION, key_arn=KEY_ARN, tags={}))

    def check(arn: str) -> None:
        (group,) = registered(monitor, "aws:cloudwatch/logGroup:LogGroup")
        assert group.inputs["name"] == "/aws/datasync", group.urn
        assert group.inputs["retentionInDays"] > 0, group.urn
        # The key's ARN: CloudWatch Logs takes no alias or key id.
        assert group.inputs["kmsKeyId"] == KEY_ARN, group.urn
        assert group.inputs["region"] == REGION, group.urn
        assert arn.endswith(":log-group:/aws/datasync"), group.urn

    return logs.log_group_arn.apply(check)


def test_a_plain_text_secret_is_refused() -> None:
    with pytest.raises(TypeError, match="secret"):
        pull(CHECKPOINTS, secret=HMAC_SECRET)  # type: ignore[arg-type]


@pulumi.runtime.test
def test_the_secret_key_stays_secret_whatever_its_origin(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull(CHECKPOINTS, secret=pulumi.Output.from_input(HMAC_SECRET))

    def check(_: object) -> None:
        (source,) = registered(monitor, "locationObjectStorage:LocationObjectStorage")
        assert rpc.is_rpc_secret(source.inputs["secretKey"]), source.urn

    return component.task_arns.apply(check)


@pytest.mark.parametrize(
    ("service", "cloud"), [("sts", "aws"), ("datasync", "azure"), ("sts", "gcp")]
)
def test_other_inbound_pulls_are_refused_naming_what_is_supported(service: str, cloud: str) -> None:
    transfer = replace(CHECKPOINTS, service=service, source_cloud=cloud)
    with pytest.raises(ValueError, match="only datasync from gcp is"):
        check_inbound([transfer])


@pytest.mark.parametrize(
    ("seconds", "expression"),
    [(3600, "rate(1 hour)"), (7200, "rate(2 hours)"), (82800, "rate(23 hours)")],
)
def test_schedule_in_whole_hours(seconds: int, expression: str) -> None:
    assert schedule_expression(replace(CHECKPOINTS, schedule_s=seconds)) == expression


@pytest.mark.parametrize("seconds", [1800, 5400])
def test_schedule_that_is_not_whole_hours_is_refused(seconds: int) -> None:
    with pytest.raises(ValueError, match="whole number of hours"):
        schedule_expression(replace(CHECKPOINTS, schedule_s=seconds))
