"""gpudr's Pulumi program: one stack per site, configured from the plan by `gpudr generate`.

Each cloud's components are imported only for a site on that cloud: an AWS stack never loads
the GCP or Azure SDK. In drill mode (`gpudr drill`, on a disposable drill stack) the program
builds the cloud's drill component instead of the site: see gpudr/contract/drill.py.
"""

from __future__ import annotations

import importlib

import pulumi

from components.config import StackConfig, load
from gpudr.contract.drill import DrillConfig

# cloud -> (module, component class, its Args class); each takes (config, failover).
SITES = {
    "aws": ("components.aws.site", "AwsSite", "AwsSiteArgs"),
    "gcp": ("components.gcp.site", "GcpSite", "GcpSiteArgs"),
    "azure": ("components.azure.site", "AzureSite", "AzureSiteArgs"),
}
# cloud -> (module, drill component class, its Args class); each takes (config, drill).
DRILLS = {
    "aws": ("components.aws.drill", "AwsDrill", "AwsDrillArgs"),
    "gcp": ("components.gcp.drill", "GcpDrill", "GcpDrillArgs"),
    "azure": ("components.azure.drill", "AzureDrill", "AzureDrillArgs"),
}


def site(stack: StackConfig) -> None:
    module_name, site_class, args_class = SITES[stack.site.cloud]
    module = importlib.import_module(module_name)
    extra: dict[str, object] = {}
    if stack.site.cloud == "azure":
        # Azure creates account immutability policies unlocked; locking is a second,
        # irreversible step (`gpudr:lock_weights`), taken once the first deployment succeeded.
        extra["immutability_state"] = "Locked" if stack.lock_weights else "Unlocked"
    if stack.site.cloud in ("aws", "gcp") or stack.site.role == "dr":
        # Sign-ins for scheduled pulls from another cloud, from this stack's own config.
        extra["credentials"] = stack.credentials
    args = getattr(module, args_class)(config=stack.site, failover=stack.failover, **extra)
    component: pulumi.ComponentResource = getattr(module, site_class)(stack.site.site, args)

    pulumi.export("site", stack.site.site)
    pulumi.export("role", stack.site.role)
    pulumi.export("mode", stack.mode)
    # Every site component exposes the same outputs, whatever its cloud.
    for output in ("buckets", "clusters", "key_id", "dual_write_endpoint"):
        pulumi.export(output, getattr(component, output))
    # {dr site: {config key: value}}: what a DR stack on another cloud needs in its own config
    # to pull from this site (copy with `pulumi config set`, secrets with --secret; README,
    # "Cross-cloud credentials"). Empty where nothing crosses clouds.
    pulumi.export("transfer_credentials", getattr(component, "transfer_credentials", {}))
    if hasattr(component, "writer_role_arns"):
        # AWS: {data class: ARN of the role its dual writer's pods assume here}, for the
        # writer's EKS Pod Identity association.
        pulumi.export("writer_role_arns", component.writer_role_arns)
    onprem = getattr(component, "onprem", None)
    if onprem is not None:
        # What the runbook's on-premises checklist reads: the DataSync endpoint and the BGP peer
        # addresses (AWS), the attachments and Partner pairing keys (GCP), the circuit's service
        # key and the storage mover (Azure). Keys are secrets: `--show-secrets` prints them.
        pulumi.export("onprem", onprem)


def drill(stack: StackConfig, config: DrillConfig) -> None:
    """The drill environment in place of the site; its exports are what `gpudr drill` reads."""
    module_name, drill_class, args_class = DRILLS[stack.site.cloud]
    module = importlib.import_module(module_name)
    args = getattr(module, args_class)(config=stack.site, drill=config)
    env: pulumi.ComponentResource = getattr(module, drill_class)(f"{stack.site.site}-drill", args)
    pulumi.export("drill", config.id)
    pulumi.export("expires_at", config.expires_at)
    pulumi.export("phase", config.phase)
    pulumi.export("site", stack.site.site)
    pulumi.export("mode", stack.mode)
    # The clusters it created, the identity its checks read as, the replicas it reads.
    for output in ("clusters", "reader", "buckets"):
        pulumi.export(output, getattr(env, output))


stack = load()
if stack.drill is not None:
    drill(stack, stack.drill)
else:
    site(stack)
