"""The planner and the policy pack agree on every replicated data class, over random plans on all
seven cloud pairs.

Each plan is designed by the planner (`gpudr.core.design`), deployed offline by the real Pulumi
program under mocks (both stacks, the DR stack with what its primary exported), and every stack
goes through the pack's two replication policies as the engine calls them. The planner's
verdict on a class's replication (its estimated RPO within the target, its path within capacity
with headroom) must be the pack's: no replication violation on any copy of that class.

Both sides size with the same functions (`gpudr.core.sizing`); the pack only sees the facts the
buckets carry as tags. A disagreement here is a "met" the pack would refuse, or a refusal the
plan cannot explain.
"""

from __future__ import annotations

import copy
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudr.app.offline.plan import run_design
from gpudr.core.design import Design, design
from gpudr.core.spec import parse_plan
from policies.common import data_class
from policies.replication_bandwidth import replication_bandwidth
from policies.replication_meets_rpo import replication_meets_rpo
from tests.policies.harness import policy_resources, run_stack_records

pytestmark = pytest.mark.slow

# A primary and a DR site per cloud, in regions whose GPU offers gpudr's catalog knows.
PRIMARY = {
    "aws": {"cloud": "aws", "region": "us-east-1", "account": "111122223333",
            "cidr": "10.10.0.0/16", "azs": ["us-east-1a", "us-east-1b"]},
    "gcp": {"cloud": "gcp", "region": "us-central1", "project": "acme-prop-prod",
            "cidr": "10.40.0.0/16", "azs": ["us-central1-a", "us-central1-b"]},
    "azure": {"cloud": "azure", "region": "eastus", "cidr": "10.70.0.0/16", "azs": ["1", "2"]},
}  # fmt: skip
DR = {
    "aws": {"cloud": "aws", "region": "us-west-2", "cidr": "10.26.0.0/16",
            "azs": ["us-west-2a", "us-west-2b"]},
    "gcp": {"cloud": "gcp", "region": "us-east4", "project": "acme-prop-dr",
            "cidr": "10.56.0.0/16", "azs": ["us-east4-a", "us-east4-b"]},
    "azure": {"cloud": "azure", "region": "westus", "cidr": "10.86.0.0/16", "azs": ["1", "2"]},
}  # fmt: skip
# The pairs gpudr deploys, and the mechanisms a plan may name on each besides auto/dual-write.
PAIRS = {
    ("aws", "aws"): ["crr-rtc", "crr"],
    ("gcp", "gcp"): ["gcs-turbo", "gcs-dual-region", "sts"],
    ("azure", "azure"): ["azure-or"],
    ("aws", "gcp"): ["sts"],
    ("gcp", "aws"): ["datasync"],
    ("azure", "gcp"): ["sts"],
    ("aws", "azure"): ["azcopy"],
}
MINUTES = [15, 30, 45, 60, 90, 120, 240]


def _duration(minutes: int) -> str:
    return f"{minutes}m"


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    pair = draw(st.sampled_from(sorted(PAIRS)))
    mechanisms = ["auto", "dual-write", *PAIRS[pair]]
    dr = dict(DR[pair[1]], role="dr", protects="prim")
    if pair == ("aws", "aws") and draw(st.booleans()):
        dr["link"] = {"kind": "direct-connect", "location": "EqDC2"}
        if draw(st.booleans()):  # sized for the loss of a location, as the pack checks it
            dr["link"]["secondary_location"] = "EqSe2"
    plan: dict[str, Any] = {
        "name": "prop",
        "sites": {"prim": dict(PRIMARY[pair[0]], role="primary"), "dr": dr},
        "quotas": {
            "s3_rtc_gbps": draw(st.sampled_from([1, 2, 5, 10])),
            "sts_gbps": draw(st.sampled_from([0.5, 1, 5, 10])),
            "datasync_gbps": draw(st.sampled_from([0.5, 1, 5, 10])),
            "gcs_turbo_gbps": draw(st.sampled_from([0.5, 1, 5, 10])),
            "gcs_dual_region_gbps": draw(st.sampled_from([0.5, 1, 5, 10])),
            "azcopy_gbps": draw(st.sampled_from([0.5, 1, 5, 10])),
        },
        "data": {},
    }
    if draw(st.booleans()):
        interval = draw(st.sampled_from(MINUTES[:5]))
        slack = draw(st.sampled_from([5, 15, 30, 60, 180, 480, None]))
        plan["data"]["checkpoints"] = {
            "size": f"{draw(st.integers(50, 20_000))}GB",
            "interval": _duration(interval),
            "dedup_ratio": draw(st.sampled_from([0, 0.3, 0.6, 0.9])),
            "compression_ratio": draw(st.sampled_from([1, 2, 3])),
            "rpo": "none" if slack is None else _duration(interval + slack),
            "replication": draw(st.sampled_from(mechanisms)),
        }
    if draw(st.booleans()):
        rpo = draw(st.sampled_from(["0", "15m", "1h", "6h", "none"]))
        plan["data"]["weights"] = {
            "size": f"{draw(st.integers(10, 2_000))}GB",
            "publish_window": draw(st.sampled_from(["30m", "1h", "2h"])),
            "rpo": rpo,
            "replication": "dual-write" if rpo == "0" else draw(st.sampled_from(mechanisms)),
        }
    if draw(st.booleans()) or not plan["data"]:
        size = draw(st.integers(1, 500))
        plan["data"]["datasets"] = {
            "size": f"{size}TB",
            "daily_change": f"{draw(st.integers(0, size * 100))}GB",
            "rpo": draw(st.sampled_from(["1h", "6h", "24h", "none"])),
            "replication": draw(st.sampled_from(mechanisms)),
        }
        if draw(st.booleans()):
            # A bulk refresh: its burst and period reach the pack as burst-bytes and interval-s.
            plan["data"]["datasets"]["refresh"] = {
                "size": f"{draw(st.integers(1, size * 10)) * 100}GB",
                "every": draw(st.sampled_from(["12h", "1d", "7d", "30d"])),
            }
    if draw(st.integers(0, 3)) == 0:
        # A GPU cluster adds the DR link even without dual writes, and its pools.
        plan["clusters"] = {"train": {"gpu": "h100", "nodes": 2, "rto": "8h"}}
    return plan


def _pack_refused(stacks: list[dict[str, Any]]) -> set[str]:
    """The data classes with a replication violation on any of their copies."""
    refused: set[str] = set()
    for stack in stacks:
        resources = policy_resources(stack["resources"])
        by_urn = {r.urn: r for r in resources}
        for policy in (replication_meets_rpo, replication_bandwidth):
            for message, urn in run_stack_records(policy, stack["resources"]):
                facts = data_class(by_urn[urn]) if urn in by_urn else message
                assert not isinstance(facts, str), (stack["name"], message)
                refused.add(facts.data_class)
    return refused


def _on_the_edge(raw: dict[str, Any], d: Design, data: st.DataObject) -> dict[str, Any]:
    """The plan moved onto the planner's own boundaries, where a small difference between the
    two sides' arithmetic would flip one verdict: each class's RPO a second either side of (or
    at) its estimate, and each rate quota at its path's need with headroom."""
    edge = copy.deepcopy(raw)
    for f in d.flows:
        est = f.estimate.estimated_s
        spec = edge["data"][f.data_class]
        if est is not None and math.isfinite(est) and data.draw(st.booleans()):
            floor = f.flow.base_rpo_s + 1  # the spec refuses an RPO within the interval
            rpo = max(floor, math.ceil(est) + data.draw(st.sampled_from([-1, 0, 1])))
            spec["rpo"] = f"{rpo}s"
            if spec.get("replication") == "auto":
                spec["replication"] = f.mechanism  # keep what was chosen at the old RPO
    for path in d.paths.values():
        key = QUOTA_OF_PATH.get(path.kind)
        if key and path.required_gbps and data.draw(st.booleans()):
            mbps = path.needed_gbps * 1000 * data.draw(st.sampled_from([0.999, 1.0, 1.001]))
            edge["quotas"][key] = f"{max(mbps, 0.001):.3f}Mbps"
    return edge


QUOTA_OF_PATH = {
    "s3-rtc": "s3_rtc_gbps",
    "sts": "sts_gbps",
    "datasync": "datasync_gbps",
    "gcs-turbo": "gcs_turbo_gbps",
    "gcs-dual-region": "gcs_dual_region_gbps",
}


def _verdicts(raw: dict[str, Any]) -> tuple[Design, dict[str, bool], dict[str, bool]]:
    """(the design, the planner's verdict per class, the pack's)."""
    d = design(parse_plan(raw))
    planner = {f.data_class: d.replication_meets(f) for f in d.flows}
    refused = _pack_refused(run_design(d))
    return d, planner, {cls: cls not in refused for cls in planner}


@settings(
    max_examples=int(os.environ.get("GPUDR_PROPERTY_EXAMPLES", "200")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plans(), st.data())
def test_the_planner_and_the_pack_agree_on_every_replicated_class(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    d = design(parse_plan(raw))
    if data.draw(st.booleans()):
        raw = _on_the_edge(raw, d, data)
    d, planner, pack = _verdicts(raw)
    assert pack == planner, {
        "plan": raw,
        "planner": planner,
        "pack": pack,
        "notes": {f.data_class: f.notes for f in d.flows},
    }
