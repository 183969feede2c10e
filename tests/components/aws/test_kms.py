"""DataKey's policy: CloudWatch Logs of the key's region may use the site's key for the log groups
the site encrypts with it (the DataSync log group, its clusters' control-plane groups, and its
drills' through a wildcard), and for nothing else; a key with no such log group grants no
service anything. On its own under a recording monitor, then on every AWS site of the examples
(tests/components/aws/test_logs.py pins the exact list per site)."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components.aws.kms import DataKey, DataKeyArgs
from gpudr.app.offline.mocks import GpudrMocks, RecordingMonitor
from tests.components.aws.stacks import of_type, site_run, sites

REGION = "us-west-2"
ACCOUNT = "123456789012"
KEY = "aws:kms/key:Key"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
LOGS_SID = "CloudWatchLogsEncryptLogGroups"


@pytest.fixture
def monitor() -> RecordingMonitor:
    mocks = GpudrMocks(default_region=REGION)
    recording = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True, monitor=recording)
    return recording


def key(log_groups: tuple[str, ...], patterns: tuple[str, ...] = ()) -> DataKey:
    return DataKey(
        "t",
        DataKeyArgs(
            region=REGION,
            alias="alias/gpudr/t/usw2",
            account_id=ACCOUNT,
            tags={},
            log_groups=log_groups,
            log_group_patterns=patterns,
        ),
    )


def statements(policy: str) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in json.loads(policy)["Statement"]}


@pytest.mark.parametrize(
    ("groups", "patterns"),
    [
        (("/aws/datasync",), ()),
        (("/aws/datasync", "/gpudr/other"), ()),
        (("/aws/eks/llm-usw2-train/cluster",), ("/aws/eks/drill-usw2-????????t??????z-*/cluster",)),
    ],
)
def test_cloudwatch_logs_of_the_region_may_use_the_key_for_the_named_groups_only(
    monitor: RecordingMonitor, groups: tuple[str, ...], patterns: tuple[str, ...]
) -> None:
    @pulumi.runtime.test
    def body() -> pulumi.Output[None]:
        k = key(groups, patterns)

        def check(_: object) -> None:
            (registered,) = [r for r in monitor.registrations if r.type == KEY]
            logs = statements(registered.inputs["policy"])[LOGS_SID]
            assert logs["Effect"] == "Allow"
            # Regional: CloudWatch Logs of another region cannot use it.
            assert logs["Principal"] == {"Service": f"logs.{REGION}.amazonaws.com"}
            assert set(logs["Action"]) == {
                "kms:Encrypt*",
                "kms:Decrypt*",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:Describe*",
            }
            # ArnLike: the exact names match themselves only, the patterns what they admit.
            assert logs["Condition"] == {
                "ArnLike": {
                    "kms:EncryptionContext:aws:logs:arn": [
                        f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{g}"
                        for g in (*groups, *patterns)
                    ]
                }
            }

        return k.key_arn.apply(check)

    body()


@pulumi.runtime.test
def test_without_log_groups_no_service_is_granted(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    k = key(())

    def check(_: object) -> None:
        (registered,) = [r for r in monitor.registrations if r.type == KEY]
        for s in json.loads(registered.inputs["policy"])["Statement"]:
            assert "Service" not in s["Principal"], s

    return k.key_arn.apply(check)


@pytest.mark.parametrize(("example", "site"), sites())
def test_each_sites_key_admits_cloudwatch_logs_for_each_of_its_encrypted_log_groups(
    example: str, site: str
) -> None:
    run = site_run(example, site)
    (data_key,) = of_type(run, KEY)
    groups = [g for g in of_type(run, LOG_GROUP) if g.inputs.get("kmsKeyId")]
    assert groups  # every site has a cluster, and every cluster its log group
    logs = statements(data_key.inputs["policy"])[LOGS_SID]
    region = data_key.inputs["region"]
    assert logs["Principal"] == {"Service": f"logs.{region}.amazonaws.com"}, data_key.urn
    admitted = logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"]
    # The offline ARNs carry the offline account; the policy, the account the key is in.
    owner = statements(data_key.inputs["policy"])["AccountAdministers"]["Principal"]["AWS"]
    prefix = f"arn:aws:logs:{region}:{owner.split(':')[4]}:log-group:"
    for g in groups:
        assert f"{prefix}{g.inputs['name']}" in admitted, g.urn
        assert g.inputs["kmsKeyId"] == data_key.outputs["arn"], g.urn


def test_the_site_that_pulls_has_its_log_group_under_its_key() -> None:
    """gcp-to-aws's DR site is the examples' one DataSync site: checked, not skipped."""
    run = site_run("gcp-to-aws", "use1")
    (data_key,) = of_type(run, KEY)
    (group,) = [g for g in of_type(run, LOG_GROUP) if g.inputs["name"] == "/aws/datasync"]
    assert group.inputs["kmsKeyId"] == data_key.outputs["arn"], group.urn
    assert LOGS_SID in statements(data_key.inputs["policy"]), data_key.urn
