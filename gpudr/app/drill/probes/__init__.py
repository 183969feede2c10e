"""A drill's checks in the cloud: one probe per cloud (`probe_for`), the shared types in
`base`."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from gpudr.app.drill.errors import AccessDenied, NotFound, ProbeError
from gpudr.app.drill.probes.base import (
    ObjectInfo,
    PoolState,
    Probe,
    StoredChecksum,
    parse_time,
)
from gpudr.build.drill import DrillSetup

__all__ = [
    "AccessDenied",
    "NotFound",
    "ObjectInfo",
    "PoolState",
    "Probe",
    "ProbeError",
    "StoredChecksum",
    "parse_time",
    "probe_for",
]


def probe_for(setup: DrillSetup, sleep: Callable[[float], None] | None = None) -> Probe:
    """The probe for the DR site's cloud: `probes/<cloud>.py`'s `PROBE`, imported only when
    that cloud is drilled (each brings its own SDK)."""
    module = importlib.import_module(f"gpudr.app.drill.probes.{setup.site.cloud}")
    probe: Probe = module.PROBE(setup, sleep)
    return probe
