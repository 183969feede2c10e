"""AWS primary -> GCP DR over Cross-Cloud Interconnect (examples/aws-to-gcp-dedicated.yaml), through
the real program under mocks and the policy pack: the example passes the pack; a spec whose
dual-write need exceeds the most connections gpudr plans is not met and the pack refuses the
link as registered; without the link's places the plan stays on HA VPN, not met, and says
what to add, and the pack refuses that HA VPN."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
import yaml

from gpudr.app.offline.plan import run_design
from gpudr.core.design import Design, design
from gpudr.core.enums import LinkKind
from gpudr.core.spec import parse_plan
from tests.conftest import PACK_CONFIG, ROOT
from tests.policies.harness import evaluate_pack

EXAMPLE: dict[str, Any] = yaml.safe_load(
    (ROOT / "examples" / "aws-to-gcp-dedicated.yaml").read_text()
)


def _design(**checkpoints: Any) -> Design:
    raw = copy.deepcopy(EXAMPLE)
    raw["data"]["checkpoints"].update(checkpoints)
    return design(parse_plan(raw))


@cache
def _stacks(size: str) -> dict[str, list[dict[str, Any]]]:
    return {s["name"]: s["resources"] for s in run_design(_design(size=size))}


def _link_refusals(resources: list[dict[str, Any]]) -> list[str]:
    return [
        message
        for policy, level, _urn, message in evaluate_pack(resources, PACK_CONFIG)
        if policy == "replication-bandwidth" and level == "mandatory"
    ]


@pytest.mark.slow
def test_the_example_link_carries_its_need_and_the_pack_agrees() -> None:
    d = _design()
    path = next(p for p in d.paths.values() if p.kind == LinkKind.CROSS_CLOUD_INTERCONNECT)
    assert d.meets and path.ok and path.capacity_gbps == 20.0
    primary = _stacks("12TB")["llm-xcloud-cci-use1"]
    assert _link_refusals(primary) == []


@pytest.mark.slow
def test_a_need_beyond_the_link_is_not_met_and_the_pack_refuses_it() -> None:
    """400 TB checkpoints every 15 minutes: 474 Gbps of dual writes, more than the most gpudr
    plans (4 x 100 Gbps per edge domain: 400 Gbps with one down)."""
    d = _design(size="400TB")
    path = next(p for p in d.paths.values() if p.kind == LinkKind.CROSS_CLOUD_INTERCONNECT)
    assert not d.meets and not path.ok and path.capacity_gbps == 400.0
    refusals = _link_refusals(_stacks("400TB")["llm-xcloud-cci-use1"])
    assert refusals, "the pack let an undersized Cross-Cloud Interconnect through"
    assert all("Gbps with one edge domain down" in m for m in refusals), refusals
    assert all("400 Gbps with one edge domain down" in m for m in refusals), refusals


@pytest.mark.slow
def test_without_the_link_the_plan_is_not_met_names_the_fix_and_the_pack_agrees() -> None:
    """No `link:`: HA VPN stays (the link's places are the spec's to give), 18.19 Gbps on its
    5: the planner says NOT MET with what to add, the pack refuses the HA VPN it registers."""
    raw = copy.deepcopy(EXAMPLE)
    raw["sites"]["gcpe4"].pop("link")
    d = design(parse_plan(raw))
    assert not d.meets
    notes = [n for w in d.workloads if not w.meets for n in w.notes]
    assert any(
        "add sites.gcpe4.link: {kind: cross-cloud-interconnect, location:" in n for n in notes
    ), notes
    primary = next(s for s in run_design(d) if s["name"] == "llm-xcloud-cci-use1")
    refusals = _link_refusals(primary["resources"])
    assert refusals and all("4 VPN tunnels x 1.25 Gbps" in m for m in refusals), refusals
