"""The real Pulumi program, run per stack under mocks, asserted on what it registered."""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

import pulumi_aws as aws
import pytest

from gpudr.app.offline.mocks import GpudrMocks, Registration, UnreachableError
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract.naming import DATA_BUCKET_COMPONENT
from gpudr.core.design import design
from gpudr.core.spec import Plan, load_plan, parse_plan
from tests.conftest import EXAMPLE


def run(
    plan: Plan, site: str, mode: str | None = None, mocks: GpudrMocks | None = None
) -> StackRun:
    d = design(plan)
    s = plan.sites[site]
    config = stack_config_values(d, s)
    if mode:
        config["gpudr:mode"] = mode
    return run_stack(stack_name(plan, s), config, mocks or GpudrMocks(default_region=s.region))


@cache
def example() -> Plan:
    return load_plan(EXAMPLE)


@cache
def example_run(site: str) -> StackRun:
    return run(example(), site)


def of_type(r: StackRun, typ: str) -> list[Registration]:
    return [x for x in r.resources if x.type == typ]


def named(r: StackRun, typ: str, contains: str) -> Registration:
    found = [x for x in of_type(r, typ) if contains in x.name]
    assert len(found) == 1, [x.urn for x in of_type(r, typ)]
    return found[0]


# --- DR independence -------------------------------------------------------------------------


def test_dr_stack_runs_with_primary_region_and_state_unreachable() -> None:
    """The DR stack must preview in the disaster it exists for: the primary region down and the
    primary stack's state unreadable (any StackReference fails)."""
    mocks = GpudrMocks(default_region="us-west-2", unreachable_regions=frozenset({"us-east-1"}))
    result = run(example(), "usw2", mocks=mocks)
    assert len(result.resources) > 40
    regions = {x.inputs.get("region") for x in result.resources} - {None}
    assert regions == {"us-west-2"}


def test_dr_stack_in_failover_runs_with_primary_unreachable() -> None:
    mocks = GpudrMocks(default_region="us-west-2", unreachable_regions=frozenset({"us-east-1"}))
    result = run(example(), "usw2", mode="failover", mocks=mocks)
    assert of_type(result, "aws:eks/nodeGroup:NodeGroup")


def test_unreachable_region_really_fails_the_primary() -> None:
    """The check above can fail: the primary stack looks up the DR gateway, so with the DR
    region down its preview fails."""
    mocks = GpudrMocks(default_region="us-east-1", unreachable_regions=frozenset({"us-west-2"}))
    with pytest.raises(UnreachableError, match="us-west-2 is unreachable"):
        run(example(), "use1", mocks=mocks)


def test_stack_reference_fails_under_the_mocks() -> None:
    import pulumi

    def program() -> None:
        pulumi.StackReference("org/gpudr/llm-training-use1")

    mocks = GpudrMocks()
    import runpy  # noqa: F401  (kept local: this test runs a program of its own)
    from pathlib import Path
    from tempfile import TemporaryDirectory

    with TemporaryDirectory() as tmp:
        main = Path(tmp) / "__main__.py"
        main.write_text("import pulumi\npulumi.StackReference('org/gpudr/llm-training-use1')\n")
        with pytest.raises(UnreachableError, match="StackReference"):
            run_stack("probe", {}, mocks, program=main)
    del program


# --- data protection -------------------------------------------------------------------------


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_data_bearing_resources_are_protected(site: str) -> None:
    r = example_run(site)
    data = of_type(r, "aws:s3/bucket:Bucket") + of_type(r, "aws:kms/key:Key")
    assert len(data) == 5  # three data buckets, the site's log bucket, the site's key
    for x in data:
        assert x.protect and x.retain_on_delete, x.urn
    for x in r.resources:
        assert not x.inputs.get("forceDestroy"), x.urn


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_buckets_encrypted_versioned_private_tls_only(site: str) -> None:
    r = example_run(site)
    # The data buckets; the site's log bucket has the same settings but SSE-S3, the only
    # encryption S3 delivers access logs to (tests/components/aws/test_logs.py).
    bucket_ids = {
        x.id for x in of_type(r, "aws:s3/bucket:Bucket") if f"{DATA_BUCKET_COMPONENT}$" in x.urn
    }
    assert len(bucket_ids) == 3
    for typ in (
        "aws:s3/bucketVersioning:BucketVersioning",
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "aws:s3/bucketPolicy:BucketPolicy",
        "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    ):
        # the `bucket` input is the id the offline run gave the bucket: follow it
        assert bucket_ids <= {x.inputs["bucket"] for x in of_type(r, typ)}, typ
    key_arns = {x.outputs["arn"] for x in of_type(r, "aws:kms/key:Key")}
    for x in of_type(
        r, "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    ):
        if x.inputs["bucket"] not in bucket_ids:
            continue
        rule = x.inputs["rules"][0]
        assert rule["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms", x.urn
        assert rule["applyServerSideEncryptionByDefault"]["kmsMasterKeyId"] in key_arns, x.urn
        assert rule["bucketKeyEnabled"] is True
    for x in of_type(r, "aws:s3/bucketPolicy:BucketPolicy"):
        assert '"aws:SecureTransport": "false"' in x.inputs["policy"], x.urn
    for x in of_type(r, "aws:kms/key:Key"):
        assert x.inputs["enableKeyRotation"] is True, x.urn


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_weights_locked_in_compliance_mode(site: str) -> None:
    r = example_run(site)
    weights = named(r, "aws:s3/bucket:Bucket", "weights")
    assert weights.inputs["objectLockEnabled"] is True
    lock = named(r, "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration", "weights")
    assert lock.inputs["rule"]["defaultRetention"] == {"mode": "COMPLIANCE", "days": 365.0}, (
        lock.urn
    )
    assert lock.inputs["bucket"] == weights.id


def test_checkpoint_lifecycle_keeps_last_n_and_never_expires_current() -> None:
    r = example_run("usw2")
    lc = named(r, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "checkpoints")
    rules = {x["id"]: x for x in lc.inputs["rules"]}
    assert (
        rules["keep-newest-versions"]["noncurrentVersionExpiration"]["newerNoncurrentVersions"] == 5
    )
    assert rules["archive-older"]["transitions"] == [{"days": 14.0, "storageClass": "GLACIER_IR"}]
    # current objects never expire by age (only orphan delete markers are removed)
    assert all("days" not in (x.get("expiration") or {}) for x in lc.inputs["rules"]), lc.urn


# --- replication ------------------------------------------------------------------------------


def test_replication_with_rtc_metrics_and_dr_key() -> None:
    r = example_run("use1")
    configs = of_type(r, "aws:s3/bucketReplicationConfig:BucketReplicationConfig")
    # weights are dual-written (RPO 0), so only checkpoints and datasets replicate
    assert sorted(x.name for x in configs) == [
        "use1-replication-checkpoints",
        "use1-replication-datasets",
    ]
    for x in configs:
        (rule,) = x.inputs["rules"]
        dest = rule["destination"]
        assert dest["replicationTime"] == {"status": "Enabled", "time": {"minutes": 15.0}}, x.urn
        assert dest["metrics"] == {"status": "Enabled", "eventThreshold": {"minutes": 15.0}}, x.urn
        assert dest["encryptionConfiguration"]["replicaKmsKeyId"] == (
            "arn:aws:kms:us-west-2:123456789012:alias/gpudr/llm-training/usw2"
        )
        assert rule["sourceSelectionCriteria"]["sseKmsEncryptedObjects"]["status"] == "Enabled"
        assert rule["deleteMarkerReplication"]["status"] == "Disabled" and "filter" in rule
        assert dest["bucket"].startswith("arn:aws:s3:::llm-training-usw2-")
        assert x.inputs["region"] == "us-east-1"
    datasets = next(x for x in configs if "datasets" in x.name)
    assert datasets.inputs["rules"][0]["destination"]["storageClass"] == "STANDARD_IA"


def test_replication_alarms_watch_each_rule() -> None:
    r = example_run("use1")
    alarms = of_type(r, "aws:cloudwatch/metricAlarm:MetricAlarm")
    metrics = sorted((a.inputs["metricName"], a.inputs["dimensions"]["RuleId"]) for a in alarms)
    assert metrics == [
        ("OperationsFailedReplication", "checkpoints-to-usw2"),
        ("OperationsFailedReplication", "datasets-to-usw2"),
        ("ReplicationLatency", "checkpoints-to-usw2"),
        ("ReplicationLatency", "datasets-to-usw2"),
    ]
    latency = next(a for a in alarms if a.inputs["metricName"] == "ReplicationLatency")
    assert latency.inputs["threshold"] == 900 and latency.inputs["namespace"] == "AWS/S3"


def test_dual_write_policy_covers_both_copies() -> None:
    r = example_run("use1")
    (policy,) = of_type(r, "aws:iam/policy:Policy")
    assert "llm-training-use1-weights-" in policy.inputs["policy"]
    assert "llm-training-usw2-weights-" in policy.inputs["policy"]


# --- GPU pools --------------------------------------------------------------------------------


def _scaling(r: StackRun, pool: str) -> tuple[float, float, float]:
    ng = named(r, "aws:eks/nodeGroup:NodeGroup", f"-{pool}-nodes")
    sc = ng.inputs["scalingConfig"]
    return sc["minSize"], sc["desiredSize"], sc["maxSize"]


def test_pilot_light_standby_and_failover() -> None:
    assert _scaling(example_run("usw2"), "train") == (0, 0, 16)
    assert _scaling(example_run("usw2"), "svc-chat") == (4, 4, 4)  # active-active
    failover = run(example(), "usw2", mode="failover")
    assert _scaling(failover, "train") == (16, 16, 16)
    assert _scaling(example_run("use1"), "train") == (16, 16, 16)


def test_warm_standby_floor(example_raw: dict[str, Any]) -> None:
    example_raw["clusters"]["train"]["pattern"] = "warm-standby"
    assert _scaling(run(parse_plan(example_raw), "usw2"), "train") == (4, 4, 16)


def test_backup_restore_declares_the_cluster_only_on_failover(example_raw: dict[str, Any]) -> None:
    example_raw.pop("services")
    example_raw["clusters"]["train"]["pattern"] = "backup-restore"
    plan = parse_plan(example_raw)
    assert not of_type(run(plan, "usw2"), "aws:eks/cluster:Cluster")
    assert of_type(run(plan, "usw2", mode="failover"), "aws:eks/cluster:Cluster")


def test_training_pool_has_efa_placement_and_gpu_taint() -> None:
    r = example_run("usw2")
    lt = named(r, "aws:ec2/launchTemplate:LaunchTemplate", "-train-lt")
    nics = lt.inputs["networkInterfaces"]
    assert len(nics) == 32 and all(n["interfaceType"] == "efa" for n in nics), lt.urn
    assert [n["networkCardIndex"] for n in nics] == list(range(32))
    group = named(r, "aws:ec2/placementGroup:PlacementGroup", "train")
    assert group.inputs["strategy"] == "cluster"
    assert lt.inputs["placement"]["groupName"] == group.outputs["name"]
    ebs = lt.inputs["blockDeviceMappings"][0]["ebs"]
    assert ebs["encrypted"] == "true" and ebs["deleteOnTermination"] == "true"  # strings, not bools
    assert lt.inputs["metadataOptions"]["httpTokens"] == "required"
    ng = named(r, "aws:eks/nodeGroup:NodeGroup", "-train-nodes")
    assert ng.inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert ng.inputs["instanceTypes"] == ["p5.48xlarge"]
    assert ng.inputs["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    ]
    cluster = named(r, "aws:eks/cluster:Cluster", "eks")
    assert cluster.inputs["encryptionConfig"]["resources"] == ["secrets"]
    assert cluster.inputs["vpcConfig"]["endpointPublicAccess"] is False


def test_capacity_reservation_is_targeted(example_raw: dict[str, Any]) -> None:
    example_raw["sites"]["usw2"]["reserve_capacity"] = True
    r = run(parse_plan(example_raw), "usw2")
    res = named(r, "aws:ec2/capacityReservation:CapacityReservation", "-train-train-")
    assert res.inputs["instanceCount"] == 16 and res.inputs["availabilityZone"] == "us-west-2a"
    lt = named(r, "aws:ec2/launchTemplate:LaunchTemplate", "-train-lt")
    target = lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target["capacityReservationId"] == res.id


# --- links ------------------------------------------------------------------------------------


def test_tgw_peering_is_owned_by_the_primary() -> None:
    primary, dr = example_run("use1"), example_run("usw2")
    attach = of_type(primary, "aws:ec2transitgateway/peeringAttachment:PeeringAttachment")
    accept = of_type(
        primary, "aws:ec2transitgateway/peeringAttachmentAccepter:PeeringAttachmentAccepter"
    )
    assert len(attach) == 1 and attach[0].inputs["peerRegion"] == "us-west-2"
    assert accept[0].inputs["region"] == "us-west-2"
    assert not of_type(dr, "aws:ec2transitgateway/peeringAttachment:PeeringAttachment")


def test_direct_connect_ports_match_the_plan(example_raw: dict[str, Any]) -> None:
    example_raw["sites"]["usw2"]["link"] = {
        "kind": "direct-connect",
        "location": "EqSe2",
        "secondary_location": "CSOW",
    }
    plan = parse_plan(example_raw)
    dr = run(plan, "usw2")
    ports = of_type(dr, "aws:directconnect/connection:Connection")
    assert sorted((p.inputs["bandwidth"], p.inputs["location"]) for p in ports) == [
        ("1Gbps", "CSOW"),
        ("1Gbps", "EqSe2"),
    ]
    assert of_type(dr, "aws:directconnect/gateway:Gateway")[0].inputs["amazonSideAsn"] == "64512"
    tgw_asns = {
        run(plan, s).resources[0].type
        and named(
            run(plan, s), "aws:ec2transitgateway/transitGateway:TransitGateway", "tgw"
        ).inputs["amazonSideAsn"]
        for s in ("use1", "usw2")
    }
    assert tgw_asns == {64600.0, 64601.0}  # distinct, and distinct from the DX gateway's
    primary = run(plan, "use1")
    assert of_type(primary, "aws:directconnect/gatewayAssociation:GatewayAssociation")


# --- tags -------------------------------------------------------------------------------------


@cache
def _taggable(typ: str) -> bool:
    _, mod, name = typ.split(":")
    cls = getattr(getattr(aws, mod.split("/")[0]), name)
    return "tags" in inspect.signature(cls._internal_init).parameters


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_every_taggable_resource_carries_dr_tags(site: str) -> None:
    r = example_run(site)
    for x in r.resources:
        if not _taggable(x.type):
            continue
        tags = x.inputs.get("tags") or {}
        assert tags.get("gpudr:site") == site and tags.get("gpudr:dr-role"), x.urn
    bucket = named(r, "aws:s3/bucket:Bucket", "checkpoints")
    assert bucket.inputs["tags"]["gpudr:rpo-s"] == "14400"
    assert bucket.inputs["tags"]["gpudr:data-class"] == "checkpoints"


def test_a100_cluster_uses_p4d_with_its_efa_count(example_raw: dict[str, Any]) -> None:
    example_raw["clusters"]["train"]["gpu"] = "a100"
    r = run(parse_plan(example_raw), "usw2")
    ng = named(r, "aws:eks/nodeGroup:NodeGroup", "-train-nodes")
    assert ng.inputs["instanceTypes"] == ["p4d.24xlarge"]
    lt = named(r, "aws:ec2/launchTemplate:LaunchTemplate", "-train-lt")
    assert len(lt.inputs["networkInterfaces"]) == 4


def test_deleted_checkpoints_do_not_pile_up() -> None:
    """Uniquely named checkpoints never get newer versions: an age bound removes them."""
    r = example_run("use1")
    lc = named(r, "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", "checkpoints")
    rules = {x["id"]: x for x in lc.inputs["rules"]}
    assert rules["expire-old-versions"]["noncurrentVersionExpiration"] == {"noncurrentDays": 30.0}
    assert rules["remove-orphan-delete-markers"]["expiration"]["expiredObjectDeleteMarker"] is True
