"""A DR drill on GCP: the DR site's GKE clusters, rebuilt on an isolated VPC network at the
plan's test size, with a service account that can only read the DR site's buckets.

What it never declares: a bucket, a key ring or key, a transfer job, a VPC peering, an HA VPN
gateway, tunnel or BGP peer, or an Interconnect attachment. Its Cloud Router exists only for
Cloud NAT (private nodes pull images through it) and has no interface or peer. The clusters
encrypt secrets with the DR site's regional key, named by its deterministic path and already
granted to the GKE service agent by the DR stack. Nothing is protected or retained.

The reader gets roles/storage.objectViewer on each replica bucket and no key role: Cloud
Storage decrypts CMEK objects with its own service agent, so a reader needs no Cloud KMS
permission, and a decrypter grant would let it decrypt anything else under the DR key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pulumi
import pulumi_gcp as gcp

from components.gcp.gpu_cluster import GpuCluster, GpuClusterArgs
from components.gcp.kms import key_path
from components.gcp.network import SiteNetwork, SiteNetworkArgs
from gpudr.contract.drill import (
    DrillConfig,
    drill_clusters,
    drill_pool_tags,
    drill_tags,
    network_name,
    reader_name,
    replica_buckets,
)
from gpudr.contract.site import SiteConfig
from gpudr.contract.tags import gcp_labels

OBJECT_VIEWER = "roles/storage.objectViewer"  # storage.objects.get and .list, nothing else
TOKEN_CREATOR = "roles/iam.serviceAccountTokenCreator"


@dataclass(frozen=True)
class GcpDrillArgs:
    config: SiteConfig  # the DR site's, as generated
    drill: DrillConfig


class GcpDrill(pulumi.ComponentResource):
    clusters: pulumi.Output[dict[str, str]]
    reader: pulumi.Output[str]  # the reader's email ("" when the site holds no data)
    buckets: pulumi.Output[dict[str, str]]

    def __init__(
        self, name: str, args: GcpDrillArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:drill:GcpDrill", name, None, opts)
        cfg, drill = args.config, args.drill
        project = cfg.project or gcp.config.project
        if not project or not cfg.key_ring or not cfg.azs:
            raise ValueError(
                f"gpudr:site {cfg.site} (gcp): project, key_ring or azs not set; regenerate the "
                "stack with `gpudr generate`"
            )
        child = pulumi.ResourceOptions(parent=self)
        region = cfg.region
        # The DR site's regional key, declared (and protected) by its own stack.
        key_id = key_path(project, cfg.key_ring, region.lower())
        drill_cfg = replace(cfg, clusters=drill_clusters(cfg, drill))
        network = SiteNetwork(
            f"{name}-net",
            SiteNetworkArgs(
                project=project,
                region=region,
                cidr=drill.cidr or cfg.cidr,
                network_name=network_name(drill.id, region),
                router_asn=cfg.transit_gateway_asn,
                clusters=[c.name for c in drill_cfg.clusters],
            ),
            opts=child,
        )
        clusters: dict[str, pulumi.Output[str]] = {}
        for c in drill_cfg.clusters:
            ranges = network.plan.clusters[c.name]
            cluster = GpuCluster(
                f"{name}-{c.name}",
                GpuClusterArgs(
                    config=c,
                    project=project,
                    region=region,
                    gpu_zone=cfg.azs[0],
                    network=network.network_self_link,
                    subnetwork=network.subnetwork_self_link,
                    pods_range=ranges.pods_range,
                    services_range=ranges.services_range,
                    master_cidr=ranges.master_cidr,
                    key_id=key_id,
                    key_grant=None,
                    api_public_cidrs=cfg.api_public_cidrs,
                    failover=drill.failover,
                    labels=gcp_labels(drill_tags(cfg, drill, "gpu-cluster", cluster=c.name)),
                    pool_labels={
                        pool: gcp_labels(tags)
                        for pool, tags in drill_pool_tags(drill_cfg, drill, c.pools).items()
                    },
                ),
                opts=child,
            )
            clusters[c.name] = cluster.cluster_name
        buckets = replica_buckets(cfg)
        self.reader = pulumi.Output.from_input("")
        if buckets:
            account = gcp.serviceaccount.Account(
                f"{name}-reader",
                account_id=reader_name(drill.id, "gcp"),
                display_name=f"gpudr drill reader {drill.id}"[:100],
                description=f"gpudr drill {drill.id}: read-only on the DR replicas, until "
                f"{drill.expires_at}",
                project=project,
                opts=child,
            )
            for b in buckets:
                gcp.storage.BucketIAMMember(
                    f"{name}-reader-{b.data_class}",
                    bucket=b.name,
                    role=OBJECT_VIEWER,
                    member=account.member,
                    opts=child,
                )
            if drill.operator:
                # Only the operator who runs the drill may act as the reader, so the drill's
                # checks run with the reader's rights (gcloud --impersonate-service-account).
                gcp.serviceaccount.IAMMember(
                    f"{name}-reader-operator",
                    service_account_id=account.name,
                    role=TOKEN_CREATOR,
                    member=drill.operator,
                    opts=child,
                )
            self.reader = account.email
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        self.buckets = pulumi.Output.from_input({b.data_class: b.name for b in buckets})
        self.register_outputs(
            {"clusters": self.clusters, "reader": self.reader, "buckets": self.buckets}
        )
