"""A drill's setup from the design: its stack config, the plan's `drill:` section, the stages with
their targets and runbook steps, its cost, and when an orphaned drill expires."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gpudr.build import drill as bd
from gpudr.contract import drill as cd
from gpudr.core.design import design
from gpudr.core.enums import DRILL_MAX_TTL_S
from gpudr.core.spec import PlanError, load_plan, parse_plan
from gpudr.docs.onprem_runbook import build_onprem_runbook
from gpudr.docs.runbook import build_runbook
from tests.conftest import EXAMPLE, ROOT
from tests.gpudr.drills import NOW, example_design, setup


def test_config_is_the_dr_stacks_in_drill_mode() -> None:
    s = setup()
    config = s.config("capacity")
    assert config["aws:region"] == "us-west-2"
    assert config["gpudr:site"]["site"] == "usw2"
    assert config["gpudr:mode"] == "drill"
    assert config["gpudr:drill"]["phase"] == "capacity"
    assert config["gpudr:drill"]["nodes"] == {"train": 1, "svc-chat": 1}
    assert s.stack_tags() == {
        "gpudr:drill": "drill-usw2-20250131t031200z",
        "gpudr:expires-at": "20250131T071200Z",
    }


def test_primary_or_unknown_site_is_refused() -> None:
    with pytest.raises(bd.DrillError, match=r'"use1" is a primary site.*use one of usw2'):
        bd.build_drill(example_design(), "use1", NOW)
    with pytest.raises(bd.DrillError, match=r'"nope" is not a site of plan llm-training'):
        bd.build_drill(example_design(), "nope", NOW)


def test_drill_section_defaults_and_overrides(example_raw: dict[str, Any]) -> None:
    plan = parse_plan(example_raw)
    assert (plan.drill.nodes, plan.drill.ttl_s, plan.drill.verify_b) == (1, 14400, 2e9)
    example_raw["drill"] = {
        "nodes": 2,
        "pools": {"train": 4},
        "ttl": "2h",
        "verify": "10GB",
        "cidr": "10.99.0.0/16",
    }
    plan = parse_plan(example_raw)
    assert plan.drill.pool_nodes("train") == 4 and plan.drill.pool_nodes("svc-chat") == 2
    s = bd.build_drill(design(plan), "usw2", NOW)
    assert s.drill.nodes == {"train": 4, "svc-chat": 2}
    assert (s.drill.ttl_s, s.verify_b, s.drill.cidr) == (7200, 1e10, "10.99.0.0/16")


@pytest.mark.parametrize(
    ("drill", "message"),
    [
        ({"nodes": 0}, "drill.nodes: 0 is not a whole number of at least 1"),
        ({"nodes": 5}, "drill.nodes: 5 is more than chat's 4 node(s)"),
        ({"pools": {"nope": 1}}, "drill.pools.nope: is not a cluster or service of this plan"),
        ({"pools": {"chat": 9}}, "drill.pools.chat: 9 is more than chat's 4 node(s)"),
        ({"ttl": "10m"}, "drill.ttl: 10m is outside 30m..1d"),
        ({"ttl": "2d"}, "drill.ttl: 2d is outside 30m..1d"),
        ({"cidr": "8.8.0.0/16"}, "drill.cidr: "),
        ({"speed": 1}, "drill.speed: unknown field"),
    ],
)
def test_bad_drill_section_names_field_and_fix(
    example_raw: dict[str, Any], drill: dict[str, Any], message: str
) -> None:
    example_raw["drill"] = drill
    with pytest.raises(PlanError) as exc:
        parse_plan(example_raw)
    assert any(str(e).startswith(message) for e in exc.value.errors), exc.value.errors


def test_stages_in_runbook_order_with_the_designs_targets() -> None:
    s = setup()
    r = load_plan(EXAMPLE).recovery
    assert [x.key for x in s.stages] == ["infrastructure", "checkpoint", "capacity", "data-age"]
    assert s.stage("infrastructure").target_s == r.infra_create_s
    ckpt = next(f for f in example_design().flows if f.data_class == "checkpoints")
    assert ckpt.estimated_rto_s is not None
    assert s.stage("checkpoint").target_s == ckpt.estimated_rto_s - r.detection_s
    assert s.stage("capacity").target_s == r.gpu_node_boot_s + r.gpu_capacity_wait_s
    numbers = [x.runbook_step for x in s.stages if x.runbook_step]
    assert numbers == sorted(numbers) and len(numbers) == 2
    assert {x.key.split(":")[0] for x in s.not_run} == {"training", "service", "traffic"}
    judged = {t.data_class: t.judged for t in s.data}
    assert judged == {"checkpoints": True, "datasets": True, "weights": False}


@pytest.mark.parametrize(
    "example", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.stem
)
def test_stage_step_numbers_and_titles_are_the_runbooks(example: Any) -> None:
    d = design(load_plan(example))
    for site in (s for s in d.plan.sites.values() if s.role == "dr"):
        s = bd.build_drill(d, site.name, NOW)
        rb: Any = (
            build_onprem_runbook(d, d.plan.onprem[s.primary], site)
            if s.primary in d.plan.onprem
            else build_runbook(d, s.primary, site.name)
        )
        numbers = {x.key: x.number for x in rb.steps}
        assert s.stage("checkpoint").runbook_step == numbers.get("data:checkpoints")
        assert s.stage("capacity").runbook_step == numbers.get("capacity")
        if "data:checkpoints" in numbers and s.stage("checkpoint").runs:
            assert s.stage("checkpoint").target_s == rb.step("data:checkpoints").expected_s
        # Every failover step a drill cannot run, as the runbook numbers, titles and times it.
        listed = [(x.runbook_step, x.key, x.title, x.target_s) for x in s.not_run]
        assert listed == [
            (x.number, x.key, x.title, x.expected_s)
            for x in rb.phase("failover")
            if x.key.startswith(("training:", "service:", "traffic:"))
        ]


def test_cost_is_test_nodes_and_control_plane_for_the_ttl() -> None:
    s = setup()
    # 2 pools x 1 p5.48xlarge at $55.04, the EKS control plane at $0.10, a NAT gateway at
    # $0.045 and its public IPv4 address at $0.005 per hour, for the 4 h TTL (README: $440.92).
    assert s.cost.ttl_usd == pytest.approx((2 * 55.04 + 0.10 + 0.045 + 0.005) * 4)
    assert s.cost.for_seconds(1800) == pytest.approx(s.cost.hourly_usd / 2)
    azure = bd.build_drill(design(load_plan(ROOT / "examples/azure-two-region.yaml")), "wus", NOW)
    assert any("Standard_D4s_v5" in u for u in azure.cost.unpriced)  # said, not guessed


def test_expiry_from_the_tag_else_the_name_plus_the_longest_ttl() -> None:
    name = "drill-usw2-20250131T031200Z"
    assert bd.expiry(name, {"gpudr:expires-at": "20250131T051200Z"})[0] == NOW + timedelta(hours=2)
    when, source = bd.expiry(name, {})
    assert when == NOW + timedelta(days=1) and "longest TTL" in source
    with pytest.raises(cd.DrillNameError):
        bd.expiry("llm-training-usw2", {})


@pytest.mark.parametrize(
    ("tag", "why"),
    [
        ("99991231T235959Z", "beyond the longest TTL"),  # a tag must not keep a drill for ever
        ("20250131T031159Z", "before the stack's creation"),
        ("2025-13-01", "unreadable"),
    ],
)
def test_a_tag_never_keeps_a_drill_past_its_name_plus_the_longest_ttl(tag: str, why: str) -> None:
    when, source = bd.expiry("drill-usw2-20250131T031200Z", {"gpudr:expires-at": tag})
    assert when == NOW + timedelta(seconds=DRILL_MAX_TTL_S) == NOW + timedelta(days=1)
    assert why in source and "created 2025-01-31T03:12:00Z + the longest TTL (1d)" in source
