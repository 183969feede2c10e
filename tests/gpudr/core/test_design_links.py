"""What carries replication between two sites, and what it costs: Direct Connect between two AWS
regions (sized for the loss of a location, the hairpin through the customer's router and the
receiving transit gateway's processing), and the rate a GCS dual-region bucket replicates at."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpudr.core import cost, reference
from gpudr.core.design import DX_HAIRPIN_NOTE, Design, design
from gpudr.core.spec import parse_plan

PB = 1e6  # GB

# The case: 100 TB checkpoints every hour, dual-written with a 2 h RPO (222 Gbps,
# 277.8 Gbps with headroom) over Direct Connect between two AWS regions: 73 PB a month.
DX: dict[str, Any] = {
    "name": "dx",
    "sites": {
        "use1": {
            "cloud": "aws",
            "region": "us-east-1",
            "role": "primary",
            "cidr": "10.10.0.0/16",
            "azs": ["us-east-1a", "us-east-1b"],
        },
        "usw2": {
            "cloud": "aws",
            "region": "us-west-2",
            "role": "dr",
            "protects": "use1",
            "cidr": "10.26.0.0/16",
            "azs": ["us-west-2a", "us-west-2b"],
            "link": {"kind": "direct-connect", "location": "EqDC2", "secondary_location": "EqSe2"},
        },
    },
    "data": {
        "checkpoints": {
            "size": "100TB",
            "interval": "1h",
            "rpo": "2h",
            "rto": "1d",
            "replication": "dual-write",
        }
    },
}


def _dx(**link: Any) -> Design:
    raw = copy.deepcopy(DX)
    raw["sites"]["usw2"]["link"].update(link)
    raw["sites"]["usw2"]["link"] = {k: v for k, v in raw["sites"]["usw2"]["link"].items() if v}
    return design(parse_plan(raw))


def _line(d: Design, item: str) -> cost.CostLine:
    (line,) = [x for x in d.cost.lines if x.item == item]
    return line


def test_direct_connect_is_sized_for_the_loss_of_a_location() -> None:
    """3 x 100 Gbps over two locations leave 100 Gbps when the one with two ports fails, below
    the 277.8 Gbps need: gpudr orders 2 x 400 Gbps, and the path's capacity is what survives."""
    (path,) = _dx().paths.values()
    assert path.ports is not None
    assert (path.ports.ports, path.ports.port_gbps) == (2, 400)
    assert path.capacity_gbps == 400 and path.ports.capacity_gbps == 800
    assert path.ok and "400 Gbps with the largest location down" in path.capacity_source


def test_one_direct_connect_location_is_sized_with_every_port_and_says_so() -> None:
    (path,) = _dx(secondary_location=None).paths.values()
    assert path.ports is not None and path.ports.locations == 1
    assert path.capacity_gbps == path.ports.capacity_gbps >= path.needed_gbps
    assert path.capacity_source.endswith("at one location")


def test_direct_connect_between_aws_regions_says_it_hairpins_and_bills_both_gateways() -> None:
    d = _dx()
    (flow,) = d.flows
    assert DX_HAIRPIN_NOTE in flow.notes
    monthly = flow.monthly_bytes / cost.GB
    assert monthly == pytest.approx(73 * PB)
    sent = _line(d, "checkpoints dual writes through the transit gateway")
    received = _line(d, "checkpoints dual writes into the transit gateway from Direct Connect")
    assert (sent.site, received.site) == ("use1", "usw2")
    # The receiving transit gateway's $0.02/GB: the missing $1.46M a month.
    assert received.monthly_usd == pytest.approx(1_460_000)
    # The interface endpoint bills its volume tiers: about $306K, not $730K.
    endpoint = _line(d, "checkpoints dual writes through the interface endpoint")
    assert endpoint.monthly_usd == pytest.approx(306_000)
    # Both transit gateways attach the Direct Connect gateway.
    both = [x for x in d.cost.lines if x.item.startswith("transit gateway attachments")]
    assert {(x.site, x.item) for x in both} == {
        (s, "transit gateway attachments (VPC + Direct Connect gateway)") for s in ("use1", "usw2")
    }


def test_transit_gateway_peering_bills_only_the_sending_gateway() -> None:
    raw = copy.deepcopy(DX)
    raw["sites"]["usw2"]["link"] = {"kind": "tgw-peering"}
    raw["quotas"] = {"tgw_peering_gbps": 400}
    d = design(parse_plan(raw))
    assert not [x for x in d.cost.lines if "into the transit gateway" in x.item]
    assert all(DX_HAIRPIN_NOTE not in f.notes for f in d.flows)


GCP: dict[str, Any] = {
    "name": "gcs-rate",
    "sites": {
        "usc1": {
            "cloud": "gcp",
            "region": "us-central1",
            "project": "acme-prod",
            "role": "primary",
            "cidr": "10.40.0.0/16",
            "azs": ["us-central1-a", "us-central1-b"],
        },
        "use4": {
            "cloud": "gcp",
            "region": "us-east4",
            "project": "acme-dr1",
            "role": "dr",
            "protects": "usc1",
            "cidr": "10.56.0.0/16",
            "azs": ["us-east4-a", "us-east4-b"],
        },
    },
    "data": {"checkpoints": {"size": "100TB", "interval": "1h", "rpo": "2h", "rto": "1d"}},
}


@pytest.mark.parametrize(
    ("mechanism", "quotas", "capacity", "meets", "source"),
    [
        # 222 Gbps on turbo replication: not "met and guaranteed" on an unbounded path.
        ("gcs-turbo", {}, 10.0, False, "quotas.gcs_turbo_gbps default (assumption"),
        ("gcs-turbo", {"gcs_turbo_gbps": 300}, 300.0, True, "quotas.gcs_turbo_gbps (spec)"),
        ("gcs-dual-region", {}, 10.0, False, "quotas.gcs_dual_region_gbps default"),
    ],
)
def test_a_dual_region_bucket_replicates_at_a_stated_rate(
    mechanism: str, quotas: dict[str, float], capacity: float, meets: bool, source: str
) -> None:
    raw = copy.deepcopy(GCP)
    raw["data"]["checkpoints"]["replication"] = mechanism
    if mechanism == "gcs-dual-region":
        # No RPO (default replication guarantees none): the need is the steady 222 Gbps.
        raw["data"]["checkpoints"]["rpo"] = "none"
    raw["quotas"] = quotas
    d = design(parse_plan(raw))
    (path,) = d.paths.values()
    (flow,) = d.flows
    assert path.capacity_gbps == capacity and path.capacity_source.startswith(source)
    assert d.replication_meets(flow) is meets
    if not meets:
        (row,) = [w for w in d.workloads if w.name == "checkpoints"]
        assert any(f"but has {capacity:g} Gbps" in n for n in row.notes), row.notes
        assert not flow.estimate.guaranteed or path.ok


# AWS -> Azure: dual-written weights over the BGP VPN between the primary's transit gateway and
# the DR site's active-active Azure gateway. Weights of S x 360 GB published within 1 h need
# S Gbps with the default headroom (S x 360e9 x 8 / 3600 x 1.25).
AWS_AZURE: dict[str, Any] = {
    "name": "xaz",
    "sites": {
        "use1": {
            "cloud": "aws",
            "region": "us-east-1",
            "role": "primary",
            "account": "111122223333",
            "cidr": "10.10.0.0/16",
            "azs": ["us-east-1a", "us-east-1b"],
        },
        "wus": {
            "cloud": "azure",
            "region": "westus",
            "role": "dr",
            "protects": "use1",
            "cidr": "10.86.0.0/16",
            "azs": ["1", "2"],
        },
    },
    "data": {"weights": {"size": "500GB", "rpo": "0", "publish_window": "1h"}},
}


def _aws_azure(need_gbps: float) -> Design:
    raw = copy.deepcopy(AWS_AZURE)
    raw["data"]["weights"]["size"] = f"{need_gbps * 360:g}GB"
    return design(parse_plan(raw))


@pytest.mark.parametrize(
    ("need", "sku", "capacity", "ok"),
    [
        (0.5, "VpnGw2AZ", 1.25, True),  # the SKU's 1.25 Gbps aggregate binds
        (2, "VpnGw3AZ", 2.5, True),  # its 2.5 Gbps aggregate binds
        (5, "VpnGw4AZ", 5.0, True),  # 4 tunnels x AWS's 1.25 Gbps = its 5 Gbps aggregate
        (8, "VpnGw4AZ", 5.0, False),  # no SKU helps: AWS's four tunnels carry 5 Gbps at most
    ],
)
def test_aws_to_azure_vpn_is_sized_from_the_aws_tunnels_and_the_gateway_sku(
    need: float, sku: str, capacity: float, ok: bool
) -> None:
    (path,) = _aws_azure(need).paths.values()
    assert path.kind == "vpn" and path.tunnels == 4
    assert path.needed_gbps == pytest.approx(need)
    assert (path.gateway_sku, path.capacity_gbps, path.ok) == (sku, capacity, ok)
    assert path.capacity_source.startswith("4 VPN tunnels x 1.25 Gbps")


def test_aws_to_azure_vpn_bills_each_end_and_internet_egress() -> None:
    d = _aws_azure(2)
    lines = {(x.site, x.item): x for x in d.cost.lines}
    assert lines[("use1", "AWS VPN connections (2)")].quantity == 2 * cost.HOURS_PER_MONTH
    assert ("use1", "public IPv4 addresses (4 VPN tunnel endpoints)") in lines
    assert ("use1", "transit gateway attachments (VPC + 2 VPN)") in lines
    assert ("wus", "public IPv4 addresses (VPN gateway, 2 instances)") in lines
    # Dual writes leave AWS over the internet (the VPN runs over it), through the transit gateway.
    transfer = lines[("use1", "weights transfer aws -> azure")]
    internet = reference.price("aws", "transfer_gb", "internet_egress")
    assert transfer.source == internet.citation
    assert ("use1", "weights dual writes through the transit gateway") in lines
    # No published price for the gateway's hours: unpriced, never zero.
    assert any("Azure VPN gateway VpnGw3AZ" in x for x in d.cost.unpriced)
    assert not any("HA VPN" in x.item for x in d.cost.lines)


def test_aws_to_azure_stack_configs_carry_the_link_to_both_ends() -> None:
    """The Azure DR site's anchor needs the SKU and the tunnels it terminates; the AWS primary,
    which joins it, needs the DR site's resource group, network and ASN (its gateway's names)."""
    from gpudr.build.stackconfig import build_site_configs

    configs = build_site_configs(_aws_azure(2))
    primary, dr = configs["use1"], configs["wus"]
    assert [(x.kind, x.peer_site, x.tunnels, x.gateway_sku) for x in primary.links] == [
        ("vpn", "wus", 4, "VpnGw3AZ")
    ]
    assert [(x.kind, x.peer_site, x.tunnels, x.gateway_sku) for x in dr.links] == [
        ("vpn", "use1", 4, "VpnGw3AZ")
    ]
    (peer,) = primary.peers
    assert (peer.cloud, peer.resource_group, peer.network_name) == (
        "azure",
        dr.resource_group,
        dr.network_name,
    )
    assert peer.asn == dr.transit_gateway_asn != primary.transit_gateway_asn
