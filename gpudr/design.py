"""From a validated plan to a DR design: mechanisms, paths, GPU pools with their patterns, the
per-workload verdicts and the monthly cost. Everything downstream (stack config, components,
reports) reads a `Design`; nothing here knows about Pulumi.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from gpudr import cost, reference, sizing
from gpudr.spec import Cluster, Plan, Service, Site
from gpudr.units import fmt_duration, transfer_seconds

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


@dataclass(frozen=True)
class Path:
    """Capacity that a set of flows between two sites shares."""

    key: str
    primary: str
    dr: str
    kind: str  # s3-rtc | s3-crr | tgw-peering | direct-connect
    capacity_gbps: float
    capacity_source: str
    required_gbps: float  # summed over flows, before headroom
    headroom: float
    flows: tuple[str, ...]
    ports: sizing.PortPlan | None = None

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


def choose_mechanism(requested: str, rpo_s: float | None) -> str:
    """`auto`: dual write for RPO 0, RTC for any other target, plain CRR when there is none."""
    if requested != "auto":
        return requested
    if rpo_s == 0:
        return "dual-write"
    if rpo_s is None:
        return "crr"
    return "crr-rtc"


def _path_kind(mechanism: str, dr: Site) -> str:
    if mechanism == "crr-rtc":
        return "s3-rtc"
    if mechanism == "crr":
        return "s3-crr"
    return dr.link.kind if dr.link else "tgw-peering"


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
        mech = choose_mechanism(c.replication, c.rpo_s)
        flow = sizing.checkpoint_flow(
            mech, c.size_b, c.interval_s, c.dedup_ratio, c.compression_ratio, c.rpo_s
        )
        out.append(("checkpoints", mech, flow))
    if w and w.site == primary.name:
        mech = choose_mechanism(w.replication, w.rpo_s)
        out.append(
            ("weights", mech, sizing.weights_flow(mech, w.size_b, w.rpo_s, w.publish_window_s))
        )
    if d and d.site == primary.name:
        mech = choose_mechanism(d.replication, d.rpo_s)
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
    params = _rto_params(plan, kind)
    if control_plane_standing:
        params = replace(params, infra_create_s=0.0)
    control_plane = reference.price(dr.cloud, "eks_cluster_hour").usd * cost.HOURS_PER_MONTH
    working = _working_set(plan, kind)
    options: list[PatternOption] = []
    for pattern in sizing.PATTERN_ORDER:
        stages = sizing.rto_stages(
            pattern, kind, workload.nodes, working, dr.reserve_capacity, params
        )
        total = sizing.rto_total(stages)
        standing = sizing.standing_nodes(pattern, workload.nodes, dr.warm_fraction)
        monthly = _pool_cost(dr, workload.instance_type, standing, workload.nodes)
        if pattern != "backup-restore" and not control_plane_standing:
            monthly += control_plane
        meets = _meets(workload.rto_s, total)
        options.append(PatternOption(pattern, total, monthly, meets, stages))
    forced = workload.pattern if workload.pattern != "auto" else dr.pattern
    notes: list[str] = []
    if forced != "auto":
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
        instance_type=workload.instance_type,
        gpus_per_node=workload.gpus_per_node,
        efa_interfaces=workload.efa_interfaces if isinstance(workload, Cluster) else 0,
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
            members.append((cl.name, "training", cl, None))
    for svc in plan.services.values():
        if svc.site == primary.name:
            members.append((f"svc-{svc.name}", "service", svc, weights_rpo))

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
            grouped.setdefault(_path_kind(mech, dr), []).append((cls, mech, flow))
        if plan.clusters or plan.services:
            # GPU sites are peered for control traffic and failback even without data on it.
            grouped.setdefault(dr.link.kind if dr.link else "tgw-peering", [])
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
            )
            for cls, mech, flow in members:
                others = sum(f.steady_gbps for c, _, f in members if c != cls)
                mech_facts = reference.mechanism(mech)
                floor = mech_facts["lag_s"]
                est = sizing.achieved_rpo(
                    flow,
                    None if floor is None else float(floor),
                    bool(mech_facts["synchronous"]),
                    capacity,
                    others,
                )
                flows.append(_data_flow(plan, primary, dr, cls, mech, key, flow, est))
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
    lines = _cost_lines(plan, flows, paths, pools)
    alternatives = _alternatives(plan, pools)
    return Design(
        plan, tuple(flows), paths, tuple(pools), tuple(workloads), cost.report(lines), alternatives
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
    replica_class = str(reference.defaults()["storage"]["replica_class"][cls])
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
                name=p.name if p.kind == "service" else f"cluster-{p.name}",
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


def _cost_lines(
    plan: Plan, flows: list[DataFlow], paths: dict[str, Path], pools: list[Pool]
) -> list[cost.CostLine]:
    lines: list[cost.CostLine] = []
    hours = cost.HOURS_PER_MONTH
    L = cost.line
    for site in plan.sites.values():
        cloud = site.cloud
        is_dr = site.role == "dr"
        lines.append(
            L(
                site.name,
                "keys",
                "KMS key",
                1,
                "key-month",
                reference.price(cloud, "kms_key_month"),
                is_dr,
            )
        )
        if not is_dr:
            for cl in plan.clusters.values():
                if cl.site == site.name:
                    lines.append(
                        L(
                            site.name,
                            "gpu",
                            f"{cl.name}: {cl.instance_type} (primary)",
                            cl.nodes * hours,
                            "node-hour",
                            cost.gpu_hour(cloud, cl.instance_type),
                            False,
                        )
                    )
                    lines.append(
                        L(
                            site.name,
                            "control-plane",
                            f"EKS {cl.name}",
                            hours,
                            "cluster-hour",
                            reference.price(cloud, "eks_cluster_hour"),
                            False,
                        )
                    )
            for svc in plan.services.values():
                if svc.site == site.name:
                    lines.append(
                        L(
                            site.name,
                            "gpu",
                            f"svc-{svc.name}: {svc.instance_type} (primary)",
                            svc.nodes * hours,
                            "node-hour",
                            cost.gpu_hour(cloud, svc.instance_type),
                            False,
                        )
                    )
            for cls, stored, sclass in _stored(plan, site.name):
                lines.append(
                    L(
                        site.name,
                        "storage",
                        f"{cls} ({sclass})",
                        stored / cost.GB,
                        "GB-month",
                        cost.storage_month(cloud, sclass),
                        False,
                    )
                )
    for p in pools:
        dr = plan.sites[p.dr]
        billed = p.nodes if p.reserved else p.standing
        what = "reserved" if p.reserved else f"standing ({p.pattern})"
        if billed:
            lines.append(
                L(
                    p.dr,
                    "gpu",
                    f"{p.name}: {p.instance_type} {what}",
                    billed * hours,
                    "node-hour",
                    cost.gpu_hour(dr.cloud, p.instance_type),
                    True,
                )
            )
    standing_clusters = {(p.dr, p.cluster) for p in pools if p.pattern != "backup-restore"}
    for dr_name, cluster in sorted(standing_clusters):
        lines.append(
            L(
                dr_name,
                "control-plane",
                f"EKS {cluster}",
                hours,
                "cluster-hour",
                reference.price(plan.sites[dr_name].cloud, "eks_cluster_hour"),
                True,
            )
        )
    for f in flows:
        dr = plan.sites[f.dr]
        stored = _replica_bytes(plan, f.data_class)
        lines.append(
            L(
                f.dr,
                "storage",
                f"{f.data_class} replica ({f.replica_class})",
                stored / cost.GB,
                "GB-month",
                cost.storage_month(dr.cloud, f.replica_class),
                True,
            )
        )
        gb = f.monthly_bytes / cost.GB
        over_dx = paths[f.path].kind == "direct-connect"
        lines.append(
            L(
                f.primary,
                "replication",
                f"{f.data_class} transfer "
                + ("out over Direct Connect" if over_dx else "between regions"),
                gb,
                "GB",
                reference.price("aws", "dx_transfer_out_gb")
                if over_dx
                else reference.price("aws", "transfer_gb", "inter_region"),
                True,
            )
        )
        if f.mechanism == "crr-rtc":
            lines.append(
                L(
                    f.primary,
                    "replication",
                    f"{f.data_class} RTC",
                    gb,
                    "GB",
                    reference.price("aws", "s3_rtc_gb"),
                    True,
                )
            )
        alarms = 2 if f.mechanism in ("crr-rtc", "crr") else 0
        if alarms:
            # Each replication rule publishes four CloudWatch metrics (latency, bytes and
            # operations pending, operations failed), billed as custom metrics.
            lines.append(
                L(
                    f.primary,
                    "monitoring",
                    f"{f.data_class} replication metrics",
                    4,
                    "metric-month",
                    reference.price("aws", "s3_replication_metrics_month"),
                    True,
                )
            )
            lines.append(
                L(
                    f.primary,
                    "monitoring",
                    f"{f.data_class} replication alarms",
                    alarms,
                    "alarm-month",
                    reference.price("aws", "cloudwatch_alarm_month"),
                    True,
                )
            )
        if f.mechanism == "dual-write":
            # Per GB the receiving site's S3 interface endpoint takes in (its hours: below).
            lines.append(
                L(
                    f.dr,
                    "network",
                    f"{f.data_class} dual writes through the interface endpoint",
                    gb,
                    "GB",
                    reference.price("aws", "vpce_interface_processed_gb"),
                    True,
                )
            )
            lines.append(
                L(
                    f.primary,
                    "network",
                    f"{f.data_class} dual writes through the transit gateway",
                    gb,
                    "GB",
                    reference.price("aws", "tgw_processed_gb"),
                    True,
                )
            )
    for site_name in sorted({f.dr for f in flows if f.mechanism == "dual-write"}):
        # One S3 interface endpoint per receiving site, billed per AZ-hour.
        azs = len(plan.sites[site_name].azs)
        lines.append(
            L(
                site_name,
                "network",
                f"S3 interface endpoint for dual writes ({azs} AZs)",
                azs * hours,
                "endpoint-AZ-hour",
                reference.price("aws", "vpce_interface_az_hour"),
                True,
            )
        )
    for site in plan.sites.values():
        # One NAT gateway per site for node egress; the primary's is its own running cost.
        lines.append(
            L(
                site.name,
                "network",
                "NAT gateway",
                hours,
                "gateway-hour",
                reference.price(site.cloud, "nat_gateway_hour"),
                site.role == "dr",
            )
        )
    for path in paths.values():
        if path.kind == "tgw-peering":
            # One VPC attachment per site plus the peering attachment on each side.
            for site_name in (path.primary, path.dr):
                lines.append(
                    L(
                        site_name,
                        "network",
                        "transit gateway attachments (VPC + peering)",
                        2 * hours,
                        "attachment-hour",
                        reference.price("aws", "tgw_attachment_hour"),
                        True,
                    )
                )
        if path.kind == "direct-connect" and path.ports:
            lines.append(
                L(
                    path.dr,
                    "network",
                    f"Direct Connect {path.ports.ports} x {path.ports.port_gbps} Gbps ports",
                    path.ports.ports * hours,
                    "port-hour",
                    reference.price("aws", "dx_port_hour", f"{path.ports.port_gbps}Gbps"),
                    True,
                )
            )
    return lines


def _stored(plan: Plan, site: str) -> list[tuple[str, float, str]]:
    out: list[tuple[str, float, str]] = []
    for cls in ("checkpoints", "weights", "datasets"):
        spec = getattr(plan, cls)
        if spec is not None and spec.site == site:
            out.append((cls, _replica_bytes(plan, cls), "STANDARD"))
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
                total += reference.price(cloud, "eks_cluster_hour").usd * cost.HOURS_PER_MONTH
        out[pattern] = (total, ok)
    return out
