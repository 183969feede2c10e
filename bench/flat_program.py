"""The flat baseline's Pulumi program: run by offline.run.run_stack in place of __main__.py.

Registers `bench.flat.CURRENT` (one stack's custom resources, as gpudr's program registered
them) with the SDK classes, no components, literal inputs.
"""

from __future__ import annotations

from bench import flat

for resource in flat.CURRENT:
    flat.register(resource)
