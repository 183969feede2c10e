"""GCP Cross-Cloud Interconnect between AWS and GCP sites: what the spec accepts and refuses on
`sites.<dr>.link`, when the planner chooses it over HA VPN, how it is sized and who pays what
(examples/aws-to-gcp-dedicated.yaml and variations of it)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gpudr.build.stackconfig import build_site_configs
from gpudr.core import sizing
from gpudr.core.design import Design, design
from gpudr.core.enums import LinkKind
from gpudr.core.spec import PlanError, parse_plan
from tests.conftest import ROOT

EXAMPLE: dict[str, Any] = yaml.safe_load(
    (ROOT / "examples" / "aws-to-gcp-dedicated.yaml").read_text()
)
LINK = EXAMPLE["sites"]["gcpe4"]["link"]
CCI = LinkKind.CROSS_CLOUD_INTERCONNECT


def _raw(link: dict[str, Any] | None = None, **checkpoints: Any) -> dict[str, Any]:
    raw = copy.deepcopy(EXAMPLE)
    if link is None:
        raw["sites"]["gcpe4"].pop("link")
    else:
        raw["sites"]["gcpe4"]["link"] = link
    raw["data"]["checkpoints"].update(checkpoints)
    return raw


def _design(link: dict[str, Any] | None = None, **checkpoints: Any) -> Design:
    return design(parse_plan(_raw(link, **checkpoints)))


def _errors(link: dict[str, Any]) -> list[str]:
    with pytest.raises(PlanError) as info:
        parse_plan(_raw(link))
    return [str(e) for e in info.value.errors]


def _link_path(d: Design) -> Any:
    return next(p for p in d.paths.values() if p.kind in (CCI, LinkKind.HA_VPN))


# --- the spec ---------------------------------------------------------------------------------

L = "sites.gcpe4.link"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"location": None},
            f"{L}.location: is required for cross-cloud-interconnect; name an Interconnect "
            "location in one edge availability domain (e.g. iad-zone1-1)",
        ),
        ({"remote_location": None}, f"{L}.remote_location: is required for cross-cloud"),
        ({"aws_location": None}, f"{L}.aws_location: is required for cross-cloud"),
        ({"location": "Ashburn 1"}, f'{L}.location: "Ashburn 1" is not an Interconnect location'),
        ({"aws_location": "Eq-DC2"}, f'{L}.aws_location: "Eq-DC2" is not a Direct Connect'),
        (
            {"remote_location": "AWS us-east-1"},
            f'{L}.remote_location: "AWS us-east-1" is not a Cross-Cloud Interconnect remote',
        ),
        (
            {"secondary_location": "iad-zone1-5"},
            f'{L}.secondary_location: "iad-zone1-5" is in the edge availability domain of '
            "location (zone1); one maintenance window would take both: use a iad-zone2 location",
        ),
        (
            {"secondary_location": "ord-zone2-1"},
            f'{L}.secondary_location: "ord-zone2-1" is not in the metro of location (iad)',
        ),
        (
            {"kind": "ha-vpn", "location": None, "secondary_location": None},
            f"{L}.remote_location: is for cross-cloud-interconnect only; remove it",
        ),
    ],
)
def test_the_spec_refuses_a_cross_cloud_interconnect_it_cannot_order(
    change: dict[str, Any], expected: str
) -> None:
    link = {k: v for k, v in {**LINK, **change}.items() if v is not None}
    errors = _errors(link)
    assert any(e.startswith(expected) for e in errors), errors
    assert all("\n" not in e for e in errors)


def test_the_link_is_refused_between_two_aws_regions() -> None:
    raw = copy.deepcopy(EXAMPLE)
    raw["sites"]["gcpe4"].update(cloud="aws", region="us-west-2", azs=["us-west-2a"])
    raw["sites"]["gcpe4"].pop("project")
    with pytest.raises(PlanError, match='"cross-cloud-interconnect" cannot join aws and aws'):
        parse_plan(raw)


def test_without_a_kind_the_link_is_left_to_the_planner() -> None:
    link = {k: v for k, v in LINK.items() if k != "kind"}
    assert parse_plan(_raw(link)).sites["gcpe4"].link.kind is None  # type: ignore[union-attr]
    assert parse_plan(_raw({})).sites["gcpe4"].link.kind is None  # type: ignore[union-attr]


# --- the planner's choice and the verdicts ----------------------------------------------------


def test_the_example_is_sized_to_survive_an_edge_domain() -> None:
    d = _design(LINK)
    path = _link_path(d)
    assert path.kind == CCI and path.ports is not None
    assert (path.ports.ports, path.ports.port_gbps) == (4, 10)
    assert path.needed_gbps > sizing.ha_vpn_gbps()
    assert path.capacity_gbps == path.ports.survivable_gbps == 20.0
    assert path.choice is None  # the spec named the kind
    assert d.meets


def test_named_locations_without_a_kind_get_the_link_by_need_and_say_why() -> None:
    d = _design({k: v for k, v in LINK.items() if k != "kind"})
    path = _link_path(d)
    assert path.kind == CCI and path.capacity_gbps == 20.0 and d.meets
    assert path.choice is not None
    assert "18.19 Gbps with headroom is more than ha-vpn carries (5 Gbps)" in path.choice
    row = next(w for w in d.workloads if w.name == "checkpoints")
    assert path.choice in row.notes


def test_a_need_ha_vpn_carries_keeps_ha_vpn_without_a_kind() -> None:
    d = _design({}, size="2TB")  # 2.4 Gbps with headroom
    path = _link_path(d)
    assert path.kind == LinkKind.HA_VPN and path.choice is None and d.meets


@pytest.mark.parametrize("link", [None, {}], ids=["no-link", "empty-link"])
def test_the_need_above_ha_vpn_without_places_stays_ha_vpn_not_met_naming_the_fix(
    link: dict[str, Any] | None,
) -> None:
    """Without the places a Cross-Cloud Interconnect is ordered at, the link stays HA VPN (what
    the program builds and the pack judges), over capacity, and the verdict says what to add."""
    d = _design(link)
    path = _link_path(d)
    assert path.kind == LinkKind.HA_VPN and path.capacity_gbps == 5 and not d.meets
    row = next(w for w in d.workloads if w.name == "checkpoints")
    assert not row.meets
    (fix,) = [n for n in row.notes if n.startswith("path ha-vpn needs 18.19 Gbps")]
    assert "add sites.gcpe4.link: {kind: cross-cloud-interconnect, location:" in fix
    assert fix.endswith("(the planner chooses it by the need once its places are named)")


def test_ha_vpn_named_for_a_need_above_it_is_not_met_and_names_the_dedicated_link() -> None:
    d = _design({"kind": "ha-vpn"})
    path = _link_path(d)
    assert path.kind == LinkKind.HA_VPN and not path.ok and not d.meets
    row = next(w for w in d.workloads if w.name == "checkpoints")
    (fix,) = [n for n in row.notes if n.startswith("path ha-vpn needs 18.19 Gbps")]
    assert "a dedicated link carries it: add sites.gcpe4.link: {kind: cross-cloud" in fix
    assert "(or name only its places, without kind: ha-vpn" in fix


def test_beyond_the_most_connections_the_shortfall_is_a_verdict() -> None:
    d = _design(LINK, size="400TB")
    path = _link_path(d)
    assert path.ports is not None and (path.ports.ports, path.ports.port_gbps) == (8, 100)
    assert not d.meets
    row = next(w for w in d.workloads if w.name == "checkpoints")
    assert any("the largest Cross-Cloud Interconnect plan gpudr deploys" in n for n in row.notes)


# --- cost: each cloud bills its own end -------------------------------------------------------


def _lines(d: Design) -> dict[str, tuple[str, float]]:
    return {line.item: (line.site, line.monthly_usd) for line in d.cost.lines}


def test_the_aws_end_pays_its_ports_and_the_data_it_sends_at_interconnect_rates() -> None:
    d = _design(LINK)
    lines = _lines(d)
    site, usd = lines["Direct Connect 4 x 10 Gbps ports"]
    assert site == "use1" and usd == pytest.approx(4 * 730 * 2.25)
    assert lines["checkpoints transfer out over Direct Connect"][0] == "use1"
    assert not [i for i in lines if i.startswith("checkpoints transfer aws -> gcp")]
    assert "transit gateway attachments (VPC + Direct Connect gateway)" in lines
    unpriced = "\n".join(d.cost.unpriced)
    assert "gcpe4: Cross-Cloud Interconnect 4 x 10 Gbps connections" in unpriced
    assert "gcpe4: Interconnect VLAN attachments (4 x 10 Gbps)" in unpriced


def test_from_a_gcp_primary_the_egress_is_googles_and_unpriced() -> None:
    raw = copy.deepcopy(EXAMPLE)
    aws, gcp = raw["sites"]["use1"], raw["sites"]["gcpe4"]
    aws.update(role="dr", protects="gcpe4", link=gcp.pop("link"))
    aws.pop("account")
    gcp["role"] = "primary"
    gcp.pop("protects")
    raw["data"]["datasets"]["replication"] = "datasync"
    d = design(parse_plan(raw))
    lines = _lines(d)
    assert lines["Direct Connect 4 x 10 Gbps ports"][0] == "use1"
    assert "checkpoints transfer out over Direct Connect" not in lines
    assert any(
        u.startswith("gcpe4: checkpoints transfer out over Cross-Cloud Interconnect")
        for u in d.cost.unpriced
    ), d.cost.unpriced


# --- the stack config -------------------------------------------------------------------------


def test_the_primary_gets_the_link_with_its_places_and_vlan() -> None:
    configs = build_site_configs(_design(LINK))
    (link,) = configs["use1"].links
    assert (link.kind, link.ports, link.port_gbps, link.capacity_gbps) == (CCI, 4, 10, 20.0)
    assert (link.location, link.secondary_location) == ("iad-zone1-1", "iad-zone2-1")
    assert (link.remote_location, link.aws_location, link.vlan) == ("aws-us-east-1", "EqDC2", 100)
