"""The logs every AWS site keeps, on every AWS site of the examples (primaries and DR sites) and in
the drills of the AWS DR sites: the site's log sink (an S3 bucket no workload can erase, kept
for the plan's retention), server access logs of every data bucket and flow logs of every VPC
into it (a drill's into its DR site's sink), and every control-plane log of every EKS cluster
into a log group declared with the cluster, encrypted with the site's key, whose policy admits
exactly those groups and the DR site's drills'."""

from __future__ import annotations

import json
from dataclasses import replace
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

import pulumi
import pytest

from components.aws.bucket import tls_only_statements
from components.aws.datasync import DATASYNC_LOG_GROUP
from components.aws.drill import AwsDrill, AwsDrillArgs, drill_cluster_pattern
from components.aws.gpu_cluster import CONTROL_PLANE_LOG_TYPES
from components.aws.logs import SiteLogs, SiteLogsArgs
from components.aws.site import AwsSite, AwsSiteArgs
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.mocks_aws import OFFLINE_ACCOUNT
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import stack_config_values
from gpudr.contract.drill import DrillConfig
from gpudr.contract.logs import CLOUDWATCH_RETENTION_DAYS, cloudwatch_retention_days
from gpudr.contract.site import SiteConfig
from gpudr.contract.stack import MODE_KEY, SITE_KEY
from gpudr.contract.tags import DrRole, site_tags
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.components.aws.stacks import (
    DRILLS,
    drill_run,
    every_run,
    of_type,
    run_of,
    site_config,
    site_run,
    sites,
)
from tests.conftest import ROOT

BUCKET = "aws:s3/bucket:Bucket"
OWNERSHIP = "aws:s3/bucketOwnershipControls:BucketOwnershipControls"
PUBLIC_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
VERSIONING = "aws:s3/bucketVersioning:BucketVersioning"
ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
)
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
POLICY = "aws:s3/bucketPolicy:BucketPolicy"
LOGGING = "aws:s3/bucketLogging:BucketLogging"
VPC = "aws:ec2/vpc:Vpc"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
CLUSTER = "aws:eks/cluster:Cluster"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
KEY = "aws:kms/key:Key"
SINK_COMPONENT = "gpudr:logs:SiteLogs"
LOGS_SID = "CloudWatchLogsEncryptLogGroups"


def account(cfg: SiteConfig) -> str:
    return cfg.account or OFFLINE_ACCOUNT  # the offline caller identity when none is named


def sink_of(run: StackRun, cfg: SiteConfig) -> Registration:
    (sink,) = [b for b in of_type(run, BUCKET) if b.inputs["bucket"] == cfg.require_logs().sink]
    return sink


def on_bucket(run: StackRun, token: str, bucket: Registration) -> list[Registration]:
    """The `token` resources that configure `bucket` (their `bucket` input is its id)."""
    return [r for r in of_type(run, token) if r.property_dependencies.get("bucket") == [bucket.urn]]


def sink_policy(run: StackRun, cfg: SiteConfig) -> Registration:
    (policy,) = on_bucket(run, POLICY, sink_of(run, cfg))
    return policy


def statements(policy: Registration) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}


# --- the sink -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("example", "site"), sites())
def test_each_site_declares_its_sink_protected_and_tagged(example: str, site: str) -> None:
    run, cfg = site_run(example, site), site_config(example, site)
    sink = sink_of(run, cfg)
    assert sink.inputs["region"] == cfg.region, sink.urn
    assert sink.inputs["forceDestroy"] is False, sink.urn
    assert sink.protect and sink.retain_on_delete, sink.urn
    assert sink.inputs["tags"] == site_tags(cfg, DrRole.SITE_LOGS), sink.urn
    (component,) = [r for r in run.registrations if r.type == SINK_COMPONENT]
    assert sink.parent == component.urn, sink.urn


@pytest.mark.parametrize(("example", "site"), sites())
def test_the_sink_is_owner_enforced_private_sse_s3_versioned(example: str, site: str) -> None:
    run, cfg = site_run(example, site), site_config(example, site)
    sink = sink_of(run, cfg)
    (ownership,) = on_bucket(run, OWNERSHIP, sink)
    assert ownership.inputs["rule"] == {"objectOwnership": "BucketOwnerEnforced"}, ownership.urn
    (block,) = on_bucket(run, PUBLIC_BLOCK, sink)
    for setting in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls"):
        assert block.inputs[setting] is True, (block.urn, setting)
    assert block.inputs["restrictPublicBuckets"] is True, block.urn
    (encryption,) = on_bucket(run, ENCRYPTION, sink)
    (rule,) = encryption.inputs["rules"]
    # SSE-S3: the only default encryption S3 delivers server access logs to.
    assert rule["applyServerSideEncryptionByDefault"] == {"sseAlgorithm": "AES256"}, rule
    (versioning,) = on_bucket(run, VERSIONING, sink)
    assert versioning.inputs["versioningConfiguration"]["status"] == "Enabled", versioning.urn
    assert versioning.protect, versioning.urn
    for r in (ownership, block, encryption, versioning):
        assert r.inputs["region"] == cfg.region, r.urn


@pytest.mark.parametrize(("example", "site"), sites())
def test_the_sink_keeps_logs_for_the_plans_retention(example: str, site: str) -> None:
    run, cfg = site_run(example, site), site_config(example, site)
    (lifecycle,) = on_bucket(run, LIFECYCLE, sink_of(run, cfg))
    (rule,) = lifecycle.inputs["rules"]
    assert rule["status"] == "Enabled" and rule["filter"] == {"prefix": ""}, rule
    assert rule["expiration"] == {"days": cfg.require_logs().retention_days}, rule
    assert rule["noncurrentVersionExpiration"] == {"noncurrentDays": 1}, rule
    (versioning,) = on_bucket(run, VERSIONING, sink_of(run, cfg))
    assert versioning.urn in lifecycle.dependencies, lifecycle.urn


@pytest.mark.parametrize(("example", "site"), sites())
def test_the_sink_policy_admits_the_two_log_services_and_no_deletion(
    example: str, site: str
) -> None:
    run, cfg = site_run(example, site), site_config(example, site)
    sink, policy = sink_of(run, cfg), sink_policy(run, cfg)
    arn, own = sink.outputs["arn"], {"aws:SourceAccount": account(cfg)}
    doc = json.loads(policy.inputs["policy"])
    # The data buckets' TLS-only statements, from their one home.
    assert doc["Statement"][:2] == tls_only_statements(arn), policy.urn
    by_sid = statements(policy)
    assert set(by_sid) == {
        "DenyInsecureTransport",
        "DenyOutdatedTls",
        "S3ServerAccessLogsDelivery",
        "VpcFlowLogsDelivery",
        "VpcFlowLogsAclCheck",
        "DenyLogDeletion",
    }, policy.urn
    assert by_sid["S3ServerAccessLogsDelivery"] == {
        "Sid": "S3ServerAccessLogsDelivery",
        "Effect": "Allow",
        "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Action": "s3:PutObject",
        "Resource": f"{arn}/s3/*",
        "Condition": {"StringEquals": own},
    }
    assert by_sid["VpcFlowLogsDelivery"] == {
        "Sid": "VpcFlowLogsDelivery",
        "Effect": "Allow",
        "Principal": {"Service": "delivery.logs.amazonaws.com"},
        "Action": "s3:PutObject",
        "Resource": f"{arn}/vpc-flow-logs/*",
        "Condition": {"StringEquals": {**own, "s3:x-amz-acl": "bucket-owner-full-control"}},
    }
    assert by_sid["VpcFlowLogsAclCheck"] == {
        "Sid": "VpcFlowLogsAclCheck",
        "Effect": "Allow",
        "Principal": {"Service": "delivery.logs.amazonaws.com"},
        "Action": "s3:GetBucketAcl",
        "Resource": arn,
        "Condition": {"StringEquals": own},
    }
    assert by_sid["DenyLogDeletion"] == {
        "Sid": "DenyLogDeletion",
        "Effect": "Deny",
        "Principal": "*",
        "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
        "Resource": f"{arn}/*",
    }
    (block,) = on_bucket(run, PUBLIC_BLOCK, sink)
    assert block.urn in policy.dependencies, policy.urn
    assert policy.inputs["region"] == cfg.region, policy.urn


@pulumi.runtime.test
def test_the_sink_outputs_its_name_and_arn() -> pulumi.Output[None]:
    cfg = site_config("aws-two-region", "usw2")
    sink = SiteLogs("t-logs", SiteLogsArgs(config=cfg, account_id=OFFLINE_ACCOUNT))

    def check(args: list[str]) -> None:
        urn, name, arn = args
        assert name == cfg.require_logs().sink, urn
        assert arn == f"arn:aws:s3:::{name}", urn

    return pulumi.Output.all(sink.urn, sink.bucket_name, sink.bucket_arn).apply(check)


# --- what logs into it --------------------------------------------------------------------------


@pytest.mark.parametrize(("example", "site"), sites())
def test_every_data_bucket_logs_its_requests_to_the_sink(example: str, site: str) -> None:
    run, cfg = site_run(example, site), site_config(example, site)
    policy = sink_policy(run, cfg)
    data = [b for b in of_type(run, BUCKET) if b.inputs["bucket"] != cfg.require_logs().sink]
    assert {b.inputs["bucket"] for b in data} == {b.name for b in cfg.buckets}
    for bucket in data:
        (logging,) = on_bucket(run, LOGGING, bucket)
        name = bucket.inputs["bucket"]
        assert logging.inputs["targetBucket"] == cfg.require_logs().sink, logging.urn
        assert logging.inputs["targetPrefix"] == f"s3/{name}/", logging.urn
        assert logging.inputs["region"] == cfg.region, logging.urn
        # Delivery starts once the sink's policy lets the logging service write.
        assert policy.urn in logging.dependencies, logging.urn
    assert len(of_type(run, LOGGING)) == len(data)  # the sink does not log into itself


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_every_vpc_sends_all_its_flows_to_the_sites_sink(
    kind: str, example: str, site: str
) -> None:
    """A drill's VPC to its DR site's sink, by name: the logs outlive the drill."""
    run, cfg = run_of(kind, example, site), site_config(example, site)
    vpcs, flow_logs = of_type(run, VPC), of_type(run, FLOW_LOG)
    assert vpcs and len(flow_logs) == len(vpcs)
    for vpc in vpcs:
        (flow,) = [f for f in flow_logs if f.property_dependencies["vpcId"] == [vpc.urn]]
        i = flow.inputs
        assert i["trafficType"] == "ALL", flow.urn
        assert i["logDestinationType"] == "s3", flow.urn
        assert i["logDestination"] == f"arn:aws:s3:::{cfg.require_logs().sink}/vpc-flow-logs/"
        assert i["maxAggregationInterval"] == 600, flow.urn
        assert i["destinationOptions"] == {"perHourPartition": True}, flow.urn
        assert i["region"] == vpc.inputs["region"] == cfg.region, flow.urn
        assert flow.parent == vpc.parent, flow.urn
        if kind == "site":
            assert sink_policy(run, cfg).urn in flow.dependencies, flow.urn


# --- control-plane logs -------------------------------------------------------------------------


def cluster_log_group(run: StackRun, cluster: Registration) -> Registration:
    (group,) = [
        g for g in of_type(run, LOG_GROUP) if g.inputs["name"] == f"/aws/eks/{cluster.id}/cluster"
    ]
    return group


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_every_cluster_logs_its_whole_control_plane_to_its_own_encrypted_group(
    kind: str, example: str, site: str
) -> None:
    run, cfg = run_of(kind, example, site), site_config(example, site)
    clusters = of_type(run, CLUSTER)
    assert clusters
    for cluster in clusters:
        assert cluster.inputs["enabledClusterLogTypes"] == [
            "api",
            "audit",
            "authenticator",
            "controllerManager",
            "scheduler",
        ], cluster.urn
        group = cluster_log_group(run, cluster)
        assert cluster.inputs["name"] == cluster.id, cluster.urn
        kept = cloudwatch_retention_days(cfg.require_logs().retention_days)
        assert group.inputs["retentionInDays"] == kept, group.urn
        # The key that encrypts the cluster's secrets: the site's (a drill's: the DR site's).
        key_arn = cluster.inputs["encryptionConfig"]["provider"]["keyArn"]
        assert group.inputs["kmsKeyId"] == key_arn, group.urn
        assert group.inputs["region"] == cluster.inputs["region"] == cfg.region, group.urn
        assert group.parent == cluster.parent, group.urn
        # Before the cluster, so EKS never creates the group itself.
        assert group.urn in cluster.dependencies, cluster.urn
    assert tuple(CONTROL_PLANE_LOG_TYPES) == tuple(clusters[0].inputs["enabledClusterLogTypes"])


@pytest.mark.parametrize(("example", "site"), sites())
def test_each_sites_key_admits_exactly_its_clusters_groups_and_its_drills(
    example: str, site: str
) -> None:
    run, cfg = site_run(example, site), site_config(example, site)
    (key,) = of_type(run, KEY)
    logs = statements_of_key(key)[LOGS_SID]
    prefix = f"arn:aws:logs:{cfg.region}:{account(cfg)}:log-group:"
    expected = [f"{prefix}/aws/eks/{c.eks_name}/cluster" for c in cfg.clusters]
    if any(b.inbound for b in cfg.buckets):
        expected.insert(0, f"{prefix}{DATASYNC_LOG_GROUP}")
    if cfg.role == "dr":
        expected.append(f"{prefix}/aws/eks/drill-{cfg.site}-????????t??????z-*/cluster")
    assert logs["Condition"] == {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": expected}}
    assert logs["Principal"] == {"Service": f"logs.{cfg.region}.amazonaws.com"}, key.urn


def statements_of_key(key: Registration) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}


@pytest.mark.parametrize(("example", "site"), [pytest.param(*d, id="-".join(d)) for d in DRILLS])
def test_the_dr_key_admits_its_drills_groups_and_no_one_elses(example: str, site: str) -> None:
    """A drill encrypts its clusters' groups with the DR key it finds by alias; the DR stack's
    policy, not the drill, must admit them. Matched as IAM's ArnLike does (`*`, `?`)."""
    cfg = site_config(example, site)
    (key,) = of_type(site_run(example, site), KEY)
    admitted = statements_of_key(key)[LOGS_SID]["Condition"]["ArnLike"][
        "kms:EncryptionContext:aws:logs:arn"
    ]
    drill = drill_run(example, site)
    groups = of_type(drill, LOG_GROUP)
    assert groups and len(groups) == len(of_type(drill, CLUSTER))
    prefix = f"arn:aws:logs:{cfg.region}:{account(cfg)}:log-group:/aws/eks/"
    for group in groups:
        arn = f"{prefix}{group.inputs['name'].removeprefix('/aws/eks/')}"
        assert any(fnmatchcase(arn, a) for a in admitted), group.urn
    others = (
        f"{prefix}drill-other-20250131t031200z-train/cluster",  # another site's drill
        f"{prefix}drill-{site}-train/cluster",  # not a drill id
        f"{prefix}{cfg.system}-{site}-other/cluster",  # not a cluster of the site
        f"{prefix}drill-{site}-20250131t031200z-train/other",
    )
    for arn in others:
        assert not any(fnmatchcase(arn, a) for a in admitted), arn


def test_the_drill_pattern_is_the_drill_id_with_any_timestamp() -> None:
    cfg = site_config("aws-two-region", "usw2")
    assert drill_cluster_pattern(cfg) == "drill-usw2-????????t??????z-*"


# --- retention ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("days", "kept"),
    [(1, 1), (2, 3), (30, 30), (31, 60), (100, 120), (365, 365), (366, 400), (730, 731)],
)
def test_log_groups_keep_logs_at_least_the_plans_retention(days: int, kept: int) -> None:
    assert cloudwatch_retention_days(days) == kept
    assert kept in CLOUDWATCH_RETENTION_DAYS


def test_a_retention_cloudwatch_cannot_keep_is_refused() -> None:
    assert cloudwatch_retention_days(3653) == 3653
    with pytest.raises(ValueError, match=r"shorten the plan.s logging\.retention"):
        cloudwatch_retention_days(3654)


@cache
def retention_run(example: str, site: str, days: int, mode: str) -> StackRun:
    """The site with the plan's retention set to `days`, its clusters backup/restore (so that
    the standby declares none), in `mode`."""
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    config = stack_config_values(design(plan), plan.sites[site])
    cfg = site_config(example, site)
    cfg = replace(
        cfg,
        logs=replace(cfg.require_logs(), retention_days=days),
        clusters=tuple(replace(c, standby_control_plane=False) for c in cfg.clusters),
    )
    config.update({SITE_KEY: cfg.to_dict(), MODE_KEY: mode})
    return run_stack(f"{plan.name}-{site}", config, GpudrMocks(default_region=cfg.region))


def test_retention_is_the_plans_in_the_sink_and_rounded_up_in_the_log_groups() -> None:
    run = retention_run("aws-two-region", "usw2", 100, "failover")
    cfg = site_config("aws-two-region", "usw2")
    (lifecycle,) = on_bucket(run, LIFECYCLE, sink_of(run, cfg))
    assert lifecycle.inputs["rules"][0]["expiration"] == {"days": 100}, lifecycle.urn
    (cluster,) = of_type(run, CLUSTER)
    assert cluster_log_group(run, cluster).inputs["retentionInDays"] == 120, cluster.urn


def test_a_cluster_declared_only_on_failover_is_admitted_by_the_key_already() -> None:
    """The key's policy does not change during a failover: the standby admits the group of a
    cluster it does not declare yet."""
    standby = retention_run("aws-two-region", "usw2", 100, "standby")
    failover = retention_run("aws-two-region", "usw2", 100, "failover")
    assert not of_type(standby, CLUSTER) and not of_type(standby, LOG_GROUP)
    (before,) = of_type(standby, KEY)
    (after,) = of_type(failover, KEY)
    assert before.inputs["policy"] == after.inputs["policy"], before.urn
    (group,) = of_type(failover, LOG_GROUP)
    admitted = statements_of_key(before)[LOGS_SID]["Condition"]["ArnLike"]
    assert group.outputs["arn"] in admitted["kms:EncryptionContext:aws:logs:arn"], group.urn


# --- a site never deploys unlogged ---------------------------------------------------------------


def unlogged() -> SiteConfig:
    return replace(site_config("aws-two-region", "usw2"), logs=None)


def test_a_sink_without_its_config_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no log sink .*regenerate its stack file with `gpudr"):
        SiteLogs("t-logs", SiteLogsArgs(config=unlogged(), account_id=OFFLINE_ACCOUNT))


def test_a_site_without_logs_is_refused() -> None:
    with pytest.raises(ValueError, match=r"site usw2 has no log sink .*`gpudr generate`"):
        AwsSite("t", AwsSiteArgs(config=unlogged(), failover=False))


def test_a_drill_without_logs_is_refused() -> None:
    drill = DrillConfig(
        stack="drill-usw2-20250131T031200Z",
        expires_at="2025-01-31T07:12:00Z",
        ttl_s=14400,
        phase="capacity",
        nodes={"train": 2},
    )
    with pytest.raises(ValueError, match=r"site usw2 has no log sink .*`gpudr generate`"):
        AwsDrill("t", AwsDrillArgs(config=unlogged(), drill=drill))


# --- a log group that exists already ----------------------------------------------------------


def existing_group_run(mode: str, exists: bool) -> StackRun:
    """aws-two-region's DR site in `mode`, on an account where its cluster's log group exists
    already (EKS created it for a cluster deployed with logging on, or gpudr retained it when
    a failover-only cluster went) or not."""
    plan = load_plan(ROOT / "examples" / "aws-two-region.yaml")
    config = stack_config_values(design(plan), plan.sites["usw2"])
    config[MODE_KEY] = mode
    cfg = site_config("aws-two-region", "usw2")
    groups = frozenset({f"/aws/eks/{cfg.clusters[0].eks_name}/cluster"} if exists else ())
    mocks = GpudrMocks(default_region=cfg.region, existing_log_groups=groups)
    return run_stack(f"{plan.name}-usw2", config, mocks)


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_an_existing_log_group_is_imported_never_created_twice(mode: str) -> None:
    """Declaring a group that exists would fail `pulumi up` on "already exists" (a failover's
    too): the engine imports it, keeps its logs and updates it to the site's settings."""
    cfg = site_config("aws-two-region", "usw2")
    group = f"/aws/eks/{cfg.clusters[0].eks_name}/cluster"
    run = existing_group_run(mode, exists=True)
    (cluster,) = of_type(run, CLUSTER)
    declared = cluster_log_group(run, cluster)
    assert declared.import_id == group, declared.urn
    assert declared.inputs["kmsKeyId"] and declared.inputs["retentionInDays"], declared.urn
    lookups = [a for t, a in run.calls if t == "aws:cloudwatch/getLogGroups:getLogGroups"]
    assert {a.get("region") for a in lookups} == {cfg.region}, lookups


def test_a_new_log_group_is_created_not_imported() -> None:
    run = existing_group_run("standby", exists=False)
    (cluster,) = of_type(run, CLUSTER)
    assert cluster_log_group(run, cluster).import_id == "", cluster.urn


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_control_plane_logs_outlive_their_cluster(kind: str, example: str, site: str) -> None:
    """A failover-only cluster's audit trail outlives failback, a drill's the drill: the group
    is retained when its cluster goes, and expires with the retention."""
    run = run_of(kind, example, site)
    for group in of_type(run, LOG_GROUP):
        if group.inputs["name"].startswith("/aws/eks/"):
            assert group.retain_on_delete, group.urn
