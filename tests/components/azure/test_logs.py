"""Issue 15's logging on Azure: each site's Log Analytics workspace, blob access logs on every
data account, and on every AKS cluster Container Insights (managed-identity add-on, its data
collection rule and association) and control-plane logs. Pinned on a primary (eus) and a DR site
(wus) built by hand (test_azure_site.py), the DR site at failover, the Azure primary of an
Azure -> GCP pair (test_cross_cloud.py), and a drill of the azure-two-region example's DR site,
whose clusters log to the workspace the DR stack owns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache

import pytest

from components.azure.drill import AzureDrill, AzureDrillArgs
from components.azure.logs import SiteLogs, SiteLogsArgs, data_collection_rule_name
from components.azure.site import AzureSite, AzureSiteArgs
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.mocks_azure import OFFLINE_SUBSCRIPTION
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.drill import build_drill
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract.drill import resource_group_name
from gpudr.contract.naming import log_sink_name
from gpudr.contract.site import SiteConfig
from gpudr.contract.tags import TAG_DRILL, DrRole, site_tags
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.components.azure.test_azure_site import (
    AKS,
    BLOB_SERVICE,
    LOG_RETENTION_DAYS,
    STORAGE_ACCOUNT,
    SYSTEM,
    depends_on,
    of_type,
    resource_group,
    run,
    site_config,
    site_run,
)
from tests.components.azure.test_cross_cloud import primary
from tests.components.azure.test_hardening import NOW, drill_run, sts_run
from tests.conftest import ROOT

WORKSPACE = "azure-native:operationalinsights:Workspace"
DIAGNOSTIC = "azure-native:monitor:DiagnosticSetting"
DCR = "azure-native:monitor:DataCollectionRule"
DCRA = "azure-native:monitor:DataCollectionRuleAssociation"

BLOB_CATEGORIES = ["StorageRead", "StorageWrite", "StorageDelete"]
CONTROL_PLANE_CATEGORIES = [
    "kube-audit-admin",
    "kube-controller-manager",
    "kube-scheduler",
    "cluster-autoscaler",
    "guard",
]
STREAMS = [
    "Microsoft-ContainerLogV2",
    "Microsoft-KubeEvents",
    "Microsoft-KubePodInventory",
    "Microsoft-KubeNodeInventory",
]


def workspace_id(subscription: str, group: str, name: str) -> str:
    return (
        f"/subscriptions/{subscription}/resourceGroups/{group}"
        f"/providers/Microsoft.OperationalInsights/workspaces/{name}"
    )


@dataclasses.dataclass(frozen=True)
class Site:
    """A run of an Azure site's stack, and what its logs should look like."""

    run: Callable[[], StackRun]
    cfg: SiteConfig
    accounts: int


SITES = {
    "primary": Site(lambda: site_run("eus"), site_config("eus"), 3),
    "dr": Site(lambda: site_run("wus"), site_config("wus"), 3),
    "dr-failover": Site(lambda: site_run("wus", "failover"), site_config("wus"), 3),
    "azure-to-gcp-primary": Site(sts_run, primary(), 3),
}


def the_workspace(r: StackRun) -> Registration:
    found = of_type(r, WORKSPACE)
    assert len(found) == 1, [x.urn for x in found]
    return found[0]


def diagnostic_on(r: StackRun, resource_uri: str) -> Registration:
    found = [x for x in of_type(r, DIAGNOSTIC) if x.inputs["resourceUri"] == resource_uri]
    assert len(found) == 1, (resource_uri, [x.urn for x in of_type(r, DIAGNOSTIC)])
    return found[0]


def categories(setting: Registration) -> list[str]:
    logs = setting.inputs["logs"]
    assert all(x["enabled"] is True for x in logs), setting.urn
    return [x["category"] for x in logs]


# --- the site's workspace ------------------------------------------------------------------------


@pytest.mark.parametrize("which", list(SITES))
def test_each_site_has_one_protected_workspace_without_shared_keys(which: str) -> None:
    site = SITES[which]
    cfg, r = site.cfg, site.run()
    ws = the_workspace(r)
    i = ws.inputs
    assert i["workspaceName"] == log_sink_name("azure", SYSTEM, cfg.site, cfg.region), ws.urn
    assert i["workspaceName"] == cfg.require_logs().sink, ws.urn
    assert i["resourceGroupName"] == cfg.resource_group, ws.urn
    assert i["location"] == cfg.region, ws.urn
    assert i["sku"] == {"name": "PerGB2018"}, ws.urn
    assert i["retentionInDays"] == LOG_RETENTION_DAYS == cfg.require_logs().retention_days
    # Entra ID only; no dedicated cluster (a customer-managed key needs one: not built).
    assert i["features"] == {"disableLocalAuth": True}, ws.urn
    assert ws.protect is True, ws.urn
    assert i["tags"] == site_tags(cfg, DrRole.SITE_LOGS), ws.urn
    assert ws.parent.endswith("gpudr:logs:SiteLogs::" + ws.name.removesuffix("-workspace"))


# --- blob access logs ----------------------------------------------------------------------------


@pytest.mark.parametrize("which", list(SITES))
def test_every_account_sends_blob_reads_writes_and_deletes_to_the_workspace(which: str) -> None:
    site = SITES[which]
    r = site.run()
    ws = the_workspace(r)
    accounts = of_type(r, STORAGE_ACCOUNT)
    assert len(accounts) == site.accounts
    for account in accounts:
        (service,) = [
            x
            for x in of_type(r, BLOB_SERVICE)
            if x.inputs["accountName"] == account.inputs["accountName"]
        ]
        assert service.id == f"{account.id}/blobServices/default", service.urn
        setting = diagnostic_on(r, service.id)
        # By the blob service's id: the pack sees which sub-resource it is before it exists.
        assert service.urn in setting.property_dependencies["resourceUri"], setting.urn
        assert setting.inputs["name"] == "gpudr-logs", setting.urn
        assert setting.inputs["workspaceId"] == ws.id, setting.urn
        assert categories(setting) == BLOB_CATEGORIES, setting.urn
        for other in ("metrics", "storageAccountId", "eventHubName", "eventHubAuthorizationRuleId"):
            assert other not in setting.inputs, (setting.urn, other)
        assert depends_on(r, setting, ws) and depends_on(r, setting, account), setting.urn
    # Nothing else is logged at the account level than its blob service.
    blob = [x for x in of_type(r, DIAGNOSTIC) if x.inputs["resourceUri"].endswith("/default")]
    assert len(blob) == site.accounts


# --- AKS: Container Insights and control-plane logs ----------------------------------------------


def check_cluster_logs(r: StackRun, cluster: Registration, workspace: str, group: str) -> None:
    """The add-on, the rule, its association and the control-plane setting of one cluster, all
    into `workspace`; the rule beside the cluster, in `group`."""
    assert cluster.inputs["addonProfiles"] == {
        "omsagent": {
            "enabled": True,
            "config": {"logAnalyticsWorkspaceResourceID": workspace, "useAADAuth": "true"},
        }
    }, cluster.urn
    name, location = cluster.inputs["resourceName"], cluster.inputs["location"]
    rules = [
        x
        for x in of_type(r, DCR)
        if x.inputs["dataCollectionRuleName"] == data_collection_rule_name(location, name)
    ]
    assert len(rules) == 1, [x.urn for x in of_type(r, DCR)]
    rule = rules[0]
    i = rule.inputs
    assert (i["location"], i["resourceGroupName"], i["kind"]) == (location, group, "Linux")
    assert i["dataSources"] == {
        "extensions": [
            {
                "name": "ContainerInsightsExtension",
                "extensionName": "ContainerInsights",
                "streams": STREAMS,
                "extensionSettings": {
                    "dataCollectionSettings": {
                        "interval": "1m",
                        "namespaceFilteringMode": "Include",
                        "namespaces": ["kube-system", "gatekeeper-system"],
                        "enableContainerLogV2": True,
                    }
                },
            }
        ]
    }, rule.urn
    assert i["destinations"] == {
        "logAnalytics": [{"name": "ciworkspace", "workspaceResourceId": workspace}]
    }, rule.urn
    assert i["dataFlows"] == [{"streams": STREAMS, "destinations": ["ciworkspace"]}], rule.urn
    assert i["tags"] == cluster.inputs["tags"], rule.urn
    (association,) = [x for x in of_type(r, DCRA) if x.inputs["resourceUri"] == cluster.id]
    assert association.inputs["associationName"] == "ContainerInsightsExtension"
    assert association.inputs["dataCollectionRuleId"] == rule.id, association.urn
    setting = diagnostic_on(r, cluster.id)
    assert setting.inputs["name"] == "gpudr-logs", setting.urn
    assert setting.inputs["workspaceId"] == workspace, setting.urn
    assert setting.inputs["logAnalyticsDestinationType"] == "Dedicated", setting.urn
    # kube-audit would also log every read: far more volume, billed per GB.
    assert categories(setting) == CONTROL_PLANE_CATEGORIES, setting.urn
    assert "kube-audit" not in categories(setting), setting.urn


@pytest.mark.parametrize("which", list(SITES))
def test_every_site_cluster_logs_to_the_site_workspace(which: str) -> None:
    site = SITES[which]
    r = site.run()
    ws = the_workspace(r)
    clusters = of_type(r, AKS)
    assert clusters, "no AKS cluster registered"
    for cluster in clusters:
        check_cluster_logs(r, cluster, ws.id, str(site.cfg.resource_group))
    assert len(of_type(r, DCR)) == len(of_type(r, DCRA)) == len(clusters)


def test_a_backup_restore_cluster_declared_at_failover_is_logged_too() -> None:
    cfg = site_config("wus")
    cluster = cfg.clusters[0]
    cold = dataclasses.replace(
        cfg, clusters=(dataclasses.replace(cluster, standby_control_plane=False),)
    )
    assert not of_type(run(cold), DCR)  # no cluster standing, nothing to collect from
    r = run(cold, "failover")
    (aks,) = of_type(r, AKS)
    check_cluster_logs(r, aks, the_workspace(r).id, resource_group("wus"))


# --- a drill logs to the DR site's workspace -----------------------------------------------------


@cache
def dr_example_run() -> tuple[SiteConfig, StackRun]:
    """The azure-two-region example's DR stack, whose workspace the drill logs to."""
    plan = load_plan(ROOT / "examples" / "azure-two-region.yaml")
    site = next(s for s in plan.sites.values() if s.cloud == "azure" and s.role == "dr")
    config = stack_config_values(design(plan), site)
    r = run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))
    return SiteConfig.from_dict(config["gpudr:site"]), r


def test_drill_declares_no_workspace_and_no_account_logs() -> None:
    r = drill_run()
    assert not of_type(r, WORKSPACE)
    assert not of_type(r, STORAGE_ACCOUNT)
    for setting in of_type(r, DIAGNOSTIC):
        assert "/blobServices/" not in setting.inputs["resourceUri"], setting.urn


def test_drill_clusters_log_to_the_workspace_the_dr_stack_owns() -> None:
    cfg, dr = dr_example_run()
    expected = workspace_id(OFFLINE_SUBSCRIPTION, str(cfg.resource_group), cfg.require_logs().sink)
    # The id the drill builds from names is the id of the workspace the DR stack declares.
    assert the_workspace(dr).id == expected
    r = drill_run()
    clusters = of_type(r, AKS)
    assert clusters, "the drill builds no cluster?"
    for cluster in clusters:
        drill_group = cluster.inputs["resourceGroupName"]
        assert drill_group != cfg.resource_group, cluster.urn
        assert drill_group == resource_group_name(cluster.inputs["tags"][TAG_DRILL])
        # The rule and its association are the drill's (destroyed with it); the logs are not.
        check_cluster_logs(r, cluster, expected, drill_group)


# --- refused without a log sink ------------------------------------------------------------------


def test_a_site_without_a_log_sink_is_refused() -> None:
    unlogged = dataclasses.replace(site_config("eus"), logs=None)
    with pytest.raises(ValueError, match="site eus has no log sink"):
        AzureSite("eus", AzureSiteArgs(config=unlogged, failover=False))
    with pytest.raises(ValueError, match="site eus has no log sink"):
        SiteLogs("eus-logs", SiteLogsArgs(config=unlogged, resource_group_name="rg"))


def test_a_drill_of_a_site_without_a_log_sink_is_refused() -> None:
    plan = load_plan(ROOT / "examples" / "azure-two-region.yaml")
    dr = next(s for s in plan.sites.values() if s.cloud == "azure" and s.role == "dr")
    s = build_drill(design(plan), dr.name, NOW, operator="user:drill@example.com")
    unlogged = dataclasses.replace(s.site, logs=None)
    with pytest.raises(ValueError, match=f"site {dr.name} has no log sink"):
        AzureDrill("drill", AzureDrillArgs(config=unlogged, drill=s.drill))


def test_rule_names_fit_in_64_characters_and_stay_distinct() -> None:
    assert data_collection_rule_name("westus", "llm-wus-train") == "MSCI-westus-llm-wus-train"
    long_a = data_collection_rule_name("westus", "d" * 60 + "-a")
    long_b = data_collection_rule_name("westus", "d" * 60 + "-b")
    assert len(long_a) <= 64 and len(long_b) <= 64
    assert long_a != long_b
