"""Run the real Pulumi program offline, under the SDK's documented mocks (no CLI, no cloud).

This package imports Pulumi; `gpudr/` does not. `gpudr plan` loads it only when it runs.
"""
