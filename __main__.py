"""gpudr's Pulumi program: one stack per site, configured from the plan by `gpudr generate`."""

from __future__ import annotations

import pulumi

from components.aws.site import AwsSite, AwsSiteArgs
from components.config import load

stack = load()
site = AwsSite(stack.site.site, AwsSiteArgs(config=stack.site, failover=stack.failover))

pulumi.export("site", stack.site.site)
pulumi.export("role", stack.site.role)
pulumi.export("mode", stack.mode)
pulumi.export("buckets", site.buckets)
pulumi.export("clusters", site.clusters)
pulumi.export("transit_gateway_id", site.transit_gateway_id)
pulumi.export("key_arn", site.key_arn)
# Dual writers at the peer site use this endpoint to write this site's copy over the DR link.
pulumi.export("dual_write_endpoint", site.dual_write_endpoint)
