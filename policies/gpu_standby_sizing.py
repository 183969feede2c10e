"""gpu-standby-sizing (advisory): a DR site's GPU pools can reach the primary's capacity, and
keep standing no more and no less than their recovery pattern says.

Each pool carries the primary's capacity (`gpudr:nodes`), its pattern and, for a warm standby,
its floor fraction (`gpudr:warm-fraction`) as tags. Against the registered scaling bounds:

- the ceiling is at least `nodes`, always: a pool that cannot reach full size fails over short;
- pilot light keeps 0 GPU nodes (idle GPUs are the cost pilot light exists to avoid), unless
  the pool is at full capacity (min >= nodes: the failover shape);
- warm standby keeps at least ceil(nodes x warm fraction) (gpudr.sizing.standing_nodes), or
  its RTO estimate does not hold;
- active-active runs at full capacity.

Advisory: a wrong floor costs money or RTO, not data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from gpudr.core import sizing

from .common import (
    AKS_AGENT_POOL,
    EKS_NODE_GROUP,
    GKE_NODE_POOL,
    canonical_type,
    config_schema,
    exempting,
    get,
    gpudr_tag,
    is_true,
    items,
    number,
    policy_config,
    tag_is,
)

DEFAULT_WARM_FRACTION = sizing.default_warm_fraction()

SCHEMA = config_schema()


def bounds(resource_type: str, props: Mapping[str, Any]) -> tuple[float, float] | None:
    """(floor, ceiling) node counts of a node pool as registered; None when not readable."""
    low: float | None
    high: float | None
    if resource_type == EKS_NODE_GROUP:
        low = number(get(props, "scalingConfig", "minSize"))
        high = number(get(props, "scalingConfig", "maxSize"))
    elif resource_type == GKE_NODE_POOL:
        auto = props.get("autoscaling")
        if auto is None:  # a fixed size
            low = high = number(props.get("nodeCount"))
        elif get(auto, "totalMaxNodeCount") is not None:
            low = number(get(auto, "totalMinNodeCount"))
            high = number(get(auto, "totalMaxNodeCount"))
        else:
            # Per-zone limits: the pool has them in each of its node locations.
            zones = max(1, len(items(props.get("nodeLocations"))))
            per_low = number(get(auto, "minNodeCount"))
            per_high = number(get(auto, "maxNodeCount"))
            low = None if per_low is None else per_low * zones
            high = None if per_high is None else per_high * zones
    elif resource_type == AKS_AGENT_POOL:
        if is_true(props.get("enableAutoScaling")):
            low, high = number(props.get("minCount")), number(props.get("maxCount"))
        else:
            low = high = number(props.get("count"))
    else:
        return None
    if high is None:
        return None
    return (low or 0.0, high)


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args), args.urn)
    t, props = canonical_type(args.resource_type), args.props
    if t not in (EKS_NODE_GROUP, GKE_NODE_POOL, AKS_AGENT_POOL):
        return
    if not tag_is(t, props, "dr-role", "gpu-pool") or not tag_is(t, props, "site-role", "dr"):
        return
    nodes = number(gpudr_tag(t, props, "nodes"))
    pattern = gpudr_tag(t, props, "pattern") or ""
    where = f"{args.name} ({t})"
    if nodes is None:
        report(
            f"{where} is a DR GPU pool without the gpudr:nodes tag (the primary's capacity), so "
            "its ceiling cannot be checked: regenerate the stack with `gpudr generate`.",
            None,
        )
        return
    found = bounds(t, props)
    if found is None:
        report(
            f"{where} has no readable scaling bounds: declare its minimum and maximum node "
            "counts (EKS scaling_config, GKE autoscaling total_min/max_node_count, AKS "
            "min_count/max_count).",
            None,
        )
        return
    low, high = found
    if high < nodes:
        report(
            f"{where} can grow to {high:g} nodes, short of the primary's {nodes:g}: a failover "
            f"runs at {high / nodes:.0%} capacity. Raise its maximum to {nodes:g}.",
            None,
        )
    if pattern == "pilot-light" and 0 < low < nodes:
        report(
            f"{where} is a pilot light that keeps {low:g} GPU nodes running: pilot light keeps "
            "0 (the control plane only) and scales at failover. Set its minimum to 0, or "
            "choose warm-standby for the site if the RTO needs standing nodes.",
            None,
        )
    elif pattern == "warm-standby":
        fraction = number(gpudr_tag(t, props, "warm-fraction")) or DEFAULT_WARM_FRACTION
        floor = sizing.standing_nodes("warm-standby", int(nodes), fraction)
        if low < floor:
            report(
                f"{where} is a warm standby keeping {low:g} nodes, below the {floor} "
                f"(ceil({nodes:g} x {fraction:g})) its RTO estimate assumes: raise its minimum "
                f"to {floor}, or lower warm_fraction in the plan and accept the longer RTO.",
                None,
            )
    elif pattern == "active-active" and low < nodes:
        report(
            f"{where} is active-active but keeps only {low:g} of {nodes:g} nodes: set its "
            f"minimum to {nodes:g}.",
            None,
        )


gpu_standby_sizing = ResourceValidationPolicy(
    name="gpu-standby-sizing",
    description=(
        "DR GPU node pools (EKS, GKE, AKS; gpudr:dr-role gpu-pool at a site-role dr site) can "
        "scale to the primary's node count, and their floor matches the pattern: 0 for pilot "
        "light, ceil(nodes x warm fraction) for warm standby, full size for active-active."
    ),
    validate=_validate,
    config_schema=SCHEMA,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    remediation_steps=(
        "Set the pool's maximum to the gpudr:nodes tag and its minimum by pattern (pilot light "
        "0; warm standby ceil(nodes x warm_fraction); active-active nodes), or change the "
        "pattern/warm_fraction in the plan and regenerate: gpudr's components size pools from "
        "the plan (gpudr/contract/site.py `pool_size`)."
    ),
    tags=["capacity", "cost", "rto"],
)
