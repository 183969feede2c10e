"""On premises -> GCP, the plan side: the Interconnect link's fields and one-line errors, the
agents' bound (quotas.sts_agent_gbps), the mechanism and what GCP bills."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudr.core import cost
from gpudr.core.design import design, wan_capacity
from gpudr.core.enums import Mechanism
from gpudr.core.spec import PlanError, parse_plan

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = yaml.safe_load((ROOT / "examples" / "onprem-to-gcp.yaml").read_text())


def _with(path: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(EXAMPLE)
    *parents, last = path.split(".")
    node = raw
    for p in parents:
        node = node[p]
    node[last] = value
    return raw


@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        ("sites.ams1.link.port_gbps", 40, "sites.ams1.link.port_gbps: 40 is not a circuit speed"),
        ("sites.ams1.link.location", "EqAM1", "is not an Interconnect location"),
        ("sites.ams1.link.vlan", None, "sites.ams1.link.vlan: is required"),
        ("sites.ams1.link.bgp_asn", 64514, "64514 is the Cloud Router's ASN"),
        (
            "sites.ams1.link",
            {"kind": "interconnect-partner", "port_gbps": 3, "bgp_asn": 65020},
            "3 is not a VLAN attachment capacity",
        ),
        (
            "sites.ams1.link",
            {"kind": "interconnect-partner", "port_gbps": 1, "bgp_asn": 16550},
            "16550 is the Cloud Router's ASN",
        ),
        (
            "sites.ams1.link",
            {"kind": "interconnect-partner", "port_gbps": 1, "bgp_asn": 65020, "location": "x"},
            "is the provider's for a Partner Interconnect",
        ),
        (
            "sites.ams1.link",
            {"kind": "direct-connect", "location": "EqAM1", "port_gbps": 10, "bgp_asn": 65020},
            '"direct-connect" does not reach gcp',
        ),
        ("sites.ams1.storage", {"kind": "hdfs", "endpoint": "hdfs://nn1:8020/ml"}, "hdfs"),
        # the LOA-CFAs: who they name and where Google sends them
        ("sites.ams1.link.noc_email", "noc at example", "is not an email address"),
        ("sites.ams1.link.customer", "Example <AI>", "is not a company name for the LOA-CFAs"),
        (
            "sites.ams1.link",
            {
                "kind": "interconnect-dedicated",
                "location": "ams-zone1-1",
                "port_gbps": 10,
                "bgp_asn": 65020,
                "vlan": 420,
            },
            "sites.ams1.link.customer: is required",
        ),
        (
            "sites.ams1.link",
            {
                "kind": "interconnect-partner",
                "port_gbps": 1,
                "bgp_asn": 65020,
                "noc_email": "noc@example.com",
            },
            "sites.ams1.link.noc_email: is for interconnect-dedicated only",
        ),
    ],
)
def test_a_bad_field_is_one_line_naming_it_and_the_fix(path: str, value: Any, error: str) -> None:
    raw = _with(path, value)
    if value is None:
        del raw["sites"]["ams1"]["link"]["vlan"]
    with pytest.raises(PlanError) as exc:
        parse_plan(raw)
    assert any(error in line for line in str(exc.value).splitlines()), str(exc.value)


BUNDLE = "not a VLAN attachment capacity; bundle circuits to one of"


@pytest.mark.parametrize(
    ("ports", "port_gbps", "error"),
    [
        (1, 10, None),
        (2, 10, None),
        (5, 10, None),
        (1, 100, None),
        (3, 10, f"3 x 10 Gbps is 30 Gbps, {BUNDLE} 10, 20, 50, 100, 400 Gbps"),
        (4, 10, f"4 x 10 Gbps is 40 Gbps, {BUNDLE} 10, 20, 50, 100, 400 Gbps"),
        (8, 10, f"8 x 10 Gbps is 80 Gbps, {BUNDLE} 10, 20, 50, 100, 400 Gbps"),
        (2, 100, f"2 x 100 Gbps is 200 Gbps, {BUNDLE} 100, 400 Gbps"),
        (3, 100, f"3 x 100 Gbps is 300 Gbps, {BUNDLE} 100, 400 Gbps"),
    ],
)
def test_a_dedicated_bundle_no_vlan_attachment_carries_is_refused_on_its_ports(
    ports: int, port_gbps: int, error: str | None
) -> None:
    """The DR stack's one VLAN attachment carries the whole bundle, at a capacity the Compute
    API lists (BPS_10G, BPS_20G, BPS_50G, BPS_100G, BPS_400G): any other total would fail the
    first `pulumi up`, so the spec refuses it."""
    raw = _with("sites.ams1.link.ports", ports)
    raw["sites"]["ams1"]["link"]["port_gbps"] = port_gbps
    if error is None:
        link = parse_plan(raw).onprem["ams1"].link
        assert link.ports * link.port_gbps == ports * port_gbps
        return
    with pytest.raises(PlanError) as exc:
        parse_plan(raw)
    assert str(exc.value).splitlines() == [f"sites.ams1.link.ports: {error}"]


def test_every_class_is_pulled_through_agents_and_the_agents_bound_is_sts() -> None:
    plan = parse_plan(_with("quotas", {"sts_agent_gbps": 2}))
    d = design(plan)
    assert {f.mechanism for f in d.flows} == {Mechanism.STS_AGENT}
    capacity, source, _ = wan_capacity(plan, plan.onprem["ams1"])
    assert capacity == 4.0  # 2 agents x 2 Gbps, below the 8 Gbps committed
    assert "quotas.sts_agent_gbps" in source


def test_gcp_bills_the_agent_fee_and_circuits_and_lists_the_attachment_unpriced() -> None:
    d = design(parse_plan(EXAMPLE))
    report = cost.report(d.usages)
    items = {line.item: line for line in report.lines}
    assert items["checkpoints Storage Transfer fee (agents on premises)"].unit_usd > 0
    circuits = items["Dedicated Interconnect 2 x 10 Gbps circuits"]
    assert circuits.quantity == 2 * 730 and circuits.unit_usd == 2.328
    assert not [i for i in items if "DataSync" in i or "Direct Connect" in i]
    assert any("VLAN attachments (1 x 20 Gbps)" in u for u in report.unpriced)
