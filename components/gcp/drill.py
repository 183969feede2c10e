"""A DR drill on GCP: the DR site's GKE clusters, rebuilt on an isolated VPC network at the
plan's test size, with a service account that can only read the DR site's buckets.

What it never declares: a bucket, a key ring or key, a transfer job, a VPC peering, an HA VPN
gateway, tunnel or BGP peer, or an Interconnect attachment. Its Cloud Router exists only for
Cloud NAT (private nodes pull images through it) and has no interface or peer; its firewall
allows no peer's range. Its clusters and firewall come from the DR site's own components
(GpuCluster, SiteNetwork), so the drill is hardened as the site is. The clusters encrypt
secrets with the DR site's regional key, named by its deterministic path and already granted
to the GKE service agent by the DR stack. Nothing is protected or retained.

Logs: the drill's subnetwork logs its flows and its clusters their control planes, as the
site's do (the same components). It declares no log bucket, sink or audit config: the DR
site's sink (components/gcp/logs.py, in the same project) matches the names a drill of that
site gives its subnetwork and clusters, so the drill's logs land in the DR site's log bucket
and outlive the drill. Its reads of the replicas are logged by the DR site's Data Access audit
config. A DR site config without a sink is refused, as the site itself would be.

The reader gets roles/storage.objectViewer on each replica bucket and no key role: Cloud
Storage decrypts CMEK objects with its own service agent, so a reader needs no Cloud KMS
permission, and a decrypter grant would let it decrypt anything else under the DR key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pulumi
import pulumi_gcp as gcp

from components.gcp.gpu_cluster import GpuCluster, GpuClusterArgs
from components.gcp.kms import key_path
from components.gcp.network import SiteNetwork, SiteNetworkArgs
from gpudr.contract import grants
from gpudr.contract.drill import (
    DrillConfig,
    drill_clusters,
    drill_pool_tags,
    drill_tags,
    network_name,
    reader_name,
    replica_buckets,
)
from gpudr.contract.site import BucketConfig, ClusterConfig, SiteConfig
from gpudr.contract.tags import gcp_labels

OBJECT_VIEWER = grants.GCS_OBJECT_VIEWER  # storage.objects.get and .list, nothing else
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
        cfg.require_logs()  # the DR site's sink, which keeps this drill's logs
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
        clusters = {
            c.name: self._cluster(
                name, c, drill_cfg, drill, project=project, key_id=key_id, network=network
            )
            for c in drill_cfg.clusters
        }
        buckets = replica_buckets(cfg)
        self.reader = (
            self._reader(name, drill, buckets, project=project)
            if buckets
            else pulumi.Output.from_input("")
        )
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        self.buckets = pulumi.Output.from_input({b.data_class: b.name for b in buckets})
        self.register_outputs(
            {"clusters": self.clusters, "reader": self.reader, "buckets": self.buckets}
        )

    def _cluster(
        self,
        name: str,
        c: ClusterConfig,
        drill_cfg: SiteConfig,
        drill: DrillConfig,
        *,
        project: str,
        key_id: str,
        network: SiteNetwork,
    ) -> pulumi.Output[str]:
        ranges = network.plan.clusters[c.name]
        cluster = GpuCluster(
            f"{name}-{c.name}",
            GpuClusterArgs(
                config=c,
                project=project,
                region=drill_cfg.region,
                gpu_zone=drill_cfg.azs[0],
                network=network.network_self_link,
                subnetwork=network.subnetwork_self_link,
                pods_range=ranges.pods_range,
                services_range=ranges.services_range,
                master_cidr=ranges.master_cidr,
                key_id=key_id,
                key_grant=None,
                api_public_cidrs=drill_cfg.api_public_cidrs,
                failover=drill.failover,
                labels=gcp_labels(drill_tags(drill_cfg, drill, "gpu-cluster", cluster=c.name)),
                pool_labels={
                    pool: gcp_labels(tags)
                    for pool, tags in drill_pool_tags(drill_cfg, drill, c.pools).items()
                },
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return cluster.cluster_name

    def _reader(
        self, name: str, drill: DrillConfig, buckets: Sequence[BucketConfig], *, project: str
    ) -> pulumi.Output[str]:
        child = pulumi.ResourceOptions(parent=self)
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
            # checks run with the reader's rights (impersonated credentials, IAM Credentials API).
            gcp.serviceaccount.IAMMember(
                f"{name}-reader-operator",
                service_account_id=account.name,
                role=TOKEN_CREATOR,
                member=drill.operator,
                opts=child,
            )
        return account.email
