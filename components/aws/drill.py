"""A DR drill on AWS: the DR site's GPU clusters, rebuilt on an isolated network at the plan's
test size, with a role that can only read the DR site's replicas.

What it never declares: a bucket, a KMS key or anything that replicates, a transit gateway, a
peering, a VPN or Direct Connect resource, or a route to another site's network. The DR site's
key is looked up by its alias (`get_key`): used by the clusters for secrets encryption and by
the reader for decryption, never managed here. Nothing is protected or retained: `pulumi
destroy` removes everything the drill created and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pulumi
import pulumi_aws as aws

from components.aws.gpu_cluster import GpuCluster, GpuClusterArgs
from components.aws.network import SiteNetwork, SiteNetworkArgs
from gpudr.contract.drill import (
    DrillConfig,
    drill_clusters,
    drill_pool_tags,
    drill_tags,
    reader_name,
    replica_buckets,
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


def _trust_account(account_id: str) -> str:
    """Principals of the DR account that are allowed sts:AssumeRole on this role by their own
    policies (the operator running the drill): the drill's checks run as the reader."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{account_id}:root"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )


@dataclass(frozen=True)
class AwsDrillArgs:
    config: SiteConfig  # the DR site's, as generated
    drill: DrillConfig


class AwsDrill(pulumi.ComponentResource):
    clusters: pulumi.Output[dict[str, str]]
    reader: pulumi.Output[str]  # the reader role's ARN ("" when the site holds no data)
    buckets: pulumi.Output[dict[str, str]]

    def __init__(
        self, name: str, args: AwsDrillArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:drill:AwsDrill", name, None, opts)
        cfg, drill = args.config, args.drill
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOutputOptions(parent=self)
        region = cfg.region
        drill_cfg = replace(cfg, clusters=drill_clusters(cfg, drill))
        # The DR site's key by its alias: a lookup, so destroying the drill cannot touch it.
        key_arn = aws.kms.get_key_output(key_id=cfg.kms_alias, region=region, opts=invoke).arn
        account_id: pulumi.Input[str] = (
            cfg.account or aws.get_caller_identity_output(opts=invoke).account_id
        )
        network = SiteNetwork(
            f"{name}-net",
            SiteNetworkArgs(
                region=region,
                cidr=drill.cidr or cfg.cidr,
                azs=cfg.azs,
                peer_cidrs=[],
                dual_write_endpoint=False,
                tags=drill_tags(cfg, drill, "network"),
                isolated=True,
            ),
            opts=child,
        )
        clusters: dict[str, pulumi.Output[str]] = {}
        for c in drill_cfg.clusters:
            cluster = GpuCluster(
                f"{name}-{c.name}",
                GpuClusterArgs(
                    config=c,
                    region=region,
                    vpc_id=network.vpc_id,
                    subnet_ids=network.private_subnet_ids,
                    gpu_subnet_id=network.gpu_subnet_id,
                    gpu_az=cfg.azs[0],
                    key_arn=key_arn,
                    api_public_cidrs=cfg.api_public_cidrs,
                    failover=drill.failover,
                    tags=drill_tags(cfg, drill, "gpu-cluster", cluster=c.name),
                    pool_tags=drill_pool_tags(drill_cfg, drill, c.pools),
                ),
                opts=child,
            )
            clusters[c.name] = cluster.cluster_name
        buckets = replica_buckets(cfg)
        self.reader = pulumi.Output.from_input("")
        if buckets:
            role = aws.iam.Role(
                f"{name}-reader",
                name=reader_name(drill.id, "aws"),
                description=f"gpudr drill {drill.id}: read-only on the DR replicas",
                assume_role_policy=pulumi.Output.from_input(account_id).apply(_trust_account),
                max_session_duration=3600,
                tags=drill_tags(cfg, drill, "reader"),
                opts=child,
            )
            aws.iam.RolePolicy(
                f"{name}-reader-policy",
                role=role.id,
                policy=key_arn.apply(lambda arn: reader_policy(buckets, arn, region)),
                opts=child,
            )
            self.reader = role.arn
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        self.buckets = pulumi.Output.from_input({b.data_class: b.name for b in buckets})
        self.register_outputs(
            {"clusters": self.clusters, "reader": self.reader, "buckets": self.buckets}
        )
