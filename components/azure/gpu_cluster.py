"""An AKS cluster with GPU node pools: Entra ID-only access, a private API unless the plan names
public networks, Azure CNI overlay on the site's node subnet, GPU pools tainted and pinned to one
zone, optional capacity reservations, pool sizes set by the DR pattern and mode, and Container
Insights and control-plane logs into a Log Analytics workspace (logs.py)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, compute, containerservice, managedidentity

from components.azure.arm import (
    CONTRIBUTOR,
    NETWORK_CONTRIBUTOR,
    assignment_name,
    role_definition_id,
)
from components.azure.logs import ClusterLogsArgs, cluster_logs, container_insights_addon
from gpudr.contract.naming import GPU_TAINT, POOL_LABEL, agent_pool_name
from gpudr.contract.site import ClusterConfig, PoolConfig, PoolSize, SystemPool, pool_size

SYSTEM_POOL = "system"
# Overlay: pods take addresses from a private range that never leaves the cluster (traffic
# to the VNet and its peers is NATed to the node), one /24 per node: a /14 holds 1,024 nodes.
# Neither range may overlap the site's or a peer's network, or that network is unreachable.
POD_CIDR = "10.244.0.0/14"
SERVICE_CIDR = "172.16.0.0/16"
DNS_SERVICE_IP = "172.16.0.10"
# Settings a deployed cluster keeps as it was created: changing the network dataplane reimages
# every node (the GPU pools' too) and a policy engine change restarts networking, which on a DR
# site would land in the middle of a failover. A new cluster (a new site, or one created at
# failover) gets them; a deployed one keeps what it has, and the pack's advisory
# `kubernetes-cluster-hardened` names it until it is moved outside a failover
# (docs/security.md, "Creation-time settings").
CREATION_ONLY = ("networkProfile.networkDataplane", "networkProfile.networkPolicy")


def _dns_prefix(cluster: str) -> str:
    """1-54 letters, digits and hyphens, starting and ending with a letter or digit."""
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in cluster.lower())
    return cleaned[:54].strip("-") or "gpudr"


def _check_ranges(cluster: str, networks: Sequence[str]) -> None:
    for own in (POD_CIDR, SERVICE_CIDR):
        mine = ipaddress.ip_network(own)
        for other in networks:
            if mine.overlaps(ipaddress.ip_network(other)):
                raise ValueError(
                    f"cluster {cluster}: the AKS range {own} overlaps network {other}; "
                    f"pick site CIDRs outside {POD_CIDR} and {SERVICE_CIDR}"
                )


@dataclass(frozen=True)
class AzureGpuClusterArgs:
    config: ClusterConfig
    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    tenant_id: pulumi.Input[str]
    nodes_subnet_id: pulumi.Input[str]
    zones: Sequence[str]
    gpu_zone: str
    api_public_cidrs: Sequence[str]
    # The site's and its peers' CIDRs: the pod and service ranges must stay clear of them.
    networks: Sequence[str]
    failover: bool
    tags: dict[str, str]
    pool_tags: dict[str, dict[str, str]]
    # Where the cluster's logs go: its site's workspace, or for a drill the DR site's.
    log_workspace_id: pulumi.Input[str]


def _agent_names(cfg: ClusterConfig) -> dict[str, str]:
    """Each GPU pool's AKS pool name; refuses names that collide once AKS has shortened them."""
    agent_names = {p.name: agent_pool_name(p.name) for p in cfg.pools}
    taken = [SYSTEM_POOL, *agent_names.values()]
    clashes = sorted({n for n in taken if taken.count(n) > 1})
    if clashes:
        raise ValueError(
            f"cluster {cfg.name}: pools {sorted(agent_names)} map to AKS pool names "
            f"{taken}, and {clashes} repeat; AKS keeps 12 lowercase letters and digits, "
            "and 'system' is the system pool: rename a pool"
        )
    return agent_names


def _system_pool(cfg: ClusterConfig) -> SystemPool:
    if cfg.system_pool is None:
        raise ValueError(
            f"cluster {cfg.name}: gpudr:site names no AKS system pool for it; regenerate the "
            "stack with `gpudr generate PLAN.yaml`"
        )
    return cfg.system_pool


@dataclass(frozen=True)
class _ControlPlane:
    cluster: containerservice.ManagedCluster
    identity: managedidentity.UserAssignedIdentity


class AzureGpuCluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    pool_sizes: pulumi.Output[dict[str, int]]

    def __init__(
        self, name: str, args: AzureGpuClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:compute:AzureGpuCluster", name, None, opts)
        cfg = args.config
        system = _system_pool(cfg)
        _check_ranges(cfg.name, args.networks)
        agent_names = _agent_names(cfg)
        plane = self._control_plane(name, args, system)
        cluster_logs(
            name,
            ClusterLogsArgs(
                cluster_name=cfg.eks_name,
                cluster_id=plane.cluster.id,
                resource_group_name=args.resource_group_name,
                location=args.location,
                workspace_id=args.log_workspace_id,
                tags=args.tags,
            ),
            parent=self,
        )
        sizes: dict[str, int] = {}
        for pool in cfg.pools:
            size = pool_size(pool, args.failover)
            sizes[pool.name] = size.desired_size
            self._pool(
                name, pool=pool, agent=agent_names[pool.name], size=size, plane=plane, args=args
            )
        self.cluster_name = plane.cluster.name
        self.pool_sizes = pulumi.Output.from_input(sizes)
        self.register_outputs({"cluster_name": self.cluster_name, "pool_sizes": self.pool_sizes})

    def _control_plane(
        self, name: str, args: AzureGpuClusterArgs, system: SystemPool
    ) -> _ControlPlane:
        child = pulumi.ResourceOptions(parent=self)
        cfg = args.config
        # A user-assigned control-plane identity, created before the cluster so its grants
        # exist when AKS first uses them: AKS assigns node pools to a capacity reservation
        # group only through a user-assigned identity (a system-assigned one does not work),
        # and it joins nodes to a bring-your-own subnet with this identity's rights.
        identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_name_=f"{cfg.eks_name}-control-plane",
            resource_group_name=args.resource_group_name,
            location=args.location,
            tags=args.tags,
            opts=child,
        )
        subnet_access = authorization.RoleAssignment(
            f"{name}-subnet-access",
            role_assignment_name=assignment_name(cfg.eks_name, "nodes-subnet", NETWORK_CONTRIBUTOR),
            scope=args.nodes_subnet_id,
            role_definition_id=role_definition_id(args.subscription_id, NETWORK_CONTRIBUTOR),
            principal_id=identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            opts=child,
        )
        cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=cfg.eks_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            dns_prefix=_dns_prefix(cfg.eks_name),
            kubernetes_version=cfg.kubernetes_version,
            identity=containerservice.ManagedClusterIdentityArgs(
                type=containerservice.ResourceIdentityType.USER_ASSIGNED,
                user_assigned_identities=[identity.id],
            ),
            # Standard tier: the API server has an uptime SLA, which a pilot light stands on.
            sku=containerservice.ManagedClusterSKUArgs(
                name=containerservice.ManagedClusterSKUName.BASE,
                tier=containerservice.ManagedClusterSKUTier.STANDARD,
            ),
            # The system pool runs cluster add-ons across zones. GPU pools are separate
            # AgentPool resources; a cluster update does not remove pools it does not list.
            agent_pool_profiles=[_system_profile(system, args)],
            network_profile=containerservice.ContainerServiceNetworkProfileArgs(
                network_plugin=containerservice.NetworkPlugin.AZURE,
                network_plugin_mode=containerservice.NetworkPluginMode.OVERLAY,
                pod_cidr=POD_CIDR,
                service_cidr=SERVICE_CIDR,
                dns_service_ip=DNS_SERVICE_IP,
                load_balancer_sku=containerservice.LoadBalancerSku.STANDARD,
                # Azure CNI powered by Cilium: Kubernetes network policies enforced in eBPF.
                network_dataplane=containerservice.NetworkDataplane.CILIUM,
                network_policy=containerservice.NetworkPolicy.CILIUM,
            ),
            api_server_access_profile=_api_access(args.api_public_cidrs),
            # Container Insights; an add-on profile is updated in place on a deployed cluster.
            addon_profiles=container_insights_addon(args.log_workspace_id),
            # Entra ID and Azure RBAC only: no static admin kubeconfig to leak.
            disable_local_accounts=True,
            enable_rbac=True,
            aad_profile=containerservice.ManagedClusterAADProfileArgs(
                managed=True, enable_azure_rbac=True, tenant_id=args.tenant_id
            ),
            # Workloads reach storage and Key Vault with federated identities, not secrets.
            oidc_issuer_profile=containerservice.ManagedClusterOIDCIssuerProfileArgs(enabled=True),
            security_profile=containerservice.ManagedClusterSecurityProfileArgs(
                workload_identity=containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs(
                    enabled=True
                )
            ),
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[subnet_access], ignore_changes=list(CREATION_ONLY)
            ),
        )
        return _ControlPlane(cluster=cluster, identity=identity)

    def _pool(
        self,
        name: str,
        *,
        pool: PoolConfig,
        agent: str,
        size: PoolSize,
        plane: _ControlPlane,
        args: AzureGpuClusterArgs,
    ) -> None:
        prefix = f"{name}-{pool.name}"
        tags = {**args.tags, **args.pool_tags.get(pool.name, {})}
        reservation_group_id: pulumi.Output[str] | None = None
        waits: list[pulumi.Resource] = []
        if pool.reserved:
            group, waits = self._reservation(
                prefix, pool=pool, agent=agent, identity=plane.identity, args=args, tags=tags
            )
            reservation_group_id = group.id
        containerservice.AgentPool(
            f"{prefix}-pool",
            agent_pool_name=agent,
            resource_name_=plane.cluster.name,
            resource_group_name=args.resource_group_name,
            mode=containerservice.AgentPoolMode.USER,
            type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
            os_type=containerservice.OSType.LINUX,
            vm_size=pool.instance_type,
            # count is deliberately set on every update: the failover switch sets it.
            enable_auto_scaling=True,
            min_count=size.min_size,
            max_count=size.max_size,
            count=size.desired_size,
            node_taints=[GPU_TAINT],
            node_labels={POOL_LABEL: pool.name, "gpudr/pattern": pool.pattern},
            # One zone for GPU pools: training nodes must share one InfiniBand fabric, and the
            # reservation (if any) is zonal.
            availability_zones=[args.gpu_zone],
            vnet_subnet_id=args.nodes_subnet_id,
            # Scaled-in nodes are deleted, not deallocated: a deallocated GPU VM holds no
            # capacity anyway and its disks keep billing.
            scale_down_mode=containerservice.ScaleDownMode.DELETE,
            capacity_reservation_group_id=reservation_group_id,
            # Upgrades replace one node at a time in place: a surge node needs spare GPU
            # capacity that is rarely there.
            upgrade_settings=containerservice.AgentPoolUpgradeSettingsArgs(
                max_surge="0", max_unavailable="1"
            ),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=waits),
        )

    def _reservation(
        self,
        prefix: str,
        *,
        pool: PoolConfig,
        agent: str,
        identity: managedidentity.UserAssignedIdentity,
        args: AzureGpuClusterArgs,
        tags: dict[str, str],
    ) -> tuple[compute.CapacityReservationGroup, list[pulumi.Resource]]:
        """The pool's reservation group and what the pool must wait for (reservation, grant)."""
        child = pulumi.ResourceOptions(parent=self)
        eks_name = args.config.eks_name
        # Billed whether or not VMs run: this is what makes GPU capacity certain at
        # failover, and the plan's cost includes it. Same zone as the pool.
        group = compute.CapacityReservationGroup(
            f"{prefix}-reservation-group",
            capacity_reservation_group_name=f"{eks_name}-{agent}",
            resource_group_name=args.resource_group_name,
            location=args.location,
            zones=[args.gpu_zone],
            tags=tags,
            opts=child,
        )
        reservation = compute.CapacityReservation(
            f"{prefix}-reservation",
            capacity_reservation_group_name=group.name,
            capacity_reservation_name=agent,
            resource_group_name=args.resource_group_name,
            location=args.location,
            sku=compute.SkuArgs(name=pool.instance_type, capacity=pool.nodes),
            zones=[args.gpu_zone],
            tags=tags,
            opts=child,
        )
        # AKS deploys into the group with the cluster's identity; scoped to the group
        # alone, not to the resource group that also holds the data accounts.
        grant = authorization.RoleAssignment(
            f"{prefix}-reservation-access",
            role_assignment_name=assignment_name(eks_name, agent, "crg", CONTRIBUTOR),
            scope=group.id,
            role_definition_id=role_definition_id(args.subscription_id, CONTRIBUTOR),
            principal_id=identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            opts=child,
        )
        return group, [reservation, grant]


def _api_access(
    public_cidrs: Sequence[str],
) -> containerservice.ManagedClusterAPIServerAccessProfileArgs:
    # The API is private unless the plan names the networks allowed to reach it.
    if public_cidrs:
        return containerservice.ManagedClusterAPIServerAccessProfileArgs(
            enable_private_cluster=False, authorized_ip_ranges=list(public_cidrs)
        )
    return containerservice.ManagedClusterAPIServerAccessProfileArgs(enable_private_cluster=True)


def _system_profile(
    system: SystemPool, args: AzureGpuClusterArgs
) -> containerservice.ManagedClusterAgentPoolProfileArgs:
    return containerservice.ManagedClusterAgentPoolProfileArgs(
        name=SYSTEM_POOL,
        mode=containerservice.AgentPoolMode.SYSTEM,
        type=containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
        os_type=containerservice.OSType.LINUX,
        vm_size=system.vm_size,
        count=system.nodes,
        availability_zones=list(args.zones),
        vnet_subnet_id=args.nodes_subnet_id,
    )
