"""DataBucket and DataKey on their own, asserted on their Outputs (Pulumi's unit-test style)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pulumi
import pytest
from pulumi.runtime import MockResourceArgs

from components.aws.bucket import AccessLogs, DataBucket, DataBucketArgs, _bucket_policy
from components.aws.kms import DataKey, DataKeyArgs
from gpudr.app.offline.mocks import GpudrMocks
from gpudr.contract.site import BucketConfig, Lifecycle

CFG = BucketConfig(
    data_class="weights",
    name="sys-site-weights-abc123",
    role="source",
    rpo_s=0,
    rto_s=3600,
    mechanism="dual-write",
    object_lock_days=365,
    lifecycle=Lifecycle(None, None, noncurrent_keep=10, noncurrent_days=30, abort_multipart_days=2),
    burst_bytes=150e9,
    steady_gbps=0,
    required_gbps=0.333,
)


@pulumi.runtime.test
def test_bucket_outputs_name_and_arn() -> pulumi.Output[None]:
    bucket = DataBucket(
        "t-weights",
        DataBucketArgs(
            config=CFG,
            region="us-east-1",
            key_arn="arn:aws:kms:us-east-1:1:key/k",
            tags={},
            access_logs=AccessLogs("sys-site-logs-abc123", f"s3/{CFG.name}/"),
        ),
    )

    def check(args: list[str]) -> None:
        urn, name, arn = args
        assert name == CFG.name, urn
        assert arn == f"arn:aws:s3:::{CFG.name}", urn

    return pulumi.Output.all(bucket.urn, bucket.bucket_name, bucket.bucket_arn).apply(check)


@pulumi.runtime.test
def test_key_alias_and_arn() -> pulumi.Output[None]:
    key = DataKey(
        "t-key",
        DataKeyArgs(
            region="us-west-2", alias="alias/gpudr/sys/site", account_id="123456789012", tags={}
        ),
    )

    def check(args: list[str]) -> None:
        urn, arn, alias = args
        assert arn.startswith("arn:aws:kms:us-west-2:"), urn
        assert alias == "alias/gpudr/sys/site", urn

    return pulumi.Output.all(key.urn, key.key_arn, key.alias_name).apply(check)


@pytest.mark.parametrize("cross_account", [None, "arn:aws:iam::111122223333:role/r"])
def test_bucket_policy_denies_plain_http_and_old_tls(cross_account: str | None) -> None:
    import json

    doc = json.loads(_bucket_policy("arn:aws:s3:::b", cross_account))
    sids = [s["Sid"] for s in doc["Statement"]]
    assert sids[:2] == ["DenyInsecureTransport", "DenyOutdatedTls"]
    assert ("AcceptReplicasFromSource" in sids) == (cross_account is not None)


@dataclass
class Capture(GpudrMocks):
    """The mocks, keeping every resource's type and inputs as the component declared them."""

    created: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.created.append((args.typ, dict(args.inputs)))
        return super().new_resource(args)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        pytest.param("compliance", "COMPLIANCE", id="production"),
        # A trial's buckets stay deletable: governance retention, liftable with
        # s3:BypassGovernanceRetention (the pack accepts it only on an approved trial).
        pytest.param("governance", "GOVERNANCE", id="trial"),
    ],
)
def test_object_lock_mode_comes_from_the_site_config(mode: str, expected: str) -> None:
    mocks = Capture()
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True)
    cfg = replace(CFG, object_lock_mode=mode)

    @pulumi.runtime.test
    def declare() -> pulumi.Output[str]:
        bucket = DataBucket(
            "t-weights",
            DataBucketArgs(
                config=cfg,
                region="us-east-1",
                key_arn="arn:aws:kms:us-east-1:1:key/k",
                tags={},
                access_logs=AccessLogs("sys-site-logs-abc123", f"s3/{cfg.name}/"),
            ),
        )
        return bucket.bucket_name

    declare()
    locks = [i for t, i in mocks.created if t.endswith("BucketObjectLockConfiguration")]
    assert [lock["rule"]["defaultRetention"] for lock in locks] == [{"mode": expected, "days": 365}]
