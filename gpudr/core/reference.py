"""The dated reference data gpudr plans with: defaults and vendor facts, prices, GPU catalog.

The YAML files live in `gpudr/core/data/`. Each value carries its source, so that a number in a plan
can be traced to the page it came from. Loaded once per process.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DATA_DIR = Path(__file__).parent / "data"


class ReferenceError(RuntimeError):
    """A reference data file is missing a value the planner needs."""


@functools.cache
def _load(name: str) -> dict[str, Any]:
    path = DATA_DIR / name
    with path.open(encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, dict):
        raise ReferenceError(f"{path}: expected a mapping at the top level")
    return data


def defaults() -> dict[str, Any]:
    return _load("defaults.yaml")


def prices() -> dict[str, Any]:
    return _load("prices.yaml")


def catalog() -> dict[str, Any]:
    return _load("catalog.yaml")


@dataclass(frozen=True)
class Price:
    """One priced item: the amount and where it comes from."""

    usd: float
    source: str
    url: str

    @property
    def citation(self) -> str:
        return self.url or self.source


def price(cloud: str, *path: str) -> Price:
    """The price at `prices.yaml: <cloud>.<path...>`, with its source URL resolved."""
    node: Any = prices().get(cloud)
    for key in path:
        if not isinstance(node, dict) or key not in node:
            dotted = ".".join((cloud, *path))
            raise ReferenceError(
                f"gpudr/core/data/prices.yaml has no price for {dotted}; add it with its source"
            )
        node = node[key]
    if not isinstance(node, dict) or "usd" not in node:
        dotted = ".".join((cloud, *path))
        raise ReferenceError(f"gpudr/core/data/prices.yaml: {dotted} is not a price")
    usd = float(node["usd"])
    if node.get("per") == "GiB":
        usd /= 2**30 / 1e9  # gpudr sizes in decimal GB
    source_id = str(node.get("source", ""))
    source = prices().get("sources", {}).get(source_id, {})
    url = str(source.get("url", "")) if isinstance(source, dict) else ""
    return Price(usd=usd, source=source_id, url=url)


def recovery_default(name: str) -> float:
    return float(defaults()["recovery"][name]["value"])


def quota_default(name: str) -> float:
    return float(defaults()["quotas"][name]["value"])


def aks_system_pool() -> tuple[str, int]:
    """(VM size, nodes) of the system pool every AKS cluster runs besides its GPU pools."""
    pool = defaults()["clusters"]["aks_system_pool"]
    return str(pool["vm_size"]), int(pool["nodes"])


def mechanism(name: str) -> dict[str, Any]:
    mechanisms: dict[str, Any] = defaults()["mechanisms"]
    return dict(mechanisms[name])


@dataclass(frozen=True)
class GpuOffer:
    """A GPU type as one cloud sells it: the instance that carries it and where."""

    cloud: str
    gpu: str
    instance_type: str
    gpus_per_node: int
    efa_interfaces: int
    regions: frozenset[str]
    zones: frozenset[str] = frozenset()
    accelerator: str | None = None


def gpu_offer(cloud: str, gpu: str) -> GpuOffer | None:
    entry = catalog().get(cloud, {}).get("gpus", {}).get(gpu)
    if not isinstance(entry, dict):
        return None
    instance = entry.get("instance_type") or entry.get("machine_type") or entry.get("vm_size")
    return GpuOffer(
        cloud=cloud,
        gpu=gpu,
        instance_type=str(instance),
        gpus_per_node=int(entry.get("gpus_per_node", 8)),
        efa_interfaces=int(entry.get("efa_interfaces", 0) or 0),
        regions=frozenset(str(r) for r in entry.get("regions", [])),
        zones=frozenset(str(z) for z in entry.get("zones", [])),
        accelerator=entry.get("accelerator_type"),
    )


def gpu_types(cloud: str) -> list[str]:
    return sorted(catalog().get(cloud, {}).get("gpus", {}))


def regions(cloud: str) -> frozenset[str]:
    return frozenset(str(r) for r in catalog().get(cloud, {}).get("regions", []))
