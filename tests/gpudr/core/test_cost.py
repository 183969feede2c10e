"""The cost engine: one rule per priced thing, for the plan and the drill alike.

The golden files pin every cost line of the example's plan and of a drill of its DR site
(item, quantity, unit, unit price, source, DR or primary). A change to a price, a rule or what
the planner deploys shows here first; after checking the change is meant, rewrite them with
`GPUDR_UPDATE_GOLDEN=1 .venv/bin/pytest tests/gpudr/core/test_cost.py`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gpudr.build.drill import build_drill
from gpudr.core import cost, reference
from gpudr.core.cost import RULES, Usage
from gpudr.core.design import design
from gpudr.core.enums import Cloud
from gpudr.core.spec import PlanError, load_plan, parse_plan
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


@pytest.mark.parametrize(
    "example", ["aws-two-region", "azure-two-region", "onprem-to-aws", "onprem-to-gcp"]
)
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
        "mode": "basic",
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


# --- volume tiers -------------------------------------------------------------------------------

PB, TB = 1_000_000, 1_000  # GB


@pytest.mark.parametrize(
    ("path", "gb", "usd"),
    [
        # The case: 73 PB a month through interface endpoints is $306,000, not $730,000.
        (
            ("vpce_interface_processed_gb",),
            73 * PB,
            1 * PB * 0.01 + 4 * PB * 0.006 + 68 * PB * 0.004,
        ),
        (("vpce_interface_processed_gb",), 1 * PB, 10_000),  # the first band, exactly
        (("vpce_interface_processed_gb",), 500 * TB, 5_000),
        # Vended flow logs: $0.25 first 10 TB, $0.15 next 20, $0.075 next 20, $0.05 over 50 TB.
        (("vended_logs_s3_gb",), 60 * TB, 2_500 + 3_000 + 1_500 + 500),
        (("vended_logs_s3_gb",), 50, 12.5),
        # Internet egress: $0.09 to 10 TB, $0.085 to 50, $0.07 to 150, $0.05 above.
        (("transfer_gb", "internet_egress"), 290_572, 900 + 3_400 + 7_000 + 140_572 * 0.05),
    ],
)
def test_a_tiered_price_bills_each_band_at_its_rate(
    path: tuple[str, ...], gb: float, usd: float
) -> None:
    price = reference.price("aws", *path)
    assert cost.tiered_usd(price.tiers, gb) == pytest.approx(usd)


@pytest.mark.parametrize(
    ("sites", "expected"),
    [
        # One region's endpoints share the bands: 1.2 PB is 1 PB at $0.01 and 0.2 PB at $0.006.
        (("usw2", "usw2"), 10_000 + 200_000 * 0.006),
        # Two regions bill their own bands: each 0.6 PB at $0.01.
        (("usw2", "usw1"), 2 * 6_000),
    ],
)
def test_a_sites_usages_of_a_tiered_price_share_its_bands(
    sites: tuple[str, str], expected: float
) -> None:
    usages = [
        Usage("endpoint-processing", Cloud.AWS, site, 0.6 * PB, True, {"data_class": cls})
        for site, cls in zip(sites, ("checkpoints", "weights"), strict=True)
    ]
    report = cost.report(usages)
    assert report.total() == pytest.approx(expected)
    assert all(x.tiers.startswith("volume tiers on") for x in report.lines)
    if sites[0] == sites[1]:  # one blended rate for the site's volume
        assert report.lines[0].unit_usd == report.lines[1].unit_usd


def test_a_flat_price_has_no_tiers_in_its_line() -> None:
    line = cost.price(
        Usage("tgw-processing", Cloud.AWS, "use1", 73 * PB, True, {"data_class": "checkpoints"})
    )
    assert isinstance(line, cost.CostLine)
    assert (line.unit_usd, line.tiers) == (0.02, "")
    assert line.amount_usd == pytest.approx(1_460_000)  # the issue's $1.46M


@given(
    a=st.floats(min_value=0, max_value=1e8, allow_nan=False),
    b=st.floats(min_value=0, max_value=1e8, allow_nan=False),
)
def test_tiered_amounts_grow_with_volume_between_the_first_and_last_rates(
    a: float, b: float
) -> None:
    tiers = reference.price("aws", "vpce_interface_processed_gb").tiers
    lo, hi = sorted((a, b))
    assert cost.tiered_usd(tiers, lo) <= cost.tiered_usd(tiers, hi) + 1e-6
    assert hi * tiers[-1].usd - 1e-6 <= cost.tiered_usd(tiers, hi) <= hi * tiers[0].usd + 1e-6


def _priced_paths(node: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict) and "usd" in node:
        return [(path, node)]
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _priced_paths(v, (*path, str(k)))]
    return []


PER_GB = [
    (cloud, path, node)
    for cloud in Cloud
    for path, node in _priced_paths(reference.prices()[cloud])
    if any(part.endswith("_gb") for part in path)
]


@pytest.mark.parametrize(("cloud", "path", "node"), PER_GB, ids=lambda x: str(x)[:40])
def test_every_per_gb_price_is_tiered_or_says_it_is_flat(
    cloud: str, path: tuple[str, ...], node: dict[str, Any]
) -> None:
    price = reference.price(cloud, *path)
    if "tiers" not in node:
        assert "flat" in str(node.get("note", "")), f"{cloud}.{'.'.join(path)}: tiers or 'flat'"
        return
    # Well formed: ascending, the first band at the price's own rate, rates falling.
    assert price.tiers[0].usd == pytest.approx(price.usd)
    rates = [t.usd for t in price.tiers]
    assert rates == sorted(rates, reverse=True)
    assert price.tiers[-1].up_to is None


@pytest.mark.parametrize(
    ("tiers", "error"),
    [
        ("0.01", "must be a list"),
        ([{"up_to": "1PB", "usd": 0.01}], "only the last band be unbounded"),
        ([{"up_to": "5PB", "usd": 0.01}, {"up_to": "1PB", "usd": 0.006}, {"usd": 0.004}], "ascend"),
        ([{"up_to": "1PB"}, {"usd": 0.004}], "every band needs usd"),
    ],
)
def test_malformed_tiers_are_refused_with_the_price_named(tiers: object, error: str) -> None:
    with pytest.raises(reference.ReferenceError, match=error) as raised:
        reference._tiers("aws.x_gb", tiers, 1.0)
    assert "prices.yaml: aws.x_gb.tiers" in str(raised.value)


# --- what the examples deploy, priced ------------------------------------------------------------


def _usage_of(example: str, rule: str) -> list[Usage]:
    des = design(load_plan(ROOT / "examples" / f"{example}.yaml"))
    return [u for u in des.usages if u.rule == rule]


@pytest.mark.parametrize(
    ("example", "expected"),
    [
        # Every AWS site's VPC attachment, with its links' attachments (none were priced on a
        # VPN plan, nor the VPC attachment on a data-only plan).
        ("aws-two-region", {"use1": "VPC + peering", "usw2": "VPC + peering"}),
        ("aws-to-gcp", {"use1": "VPC + 2 VPN"}),
        ("gcp-to-aws", {"use1": "VPC + 2 VPN"}),
    ],
)
def test_every_aws_site_pays_for_its_transit_gateway_attachments(
    example: str, expected: dict[str, str]
) -> None:
    found = {u.site: u.fields["what"] for u in _usage_of(example, "tgw-attachments")}
    assert found == expected


def test_a_data_only_aws_plan_pays_for_each_sites_vpc_attachment() -> None:
    raw = load_plan(ROOT / "examples" / "aws-two-region.yaml")
    # Replicated by S3 alone (no dual writes, no clusters): no DR link, yet each site's VPC
    # stays attached to its transit gateway.
    plan = replace(raw, clusters={}, services={}, weights=None)
    des = design(plan)
    found = {
        u.site: (u.quantity, u.fields["what"]) for u in des.usages if u.rule == "tgw-attachments"
    }
    assert found == {"use1": (cost.HOURS_PER_MONTH, "VPC"), "usw2": (cost.HOURS_PER_MONTH, "VPC")}


def test_dual_written_checkpoints_cost_the_training_slowdown_in_gpu_hours() -> None:
    plan = load_plan(ROOT / "examples" / "azure-two-region.yaml")  # checkpoints dual-written
    des = design(plan)
    (line,) = [x for x in des.cost.lines if "slower with dual-written checkpoints" in x.item]
    assert plan.checkpoints is not None and plan.checkpoints.dual_write_slowdown == 0.2
    assert (line.site, line.dr, line.category) == ("eus", True, "gpu")
    assert line.quantity == pytest.approx(0.2 * 8 * cost.HOURS_PER_MONTH)
    assert line.monthly_usd == pytest.approx(0.2 * 8 * 730 * 98.32)
    # Weights are written by the model registry, not training: no slowdown for them.
    assert not [
        x
        for x in design(load_plan(ROOT / "examples" / "aws-two-region.yaml")).cost.lines
        if "slower" in x.item
    ]


@pytest.mark.parametrize(
    ("slowdown", "share", "node_hours"),
    [(0.15, "15%", 0.15 * 8 * 730), (0, None, None)],  # the brief's lower end; none measured
)
def test_the_slowdown_fraction_is_the_plans_to_state(
    slowdown: float, share: str | None, node_hours: float | None
) -> None:
    raw = yaml.safe_load((ROOT / "examples" / "azure-two-region.yaml").read_text())
    raw["data"]["checkpoints"]["dual_write_slowdown"] = slowdown
    des = design(parse_plan(raw))
    lines = [x for x in des.cost.lines if "with dual-written checkpoints" in x.item]
    assert [(x.item.split(" training ")[1][:3], x.quantity) for x in lines] == (
        [(share, pytest.approx(node_hours))] if share else []
    )
    (row,) = [f for f in des.flows if f.data_class == "checkpoints"]
    assert any(f"by {slowdown:.0%}" in n for n in row.notes)


@pytest.mark.parametrize("value", [1.0, -0.1, ".nan", "fast"])
def test_a_slowdown_outside_0_to_1_is_refused_with_its_field(value: object) -> None:
    raw = yaml.safe_load((ROOT / "examples" / "azure-two-region.yaml").read_text())
    raw["data"]["checkpoints"]["dual_write_slowdown"] = (
        yaml.safe_load(value) if value == ".nan" else value
    )
    with pytest.raises(PlanError) as raised:
        parse_plan(raw)
    assert "data.checkpoints.dual_write_slowdown" in str(raised.value)


def test_cloudwatch_keeps_control_plane_logs_for_its_next_period_and_is_priced_so() -> None:
    """100 days is not a CloudWatch retention: the group keeps 120, and the line prices 120."""
    volume = cost.LogVolume(access_gb=20, flow_gb=50, cluster_gb=30, retention_days=100)
    usages = {u.rule: u for u in cost.log_usages(Cloud.AWS, "s1", volume, clusters=1, dr=True)}
    storage = usages["cluster-log-storage"]
    assert storage.quantity == pytest.approx(30 * 120 / cost.DAYS_PER_MONTH)
    assert cost.item(storage) == "control-plane logs of 1 cluster(s) kept 120 days"
    # the log bucket keeps exactly the plan's days (an S3 lifecycle takes any number)
    assert usages["log-bucket-storage"].quantity == pytest.approx(70 * 100 / cost.DAYS_PER_MONTH)
