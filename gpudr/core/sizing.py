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
from gpudr.core.enums import (
    AWS_MAX_SESSION_S,
    CRON_INTERVAL_HOURS,
    DR_PATTERNS,
    DataClass,
    Mechanism,
    Pattern,
    PoolKind,
)
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
    """A need (with its headroom) fits a capacity; an unbounded need fits none, not even a path
    without a provisioned limit."""
    return math.isfinite(need_gbps) and need_gbps <= capacity_gbps + 1e-9


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
           = interval                            (a dual-written checkpoint)
           = min(RPO - interval, interval)       (with a checkpoint interval)
           = RPO                                 (otherwise)

    A dual-written checkpoint is at the DR site once its write completes, so nothing is left to
    replicate after it (the RPO is the interval, as `achieved_rpo` estimates): its write only has
    to finish before the next checkpoint. An asynchronous copy starts once the checkpoint is
    written, so at RPO = interval it has no time at all and no bandwidth meets the RPO (the need
    is infinite: `required_gbps`).
    """
    if mechanism == Mechanism.DUAL_WRITE and publish_window_s is not None:
        return publish_window_s
    if mechanism == Mechanism.DUAL_WRITE and interval_s > 0:
        return interval_s
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


def continuous_gbps(burst_bytes: float, steady_gbps: float, period_s: float) -> float:
    """The part of a flow's steady rate that is not its bursts' own average, at tag precision:

    continuous = steady - burst x 8 / period      (0 without a period; never below 0)

    It keeps flowing while a burst drains: a dataset's daily change beside its bulk refresh.
    Checkpoints have none (their steady rate is their bursts' average), weights none either.
    """
    average = required_gbps(burst_bytes, period_s) if period_s > 0 else 0.0
    return max(0.0, whole_kbps(steady_gbps - average))


def need_gbps(
    burst_bytes: float, steady_gbps: float, window_s: float | None, period_s: float = 0.0
) -> float:
    """need = max(steady rate, continuous + burst x 8 / window); the steady rate alone without
    a window. `continuous_gbps` is 0 for checkpoints and weights: need = max(steady, burst x 8 /
    window) there."""
    if window_s is None:
        return steady_gbps
    burst = required_gbps(burst_bytes, window_s)
    return max(steady_gbps, continuous_gbps(burst_bytes, steady_gbps, period_s) + burst)


def with_headroom(gbps: float, factor: float) -> float:
    return gbps * factor


def path_load_gbps(flow: Flow) -> float:
    """What a flow asks of the path it shares: the need for its RPO; its steady rate when no
    bandwidth meets the RPO (an asynchronous copy of a checkpoint whose interval is the whole
    RPO). Such a flow fails on its own estimate; the path is sized for the flows that can be
    met, and still carries the unbounded one's average rate, or its backlog grows."""
    return flow.required_gbps if math.isfinite(flow.required_gbps) else flow.steady_gbps


@dataclass(frozen=True)
class Flow:
    """One data class replicating across one site pair through one mechanism."""

    name: str
    mechanism: str
    # bytes that arrive at once: one checkpoint delta, one weights publish, one dataset refresh
    burst_bytes: float
    steady_gbps: float  # long-run average rate this flow puts on the path
    required_gbps: float  # rate this flow needs to meet its RPO
    base_rpo_s: float  # loss replication cannot remove (the checkpoint interval)
    # How often a burst arrives (the checkpoint interval, the refresh period); 0 when bursts
    # are irregular.
    burst_period_s: float = 0.0

    @property
    def continuous_gbps(self) -> float:
        """What keeps flowing while a burst drains (`continuous_gbps`)."""
        return continuous_gbps(self.burst_bytes, self.steady_gbps, self.burst_period_s)


def interval_is_loss(name: str) -> bool:
    """Whether a flow's interval (`gpudr:interval-s`) is data loss replication cannot remove.

    A checkpoint interval is: work since the newest checkpoint is lost whatever replication does.
    A dataset refresh period is not: a refresh is whole at the primary before it replicates, so
    it is only how often the burst comes, and the burst has the whole RPO to reach the DR site.
    """
    return name != DataClass.DATASETS


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
    the need from its transfer window. The pack builds the same Flow from a bucket's tags.
    `interval_s` is the checkpoint interval, or a dataset's refresh period (`interval_is_loss`)."""
    burst, steady = whole_bytes(burst_bytes), whole_kbps(steady_gbps)
    loss_s = interval_s if interval_is_loss(name) else 0.0
    window = transfer_window_s(mechanism, rpo_s, loss_s, publish_window_s)
    need = need_gbps(burst, steady, window, interval_s)
    return Flow(name, mechanism, burst, steady, need, loss_s, interval_s)


def checkpoint_flow(
    mechanism: str,
    *,
    size_b: float,
    interval_s: float,
    dedup_ratio: float,
    compression_ratio: float,
    rpo_s: float | None,
) -> Flow:
    """A checkpoint delta every interval: steady = delta / interval, from the delta in whole
    bytes as the burst is (from a fraction of a byte more, the steady rate could round 1 kbps
    above the bursts' own average, and leave a phantom continuous rate)."""
    delta = whole_bytes(checkpoint_delta_bytes(size_b, dedup_ratio, compression_ratio))
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


def daily_change_gbps(daily_change_b: float) -> float:
    """A dataset's daily change spread evenly over the day's 86,400 s (the plan states this
    assumption; a change that arrives at once is a refresh, `dataset_flow`)."""
    return required_gbps(daily_change_b, 86400.0)


def dataset_flow(
    mechanism: str,
    daily_change_b: float,
    rpo_s: float | None = None,
    *,
    refresh_b: float = 0.0,
    refresh_every_s: float = 0.0,
) -> Flow:
    """Datasets: the daily change spread evenly over the day, and an optional bulk refresh of
    `refresh_b` every `refresh_every_s`, a burst that must reach the DR site within the RPO.

    steady = daily change / 86,400 s + refresh / every
    need   = max(steady, daily change / 86,400 s + refresh x 8 / RPO)
    """
    every = refresh_every_s if refresh_b > 0 else 0.0
    steady = daily_change_gbps(daily_change_b)
    if every > 0:
        steady += required_gbps(refresh_b, every)
    return flow(
        DataClass.DATASETS,
        mechanism,
        burst_bytes=refresh_b if every > 0 else 0.0,
        steady_gbps=steady,
        rpo_s=rpo_s,
        interval_s=every,
    )


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


# The longest one run of a pull may take, by mechanism: an AzCopy run reads S3 through URLs
# presigned with one AWS role session, which ends after at most 12 h (enums.AWS_MAX_SESSION_S);
# what is not copied by then fails, and the next run starts over from its listing.
MAX_RUN_S: dict[str, int] = {Mechanism.AZCOPY: AWS_MAX_SESSION_S}


def max_run_s(mechanism: str) -> int | None:
    """How long one run of the mechanism may last before it fails, or None (no bound)."""
    return MAX_RUN_S.get(mechanism)


def run_limit_s(max_run_s: float, interval_s: float) -> float:
    """How long one run of a bounded pull may take: within its session, and before the next
    run starts (the job's replica timeout: a cron schedule starts the next run whether or not
    the last one finished, and two runs would copy the same objects twice)."""
    return min(max_run_s, interval_s)


# Mechanisms scheduled by a cron expression: they repeat only at the intervals cron keeps.
CRON_SCHEDULED = (Mechanism.AZCOPY,)


def pull_intervals_s(mechanism: str) -> tuple[int, ...] | None:
    """The repeat intervals a mechanism's schedule can express, or None (any whole hour)."""
    if mechanism in CRON_SCHEDULED:
        return tuple(h * 3600 for h in CRON_INTERVAL_HOURS)
    return None


def achieved_rpo(
    flow: Flow,
    lag_floor_s: float | None,
    synchronous: bool,
    capacity_gbps: float,
    other_steady_gbps: float,
) -> RpoEstimate:
    """Worst-case data loss for `flow` on a path of `capacity_gbps` shared with other flows.

    transfer = burst / (capacity - steady load of the other flows on the path
                        - this flow's continuous part, which keeps flowing meanwhile)
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
    drain = available - flow.continuous_gbps
    transfer = transfer_seconds(flow.burst_bytes, drain) if flow.burst_bytes else 0.0
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
    estimated_rpo_s: float  # base + interval + wait + transfer
    fits: bool  # the RPO holds with the headroom factor on the transfer
    wait_s: float = 0.0  # how long a run may queue behind other classes' runs


def run_bytes(flow: Flow, interval_s: float) -> float:
    """The most one scheduled run copies: everything written since the previous run.

    run = max(steady x interval, continuous x interval + burst x ceil(interval / burst period))

    A run `interval` long collects every burst that completed in it: with a burst every
    `period`, up to ceil(interval / period) of them (a 2 h pull of 45 min checkpoints can hold
    three), and at least one whole burst even when bursts are rarer than runs (a 2 TB checkpoint
    every 2 h pulled hourly copies 2 TB, not 1). Without a known period (weights publishes), one
    burst per run. The continuous part of the steady rate (a dataset's daily change beside its
    refresh) comes on top of the bursts.
    """
    steady = flow.steady_gbps * 1e9 / 8 * interval_s
    continuous = flow.continuous_gbps * 1e9 / 8 * interval_s
    period = flow.burst_period_s
    bursts = max(1, math.ceil(interval_s / period - 1e-9)) if period > 0 else 1
    return max(steady, continuous + flow.burst_bytes * bursts)


def pull_at(
    flow: Flow,
    interval_s: int,
    *,
    capacity_gbps: float,
    other_steady_gbps: float,
    headroom: float,
    rpo_s: float | None,
    rate_cap_gbps: float | None = None,
    wait_s: float = 0.0,
    max_run_s: float | None = None,
) -> Schedule:
    """A pull every `interval_s` on a path of `capacity_gbps` shared with other flows.

    transfer = run bytes / min(capacity - other flows' steady load, rate cap)
    RPO      = base + interval + wait + transfer   (written just after a run starts, it waits
                                                    a whole interval, then for the runs ahead
                                                    of it, then one run's transfer)

    `rate_cap_gbps`: what one run can use whatever the path carries (a Storage Mover job runs
    on one agent). `wait_s`: how long a run may queue behind other classes' runs on the same
    workers (a DataSync agent runs one task at a time, and every task uses every agent).
    It fits when base + interval + wait + transfer x headroom meets the RPO: the same margin
    every other path keeps; and, where one run must finish within `max_run_s` (an AzCopy run
    within its AWS session), when the transfer does, and before the next run starts.
    """
    available = capacity_gbps - other_steady_gbps
    if rate_cap_gbps is not None:
        available = min(available, rate_cap_gbps)
    run = run_bytes(flow, interval_s)
    transfer = transfer_seconds(run, available) if available > 0 else math.inf
    rpo = flow.base_rpo_s + interval_s + wait_s + transfer
    margin = flow.base_rpo_s + interval_s + wait_s + transfer * headroom
    fits = rpo_s is None or margin <= rpo_s + 1e-6
    if max_run_s is not None and transfer > run_limit_s(max_run_s, interval_s):
        fits = False
    return Schedule(interval_s, run, transfer, rpo, fits, wait_s)


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
    rate_cap_gbps: float | None = None,
    wait_s: float = 0.0,
    max_run_s: float | None = None,
    intervals: Sequence[int] | None = None,
) -> Schedule:
    """The longest whole-step repeat interval whose worst case still meets the RPO (fewer,
    larger runs). With no RPO target the interval is the longest whose run finishes within
    `max_run_s`, if any (else the maximum: a daily copy). When even the shortest allowed
    interval misses the RPO, the shortest is returned with fits=False. `intervals`: the only
    repeat intervals the schedule can express (a cron expression's), instead of every step from
    the minimum to the maximum."""
    candidates = sorted(
        i
        for i in (intervals or range(min_interval_s, max_interval_s + 1, step_s))
        if min_interval_s <= i <= max_interval_s
    )

    def at(interval: int) -> Schedule:
        return pull_at(
            flow,
            interval,
            capacity_gbps=capacity_gbps,
            other_steady_gbps=other_steady_gbps,
            headroom=headroom,
            rpo_s=rpo_s,
            rate_cap_gbps=rate_cap_gbps,
            wait_s=wait_s,
            max_run_s=max_run_s,
        )

    if rpo_s is None:
        # The longest whose run finishes in time (with no run bound, the longest).
        fitting = [s for s in (at(i) for i in reversed(candidates)) if s.fits]
        return fitting[0] if fitting else at(candidates[0])
    best = at(candidates[0])
    for interval in candidates[1:]:
        candidate = at(interval)
        if not candidate.fits:
            break
        best = candidate
    return best


# --- the capacity of what carries replication -------------------------------------------------

# The rate quota that bounds a quota-bound mechanism, by its key in the plan's `quotas:`.
QUOTA_KEYS: dict[str, str] = {
    Mechanism.CRR_RTC: "s3_rtc_gbps",
    Mechanism.STS: "sts_gbps",
    Mechanism.DATASYNC: "datasync_gbps",
    Mechanism.AZCOPY: "azcopy_gbps",
    Mechanism.GCS_TURBO: "gcs_turbo_gbps",
    Mechanism.GCS_DUAL_REGION: "gcs_dual_region_gbps",
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


# An active-active Azure VPN gateway has two instances, each with its own public IP address and
# BGP speaker (components/azure/vpn.py); every gpudr VPN into or out of Azure uses one.
AZURE_VPN_INSTANCES = 2


def vpn_tunnel_gbps(cloud: str) -> float:
    """What one IPsec tunnel carries at an AWS VPN connection or a GCP HA VPN gateway (links.
    ha-vpn.tunnel_gbps): AWS's 1.25 Gbps, GCP's 3 Gbps."""
    return float(reference.defaults()["links"]["ha-vpn"]["tunnel_gbps"][cloud])


def azure_vpn_tunnels(peer: str) -> int:
    """How many tunnels join an active-active Azure VPN gateway from a `peer` cloud (links.vpn.
    peers): GCP's HA VPN two, AWS's two VPN connections four."""
    return int(reference.defaults()["links"]["vpn"]["peers"][peer]["tunnels"])


def _azure_vpn_tunnel_gbps(sku: str, peer_tunnel_gbps: float) -> float:
    """One tunnel through an Azure gateway of `sku`: the slower of Azure's per-tunnel figure for
    the SKU with GCMAES256 (the cipher gpudr's IPsec policies set) and the peer end's."""
    azure = float(reference.defaults()["links"]["vpn"]["tunnel_gbps_azure"][sku])
    return min(azure, peer_tunnel_gbps)


def azure_vpn_gbps(
    sku: str,
    tunnels: int | None = None,
    aggregate_gbps: float | None = None,
    peer: str = "gcp",
    peer_tunnel_gbps: float | None = None,
) -> float | None:
    """A VPN through an Azure gateway of `sku` to a `peer` cloud's end (GCP's HA VPN, AWS's VPN
    connections): the tunnels (the peer's count by default) at the slower end's per-tunnel rate
    (Azure's figure for the SKU with GCMAES256, or the peer's, or `peer_tunnel_gbps`), capped by
    the SKU's aggregate throughput (or `aggregate_gbps`). None for a SKU without a published
    figure."""
    if sku not in reference.defaults()["links"]["vpn"]["tunnel_gbps_azure"]:
        return None
    count = azure_vpn_tunnels(peer) if tunnels is None else tunnels
    peer_gbps = vpn_tunnel_gbps(peer) if peer_tunnel_gbps is None else peer_tunnel_gbps
    aggregate = azure_vpn_skus()[sku] if aggregate_gbps is None else aggregate_gbps
    return min(count * _azure_vpn_tunnel_gbps(sku, peer_gbps), aggregate)


def vpn_gateway(need_gbps: float, peer: str = "gcp") -> tuple[str, float, str]:
    """A VPN between an Azure site and a `peer` cloud (Azure <-> GCP, AWS <-> Azure): the
    smallest zone-redundant Azure gateway SKU whose tunnels carry the need (the largest if none
    does), the link's capacity (`azure_vpn_gbps`), and its basis."""
    tunnels = azure_vpn_tunnels(peer)
    options = sorted((azure_vpn_gbps(sku, peer=peer) or 0.0, sku) for sku in azure_vpn_skus())
    # None big enough: the smallest SKU with the most capacity (a larger one adds nothing).
    best = next(o for o in options if o[0] == options[-1][0])
    capacity, sku = next((o for o in options if o[0] >= need_gbps), best)
    azure = float(reference.defaults()["links"]["vpn"]["tunnel_gbps_azure"][sku])
    per_tunnel = _azure_vpn_tunnel_gbps(sku, vpn_tunnel_gbps(peer))
    slower = (
        f"Azure {sku} per tunnel, GCMAES256" if azure <= per_tunnel else f"the {peer.upper()} end"
    )
    aggregate = azure_vpn_skus()[sku]
    limit = (
        f"capped by its {aggregate:g} Gbps aggregate"
        if aggregate < tunnels * per_tunnel
        else f"within its {aggregate:g} Gbps aggregate"
    )
    return (
        sku,
        capacity,
        f"{tunnels} VPN tunnels x {per_tunnel:g} Gbps ({slower}), " + limit,
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


# --- reading data back at the DR site: one model for every reader ---------------------------


def default_storage_read_gbps(cloud: str) -> float:
    """The most a DR site's object storage serves to its readers at once, by cloud (reference
    data `recovery.storage_read_gbps`, each with its source)."""
    return float(reference.defaults()["recovery"]["storage_read_gbps"][cloud]["value"])


def aggregate_read_gbps(readers: int, per_node_gbps: float, ceiling_gbps: float) -> float:
    """What `readers` nodes reading one bucket at once get between them:

    aggregate = min(readers x read per node, storage read ceiling)

    Each node is bounded by its own client and NIC (`read_gbps_per_node`); all of them together
    by what the bucket or account serves (`storage_read_gbps`): more nodes stop helping there.
    """
    return min(max(readers, 1) * per_node_gbps, ceiling_gbps)


def read_seconds(size_b: float, readers: int, per_node_gbps: float, ceiling_gbps: float) -> float:
    """Seconds for `readers` nodes to read `size_b` bytes between them at `aggregate_read_gbps`."""
    return transfer_seconds(size_b, aggregate_read_gbps(readers, per_node_gbps, ceiling_gbps))


# The runbook's data step verifies a DR copy by reading it whole through one host (it hashes
# every object of the checkpoint, the whole weights version): one reader.
VERIFY_READERS = 1


def verify_seconds(size_b: float, per_node_gbps: float, ceiling_gbps: float) -> float:
    """The runbook's check of a DR copy: `size_b` read by `VERIFY_READERS` host."""
    return read_seconds(size_b, VERIFY_READERS, per_node_gbps, ceiling_gbps)


# --- GPU capacity at failover: one model for every pattern -----------------------------------


@dataclass(frozen=True)
class RtoParams:
    detection_s: float
    traffic_shift_s: float
    infra_create_s: float
    gpu_node_boot_s: float
    gpu_capacity_wait_s: float
    restart_s: float
    read_gbps_per_node: float
    storage_read_gbps: float  # the DR site's storage read ceiling (`aggregate_read_gbps`)


def capacity_guaranteed(nodes: int, standing: int, reserved: bool) -> bool:
    """Whether a pool has all its GPUs at failover without finding any: every node already
    stands, or the missing ones are reserved. Otherwise the RTO holds only if on-demand capacity
    is found, when every tenant of a failed region asks for it at once."""
    return reserved or standing >= nodes


def capacity_seconds(nodes: int, standing: int, reserved: bool, params: RtoParams) -> float:
    """GPUs to full size, the same for every pattern:

    capacity = 0                                      every node already stands
             = node boot                              the missing nodes are reserved
             = node boot + wait for on-demand GPUs    otherwise (warm standby's missing nodes too)
    """
    if standing >= nodes:
        return 0.0
    return params.gpu_node_boot_s + (0.0 if reserved else params.gpu_capacity_wait_s)


def rto_stages(
    pattern: str,
    kind: str,
    *,
    nodes: int,
    standing: int,
    working_set_b: float,
    reserved: bool,
    params: RtoParams,
) -> dict[str, float]:
    """Seconds per recovery stage for a GPU pool of `nodes` at the DR site, `standing` of them
    running before the disaster.

    detection      alarm to decision
    infrastructure backup/restore only: network and control plane created at failover
    capacity       GPUs to full size (`capacity_seconds`)
    staging        training: the checkpoint read once between all nodes; service: every node
                   loads the whole weights (nodes x working set); both at `aggregate_read_gbps`;
                   0 for an active-active service (already serving)
    restart        job or pods start
    traffic_shift  services only: DNS moves clients

    A pool's RTO is not their sum: it is the pool's finish among the failover's steps
    (`failover_steps`), where its work also waits for the runbook's check of the data it reads.
    """
    if pattern not in PATTERN_ORDER:
        raise ValueError(f"unknown pattern {pattern}")
    serving = kind == PoolKind.SERVICE
    stages = {"detection": params.detection_s}
    stages["infrastructure"] = params.infra_create_s if pattern == Pattern.BACKUP_RESTORE else 0.0
    stages["capacity"] = capacity_seconds(nodes, standing, reserved, params)
    if serving and pattern == Pattern.ACTIVE_ACTIVE:
        stages["staging"] = 0.0
        stages["restart"] = 0.0
    else:
        readers = max(nodes, 1)
        read = working_set_b * readers if serving else working_set_b
        rate = (params.read_gbps_per_node, params.storage_read_gbps)
        stages["staging"] = read_seconds(read, readers, *rate)
        stages["restart"] = params.restart_s
    stages["traffic_shift"] = params.traffic_shift_s if serving else 0.0
    return stages


# --- the failover as timed steps: the plan's RTO is its critical path -------------------------


@dataclass(frozen=True)
class TimedStep:
    """A failover step as the RTO model times it: the runbook step's key, its seconds (None: not
    timed, counted as 0) and the keys of the steps it waits for (absent keys are ignored)."""

    key: str
    seconds: float | None
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class PoolTiming:
    """What the failover's steps need of one DR pool."""

    name: str
    kind: str  # training | service
    stages: Mapping[str, float]
    scales: bool  # GPU nodes are added at failover: its work waits for the capacity step


# The data classes whose check at the DR site each kind of pool waits for.
POOL_READS: dict[str, tuple[str, ...]] = {
    PoolKind.TRAINING: (DataClass.CHECKPOINTS, DataClass.DATASETS),
    PoolKind.SERVICE: (DataClass.WEIGHTS,),
}


def workload_step(kind: str, pool: str) -> str:
    """The key of the step that ends a pool's recovery: training restarted, traffic moved."""
    return f"{'training' if kind == PoolKind.TRAINING else 'traffic'}:{pool}"


def failover_steps(
    detection_s: float, checks: Mapping[str, float | None], pools: Sequence[PoolTiming]
) -> tuple[TimedStep, ...]:
    """The timed steps of one primary -> DR pair's failover, in dependency order. The runbook's
    step graph (`gpudr.core.stepgraph`) takes each of these steps' time and dependencies from
    here, and the plan's RTO of each pool is its finish here: one model.

    declare          detection
    data:<class>     the runbook's check of the DR copy (`checks`), after declare
    capacity         the failover switch: the longest infrastructure + capacity of the pools
                     that add nodes, after declare
    training:<pool>  staging + restart, after declare, the check of the data it reads and, if
                     it adds nodes, capacity
    service:<pool>   the same for a service, then traffic:<pool> (traffic shift)
    """
    out = [TimedStep("declare", detection_s)]
    out += [TimedStep(f"data:{c}", s, ("declare",)) for c, s in checks.items()]
    if pools:
        grow = [p.stages["infrastructure"] + p.stages["capacity"] for p in pools if p.scales]
        out.append(TimedStep("capacity", max(grow, default=0.0), ("declare",)))
    for p in sorted(pools, key=lambda p: p.kind != PoolKind.TRAINING):
        capacity = ("capacity",) if p.scales else ()
        waits = ("declare", *capacity, *(f"data:{c}" for c in POOL_READS[p.kind]))
        work = p.stages["staging"] + p.stages["restart"]
        if p.kind == PoolKind.TRAINING:
            out.append(TimedStep(f"training:{p.name}", work, waits))
        else:
            out.append(TimedStep(f"service:{p.name}", work, waits))
            out.append(
                TimedStep(f"traffic:{p.name}", p.stages["traffic_shift"], (f"service:{p.name}",))
            )
    return tuple(out)


def finish_times(steps: Sequence[TimedStep]) -> dict[str, float]:
    """When each step is done, from the first alarm: its own time after the latest-finishing of
    the steps it waits for (the longest path to it). `steps` in dependency order."""
    done: dict[str, float] = {}
    for s in steps:
        start = max((done[k] for k in s.after if k in done), default=0.0)
        done[s.key] = start + (s.seconds or 0.0)
    return done


def critical_path(steps: Sequence[TimedStep], end: str) -> tuple[tuple[str, float], ...]:
    """The timed steps whose seconds add up to `end`'s finish, first to last: from `end` back
    through the predecessor that finishes last (a tie goes to the longer step, then to the one
    listed first). Untimed steps add nothing and are left out."""
    done = finish_times(steps)
    by_key = {s.key: s for s in steps}

    def last(keys: Sequence[str]) -> str | None:
        present = [k for k in keys if k in done]
        order = {k: -i for i, k in enumerate(present)}
        return max(
            present, key=lambda k: (done[k], by_key[k].seconds or 0.0, order[k]), default=None
        )

    chain: list[tuple[str, float]] = []
    key: str | None = end
    while key is not None:
        step = by_key[key]
        if step.seconds is not None:
            chain.append((key, step.seconds))
        key = last(step.after)
    return tuple(reversed(chain))


# --- an on-premises site's WAN ---------------------------------------------------------------

WAN_COMMITTED = "committed"
WAN_LINK = "link"
WAN_AGENTS = "agents"


def onprem_path_gbps(
    committed_gbps: float, link_gbps: float, agents: int, per_agent_gbps: float
) -> tuple[float, str]:
    """What transfers from on premises get, and which bound it is: the least of the WAN
    bandwidth committed to DR, what the link's ports carry, and what the agents move.

    capacity = min(committed, ports x port speed, agents x per-agent rate)
    """
    bounds = {
        WAN_COMMITTED: committed_gbps,
        WAN_LINK: link_gbps,
        WAN_AGENTS: agents * per_agent_gbps,
    }
    which = min(bounds, key=lambda k: bounds[k])
    return bounds[which], which


# --- dedicated links ------------------------------------------------------------------------


@dataclass(frozen=True)
class PortPlan:
    port_gbps: int
    ports: int
    capacity_gbps: float  # every port up
    hourly_usd: float
    locations: int = 1
    # What is left with the largest location down (a location is one building: it fails whole).
    survivable_gbps: float = 0.0


def ports_per_location(ports: int, locations: int) -> list[int]:
    """How the ports split over the locations: as evenly as they go, the first locations
    taking one more (components/aws/links.py places them in this order)."""
    per = math.ceil(ports / max(locations, 1))
    out, left = [], ports
    for _ in range(max(locations, 1)):
        out.append(min(per, left))
        left -= out[-1]
    return out


def surviving_gbps(by_location: Sequence[float]) -> float:
    """A link's capacity with its largest location down; one location survives nothing.

    surviving = sum(capacity per location) - max(capacity per location)
    """
    return float(sum(by_location) - max(by_location, default=0.0))


def _port_plan(speed: int, count: int, usd: float, locations: int) -> PortPlan:
    split = ports_per_location(count, locations)
    return PortPlan(
        speed,
        count,
        float(speed * count),
        usd * count,
        locations,
        surviving_gbps([speed * n for n in split]),
    )


def _fewest_ports(
    need_gbps: float,
    speed: int,
    usd: float,
    min_connections: int,
    lag_max_ports: Mapping[int, int] | None,
    locations: int,
) -> PortPlan | None:
    """The fewest ports of one speed that carry the need (with the largest location down when
    there are two or more), within a LAG's ports per location; None if none do."""
    most = (lag_max_ports.get(speed, 4) if lag_max_ports else 4) * locations
    for count in range(max(min_connections, math.ceil(need_gbps / speed - 1e-9)), most + 1):
        plan = _port_plan(speed, count, usd, locations)
        if fits(need_gbps, plan.survivable_gbps if locations > 1 else plan.capacity_gbps):
            return plan
    return None


def size_direct_connect(
    need_gbps: float,
    port_hour_usd: Mapping[int, float],
    min_connections: int = 2,
    lag_max_ports: Mapping[int, int] | None = None,
    locations: int = 2,
) -> PortPlan:
    """Cheapest set of Direct Connect ports of one speed that carries `need_gbps` with its
    largest location down (with one location: with every port up, since nothing survives it).

    ports = the fewest, at least `min_connections`, such that
            (ports - ports at the largest location) x speed >= need     (two or more locations)
            ports x speed >= need                                       (one location)
    A speed is possible when the ports fit in at most `lag_max_ports` per location (a LAG
    bundles ports of one speed at one location). Ties go to fewer ports. `need_gbps` already
    includes headroom. E.g. 277.8 Gbps over two locations: 3 x 100 Gbps leaves 100 Gbps when
    the location holding two ports fails, and 6 x 100 Gbps need 3 per location (a LAG holds
    2), so 2 x 400 Gbps (400 Gbps survive).

    When no plan carries the need (or it is unbounded), the largest one gpudr deploys: the
    fastest ports, as many per location as a LAG holds. Its capacity falls short of the need,
    and the path that uses it reports how far (a verdict, not an error).
    """
    where = max(locations, 1)
    best: PortPlan | None = None
    for speed in sorted(port_hour_usd) if math.isfinite(need_gbps) else ():
        plan = _fewest_ports(
            need_gbps, speed, port_hour_usd[speed], min_connections, lag_max_ports, where
        )
        if plan is not None and (
            best is None or (plan.hourly_usd, plan.ports) < (best.hourly_usd, best.ports)
        ):
            best = plan
    if best is None:
        largest = max(port_hour_usd)
        per_location = lag_max_ports.get(largest, 4) if lag_max_ports else 4
        count = max(min_connections, per_location * where)
        best = _port_plan(largest, count, port_hour_usd[largest], where)
    return best


def size_cross_cloud_interconnect(
    need_gbps: float,
    connection_hour_usd: Mapping[int, float],
    min_connections: int = 2,
    max_per_domain: int = 4,
) -> PortPlan:
    """GCP Cross-Cloud Interconnect to AWS: the cheapest set of connections of one speed that
    carries `need_gbps` with one edge availability domain down. Each connection is one port
    (Google's) cross-connected to its own AWS LAG of one port, and the connections alternate
    the metro's two domains, so a domain is a Direct Connect "location" of
    `size_direct_connect` holding up to `max_per_domain` ports:

        connections = the fewest, at least `min_connections`, such that
                      (connections - connections in the larger domain) x speed >= need

    E.g. 25 Gbps: 6 x 10 Gbps leave 30 Gbps with a domain down and cost less per hour than
    2 x 100 Gbps. Above what the most connections carry, the largest plan, which falls short
    (a verdict, not an error). `connection_hour_usd` prices one connection's hour by speed:
    only what is priced can choose the speed (Google's connection-hour is unpriced)."""
    per_domain = {speed: max_per_domain for speed in connection_hour_usd}
    return size_direct_connect(
        need_gbps, connection_hour_usd, min_connections, per_domain, locations=2
    )


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
