"""gpudr's Pulumi program: one stack per site, configured from the plan by `gpudr generate`.

Each cloud's components are imported only for a site on that cloud: an AWS stack never loads
the GCP or Azure SDK.
"""

from __future__ import annotations

import importlib

import pulumi

from components.config import load

# cloud -> (module, component class, its Args class); each takes (config, failover).
SITES = {
    "aws": ("components.aws.site", "AwsSite", "AwsSiteArgs"),
    "gcp": ("components.gcp.site", "GcpSite", "GcpSiteArgs"),
    "azure": ("components.azure.site", "AzureSite", "AzureSiteArgs"),
}

stack = load()
module_name, site_class, args_class = SITES[stack.site.cloud]
module = importlib.import_module(module_name)
extra: dict[str, object] = {}
if stack.site.cloud == "azure":
    # Azure creates account immutability policies unlocked; locking is a second, irreversible
    # step (`gpudr:lock_weights`), taken once the first deployment has succeeded.
    extra["immutability_state"] = "Locked" if stack.lock_weights else "Unlocked"
if stack.site.cloud in ("aws", "gcp"):
    # Sign-ins for scheduled pulls from another cloud, from this stack's own config.
    extra["credentials"] = stack.credentials
args = getattr(module, args_class)(config=stack.site, failover=stack.failover, **extra)
site: pulumi.ComponentResource = getattr(module, site_class)(stack.site.site, args)

pulumi.export("site", stack.site.site)
pulumi.export("role", stack.site.role)
pulumi.export("mode", stack.mode)
# Every site component exposes the same outputs, whatever its cloud.
for output in ("buckets", "clusters", "key_id", "dual_write_endpoint"):
    pulumi.export(output, getattr(site, output))
# {dr site: {config key: value}}: what a DR stack on another cloud needs in its own config to
# pull from this site (copy with `pulumi config set`, secrets with --secret; README,
# "Cross-cloud credentials"). Empty where nothing crosses clouds.
pulumi.export("transfer_credentials", getattr(site, "transfer_credentials", {}))
