"""From a validated plan to a DR design: mechanisms, paths, GPU pools with their patterns, the
per-workload verdicts and the monthly cost. Everything downstream (stack config, components,
reports) reads a `Design`; nothing here knows about Pulumi.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from gpudr.core import cost, reference, sizing
from gpudr.core.enums import Cloud, LinkKind, Mechanism
from gpudr.core.spec import PAIRS, Cluster, Plan, Service, Site, gcs_dual_region
from gpudr.core.units import fmt_duration, transfer_seconds

SECONDS_PER_MONTH = cost.DAYS_PER_MONTH * 86400


@dataclass(frozen=True)
class DataFlow:
    """One data class replicated from a primary to one DR site."""

    data_class: str
    primary: str
    dr: str
    mechanism: str
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
    kind: str  # s3-rtc | s3-crr | gcs-turbo | gcs-dual-region | sts | azure-or | a link kind
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
        return self.needed_gbps <= self.capacity_gbps + 1e-9


@dataclass(frozen=True)
class PatternOption:
    pattern: str
    estimated_rto_s: float
    monthly_usd: float
    meets: bool
    stages: dict[str, float]


@dataclass(frozen=True)
class Pool:
    """A GPU node pool at a DR site mirroring a primary cluster's training pool or a service."""

    name: str
    kind: str  # training | service
    cluster: str
    primary: str
    dr: str
    gpu: str
    instance_type: str
    gpus_per_node: int
    efa_interfaces: int
    nodes: int
    pattern: str
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
        return self.name if self.kind == "service" else f"cluster-{self.name}"


@dataclass(frozen=True)
class Workload:
    """One row of the verdict table (the JSON contract's `workloads`)."""

    name: str
    kind: str  # data | cluster | service
    pair: str
    rpo_s: float | None
    rto_s: float | None
    pattern: str | None
    mechanism: str | None
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


def _path_kind(mechanism: str, primary: Site, dr: Site) -> str:
    """Managed mechanisms travel on their service's own path; dual writes on the DR link."""
    return {
        "crr-rtc": "s3-rtc",
        "crr": "s3-crr",
        "gcs-turbo": "gcs-turbo",
        "gcs-dual-region": "gcs-dual-region",
        "sts": "sts",
        "datasync": "datasync",
        "azure-or": "azure-or",
    }.get(mechanism) or link_kind(primary, dr)


def _monthly_bytes(plan: Plan, data_class: str) -> float:
    if data_class == "checkpoints" and plan.checkpoints:
        c = plan.checkpoints
        delta = sizing.checkpoint_delta_bytes(c.size_b, c.dedup_ratio, c.compression_ratio)
        return delta * SECONDS_PER_MONTH / c.interval_s
    if data_class == "weights" and plan.weights:
        return plan.weights.size_b * plan.weights.publishes_per_month
    if data_class == "datasets" and plan.datasets:
        return plan.datasets.daily_change_b * cost.DAYS_PER_MONTH
    return 0.0


def _flows_for_pair(plan: Plan, primary: Site, dr: Site) -> list[tuple[str, str, sizing.Flow]]:
    out: list[tuple[str, str, sizing.Flow]] = []
    c, w, d = plan.checkpoints, plan.weights, plan.datasets
    if c and c.site == primary.name:
        mech = choose_mechanism(c.replication, c.rpo_s, primary, dr)
        flow = sizing.checkpoint_flow(
            mech, c.size_b, c.interval_s, c.dedup_ratio, c.compression_ratio, c.rpo_s
        )
        out.append(("checkpoints", mech, flow))
    if w and w.site == primary.name:
        mech = choose_mechanism(w.replication, w.rpo_s, primary, dr)
        out.append(
            ("weights", mech, sizing.weights_flow(mech, w.size_b, w.rpo_s, w.publish_window_s))
        )
    if d and d.site == primary.name:
        mech = choose_mechanism(d.replication, d.rpo_s, primary, dr)
        out.append(("datasets", mech, sizing.dataset_flow(mech, d.daily_change_b)))
    return out


def _path_capacity(
    plan: Plan, kind: str, need_gbps: float
) -> tuple[float, str, sizing.PortPlan | None]:
    if kind == "s3-rtc":
        src = (
            "quotas.s3_rtc_gbps (spec)"
            if "s3_rtc_gbps" in plan.quotas.overridden
            else (
                "S3 RTC default rate quota "
                + reference.defaults()["sources"]["s3-rtc-best-practices"]["url"]
            )
        )
        return plan.quotas.s3_rtc_gbps, src, None
    if kind == "s3-crr":
        return math.inf, "S3 CRR without RTC has no rate quota (and no time guarantee)", None
    if kind in ("gcs-turbo", "gcs-dual-region"):
        return math.inf, "one dual-region bucket; no published replication rate limit", None
    if kind == "azure-or":
        return math.inf, "standard object replication has no rate limit (and no SLA)", None
    if kind == "sts":
        src = (
            "quotas.sts_gbps (spec)"
            if "sts_gbps" in plan.quotas.overridden
            else "quotas.sts_gbps default (assumption: Google publishes no transfer rate)"
        )
        return plan.quotas.sts_gbps, src, None
    if kind == "datasync":
        src = (
            "quotas.datasync_gbps (spec)"
            if "datasync_gbps" in plan.quotas.overridden
            else "quotas.datasync_gbps default (assumption: AWS publishes no agentless rate)"
        )
        return plan.quotas.datasync_gbps, src, None
    if kind == "vpn":
        _, capacity, src = vpn_gateway(need_gbps)
        return capacity, src, None
    if kind == "ha-vpn":
        vpn = reference.defaults()["links"]["ha-vpn"]
        per_tunnel = min(float(v) for v in vpn["tunnel_gbps"].values())
        return (
            int(vpn["tunnels"]) * per_tunnel,
            f"{vpn['tunnels']} HA VPN tunnels x {per_tunnel:g} Gbps (slower end)",
            None,
        )
    if kind in ("vpc-peering", "vnet-peering"):
        return math.inf, f"{kind}: no provisioned capacity (VM egress bounds it)", None
    if kind == "tgw-peering":
        src = (
            "quotas.tgw_peering_gbps (spec)"
            if "tgw_peering_gbps" in plan.quotas.overridden
            else ("transit gateway peering " + reference.defaults()["sources"]["tgw-quotas"]["url"])
        )
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


def vpn_gateway(need_gbps: float) -> tuple[str, float, str]:
    """Azure <-> GCP VPN: the smallest zone-redundant Azure gateway SKU whose tunnels carry the
    need (the largest if none does), and the link's capacity: the tunnels at the slower end's
    per-tunnel rate, capped by that SKU's aggregate."""
    vpn = reference.defaults()["links"]["vpn"]
    tunnels = int(vpn["tunnels"])
    gcp_tunnel = float(vpn["tunnel_gbps_gcp"])
    options = []
    for sku, aggregate in vpn["gateway_gbps"].items():
        per_tunnel = min(float(vpn["tunnel_gbps_azure"][sku]), gcp_tunnel)
        options.append((min(tunnels * per_tunnel, float(aggregate)), str(sku), per_tunnel))
    options.sort()
    # None big enough: the smallest SKU with the most capacity (a larger one adds nothing).
    best = next(o for o in options if o[0] == options[-1][0])
    capacity, sku, per_tunnel = next((o for o in options if o[0] >= need_gbps), best)
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


def _rto_params(plan: Plan, kind: str) -> sizing.RtoParams:
    r = plan.recovery
    return sizing.RtoParams(
        detection_s=r.detection_s,
        traffic_shift_s=r.traffic_shift_s,
        infra_create_s=r.infra_create_s,
        gpu_node_boot_s=r.gpu_node_boot_s,
        gpu_capacity_wait_s=r.gpu_capacity_wait_s,
        warm_scale_up_s=r.warm_scale_up_s,
        restart_s=r.restart_training_s if kind == "training" else r.restart_service_s,
        read_gbps_per_node=r.read_gbps_per_node,
    )


def _working_set(plan: Plan, kind: str) -> float:
    """Bytes a pool must read at the DR site before it works: the latest full checkpoint for
    training (compressed as stored), the whole weights for a service."""
    if kind == "training":
        c = plan.checkpoints
        return c.size_b / c.compression_ratio if c else 0.0
    return plan.weights.size_b if plan.weights else 0.0


def _pool_cost(dr: Site, instance_type: str, standing: int, nodes: int) -> float:
    price = cost.gpu_hour(dr.cloud, instance_type).usd
    billed = nodes if dr.reserve_capacity else standing
    return billed * price * cost.HOURS_PER_MONTH


def _plan_pool(
    plan: Plan,
    primary: Site,
    dr: Site,
    name: str,
    kind: str,
    workload: Cluster | Service,
    rpo_estimate: float | None,
    control_plane_standing: bool,
) -> Pool:
    """Price and time every pattern for one pool and pick one.

    `control_plane_standing`: another pool keeps this DR cluster's control plane up, so
    backup/restore creates no infrastructure at failover and no pattern pays for the control
    plane on this pool's account.
    """
    # The same GPU as the DR cloud sells it (p5.48xlarge at AWS is a3-highgpu-8g at GCP).
    offer = reference.gpu_offer(dr.cloud, workload.gpu)
    if offer is None:
        raise ValueError(f"{dr.cloud} offers no {workload.gpu}; the spec check should have said so")
    instance_type = offer.instance_type
    params = _rto_params(plan, kind)
    if control_plane_standing:
        params = replace(params, infra_create_s=0.0)
    control_plane = (
        reference.price(dr.cloud, *SITE_PRICES[dr.cloud]["control_plane"]).usd
        * cost.HOURS_PER_MONTH
    )
    working = _working_set(plan, kind)
    options: list[PatternOption] = []
    for pattern in sizing.PATTERN_ORDER:
        stages = sizing.rto_stages(
            pattern, kind, workload.nodes, working, dr.reserve_capacity, params
        )
        total = sizing.rto_total(stages)
        standing = sizing.standing_nodes(pattern, workload.nodes, dr.warm_fraction)
        monthly = _pool_cost(dr, instance_type, standing, workload.nodes)
        if pattern != "backup-restore" and not control_plane_standing:
            monthly += control_plane
        meets = _meets(workload.rto_s, total)
        options.append(PatternOption(pattern, total, monthly, meets, stages))
    forced = workload.pattern or dr.pattern
    notes: list[str] = []
    if forced is not None:
        pattern = forced
        notes.append(f"pattern {forced} set in the spec")
    else:
        choice = sizing.cheapest(
            [(o.pattern, o.monthly_usd, o.meets, o.estimated_rto_s) for o in options]
        )
        if choice is None:
            pattern = "active-active"
            notes.append("no pattern meets the RTO; active-active is the fastest")
        else:
            pattern = choice
    if dr.reserve_capacity:
        notes.append(
            f"capacity reservation for {workload.nodes} nodes is billed whether used or not"
        )
    return Pool(
        name=name,
        kind=kind,
        cluster=workload.cluster if isinstance(workload, Service) else workload.name,
        primary=primary.name,
        dr=dr.name,
        gpu=workload.gpu,
        instance_type=instance_type,
        gpus_per_node=offer.gpus_per_node,
        efa_interfaces=offer.efa_interfaces if isinstance(workload, Cluster) else 0,
        nodes=workload.nodes,
        pattern=pattern,
        standing=sizing.standing_nodes(pattern, workload.nodes, dr.warm_fraction),
        reserved=dr.reserve_capacity,
        rpo_s=workload.rpo_s if isinstance(workload, Service) else None,
        rto_s=workload.rto_s,
        estimated_rpo_s=rpo_estimate,
        options=tuple(options),
        notes=tuple(notes),
    )


def _plan_pools(plan: Plan, primary: Site, dr: Site, weights_rpo: float | None) -> list[Pool]:
    """Pools per DR cluster, in two passes: each pool chooses alone; if any pool keeps the
    cluster's control plane up, the others choose again knowing it is standing."""
    members: list[tuple[str, str, Cluster | Service, float | None]] = []
    for cl in plan.clusters.values():
        if cl.site == primary.name:
            members.append((cl.pool_name, "training", cl, None))
    for svc in plan.services.values():
        if svc.site == primary.name:
            members.append((svc.pool_name, "service", svc, weights_rpo))

    def cluster_of(w: Cluster | Service) -> str:
        return w.cluster if isinstance(w, Service) else w.name

    first = [_plan_pool(plan, primary, dr, n, k, w, r, False) for n, k, w, r in members]
    out: list[Pool] = []
    for (n, k, w, r), p in zip(members, first, strict=True):
        others_stand = any(
            cluster_of(w2) == cluster_of(w) and p2.pattern != "backup-restore"
            for (n2, _, w2, _), p2 in zip(members, first, strict=True)
            if n2 != n
        )
        out.append(_plan_pool(plan, primary, dr, n, k, w, r, True) if others_stand else p)
    return out


def design(plan: Plan) -> Design:
    flows: list[DataFlow] = []
    paths: dict[str, Path] = {}
    pools: list[Pool] = []
    for primary, dr in plan.pairs():
        pair_flows = _flows_for_pair(plan, primary, dr)
        grouped: dict[str, list[tuple[str, str, sizing.Flow]]] = {}
        for cls, mech, flow in pair_flows:
            grouped.setdefault(_path_kind(mech, primary, dr), []).append((cls, mech, flow))
        if plan.clusters or plan.services:
            # GPU sites are linked for control traffic and failback even without data on it.
            grouped.setdefault(link_kind(primary, dr), [])
        for kind, members in grouped.items():
            required = sum(f.required_gbps for _, _, f in members)
            capacity, source, ports = _path_capacity(plan, kind, required * plan.headroom)
            key = f"{primary.name}->{dr.name}:{kind}"
            paths[key] = Path(
                key,
                primary.name,
                dr.name,
                kind,
                capacity,
                source,
                required,
                plan.headroom,
                tuple(c for c, _, _ in members),
                ports,
                vpn_gateway(required * plan.headroom)[0] if kind == "vpn" else None,
            )
            for cls, mech, flow in members:
                others = sum(f.steady_gbps for c, _, f in members if c != cls)
                mech_facts = reference.mechanism(mech)
                floor = mech_facts["lag_s"]
                schedule = None
                if mech_facts.get("scheduled"):
                    spec = getattr(plan, cls)
                    schedule = sizing.scheduled_transfer(
                        flow,
                        spec.rpo_s,
                        capacity,
                        others,
                        min_interval_s=int(mech_facts["min_interval_s"]),
                        headroom=plan.headroom,
                    )
                    est = sizing.RpoEstimate(
                        schedule.estimated_rpo_s,
                        schedule.interval_s + schedule.transfer_s,
                        schedule.transfer_s,
                        False,
                        f"scheduled every {fmt_duration(schedule.interval_s)}: the interval plus "
                        f"one run's transfer ({fmt_duration(schedule.transfer_s)}); no SLA on "
                        "transfer speed",
                    )
                else:
                    est = sizing.achieved_rpo(
                        flow,
                        None if floor is None else float(floor),
                        bool(mech_facts["synchronous"]),
                        capacity,
                        others,
                    )
                flows.append(_data_flow(plan, primary, dr, cls, mech, key, flow, est, schedule))
        # A service at the DR site serves what was replicated there: its RPO is the weights'.
        # Without a weights class gpudr protects none of its data, so it has no estimate.
        est_weights = next(
            (
                f.estimate.estimated_s
                for f in flows
                if f.dr == dr.name and f.data_class == "weights"
            ),
            None,
        )
        pools.extend(_plan_pools(plan, primary, dr, est_weights))
    workloads = _workloads(plan, flows, paths, pools)
    priced = _cost_lines(plan, flows, paths, pools)
    alternatives = _alternatives(plan, pools)
    return Design(
        plan,
        tuple(flows),
        paths,
        tuple(pools),
        tuple(workloads),
        cost.report(priced.lines, priced.unpriced),
        alternatives,
    )


def _data_flow(
    plan: Plan,
    primary: Site,
    dr: Site,
    cls: str,
    mech: str,
    key: str,
    flow: sizing.Flow,
    est: sizing.RpoEstimate,
    schedule: sizing.Schedule | None = None,
) -> DataFlow:
    spec = {"checkpoints": plan.checkpoints, "weights": plan.weights, "datasets": plan.datasets}[
        cls
    ]
    assert spec is not None
    notes = [est.reason]
    floor = reference.mechanism(mech)["lag_s"]
    if (
        cls == "checkpoints"
        and plan.checkpoints
        and spec.rpo_s is not None
        and floor is not None
        and spec.rpo_s - plan.checkpoints.interval_s < float(floor)
    ):
        notes.append(
            "no bandwidth can meet this: the interval "
            f"({fmt_duration(plan.checkpoints.interval_s)}) plus the {mech} lag bound "
            f"({fmt_duration(float(floor))}) exceeds the RPO; checkpoint more often or relax "
            "the RPO"
        )
    if cls == "datasets" and plan.datasets:
        capacity = plan.quotas.s3_rtc_gbps if mech == "crr-rtc" else None
        if capacity:
            seed = transfer_seconds(plan.datasets.size_b, capacity)
            once = (
                plan.datasets.size_b
                / cost.GB
                * reference.price("aws", "transfer_gb", "inter_region").usd
            )
            notes.append(
                "objects that exist before replication starts need S3 Batch Replication: "
                f"about {fmt_duration(seed)} at {capacity:g} Gbps and a one-time transfer of "
                f"about ${once:,.0f}"
            )
    if mech == "dual-write":
        notes.append("every writer must write both copies before it reports success")
    if schedule is not None and not schedule.fits:
        within = spec.rpo_s is not None and schedule.estimated_rpo_s <= spec.rpo_s
        notes.append(
            "even the shortest schedule the service allows "
            f"({fmt_duration(schedule.interval_s)}) "
            + ("meets the RPO only without the headroom factor" if within else "misses the RPO")
            + ": relax it, or use dual-write for this class"
        )
    if mech in ("sts", "datasync") and cls in ("datasets", "weights"):
        size = plan.datasets.size_b if cls == "datasets" and plan.datasets else flow.burst_bytes
        capacity = plan.quotas.sts_gbps if mech == "sts" else plan.quotas.datasync_gbps
        first_run = fmt_duration(transfer_seconds(size, capacity))
        notes.append(
            "the first run copies everything already in the source: "
            f"{first_run} at {capacity:g} Gbps"
        )
    if mech == "gcs-turbo" or mech == "gcs-dual-region":
        notes.append(
            f"one dual-region bucket spans {primary.region} and {dr.region}, owned by the DR "
            "site's stack"
        )
    if mech == "azure-or":
        facts = reference.mechanism("azure-or")
        cap = float(facts["priority_max_gbps"])
        lag = float(facts["priority_lag_s"])
        why = []
        if spec.rpo_s is not None and spec.rpo_s < lag + flow.base_rpo_s:
            base = f" plus the {fmt_duration(flow.base_rpo_s)} interval" if flow.base_rpo_s else ""
            why.append(f"its {fmt_duration(lag)} bound{base} exceeds this RPO")
        if flow.required_gbps > cap:
            why.append(
                f"this class needs {flow.required_gbps:.2f} Gbps of ingress, above the "
                f"{cap:g} Gbps where that SLA is void"
            )
        notes.append(
            "priority replication (99.9% in 15 min) is not settable through azure-native 3.29"
            + (" and would not help: " + "; ".join(why) if why else "")
        )
    # Data-class RTO: the data is already at the DR site; it is usable after detection and the
    # read of its working set by one node.
    rto_est: float | None = None
    if spec.rto_s is not None:
        working = (
            plan.checkpoints.size_b / plan.checkpoints.compression_ratio
            if (cls == "checkpoints" and plan.checkpoints)
            else (flow.burst_bytes if cls == "weights" else 0.0)
        )
        rto_est = plan.recovery.detection_s + transfer_seconds(
            working, plan.recovery.read_gbps_per_node
        )
    replica_class = str(reference.defaults()["storage"]["replica_class"][dr.cloud][cls])
    return DataFlow(
        data_class=cls,
        primary=primary.name,
        dr=dr.name,
        mechanism=mech,
        path=key,
        flow=flow,
        rpo_s=spec.rpo_s,
        rto_s=spec.rto_s,
        estimate=est,
        estimated_rto_s=rto_est,
        monthly_bytes=_monthly_bytes(plan, cls),
        replica_class=replica_class,
        notes=tuple(notes),
        schedule=schedule,
    )


def _meets(target: float | None, estimate: float | None) -> bool:
    if target is None:
        return True
    return estimate is not None and estimate <= target + 1e-6


def _workloads(
    plan: Plan, flows: list[DataFlow], paths: dict[str, Path], pools: list[Pool]
) -> list[Workload]:
    rows: list[Workload] = []
    for f in flows:
        path = paths[f.path]
        notes = list(f.notes)
        if not path.ok:
            notes.append(
                f"path {path.kind} needs {path.needed_gbps:.2f} Gbps with headroom but has "
                f"{path.capacity_gbps:g} Gbps"
            )
        if not path.ok and f.estimate.guaranteed:
            notes.append("the mechanism's guarantee does not hold while the path is over capacity")
        meets = (
            _meets(f.rpo_s, f.estimate.estimated_s)
            and _meets(f.rto_s, f.estimated_rto_s)
            and path.ok
        )
        rows.append(
            Workload(
                name=f.data_class,
                kind="data",
                pair=f"{f.primary}->{f.dr}",
                rpo_s=f.rpo_s,
                rto_s=f.rto_s,
                pattern=None,
                mechanism=f.mechanism,
                required_gbps=f.flow.required_gbps,
                provisioned_gbps=path.capacity_gbps,
                estimated_rpo_s=f.estimate.estimated_s,
                estimated_rto_s=f.estimated_rto_s,
                meets=meets,
                notes=tuple(notes),
            )
        )
    for p in pools:
        chosen = p.chosen
        meets = _meets(p.rto_s, chosen.estimated_rto_s) and _meets(p.rpo_s, p.estimated_rpo_s)
        rows.append(
            Workload(
                name=p.workload_name,
                kind="service" if p.kind == "service" else "cluster",
                pair=f"{p.primary}->{p.dr}",
                rpo_s=p.rpo_s,
                rto_s=p.rto_s,
                pattern=p.pattern,
                mechanism=None,
                required_gbps=None,
                provisioned_gbps=None,
                estimated_rpo_s=p.estimated_rpo_s,
                estimated_rto_s=chosen.estimated_rto_s,
                meets=meets,
                notes=p.notes,
            )
        )
    return rows


# --- cost -------------------------------------------------------------------------------------


# Price keys per cloud (prices.yaml) for the items every site has; drill.py prices a drill's
# control planes and NAT gateway by the same keys.
SITE_PRICES: dict[str, dict[str, tuple[str, ...]]] = {
    "aws": {
        "control_plane": ("eks_cluster_hour",),
        "key": ("kms_key_month",),
        "nat": ("nat_gateway_hour",),
    },
    "gcp": {
        "control_plane": ("gke_cluster_hour",),
        "key": ("kms_key_version_month",),
        "nat": ("cloud_nat_gateway_hour",),
    },
    "azure": {"control_plane": ("aks_cluster_hour",), "key": ("keyvault_key_month",)},
}
# Per-GB price of moving a class's bytes from the primary's cloud, by path kind.
_TRANSFER_PRICE: dict[tuple[str, str], tuple[str, ...]] = {
    ("aws", "aws"): ("transfer_gb", "inter_region"),
    ("gcp", "gcp"): ("transfer_gb", "inter_region_same_continent"),
    ("azure", "azure"): ("transfer_gb", "inter_region"),
    ("aws", "gcp"): ("transfer_gb", "internet_egress"),
    ("gcp", "aws"): ("transfer_gb", "internet_egress"),
    ("azure", "gcp"): ("transfer_gb", "internet_egress"),
}
# Extra per-GB fee of a mechanism, charged by the cloud that runs it.
_MECHANISM_FEE: dict[str, tuple[str, tuple[str, ...]]] = {
    "crr-rtc": ("aws", ("s3_rtc_gb",)),
    "gcs-turbo": ("gcp", ("turbo_replication_gb",)),
    "gcs-dual-region": ("gcp", ("dual_region_replication_gb",)),
    "sts": ("gcp", ("storage_transfer_service_gb",)),
    "datasync": ("aws", ("datasync_gb", "enhanced")),
}


class _Lines:
    """Collects cost lines; a price missing from prices.yaml is listed, never invented."""

    def __init__(self) -> None:
        self.lines: list[cost.CostLine] = []
        self.unpriced: list[str] = []

    def add(
        self,
        site: str,
        category: str,
        item: str,
        quantity: float,
        unit: str,
        cloud: str,
        key: tuple[str, ...],
        dr: bool,
    ) -> None:
        try:
            price = reference.price(cloud, *key)
        except reference.ReferenceError:
            self.unpriced.append(f"{site}: {item} ({cloud}.{'.'.join(key)} is not in prices.yaml)")
            return
        self.lines.append(cost.line(site, category, item, quantity, unit, price, dr))


def _cost_lines(
    plan: Plan, flows: list[DataFlow], paths: dict[str, Path], pools: list[Pool]
) -> _Lines:
    out = _Lines()
    hours = cost.HOURS_PER_MONTH
    storage = reference.defaults()["storage"]
    for site in plan.sites.values():
        cloud, is_dr = site.cloud, site.role == "dr"
        prices = SITE_PRICES[cloud]
        out.add(site.name, "keys", "data key", 1, "key-month", cloud, prices["key"], is_dr)
        if "nat" in prices:
            # One NAT per site for node egress; the primary's is its own running cost.
            out.add(
                site.name,
                "network",
                "NAT gateway",
                hours,
                "gateway-hour",
                cloud,
                prices["nat"],
                is_dr,
            )
        if is_dr:
            continue
        for cl in plan.clusters.values():
            if cl.site == site.name:
                out.add(
                    site.name,
                    "gpu",
                    f"{cl.name}: {cl.instance_type} (primary)",
                    cl.nodes * hours,
                    "node-hour",
                    cloud,
                    ("instance_hour", cl.instance_type),
                    False,
                )
                out.add(
                    site.name,
                    "control-plane",
                    f"cluster {cl.name}",
                    hours,
                    "cluster-hour",
                    cloud,
                    prices["control_plane"],
                    False,
                )
        for svc in plan.services.values():
            if svc.site == site.name:
                out.add(
                    site.name,
                    "gpu",
                    f"{svc.pool_name}: {svc.instance_type} (primary)",
                    svc.nodes * hours,
                    "node-hour",
                    cloud,
                    ("instance_hour", svc.instance_type),
                    False,
                )
        dual_region = {
            f.data_class for f in flows if f.primary == site.name and f.mechanism.startswith("gcs-")
        }
        for cls in ("checkpoints", "weights", "datasets"):
            spec = getattr(plan, cls)
            if spec is None or spec.site != site.name or cls in dual_region:
                continue  # a dual-region bucket is priced once, at the DR site that owns it
            sclass = str(storage["primary_class"][cloud])
            out.add(
                site.name,
                "storage",
                f"{cls} ({sclass})",
                _replica_bytes(plan, cls) / cost.GB,
                "GB-month",
                cloud,
                ("storage_gb_month", sclass),
                False,
            )
    for p in pools:
        dr = plan.sites[p.dr]
        billed = p.nodes if p.reserved else p.standing
        what = "reserved" if p.reserved else f"standing ({p.pattern})"
        if billed:
            out.add(
                p.dr,
                "gpu",
                f"{p.name}: {p.instance_type} {what}",
                billed * hours,
                "node-hour",
                dr.cloud,
                ("instance_hour", p.instance_type),
                True,
            )
    for dr_name, cluster in sorted(
        {(p.dr, p.cluster) for p in pools if p.pattern != "backup-restore"}
    ):
        cloud = plan.sites[dr_name].cloud
        out.add(
            dr_name,
            "control-plane",
            f"cluster {cluster}",
            hours,
            "cluster-hour",
            cloud,
            SITE_PRICES[cloud]["control_plane"],
            True,
        )
    for f in flows:
        primary, dr = plan.sites[f.primary], plan.sites[f.dr]
        gb = f.monthly_bytes / cost.GB
        stored_gb = _replica_bytes(plan, f.data_class) / cost.GB
        if f.mechanism.startswith("gcs-"):
            sclass = str(storage["dual_region_class"]["gcp"])
            out.add(
                f.dr,
                "storage",
                f"{f.data_class} dual-region bucket ({sclass})",
                stored_gb,
                "GB-month",
                "gcp",
                ("storage_gb_month", sclass),
                True,
            )
        else:
            out.add(
                f.dr,
                "storage",
                f"{f.data_class} replica ({f.replica_class})",
                stored_gb,
                "GB-month",
                dr.cloud,
                ("storage_gb_month", f.replica_class),
                True,
            )
        path = paths[f.path]
        if path.kind == "direct-connect":
            out.add(
                f.primary,
                "replication",
                f"{f.data_class} transfer out over Direct Connect",
                gb,
                "GB",
                "aws",
                ("dx_transfer_out_gb",),
                True,
            )
        elif not f.mechanism.startswith("gcs-"):
            # (a dual-region bucket's replication is priced by its own fee below)
            key = _TRANSFER_PRICE[(primary.cloud, dr.cloud)]
            out.add(
                f.primary,
                "replication",
                f"{f.data_class} transfer {primary.cloud} -> {dr.cloud}",
                gb,
                "GB",
                primary.cloud,
                key,
                True,
            )
        if f.mechanism in _MECHANISM_FEE:
            fee_cloud, fee_key = _MECHANISM_FEE[f.mechanism]
            out.add(
                f.dr if fee_cloud == dr.cloud else f.primary,
                "replication",
                f"{f.data_class} {f.mechanism} fee",
                gb,
                "GB",
                fee_cloud,
                fee_key,
                True,
            )
        if f.mechanism == "datasync" and f.schedule is not None:
            # Enhanced mode bills every task execution; one per schedule interval.
            out.add(
                f.dr,
                "replication",
                f"{f.data_class} DataSync executions (every {fmt_duration(f.schedule.interval_s)})",
                SECONDS_PER_MONTH / f.schedule.interval_s,
                "execution",
                "aws",
                ("datasync_task_execution",),
                True,
            )
        if f.mechanism in ("crr-rtc", "crr"):
            # Each replication rule publishes four CloudWatch metrics (latency, bytes and
            # operations pending, operations failed), billed as custom metrics, plus two alarms.
            out.add(
                f.primary,
                "monitoring",
                f"{f.data_class} replication metrics",
                4,
                "metric-month",
                "aws",
                ("s3_replication_metrics_month",),
                True,
            )
            out.add(
                f.primary,
                "monitoring",
                f"{f.data_class} replication alarms",
                2,
                "alarm-month",
                "aws",
                ("cloudwatch_alarm_month",),
                True,
            )
        if f.mechanism == "dual-write" and dr.cloud == "aws":
            # Per GB the receiving site's S3 interface endpoint takes in (its hours: below).
            out.add(
                f.dr,
                "network",
                f"{f.data_class} dual writes through the interface endpoint",
                gb,
                "GB",
                "aws",
                ("vpce_interface_processed_gb",),
                True,
            )
            if primary.cloud == "aws":
                out.add(
                    f.primary,
                    "network",
                    f"{f.data_class} dual writes through the transit gateway",
                    gb,
                    "GB",
                    "aws",
                    ("tgw_processed_gb",),
                    True,
                )
    for site_name in sorted(
        {f.dr for f in flows if f.mechanism == "dual-write" and plan.sites[f.dr].cloud == "aws"}
    ):
        # One S3 interface endpoint per receiving site, billed per AZ-hour.
        azs = len(plan.sites[site_name].azs)
        out.add(
            site_name,
            "network",
            f"S3 interface endpoint for dual writes ({azs} AZs)",
            azs * hours,
            "endpoint-AZ-hour",
            "aws",
            ("vpce_interface_az_hour",),
            True,
        )
    for path in paths.values():
        if path.kind == "tgw-peering":
            # One VPC attachment per site plus the peering attachment on each side.
            for site_name in (path.primary, path.dr):
                out.add(
                    site_name,
                    "network",
                    "transit gateway attachments (VPC + peering)",
                    2 * hours,
                    "attachment-hour",
                    "aws",
                    ("tgw_attachment_hour",),
                    True,
                )
        if path.kind == "direct-connect" and path.ports:
            out.add(
                path.dr,
                "network",
                f"Direct Connect {path.ports.ports} x {path.ports.port_gbps} Gbps ports",
                path.ports.ports * hours,
                "port-hour",
                "aws",
                ("dx_port_hour", f"{path.ports.port_gbps}Gbps"),
                True,
            )
        if path.kind in ("ha-vpn", "vpn"):
            # Each cloud bills its own end, whichever side is the primary.
            by_cloud = {plan.sites[n].cloud: n for n in (path.primary, path.dr)}
            tunnels = int(reference.defaults()["links"][path.kind]["tunnels"])
            out.add(
                by_cloud[Cloud.GCP],
                "network",
                f"HA VPN tunnels ({tunnels})",
                tunnels * hours,
                "tunnel-hour",
                "gcp",
                ("ha_vpn_tunnel_hour",),
                True,
            )
            if "aws" in by_cloud:
                out.add(
                    by_cloud[Cloud.AWS],
                    "network",
                    "AWS VPN connections (2)",
                    2 * hours,
                    "connection-hour",
                    "aws",
                    ("vpn_connection_hour",),
                    True,
                )
            if "azure" in by_cloud and path.gateway_sku:
                out.add(
                    by_cloud[Cloud.AZURE],
                    "network",
                    f"Azure VPN gateway {path.gateway_sku} (active-active)",
                    hours,
                    "gateway-hour",
                    "azure",
                    ("vpn_gateway_hour", path.gateway_sku),
                    True,
                )
    return out


def _replica_bytes(plan: Plan, cls: str) -> float:
    """Bytes kept per copy: the last N checkpoints as stored (compressed, counted whole), every
    weights version still under object lock, the dataset."""
    if cls == "checkpoints" and plan.checkpoints:
        c = plan.checkpoints
        return c.keep * c.size_b / c.compression_ratio
    if cls == "weights" and plan.weights:
        w = plan.weights
        # Locked versions cannot be deleted until their retention ends.
        months = w.retention_s / (cost.DAYS_PER_MONTH * 86400)
        return w.size_b * max(1.0, w.publishes_per_month * months)
    if cls == "datasets" and plan.datasets:
        return plan.datasets.size_b
    return 0.0


def _alternatives(plan: Plan, pools: list[Pool]) -> dict[str, tuple[float, bool]]:
    """The DR GPU and control-plane bill if every pool used one pattern, and whether every
    pool's RTO target would hold. Timed afresh: with every pool on backup/restore, no control
    plane stands, so each pays the infrastructure stage."""
    out: dict[str, tuple[float, bool]] = {}
    for pattern in sizing.PATTERN_ORDER:
        total = 0.0
        ok = True
        for p in pools:
            dr = plan.sites[p.dr]
            standing = sizing.standing_nodes(pattern, p.nodes, dr.warm_fraction)
            total += _pool_cost(dr, p.instance_type, standing, p.nodes)
            stages = sizing.rto_stages(
                pattern,
                p.kind,
                p.nodes,
                _working_set(plan, p.kind),
                p.reserved,
                _rto_params(plan, p.kind),
            )
            ok = ok and _meets(p.rto_s, sizing.rto_total(stages))
        if pattern != "backup-restore":
            for dr_name, _cluster in sorted({(p.dr, p.cluster) for p in pools}):
                cloud = plan.sites[dr_name].cloud
                key = SITE_PRICES[cloud]["control_plane"]
                total += reference.price(cloud, *key).usd * cost.HOURS_PER_MONTH
        out[pattern] = (total, ok)
    return out
