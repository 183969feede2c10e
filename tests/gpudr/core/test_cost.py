"""The cost engine: one rule per priced thing, for the plan and the drill alike.

The golden files pin every cost line of the example's plan and of a drill of its DR site
(item, quantity, unit, unit price, source, DR or primary). A change to a price, a rule or what
the planner deploys shows here first; after checking the change is meant, rewrite them with
`GPUDR_UPDATE_GOLDEN=1 .venv/bin/pytest tests/gpudr/core/test_cost.py`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpudr.build.drill import build_drill
from gpudr.core import cost, reference
from gpudr.core.cost import RULES, Usage
from gpudr.core.design import design
from gpudr.core.enums import Cloud
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

GOLDEN = Path(__file__).parent / "golden"
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _lines(lines: tuple[cost.CostLine, ...]) -> list[dict[str, Any]]:
    return [{**asdict(x), "quantity": round(x.quantity, 6)} for x in lines]


def _golden(name: str, found: Any) -> None:
    path = GOLDEN / f"{name}.json"
    text = json.dumps(found, indent=1, sort_keys=True) + "\n"
    if os.environ.get("GPUDR_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with GPUDR_UPDATE_GOLDEN=1 to write it"
    assert json.loads(text) == json.loads(path.read_text(encoding="utf-8")), (
        f"{name}: the cost lines changed; if that is meant, rerun with GPUDR_UPDATE_GOLDEN=1"
    )


@pytest.mark.parametrize("example", ["aws-two-region", "azure-two-region"])
def test_the_examples_plan_cost_lines(example: str) -> None:
    report = design(load_plan(ROOT / "examples" / f"{example}.yaml")).cost
    _golden(f"{example}-plan", {"lines": _lines(report.lines), "unpriced": report.unpriced})


@pytest.mark.parametrize(
    ("example", "site"), [("aws-two-region", "usw2"), ("azure-two-region", "wus")]
)
def test_a_drill_of_the_examples_dr_site_is_priced_by_the_same_rules(
    example: str, site: str
) -> None:
    des = design(load_plan(ROOT / "examples" / f"{example}.yaml"))
    drill = build_drill(des, site, NOW).cost
    _golden(
        f"{example}-drill-{site}",
        {"lines": _lines(drill.lines), "unpriced": drill.unpriced, "hours": drill.hours},
    )
    # The drill's GPU and control-plane lines are the plan's rules at an hour's quantity.
    plan_units = {(x.category, x.unit, x.unit_usd) for x in des.cost.lines if x.site == site}
    for line in drill.lines:
        assert (line.category, line.unit, line.unit_usd) in plan_units or line.category == "gpu"


def test_the_aks_system_pool_is_in_the_plan_as_the_drill_has_it() -> None:
    """Every AKS cluster runs a system pool (reference data); the plan lists it for the primary
    and for each standing DR cluster, unpriced while prices.yaml has no citable price."""
    des = design(load_plan(ROOT / "examples" / "azure-two-region.yaml"))
    size, nodes = reference.aks_system_pool()
    found = [u for u in des.cost.unpriced if "AKS system pool" in u]
    assert found == [
        f"eus: cluster train: AKS system pool ({size}) (azure.instance_hour.{size} is not in "
        "prices.yaml)",
        f"wus: cluster train: AKS system pool ({size}) (azure.instance_hour.{size} is not in "
        "prices.yaml)",
    ]
    assert nodes == 2


def test_a_usage_with_a_price_gives_quantity_times_unit_price() -> None:
    line = cost.price(Usage("control-plane", Cloud.AWS, "use1", 730, True, {"cluster": "train"}))
    assert isinstance(line, cost.CostLine)
    eks = reference.price("aws", "eks_cluster_hour")
    assert (line.item, line.category, line.unit) == (
        "cluster train",
        "control-plane",
        "cluster-hour",
    )
    assert line.monthly_usd == pytest.approx(730 * eks.usd) and line.source == eks.citation


def test_a_missing_price_is_listed_never_invented() -> None:
    usage = Usage(
        "gpu-nodes",
        Cloud.AWS,
        "use1",
        10,
        True,
        {"pool": "p", "instance_type": "x9.huge", "what": "(primary)"},
    )
    report = cost.report([usage, usage])
    assert report.lines == ()
    assert report.unpriced == (
        "use1: p: x9.huge (primary) (aws.instance_hour.x9.huge is not in prices.yaml)",
    )


def test_every_rule_is_priced_on_some_cloud_and_named() -> None:
    """A rule whose price path leads nowhere in prices.yaml would only ever be unpriced,
    unless prices.yaml lists that price as missing, with why."""
    missing = " ".join(reference.prices()["missing"])
    fields = {
        "instance_type": "p5.48xlarge",
        "storage_class": "STANDARD",
        "route": "inter_region",
        "vm_size": "Standard_ND96isr_H100_v5",
        "port_gbps": 10,
        "sku": "VpnGw2",
    }
    for name, rule in RULES.items():
        priced = False
        for cloud, template in rule.price.items():
            if f"{cloud}.{'.'.join(template)}:" in missing:
                priced = True
        for cloud in Cloud:
            template = rule.price.get(cloud) or rule.price.get(cost.ANY)
            if template is None:
                continue
            try:
                reference.price(cloud, *(part.format(**fields) for part in template))
                priced = True
            except (reference.ReferenceError, KeyError):
                continue
        assert priced, f"rule {name}: no cloud has a price at {rule.price}"


VOLUME = cost.LogVolume(access_gb=20, flow_gb=50, cluster_gb=30, retention_days=365)
MONTHS = 365 / cost.DAYS_PER_MONTH  # 11.99...: a year of logs stands in the sink


@pytest.mark.parametrize(
    ("cloud", "clusters", "expected"),
    [
        (
            Cloud.AWS,
            2,
            {
                "log-bucket-storage": 70 * MONTHS,
                "flow-log-delivery": 50,
                "cluster-log-ingest": 60,
                "cluster-log-storage": 60 * MONTHS,  # 365 days is a CloudWatch period
            },
        ),
        (Cloud.AWS, 0, {"log-bucket-storage": 70 * MONTHS, "flow-log-delivery": 50}),
        (
            Cloud.GCP,
            1,
            {
                "log-ingest": 50,
                "flow-log-ingest": 50,
                "flow-log-generation": 50,  # listed unpriced until its price has a source
                "log-retention": 100 * (365 - 30) / cost.DAYS_PER_MONTH,
            },
        ),
        # Azure builds no flow logs (docs/security.md): none are priced.
        (
            Cloud.AZURE,
            1,
            {"log-ingest": 50, "log-retention": 50 * (365 - 31) / cost.DAYS_PER_MONTH},
        ),
    ],
)
def test_a_sites_logs_are_its_volumes_kept_for_the_retention(
    cloud: Cloud, clusters: int, expected: dict[str, float]
) -> None:
    usages = cost.log_usages(cloud, "s1", VOLUME, clusters=clusters, dr=True)
    found = {u.rule: u.quantity for u in usages}
    assert found == pytest.approx(expected), found
    assert all(u.dr and cost.RULES[u.rule].category == "logging" for u in usages)


def test_logs_kept_no_longer_than_the_included_days_bill_no_retention() -> None:
    short = cost.LogVolume(access_gb=20, flow_gb=50, cluster_gb=30, retention_days=30)
    rules = {u.rule for u in cost.log_usages(Cloud.GCP, "s1", short, clusters=1, dr=False)}
    assert rules == {"log-ingest", "flow-log-ingest", "flow-log-generation"}


def test_every_site_of_the_plan_prices_its_logs_with_the_plans_volumes() -> None:
    plan = load_plan(ROOT / "examples" / "aws-two-region.yaml")
    des = design(plan)
    flow = [x for x in des.cost.lines if x.item == "VPC flow logs delivered to S3"]
    assert {x.site for x in flow} == set(plan.sites)
    assert all(x.quantity == plan.logging.flow_b_month / cost.GB for x in flow)
    assert {x.dr for x in flow} == {True, False}  # the primary's logs are not the DR posture's


def test_cloudwatch_keeps_control_plane_logs_for_its_next_period_and_is_priced_so() -> None:
    """100 days is not a CloudWatch retention: the group keeps 120, and the line prices 120."""
    volume = cost.LogVolume(access_gb=20, flow_gb=50, cluster_gb=30, retention_days=100)
    usages = {u.rule: u for u in cost.log_usages(Cloud.AWS, "s1", volume, clusters=1, dr=True)}
    storage = usages["cluster-log-storage"]
    assert storage.quantity == pytest.approx(30 * 120 / cost.DAYS_PER_MONTH)
    assert cost.item(storage) == "control-plane logs of 1 cluster(s) kept 120 days"
    # the log bucket keeps exactly the plan's days (an S3 lifecycle takes any number)
    assert usages["log-bucket-storage"].quantity == pytest.approx(70 * 100 / cost.DAYS_PER_MONTH)
