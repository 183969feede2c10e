"""cluster-control-plane-logged: who did what to a GPU cluster's API is on record.

A cluster that holds model weights and mounts training data is administered through its
Kubernetes API: the audit log is the record of every secret read, pod exec and role change, and
the controller and scheduler logs explain what the cluster did on its own (a failover that
scheduled nothing, a node pool that did not scale). Every cluster is judged, tagged or not:

- EKS: `enabled_cluster_log_types` has `api`, `audit`, `authenticator`, `controllerManager`
  and `scheduler`. CIS EKS 2.1.1; Security Hub EKS.8. And the log group EKS writes them to,
  `/aws/eks/<cluster name>/cluster`, is an `aws.cloudwatch.LogGroup` of the stack (in the
  cluster's `region` when both name one) with a `kms_key_id` and a `retention_in_days`: left
  to EKS, the group is created on first write with no customer-managed key (CloudWatch Logs'
  own encryption only) and keeps, and bills, every log forever. A cluster whose `name` is
  unknown during preview is matched by a group whose name is computed from it; while another
  group could still be its group, the check "can't run" until the name is known.
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

from gpudr.contract.logs import (
    AKS_AUDIT_CATEGORIES,
    AKS_MONITORING_ADDON,
    AKS_MONITORING_WORKSPACE_KEY,
    EKS_LOG_TYPES,
    GKE_CONTROL_PLANE_COMPONENTS,
)

from .common import (
    AKS_CLUSTER,
    AWS_KMS_EXTERNAL_KEY,
    AWS_KMS_KEY,
    AWS_KMS_REPLICA_KEY,
    AZ_DIAGNOSTIC_SETTING,
    AZ_LOG_WORKSPACE,
    CLOUDWATCH_LOG_GROUP,
    EKS_CLUSTER,
    GKE_CLUSTER,
    Stack,
    UnknownGuard,
    any_proven,
    config_schema,
    depends_on,
    depends_on_type,
    describe,
    exempting,
    get,
    is_true,
    items,
    kind,
    number,
    policy_config,
    same,
)
from .logs import enabled_categories, has_destination

SCHEMA = config_schema()
_CLUSTER_URI = re.compile(r"/providers/Microsoft\.ContainerService/managedClusters/([^/]+)$", re.I)
_EKS_LOG_GROUP = re.compile(r"^/aws/eks/[^/]+/cluster$")


def eks_log_group(cluster_name: str) -> str:
    """The log group EKS writes a cluster's control-plane logs to (its name fixed by EKS)."""
    return f"/aws/eks/{cluster_name}/cluster"


def _eks(stack: Stack, cluster: PolicyResource) -> Iterator[str]:
    enabled = items(cluster.props.get("enabledClusterLogTypes"))
    missing = [t for t in EKS_LOG_TYPES if t not in enabled]
    if missing:
        yield f"control plane logs {', '.join(missing)} are off (enabled_cluster_log_types)"
    gap = _eks_log_group_gap(stack, cluster)
    if gap:
        yield gap


def _same_region(group: PolicyResource, cluster: PolicyResource) -> bool:
    """False only when both name a region and the regions differ."""
    regions = {group.props.get("region"), cluster.props.get("region")}
    return None in regions or len(regions) == 1


def _may_be_eks_group(group: PolicyResource) -> bool:
    try:
        name = group.props.get("name")
    except UnknownValueError:
        return True
    return isinstance(name, str) and _EKS_LOG_GROUP.match(name) is not None


def _is_group_of(group: PolicyResource, expected: str, cluster: PolicyResource) -> bool:
    """Whether the group is named `expected`; unknown during preview, whether its name is
    computed from the cluster."""
    try:
        return group.props.get("name") == expected
    except UnknownValueError:
        return depends_on(group, "name", cluster)


def _log_group_gaps(group: PolicyResource) -> list[str]:
    gaps = []
    try:
        key = group.props.get("kmsKeyId")
        keyed = isinstance(key, str) and bool(key.strip())
    except UnknownValueError:
        keys = (AWS_KMS_KEY, AWS_KMS_REPLICA_KEY, AWS_KMS_EXTERNAL_KEY)
        if not depends_on_type(group, "kmsKeyId", *keys):
            raise
        keyed = True
    if not keyed:
        gaps.append("no kms_key_id (CloudWatch Logs' own encryption, not the site's key)")
    days = number(group.props.get("retentionInDays"))
    if days is None or days <= 0:
        gaps.append("no retention_in_days (logs kept, and billed, forever)")
    return gaps


def _eks_log_group_gap(stack: Stack, cluster: PolicyResource) -> str | None:
    """What the cluster's control-plane log group lacks, None when it is declared with a key
    and a retention."""
    groups = [g for g in stack.of_type(CLOUDWATCH_LOG_GROUP) if _same_region(g, cluster)]
    try:
        name = cluster.props.get("name")
    except UnknownValueError:
        mine = [g for g in groups if depends_on(g, "name", cluster)]
        if not mine and any(_may_be_eks_group(g) for g in groups):
            raise  # one of them may be its group once its name is known
        name = "<cluster name>"
    else:
        if not isinstance(name, str) or not name.strip():
            return (
                "its name is not set, so no log group can be shown to be the one EKS writes "
                "to (set name= and declare aws.cloudwatch.LogGroup /aws/eks/<name>/cluster)"
            )
        mine = [g for g in groups if _is_group_of(g, eks_log_group(name), cluster)]
    expected = eks_log_group(name)
    if not mine:
        return (
            f"no aws.cloudwatch.LogGroup named {expected} in this stack: EKS would create it "
            "with no customer-managed key and no expiry (declare it, before the cluster, "
            "with kms_key_id and retention_in_days)"
        )
    if any_proven(mine, lambda g: not _log_group_gaps(g)):
        return None
    return f"its log group {mine[0].name} ({expected}) has {'; '.join(_log_group_gaps(mine[0]))}"


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
    missing = [c for c in GKE_CONTROL_PLANE_COMPONENTS if c not in items(components)]
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
    if "*" not in enabled and not any(c in enabled for c in AKS_AUDIT_CATEGORIES):
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
    agent = _lookup(cluster.props.get("addonProfiles"), AKS_MONITORING_ADDON)
    if not is_true(get(agent, "enabled")):
        return "the omsagent add-on (Container Insights) is off"
    try:
        workspace = _lookup(get(agent, "config"), AKS_MONITORING_WORKSPACE_KEY)
    except UnknownValueError:
        if any(
            kind(d) == AZ_LOG_WORKSPACE
            for d in cluster.property_dependencies.get("addonProfiles") or []
        ):
            return None  # the id of a workspace of this stack, not yet created
        raise
    if not isinstance(workspace, str) or not workspace.strip():
        return f"the omsagent add-on names no workspace (config.{AKS_MONITORING_WORKSPACE_KEY})"
    return None


def _aks(stack: Stack, cluster: PolicyResource) -> Iterator[str]:
    for gap in (_aks_diagnostics(stack, cluster), _oms_agent(cluster)):
        if gap:
            yield gap


def _problems(stack: Stack, cluster: PolicyResource) -> list[str]:
    if kind(cluster) == EKS_CLUSTER:
        return list(_eks(stack, cluster))
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
        "audit, authenticator, controllerManager and scheduler, into a log group "
        "/aws/eks/<name>/cluster of the stack with a KMS key and a retention; GKE system "
        "components, API "
        "server, controller manager and scheduler; AKS kube-audit (or kube-audit-admin) "
        "through a diagnostic setting, and Container Insights with a workspace."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        'EKS: enabled_cluster_log_types=["api", "audit", "authenticator", '
        '"controllerManager", "scheduler"] and, before the cluster, aws.cloudwatch.LogGroup('
        'name="/aws/eks/<cluster name>/cluster", kms_key_id=<the site\'s key ARN>, '
        "retention_in_days=<the plan's retention>). GKE: logging_config.enable_components="
        '["SYSTEM_COMPONENTS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER"] (WORKLOADS '
        "optional). AKS: azure_native.monitor.DiagnosticSetting(resource_uri=<cluster>.id, "
        'logs=[{category: "kube-audit-admin", enabled: True}], workspace_id=<workspace id>) '
        "and addon_profiles.omsagent {enabled: True, config: {logAnalyticsWorkspaceResourceID: "
        "<workspace id>}}. gpudr's components/*/gpu_cluster.py set these with each site's log "
        "sink; a drill's clusters log to its DR site's sink."
    ),
    tags=["logging", "kubernetes"],
)
