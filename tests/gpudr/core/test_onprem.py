"""On-premises primaries (`cloud: onprem`): the spec's fields and their one-line errors, the
WAN path's capacity (the least of committed bandwidth, ports and agents), the verdicts when it
is too small, the costs AWS bills for it, and the hardware differences the plan reports."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudr.core import hardware, sizing
from gpudr.core.design import datasync_mode, design, wan_capacity
from gpudr.core.enums import GpuInterconnect, LinkKind, Mechanism, StorageKind
from gpudr.core.spec import GpuInventory, Plan, PlanError, parse_endpoint, parse_plan

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = yaml.safe_load((ROOT / "examples" / "onprem-to-aws.yaml").read_text())


def _with(path: str, value: Any) -> dict[str, Any]:
    """The example with one field set (`a.b.c`), or removed when value is ...."""
    raw = copy.deepcopy(EXAMPLE)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return raw


def _errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(PlanError) as info:
        parse_plan(raw)
    return [str(e) for e in info.value.errors]


def test_the_example_parses_into_an_onprem_primary_and_a_cloud_dr_site() -> None:
    plan = parse_plan(EXAMPLE)
    site = plan.onprem["fra1"]
    assert list(plan.sites) == ["euc1"]  # no stack, no cloud: held apart
    assert (site.gpus.model, site.gpus.nodes, site.gpus.bare_metal) == ("h100-sxm", 16, True)
    assert site.storage.kind == StorageKind.NFS
    assert [a.name for a in site.agents] == ["dsa-1", "dsa-2"]
    assert (site.link.port_gbps, site.link.ports, site.link.vlan) == (10.0, 2, 410)
    assert plan.onprem_pairs() == [(site, plan.sites["euc1"])]
    assert plan.pairs() == []
    assert plan.clusters["train"].site == "fra1"


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("sites.fra1.role", "dr", "sites.fra1.role: an on-premises site is a primary only"),
        ("sites.fra1.location", "DC1; rm -rf /", "sites.fra1.location: "),
        ("sites.fra1.wan_committed_gbps", ..., "sites.fra1.wan_committed_gbps: is required"),
        (
            "sites.fra1.wan_committed_gbps",
            25,
            "sites.fra1.wan_committed_gbps: 25 Gbps is more than the link carries (2 x 10 Gbps)",
        ),
        ("sites.fra1.gpus.model", "h100-nvl", "sites.fra1.gpus.model: "),
        ("sites.fra1.gpus.bare_metal", "yes", "sites.fra1.gpus.bare_metal: "),
        ("sites.fra1.storage.kind", "smb", "sites.fra1.storage.kind: "),
        (
            "sites.fra1.storage.endpoint",
            "https://10.40.8.10/ml",
            'sites.fra1.storage.endpoint: "https://10.40.8.10/ml" is not a nfs endpoint; use '
            "host:/export",
        ),
        ("sites.fra1.agents", 5, "sites.fra1.agents: 5 is not 1 to 4"),
        ("sites.fra1.agents.0.address", "10.99.0.1", "is outside the site's cidr 10.40.0.0/16"),
        ("sites.fra1.agents.1.name", "dsa-1", 'sites.fra1.agents[1].name: "dsa-1" is used twice'),
        ("sites.fra1.link.kind", "expressroute", "does not reach aws (site euc1); use"),
        ("sites.fra1.link.port_gbps", 40, "sites.fra1.link.port_gbps: 40 is not a dedicated"),
        ("sites.fra1.link.vlan", 5000, "sites.fra1.link.vlan: 5000 is not a VLAN id"),
        ("sites.fra1.link.bgp_asn", ..., "sites.fra1.link.bgp_asn: is required"),
        ("sites.fra1.link.bgp_asn", 4294967295, "4294967294; private 64512-65534 or 4200000000"),
        ("sites.fra1.link.bgp_asn", 64512, "bgp_asn: 64512 is the Direct Connect gateway's ASN"),
        ("sites.fra1.link.bgp_asn", 64600, "64600 is the DR site's transit gateway's ASN; use"),
        ("sites.fra1.link.location", ..., "sites.fra1.link.location: is required"),
        ("sites.fra1.cidr", "10.42.0.0/16", "overlaps sites.euc1.cidr"),
        (
            "sites.euc1.cloud",
            "azure",
            'sites.fra1.link.kind: "direct-connect" does not reach azure',
        ),
        ("sites.euc1.link", {"kind": "direct-connect", "location": "EqFA5"}, "move it to"),
        ("clusters.train.nodes", 17, "clusters.train.nodes: 17 is more than sites.fra1.gpus"),
        ("clusters.train.gpu", "h100", "is not offered in eu-central-1"),
        ("data.weights.rpo", "0", "data.weights.rpo: 0 needs dual write, which gpudr cannot"),
        ("data.checkpoints.replication", "crr-rtc", '"crr-rtc" cannot replicate on premises'),
    ],
)
def test_a_bad_field_is_one_line_naming_it_and_the_fix(
    path: str, value: Any, expected: str
) -> None:
    errors = _errors(_with(path, value))
    assert any(expected in e for e in errors), errors
    assert all("\n" not in e for e in errors)


def test_a_four_byte_asn_parses() -> None:
    plan = parse_plan(_with("sites.fra1.link.bgp_asn", 4200000001))
    assert plan.onprem["fra1"].link.bgp_asn == 4200000001


def test_a_site_cloud_that_is_no_kind_lists_onprem() -> None:
    errors = _errors(_with("sites.euc1.cloud", "oci"))
    assert any("use one of aws, gcp, azure, onprem" in e for e in errors), errors


def test_agents_as_a_count_are_named_and_addressless() -> None:
    plan = parse_plan(_with("sites.fra1.agents", 3))
    assert [(a.name, a.address) for a in plan.onprem["fra1"].agents] == [
        ("agent-1", None),
        ("agent-2", None),
        ("agent-3", None),
    ]


@pytest.mark.parametrize(
    ("kind", "endpoint", "host", "port", "path"),
    [
        (StorageKind.NFS, "10.40.8.10:/exports/ml", "10.40.8.10", None, "/exports/ml"),
        (StorageKind.LUSTRE, "mds1.dc1.lan:/lustre", "mds1.dc1.lan", None, "/lustre"),
        (
            StorageKind.S3_COMPATIBLE,
            "https://minio.dc1.lan:9000/ml-data",
            "minio.dc1.lan",
            9000,
            "ml-data",
        ),
        (StorageKind.S3_COMPATIBLE, "https://rgw.dc1.lan/ml-data", "rgw.dc1.lan", 443, "ml-data"),
        (StorageKind.HDFS, "hdfs://nn1.dc1.lan:8020/ml", "nn1.dc1.lan", 8020, "/ml"),
    ],
)
def test_endpoints_split_as_datasync_takes_them(
    kind: StorageKind, endpoint: str, host: str, port: int | None, path: str
) -> None:
    e = parse_endpoint(kind, endpoint)
    assert (e.host, e.port, e.path) == (host, port, path)


@pytest.mark.parametrize(
    ("kind", "endpoint"),
    [
        (StorageKind.NFS, "10.40.8.10:exports"),
        (StorageKind.NFS, "10.40.8.10:/ex ports"),
        (StorageKind.S3_COMPATIBLE, "http://minio:9000/ml"),
        (StorageKind.S3_COMPATIBLE, "https://minio:99999/ml"),
        (StorageKind.S3_COMPATIBLE, "https://minio:9000/ML_Bucket"),
        (StorageKind.S3_COMPATIBLE, "https://minio:9000/ml"),  # buckets have 3 characters or more
        (StorageKind.NFS, "https://10.40.8.10/ml"),
        (StorageKind.HDFS, "hdfs://nn1;curl:8020/ml"),
    ],
)
def test_bad_endpoints_are_refused(kind: StorageKind, endpoint: str) -> None:
    with pytest.raises(ValueError, match=f"is not a {kind} endpoint"):
        parse_endpoint(kind, endpoint)


# --- property-based: the on-prem example mutated anywhere parses or refuses in one line each --


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["onprem", "nfs", "direct-connect", "vpn", "10.40.0.5", "8Gbps", "h100-sxm"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _paths(v, (*prefix, i))
    return found


ONPREM_PATHS = [p for p in _paths(EXAMPLE)[1:] if p[:2] == ("sites", "fra1")]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ONPREM_PATHS), _values)
def test_mutated_onprem_site_parses_or_refuses(path: tuple[Any, ...], value: Any) -> None:
    raw = copy.deepcopy(EXAMPLE)
    node = raw
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    start = time.monotonic()
    try:
        assert isinstance(parse_plan(raw), Plan)
    except PlanError as exc:
        assert exc.errors and all("\n" not in str(e) for e in exc.errors)
    assert time.monotonic() - start < 2.0


# --- the WAN path ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("committed", "ports", "agents", "capacity", "bound"),
    [
        (8, 2, 2, 8.0, sizing.WAN_COMMITTED),
        (20, 2, 1, 10.0, sizing.WAN_AGENTS),  # one agent at the assumed 10 Gbps
        (10, 1, 4, 10.0, sizing.WAN_COMMITTED),  # ties go to the first bound
    ],
)
def test_wan_capacity_is_the_least_bound(
    committed: float, ports: int, agents: int, capacity: float, bound: str
) -> None:
    raw = _with("sites.fra1.wan_committed_gbps", committed)
    raw["sites"]["fra1"]["link"]["ports"] = ports
    raw["sites"]["fra1"]["agents"] = agents
    plan = parse_plan(raw)
    got, source, ports_plan = wan_capacity(plan, plan.onprem["fra1"])
    assert got == capacity
    assert sizing.onprem_path_gbps(committed, 10.0 * ports, agents, 10.0) == (capacity, bound)
    assert ports_plan is not None and ports_plan.ports == ports
    assert f"{committed:g} Gbps committed" in source


def test_example_design_meets_on_the_committed_wan() -> None:
    d = design(parse_plan(EXAMPLE))
    (path,) = d.paths.values()
    assert path.kind == LinkKind.WAN and path.capacity_gbps == 8.0 and path.ok
    assert {f.mechanism for f in d.flows} == {Mechanism.DATASYNC_AGENT}
    # RPO = schedule interval + one run's transfer over the committed WAN.
    for f in d.flows:
        assert f.schedule is not None and f.schedule.interval_s % 3600 == 0
        assert f.estimate.estimated_s <= (f.rpo_s or 0)
    assert d.meets


def test_an_undersized_wan_is_not_met_and_says_by_how_much() -> None:
    d = design(parse_plan(_with("sites.fra1.wan_committed_gbps", 0.5)))
    (path,) = d.paths.values()
    assert not path.ok
    data = [w for w in d.workloads if w.kind == "data"]
    assert data and not any(w.meets for w in data)
    assert any("Gbps short" in n for w in data for n in w.notes)
    assert not d.meets
    notes = [n for w in data for n in w.notes]
    # The ports are the user's: the note names the bound that holds and what raises it.
    assert any(
        "0.46 Gbps short; commit more WAN bandwidth to DR (sites.fra1.wan_committed_gbps, "
        "0.5 Gbps)" in n
        for n in notes
    ), notes
    assert not any("largest Direct Connect plan" in n or "dual-write" in n for n in notes), notes


def test_too_few_agents_are_named_as_the_bound_with_their_fix() -> None:
    raw = _with("sites.fra1.agents", 1)
    raw["quotas"] = {"datasync_agent_gbps": 0.5}
    d = design(parse_plan(raw))
    notes = [n for w in d.workloads if w.kind == "data" for n in w.notes]
    fix = (
        "add agents (sites.fra1.agents, 1 of at most 4) or, with a measured rate, raise "
        "quotas.datasync_agent_gbps (0.5 Gbps per agent)"
    )
    assert any(f"Gbps short; {fix}" in n for n in notes), notes
    # A schedule that cannot meet the RPO names the same fixes, never dual write.
    missed = [n for n in notes if n.startswith("even the shortest schedule")]
    assert missed and all(n.endswith(f": {fix}, or relax the RPO") for n in missed), missed


def test_costs_are_aws_lines_only_and_no_egress() -> None:
    d = design(parse_plan(EXAMPLE))
    items = [line.item for line in d.cost.lines]
    assert all(line.site == "euc1" for line in d.cost.lines)  # nothing priced on premises
    assert not any("transfer" in i and "->" in i for i in items)  # on-prem egress is yours
    assert any(i == "Direct Connect 2 x 10 Gbps ports" for i in items)
    assert any("DataSync fee (enhanced mode" in i for i in items)
    assert any("DataSync interface endpoint" in i for i in items)
    dx = next(line for line in d.cost.lines if line.item.startswith("Direct Connect"))
    assert dx.quantity == 2 * 730 and dx.unit_usd == 2.25


@pytest.mark.parametrize(
    ("kind", "mode"),
    [
        (StorageKind.NFS, "enhanced"),
        (StorageKind.LUSTRE, "enhanced"),
        (StorageKind.S3_COMPATIBLE, "basic"),
        (StorageKind.HDFS, "basic"),
    ],
)
def test_task_mode_follows_the_store(kind: StorageKind, mode: str) -> None:
    assert datasync_mode(kind) == mode


def test_hdfs_is_not_read_into_aws_yet_and_says_what_is() -> None:
    kind = "hdfs"
    errors = _errors(_with("sites.fra1.storage", {"kind": kind, "endpoint": "hdfs://nn1:8020/ml"}))
    assert (
        f'sites.fra1.storage.kind: "{kind}" is not read into aws yet; serve the data over nfs'
        in (" ".join(errors))
    ), errors


VPN = {"kind": "vpn", "bgp_asn": 65010, "address": "145.40.66.7", "ports": 4}


def _vpn_plan(**link: Any) -> dict[str, Any]:
    raw = _with("sites.fra1.link", {**VPN, **link})
    raw["sites"]["fra1"]["wan_committed_gbps"] = 4
    return raw


def test_a_vpn_carries_its_tunnels_and_aws_bills_its_connections() -> None:
    plan = parse_plan(_vpn_plan())
    link = plan.onprem["fra1"].link
    assert (link.port_gbps, link.ports, link.address) == (1.25, 4, "145.40.66.7")
    d = design(plan)
    (path,) = d.paths.values()
    assert path.capacity_gbps == 4.0  # min(4 committed, 4 x 1.25 tunnels, 2 x 10 agents)
    lines = {line.item: line for line in d.cost.lines}
    vpn = lines["AWS VPN connections (2)"]
    assert vpn.quantity == 2 * 730
    assert "transit gateway attachments (VPC + 2 VPN)" in lines
    assert not any(i.startswith("Direct Connect") for i in lines)


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ({"address": None}, "sites.fra1.link.address: is required"),
        ({"address": "10.40.0.1"}, "is not a public IPv4 address"),
        ({"address": "2001:db8::1"}, "is not a public IPv4 address"),
        ({"ports": 3}, "sites.fra1.link.ports: 3 tunnels: a Site-to-Site VPN connection has two"),
        ({"port_gbps": 2}, "sites.fra1.link.port_gbps: 2 is above a VPN tunnel's 1.25 Gbps"),
    ],
)
def test_a_vpn_link_refuses_with_the_fix(link: dict[str, Any], expected: str) -> None:
    raw = _vpn_plan(**link)
    raw["sites"]["fra1"]["link"] = {
        k: v for k, v in raw["sites"]["fra1"]["link"].items() if v is not None
    }
    errors = _errors(raw)
    assert any(expected in e for e in errors), errors


# --- hardware differences ----------------------------------------------------------------------


def _inventory(model: str, fabric: GpuInterconnect = GpuInterconnect.INFINIBAND) -> GpuInventory:
    return GpuInventory(model, 16, 8, True, fabric)


def test_a100_at_the_dr_site_trains_at_the_mlperf_ratio() -> None:
    d = hardware.difference(_inventory("h100-sxm"), 16, "aws", "a100-80gb", 8)
    assert d.relative == pytest.approx(0.556)
    assert d.slowdown == pytest.approx(1 / 0.556 - 1)
    notes = hardware.notes(d, "p4de.24xlarge", 40.97, 16)
    assert notes[0].startswith("degraded: 128 x a100-sxm-80gb (16 p4de.24xlarge) trains at 56%")
    assert "EFA" in notes[1] and "infiniband" in notes[1]


def test_the_same_gpu_reports_no_degradation_but_the_fabric() -> None:
    d = hardware.difference(_inventory("h100-sxm"), 16, "aws", "h100", 8)
    assert d.relative == 1.0
    notes = hardware.notes(d, "p5.48xlarge", 55.04, 16)
    assert not any(n.startswith("degraded") for n in notes)
    assert any(n.startswith("fabric: infiniband on premises, EFA") for n in notes)


def test_an_unmeasured_pair_says_so_rather_than_guess() -> None:
    d = hardware.difference(_inventory("l40s"), 16, "aws", "h100", 8)
    assert d.relative is None
    assert "not known to gpudr" in hardware.notes(d, "p5.48xlarge", 55.04, 16)[0]


def test_infiniband_at_both_ends_needs_no_fabric_note() -> None:
    d = hardware.difference(_inventory("h100-sxm"), 4, "azure", "h100", 8)
    assert not any(n.startswith("fabric") for n in hardware.notes(d, "ND96isr", 98.32, 4))


def test_the_example_pool_carries_the_hardware_notes() -> None:
    d = design(parse_plan(EXAMPLE))
    (pool,) = d.pools
    assert pool.instance_type == "p4de.24xlarge"
    assert any(n.startswith("degraded:") for n in pool.notes)
    assert any(n.startswith("image and driver:") for n in pool.notes)


def test_a_datasync_run_waits_for_the_other_classes_runs_on_the_same_agents() -> None:
    """Every task uses every agent and an agent runs one task at a time: at worst a class's
    run starts after every other class's run, which the estimate adds (the example's intervals
    are the same with and without the wait, so each wait is the others' final runs)."""
    d = design(parse_plan(copy.deepcopy(EXAMPLE)))
    runs = {f.data_class: f.schedule for f in d.flows if f.schedule is not None}
    assert set(runs) == {"checkpoints", "weights", "datasets"}
    for cls, s in runs.items():
        others = sum(o.transfer_s for c, o in runs.items() if c != cls)
        assert s.wait_s == pytest.approx(others), cls
    # checkpoints: 2h + 1,199.06 s behind weights (164.05) and datasets (1,035.00) + its own
    # 539.58 s run + the 1h checkpoint interval: 12,538.63 s, within 4h (14,400 s)
    checkpoints = next(f for f in d.flows if f.data_class == "checkpoints")
    assert checkpoints.estimate.estimated_s == pytest.approx(
        7200 + 1199.06 + 539.58 + 3600, abs=0.01
    )
    assert d.replication_meets(checkpoints)


@pytest.mark.parametrize("example", ["onprem-to-azure", "onprem-to-gcp"])
@pytest.mark.parametrize(
    ("path", "value", "error"),
    [
        (("sites", "agents"), 5, "agents: 5 is not 1 to 4: gpudr plans at most 4 agents a site"),
        (("data", "checkpoints", "rpo"), 0, "scheduled pulls run at most hourly"),
    ],
)
def test_an_onprem_refusal_names_no_service_of_another_cloud(
    example: str, path: tuple[str, ...], value: Any, error: str
) -> None:
    """Into Azure or GCP, nothing is DataSync: the agents' and the pulls' limits are said
    without naming it."""
    raw = yaml.safe_load((ROOT / "examples" / f"{example}.yaml").read_text())
    if path[0] == "sites":
        (site,) = [s for s in raw["sites"].values() if s["cloud"] == "onprem"]
        site[path[1]] = value
    else:
        raw[path[0]][path[1]][path[2]] = value
    with pytest.raises(PlanError) as refused:
        parse_plan(raw)
    lines = [str(e) for e in refused.value.errors]
    assert any(error in line for line in lines), lines
    assert not any("DataSync" in line for line in lines), lines
