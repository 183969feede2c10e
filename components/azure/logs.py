"""A site's log sink on Azure, and what sends logs to it.

The sink is one Log Analytics workspace per site (`SiteLogs`), in the site's resource group and
region, named deterministically (`naming.log_sink_name`): a drill of the site sends its clusters'
logs there by that name, so they outlive the drill, without reading the site's stack.

What sends to it:
- each data account's blob service: a diagnostic setting with its read, write and delete logs
  (`blob_access_logs`);
- each AKS cluster: Container Insights, through the monitoring add-on signing in with its
  managed identity and the data collection rule that tells it where to send
  (`container_insights_addon`, `cluster_logs`), and a diagnostic setting with the control-plane
  categories (`cluster_logs`).

Every one of them is an in-place change on a deployed account or cluster: the add-on profile is
updated by the same cluster PUT as `az aks enable-addons`, and diagnostic settings, data
collection rules and their associations are resources of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import containerservice, monitor, operationalinsights

from gpudr.contract.drill import fit
from gpudr.contract.logs import (
    AKS_MONITORING_ADDON,
    AKS_MONITORING_WORKSPACE_KEY,
    BLOB_LOG_CATEGORIES,
)
from gpudr.contract.site import SiteConfig
from gpudr.contract.tags import DrRole, site_tags

# The name of gpudr's diagnostic setting on each resource it logs (unique per resource only).
DIAGNOSTIC_SETTING = "gpudr-logs"
# kube-audit-admin, not kube-audit: kube-audit also records every get, list and watch, most of
# the audit volume, and Log Analytics bills per GB ingested. kube-audit-admin keeps every request
# that changes something. guard records the Entra ID and Azure RBAC decisions (the clusters
# accept no other sign-in); cluster-autoscaler explains every GPU scale-up and scale-down.
CONTROL_PLANE_LOG_CATEGORIES = (
    "kube-audit-admin",
    "kube-controller-manager",
    "kube-scheduler",
    "cluster-autoscaler",
    "guard",
)
# The monitoring add-on's key in the cluster's add-on profiles, and the names Microsoft's
# managed-identity onboarding gives the rule's data source and its association with a cluster.
MONITORING_ADDON = AKS_MONITORING_ADDON
CONTAINER_INSIGHTS = "ContainerInsightsExtension"
# Microsoft's "Logs and Events" preset (container logs, Kubernetes events, pod and node
# inventory), not the default group, which adds every container's performance counters each
# minute. Together with SYSTEM_NAMESPACES below, GPU jobs' stdout is not ingested: at the Log
# Analytics ingestion price a training job's logs would cost more than the cluster's control
# plane, and they are the workload owner's to keep (GKE: SYSTEM_COMPONENTS without WORKLOADS).
CONTAINER_INSIGHTS_STREAMS = (
    "Microsoft-ContainerLogV2",
    "Microsoft-KubeEvents",
    "Microsoft-KubePodInventory",
    "Microsoft-KubeNodeInventory",
)
SYSTEM_NAMESPACES = ("kube-system", "gatekeeper-system")
WORKSPACE_DESTINATION = "ciworkspace"


@dataclass(frozen=True)
class SiteLogsArgs:
    config: SiteConfig
    resource_group_name: pulumi.Input[str]


class SiteLogs(pulumi.ComponentResource):
    workspace_id: pulumi.Output[str]
    workspace_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: SiteLogsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:logs:SiteLogs", name, None, opts)
        cfg = args.config
        logs = cfg.require_logs()
        # No customer-managed key: on Log Analytics one needs a dedicated cluster, billed at a
        # commitment tier of 100 GB a day at the least, far above what a site logs. The logs are
        # encrypted at rest with Microsoft-managed keys (docs/security.md).
        # Ingestion and queries stay on public endpoints, guarded by Entra ID: a private link
        # scope comes with the private endpoints, which are priced (docs/security.md).
        workspace = operationalinsights.Workspace(
            f"{name}-workspace",
            workspace_name=logs.sink,
            resource_group_name=args.resource_group_name,
            location=cfg.region,
            sku=operationalinsights.WorkspaceSkuArgs(
                name=operationalinsights.WorkspaceSkuNameEnum.PER_GB2018
            ),
            # The plan's retention (30 to 730 days: the workspace's interactive range).
            retention_in_days=logs.retention_days,
            # Entra ID only: no shared workspace keys that could write or read logs if leaked.
            # The monitoring add-on signs in with its managed identity (`useAADAuth`), and
            # diagnostic settings need no key.
            features=operationalinsights.WorkspaceFeaturesArgs(disable_local_auth=True),
            tags=site_tags(cfg, DrRole.SITE_LOGS),
            # The record an investigation reads: `pulumi destroy` must not take it.
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        self.workspace_id = workspace.id
        self.workspace_name = workspace.name
        self.register_outputs(
            {"workspace_id": self.workspace_id, "workspace_name": self.workspace_name}
        )


def blob_access_logs(
    name: str,
    *,
    blob_service_id: pulumi.Input[str],
    workspace_id: pulumi.Input[str],
    parent: pulumi.Resource,
) -> monitor.DiagnosticSetting:
    """Who read, wrote and deleted which blob, on an account's blob service (the service, not
    the account: blob logs are a category of `<account id>/blobServices/default`).

    `blob_service_id` is the account's `storage.BlobServiceProperties` id, which is that URI:
    unlike a URI concatenated from the account's id, its dependency shows the policy pack
    (data-access-logged) which sub-resource the setting is on before the account exists."""
    return monitor.DiagnosticSetting(
        name,
        name=DIAGNOSTIC_SETTING,
        resource_uri=blob_service_id,
        workspace_id=workspace_id,
        logs=[
            monitor.DiagnosticsLogSettingsArgs(category=c, enabled=True)
            for c in BLOB_LOG_CATEGORIES
        ],
        opts=pulumi.ResourceOptions(parent=parent),
    )


def container_insights_addon(
    workspace_id: pulumi.Input[str],
) -> dict[str, containerservice.ManagedClusterAddonProfileArgs]:
    """The monitoring add-on's profile: Container Insights into the site's workspace, signing in
    with the add-on's managed identity (the workspace accepts no shared key)."""
    return {
        MONITORING_ADDON: containerservice.ManagedClusterAddonProfileArgs(
            enabled=True,
            config={AKS_MONITORING_WORKSPACE_KEY: workspace_id, "useAADAuth": "true"},
        )
    }


def data_collection_rule_name(location: str, cluster: str) -> str:
    """Microsoft's name for a cluster's Container Insights rule, `MSCI-<region>-<cluster>`, in
    at most 64 characters (a digest keeps two long names apart)."""
    return fit(f"MSCI-{location}-{cluster}", 64)


@dataclass(frozen=True)
class ClusterLogsArgs:
    cluster_name: str  # the AKS cluster's name
    cluster_id: pulumi.Input[str]
    resource_group_name: pulumi.Input[str]  # the cluster's: its rule is created beside it
    location: str
    workspace_id: pulumi.Input[str]
    tags: dict[str, str]


def cluster_logs(name: str, args: ClusterLogsArgs, parent: pulumi.Resource) -> None:
    """The rule and association Container Insights needs when the add-on signs in with its
    managed identity (the az CLI creates them itself; a Pulumi program must), and the
    control-plane diagnostic setting."""
    child = pulumi.ResourceOptions(parent=parent)
    streams = list(CONTAINER_INSIGHTS_STREAMS)
    # In the workspace's region, where Microsoft's onboarding template puts it; that is also
    # the cluster's (a site's workspace is in the site's region, a drill runs in the DR site's).
    rule = monitor.DataCollectionRule(
        f"{name}-container-insights",
        data_collection_rule_name=data_collection_rule_name(args.location, args.cluster_name),
        resource_group_name=args.resource_group_name,
        location=args.location,
        kind=monitor.KnownDataCollectionRuleResourceKind.LINUX,
        description=f"Container Insights of AKS cluster {args.cluster_name}",
        data_sources=monitor.DataCollectionRuleDataSourcesArgs(
            extensions=[
                monitor.ExtensionDataSourceArgs(
                    name=CONTAINER_INSIGHTS,
                    extension_name="ContainerInsights",
                    streams=streams,
                    extension_settings={
                        "dataCollectionSettings": {
                            "interval": "1m",
                            "namespaceFilteringMode": "Include",
                            "namespaces": list(SYSTEM_NAMESPACES),
                            # The current schema, which Log Analytics can also keep on its
                            # cheaper Basic plan.
                            "enableContainerLogV2": True,
                        }
                    },
                )
            ]
        ),
        destinations=monitor.DataCollectionRuleDestinationsArgs(
            log_analytics=[
                monitor.LogAnalyticsDestinationArgs(
                    name=WORKSPACE_DESTINATION, workspace_resource_id=args.workspace_id
                )
            ]
        ),
        data_flows=[monitor.DataFlowArgs(streams=streams, destinations=[WORKSPACE_DESTINATION])],
        tags=args.tags,
        opts=child,
    )
    monitor.DataCollectionRuleAssociation(
        f"{name}-container-insights-association",
        association_name=CONTAINER_INSIGHTS,
        resource_uri=args.cluster_id,
        data_collection_rule_id=rule.id,
        description="Container Insights: without it the monitoring add-on collects nothing.",
        opts=child,
    )
    monitor.DiagnosticSetting(
        f"{name}-control-plane-logs",
        name=DIAGNOSTIC_SETTING,
        resource_uri=args.cluster_id,
        workspace_id=args.workspace_id,
        # Resource-specific tables (AKSAuditAdmin, AKSControlPlane), as AKS recommends: smaller
        # rows than AzureDiagnostics, and each table's plan and retention set on its own.
        log_analytics_destination_type="Dedicated",
        logs=[
            monitor.DiagnosticsLogSettingsArgs(category=c, enabled=True)
            for c in CONTROL_PLANE_LOG_CATEGORIES
        ],
        opts=child,
    )
