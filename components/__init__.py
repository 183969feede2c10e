"""Pulumi ComponentResources for gpudr sites: one concept per module, per cloud where needed."""
