"""On premises -> Azure, the plan side: what Azure bills for the example (which lines exist,
priced or listed unpriced), and the ExpressRoute gateway sized to the path, never silently
smaller than it."""

from __future__ import annotations

import copy
import ipaddress
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudr.contract.azure_onprem import upload_subnets
from gpudr.core import reference
from gpudr.core.design import design, expressroute_gateway_sku
from gpudr.core.spec import PlanError, parse_plan

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = yaml.safe_load((ROOT / "examples" / "onprem-to-azure.yaml").read_text())

# The DR site's lines (examples/onprem-to-azure.yaml): priced, with the price they cite...
PRICED = {
    "data key": "keyvault_key_month",
    "checkpoints Storage Mover fee (agents on premises; its Blob writes not priced)": (
        "storage_mover_gb"
    ),
    "weights Storage Mover fee (agents on premises; its Blob writes not priced)": (
        "storage_mover_gb"
    ),
    "datasets Storage Mover fee (agents on premises; its Blob writes not priced)": (
        "storage_mover_gb"
    ),
    "checkpoints uploads through its private endpoint": "private_endpoint_gb",
    "weights uploads through its private endpoint": "private_endpoint_gb",
    "datasets uploads through its private endpoint": "private_endpoint_gb",
    "datasets replica (COOL_LRS)": "storage_gb_month.COOL_LRS",
    "public IPv4 addresses (ExpressRoute gateway)": "public_ip_hour",
    "Blob private endpoints (3)": "private_endpoint_hour",
    "access logs ingested": "log_analytics_ingest_gb",
    "logs kept 365 days (beyond the 31 included)": "log_analytics_retention_gb_month",
}
# ... and listed as unpriced, with the price prices.yaml says is missing.
UNPRICED = {
    "checkpoints replica (HOT_ZRS)": "storage_gb_month.HOT_ZRS",
    "weights replica (HOT_ZRS)": "storage_gb_month.HOT_ZRS",
    "checkpoints job starts (Logic App, every 1h)": "logic_app_action",
    "weights job starts (Logic App, every 3h)": "logic_app_action",
    "datasets job starts (Logic App, every 21h)": "logic_app_action",
    "ExpressRoute circuit, 10000 Mbps metered": "expressroute_circuit_month.10000Mbps",
    "ExpressRoute gateway ErGw3AZ": "expressroute_gateway_hour.ErGw3AZ",
    "Blob private DNS zone and the queries it answers": "private_dns_zone_month",
    "DNS Private Resolver inbound endpoint (on-premises DNS forwards to it)": (
        "dns_resolver_inbound_endpoint_hour"
    ),
}


def test_the_azure_dr_lines_are_these_priced_or_listed_unpriced() -> None:
    report = design(parse_plan(copy.deepcopy(EXAMPLE))).cost
    assert {x.item for x in report.lines} == set(PRICED)
    for line in report.lines:
        price = reference.price("azure", *PRICED[line.item].split("."))
        assert (line.site, line.unit_usd, line.source) == ("eus", price.usd, price.citation)
    assert sorted(report.unpriced) == sorted(
        f"eus: {item} (azure.{path} is not in prices.yaml)" for item, path in UNPRICED.items()
    )
    # Storage Mover is free; the gateway's Standard public IP bills by the hour
    (ip,) = [x for x in report.lines if x.item == "public IPv4 addresses (ExpressRoute gateway)"]
    assert ip.quantity == 730 and ip.monthly_usd == pytest.approx(730 * 0.005)
    assert all(x.monthly_usd == 0 for x in report.lines if "Storage Mover fee" in x.item), (
        report.lines
    )


@pytest.mark.parametrize(
    ("gbps", "sku"),
    [(0.05, "ErGw1AZ"), (1, "ErGw1AZ"), (1.0001, "ErGw2AZ"), (2, "ErGw2AZ"), (10, "ErGw3AZ")],
)
def test_the_gateway_is_the_smallest_that_carries_the_path(gbps: float, sku: str) -> None:
    assert expressroute_gateway_sku(gbps) == sku


@pytest.mark.parametrize("gbps", [10.0001, 40])
def test_a_path_above_the_largest_gateway_is_refused_not_given_the_largest(gbps: float) -> None:
    with pytest.raises(ValueError, match="more than the largest ExpressRoute gateway"):
        expressroute_gateway_sku(gbps)


def test_a_circuit_the_largest_gateway_cannot_carry_is_refused_by_the_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every circuit bandwidth gpudr offers fits ErGw3AZ today; were the largest gateway
    smaller than a circuit, the spec says so on the link's field."""
    gateways = reference.defaults()["links"]["onprem"]["expressroute_gateways"]
    monkeypatch.setitem(gateways, "gbps", {"ErGw1AZ": 1, "ErGw2AZ": 2})
    raw: dict[str, Any] = copy.deepcopy(EXAMPLE)
    raw["sites"]["iad1"]["link"]["port_gbps"] = 5
    raw["sites"]["iad1"]["wan_committed_gbps"] = 2
    with pytest.raises(PlanError) as refused:
        parse_plan(raw)
    assert [str(e) for e in refused.value.errors] == [
        "sites.iad1.link.port_gbps: 5 Gbps is more than the largest ExpressRoute gateway "
        "(ErGw2AZ) carries, 2 Gbps; use a circuit of at most that"
    ]


@pytest.mark.parametrize(("cidr", "refused"), [("10.52.0.0/20", True), ("10.52.0.0/19", False)])
def test_an_azure_range_too_small_for_the_link_is_refused_at_the_spec(
    cidr: str, refused: bool
) -> None:
    """The AKS nodes take the first /20; the GatewaySubnet and the uploads' subnets must fit
    after it: a /20 is refused with the size to use, a /19 holds them all apart."""
    raw = copy.deepcopy(EXAMPLE)
    raw["sites"]["eus"]["cidr"] = cidr
    if refused:
        with pytest.raises(PlanError, match=r"sites.eus.cidr: .* use a /19 or larger"):
            parse_plan(raw)
        return
    parse_plan(raw)
    nodes = next(ipaddress.ip_network(cidr).subnets(new_prefix=20))
    endpoints, inbound, _ = upload_subnets(cidr)
    for subnet in (endpoints, inbound):
        assert not ipaddress.ip_network(subnet).overlaps(nodes), subnet


@pytest.mark.parametrize(
    ("field", "error"),
    [
        ("provider", 'sites.iad1.link.provider: "Equinix <x>" is not a connectivity provider'),
        ("location", 'sites.iad1.link.location: "Equinix <x>" is not an ExpressRoute peering'),
    ],
)
def test_the_circuits_free_text_is_refused_naming_what_it_is(field: str, error: str) -> None:
    raw = copy.deepcopy(EXAMPLE)
    raw["sites"]["iad1"]["link"][field] = "Equinix <x>"
    with pytest.raises(PlanError) as refused:
        parse_plan(raw)
    assert any(error in str(e) for e in refused.value.errors), refused.value.errors
