"""gpudr's Pulumi program: one stack per site, configured from the plan by `gpudr generate`.

Each cloud's components are imported only for a site on that cloud: an AWS stack never loads
the GCP or Azure SDK.
"""

from __future__ import annotations

import pulumi

from components.config import load

stack = load()
cloud = stack.site.cloud
if cloud == "aws":
    from components.aws.site import AwsSite, AwsSiteArgs

    site: pulumi.ComponentResource = AwsSite(
        stack.site.site, AwsSiteArgs(config=stack.site, failover=stack.failover)
    )
elif cloud == "gcp":
    from components.gcp.site import GcpSite, GcpSiteArgs

    site = GcpSite(stack.site.site, GcpSiteArgs(config=stack.site, failover=stack.failover))
elif cloud == "azure":
    from components.azure.site import AzureSite, AzureSiteArgs

    site = AzureSite(stack.site.site, AzureSiteArgs(config=stack.site, failover=stack.failover))
else:
    raise ValueError(f"gpudr:site cloud {cloud!r} is not one of aws, gcp, azure")

pulumi.export("site", stack.site.site)
pulumi.export("role", stack.site.role)
pulumi.export("mode", stack.mode)
# Every site component exposes the same outputs, whatever its cloud.
for output in ("buckets", "clusters", "key_id", "dual_write_endpoint"):
    pulumi.export(output, getattr(site, output))
