"""The monthly cost model: every line is quantity x unit price, and every price names its source.

Prices come from `gpudr/data/prices.yaml` (dated list prices in a reference region). The model
prices what the DR posture adds: standby GPUs, replicas, replication traffic, links; the
primary's own capacity is shown too so the DR share can be read against it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gpudr.core import reference

HOURS_PER_MONTH = 730.0  # the month AWS, GCP and Azure price hourly resources with
DAYS_PER_MONTH = 365.0 / 12.0
GB = 1e9


@dataclass(frozen=True)
class CostLine:
    site: str
    category: str  # gpu, control-plane, storage, replication, network, keys, monitoring
    item: str
    quantity: float
    unit: str
    unit_usd: float
    source: str
    dr: bool  # part of the DR posture (False: the primary's own running cost)

    @property
    def monthly_usd(self) -> float:
        return self.quantity * self.unit_usd


def line(
    site: str,
    category: str,
    item: str,
    quantity: float,
    unit: str,
    price: reference.Price,
    dr: bool,
) -> CostLine:
    return CostLine(site, category, item, quantity, unit, price.usd, price.citation, dr)


def gpu_hour(cloud: str, instance_type: str) -> reference.Price:
    return reference.price(cloud, "instance_hour", instance_type)


def storage_month(cloud: str, storage_class: str) -> reference.Price:
    return reference.price(cloud, "storage_gb_month", storage_class)


@dataclass(frozen=True)
class CostReport:
    lines: tuple[CostLine, ...]
    unpriced: tuple[str, ...] = ()  # items whose price is missing from prices.yaml

    def total(self, dr_only: bool = False) -> float:
        return sum(x.monthly_usd for x in self.lines if x.dr or not dr_only)

    def by_site(self) -> dict[str, dict[str, float]]:
        sites: dict[str, dict[str, float]] = defaultdict(lambda: {"dr": 0.0, "primary": 0.0})
        for x in self.lines:
            sites[x.site]["dr" if x.dr else "primary"] += x.monthly_usd
        return dict(sites)

    def by_category(self, dr_only: bool = True) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for x in self.lines:
            if x.dr or not dr_only:
                out[x.category] += x.monthly_usd
        return dict(out)


def report(lines: Iterable[CostLine], unpriced: Iterable[str] = ()) -> CostReport:
    return CostReport(tuple(lines), tuple(unpriced))
