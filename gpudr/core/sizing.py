"""Sizing math: replication bandwidth from the RPO, achievable RPO per mechanism, RTO per pattern,
and the capacity of the paths and links that carry replication.

Pure functions over plain numbers (bytes, seconds, Gbps), with the vendor facts they need read
from the reference data. The planner (`gpudr.core.design`) and the policy pack (`policies/`) both
call these functions: the pack recomputes each data class's need and RPO from the facts its
buckets carry as tags, with the same formulas, so the two cannot disagree.

docs/sizing.md states each formula with a worked example; tests/gpudr/core/test_sizing.py
checks them against hand-computed cases.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpudr.core import reference
from gpudr.core.enums import DR_PATTERNS, Mechanism, Pattern, PoolKind
from gpudr.core.units import transfer_seconds

# --- the facts that cross to the policy pack, at the precision the tags carry them -------------


def whole_bytes(size_b: float) -> float:
    """A burst as the tags carry it (`gpudr:burst-bytes`): whole bytes."""
    return float(math.floor(size_b + 1e-6))


def whole_kbps(gbps: float) -> float:
    """A rate as the tags carry it (`gpudr:steady-kbps`): whole kbit/s."""
    return round(gbps * 1e6) / 1e6


# --- verdicts: one tolerance for every comparison the planner and the pack make ---------------


def within(target: float | None, estimate: float | None) -> bool:
    """An estimate meets a target (no target: met; no estimate: not met)."""
    if target is None:
        return True
    return estimate is not None and estimate <= target + 1e-6


def fits(need_gbps: float, capacity_gbps: float) -> bool:
    """A need (with its headroom) fits a capacity."""
    return need_gbps <= capacity_gbps + 1e-9


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


def transfer_window_s(
    mechanism: str, rpo_s: float | None, interval_s: float, publish_window_s: float | None
) -> float | None:
    """Time one burst has to reach the DR site; None without a target.

    window = publish window                      (a dual-written weights publish)
           = min(RPO - interval, interval)       (with a checkpoint interval)
           = RPO                                 (otherwise)
    """
    if mechanism == Mechanism.DUAL_WRITE and publish_window_s is not None:
        return publish_window_s
    if rpo_s is None:
        return None
    if interval_s > 0:
        return checkpoint_window_s(rpo_s, interval_s)
    return rpo_s


def required_gbps(size_b: float, window_s: float) -> float:
    """Bandwidth that moves `size_b` within `window_s`: size x 8 / window / 1e9."""
    if size_b <= 0:
        return 0.0
    if window_s <= 0:
        return math.inf
    return size_b * 8 / window_s / 1e9


def need_gbps(burst_bytes: float, steady_gbps: float, window_s: float | None) -> float:
    """need = max(steady rate, burst x 8 / window); the steady rate alone without a window."""
    burst = 0.0 if window_s is None else required_gbps(burst_bytes, window_s)
    return max(steady_gbps, burst)


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
    # How often a burst arrives (the checkpoint interval); 0 when bursts are irregular.
    burst_period_s: float = 0.0


def flow(
    name: str,
    mechanism: str,
    *,
    burst_bytes: float,
    steady_gbps: float,
    rpo_s: float | None,
    interval_s: float = 0.0,
    publish_window_s: float | None = None,
) -> Flow:
    """A flow from the facts the tags carry: the burst and steady rate at tag precision, and
    the need from its transfer window. The pack builds the same Flow from a bucket's tags."""
    burst, steady = whole_bytes(burst_bytes), whole_kbps(steady_gbps)
    window = transfer_window_s(mechanism, rpo_s, interval_s, publish_window_s)
    return Flow(
        name, mechanism, burst, steady, need_gbps(burst, steady, window), interval_s, interval_s
    )


def checkpoint_flow(
    mechanism: str,
    *,
    size_b: float,
    interval_s: float,
    dedup_ratio: float,
    compression_ratio: float,
    rpo_s: float | None,
) -> Flow:
    """A checkpoint delta every interval: steady = delta / interval."""
    delta = checkpoint_delta_bytes(size_b, dedup_ratio, compression_ratio)
    return flow(
        "checkpoints",
        mechanism,
        burst_bytes=delta,
        steady_gbps=required_gbps(delta, interval_s),
        rpo_s=rpo_s,
        interval_s=interval_s,
    )


def weights_flow(
    mechanism: str, size_b: float, rpo_s: float | None, publish_window_s: float
) -> Flow:
    """Weights are published whole and rarely: no steady load, one burst per publish.

    Dual write: the publish must land in both regions within the publish window.
    Asynchronous: the published copy must reach the DR site within the RPO.
    """
    window = publish_window_s if mechanism == Mechanism.DUAL_WRITE else None
    return flow(
        "weights",
        mechanism,
        burst_bytes=size_b,
        steady_gbps=0.0,
        rpo_s=rpo_s,
        publish_window_s=window,
    )


def dataset_flow(mechanism: str, daily_change_b: float, rpo_s: float | None = None) -> Flow:
    """Datasets change continuously: the daily change spread over the day."""
    steady = required_gbps(daily_change_b, 86400.0)
    return flow("datasets", mechanism, burst_bytes=0.0, steady_gbps=steady, rpo_s=rpo_s)


# --- achievable RPO -------------------------------------------------------------------------


@dataclass(frozen=True)
class RpoEstimate:
    estimated_s: float | None  # None: the mechanism guarantees nothing
    lag_s: float | None
    transfer_s: float
    guaranteed: bool
    reason: str


def lag_floor_s(mechanism: str) -> float | None:
    """The replication time a mechanism guarantees (S3 RTC, turbo: 15 min; dual write: 0); None
    for one that guarantees none (reference data `mechanisms`, with sources)."""
    lag = reference.mechanism(mechanism)["lag_s"]
    return None if lag is None else float(lag)


def is_synchronous(mechanism: str) -> bool:
    return bool(reference.mechanism(mechanism)["synchronous"])


def is_scheduled(mechanism: str) -> bool:
    """Pulled by the DR site on a schedule (Storage Transfer Service, DataSync)."""
    return bool(reference.mechanism(mechanism).get("scheduled"))


def min_pull_interval_s(mechanism: str) -> int:
    return int(reference.mechanism(mechanism)["min_interval_s"])


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


# --- scheduled pulls --------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    interval_s: int  # the repeat interval
    run_bytes: float  # bytes one run copies, at worst
    transfer_s: float  # time one run takes at the available capacity
    estimated_rpo_s: float  # base + interval + transfer
    fits: bool  # the RPO holds with the headroom factor on the transfer


def run_bytes(flow: Flow, interval_s: float) -> float:
    """The most one scheduled run copies: everything written since the previous run.

    run = max(steady x interval, burst x ceil(interval / burst period))

    A run `interval` long collects every burst that completed in it: with a burst every
    `period`, up to ceil(interval / period) of them (a 2 h pull of 45 min checkpoints can hold
    three), and at least one whole burst even when bursts are rarer than runs (a 2 TB checkpoint
    every 2 h pulled hourly copies 2 TB, not 1). Without a known period (weights publishes), one
    burst per run.
    """
    steady = flow.steady_gbps * 1e9 / 8 * interval_s
    period = flow.burst_period_s
    bursts = max(1, math.ceil(interval_s / period - 1e-9)) if period > 0 else 1
    return max(steady, flow.burst_bytes * bursts)


def pull_at(
    flow: Flow,
    interval_s: int,
    *,
    capacity_gbps: float,
    other_steady_gbps: float,
    headroom: float,
    rpo_s: float | None,
) -> Schedule:
    """A pull every `interval_s` on a path of `capacity_gbps` shared with other flows.

    transfer = run bytes / (capacity - other flows' steady load)
    RPO      = base + interval + transfer   (written just after a run starts, it waits a whole
                                             interval, then one run's transfer)

    It fits when base + interval + transfer x headroom meets the RPO: the same margin every
    other path keeps.
    """
    available = capacity_gbps - other_steady_gbps
    run = run_bytes(flow, interval_s)
    transfer = transfer_seconds(run, available) if available > 0 else math.inf
    rpo = flow.base_rpo_s + interval_s + transfer
    margin = flow.base_rpo_s + interval_s + transfer * headroom
    return Schedule(interval_s, run, transfer, rpo, rpo_s is None or margin <= rpo_s + 1e-6)


def scheduled_transfer(
    flow: Flow,
    rpo_s: float | None,
    capacity_gbps: float,
    other_steady_gbps: float,
    *,
    min_interval_s: int = 3600,
    max_interval_s: int = 86400,
    step_s: int = 3600,
    headroom: float = 1.0,
) -> Schedule:
    """The longest whole-step repeat interval whose worst case still meets the RPO (fewer,
    larger runs). With no RPO target the interval is the maximum (a daily copy). When even the
    shortest allowed interval misses the RPO, the shortest is returned with fits=False."""

    def at(interval: int) -> Schedule:
        return pull_at(
            flow,
            interval,
            capacity_gbps=capacity_gbps,
            other_steady_gbps=other_steady_gbps,
            headroom=headroom,
            rpo_s=rpo_s,
        )

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


# --- the capacity of what carries replication -------------------------------------------------

# The rate quota that bounds a quota-bound mechanism, by its key in the plan's `quotas:`.
QUOTA_KEYS: dict[str, str] = {
    Mechanism.CRR_RTC: "s3_rtc_gbps",
    Mechanism.STS: "sts_gbps",
    Mechanism.DATASYNC: "datasync_gbps",
}


def default_quota_gbps(mechanism: str) -> float | None:
    """The vendor's default rate quota of a quota-bound mechanism (reference data), else None."""
    key = QUOTA_KEYS.get(mechanism)
    return None if key is None else reference.quota_default(key)


def default_headroom() -> float:
    """The factor applied to summed needs before they are compared with a capacity."""
    return float(reference.defaults()["headroom"]["factor"])


def default_tgw_peering_gbps() -> float:
    """What gpudr plans one transit gateway peering attachment to carry."""
    return reference.quota_default("tgw_peering_gbps")


def ha_vpn_tunnel_gbps() -> float:
    """One AWS <-> GCP HA VPN tunnel, capped by the slower end (AWS's 1.25 Gbps)."""
    vpn = reference.defaults()["links"]["ha-vpn"]
    return min(float(v) for v in vpn["tunnel_gbps"].values())


def ha_vpn_gbps(tunnels: int | None = None) -> float:
    """AWS <-> GCP HA VPN: the tunnels (four by default), each at `ha_vpn_tunnel_gbps`."""
    count = int(reference.defaults()["links"]["ha-vpn"]["tunnels"]) if tunnels is None else tunnels
    return count * ha_vpn_tunnel_gbps()


def azure_vpn_skus() -> dict[str, float]:
    """The Azure VPN gateway SKUs gpudr sizes from, and each one's aggregate throughput (Gbps)."""
    skus = reference.defaults()["links"]["vpn"]["gateway_gbps"]
    return {str(sku): float(gbps) for sku, gbps in skus.items()}


def azure_vpn_gbps(
    sku: str, tunnels: int | None = None, aggregate_gbps: float | None = None
) -> float | None:
    """Azure <-> GCP VPN through an Azure gateway of `sku`: the tunnels at the slower end's
    per-tunnel rate (Azure's figure for the SKU with GCMAES256, or GCP's), capped by the SKU's
    aggregate throughput (or `aggregate_gbps`). None for a SKU without a published figure."""
    vpn = reference.defaults()["links"]["vpn"]
    if sku not in vpn["tunnel_gbps_azure"]:
        return None
    count = int(vpn["tunnels"]) if tunnels is None else tunnels
    per_tunnel = min(float(vpn["tunnel_gbps_azure"][sku]), float(vpn["tunnel_gbps_gcp"]))
    aggregate = azure_vpn_skus()[sku] if aggregate_gbps is None else aggregate_gbps
    return min(count * per_tunnel, aggregate)


def vpn_gateway(need_gbps: float) -> tuple[str, float, str]:
    """Azure <-> GCP VPN: the smallest zone-redundant Azure gateway SKU whose tunnels carry the
    need (the largest if none does), the link's capacity (`azure_vpn_gbps`), and its basis."""
    vpn = reference.defaults()["links"]["vpn"]
    tunnels = int(vpn["tunnels"])
    options = sorted((azure_vpn_gbps(sku) or 0.0, sku) for sku in azure_vpn_skus())
    # None big enough: the smallest SKU with the most capacity (a larger one adds nothing).
    best = next(o for o in options if o[0] == options[-1][0])
    capacity, sku = next((o for o in options if o[0] >= need_gbps), best)
    per_tunnel = min(float(vpn["tunnel_gbps_azure"][sku]), float(vpn["tunnel_gbps_gcp"]))
    aggregate = float(vpn["gateway_gbps"][sku])
    limit = (
        f"capped by its {aggregate:g} Gbps aggregate"
        if aggregate < tunnels * per_tunnel
        else f"within its {aggregate:g} Gbps aggregate"
    )
    return (
        sku,
        capacity,
        f"{tunnels} VPN tunnels x {per_tunnel:g} Gbps (Azure {sku} per tunnel, GCMAES256), "
        + limit,
    )


# --- RTO ------------------------------------------------------------------------------------

PATTERN_ORDER = DR_PATTERNS


def default_warm_fraction() -> float:
    """The share of a pool a warm standby keeps when the plan states none (the brief's 20%)."""
    return float(reference.defaults()["spec"]["warm_fraction"]["value"])


def standing_nodes(pattern: str, nodes: int, warm_fraction: float) -> int:
    """GPU nodes kept running at the DR site before a disaster."""
    if pattern == Pattern.ACTIVE_ACTIVE:
        return nodes
    if pattern == Pattern.WARM_STANDBY:
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
    *,
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
    serving = kind == PoolKind.SERVICE
    stages = {"detection": params.detection_s}
    stages["infrastructure"] = params.infra_create_s if pattern == Pattern.BACKUP_RESTORE else 0.0
    if pattern == Pattern.ACTIVE_ACTIVE:
        capacity = 0.0
    elif pattern == Pattern.WARM_STANDBY:
        # With a reservation the missing nodes only boot; without, the brief's scale-up time.
        capacity = params.gpu_node_boot_s if reserved else params.warm_scale_up_s
    else:
        capacity = params.gpu_node_boot_s + (0.0 if reserved else params.gpu_capacity_wait_s)
    stages["capacity"] = capacity
    if serving and pattern == Pattern.ACTIVE_ACTIVE:
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
