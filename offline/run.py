"""Execute the project's `__main__.py` for one stack under mocks and return what it registered."""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.settings import SETTINGS, set_root_resource
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from offline.mocks import GpudrMocks, RecordingMonitor, Registration

PROJECT_DIR = Path(__file__).resolve().parent.parent
PROJECT_NAME = "gpudr"


@dataclass(frozen=True)
class StackRun:
    stack: str
    registrations: tuple[Registration, ...]
    calls: tuple[tuple[str, dict[str, Any]], ...]

    @property
    def resources(self) -> list[Registration]:
        """Custom resources only: what a provider would create."""
        return [r for r in self.registrations if r.custom]


def run_stack(
    stack: str,
    config: Mapping[str, Any],
    mocks: GpudrMocks | None = None,
    program: Path | None = None,
) -> StackRun:
    """Run the Pulumi program for `stack` with `config` (the `config:` of its stack file).

    Structured values are passed as JSON strings, as the CLI passes them to the language host.
    """
    mocks = mocks or GpudrMocks(default_region=str(config.get("aws:region", "us-east-1")))
    monitor = RecordingMonitor(mocks)
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    # set_mocks creates the root Stack resource when none is active; each run is a new stack.
    set_root_resource(None)  # type: ignore[arg-type]  # the SDK resets it the same way
    pulumi.runtime.set_mocks(
        mocks, project=PROJECT_NAME, stack=stack, preview=True, monitor=monitor
    )
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    )
    main = program or PROJECT_DIR / "__main__.py"
    if str(PROJECT_DIR) not in sys.path:
        sys.path.insert(0, str(PROJECT_DIR))

    def body() -> None:
        runpy.run_path(str(main), run_name="__main__")

    _sync_await(run_pulumi_func(body))
    return StackRun(stack, tuple(monitor.registrations), tuple(mocks.calls))
