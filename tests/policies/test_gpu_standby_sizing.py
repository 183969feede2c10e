"""gpu-standby-sizing: DR pools' scaling bounds per pattern, on EKS, GKE and AKS."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import EnforcementLevel

from gpudr.contract.tags import gcp_labels
from policies.common import AKS_AGENT_POOL, EKS_NODE_GROUP, GKE_NODE_POOL
from policies.gpu_standby_sizing import gpu_standby_sizing
from tests.policies.harness import Res, check, run_resource


def pool_tags(pattern: str, nodes: int = 16, **extra: str) -> dict[str, str]:
    out = {
        "gpudr:dr-role": "gpu-pool",
        "gpudr:site-role": "dr",
        "gpudr:pattern": pattern,
        "gpudr:nodes": str(nodes),
    }
    out.update({f"gpudr:{k.replace('_', '-')}": v for k, v in extra.items()})
    return out


def pool(cloud: str, low: float, high: float, t: dict[str, str]) -> Res:
    """A node pool with floor `low` and ceiling `high`, as each cloud's component declares it."""
    if cloud == "aws":
        props: dict[str, Any] = {
            "scalingConfig": {"minSize": low, "maxSize": high, "desiredSize": low},
            "tags": t,
        }
        return Res(EKS_NODE_GROUP, "train-nodes", props)
    if cloud == "gcp":
        props = {
            "autoscaling": {"totalMinNodeCount": low, "totalMaxNodeCount": high},
            "nodeConfig": {"resourceLabels": gcp_labels(t)},
        }
        return Res(GKE_NODE_POOL, "train-nodes", props)
    props = {"enableAutoScaling": True, "minCount": low, "maxCount": high, "count": low, "tags": t}
    return Res(AKS_AGENT_POOL, "train-pool", props)


CASES = [
    pytest.param(0, 16, pool_tags("pilot-light"), None, id="pilot-light-0-to-16"),
    pytest.param(16, 16, pool_tags("pilot-light"), None, id="pilot-light-failed-over"),
    pytest.param(0, 8, pool_tags("pilot-light"), "short of the primary's 16", id="ceiling-8"),
    pytest.param(2, 16, pool_tags("pilot-light"), "keeps 2 GPU nodes", id="pilot-light-floor-2"),
    pytest.param(
        4, 16, pool_tags("warm-standby", warm_fraction="0.25"), None, id="warm-25pct-of-16"
    ),
    pytest.param(
        3, 16, pool_tags("warm-standby", warm_fraction="0.25"), "below the 4", id="warm-3-of-4"
    ),
    pytest.param(4, 16, pool_tags("warm-standby"), None, id="warm-default-20pct-is-4"),
    pytest.param(
        1, 5, pool_tags("warm-standby", 5, warm_fraction="0.1"), None, id="warm-at-least-one"
    ),
    pytest.param(4, 4, pool_tags("active-active", 4), None, id="active-active-full"),
    pytest.param(2, 4, pool_tags("active-active", 4), "keeps only 2 of 4", id="aa-half"),
    pytest.param(
        16, 16, {**pool_tags("pilot-light"), "gpudr:site-role": "primary"}, None, id="primary"
    ),
    pytest.param(0, 16, {"gpudr:dr-role": "cluster"}, None, id="not-a-gpu-pool"),
    pytest.param(
        0,
        16,
        {k: v for k, v in pool_tags("pilot-light").items() if k != "gpudr:nodes"},
        "without the gpudr:nodes tag",
        id="no-nodes-tag",
    ),
]


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
@pytest.mark.parametrize(("low", "high", "t", "expected"), CASES)
def test_bounds(
    cloud: str, low: float, high: float, t: dict[str, str], expected: str | None
) -> None:
    resource = pool(cloud, float(low), float(high), t)
    check(run_resource(gpu_standby_sizing, resource), resource, expected)


def test_gke_per_zone_limits_count_every_zone() -> None:
    resource = pool("gcp", 0, 0, pool_tags("pilot-light"))
    resource.inputs["autoscaling"] = {"minNodeCount": 0.0, "maxNodeCount": 8.0}
    resource.inputs["nodeLocations"] = ["us-east4-a", "us-east4-b"]
    check(run_resource(gpu_standby_sizing, resource), resource, None)
    resource.inputs["nodeLocations"] = ["us-east4-a"]
    check(run_resource(gpu_standby_sizing, resource), resource, "can grow to 8 nodes")


def test_aks_without_autoscaling_is_fixed_at_its_count() -> None:
    resource = pool("azure", 0, 16, pool_tags("pilot-light"))
    resource.inputs.update(enableAutoScaling=False, count=16.0)
    check(run_resource(gpu_standby_sizing, resource), resource, None)
    resource.inputs["count"] = 2.0  # short of 16, and standing GPUs a pilot light should not keep
    messages = [m for m, _ in run_resource(gpu_standby_sizing, resource)]
    assert len(messages) == 2 and "can grow to 2 nodes" in messages[0], messages


def test_is_advisory() -> None:
    assert gpu_standby_sizing.enforcement_level is EnforcementLevel.ADVISORY


def test_gke_without_autoscaling_is_fixed_at_its_node_count() -> None:
    resource = pool("gcp", 0, 0, pool_tags("active-active", 4))
    resource.inputs.pop("autoscaling")
    resource.inputs["nodeCount"] = 4.0
    check(run_resource(gpu_standby_sizing, resource), resource, None)
