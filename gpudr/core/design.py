"""From a validated plan to a DR design: mechanisms, paths, GPU pools with their patterns, the
per-workload verdicts and the monthly cost. Everything downstream (stack config, components,
reports) reads a `Design`; nothing here knows about Pulumi.

The numbers come from `gpudr.core.sizing` (the formulas the policy pack applies too) and the
prices from `gpudr.core.cost` (the one cost engine, which the drill uses too): this module
decides what is deployed and how much of it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from gpudr.core import cost, reference, sizing
from gpudr.core.cost import HOURS_PER_MONTH, SECONDS_PER_MONTH, Usage
from gpudr.core.enums import (
    DR_PATTERNS,
    DUAL_REGION,
    PULLED,
    Cloud,
    DataClass,
    LinkKind,
    Mechanism,
    Pattern,
    PoolKind,
    ServicePath,
    SiteRole,
    WorkloadKind,
)
from gpudr.core.spec import PAIRS, Cluster, Plan, Service, Site, gcs_dual_region
from gpudr.core.units import fmt_duration, transfer_seconds

__all__ = ["SECONDS_PER_MONTH", "DataFlow", "Design", "Path", "Pool", "Workload", "design"]


@dataclass(frozen=True)
class DataFlow:
    """One data class replicated from a primary to one DR site."""

    data_class: DataClass
    primary: str
    dr: str
    mechanism: Mechanism
    path: str  # key into Design.paths
    flow: sizing.Flow
    rpo_s: float | None
    rto_s: float | None
    estimate: sizing.RpoEstimate
    estimated_rto_s: float | None
    monthly_bytes: float
    replica_class: str
    notes: tuple[str, ...]
    schedule: sizing.Schedule | None = None


@dataclass(frozen=True)
class Path:
    """Capacity that a set of flows between two sites shares."""

    key: str
    primary: str
    dr: str
    kind: str  # a ServicePath (a managed mechanism's own) or a LinkKind (the DR link)
    capacity_gbps: float
    capacity_source: str
    required_gbps: float  # summed over flows, before headroom
    headroom: float
    flows: tuple[str, ...]
    ports: sizing.PortPlan | None = None
    gateway_sku: str | None = None  # vpn: the Azure VPN gateway SKU sized for the need

    @property
    def needed_gbps(self) -> float:
        return self.required_gbps * self.headroom

    @property
    def ok(self) -> bool:
        return sizing.fits(self.needed_gbps, self.capacity_gbps)


@dataclass(frozen=True)
class PatternOption:
    pattern: Pattern
    estimated_rto_s: float
    monthly_usd: float
    meets: bool
    stages: dict[str, float]


@dataclass(frozen=True)
class Pool:
    """A GPU node pool at a DR site mirroring a primary cluster's training pool or a service."""

    name: str
    kind: PoolKind
    cluster: str
    primary: str
    dr: str
    gpu: str
    instance_type: str
    gpus_per_node: int
    efa_interfaces: int
    nodes: int
    pattern: Pattern
    standing: int
    reserved: bool
    rpo_s: float | None
    rto_s: float | None
    estimated_rpo_s: float | None
    options: tuple[PatternOption, ...]
    notes: tuple[str, ...]

    @property
    def chosen(self) -> PatternOption:
        return next(o for o in self.options if o.pattern == self.pattern)

    @property
    def workload_name(self) -> str:
        """Its row's name in the verdict table: `cluster-<name>` for a training pool, the pool's
        own (`svc-<name>`) for a service."""
        return self.name if self.kind == PoolKind.SERVICE else f"cluster-{self.name}"


@dataclass(frozen=True)
class Workload:
    """One row of the verdict table (the JSON contract's `workloads`)."""

    name: str
    kind: WorkloadKind
    pair: str
    rpo_s: float | None
    rto_s: float | None
    pattern: Pattern | None
    mechanism: Mechanism | None
    required_gbps: float | None
    provisioned_gbps: float | None
    estimated_rpo_s: float | None
    estimated_rto_s: float | None
    meets: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Design:
    plan: Plan
    flows: tuple[DataFlow, ...]
    paths: dict[str, Path]
    pools: tuple[Pool, ...]
    workloads: tuple[Workload, ...]
    cost: cost.CostReport
    alternatives: dict[str, tuple[float, bool]] = field(default_factory=dict)

    @property
    def meets(self) -> bool:
        return all(w.meets for w in self.workloads)

    def standing_clusters(self, dr: str) -> tuple[str, ...]:
        """The DR site's clusters whose control plane stands before a failover."""
        return tuple(c for site, c in standing_clusters(self.pools) if site == dr)

    def replication_meets(self, f: DataFlow) -> bool:
        """Whether replication holds the class's RPO: its estimate within the target and its
        path within capacity (with headroom). The data's own RTO (reading it at the DR site) is
        not replication's: this is what the policy pack can check, and must agree with."""
        return _meets(f.rpo_s, f.estimate.estimated_s) and self.paths[f.path].ok


def standing_clusters(pools: Iterable[Pool]) -> list[tuple[str, str]]:
    """(DR site, cluster) of every DR cluster whose control plane stands before a failover: one
    of its pools is not backup/restore (a backup/restore cluster is created at failover)."""
    return sorted({(p.dr, p.cluster) for p in pools if p.pattern != Pattern.BACKUP_RESTORE})


# --- mechanisms -------------------------------------------------------------------------------


def choose_mechanism(
    requested: Mechanism | None, rpo_s: float | None, primary: Site, dr: Site
) -> Mechanism:
    """`auto` (None): dual write for RPO 0; otherwise the pair's managed mechanism with a time
    bound where there is one (S3 RTC; GCS turbo on a same-continent dual-region), else the pair's
    scheduled or best-effort mechanism, whose RPO the plan then computes or reports as unmet."""
    if requested is not None:
        return requested
    if rpo_s == 0:
        return Mechanism.DUAL_WRITE
    pair = (primary.cloud, dr.cloud)
    if pair == (Cloud.AWS, Cloud.AWS):
        return Mechanism.CRR if rpo_s is None else Mechanism.CRR_RTC
    if pair == (Cloud.GCP, Cloud.GCP):
        if gcs_dual_region(primary.region, dr.region):
            return Mechanism.GCS_DUAL_REGION if rpo_s is None else Mechanism.GCS_TURBO
        return Mechanism.STS
    if pair == (Cloud.AZURE, Cloud.AZURE):
        return Mechanism.AZURE_OR
    if pair == (Cloud.GCP, Cloud.AWS):
        return Mechanism.DATASYNC
    return Mechanism.STS  # aws -> gcp, azure -> gcp


def link_kind(primary: Site, dr: Site) -> LinkKind:
    """The DR link between two sites: the one the spec names, else the pair's default."""
    if dr.link is not None and dr.link.kind is not None:
        return dr.link.kind
    return PAIRS[(primary.cloud, dr.cloud)][1][0]


# A managed mechanism travels on its service's own path; dual writes on the DR link.
SERVICE_PATHS: dict[str, ServicePath] = {
    Mechanism.CRR_RTC: ServicePath.S3_RTC,
    Mechanism.CRR: ServicePath.S3_CRR,
    Mechanism.GCS_TURBO: ServicePath.GCS_TURBO,
    Mechanism.GCS_DUAL_REGION: ServicePath.GCS_DUAL_REGION,
    Mechanism.STS: ServicePath.STS,
    Mechanism.DATASYNC: ServicePath.DATASYNC,
    Mechanism.AZURE_OR: ServicePath.AZURE_OR,
}


def _path_kind(mechanism: Mechanism, primary: Site, dr: Site) -> str:
    return SERVICE_PATHS.get(mechanism) or link_kind(primary, dr)


def _monthly_bytes(plan: Plan, data_class: DataClass) -> float:
    c, w, d = plan.checkpoints, plan.weights, plan.datasets
    if data_class == DataClass.CHECKPOINTS and c:
        delta = sizing.checkpoint_delta_bytes(c.size_b, c.dedup_ratio, c.compression_ratio)
        return delta * SECONDS_PER_MONTH / c.interval_s
    if data_class == DataClass.WEIGHTS and w:
        return w.size_b * w.publishes_per_month
    if data_class == DataClass.DATASETS and d:
        return d.daily_change_b * cost.DAYS_PER_MONTH
    return 0.0


def _flows_for_pair(
    plan: Plan, primary: Site, dr: Site
) -> list[tuple[DataClass, Mechanism, sizing.Flow]]:
    out: list[tuple[DataClass, Mechanism, sizing.Flow]] = []
    c, w, d = plan.checkpoints, plan.weights, plan.datasets
    if c and c.site == primary.name:
        mech = choose_mechanism(c.replication, c.rpo_s, primary, dr)
        flow = sizing.checkpoint_flow(
            mech,
            size_b=c.size_b,
            interval_s=c.interval_s,
            dedup_ratio=c.dedup_ratio,
            compression_ratio=c.compression_ratio,
            rpo_s=c.rpo_s,
        )
        out.append((DataClass.CHECKPOINTS, mech, flow))
    if w and w.site == primary.name:
        mech = choose_mechanism(w.replication, w.rpo_s, primary, dr)
        flow = sizing.weights_flow(mech, w.size_b, w.rpo_s, w.publish_window_s)
        out.append((DataClass.WEIGHTS, mech, flow))
    if d and d.site == primary.name:
        mech = choose_mechanism(d.replication, d.rpo_s, primary, dr)
        out.append((DataClass.DATASETS, mech, sizing.dataset_flow(mech, d.daily_change_b, d.rpo_s)))
    return out


# --- paths ------------------------------------------------------------------------------------


def _quota_source(plan: Plan, key: str, default: str) -> str:
    return f"quotas.{key} (spec)" if key in plan.quotas.overridden else default


def _path_capacity(
    plan: Plan, kind: str, need_gbps: float
) -> tuple[float, str, sizing.PortPlan | None]:
    """What a path can carry (Gbps), where that figure comes from, and Direct Connect's ports."""
    sources = reference.defaults()["sources"]
    if kind == ServicePath.S3_RTC:
        url = sources["s3-rtc-best-practices"]["url"]
        src = _quota_source(plan, "s3_rtc_gbps", f"S3 RTC default rate quota {url}")
        return plan.quotas.s3_rtc_gbps, src, None
    if kind == ServicePath.S3_CRR:
        return math.inf, "S3 CRR without RTC has no rate quota (and no time guarantee)", None
    if kind in (ServicePath.GCS_TURBO, ServicePath.GCS_DUAL_REGION):
        return math.inf, "one dual-region bucket; no published replication rate limit", None
    if kind == ServicePath.AZURE_OR:
        return math.inf, "standard object replication has no rate limit (and no SLA)", None
    if kind == ServicePath.STS:
        default = "quotas.sts_gbps default (assumption: Google publishes no transfer rate)"
        return plan.quotas.sts_gbps, _quota_source(plan, "sts_gbps", default), None
    if kind == ServicePath.DATASYNC:
        default = "quotas.datasync_gbps default (assumption: AWS publishes no agentless rate)"
        return plan.quotas.datasync_gbps, _quota_source(plan, "datasync_gbps", default), None
    return _link_capacity(plan, kind, need_gbps)


def _link_capacity(
    plan: Plan, kind: str, need_gbps: float
) -> tuple[float, str, sizing.PortPlan | None]:
    if kind == LinkKind.VPN:
        _, capacity, src = sizing.vpn_gateway(need_gbps)
        return capacity, src, None
    if kind == LinkKind.HA_VPN:
        vpn = reference.defaults()["links"]["ha-vpn"]
        per_tunnel = min(float(v) for v in vpn["tunnel_gbps"].values())
        what = f"{vpn['tunnels']} HA VPN tunnels x {per_tunnel:g} Gbps (slower end)"
        return sizing.ha_vpn_gbps(), what, None
    if kind in (LinkKind.VPC_PEERING, LinkKind.VNET_PEERING):
        return math.inf, f"{kind}: no provisioned capacity (VM egress bounds it)", None
    if kind == LinkKind.TGW_PEERING:
        url = reference.defaults()["sources"]["tgw-quotas"]["url"]
        src = _quota_source(plan, "tgw_peering_gbps", f"transit gateway peering {url}")
        return plan.quotas.tgw_peering_gbps, src, None
    dx = reference.defaults()["links"]["direct-connect"]
    ports = {
        int(speed): reference.price("aws", "dx_port_hour", f"{speed}Gbps").usd
        for speed in dx["port_gbps"]
    }
    lag_max = {int(k): int(v) for k, v in dx["lag_max_ports"].items()}
    plan_ports = sizing.size_direct_connect(
        need_gbps, ports, int(dx["min_connections"]), lag_max, locations=2
    )
    return plan_ports.capacity_gbps, "Direct Connect ports sized by gpudr", plan_ports


def _group_flows(
    plan: Plan, primary: Site, dr: Site
) -> dict[str, list[tuple[DataClass, Mechanism, sizing.Flow]]]:
    """The pair's flows by the path they travel; GPU sites are linked for control traffic and
    failback even without data on the link."""
    grouped: dict[str, list[tuple[DataClass, Mechanism, sizing.Flow]]] = {}
    for cls, mech, flow in _flows_for_pair(plan, primary, dr):
        grouped.setdefault(_path_kind(mech, primary, dr), []).append((cls, mech, flow))
    if plan.clusters or plan.services:
        grouped.setdefault(link_kind(primary, dr), [])
    return grouped


def _path(plan: Plan, primary: Site, dr: Site, kind: str, flows: Iterable[sizing.Flow]) -> Path:
    members = list(flows)
    required = sum(f.required_gbps for f in members)
    capacity, source, ports = _path_capacity(plan, kind, required * plan.headroom)
    return Path(
        key=f"{primary.name}->{dr.name}:{kind}",
        primary=primary.name,
        dr=dr.name,
        kind=kind,
        capacity_gbps=capacity,
        capacity_source=source,
        required_gbps=required,
        headroom=plan.headroom,
        flows=tuple(f.name for f in members),
        ports=ports,
        gateway_sku=sizing.vpn_gateway(required * plan.headroom)[0]
        if kind == LinkKind.VPN
        else None,
    )


# --- data flows -------------------------------------------------------------------------------


def _estimate(
    plan: Plan, cls: DataClass, flow: sizing.Flow, path: Path, others: float
) -> tuple[sizing.RpoEstimate, sizing.Schedule | None]:
    """The class's worst-case RPO on its path, and the schedule of a scheduled pull."""
    mech = flow.mechanism
    if not sizing.is_scheduled(mech):
        est = sizing.achieved_rpo(
            flow, sizing.lag_floor_s(mech), sizing.is_synchronous(mech), path.capacity_gbps, others
        )
        return est, None
    spec = plan.data_spec(cls)
    schedule = sizing.scheduled_transfer(
        flow,
        spec.rpo_s if spec else None,
        path.capacity_gbps,
        others,
        min_interval_s=sizing.min_pull_interval_s(mech),
        headroom=plan.headroom,
    )
    est = sizing.RpoEstimate(
        schedule.estimated_rpo_s,
        schedule.interval_s + schedule.transfer_s,
        schedule.transfer_s,
        False,
        f"scheduled every {fmt_duration(schedule.interval_s)}: the interval plus one run's "
        f"transfer ({fmt_duration(schedule.transfer_s)}); no SLA on transfer speed",
    )
    return est, schedule


def _pair_design(plan: Plan, primary: Site, dr: Site) -> tuple[list[DataFlow], list[Path]]:
    flows: list[DataFlow] = []
    paths: list[Path] = []
    for kind, members in _group_flows(plan, primary, dr).items():
        path = _path(plan, primary, dr, kind, (f for _, _, f in members))
        paths.append(path)
        for cls, mech, flow in members:
            others = sum(f.steady_gbps for c, _, f in members if c != cls)
            est, schedule = _estimate(plan, cls, flow, path, others)
            flows.append(
                _data_flow(plan, FlowFacts(primary, dr, cls, mech, path.key, flow, est, schedule))
            )
    return flows, paths


@dataclass(frozen=True)
class FlowFacts:
    """What one class's data flow is made of, before its notes and verdict."""

    primary: Site
    dr: Site
    data_class: DataClass
    mechanism: Mechanism
    path: str
    flow: sizing.Flow
    estimate: sizing.RpoEstimate
    schedule: sizing.Schedule | None


def _data_flow(plan: Plan, x: FlowFacts) -> DataFlow:
    spec = plan.data_spec(x.data_class)
    assert spec is not None
    replica_class = reference.defaults()["storage"]["replica_class"][x.dr.cloud][x.data_class]
    return DataFlow(
        data_class=x.data_class,
        primary=x.primary.name,
        dr=x.dr.name,
        mechanism=x.mechanism,
        path=x.path,
        flow=x.flow,
        rpo_s=spec.rpo_s,
        rto_s=spec.rto_s,
        estimate=x.estimate,
        estimated_rto_s=_data_rto(plan, x),
        monthly_bytes=_monthly_bytes(plan, x.data_class),
        replica_class=str(replica_class),
        notes=(x.estimate.reason, *_data_notes(plan, x, spec.rpo_s)),
        schedule=x.schedule,
    )


def _data_rto(plan: Plan, x: FlowFacts) -> float | None:
    """The data is already at the DR site: usable after detection and the read of its working
    set by one node."""
    spec = plan.data_spec(x.data_class)
    if spec is None or spec.rto_s is None:
        return None
    c = plan.checkpoints
    if x.data_class == DataClass.CHECKPOINTS and c:
        working = c.size_b / c.compression_ratio
    else:
        working = x.flow.burst_bytes if x.data_class == DataClass.WEIGHTS else 0.0
    return plan.recovery.detection_s + transfer_seconds(working, plan.recovery.read_gbps_per_node)


def _data_notes(plan: Plan, x: FlowFacts, rpo_s: float | None) -> Iterator[str]:
    yield from _lag_bound_note(plan, x, rpo_s)
    yield from _seed_note(plan, x)
    if x.mechanism == Mechanism.DUAL_WRITE:
        yield "every writer must write both copies before it reports success"
    yield from _schedule_notes(plan, x, rpo_s)
    if x.mechanism in DUAL_REGION:
        yield (
            f"one dual-region bucket spans {x.primary.region} and {x.dr.region}, owned by the DR "
            "site's stack"
        )
    if x.mechanism == Mechanism.AZURE_OR:
        yield _azure_priority_note(x, rpo_s)


def _lag_bound_note(plan: Plan, x: FlowFacts, rpo_s: float | None) -> Iterator[str]:
    floor = sizing.lag_floor_s(x.mechanism)
    c = plan.checkpoints
    if x.data_class != DataClass.CHECKPOINTS or not c or rpo_s is None or floor is None:
        return
    if rpo_s - c.interval_s < floor:
        yield (
            f"no bandwidth can meet this: the interval ({fmt_duration(c.interval_s)}) plus the "
            f"{x.mechanism} lag bound ({fmt_duration(floor)}) exceeds the RPO; checkpoint more "
            "often or relax the RPO"
        )


def _seed_note(plan: Plan, x: FlowFacts) -> Iterator[str]:
    """Objects that exist before S3 replication starts are not replicated by it."""
    d = plan.datasets
    if x.data_class != DataClass.DATASETS or not d or x.mechanism != Mechanism.CRR_RTC:
        return
    capacity = plan.quotas.s3_rtc_gbps
    if capacity:
        seed = transfer_seconds(d.size_b, capacity)
        once = d.size_b / cost.GB * reference.price("aws", "transfer_gb", "inter_region").usd
        yield (
            "objects that exist before replication starts need S3 Batch Replication: "
            f"about {fmt_duration(seed)} at {capacity:g} Gbps and a one-time transfer of "
            f"about ${once:,.0f}"
        )


def _schedule_notes(plan: Plan, x: FlowFacts, rpo_s: float | None) -> Iterator[str]:
    schedule = x.schedule
    if schedule is not None and not schedule.fits:
        within = rpo_s is not None and schedule.estimated_rpo_s <= rpo_s
        yield (
            "even the shortest schedule the service allows "
            f"({fmt_duration(schedule.interval_s)}) "
            + ("meets the RPO only without the headroom factor" if within else "misses the RPO")
            + ": relax it, or use dual-write for this class"
        )
    if x.mechanism in PULLED and x.data_class in (DataClass.DATASETS, DataClass.WEIGHTS):
        d = plan.datasets
        size = d.size_b if x.data_class == DataClass.DATASETS and d else x.flow.burst_bytes
        capacity = (
            plan.quotas.sts_gbps if x.mechanism == Mechanism.STS else plan.quotas.datasync_gbps
        )
        first_run = fmt_duration(transfer_seconds(size, capacity))
        yield (
            "the first run copies everything already in the source: "
            f"{first_run} at {capacity:g} Gbps"
        )


def _azure_priority_note(x: FlowFacts, rpo_s: float | None) -> str:
    facts = reference.mechanism(Mechanism.AZURE_OR)
    cap = float(facts["priority_max_gbps"])
    lag = float(facts["priority_lag_s"])
    why = []
    base_s = x.flow.base_rpo_s
    if rpo_s is not None and rpo_s < lag + base_s:
        base = f" plus the {fmt_duration(base_s)} interval" if base_s else ""
        why.append(f"its {fmt_duration(lag)} bound{base} exceeds this RPO")
    if x.flow.required_gbps > cap:
        why.append(
            f"this class needs {x.flow.required_gbps:.2f} Gbps of ingress, above the "
            f"{cap:g} Gbps where that SLA is void"
        )
    return "priority replication (99.9% in 15 min) is not settable through azure-native 3.29" + (
        " and would not help: " + "; ".join(why) if why else ""
    )


_meets = sizing.within


# --- GPU pools ----------------------------------------------------------------------------------


def _rto_params(plan: Plan, kind: PoolKind) -> sizing.RtoParams:
    r = plan.recovery
    return sizing.RtoParams(
        detection_s=r.detection_s,
        traffic_shift_s=r.traffic_shift_s,
        infra_create_s=r.infra_create_s,
        gpu_node_boot_s=r.gpu_node_boot_s,
        gpu_capacity_wait_s=r.gpu_capacity_wait_s,
        warm_scale_up_s=r.warm_scale_up_s,
        restart_s=r.restart_training_s if kind == PoolKind.TRAINING else r.restart_service_s,
        read_gbps_per_node=r.read_gbps_per_node,
    )


def _working_set(plan: Plan, kind: PoolKind) -> float:
    """Bytes a pool must read at the DR site before it works: the latest full checkpoint for
    training (compressed as stored), the whole weights for a service."""
    if kind == PoolKind.TRAINING:
        c = plan.checkpoints
        return c.size_b / c.compression_ratio if c else 0.0
    return plan.weights.size_b if plan.weights else 0.0


@dataclass(frozen=True)
class PoolSpec:
    """One DR pool to plan: which workload, where, and what its cluster already has standing."""

    primary: Site
    dr: Site
    name: str
    kind: PoolKind
    workload: Cluster | Service
    rpo_estimate: float | None  # a service's: the weights' estimated RPO at the DR site
    # Another pool keeps this DR cluster's control plane up: backup/restore creates no
    # infrastructure at failover, and no pattern pays for the control plane on this pool.
    control_plane_standing: bool = False

    @property
    def cluster(self) -> str:
        w = self.workload
        return w.cluster if isinstance(w, Service) else w.name


def _pattern_option(plan: Plan, p: PoolSpec, instance_type: str, pattern: Pattern) -> PatternOption:
    params = _rto_params(plan, p.kind)
    if p.control_plane_standing:
        params = replace(params, infra_create_s=0.0)
    nodes = p.workload.nodes
    stages = sizing.rto_stages(
        pattern,
        p.kind,
        nodes=nodes,
        working_set_b=_working_set(plan, p.kind),
        reserved=p.dr.reserve_capacity,
        params=params,
    )
    total = sizing.rto_total(stages)
    usages = list(_gpu_usages(p.dr, p.name, instance_type, pattern, nodes))
    if pattern != Pattern.BACKUP_RESTORE and not p.control_plane_standing:
        usages += _cluster_usages(p.dr, p.cluster, dr=True)
    return PatternOption(
        pattern, total, cost.total(usages), _meets(p.workload.rto_s, total), stages
    )


def _plan_pool(plan: Plan, p: PoolSpec) -> Pool:
    """Price and time every pattern for one pool and pick one: the spec's, else the cheapest
    that meets the RTO, else the fastest."""
    # The same GPU as the DR cloud sells it (p5.48xlarge at AWS is a3-highgpu-8g at GCP).
    w, dr = p.workload, p.dr
    offer = reference.gpu_offer(dr.cloud, w.gpu)
    if offer is None:
        raise ValueError(f"{dr.cloud} offers no {w.gpu}; the spec check should have said so")
    options = [_pattern_option(plan, p, offer.instance_type, pattern) for pattern in DR_PATTERNS]
    forced = w.pattern or dr.pattern
    notes: list[str] = []
    if forced is not None:
        pattern = forced
        notes.append(f"pattern {forced} set in the spec")
    else:
        choice = sizing.cheapest(
            [(o.pattern, o.monthly_usd, o.meets, o.estimated_rto_s) for o in options]
        )
        if choice is None:
            pattern = Pattern.ACTIVE_ACTIVE
            notes.append("no pattern meets the RTO; active-active is the fastest")
        else:
            pattern = Pattern(choice)
    if dr.reserve_capacity:
        notes.append(f"capacity reservation for {w.nodes} nodes is billed whether used or not")
    return Pool(
        name=p.name,
        kind=p.kind,
        cluster=p.cluster,
        primary=p.primary.name,
        dr=dr.name,
        gpu=w.gpu,
        instance_type=offer.instance_type,
        gpus_per_node=offer.gpus_per_node,
        efa_interfaces=offer.efa_interfaces if isinstance(w, Cluster) else 0,
        nodes=w.nodes,
        pattern=pattern,
        standing=sizing.standing_nodes(pattern, w.nodes, dr.warm_fraction),
        reserved=dr.reserve_capacity,
        rpo_s=w.rpo_s if isinstance(w, Service) else None,
        rto_s=w.rto_s,
        estimated_rpo_s=p.rpo_estimate,
        options=tuple(options),
        notes=tuple(notes),
    )


def _plan_pools(plan: Plan, primary: Site, dr: Site, weights_rpo: float | None) -> list[Pool]:
    """Pools per DR cluster, in two passes: each pool chooses alone; if any pool keeps the
    cluster's control plane up, the others choose again knowing it is standing."""
    specs = [
        PoolSpec(primary, dr, cl.pool_name, PoolKind.TRAINING, cl, None)
        for cl in plan.clusters.values()
        if cl.site == primary.name
    ] + [
        PoolSpec(primary, dr, svc.pool_name, PoolKind.SERVICE, svc, weights_rpo)
        for svc in plan.services.values()
        if svc.site == primary.name
    ]
    first = [_plan_pool(plan, s) for s in specs]
    out: list[Pool] = []
    for spec, pool in zip(specs, first, strict=True):
        others_stand = any(
            other.cluster == spec.cluster and p2.pattern != Pattern.BACKUP_RESTORE
            for other, p2 in zip(specs, first, strict=True)
            if other.name != spec.name
        )
        again = replace(spec, control_plane_standing=True)
        out.append(_plan_pool(plan, again) if others_stand else pool)
    return out


# --- the design -------------------------------------------------------------------------------


def design(plan: Plan) -> Design:
    flows: list[DataFlow] = []
    paths: dict[str, Path] = {}
    pools: list[Pool] = []
    for primary, dr in plan.pairs():
        pair_flows, pair_paths = _pair_design(plan, primary, dr)
        flows += pair_flows
        paths.update((p.key, p) for p in pair_paths)
        # A service at the DR site serves what was replicated there: its RPO is the weights'.
        # Without a weights class gpudr protects none of its data, so it has no estimate.
        est_weights = next(
            (f.estimate.estimated_s for f in pair_flows if f.data_class == DataClass.WEIGHTS),
            None,
        )
        pools.extend(_plan_pools(plan, primary, dr, est_weights))
    return Design(
        plan,
        tuple(flows),
        paths,
        tuple(pools),
        tuple(_workloads(flows, paths, pools)),
        cost.report(_usages(plan, flows, paths, pools)),
        _alternatives(plan, pools),
    )


def _workloads(flows: list[DataFlow], paths: dict[str, Path], pools: list[Pool]) -> list[Workload]:
    return [_data_workload(f, paths[f.path]) for f in flows] + [_pool_workload(p) for p in pools]


def _data_workload(f: DataFlow, path: Path) -> Workload:
    notes = list(f.notes)
    if not path.ok:
        notes.append(
            f"path {path.kind} needs {path.needed_gbps:.2f} Gbps with headroom but has "
            f"{path.capacity_gbps:g} Gbps"
        )
    if not path.ok and f.estimate.guaranteed:
        notes.append("the mechanism's guarantee does not hold while the path is over capacity")
    meets = _meets(f.rpo_s, f.estimate.estimated_s) and _meets(f.rto_s, f.estimated_rto_s)
    return Workload(
        name=f.data_class,
        kind=WorkloadKind.DATA,
        pair=f"{f.primary}->{f.dr}",
        rpo_s=f.rpo_s,
        rto_s=f.rto_s,
        pattern=None,
        mechanism=f.mechanism,
        required_gbps=f.flow.required_gbps,
        provisioned_gbps=path.capacity_gbps,
        estimated_rpo_s=f.estimate.estimated_s,
        estimated_rto_s=f.estimated_rto_s,
        meets=meets and path.ok,
        notes=tuple(notes),
    )


def _pool_workload(p: Pool) -> Workload:
    chosen = p.chosen
    return Workload(
        name=p.workload_name,
        kind=WorkloadKind.SERVICE if p.kind == PoolKind.SERVICE else WorkloadKind.CLUSTER,
        pair=f"{p.primary}->{p.dr}",
        rpo_s=p.rpo_s,
        rto_s=p.rto_s,
        pattern=p.pattern,
        mechanism=None,
        required_gbps=None,
        provisioned_gbps=None,
        estimated_rpo_s=p.estimated_rpo_s,
        estimated_rto_s=chosen.estimated_rto_s,
        meets=_meets(p.rto_s, chosen.estimated_rto_s) and _meets(p.rpo_s, p.estimated_rpo_s),
        notes=p.notes,
    )


# --- what the DR posture deploys, as priced usages (the cost engine prices them) ---------------


def _usage(rule: str, site: Site, quantity: float, dr: bool, **fields: object) -> Usage:
    return Usage(rule, site.cloud, site.name, quantity, dr, fields)


def _cluster_usages(site: Site, cluster: str, dr: bool) -> list[Usage]:
    return cost.cluster_usages(site.cloud, site.name, cluster, dr=dr)


def _gpu_usages(
    site: Site, pool: str, instance_type: str, pattern: Pattern, nodes: int
) -> Iterator[Usage]:
    """A DR pool's GPU nodes: all of them when reserved (billed whether used or not), else the
    ones its pattern keeps standing."""
    reserved = site.reserve_capacity
    billed = nodes if reserved else sizing.standing_nodes(pattern, nodes, site.warm_fraction)
    what = "reserved" if reserved else f"standing ({pattern})"
    if billed:
        yield cost.gpu_usage(
            site.cloud,
            site.name,
            pool=pool,
            instance_type=instance_type,
            nodes=billed,
            what=what,
            dr=True,
        )


def _usages(
    plan: Plan, flows: list[DataFlow], paths: dict[str, Path], pools: list[Pool]
) -> list[Usage]:
    out: list[Usage] = []
    for site in plan.sites.values():
        out += _site_usages(plan, site, flows)
    for p in pools:
        out += _gpu_usages(plan.sites[p.dr], p.name, p.instance_type, p.pattern, p.nodes)
    for dr_name, cluster in standing_clusters(pools):
        out += _cluster_usages(plan.sites[dr_name], cluster, dr=True)
    for f in flows:
        out += _flow_usages(plan, f, paths[f.path])
    out += _endpoint_usages(plan, flows)
    for path in paths.values():
        out += _link_usages(plan, path)
    return out + _log_usages(plan, pools)


def _log_usages(plan: Plan, pools: list[Pool]) -> list[Usage]:
    """Every site's access, flow and control-plane logs (docs/security.md), with the plan's
    volumes: a primary logs its own clusters, a DR site its standing ones."""
    lg = plan.logging
    volume = cost.LogVolume(
        access_gb=lg.access_b_month / cost.GB,
        flow_gb=lg.flow_b_month / cost.GB,
        cluster_gb=lg.cluster_b_month / cost.GB,
        retention_days=lg.retention_days,
    )
    standing = standing_clusters(pools)
    out: list[Usage] = []
    for site in plan.sites.values():
        if site.role == SiteRole.DR:
            clusters = sum(1 for dr, _ in standing if dr == site.name)
        else:
            clusters = sum(1 for c in plan.clusters.values() if c.site == site.name)
        is_dr = site.role == SiteRole.DR
        out += cost.log_usages(site.cloud, site.name, volume, clusters=clusters, dr=is_dr)
    return out


def _site_usages(plan: Plan, site: Site, flows: list[DataFlow]) -> list[Usage]:
    """Every site's data key and NAT; a primary's own clusters, pools and data copies (shown for
    scale, not part of the DR posture)."""
    is_dr = site.role == SiteRole.DR
    out = [_usage("data-key", site, 1, is_dr), *cost.nat_usages(site.cloud, site.name, dr=is_dr)]
    if is_dr:
        return out
    workloads: list[Cluster | Service] = [*plan.clusters.values(), *plan.services.values()]
    for w in workloads:
        if w.site != site.name:
            continue
        out.append(
            cost.gpu_usage(
                site.cloud,
                site.name,
                pool=w.pool_name,
                instance_type=w.instance_type,
                nodes=w.nodes,
                what="(primary)",
                dr=False,
            )
        )
        if isinstance(w, Cluster):
            out += _cluster_usages(site, w.name, dr=False)
    return out + _primary_storage(plan, site, flows)


def _primary_storage(plan: Plan, site: Site, flows: list[DataFlow]) -> list[Usage]:
    # A dual-region bucket is priced once, at the DR site that owns it.
    dual_region = {
        f.data_class for f in flows if f.primary == site.name and f.mechanism in DUAL_REGION
    }
    sclass = str(reference.defaults()["storage"]["primary_class"][site.cloud])
    out = []
    for cls in (DataClass.CHECKPOINTS, DataClass.WEIGHTS, DataClass.DATASETS):
        spec = plan.data_spec(cls)
        if spec is None or spec.site != site.name or cls in dual_region:
            continue
        gb = replica_bytes(plan, cls) / cost.GB
        out.append(_usage("storage", site, gb, False, what=cls, storage_class=sclass))
    return out


def _flow_usages(plan: Plan, f: DataFlow, path: Path) -> list[Usage]:
    primary, dr = plan.sites[f.primary], plan.sites[f.dr]
    gb = f.monthly_bytes / cost.GB
    stored_gb = replica_bytes(plan, f.data_class) / cost.GB
    out: list[Usage] = []
    if f.mechanism in DUAL_REGION:
        sclass = str(reference.defaults()["storage"]["dual_region_class"][Cloud.GCP])
        what = f"{f.data_class} dual-region bucket"
        out.append(_usage("storage", dr, stored_gb, True, what=what, storage_class=sclass))
    else:
        what = f"{f.data_class} replica"
        out.append(_usage("storage", dr, stored_gb, True, what=what, storage_class=f.replica_class))
    if path.kind == LinkKind.DIRECT_CONNECT:
        out.append(_usage("dx-transfer-out", primary, gb, True, data_class=f.data_class))
    elif f.mechanism not in DUAL_REGION:
        # (a dual-region bucket's replication is priced by its own fee below)
        route = cost.TRANSFER_ROUTE[(primary.cloud, dr.cloud)]
        out.append(
            _usage(
                "transfer",
                primary,
                gb,
                True,
                route=route,
                data_class=f.data_class,
                src=primary.cloud,
                dst=dr.cloud,
            )
        )
    return out + list(_mechanism_usages(plan, f, gb))


def _mechanism_usages(plan: Plan, f: DataFlow, gb: float) -> Iterator[Usage]:
    primary, dr = plan.sites[f.primary], plan.sites[f.dr]
    if f.mechanism in cost.MECHANISM_FEE:
        fee_cloud, rule = cost.MECHANISM_FEE[f.mechanism]
        site = dr if fee_cloud == dr.cloud else primary
        yield Usage(rule, fee_cloud, site.name, gb, True, {"data_class": f.data_class})
    if f.mechanism == Mechanism.DATASYNC and f.schedule is not None:
        # Enhanced mode bills every task execution; one per schedule interval.
        runs = SECONDS_PER_MONTH / f.schedule.interval_s
        every = fmt_duration(f.schedule.interval_s)
        yield _usage("datasync-executions", dr, runs, True, data_class=f.data_class, every=every)
    if f.mechanism in (Mechanism.CRR_RTC, Mechanism.CRR):
        yield _usage("replication-metrics", primary, 4, True, data_class=f.data_class)
        yield _usage("replication-alarms", primary, 2, True, data_class=f.data_class)
    if f.mechanism == Mechanism.DUAL_WRITE and dr.cloud == Cloud.AWS:
        # Per GB the receiving site's S3 interface endpoint takes in (its hours: below).
        yield _usage("endpoint-processing", dr, gb, True, data_class=f.data_class)
        if primary.cloud == Cloud.AWS:
            yield _usage("tgw-processing", primary, gb, True, data_class=f.data_class)


def _endpoint_usages(plan: Plan, flows: list[DataFlow]) -> Iterator[Usage]:
    """One S3 interface endpoint per site receiving dual writes, billed per AZ-hour."""
    receiving = {
        f.dr
        for f in flows
        if f.mechanism == Mechanism.DUAL_WRITE and plan.sites[f.dr].cloud == Cloud.AWS
    }
    for name in sorted(receiving):
        site = plan.sites[name]
        azs = len(site.azs)
        yield _usage("endpoint-hours", site, azs * HOURS_PER_MONTH, True, azs=azs)


def _link_usages(plan: Plan, path: Path) -> Iterator[Usage]:
    if path.kind == LinkKind.TGW_PEERING:
        # One VPC attachment per site plus the peering attachment on each side.
        for name in (path.primary, path.dr):
            yield _usage("tgw-attachments", plan.sites[name], 2 * HOURS_PER_MONTH, True)
    if path.kind == LinkKind.DIRECT_CONNECT and path.ports:
        ports = path.ports
        yield _usage(
            "dx-ports",
            plan.sites[path.dr],
            ports.ports * HOURS_PER_MONTH,
            True,
            ports=ports.ports,
            port_gbps=ports.port_gbps,
        )
    if path.kind in (LinkKind.HA_VPN, LinkKind.VPN):
        yield from _vpn_usages(plan, path)


def _vpn_usages(plan: Plan, path: Path) -> Iterator[Usage]:
    """Each cloud bills its own end, whichever side is the primary."""
    by_cloud = {plan.sites[n].cloud: plan.sites[n] for n in (path.primary, path.dr)}
    tunnels = int(reference.defaults()["links"][path.kind]["tunnels"])
    yield _usage(
        "ha-vpn-tunnels", by_cloud[Cloud.GCP], tunnels * HOURS_PER_MONTH, True, tunnels=tunnels
    )
    if Cloud.AWS in by_cloud:
        yield _usage(
            "aws-vpn-connections", by_cloud[Cloud.AWS], 2 * HOURS_PER_MONTH, True, connections=2
        )
    if Cloud.AZURE in by_cloud and path.gateway_sku:
        yield _usage(
            "azure-vpn-gateway", by_cloud[Cloud.AZURE], HOURS_PER_MONTH, True, sku=path.gateway_sku
        )


def replica_bytes(plan: Plan, cls: DataClass) -> float:
    """Bytes kept per copy: the last N checkpoints as stored (compressed, counted whole), every
    weights version still under object lock, the dataset."""
    c, w, d = plan.checkpoints, plan.weights, plan.datasets
    if cls == DataClass.CHECKPOINTS and c:
        return c.keep * c.size_b / c.compression_ratio
    if cls == DataClass.WEIGHTS and w:
        # Locked versions cannot be deleted until their retention ends.
        months = w.retention_s / (cost.DAYS_PER_MONTH * 86400)
        return w.size_b * max(1.0, w.publishes_per_month * months)
    if cls == DataClass.DATASETS and d:
        return d.size_b
    return 0.0


def _alternatives(plan: Plan, pools: list[Pool]) -> dict[str, tuple[float, bool]]:
    """The DR GPU and control-plane bill if every pool used one pattern, and whether every
    pool's RTO target would hold. Timed afresh: with every pool on backup/restore, no control
    plane stands, so each pays the infrastructure stage."""
    out: dict[str, tuple[float, bool]] = {}
    for pattern in DR_PATTERNS:
        usages: list[Usage] = []
        ok = True
        for p in pools:
            dr = plan.sites[p.dr]
            usages += _gpu_usages(dr, p.name, p.instance_type, pattern, p.nodes)
            stages = sizing.rto_stages(
                pattern,
                p.kind,
                nodes=p.nodes,
                working_set_b=_working_set(plan, p.kind),
                reserved=p.reserved,
                params=_rto_params(plan, p.kind),
            )
            ok = ok and _meets(p.rto_s, sizing.rto_total(stages))
        if pattern != Pattern.BACKUP_RESTORE:
            for dr_name, cluster in sorted({(p.dr, p.cluster) for p in pools}):
                usages += _cluster_usages(plan.sites[dr_name], cluster, dr=True)
        out[pattern] = (cost.total(usages), ok)
    return out
