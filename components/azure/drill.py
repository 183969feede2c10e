"""A DR drill on Azure: the DR site's AKS clusters, rebuilt in a resource group of the drill's
own on an isolated virtual network at the plan's test size, with a user-assigned identity that
can only read the DR site's storage accounts.

What it never declares: a storage account, container, Key Vault or key, a log workspace, an
object replication policy, a VNet peering or a VPN gateway. The drill's resource group holds only
what the drill creates; the DR site's group (which holds its data) is never touched. Nothing is
protected or retained: destroying the drill removes its group and everything in it. Its clusters
send their logs to the DR site's workspace, by the name in the DR site's config, so the logs
outlive the drill.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pulumi
from pulumi_azure_native import authorization, managedidentity, resources

from components.azure.arm import (
    STORAGE_BLOB_DATA_READER,
    assignment_name,
    log_workspace_id,
    role_definition_id,
    storage_account_id,
)
from components.azure.gpu_cluster import AzureGpuCluster, AzureGpuClusterArgs
from components.azure.network import AzureSiteNetwork, AzureSiteNetworkArgs
from gpudr.contract.drill import (
    DrillConfig,
    drill_clusters,
    drill_pool_tags,
    drill_tags,
    network_name,
    reader_name,
    replica_buckets,
    resource_group_name,
)
from gpudr.contract.site import BucketConfig, ClusterConfig, SiteConfig


@dataclass(frozen=True)
class AzureDrillArgs:
    config: SiteConfig  # the DR site's, as generated
    drill: DrillConfig


class AzureDrill(pulumi.ComponentResource):
    clusters: pulumi.Output[dict[str, str]]
    reader: pulumi.Output[str]  # the reader identity's client id ("" when the site holds no data)
    buckets: pulumi.Output[dict[str, str]]

    def __init__(
        self, name: str, args: AzureDrillArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:drill:AzureDrill", name, None, opts)
        cfg, drill = args.config, args.drill
        if not cfg.resource_group:
            raise ValueError(
                f"site {cfg.site}: an Azure site needs resource_group in gpudr:site; regenerate "
                "the stack with `gpudr generate`"
            )
        logs = cfg.require_logs()
        child = pulumi.ResourceOptions(parent=self)
        location = cfg.region
        cidr = drill.cidr or cfg.cidr
        drill_cfg = replace(cfg, clusters=drill_clusters(cfg, drill))
        client = authorization.get_client_config_output(
            opts=pulumi.InvokeOutputOptions(parent=self)
        )
        # The DR site's workspace (its stack owns it), by id from its deterministic name.
        workspace_id = log_workspace_id(client.subscription_id, cfg.resource_group, logs.sink)
        group = resources.ResourceGroup(
            f"{name}-rg",
            resource_group_name=resource_group_name(drill.id),
            location=location,
            tags=drill_tags(cfg, drill, "resource-group"),
            opts=child,
        )
        network = AzureSiteNetwork(
            f"{name}-net",
            AzureSiteNetworkArgs(
                resource_group_name=group.name,
                location=location,
                network_name=network_name(drill.id, location),
                cidr=cidr,
                subscription_id=client.subscription_id,
                peers=[],
                tags=drill_tags(cfg, drill, "network"),
            ),
            opts=child,
        )
        clusters = {
            c.name: self._cluster(
                name,
                c,
                drill_cfg,
                drill,
                group=group,
                network=network,
                client=client,
                workspace_id=workspace_id,
            )
            for c in drill_cfg.clusters
        }
        buckets = [b for b in replica_buckets(cfg) if b.storage_account]
        self.reader = (
            self._reader(name, args, buckets, group=group, client=client)
            if buckets
            else pulumi.Output.from_input("")
        )
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        self.buckets = pulumi.Output.from_input(
            {b.data_class: f"{b.storage_account}/{b.name}" for b in buckets}
        )
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
        group: resources.ResourceGroup,
        network: AzureSiteNetwork,
        client: pulumi.Output[authorization.GetClientConfigResult],
        workspace_id: pulumi.Output[str],
    ) -> pulumi.Output[str]:
        cluster = AzureGpuCluster(
            f"{name}-{c.name}",
            AzureGpuClusterArgs(
                config=c,
                resource_group_name=group.name,
                location=drill_cfg.region,
                subscription_id=client.subscription_id,
                tenant_id=client.tenant_id,
                nodes_subnet_id=network.nodes_subnet_id,
                zones=drill_cfg.azs,
                gpu_zone=drill_cfg.azs[0],
                api_public_cidrs=drill_cfg.api_public_cidrs,
                networks=[drill.cidr or drill_cfg.cidr],
                failover=drill.failover,
                tags=drill_tags(drill_cfg, drill, "gpu-cluster", cluster=c.name),
                pool_tags=drill_pool_tags(drill_cfg, drill, c.pools),
                log_workspace_id=workspace_id,
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return cluster.cluster_name

    def _reader(
        self,
        name: str,
        args: AzureDrillArgs,
        buckets: Sequence[BucketConfig],
        *,
        group: resources.ResourceGroup,
        client: pulumi.Output[authorization.GetClientConfigResult],
    ) -> pulumi.Output[str]:
        cfg, drill = args.config, args.drill
        child = pulumi.ResourceOptions(parent=self)
        identity = managedidentity.UserAssignedIdentity(
            f"{name}-reader",
            resource_name_=reader_name(drill.id, "azure"),
            resource_group_name=group.name,
            location=cfg.region,
            tags=drill_tags(cfg, drill, "reader"),
            opts=child,
        )
        for b in buckets:
            account = str(b.storage_account)
            # Data-plane read and list, on the DR site's account: no write, delete, key or
            # SAS access. The assignment is the drill's; the account is not.
            authorization.RoleAssignment(
                f"{name}-reader-{b.data_class}",
                role_assignment_name=assignment_name(drill.id, account, STORAGE_BLOB_DATA_READER),
                scope=storage_account_id(client.subscription_id, str(cfg.resource_group), account),
                role_definition_id=role_definition_id(
                    client.subscription_id, STORAGE_BLOB_DATA_READER
                ),
                principal_id=identity.principal_id,
                principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                opts=child,
            )
        return identity.client_id
