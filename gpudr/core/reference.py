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

from gpudr.core import units

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
class PriceTier:
    """One volume band of a tiered price: `usd` per unit for the units of a month's volume up to
    `up_to` (None: every unit above the previous band)."""

    up_to: float | None
    usd: float


@dataclass(frozen=True)
class Price:
    """One priced item: the amount and where it comes from. A volume-tiered price also carries
    its bands (`usd` is then the first band's rate)."""

    usd: float
    source: str
    url: str
    tiers: tuple[PriceTier, ...] = ()
    tiers_citation: str = ""  # where the bands come from, when not from `source`

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
    per_gb = 2**30 / 1e9 if node.get("per") == "GiB" else 1.0  # gpudr sizes in decimal GB
    source_id = str(node.get("source", ""))
    tiers = _tiers(".".join((cloud, *path)), node.get("tiers"), per_gb)
    tiers_source = str(node.get("tiers_source", ""))
    return Price(
        usd=float(node["usd"]) / per_gb,
        source=source_id,
        url=_source_url(source_id),
        tiers=tiers,
        tiers_citation=(_source_url(tiers_source) or tiers_source) if tiers_source else "",
    )


def _source_url(source_id: str) -> str:
    source = prices().get("sources", {}).get(source_id, {})
    return str(source.get("url", "")) if isinstance(source, dict) else ""


def _tiers(dotted: str, raw: Any, per_gb: float) -> tuple[PriceTier, ...]:
    """A price's volume bands, `up_to` a size (`1PB`, `10TiB`) read as GB of the month's volume,
    in ascending order, the last one unbounded."""
    if raw is None:
        return ()
    where = f"gpudr/core/data/prices.yaml: {dotted}.tiers"
    if not isinstance(raw, list) or not raw:
        raise ReferenceError(f"{where} must be a list of {{up_to, usd}} bands")
    out: list[PriceTier] = []
    for band in raw:
        if not isinstance(band, dict) or "usd" not in band:
            raise ReferenceError(f"{where}: every band needs usd (and up_to but the last)")
        up_to = band.get("up_to")
        out.append(
            PriceTier(
                None if up_to is None else units.parse_size(up_to) / 1e9,
                float(band["usd"]) / per_gb,
            )
        )
    bounds = [t.up_to for t in out[:-1] if t.up_to is not None]
    if out[-1].up_to is not None or len(bounds) < len(out) - 1 or bounds != sorted(set(bounds)):
        raise ReferenceError(f"{where}: bounds must ascend and only the last band be unbounded")
    return tuple(out)


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


def hardware() -> dict[str, Any]:
    """GPU models and their relative training throughput (data/hardware.yaml)."""
    return _load("hardware.yaml")


def gpu_models() -> list[str]:
    """The GPU models an on-premises inventory may name."""
    return sorted(hardware()["models"])


def cloud_gpu_model(gpu: str) -> str | None:
    """The model a catalog GPU key is (`h100` -> `h100-sxm`), or None if gpudr does not know."""
    model = hardware()["cloud_gpus"].get(gpu)
    return None if model is None else str(model)


def relative_training(model: str) -> float | None:
    """Training throughput per GPU relative to an H100 SXM (1.0); None where unmeasured."""
    value = hardware()["models"].get(model, {}).get("relative_training")
    return None if value is None else float(value)


def cloud_interconnect(cloud: str, gpu: str) -> str:
    """How `cloud` joins a training pool's `gpu` nodes."""
    entry = hardware()["cloud_interconnect"][cloud]
    return str(entry.get(gpu, entry["default"]) if isinstance(entry, dict) else entry)
