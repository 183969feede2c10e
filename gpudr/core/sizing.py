"""Sizing math: replication bandwidth from the RPO, achievable RPO per mechanism, RTO per pattern.

Pure functions over plain numbers (bytes, seconds, Gbps). docs/sizing.md states each formula
with a worked example; tests/gpudr/test_sizing.py checks them against hand-computed cases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpudr.core.units import transfer_seconds

# --- replication bandwidth ------------------------------------------------------------------


def checkpoint_delta_bytes(size_b: float, dedup_ratio: float, compression_ratio: float) -> float:
    """Bytes one checkpoint adds to the replication stream.

    delta = size x (1 - dedup_ratio) / compression_ratio

    dedup_ratio is the share of a checkpoint identical to the previous one (incremental
    checkpoints skip it); compression_ratio is N for N:1.
    """
    return size_b * (1.0 - dedup_ratio) / compression_ratio


def checkpoint_window_s(rpo_s: float, interval_s: float) -> float:
    """Time one checkpoint has to reach the DR site.

    window = min(RPO - interval, interval)

    The worst case loses the interval since the newest checkpoint plus the time that checkpoint
    takes to replicate, so the transfer must finish within RPO - interval; and it must finish
    before the next checkpoint arrives, or a backlog grows without bound.
    """
    return min(rpo_s - interval_s, interval_s)


def required_gbps(size_b: float, window_s: float) -> float:
    """Bandwidth that moves `size_b` within `window_s`: size x 8 / window / 1e9."""
    if size_b <= 0:
        return 0.0
    if window_s <= 0:
        return math.inf
    return size_b * 8 / window_s / 1e9


def with_headroom(gbps: float, factor: float) -> float:
    return gbps * factor


@dataclass(frozen=True)
class Flow:
    """One data class replicating across one site pair through one mechanism."""

    name: str
    mechanism: str
    burst_bytes: float  # bytes that arrive at once: one checkpoint delta, one weights publish
    steady_gbps: float  # long-run average rate this flow puts on the path
    required_gbps: float  # rate this flow needs to meet its RPO
    base_rpo_s: float  # loss replication cannot remove (the checkpoint interval)


def checkpoint_flow(
    mechanism: str,
    size_b: float,
    interval_s: float,
    dedup_ratio: float,
    compression_ratio: float,
    rpo_s: float | None,
) -> Flow:
    delta = checkpoint_delta_bytes(size_b, dedup_ratio, compression_ratio)
    steady = required_gbps(delta, interval_s)
    if rpo_s is None:
        need = steady
    else:
        need = max(steady, required_gbps(delta, checkpoint_window_s(rpo_s, interval_s)))
    return Flow("checkpoints", mechanism, delta, steady, need, interval_s)


def weights_flow(
    mechanism: str, size_b: float, rpo_s: float | None, publish_window_s: float
) -> Flow:
    """Weights are published whole and rarely: no steady load, one burst per publish.

    Dual write: the publish must land in both regions within the publish window.
    Asynchronous: the published copy must reach the DR site within the RPO.
    """
    if mechanism == "dual-write":
        need = required_gbps(size_b, publish_window_s)
    elif rpo_s is None:
        need = 0.0
    else:
        need = required_gbps(size_b, rpo_s)
    return Flow("weights", mechanism, size_b, 0.0, need, 0.0)


def dataset_flow(mechanism: str, daily_change_b: float) -> Flow:
    """Datasets change continuously: the daily change spread over the day."""
    steady = required_gbps(daily_change_b, 86400.0)
    return Flow("datasets", mechanism, 0.0, steady, steady, 0.0)


# --- achievable RPO -------------------------------------------------------------------------


@dataclass(frozen=True)
class RpoEstimate:
    estimated_s: float | None  # None: the mechanism guarantees nothing
    lag_s: float | None
    transfer_s: float
    guaranteed: bool
    reason: str


def achieved_rpo(
    flow: Flow,
    lag_floor_s: float | None,
    synchronous: bool,
    capacity_gbps: float,
    other_steady_gbps: float,
) -> RpoEstimate:
    """Worst-case data loss for `flow` on a path of `capacity_gbps` shared with other flows.

    transfer = burst / (capacity - steady load of the other flows on the path)
    lag      = max(mechanism's guaranteed lag, transfer)     (0 for synchronous dual write)
    RPO      = base (checkpoint interval) + lag

    The vendor's lag guarantee holds only while the burst drains within it; past that the
    estimate is physics (bytes over bandwidth), not a guarantee.
    """
    available = capacity_gbps - other_steady_gbps
    if flow.steady_gbps > available:
        return RpoEstimate(
            math.inf,
            math.inf,
            math.inf,
            False,
            "the path cannot carry the steady rate: the backlog grows without bound",
        )
    transfer = transfer_seconds(flow.burst_bytes, available) if flow.burst_bytes else 0.0
    if synchronous:
        return RpoEstimate(
            flow.base_rpo_s,
            0.0,
            transfer,
            True,
            "synchronous: a write completes only when both copies exist",
        )
    if lag_floor_s is None:
        return RpoEstimate(
            None, None, transfer, False, "the mechanism has no replication-time guarantee"
        )
    lag = max(lag_floor_s, transfer)
    guaranteed = transfer <= lag_floor_s
    reason = (
        "within the mechanism's guaranteed lag"
        if guaranteed
        else "a burst takes longer than the guaranteed lag at this capacity; estimate only"
    )
    return RpoEstimate(flow.base_rpo_s + lag, lag, transfer, guaranteed, reason)


@dataclass(frozen=True)
class Schedule:
    interval_s: int  # the repeat interval the RPO implies
    run_bytes: float  # bytes one run copies
    transfer_s: float  # time one run takes at the available capacity
    estimated_rpo_s: float  # base + interval + transfer
    fits: bool  # False: even the shortest allowed interval misses the RPO


def scheduled_transfer(
    flow: Flow,
    rpo_s: float | None,
    capacity_gbps: float,
    other_steady_gbps: float,
    min_interval_s: int = 3600,
    max_interval_s: int = 86400,
    step_s: int = 3600,
    headroom: float = 1.0,
) -> Schedule:
    """The longest whole-step repeat interval whose worst case still meets the RPO.

    run bytes = steady rate x interval (or the burst, for a flow with no steady load)
    transfer  = run bytes / (capacity - other flows' steady load)
    RPO       = base + interval + transfer   (written just after a run starts, it waits a
                                               whole interval, then one run's transfer)

    An interval fits when base + interval + transfer x headroom meets the RPO: the same margin
    every other path keeps. The longest such interval means fewer, larger runs. With no RPO
    target the interval is the maximum (a daily copy). When even the shortest allowed
    interval misses the RPO, the shortest is returned with fits=False.
    """
    available = capacity_gbps - other_steady_gbps

    def at(interval: int) -> Schedule:
        run = flow.steady_gbps * 1e9 / 8 * interval if flow.steady_gbps else flow.burst_bytes
        transfer = transfer_seconds(run, available) if available > 0 else math.inf
        rpo = flow.base_rpo_s + interval + transfer
        margin = flow.base_rpo_s + interval + transfer * headroom
        return Schedule(interval, run, transfer, rpo, rpo_s is None or margin <= rpo_s + 1e-6)

    if rpo_s is None:
        return at(max_interval_s)
    best = at(min_interval_s)
    interval = min_interval_s + step_s
    while interval <= max_interval_s:
        candidate = at(interval)
        if not candidate.fits:
            break
        best = candidate
        interval += step_s
    return best


# --- RTO ------------------------------------------------------------------------------------

PATTERN_ORDER = ("backup-restore", "pilot-light", "warm-standby", "active-active")


def standing_nodes(pattern: str, nodes: int, warm_fraction: float) -> int:
    """GPU nodes kept running at the DR site before a disaster."""
    if pattern == "active-active":
        return nodes
    if pattern == "warm-standby":
        return min(nodes, max(1, math.ceil(nodes * warm_fraction - 1e-9)))
    return 0


@dataclass(frozen=True)
class RtoParams:
    detection_s: float
    traffic_shift_s: float
    infra_create_s: float
    gpu_node_boot_s: float
    gpu_capacity_wait_s: float
    warm_scale_up_s: float
    restart_s: float
    read_gbps_per_node: float


def rto_stages(
    pattern: str,
    kind: str,
    nodes: int,
    working_set_b: float,
    reserved: bool,
    params: RtoParams,
) -> dict[str, float]:
    """Seconds per recovery stage for a GPU pool of `nodes` at the DR site.

    detection      alarm to decision
    infrastructure backup/restore only: network and control plane created at failover
    capacity       GPUs to full size: 0 (active-active), warm scale-up (warm standby), or node
                   boot plus the wait for on-demand capacity (pilot light, backup/restore;
                   no wait with a capacity reservation)
    staging        training: the checkpoint read in parallel by all nodes
                   (working set / (nodes x read per node)); service: every node loads the whole
                   weights (working set / read per node); 0 for an active-active service
    restart        job or pods start
    traffic_shift  services only: DNS moves clients
    """
    if pattern not in PATTERN_ORDER:
        raise ValueError(f"unknown pattern {pattern}")
    serving = kind == "service"
    stages = {"detection": params.detection_s}
    stages["infrastructure"] = params.infra_create_s if pattern == "backup-restore" else 0.0
    if pattern == "active-active":
        capacity = 0.0
    elif pattern == "warm-standby":
        # With a reservation the missing nodes only boot; without, the brief's scale-up time.
        capacity = params.gpu_node_boot_s if reserved else params.warm_scale_up_s
    else:
        capacity = params.gpu_node_boot_s + (0.0 if reserved else params.gpu_capacity_wait_s)
    stages["capacity"] = capacity
    if serving and pattern == "active-active":
        stages["staging"] = 0.0
        stages["restart"] = 0.0
    else:
        readers = 1 if serving else max(nodes, 1)
        stages["staging"] = transfer_seconds(working_set_b, readers * params.read_gbps_per_node)
        stages["restart"] = params.restart_s
    stages["traffic_shift"] = params.traffic_shift_s if serving else 0.0
    return stages


def rto_total(stages: Mapping[str, float]) -> float:
    return float(sum(stages.values()))


# --- dedicated links ------------------------------------------------------------------------


@dataclass(frozen=True)
class PortPlan:
    port_gbps: int
    ports: int
    capacity_gbps: float
    hourly_usd: float


def size_direct_connect(
    need_gbps: float,
    port_hour_usd: Mapping[int, float],
    min_connections: int = 2,
    lag_max_ports: Mapping[int, int] | None = None,
    locations: int = 2,
) -> PortPlan:
    """Cheapest set of Direct Connect ports of one speed whose total meets `need_gbps`.

    ports = max(min_connections, ceil(need / port speed)); a speed is possible when the ports
    fit in at most `lag_max_ports` per location (a LAG bundles ports of one speed at one
    location). Ties go to fewer ports. `need_gbps` already includes headroom.
    """
    best: PortPlan | None = None
    for speed in sorted(port_hour_usd):
        count = max(min_connections, math.ceil(need_gbps / speed - 1e-9))
        per_location = math.ceil(count / max(locations, 1))
        if lag_max_ports and per_location > lag_max_ports.get(speed, 4):
            continue
        plan = PortPlan(speed, count, float(speed * count), port_hour_usd[speed] * count)
        if best is None or (plan.hourly_usd, plan.ports) < (best.hourly_usd, best.ports):
            best = plan
    if best is None:
        largest = max(port_hour_usd)
        raise ValueError(
            f"{need_gbps:.1f} Gbps needs more than {lag_max_ports and lag_max_ports.get(largest)} "
            f"x {largest} Gbps ports per location"
        )
    return best


def cheapest(options: Sequence[tuple[str, float, bool, float]]) -> str | None:
    """The cheapest option that meets its target, from (name, monthly cost, meets, RTO).

    Equal cost goes to the faster option, then to the one with more standing infrastructure: a
    backup/restore pool in a cluster whose control plane stands anyway is a pilot light whose
    node group is not yet declared, so pilot light wins.
    """
    meeting = [
        (round(cost, 2), rto, -PATTERN_ORDER.index(name), name)
        for name, cost, ok, rto in options
        if ok
    ]
    return min(meeting)[3] if meeting else None
