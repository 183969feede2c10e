"""A DR drill on AWS: the DR site's GPU clusters, rebuilt on an isolated network at the plan's
test size, with a role that can only read the DR site's replicas and that only the operator
running the drill may assume (none at all when the operator is not known).

What it never declares: a bucket, a KMS key or anything that replicates, a transit gateway, a
peering, a VPN or Direct Connect resource, or a route to another site's network. The DR site's
key is looked up by its alias (`get_key`): used by the clusters for secrets encryption and
their control-plane log groups, and by the reader for decryption, never managed here. Nothing
is protected, and only the clusters' control-plane log groups are retained: `pulumi destroy`
removes everything else the drill created, and nothing else.

Logs: the drill network's flow logs go to the DR site's log sink, by its name (the DR stack
owns it), and so do the access logs of the drill's reads of the replicas (the replica buckets
log there already): both outlive the drill. A cluster's control-plane log group (its EKS audit
trail) is retained when the drill is destroyed and expires with the DR site's retention.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pulumi
import pulumi_aws as aws

from components.aws.gpu_cluster import GpuCluster, GpuClusterArgs
from components.aws.network import SiteNetwork, SiteNetworkArgs
from gpudr.contract.drill import (
    DrillConfig,
    aws_trusted,
    cluster_name,
    drill_clusters,
    drill_pool_tags,
    drill_tags,
    format_ts,
    reader_name,
    replica_buckets,
    stack_name,
)
from gpudr.contract.site import BucketConfig, SiteConfig

# Everything the drill's checks call: list, head, get (object and its checksum attributes).
# No Put*, Delete*, Restore*, Replicate* or any bucket configuration action.
READ_OBJECT_ACTIONS = (
    "s3:GetObject",
    "s3:GetObjectVersion",
    "s3:GetObjectAttributes",
    "s3:GetObjectVersionAttributes",
)
LIST_ACTIONS = ("s3:ListBucket",)


def reader_policy(buckets: Sequence[BucketConfig], key_arn: str, region: str) -> str:
    """Read-only on the replica buckets; decrypt with the DR key only through S3 in the DR
    region (SSE-KMS objects cannot be read without kms:Decrypt on their key)."""
    arns = [f"arn:aws:s3:::{b.name}" for b in buckets]
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "ListReplicas",
                    "Effect": "Allow",
                    "Action": list(LIST_ACTIONS),
                    "Resource": arns,
                },
                {
                    "Sid": "ReadReplicas",
                    "Effect": "Allow",
                    "Action": list(READ_OBJECT_ACTIONS),
                    "Resource": [f"{arn}/*" for arn in arns],
                },
                {
                    "Sid": "DecryptReplicasThroughS3",
                    "Effect": "Allow",
                    "Action": ["kms:Decrypt"],
                    "Resource": [key_arn],
                    "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
                },
            ],
        }
    )


def trust_operator(operator: str) -> str:
    """Only the operator running the drill may assume the reader, so the drill's checks run
    with the reader's rights: never every principal of the account. The principal is the
    account, narrowed by `aws:PrincipalArn` to the operator (`aws_trusted`: a user exactly, a
    role session as its role at any path, since STS drops the role's path from the session's
    ARN). The operator's own policies must still allow sts:AssumeRole on this role."""
    root, arns = aws_trusted(operator)
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": root},
                    "Action": "sts:AssumeRole",
                    "Condition": {"ArnLike": {"aws:PrincipalArn": list(arns)}},
                }
            ],
        }
    )


# Any instant: only the shape of a drill stack's timestamp matters to the pattern.
_ANY_TIME = datetime(2000, 1, 1, tzinfo=UTC)


def drill_cluster_pattern(site: SiteConfig) -> str:
    """The EKS name of every cluster any drill of `site` declares, as an IAM wildcard
    (`drill-<site>-????????t??????z-*`): the drill id (its stack's name) with its timestamp's
    digits as `?`, then any cluster. Drills of differently named sites do not match; a
    site's own clusters (`<system>-<site>-<cluster>`) are named exactly where needed."""
    any_drill = DrillConfig(
        stack=stack_name(site.site, _ANY_TIME), expires_at="", ttl_s=0, phase="", nodes={}
    )
    stamp = len(format_ts(_ANY_TIME))
    drill_id = any_drill.id[:-stamp] + re.sub(r"[0-9]", "?", any_drill.id[-stamp:])
    return cluster_name(drill_id, "*", site.cloud)


@dataclass(frozen=True)
class AwsDrillArgs:
    config: SiteConfig  # the DR site's, as generated
    drill: DrillConfig


class AwsDrill(pulumi.ComponentResource):
    clusters: pulumi.Output[dict[str, str]]
    # The reader role's ARN; "" when the site holds no data or no operator is known.
    reader: pulumi.Output[str]
    buckets: pulumi.Output[dict[str, str]]

    def __init__(
        self, name: str, args: AwsDrillArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:drill:AwsDrill", name, None, opts)
        cfg = args.config
        cfg.require_logs()  # before anything is declared: a drill is never unlogged either
        self._name, self._args = name, args
        self._child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        # The DR site's key by its alias: a lookup, so destroying the drill cannot touch it.
        key_arn = aws.kms.get_key_output(key_id=cfg.kms_alias, region=cfg.region, opts=invoke).arn
        clusters = self._clusters(self._network(), key_arn)
        buckets = replica_buckets(cfg)
        # Fail closed: with no operator known, no reader at all (the checks then run with the
        # operator's own credentials, and the report says so), never one the account trusts.
        operator = args.drill.operator
        self.reader = (
            self._reader(buckets, key_arn, operator)
            if buckets and operator
            else pulumi.Output.from_input("")
        )
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        self.buckets = pulumi.Output.from_input({b.data_class: b.name for b in buckets})
        self.register_outputs(
            {"clusters": self.clusters, "reader": self.reader, "buckets": self.buckets}
        )

    def _network(self) -> SiteNetwork:
        """The isolated network; its flow logs go to the DR site's sink, where they outlive
        the drill."""
        cfg, drill = self._args.config, self._args.drill
        return SiteNetwork(
            f"{self._name}-net",
            SiteNetworkArgs(
                region=cfg.region,
                cidr=drill.cidr or cfg.cidr,
                azs=cfg.azs,
                peer_cidrs=[],
                dual_write_endpoint=False,
                tags=drill_tags(cfg, drill, "network"),
                flow_log_bucket=cfg.require_logs().sink,
                isolated=True,
            ),
            opts=self._child,
        )

    def _clusters(
        self, network: SiteNetwork, key_arn: pulumi.Output[str]
    ) -> dict[str, pulumi.Output[str]]:
        """The DR site's clusters at the drill's size. Each declares its own control-plane log
        group (a log group is per cluster), under the DR site's key and retention; the DR
        key's policy admits these groups (`drill_cluster_pattern`). The group is destroyed
        with the drill; the drill's flow logs and its reads of the replicas (S3 access logs)
        outlive it in the DR site's sink."""
        cfg, drill = self._args.config, self._args.drill
        drill_cfg = replace(cfg, clusters=drill_clusters(cfg, drill))
        out: dict[str, pulumi.Output[str]] = {}
        for c in drill_cfg.clusters:
            cluster = GpuCluster(
                f"{self._name}-{c.name}",
                GpuClusterArgs(
                    config=c,
                    region=cfg.region,
                    vpc_id=network.vpc_id,
                    subnet_ids=network.private_subnet_ids,
                    gpu_subnet_id=network.gpu_subnet_id,
                    gpu_az=cfg.azs[0],
                    key_arn=key_arn,
                    api_public_cidrs=cfg.api_public_cidrs,
                    failover=drill.failover,
                    tags=drill_tags(cfg, drill, "gpu-cluster", cluster=c.name),
                    pool_tags=drill_pool_tags(drill_cfg, drill, c.pools),
                    log_retention_days=cfg.require_logs().retention_days,
                ),
                opts=self._child,
            )
            out[c.name] = cluster.cluster_name
        return out

    def _reader(
        self,
        buckets: Sequence[BucketConfig],
        key_arn: pulumi.Output[str],
        operator: str,
    ) -> pulumi.Output[str]:
        """The role the drill's checks run as: read-only on the replicas; returns its ARN."""
        cfg, drill, name = self._args.config, self._args.drill, self._name
        region = cfg.region
        role = aws.iam.Role(
            f"{name}-reader",
            name=reader_name(drill.id, "aws"),
            description=f"gpudr drill {drill.id}: read-only on the DR replicas",
            assume_role_policy=trust_operator(operator),
            max_session_duration=3600,
            tags=drill_tags(cfg, drill, "reader"),
            opts=self._child,
        )
        aws.iam.RolePolicy(
            f"{name}-reader-policy",
            role=role.id,
            policy=key_arn.apply(lambda arn: reader_policy(buckets, arn, region)),
            opts=self._child,
        )
        return role.arn
