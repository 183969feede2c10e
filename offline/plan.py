"""Run every site stack of a design offline and return what each registered, as plain dicts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gpudr.design import Design
from gpudr.stackconfig import stack_config_values, stack_name
from offline.mocks import GpudrMocks
from offline.run import run_stack


class ProgramError(RuntimeError):
    """The Pulumi program failed for a stack; the message names the stack."""


def run_design(
    design: Design,
    sites: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    plan = design.plan
    wanted = set(sites) if sites is not None else None
    out: list[dict[str, Any]] = []
    for site in plan.sites.values():
        if wanted is not None and site.name not in wanted:
            continue
        name = stack_name(plan, site)
        if progress:
            progress(f"running the program for stack {name} under mocks")
        config = stack_config_values(design, site)
        try:
            run = run_stack(name, config, GpudrMocks(default_region=site.region))
        except Exception as exc:  # the program's own error, reported with its stack
            raise ProgramError(f"stack {name}: {type(exc).__name__}: {exc}") from exc
        out.append(
            {
                "name": name,
                "site": site.name,
                "cloud": site.cloud,
                "region": site.region,
                "role": site.role,
                "mode": config.get("gpudr:mode", "n/a"),
                "resources": [
                    {
                        "type": r.type,
                        "name": r.name,
                        "urn": r.urn,
                        "id": r.id,
                        "custom": r.custom,
                        "parent": r.parent,
                        "protect": r.protect,
                        "retain_on_delete": r.retain_on_delete,
                        "dependencies": r.dependencies,
                        "property_dependencies": r.property_dependencies,
                        "inputs": r.inputs,
                    }
                    # Registration order depends on the event loop; URN order is stable.
                    for r in sorted(run.registrations, key=lambda r: r.urn)
                ],
            }
        )
    return out


__all__ = ["ProgramError", "run_design"]
