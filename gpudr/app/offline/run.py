"""Execute the project's `__main__.py` for one stack under mocks and return what it registered."""

from __future__ import annotations

import gc
import json
import runpy
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.settings import SETTINGS, get_root_resource, set_root_resource
from pulumi.runtime.stack import Stack, massage, run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from gpudr.app.offline.mocks import GpudrMocks, RecordingMonitor, Registration
from gpudr.core.paths import PROGRAM, PROJECT_DIR

PROJECT_NAME = "gpudr"


@dataclass(frozen=True)
class StackRun:
    stack: str
    registrations: tuple[Registration, ...]
    calls: tuple[tuple[str, dict[str, Any]], ...]
    # The stack's exports (`pulumi stack output`); secrets stay wrapped: see `unwrap_secret`.
    outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def resources(self) -> list[Registration]:
        """Custom resources only: what a provider would create."""
        return [r for r in self.registrations if r.custom]


def run_stack(
    stack: str,
    config: Mapping[str, Any],
    mocks: GpudrMocks | None = None,
    program: Path | None = None,
    secret_keys: Sequence[str] = (),
    garbage_limit: int | None = None,
) -> StackRun:
    """Run the Pulumi program for `stack` with `config` (the `config:` of its stack file).

    Structured values are passed as JSON strings, as the CLI passes them to the language host;
    `secret_keys` are the full keys set with `pulumi config set --secret`. `garbage_limit`:
    collect the garbage of the stacks run before only once the objects made since the last
    collection are more than this many (a plan worker, which frees the rest when it exits:
    offline/portfolio.py); None, before every stack.
    """
    mocks = mocks or GpudrMocks(default_region=str(config.get("aws:region", "us-east-1")))
    monitor = RecordingMonitor(mocks)
    SETTINGS.rpc_manager.clear()
    SETTINGS.outputs.clear()
    # set_mocks creates the root Stack resource when none is active; each run is a new stack.
    set_root_resource(None)  # type: ignore[arg-type]  # the SDK resets it the same way
    # The program builds hundreds of thousands of small, long-lived objects (the SDK's Outputs,
    # futures, protobuf structs): the cyclic collector rescanning them, and every imported SDK
    # module, took over half of the program's time (docs/benchmarks.md). With the previous
    # stack's state released above, collect it once and freeze what survives (modules, the
    # plan), then run this stack with the collector off; its garbage goes before the next one
    # (or, in a worker, once there is enough of it). The freeze comes before set_mocks: this
    # stack's own root objects must stay collectable, or memory grows with every stack run in
    # one process.
    if garbage_limit is None or gc.get_count()[0] > garbage_limit:
        gc.collect()
        gc.freeze()
    pulumi.runtime.set_mocks(
        mocks, project=PROJECT_NAME, stack=stack, preview=True, monitor=monitor
    )
    # Always a list: None would keep the previous run's secret keys.
    pulumi.runtime.set_all_config(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()},
        secret_keys=list(secret_keys),
    )
    main = program or PROGRAM
    if str(PROJECT_DIR) not in sys.path:
        sys.path.insert(0, str(PROJECT_DIR))

    def body() -> None:
        runpy.run_path(str(main), run_name="__main__")
        # Register the exports on the root stack, as the SDK's own entry point (run_in_stack)
        # does once the program returns. set_mocks registered them once already, empty, when
        # it created the stack before the program ran; the monitor keeps the last registration.
        root = get_root_resource()
        if isinstance(root, Stack):
            root.register_outputs(massage(root.outputs, []))

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        _sync_await(run_pulumi_func(body))
    finally:
        if was_enabled:
            gc.enable()
    return StackRun(
        stack, tuple(monitor.registrations), tuple(mocks.calls), dict(monitor.stack_outputs)
    )


def unwrap_secret(value: Any) -> tuple[Any, bool]:
    """(the plain value, whether it was a secret) for a value of `StackRun.outputs`."""
    if rpc.is_rpc_secret(value):
        return value["value"], True
    return value, False
