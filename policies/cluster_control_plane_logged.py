"""cluster-control-plane-logged: who did what to a GPU cluster's API is on record.

A cluster that holds model weights and mounts training data is administered through its
Kubernetes API: the audit log is the record of every secret read, pod exec and role change, and
the controller and scheduler logs explain what the cluster did on its own (a failover that
scheduled nothing, a node pool that did not scale). Every cluster is judged, tagged or not:

- EKS: `enabled_cluster_log_types` has `api`, `audit`, `authenticator`, `controllerManager`
  and `scheduler`. CIS EKS 2.1.1; Security Hub EKS.8.
- GKE: `logging_config.enable_components` has `SYSTEM_COMPONENTS`, `APISERVER`,
  `CONTROLLER_MANAGER` and `SCHEDULER`, and `logging_service` is not `none`. (GKE writes the
  Kubernetes audit log to Cloud Audit Logs by itself; the components add the rest.)
- AKS: a diagnostic setting on the cluster (`azure-native.monitor.DiagnosticSetting` whose
  `resource_uri` is the cluster's id) enables `kube-audit` or `kube-audit-admin` (or the
  `allLogs` category group) with a destination, and the `omsagent` add-on (Container
  Insights) is enabled with a Log Analytics workspace.

All of these are in-place updates of a running cluster (no replacement), so the policy is
mandatory. A value unknown during preview is treated as elsewhere in the pack: a diagnostic
setting whose `resource_uri` is computed from the cluster is the cluster's; a workspace id
computed from a workspace of the stack is a workspace; any other unknown makes the check
"can't run" (the engine's advisory) until it is known.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from .common import (
    AKS_CLUSTER,
    AZ_DIAGNOSTIC_SETTING,
    AZ_LOG_WORKSPACE,
    EKS_CLUSTER,
    GKE_CLUSTER,
    Stack,
    UnknownGuard,
    any_proven,
    config_schema,
    depends_on,
    describe,
    exempting,
    get,
    is_true,
    items,
    kind,
    policy_config,
    same,
)
from .logs import enabled_categories, has_destination

SCHEMA = config_schema()
EKS_LOGS = ("api", "audit", "authenticator", "controllerManager", "scheduler")
GKE_COMPONENTS = ("SYSTEM_COMPONENTS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER")
AKS_AUDIT = ("kube-audit", "kube-audit-admin")
OMS_AGENT = "omsagent"
OMS_WORKSPACE = "logAnalyticsWorkspaceResourceID"
_CLUSTER_URI = re.compile(r"/providers/Microsoft\.ContainerService/managedClusters/([^/]+)$", re.I)


def _eks(props: Mapping[str, Any]) -> Iterator[str]:
    enabled = items(props.get("enabledClusterLogTypes"))
    missing = [t for t in EKS_LOGS if t not in enabled]
    if missing:
        yield f"control plane logs {', '.join(missing)} are off (enabled_cluster_log_types)"


def _gke(props: Mapping[str, Any]) -> Iterator[str]:
    if same(props.get("loggingService"), "none"):
        yield 'logging_service is "none": no log leaves the cluster'
    components = get(props, "loggingConfig", "enableComponents")
    if components is None:
        yield (
            "logging_config is not set: GKE's default logs system components and workloads, "
            "not the API server, controller manager or scheduler"
        )
        return
    missing = [c for c in GKE_COMPONENTS if c not in items(components)]
    if missing:
        yield f"logging_config.enable_components lacks {', '.join(missing)}"


def _on_cluster(setting: PolicyResource, cluster: PolicyResource) -> bool:
    """Whether the diagnostic setting's `resourceUri` is the cluster's id: computed from the
    cluster (an AKS cluster has no sub-resource with diagnostic settings), or its URI."""
    prop = "resourceUri"
    if setting.property_dependencies.get(prop):
        if not depends_on(setting, prop, cluster):
            return False
        try:
            uri = setting.props.get(prop)
        except UnknownValueError:
            return True
        return isinstance(uri, str) and _CLUSTER_URI.search(uri.strip()) is not None
    uri = setting.props.get(prop)
    match = _CLUSTER_URI.search(uri.strip()) if isinstance(uri, str) else None
    name = cluster.props.get("resourceName")
    return match is not None and isinstance(name, str) and same(match.group(1), name)


def _audit_gaps(setting: PolicyResource) -> list[str]:
    enabled = enabled_categories(setting)
    gaps = []
    if "*" not in enabled and not any(c in enabled for c in AKS_AUDIT):
        gaps.append("neither kube-audit nor kube-audit-admin enabled")
    if not has_destination(setting):
        gaps.append("no destination (workspace_id, storage_account_id or event hub)")
    return gaps


def _aks_diagnostics(stack: Stack, cluster: PolicyResource) -> str | None:
    settings = stack.of_type(AZ_DIAGNOSTIC_SETTING)

    def complete(setting: PolicyResource) -> bool:
        return _on_cluster(setting, cluster) and not _audit_gaps(setting)

    if any_proven(settings, complete):
        return None
    linked = [s for s in settings if _on_cluster(s, cluster)]
    if linked:
        return f"its diagnostic setting {linked[0].name} has {'; '.join(_audit_gaps(linked[0]))}"
    return "no DiagnosticSetting has its id as resource_uri (no audit log)"


def _lookup(mapping: Any, key: str) -> Any:
    """`mapping[key]` with the key compared case-insensitively (AKS add-on names and config
    keys are written both ways)."""
    if not isinstance(mapping, Mapping):
        return None
    return next((v for k, v in mapping.items() if str(k).lower() == key.lower()), None)


def _oms_agent(cluster: PolicyResource) -> str | None:
    agent = _lookup(cluster.props.get("addonProfiles"), OMS_AGENT)
    if not is_true(get(agent, "enabled")):
        return "the omsagent add-on (Container Insights) is off"
    try:
        workspace = _lookup(get(agent, "config"), OMS_WORKSPACE)
    except UnknownValueError:
        if any(
            kind(d) == AZ_LOG_WORKSPACE
            for d in cluster.property_dependencies.get("addonProfiles") or []
        ):
            return None  # the id of a workspace of this stack, not yet created
        raise
    if not isinstance(workspace, str) or not workspace.strip():
        return f"the omsagent add-on names no workspace (config.{OMS_WORKSPACE})"
    return None


def _aks(stack: Stack, cluster: PolicyResource) -> Iterator[str]:
    for gap in (_aks_diagnostics(stack, cluster), _oms_agent(cluster)):
        if gap:
            yield gap


def _problems(stack: Stack, cluster: PolicyResource) -> list[str]:
    if kind(cluster) == EKS_CLUSTER:
        return list(_eks(cluster.props))
    if kind(cluster) == GKE_CLUSTER:
        return list(_gke(cluster.props))
    return list(_aks(stack, cluster))


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args))
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for cluster in stack.of_type(EKS_CLUSTER, GKE_CLUSTER, AKS_CLUSTER):
        with guard.check():
            problems = _problems(stack, cluster)
            if problems:
                report(
                    f"{describe(cluster)} does not log its control plane: {'; '.join(problems)}.",
                    cluster.urn,
                )
    guard.raise_first()


cluster_control_plane_logged = StackValidationPolicy(
    name="cluster-control-plane-logged",
    description=(
        "Every EKS, GKE and AKS cluster, tagged or not, logs its control plane: EKS api, "
        "audit, authenticator, controllerManager and scheduler; GKE system components, API "
        "server, controller manager and scheduler; AKS kube-audit (or kube-audit-admin) "
        "through a diagnostic setting, and Container Insights with a workspace."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        'EKS: enabled_cluster_log_types=["api", "audit", "authenticator", '
        '"controllerManager", "scheduler"]. GKE: logging_config.enable_components='
        '["SYSTEM_COMPONENTS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER"] (WORKLOADS '
        "optional). AKS: azure_native.monitor.DiagnosticSetting(resource_uri=<cluster>.id, "
        'logs=[{category: "kube-audit-admin", enabled: True}], workspace_id=<workspace id>) '
        "and addon_profiles.omsagent {enabled: True, config: {logAnalyticsWorkspaceResourceID: "
        "<workspace id>}}. gpudr's components/*/gpu_cluster.py set these with each site's log "
        "sink; a drill's clusters log to its DR site's sink."
    ),
    tags=["logging", "kubernetes"],
)
