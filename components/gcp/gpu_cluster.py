"""A regional GKE cluster with GPU node pools: private nodes, secrets encrypted with the site's
key, Workload Identity, shielded nodes with secure boot, intranode visibility, control-plane
logs, GPU drivers installed by GKE, the GPU taint, compact placement, optional reservations,
and pool sizes set by the DR pattern and mode. (Not Dataplane V2 or Binary Authorization: see
the comment on the cluster.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from gpudr.contract.logs import GKE_LOG_COMPONENTS
from gpudr.contract.naming import GPU_TAINT_KEY, GPU_TAINT_VALUE, POOL_LABEL
from gpudr.contract.site import ClusterConfig, PoolConfig, PoolSize, pool_size

# What the cluster sends to Cloud Logging: its system components (GKE refuses the control-plane
# components without them) and the control plane's API server, controller manager and
# scheduler (who did what to the cluster, why a Pod was or was not placed); the site's sink
# keeps them (components/gcp/logs.py). And WORKLOADS, GKE's default without a logging config:
# a deployed cluster keeps its workloads' logs, which stay in _Default, billed as before.
LOG_COMPONENTS = GKE_LOG_COMPONENTS
DATAPATH = "ADVANCED_DATAPATH"
# Settings GKE fixes when a cluster is created: a change replaces the cluster and its warm
# pools, which on a DR site would put a cluster build into the failover. A new cluster (a new
# site, or a backup/restore cluster created at failover) gets them; a deployed one keeps what
# it was created with, and the pack's advisory `kubernetes-cluster-hardened` names it until it
# is rebuilt beside the old one outside a failover (docs/security.md, "Creation-time
# settings").
CREATION_ONLY = ("datapathProvider",)


@dataclass(frozen=True)
class GpuClusterArgs:
    config: ClusterConfig
    project: str
    region: str
    gpu_zone: str  # GPU pools (and their compact placement) live in one zone
    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]
    pods_range: str
    services_range: str
    master_cidr: str
    key_id: pulumi.Input[str]  # the site's regional key
    # The GKE service agent's grant on that key: the cluster must wait for it. None: the grant
    # exists already (a drill uses the DR site's key, granted by the DR stack).
    key_grant: pulumi.Resource | None
    api_public_cidrs: Sequence[str]
    failover: bool
    labels: Mapping[str, str]
    pool_labels: Mapping[str, Mapping[str, str]]


class GpuCluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    pool_sizes: pulumi.Output[dict[str, int]]

    def __init__(
        self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:compute:GpuCluster", name, None, opts)
        cfg = args.config
        for pool in cfg.pools:
            if not pool.accelerator:
                raise ValueError(
                    f"cluster {cfg.name} pool {pool.name}: no GCP accelerator type (e.g. "
                    f"nvidia-h100-80gb) for {pool.gpu} on {pool.instance_type}; regenerate the "
                    "stack with `gpudr generate`"
                )

        cluster = self._cluster(name, args)
        sizes: dict[str, int] = {}
        for pool in cfg.pools:
            size = pool_size(pool, args.failover)
            sizes[pool.name] = size.desired_size
            self._pool(name, pool=pool, size=size, cluster=cluster, args=args)
        self.cluster_name = cluster.name
        self.pool_sizes = pulumi.Output.from_input(sizes)
        self.register_outputs({"cluster_name": self.cluster_name, "pool_sizes": self.pool_sizes})

    def _cluster(self, name: str, args: GpuClusterArgs) -> gcp.container.Cluster:
        """The regional, private control plane; GPU pools are separate NodePools."""
        cfg = args.config
        return gcp.container.Cluster(
            f"{name}-gke",
            name=cfg.eks_name,
            project=args.project,
            # Regional: the control plane is replicated across the region's zones.
            location=args.region,
            network=args.network,
            subnetwork=args.subnetwork,
            # GPU pools are declared below; the default pool exists only during creation.
            remove_default_node_pool=True,
            initial_node_count=1,
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=args.pods_range,
                services_secondary_range_name=args.services_range,
            ),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                # The API is private unless the plan names the networks allowed to reach it.
                enable_private_endpoint=not args.api_public_cidrs,
                master_ipv4_cidr_block=args.master_cidr,
            ),
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        cidr_block=c, display_name=f"gpudr-api-{i}"
                    )
                    for i, c in enumerate(args.api_public_cidrs)
                ],
                # Not "any Google Cloud address": only the networks listed.
                gcp_public_cidrs_access_enabled=False,
            ),
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"
            ),
            # Kubernetes secrets encrypted at the application layer with the site's key.
            database_encryption=gcp.container.ClusterDatabaseEncryptionArgs(
                state="ENCRYPTED", key_name=args.key_id
            ),
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel="REGULAR"),
            # Dataplane V2: Kubernetes network policies are enforced (eBPF), and denied flows
            # can be logged. Not Binary Authorization: its API is not among gpudr's
            # prerequisites, and a DR site's first `pulumi up` must not fail on a project that
            # lacks it (docs/security.md).
            datapath_provider=DATAPATH,
            # Shielded GKE nodes: each node's identity is verified (vTPM) before it joins.
            enable_shielded_nodes=True,
            # Same-node Pod-to-Pod traffic leaves the node and goes through the VPC, so the
            # firewall applies to it and the subnetwork's flow logs (components/gcp/network.py)
            # record it. It costs nothing by itself (the flow logs are billed, per GiB). The
            # firewall's site-CIDR egress rule and GKE's own Pod-range ingress rule let that
            # traffic through.
            enable_intranode_visibility=True,
            # In place on a deployed cluster (GKE's ClusterUpdate carries desiredLoggingConfig):
            # no replacement.
            logging_config=gcp.container.ClusterLoggingConfigArgs(
                enable_components=list(LOG_COMPONENTS)
            ),
            # The control plane holds no data; backup/restore recreates it from the program.
            deletion_protection=False,
            resource_labels=dict(args.labels),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[args.key_grant] if args.key_grant is not None else None,
                ignore_changes=list(CREATION_ONLY),
            ),
        )

    def _pool(
        self,
        name: str,
        *,
        pool: PoolConfig,
        size: PoolSize,
        cluster: gcp.container.Cluster,
        args: GpuClusterArgs,
    ) -> None:
        prefix = f"{name}-{pool.name}"
        labels = {**args.labels, **args.pool_labels.get(pool.name, {})}
        affinity = self._reservation(prefix, pool, args) if pool.reserved else None
        gcp.container.NodePool(
            f"{prefix}-nodes",
            name=pool.name,
            project=args.project,
            cluster=cluster.name,
            location=args.region,
            # One zone: compact placement cannot span zones, and NCCL wants the nodes close.
            node_locations=[args.gpu_zone],
            # Totals across the pool's zones. The failover switch moves the floor to full size.
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=size.min_size, total_max_node_count=size.max_size
            ),
            initial_node_count=size.min_size,
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=pool.instance_type,
                guest_accelerators=[
                    gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                        type=str(pool.accelerator),
                        count=pool.gpus_per_node,
                        # GKE installs the NVIDIA driver: no driver DaemonSet to keep in step.
                        gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                            gpu_driver_version="LATEST"
                        ),
                    )
                ],
                taints=[
                    gcp.container.NodePoolNodeConfigTaintArgs(
                        key=GPU_TAINT_KEY, value=GPU_TAINT_VALUE, effect="NO_SCHEDULE"
                    )
                ],
                labels={POOL_LABEL: pool.name, "gpudr/pattern": pool.pattern},
                resource_labels=labels,
                # gVNIC: the high-bandwidth virtual NIC GPU machine types need.
                gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
                # Pods get their Workload Identity, never the node's metadata credentials.
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
                # Secure boot and integrity monitoring (Shielded VM) on the GPU nodes. The NVIDIA
                # driver GKE installs on COS (gpu_driver_installation above) comes from Google's
                # cos-gpu-installer, which loads drivers Google precompiled and signed, so
                # secure boot lets it load; a self-built, unsigned driver (e.g. the GPU
                # operator's) would be refused. No GKE page found states A3/A2 + secure boot in
                # so many words: the first real node pool confirms it (nvidia-smi on a node).
                shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True
                ),
                reservation_affinity=affinity,
            ),
            placement_policy=gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT")
            if pool.placement
            else None,
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            # initial_node_count forces a new pool when it changes: a failover must resize the
            # pool (through its autoscaling floor above), not delete and re-create it.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initial_node_count"]),
        )

    def _reservation(
        self, prefix: str, pool: PoolConfig, args: GpuClusterArgs
    ) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs:
        """A specific reservation for the pool, and the affinity that makes its nodes use it."""
        # Billed whether or not nodes run: this is what makes GPU capacity certain at
        # failover, and the plan's cost includes it. Specific-only: nothing else consumes it.
        reservation = gcp.compute.Reservation(
            f"{prefix}-reservation",
            name=f"{args.config.eks_name}-{pool.name}"[:63],
            project=args.project,
            zone=args.gpu_zone,
            specific_reservation=gcp.compute.ReservationSpecificReservationArgs(
                count=pool.nodes,
                instance_properties=gcp.compute.ReservationSpecificReservationInstancePropertiesArgs(
                    machine_type=pool.instance_type,
                    guest_accelerators=[
                        gcp.compute.ReservationSpecificReservationInstancePropertiesGuestAcceleratorArgs(
                            accelerator_type=str(pool.accelerator),
                            accelerator_count=pool.gpus_per_node,
                        )
                    ],
                ),
            ),
            specific_reservation_required=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION",
            key="compute.googleapis.com/reservation-name",
            values=[reservation.name],
        )
