"""The design of the example plan, and what changes when its inputs change."""

from __future__ import annotations

from typing import Any

import pytest

from gpudr.core.cost import HOURS_PER_MONTH
from gpudr.core.design import design
from gpudr.core.spec import load_plan, parse_plan
from tests.conftest import EXAMPLE


def _rows(d: Any) -> dict[str, Any]:
    return {w.name: w for w in d.workloads}


def test_example_meets_every_target() -> None:
    d = design(load_plan(EXAMPLE))
    rows = _rows(d)
    assert d.meets
    assert rows["checkpoints"].mechanism == "crr-rtc"
    assert rows["checkpoints"].estimated_rpo_s == pytest.approx(3600)  # 45 min + RTC's 15 min
    assert rows["weights"].mechanism == "dual-write" and rows["weights"].estimated_rpo_s == 0
    assert rows["cluster-train"].pattern == "pilot-light"
    assert rows["svc-chat"].pattern == "active-active"


def test_default_rtc_quota_is_not_enough(example_raw: dict[str, Any]) -> None:
    """Without the raised quota the checkpoint stream overruns S3 RTC's 1 Gbps: not met."""
    example_raw.pop("quotas")
    d = design(parse_plan(example_raw))
    rows = _rows(d)
    assert not d.meets
    path = d.paths["use1->usw2:s3-rtc"]
    assert path.capacity_gbps == 1 and not path.ok
    assert path.needed_gbps == pytest.approx((0.790123 + 0.092593) * 1.25, rel=1e-4)
    assert not rows["checkpoints"].meets
    assert any(
        "needs 1.10 Gbps with headroom but has 1 Gbps" in n for n in rows["checkpoints"].notes
    )


def test_tight_rpo_needs_more_bandwidth(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["checkpoints"]["rpo"] = "1h"
    d = design(parse_plan(example_raw))
    row = _rows(d)["checkpoints"]
    # window = min(60 - 45, 45) min = 900 s: 266.7 GB * 8 / 900 s = 2.37 Gbps
    assert row.required_gbps == pytest.approx(2.370370, rel=1e-5)
    assert row.meets  # 5 Gbps: 45 min + 15 min = 1 h


def test_rpo_below_interval_plus_rtc_lag_is_not_met(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["checkpoints"]["rpo"] = "50m"
    row = _rows(design(parse_plan(example_raw)))["checkpoints"]
    assert row.estimated_rpo_s == pytest.approx(3600) and not row.meets


def test_plain_crr_guarantees_nothing(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["datasets"]["replication"] = "crr"
    row = _rows(design(parse_plan(example_raw)))["datasets"]
    assert row.estimated_rpo_s is None and not row.meets


def test_forced_pattern_and_warm_fraction(example_raw: dict[str, Any]) -> None:
    example_raw["clusters"]["train"]["pattern"] = "warm-standby"
    d = design(parse_plan(example_raw))
    train = next(p for p in d.pools if p.name == "train")
    assert train.pattern == "warm-standby" and train.standing == 4  # ceil(16 * 0.25)


@pytest.mark.parametrize(
    ("reserve", "pattern", "guaranteed"),
    [
        # Without a reservation warm standby's missing nodes wait for on-demand GPUs like pilot
        # light's (1h55m): only every node standing meets 1 h (before: warm standby, 45m33s).
        (False, "active-active", True),
        # Reserved, the missing nodes only boot (25m33s), but a reservation bills every node
        # whether it runs or not: running them all costs the same and skips the boot.
        (True, "active-active", True),
    ],
)
def test_strict_rto_picks_faster_pattern(
    example_raw: dict[str, Any], reserve: bool, pattern: str, guaranteed: bool
) -> None:
    example_raw["clusters"]["train"]["rto"] = "1h"
    example_raw["sites"]["usw2"]["reserve_capacity"] = reserve
    train = next(p for p in design(parse_plan(example_raw)).pools if p.name == "train")
    assert (train.pattern, train.guaranteed) == (pattern, guaranteed)


def test_impossible_rto_is_reported(example_raw: dict[str, Any]) -> None:
    example_raw["services"]["chat"]["rto"] = "2m"
    d = design(parse_plan(example_raw))
    chat = _rows(d)["svc-chat"]
    assert not chat.meets and chat.pattern == "active-active"
    assert any("no pattern meets the RTO" in n for n in chat.notes)


def test_cost_lines_are_quantity_times_price() -> None:
    d = design(load_plan(EXAMPLE))
    standing = [x for x in d.cost.lines if x.dr and x.category == "gpu"]
    # chat runs active-active: 4 p5.48xlarge around the clock at the DR site
    assert [x.item for x in standing] == ["svc-chat: p5.48xlarge standing (active-active)"]
    assert standing[0].monthly_usd == pytest.approx(4 * HOURS_PER_MONTH * 55.04)
    assert d.cost.total(dr_only=True) == pytest.approx(
        sum(x.monthly_usd for x in d.cost.lines if x.dr)
    )
    assert all(x.source for x in d.cost.lines), "every price names its source"


def test_reserved_capacity_is_billed(example_raw: dict[str, Any]) -> None:
    example_raw["sites"]["usw2"]["reserve_capacity"] = True
    d = design(parse_plan(example_raw))
    train = next(p for p in d.pools if p.name == "train")
    reserved = [x for x in d.cost.lines if x.item.startswith("train:")]
    assert train.reserved and reserved[0].quantity == 16 * HOURS_PER_MONTH
    # no capacity wait with a reservation: 300 + 600 + 33.3 + 600
    pilot = next(o for o in train.options if o.pattern == "pilot-light")
    assert pilot.estimated_rto_s == pytest.approx(1533.33, abs=0.01)
    # A reservation bills every node whether it runs or not, so running them costs nothing
    # more: active-active is as cheap as pilot light and faster, and the planner takes it.
    assert {o.monthly_usd for o in train.options} == {reserved[0].monthly_usd}
    assert train.pattern == "active-active"


def test_direct_connect_link_is_sized(example_raw: dict[str, Any]) -> None:
    example_raw["sites"]["usw2"]["link"] = {
        "kind": "direct-connect",
        "location": "EqSe2",
        "secondary_location": "CSOW",
    }
    d = design(parse_plan(example_raw))
    path = d.paths["use1->usw2:direct-connect"]
    # the dual-written weights: 0.333 Gbps x 1.25 fits two diverse 1 Gbps ports
    assert path.ports is not None and (path.ports.port_gbps, path.ports.ports) == (1, 2)
    assert path.capacity_gbps >= path.needed_gbps


# --- regressions found in review ---------------------------------------------------------------


def test_alternatives_time_backup_restore_without_a_standing_control_plane(
    example_raw: dict[str, Any],
) -> None:
    """One service forced to pilot light keeps the control plane up, so the other service's
    backup/restore option skips infrastructure; the "everything backup/restore" alternative
    must not reuse that and claim a pass."""
    example_raw.pop("clusters")
    example_raw["clusters"] = {"serve": {"gpu": "h100", "nodes": 2, "rto": "8h"}}
    example_raw["services"] = {
        "api": {
            "cluster": "serve",
            "gpu": "h100",
            "nodes": 2,
            "rto": "3h",
            "pattern": "pilot-light",
        },
        "batch": {"cluster": "serve", "gpu": "h100", "nodes": 2, "rto": "2h"},
    }
    d = design(parse_plan(example_raw))
    b = next(p for p in d.pools if p.name == "svc-batch")
    backup = next(o for o in b.options if o.pattern == "backup-restore")
    assert backup.estimated_rto_s == pytest.approx(6780) and backup.meets  # 300+6000+120+300+60
    # with no control plane standing: + 1200 s of infrastructure = 7980 s > 2 h
    assert d.alternatives["backup-restore"] == (0.0, False)


def test_rpo_budget_below_the_lag_bound_says_so(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["checkpoints"]["rpo"] = "50m"
    row = _rows(design(parse_plan(example_raw)))["checkpoints"]
    assert any(n.startswith("no bandwidth can meet this") for n in row.notes), row.notes


def test_a_service_without_weights_has_no_rpo_to_judge(example_raw: dict[str, Any]) -> None:
    """A service's RPO is the age of the weights it serves at the DR site: without weights from
    its site gpudr protects none of its data. Its default RPO is not applicable (before: an RPO
    no plan could ever meet); a stated one is refused (spec tests)."""
    example_raw["data"].pop("weights")
    example_raw["services"]["chat"].pop("rpo")
    chat = _rows(design(parse_plan(example_raw)))["svc-chat"]
    assert chat.rpo_s is None and chat.estimated_rpo_s is None and chat.meets
    assert any(
        n.startswith("RPO not applicable: the plan replicates no model weights from use1")
        for n in chat.notes
    )


def test_locked_weight_versions_are_stored(example_raw: dict[str, Any]) -> None:
    d = design(parse_plan(example_raw))
    replica = next(x for x in d.cost.lines if x.item == "weights replica (STANDARD)")
    # 4 publishes a month for 365 days of compliance lock: 48 versions of 150 GB
    assert replica.quantity == pytest.approx(150 * 4 * 365 / (365 / 12))


def test_every_site_pays_for_its_nat() -> None:
    d = design(load_plan(EXAMPLE))
    nat = [(x.site, x.dr) for x in d.cost.lines if x.item == "NAT gateway"]
    assert nat == [("use1", False), ("usw2", True)]


def test_one_interface_endpoint_per_receiving_site(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["datasets"].update(rpo=0, replication="dual-write")
    d = design(parse_plan(example_raw))
    endpoint = [x for x in d.cost.lines if x.item.startswith("S3 interface endpoint")]
    assert [(x.site, x.quantity) for x in endpoint] == [("usw2", 2 * HOURS_PER_MONTH)]


def test_pool_and_workload_names_follow_one_rule() -> None:
    """A service's pool is `svc-<name>` and a cluster's is its own name, at the primary (stack
    config) and at the DR site (design); each DR pool's verdict row is its `workload_name`."""
    from gpudr.build.stackconfig import build_site_configs

    plan = load_plan(EXAMPLE)
    d = design(plan)
    assert {c.pool_name for c in plan.clusters.values()} == set(plan.clusters)
    assert {s.pool_name for s in plan.services.values()} == {f"svc-{s}" for s in plan.services}
    assert plan.services
    wanted = {w.pool_name for w in (*plan.clusters.values(), *plan.services.values())}
    assert {p.name for p in d.pools} == wanted
    primary = next(s for s in plan.sites.values() if s.role == "primary")
    cfg = build_site_configs(d)[primary.name]
    assert {p.name for c in cfg.clusters for p in c.pools} == wanted
    rows = {w.name for w in d.workloads if w.kind != "data"}
    assert {p.workload_name for p in d.pools} == rows
    assert {p.workload_name for p in d.pools if p.kind == "training"} == {
        f"cluster-{c}" for c in plan.clusters
    }


def test_reserve_capacity_where_the_cloud_cannot_reserve_the_gpu_bills_and_declares_nothing() -> (
    None
):
    """Azure has no capacity reservation for ND-series: reserve_capacity there must not price
    (or deploy) a reservation that makes no GPU certain; the note says what to do instead."""
    import yaml

    from gpudr.build.stackconfig import build_site_configs
    from tests.conftest import ROOT

    raw = yaml.safe_load((ROOT / "examples" / "azure-two-region.yaml").read_text())
    plain = design(parse_plan(raw))
    raw["sites"]["wus"]["reserve_capacity"] = True
    reserved = design(parse_plan(raw))
    assert reserved.cost.total(dr_only=True) == pytest.approx(plain.cost.total(dr_only=True))
    assert not [x for x in reserved.cost.lines if "reserved" in x.item]
    assert not any(
        p.reserved for c in build_site_configs(reserved)["wus"].clusters for p in c.pools
    )
    notes = [n for p in reserved.pools for n in p.notes]
    assert any("reserves, bills and makes certain nothing" in n for n in notes), notes
