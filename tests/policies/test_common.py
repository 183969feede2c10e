"""The shared helpers: numbers in tags and labels, durations, schedules, tags per cloud, config."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import PolicyConfigSchema, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from gpudr.contract.tags import gcp_labels
from policies.common import (
    AZ_DIAGNOSTIC_SETTING,
    AZ_STORAGE_ACCOUNT,
    GCS_BUCKET,
    GKE_NODE_POOL,
    S3_BUCKET,
    S3_LOGGING,
    ancestor_types,
    any_proven,
    canonical_type,
    duration_s,
    gpudr_tag,
    number,
    policy_config,
    rate_expression_s,
    seconds,
    tag_is,
)
from tests.policies.builders import CHECKPOINTS, tags
from tests.policies.harness import UNKNOWN, Res, policy_resources, records


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7200", 7200.0),
        ("790.123", 790.123),
        ("790-123", 790.123),  # a GCP label's decimal point
        (3.0, 3.0),
        (5, 5.0),
        ("none", None),
        (None, None),
        (True, None),
        ("1-2-3", None),
        ("inf", None),
        ("fast", None),
    ],
)
def test_number(value: Any, expected: float | None) -> None:
    assert number(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7776000s", 7776000.0),
        ("3600.5s", 3600.5),
        ("P90D", 90 * 86400.0),
        ("P2Y", 2 * 365 * 86400.0),
        ("P1M", 30 * 86400.0),
        ("P1W", 7 * 86400.0),
        ("PT1H30M", 5400.0),
        ("P1DT12H", 129600.0),
        (3600.0, 3600.0),
        ("P", None),
        ("PT", None),
        ("soon", None),
    ],
)
def test_duration(value: Any, expected: float | None) -> None:
    assert duration_s(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("rate(1 hour)", 3600.0),
        ("rate(2 hours)", 7200.0),
        ("rate(30 minutes)", 1800.0),
        ("rate(1 day)", 86400.0),
        ("cron(0 */2 * * ? *)", None),
        (None, None),
    ],
)
def test_rate_expression(value: Any, expected: float | None) -> None:
    assert rate_expression_s(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"), [(0, "0s"), (45, "45s"), (2700, "45m"), (7200, "2h"), (5430, "1h30m30s")]
)
def test_seconds(value: float, expected: str) -> None:
    assert seconds(value) == expected


@pytest.mark.parametrize(
    ("resource_type", "props"),
    [
        (S3_BUCKET, {"tags": tags(CHECKPOINTS)}),
        (AZ_STORAGE_ACCOUNT, {"tags": tags(CHECKPOINTS)}),
        (GCS_BUCKET, {"labels": gcp_labels(tags(CHECKPOINTS))}),
        (GKE_NODE_POOL, {"nodeConfig": {"resourceLabels": gcp_labels(tags(CHECKPOINTS))}}),
    ],
)
def test_tags_per_cloud(resource_type: str, props: dict[str, Any]) -> None:
    assert number(gpudr_tag(resource_type, props, "steady-mbps")) == 790.123
    assert tag_is(resource_type, props, "dr-role", "data-replica", "data-source")
    assert not tag_is(resource_type, props, "dr-role", "gpu-pool")
    assert gpudr_tag(resource_type, props, "no-such-tag") is None


SCHEMA = PolicyConfigSchema(
    properties={
        "headroom": {"type": "number", "default": 1.25},
        "modes": {"type": "array", "default": ["COMPLIANCE"]},
        "optional": {"type": "string"},
    }
)


def test_config_defaults_apply_when_the_cli_sends_none() -> None:
    assert policy_config(SCHEMA, StackValidationArgs([], None)) == {
        "headroom": 1.25,
        "modes": ["COMPLIANCE"],
    }


def test_config_sent_is_merged_over_the_defaults() -> None:
    args = StackValidationArgs([], {"headroom": 1.5, "enforcementLevel": "advisory"})
    assert policy_config(SCHEMA, args) == {"headroom": 1.5, "modes": ["COMPLIANCE"]}


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("aws:s3/bucketLoggingV2:BucketLoggingV2", S3_LOGGING),
        ("azure-native:monitor/v20210501preview:DiagnosticSetting", AZ_DIAGNOSTIC_SETTING),
        ("azure-native:insights:DiagnosticSetting", AZ_DIAGNOSTIC_SETTING),
        ("azure-native:insights/v20210501preview:DiagnosticSetting", AZ_DIAGNOSTIC_SETTING),
        ("azure-native:aadiam:DiagnosticSetting", "azure-native:aadiam:DiagnosticSetting"),
    ],
)
def test_other_sdk_classes_fold_onto_the_logging_tokens(token: str, expected: str) -> None:
    """pulumi-aws 7.51.1 registers both logging classes; pulumi-azure-native 3.29.0 registers
    the diagnostic setting under monitor with insights and API-version aliases (Entra ID's
    aadiam setting is another resource)."""
    assert canonical_type(token) == expected


def test_ancestor_types_come_from_the_parent_chain_and_the_urn() -> None:
    site = Res("gpudr:site:AwsSite", "use1", {})
    component = Res("gpudr:storage:DataBucket", "use1-weights", {}, parent=site.urn)
    bucket = Res(S3_BUCKET, "use1-weights-bucket", {}, parent=component.urn)
    found = {r.urn: r for r in policy_resources(records([site, component, bucket]))}
    assert ancestor_types(found[bucket.urn]) == {"gpudr:site:AwsSite", "gpudr:storage:DataBucket"}
    # The engine's URN names the parents' types even when they are not sent.
    alone = Res(S3_BUCKET, "b", {})
    resource = policy_resources(records([alone]))[0]
    resource.urn = (
        "urn:pulumi:s::gpudr::gpudr:site:AwsSite$gpudr:storage:DataBucket$aws:s3/bucket:Bucket::b"
    )
    assert ancestor_types(resource) == {"gpudr:site:AwsSite", "gpudr:storage:DataBucket"}


def _unknown(_: object) -> bool:
    raise UnknownValueError(UNKNOWN, ["value"])


def test_any_proven_raises_only_when_no_candidate_passes() -> None:
    assert any_proven([1, 2], lambda n: n == 2)
    assert not any_proven([1, 2], lambda n: n == 3)
    assert any_proven([0, 1], lambda n: _unknown(n) if n == 0 else True)
    with pytest.raises(UnknownValueError):
        any_proven([0, 1], lambda n: _unknown(n) if n == 0 else False)
