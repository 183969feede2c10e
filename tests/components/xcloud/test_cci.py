"""GCP Cross-Cloud Interconnect (components/xcloud/cci.py), run as the primary's whole stack under
the offline mocks, both ways: examples/aws-to-gcp-dedicated.yaml (the AWS primary owns both
ends) and the same plan turned round (a GCP primary, an AWS DR site). Before the operator says
the ports are provisioned only the orders exist; after, one VLAN attachment, one transit
virtual interface and one BGP session per connection. The DR stacks declare nothing of it."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
import yaml

from components.xcloud.cci import LINK_TYPES
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract.naming import DX_GATEWAY_ASN, cci_gateway_name
from gpudr.contract.stack import CCI_PROVISIONED_KEY
from gpudr.contract.tags import Tag, gcp_label
from gpudr.core.design import design
from gpudr.core.spec import Plan, parse_plan
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load(
    (ROOT / "examples" / "aws-to-gcp-dedicated.yaml").read_text()
)
LOCATIONS = ("iad-zone1-1", "iad-zone2-1")


def _reversed() -> dict[str, Any]:
    """The example turned round: a GCP primary protected by an AWS site, the link on it."""
    raw = copy.deepcopy(EXAMPLE)
    aws, gcp = raw["sites"]["use1"], raw["sites"]["gcpe4"]
    aws.update(role="dr", protects="gcpe4", link=gcp.pop("link"))
    aws.pop("account")
    gcp.update(role="primary")
    gcp.pop("protects")
    for cls in raw["data"].values():
        cls.pop("site", None)
    raw["data"]["datasets"]["replication"] = "datasync"
    return raw


PLANS = {"aws-primary": EXAMPLE, "gcp-primary": _reversed()}
PRIMARY = {"aws-primary": "use1", "gcp-primary": "gcpe4"}
DR = {"aws-primary": "gcpe4", "gcp-primary": "use1"}


@cache
def _plan(which: str) -> Plan:
    return parse_plan(copy.deepcopy(PLANS[which]))


@cache
def _run(which: str, site: str, provisioned: bool = False) -> StackRun:
    plan = _plan(which)
    s = plan.sites[site]
    config = stack_config_values(design(plan), s)
    if provisioned:
        config[CCI_PROVISIONED_KEY] = True
    return run_stack(stack_name(plan, s), config, GpudrMocks(default_region=s.region))


def _of(run: StackRun, typ: str) -> list[Registration]:
    return [r for r in run.resources if r.type == typ]


def _ports(which: str) -> tuple[int, int]:
    path = next(p for p in design(_plan(which)).paths.values() if p.ports)
    assert path.ports is not None
    return path.ports.ports, path.ports.port_gbps


@pytest.mark.parametrize("which", PLANS)
def test_the_primary_orders_one_lag_per_connection_alternating_the_domains(which: str) -> None:
    ports, speed = _ports(which)
    assert (ports, speed) == (4, 10)  # 18.2 Gbps with headroom: 20 Gbps with a domain down
    run = _run(which, PRIMARY[which])
    interconnects = _of(run, "gcp:compute/interconnect:Interconnect")
    lags = _of(run, "aws:directconnect/linkAggregationGroup:LinkAggregationGroup")
    connections = _of(run, "aws:directconnect/connection:Connection")
    assert len(interconnects) == len(lags) == len(connections) == ports
    for i, ic in enumerate(sorted(interconnects, key=lambda r: r.name)):
        where = LOCATIONS[i % 2]
        assert ic.inputs["location"].endswith(f"/interconnectLocations/{where}"), ic.urn
        assert ic.inputs["remoteLocation"] == "aws-us-east-1", ic.urn
        assert ic.inputs["interconnectType"] == "DEDICATED", ic.urn
        assert ic.inputs["linkType"] == LINK_TYPES[speed], ic.urn
        assert ic.inputs["requestedLinkCount"] == 1, ic.urn
        assert ic.inputs["project"] == "acme-llm-dr", ic.urn
        assert "customerName" not in ic.inputs  # no LOA names a customer: Google orders it
        assert ic.inputs["labels"][gcp_label(Tag.EDGE_DOMAIN.key)] == where, ic.urn
    for lag in lags:
        assert lag.inputs["location"] == "EqDC2" and lag.inputs["connectionsBandwidth"] == "10Gbps"
        assert lag.inputs["forceDestroy"] is False, lag.urn
    domains = sorted(c.inputs["tags"][Tag.EDGE_DOMAIN.key] for c in connections)
    assert domains == sorted(LOCATIONS * 2)
    assert all(c.inputs["tags"][Tag.LINK.key] == "cross-cloud-interconnect" for c in connections)
    associations = _of(run, "aws:directconnect/connectionAssociation:ConnectionAssociation")
    assert len(associations) == ports  # every port joins its LAG: LACP, as Google requires
    (gateway,) = _of(run, "aws:directconnect/gateway:Gateway")
    assert gateway.inputs["name"] == cci_gateway_name("llm-xcloud-cci", "use1", "gcpe4")
    assert gateway.inputs["amazonSideAsn"] == str(DX_GATEWAY_ASN)
    (association,) = _of(run, "aws:directconnect/gatewayAssociation:GatewayAssociation")
    assert association.inputs["allowedPrefixes"] == ["10.10.0.0/16"]  # the AWS site's range
    assert association.inputs["region"] == "us-east-1"  # the transit gateway's, either way
    # Nothing needing the provisioned ports is declared before the operator says so.
    for typ in (
        "gcp:compute/interconnectAttachment:InterconnectAttachment",
        "aws:directconnect/transitVirtualInterface:TransitVirtualInterface",
        "gcp:compute/routerPeer:RouterPeer",
    ):
        assert not _of(run, typ), typ


@pytest.mark.parametrize("which", PLANS)
def test_once_provisioned_each_connection_gets_its_attachment_interface_and_bgp(
    which: str,
) -> None:
    ports, speed = _ports(which)
    run = _run(which, PRIMARY[which], provisioned=True)
    attachments = _of(run, "gcp:compute/interconnectAttachment:InterconnectAttachment")
    vifs = _of(run, "aws:directconnect/transitVirtualInterface:TransitVirtualInterface")
    peers = [
        r
        for r in _of(run, "gcp:compute/routerPeer:RouterPeer")
        if "-cci-" in r.name  # not the site's other BGP sessions
    ]
    assert len(attachments) == len(vifs) == len(peers) == ports
    router = "gpudr-llm-xcloud-cci-gcpe4-router"
    for a in attachments:
        assert a.inputs["type"] == "DEDICATED" and a.inputs["bandwidth"] == f"BPS_{speed}G"
        assert a.inputs["vlanTag8021q"] == 100 and a.inputs["region"] == "us-east4", a.urn
        assert a.inputs["router"].endswith(f"/regions/us-east4/routers/{router}"), a.urn
    for v in vifs:
        assert v.inputs["vlan"] == 100 and v.inputs["addressFamily"] == "ipv4", v.urn
        # the Cloud Router's ASN: the GCP site is the plan's second (transit_gateway_asn)
        assert v.inputs["bgpAsn"] == 64601, v.urn
    for p in peers:
        assert p.inputs["peerAsn"] == DX_GATEWAY_ASN and p.inputs["router"] == router, p.urn
        assert "md5AuthenticationKey" in p.inputs, p.urn  # AWS's generated key, both sides


@pytest.mark.parametrize("which", PLANS)
def test_the_dr_stack_declares_nothing_of_the_link_and_runs_with_the_primary_down(
    which: str,
) -> None:
    plan = _plan(which)
    dr = plan.sites[DR[which]]
    primary = plan.sites[PRIMARY[which]]
    mocks = GpudrMocks(default_region=dr.region, unreachable_regions=frozenset({primary.region}))
    run = run_stack(stack_name(plan, dr), stack_config_values(design(plan), dr), mocks)
    assert not [r for r in run.resources if "interconnect" in r.type.lower()]
    assert not [r for r in run.resources if r.type.startswith("aws:directconnect")]
    assert not [r for r in run.resources if r.type == "gcp:compute/haVpnGateway:HaVpnGateway"]


@pytest.mark.parametrize("field", ["remote_location", "aws_location", "secondary_location"])
def test_a_link_config_without_its_places_is_refused_by_the_program(field: str) -> None:
    """A hand-edited stack config: nothing is ordered without every place."""
    plan = _plan("aws-primary")
    s = plan.sites["use1"]
    config = stack_config_values(design(plan), s)
    site = copy.deepcopy(config["gpudr:site"])
    site["links"][0][field] = None
    with pytest.raises(ValueError) as info:
        run_stack(stack_name(plan, s), {**config, "gpudr:site": site})
    assert "sites.<dr>.link needs location, secondary_location" in str(info.value)
