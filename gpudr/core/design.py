"""From a validated plan to a DR design: mechanisms, paths, GPU pools with their patterns, the
per-workload verdicts and the monthly cost. Everything downstream (stack config, components,
reports) reads a `Design`; nothing here knows about Pulumi.

The numbers come from `gpudr.core.sizing` (the formulas the policy pack applies too) and the
prices from `gpudr.core.cost` (the one cost engine, which the drill uses too): this module
decides what is deployed and how much of it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from gpudr.core import cost, hardware, reference, sizing
from gpudr.core.cost import HOURS_PER_MONTH, SECONDS_PER_MONTH, Usage
from gpudr.core.enums import (
    AZCOPY_JOB_MEMORY_GIB,
    AZCOPY_JOB_VCPU,
    DATA_CLASSES,
    DR_PATTERNS,
    DUAL_REGION,
    NFS_STORAGE_KINDS,
    ONE_AGENT_PER_JOB,
    ONE_TASK_PER_AGENT,
    PULLED,
    Cloud,
    DataClass,
    LinkKind,
    Mechanism,
    OnPremLinkKind,
    Pattern,
    PoolKind,
    ServicePath,
    SiteRole,
    StorageKind,
    WeightsLock,
    WorkloadKind,
)
from gpudr.core.spec import (
    DEDICATED_LINKS,
    ONPREM_PAIRS,
    PAIRS,
    Cluster,
    OnPremLink,
    OnPremSite,
    Plan,
    Service,
    Site,
    gcs_dual_region,
)
from gpudr.core.units import fmt_duration, fmt_gbps, fmt_size, transfer_seconds

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
    # The runbook's check of the DR copy (`sizing.verify_seconds`); None: not timed (a listing).
    check_s: float | None = None


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
    # Why the planner chose this link when the DR site named no kind (`dedicated_link`).
    choice: str | None = None
    tunnels: int | None = None  # ha-vpn | vpn: the link's IPsec tunnels (`link_tunnels`)

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
    # Every GPU it needs at failover stands or is reserved (`sizing.capacity_guaranteed`);
    # False: its RTO holds only if on-demand capacity is found.
    guaranteed: bool = True
    scales: bool = False  # GPU nodes are added at failover (fewer stand than it needs)


@dataclass(frozen=True)
class CapacityOffer:
    """What makes a pool's GPUs certain at failover when its pattern leaves some to be found:
    a capacity reservation for every node, or, where the cloud has none for the instance, every
    node kept standing (active-active)."""

    how: str  # "reserve" | "stand"
    what: str  # how the cloud calls it
    nodes: int
    monthly_usd: float  # the pool's GPU bill with it
    estimated_rto_s: float
    meets: bool


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
    offer: CapacityOffer | None = None  # when the chosen pattern's GPUs are not guaranteed

    @property
    def chosen(self) -> PatternOption:
        return next(o for o in self.options if o.pattern == self.pattern)

    @property
    def guaranteed(self) -> bool:
        return self.chosen.guaranteed

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
    # False: the RTO estimate holds only if on-demand GPU capacity is found at failover.
    guaranteed: bool = True

    @property
    def verdict(self) -> str:
        """`met`, `not met`, or met with GPUs nobody secured (`CONDITIONAL`)."""
        if not self.meets:
            return NOT_MET
        return MET if self.guaranteed else CONDITIONAL


MET = "met"
NOT_MET = "not met"
CONDITIONAL = "met only if on-demand capacity is found"


@dataclass(frozen=True)
class Design:
    plan: Plan
    flows: tuple[DataFlow, ...]
    paths: dict[str, Path]
    pools: tuple[Pool, ...]
    workloads: tuple[Workload, ...]
    cost: cost.CostReport
    alternatives: dict[str, tuple[float, bool]] = field(default_factory=dict)
    # What the cost report priced: one usage per priced thing a site deploys or moves.
    usages: tuple[Usage, ...] = ()

    @property
    def meets(self) -> bool:
        return all(w.meets for w in self.workloads)

    def standing_clusters(self, dr: str) -> tuple[str, ...]:
        """The DR site's clusters whose control plane stands before a failover."""
        return tuple(c for site, c in standing_clusters(self.pools) if site == dr)

    def failover(self, primary: str, dr: str) -> tuple[sizing.TimedStep, ...]:
        """The pair's failover as timed steps: the runbook's step graph takes their times and
        order from here, and each pool's estimated RTO is its finish here."""
        flows = [f for f in self.flows if f.primary == primary and f.dr == dr]
        pools = [p for p in self.pools if p.primary == primary and p.dr == dr]
        timings = [_timing(p.kind, p.name, p.chosen) for p in pools]
        return _failover(self.plan, _checks(flows), timings)

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
    requested: Mechanism | None, rpo_s: float | None, primary: Site | OnPremSite, dr: Site
) -> Mechanism:
    """`auto` (None): dual write for RPO 0; otherwise the pair's managed mechanism with a time
    bound where there is one (S3 RTC; GCS turbo on a same-continent dual-region), else the pair's
    scheduled or best-effort mechanism, whose RPO the plan then computes or reports as unmet."""
    if requested is not None:
        return requested
    if isinstance(primary, OnPremSite):
        # (an RPO of 0 from on premises is refused by the spec: nothing deployed there writes)
        return ONPREM_PAIRS[dr.cloud][0][0]
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
    if pair == (Cloud.AWS, Cloud.AZURE):
        return Mechanism.AZCOPY
    return Mechanism.STS  # aws -> gcp, azure -> gcp


def link_kind(primary: Site | OnPremSite, dr: Site) -> LinkKind:
    """The DR link between two sites: the one the spec names, else the pair's default; from
    on premises, the site's WAN (its committed bandwidth over the link it names)."""
    if isinstance(primary, OnPremSite):
        return LinkKind.WAN
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
    Mechanism.AZCOPY: ServicePath.AZCOPY,
}


def _path_kind(mechanism: Mechanism, primary: Site | OnPremSite, dr: Site) -> str:
    # From on premises every transfer shares the site's WAN, whatever the service.
    if isinstance(primary, OnPremSite):
        return LinkKind.WAN
    return SERVICE_PATHS.get(mechanism) or link_kind(primary, dr)


def _monthly_bytes(plan: Plan, data_class: DataClass) -> float:
    c, w, d = plan.checkpoints, plan.weights, plan.datasets
    if data_class == DataClass.CHECKPOINTS and c:
        delta = sizing.checkpoint_delta_bytes(c.size_b, c.dedup_ratio, c.compression_ratio)
        return delta * SECONDS_PER_MONTH / c.interval_s
    if data_class == DataClass.WEIGHTS and w:
        return w.size_b * w.publishes_per_month
    if data_class == DataClass.DATASETS and d:
        refreshes = d.refresh.size_b * SECONDS_PER_MONTH / d.refresh.every_s if d.refresh else 0.0
        return d.daily_change_b * cost.DAYS_PER_MONTH + refreshes
    return 0.0


def _flows_for_pair(
    plan: Plan, primary: Site | OnPremSite, dr: Site
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
        flow = sizing.dataset_flow(
            mech,
            d.daily_change_b,
            d.rpo_s,
            refresh_b=d.refresh.size_b if d.refresh else 0.0,
            refresh_every_s=d.refresh.every_s if d.refresh else 0.0,
        )
        out.append((DataClass.DATASETS, mech, flow))
    return out


# --- paths ------------------------------------------------------------------------------------


def _quota_source(plan: Plan, key: str, default: str) -> str:
    return f"quotas.{key} (spec)" if key in plan.quotas.overridden else default


def _path_capacity(
    plan: Plan, kind: str, need_gbps: float, dx_locations: int = 2, vpn_peer: str = ""
) -> tuple[float, str, sizing.PortPlan | None]:
    """What a path can carry (Gbps), where that figure comes from, and Direct Connect's ports.
    `vpn_peer`: for a `vpn` path, the cloud at the other end of its Azure VPN gateway."""
    sources = reference.defaults()["sources"]
    if kind == ServicePath.S3_RTC:
        url = sources["s3-rtc-best-practices"]["url"]
        src = _quota_source(plan, "s3_rtc_gbps", f"S3 RTC default rate quota {url}")
        return plan.quotas.s3_rtc_gbps, src, None
    if kind == ServicePath.S3_CRR:
        return math.inf, "S3 CRR without RTC has no rate quota (and no time guarantee)", None
    if kind in (ServicePath.GCS_TURBO, ServicePath.GCS_DUAL_REGION):
        # Google publishes no replication throughput for a dual-region bucket: an assumption the
        # plan can override (quotas.gcs_turbo_gbps, quotas.gcs_dual_region_gbps).
        key = "gcs_turbo_gbps" if kind == ServicePath.GCS_TURBO else "gcs_dual_region_gbps"
        default = f"quotas.{key} default (assumption: Google publishes no replication rate)"
        return float(getattr(plan.quotas, key)), _quota_source(plan, key, default), None
    if kind == ServicePath.AZURE_OR:
        return math.inf, "standard object replication has no rate limit (and no SLA)", None
    if kind == ServicePath.STS:
        default = "quotas.sts_gbps default (assumption: Google publishes no transfer rate)"
        return plan.quotas.sts_gbps, _quota_source(plan, "sts_gbps", default), None
    if kind == ServicePath.DATASYNC:
        default = "quotas.datasync_gbps default (assumption: AWS publishes no agentless rate)"
        return plan.quotas.datasync_gbps, _quota_source(plan, "datasync_gbps", default), None
    if kind == ServicePath.AZCOPY:
        default = (
            "quotas.azcopy_gbps default (assumption: Microsoft publishes no service-to-service "
            "rate from S3; the replica account's ingress limit bounds it)"
        )
        return plan.quotas.azcopy_gbps, _quota_source(plan, "azcopy_gbps", default), None
    return _link_capacity(plan, kind, need_gbps, dx_locations, vpn_peer)


def _vpn_peer(primary: Site | OnPremSite, dr: Site) -> str:
    """The cloud joined to an Azure VPN gateway by a `vpn` link: the pair's other cloud (GCP
    for Azure -> GCP, AWS for AWS -> Azure)."""
    ends = (dr.cloud,) if isinstance(primary, OnPremSite) else (primary.cloud, dr.cloud)
    others = [str(c) for c in ends if c != Cloud.AZURE]
    if len(others) != 1:  # spec.PAIRS gives `vpn` only to Azure <-> another cloud
        raise ValueError(f"a vpn link joins an Azure site to another cloud, not {ends}")
    return others[0]


def _link_capacity(
    plan: Plan, kind: str, need_gbps: float, dx_locations: int, vpn_peer: str
) -> tuple[float, str, sizing.PortPlan | None]:
    if kind == LinkKind.VPN:
        _, capacity, src = sizing.vpn_gateway(need_gbps, vpn_peer)
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
    p = sizing.size_direct_connect(
        need_gbps, ports, int(dx["min_connections"]), lag_max, locations=dx_locations
    )
    what = f"{p.ports} x {p.port_gbps} Gbps Direct Connect ports sized by gpudr"
    if p.locations < 2:
        # Nothing survives the loss of the only location: the link is sized with every port up.
        return p.capacity_gbps, f"{what}, at one location", p
    # A location fails whole: the need must hold on what the other locations keep.
    return (
        p.survivable_gbps,
        f"{what} over {p.locations} locations: {p.survivable_gbps:g} Gbps with the largest "
        f"location down ({p.capacity_gbps:g} Gbps with all up)",
        p,
    )


# The quota that bounds one agent on premises, per DR cloud (its service's agents).
AGENT_QUOTAS: dict[Cloud, str] = {
    Cloud.AWS: "datasync_agent_gbps",
    Cloud.GCP: "sts_agent_gbps",
    Cloud.AZURE: "storage_mover_agent_gbps",
}


def onprem_dr_cloud(plan: Plan, site: OnPremSite) -> Cloud:
    """The cloud protecting an on-premises site (its agents are that cloud's service's)."""
    return next(s.cloud for s in plan.sites.values() if s.protects == site.name)


def _agent_quota(plan: Plan, site: OnPremSite) -> tuple[str, float]:
    """The `quotas:` key bounding one of the site's agents, and its value."""
    quota = AGENT_QUOTAS[onprem_dr_cloud(plan, site)]
    return quota, float(getattr(plan.quotas, quota))


def wan_capacity(plan: Plan, site: OnPremSite) -> tuple[float, str, sizing.PortPlan | None]:
    """What an on-premises site's transfers get: the least of the WAN bandwidth committed to
    DR, what its link's ports carry, and what its agents move (`sizing.onprem_path_gbps`),
    the agents being the DR cloud's (DataSync agents into AWS, Storage Mover agents into
    Azure, each at its `quotas:` rate)."""
    link = site.link
    quota, per_agent = _agent_quota(plan, site)
    capacity, bound = sizing.onprem_path_gbps(
        site.wan_committed_gbps, link.capacity_gbps, len(site.agents), per_agent
    )
    agent_src = _quota_source(plan, quota, f"quotas.{quota} default (assumption)")
    what = {
        sizing.WAN_COMMITTED: f"sites.{site.name}.wan_committed_gbps",
        sizing.WAN_LINK: f"{link.ports} x {link.port_gbps:g} Gbps {link.kind} "
        f"(sites.{site.name}.link)",
        sizing.WAN_AGENTS: f"{len(site.agents)} agent(s) x {per_agent:g} Gbps ({agent_src})",
    }[bound]
    source = (
        f"{what}: the least of {site.wan_committed_gbps:g} Gbps committed, "
        f"{link.capacity_gbps:g} Gbps of link, {len(site.agents) * per_agent:g} Gbps of agents"
    )
    ports = None
    if link.kind == OnPremLinkKind.DIRECT_CONNECT:
        speed = int(link.port_gbps)
        usd = reference.price("aws", "dx_port_hour", f"{speed}Gbps").usd
        # The ports are yours (the spec's), at one location: nothing survives its loss.
        ports = sizing.PortPlan(speed, link.ports, link.capacity_gbps, usd * link.ports, 1, 0.0)
    return capacity, source, ports


def wan_fix(plan: Plan, site: OnPremSite) -> str:
    """What gives an on-premises site's transfers more: the bound that holds (every bound
    tied with it: raising one alone would not help), each with the field that raises it."""
    link = site.link
    quota, per_agent = _agent_quota(plan, site)
    capacity, _ = sizing.onprem_path_gbps(
        site.wan_committed_gbps, link.capacity_gbps, len(site.agents), per_agent
    )
    most = int(reference.defaults()["links"]["onprem"]["max_agents"]["value"])
    vpn = link.kind == OnPremLinkKind.VPN
    more = "add tunnels (two per VPN connection)" if vpn else "add ports"
    fixes = []
    if site.wan_committed_gbps <= capacity:
        fixes.append(
            f"commit more WAN bandwidth to DR (sites.{site.name}.wan_committed_gbps, "
            f"{site.wan_committed_gbps:g} Gbps)"
        )
    if link.capacity_gbps <= capacity:
        fixes.append(
            f"{more} or faster ones (sites.{site.name}.link, {link.ports} x "
            f"{link.port_gbps:g} Gbps)"
        )
    if len(site.agents) * per_agent <= capacity:
        add = f"add agents (sites.{site.name}.agents, {len(site.agents)} of at most {most}) or, "
        fixes.append(
            (add if len(site.agents) < most else "")
            + f"with a measured rate, raise quotas.{quota} ({per_agent:g} Gbps "
            "per agent)"
        )
    return " and ".join(fixes)


def _dx_locations(dr: Site) -> int:
    """The Direct Connect locations the DR site's link names (components/aws/links.py spreads
    the ports over them)."""
    return 2 if dr.link is not None and dr.link.secondary_location else 1


def _group_flows(
    plan: Plan, primary: Site | OnPremSite, dr: Site
) -> dict[str, list[tuple[DataClass, Mechanism, sizing.Flow]]]:
    """The pair's flows by the path they travel; GPU sites are linked for control traffic and
    failback even without data on the link."""
    grouped: dict[str, list[tuple[DataClass, Mechanism, sizing.Flow]]] = {}
    for cls, mech, flow in _flows_for_pair(plan, primary, dr):
        grouped.setdefault(_path_kind(mech, primary, dr), []).append((cls, mech, flow))
    default = link_kind(primary, dr)
    if plan.clusters or plan.services:
        grouped.setdefault(default, [])
    if default in grouped:
        need = sum(sizing.path_load_gbps(f) for _, _, f in grouped[default]) * plan.headroom
        chosen = dedicated_link(plan, primary, dr, need)
        if chosen is not None:
            grouped[chosen] = grouped.pop(default)
    return grouped


def dedicated_link(
    plan: Plan, primary: Site | OnPremSite, dr: Site, need_gbps: float
) -> LinkKind | None:
    """The dedicated link planned instead of the pair's default when the DR site names no link
    kind and the default cannot carry the link's need with headroom (spec.DEDICATED_LINKS);
    None: the default (or the spec's kind) stands. A Cross-Cloud Interconnect is ordered at
    places only the spec gives: without them the default stays, over capacity, and its verdict
    names what to add (`_shortfall_notes`), so the program builds what the plan judged and the
    pack refuses it as the planner does."""
    if isinstance(primary, OnPremSite) or (dr.link is not None and dr.link.kind is not None):
        return None
    dedicated = DEDICATED_LINKS.get((primary.cloud, dr.cloud))
    if dedicated is None or not cci_located(dr):
        return None
    capacity, _, _ = _path_capacity(plan, link_kind(primary, dr), need_gbps)
    return None if sizing.fits(need_gbps, capacity) else dedicated


def cci_located(dr: Site) -> bool:
    """Whether the DR site's link names every place a Cross-Cloud Interconnect is ordered at."""
    link = dr.link
    return link is not None and all(
        (link.location, link.secondary_location, link.remote_location, link.aws_location)
    )


def cci_capacity(need_gbps: float) -> tuple[float, str, sizing.PortPlan]:
    """GCP Cross-Cloud Interconnect to AWS sized to the need (`sizing.size_cross_cloud_
    interconnect`): what survives one edge availability domain down (the spec gives its
    places: `spec._cross_cloud_interconnect`)."""
    cci = reference.defaults()["links"][LinkKind.CROSS_CLOUD_INTERCONNECT]
    # Only the AWS end's port-hour is priced (prices.yaml missing: Google's connection-hour).
    usd = {
        int(speed): reference.price("aws", "dx_port_hour", f"{speed}Gbps").usd
        for speed in cci["port_gbps"]
    }
    p = sizing.size_cross_cloud_interconnect(
        need_gbps, usd, int(cci["min_connections"]), int(cci["max_connections_per_domain"]["value"])
    )
    what = (
        f"{p.ports} x {p.port_gbps} Gbps Cross-Cloud Interconnect connections sized by gpudr, "
        f"alternating two edge availability domains: {p.survivable_gbps:g} Gbps with one domain "
        f"down ({p.capacity_gbps:g} Gbps with both up)"
    )
    return p.survivable_gbps, what, p


def cci_fix(dr: Site) -> str:
    """What the spec must add for the planner to order a Cross-Cloud Interconnect."""
    return (
        f"add sites.{dr.name}.link: {{kind: {LinkKind.CROSS_CLOUD_INTERCONNECT}, location: "
        "<Interconnect location, edge domain 1>, secondary_location: <one in edge domain 2>, "
        "remote_location: <Google's remote location for AWS>, aws_location: <Direct Connect "
        "location code>}"
    )


def _path(
    plan: Plan, primary: Site | OnPremSite, dr: Site, kind: str, flows: Iterable[sizing.Flow]
) -> Path:
    members = list(flows)
    required = sum(sizing.path_load_gbps(f) for f in members)
    choice = None
    vpn_peer = _vpn_peer(primary, dr) if kind == LinkKind.VPN else ""
    if isinstance(primary, OnPremSite):
        capacity, source, ports = wan_capacity(plan, primary)
    elif kind == LinkKind.CROSS_CLOUD_INTERCONNECT:
        capacity, source, ports = cci_capacity(required * plan.headroom)
        if dr.link is None or dr.link.kind is None:
            default = link_kind(primary, dr)
            vpn, _, _ = _path_capacity(plan, default, required * plan.headroom)
            choice = (
                f"link chosen by need: {required * plan.headroom:,.2f} Gbps with headroom is "
                f"more than {default} carries ({vpn:g} Gbps), so a Cross-Cloud Interconnect is "
                f"planned (sites.{dr.name}.link names no kind)"
            )
    else:
        capacity, source, ports = _path_capacity(
            plan, kind, required * plan.headroom, _dx_locations(dr), vpn_peer
        )
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
        gateway_sku=sizing.vpn_gateway(required * plan.headroom, vpn_peer)[0]
        if kind == LinkKind.VPN
        else None,
        choice=choice,
        tunnels=link_tunnels(kind, vpn_peer),
    )


# --- data flows -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PullLimits:
    """What bounds one run of a pull beyond its path: the most one run can use (a Storage
    Mover job runs on its one agent) and how long it may queue behind the other classes' runs
    (a DataSync agent runs one task at a time, and every task uses every agent)."""

    rate_cap_gbps: float | None = None
    wait_s: float = 0.0


def _estimate(
    plan: Plan,
    cls: DataClass,
    flow: sizing.Flow,
    path: Path,
    others: float,
    limits: PullLimits = PullLimits(),
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
        rate_cap_gbps=limits.rate_cap_gbps,
        wait_s=limits.wait_s,
        max_run_s=sizing.max_run_s(mech),
        intervals=sizing.pull_intervals_s(mech),
    )
    longest = sizing.max_run_s(mech)
    if longest is not None and schedule.transfer_s > sizing.run_limit_s(
        longest, schedule.interval_s
    ):
        # The run is stopped when its AWS session ends (its presigned URLs die with it) or the
        # next run is due (the job's replica timeout): what it has not copied by then never
        # arrives, and the next run starts over. No interval bounds the data loss.
        est = sizing.RpoEstimate(
            math.inf,
            math.inf,
            schedule.transfer_s,
            False,
            f"one run's transfer ({fmt_duration(schedule.transfer_s)} even every "
            f"{fmt_duration(schedule.interval_s)}) outlasts the run's limit: the next run, and "
            f"the {fmt_duration(longest)} AWS session its presigned S3 URLs are signed with. "
            "Raise quotas.azcopy_gbps to a measured rate, or shrink what one run copies",
        )
        return est, schedule
    queued = (
        f" after waiting up to {fmt_duration(schedule.wait_s)} for the other classes' runs on "
        "the same agents"
        if schedule.wait_s
        else ""
    )
    capped = (
        f", at most {limits.rate_cap_gbps:g} Gbps: one agent runs the job"
        if limits.rate_cap_gbps is not None and limits.rate_cap_gbps < path.capacity_gbps - others
        else ""
    )
    est = sizing.RpoEstimate(
        schedule.estimated_rpo_s,
        schedule.interval_s + schedule.wait_s + schedule.transfer_s,
        schedule.transfer_s,
        False,
        f"scheduled every {fmt_duration(schedule.interval_s)}: the interval plus one run's "
        f"transfer ({fmt_duration(schedule.transfer_s)}){capped}{queued}; no SLA on transfer "
        "speed",
    )
    return est, schedule


def pull_rate_cap(plan: Plan, onprem: OnPremSite, mechanism: str) -> float | None:
    """What one run of a pull from on premises may use whatever the path carries: the
    per-agent rate where a job runs on one agent (Storage Mover), else None."""
    if mechanism not in ONE_AGENT_PER_JOB:
        return None
    return _agent_quota(plan, onprem)[1]


def _pull_limits(
    plan: Plan,
    primary: Site | OnPremSite,
    path: Path,
    members: list[tuple[DataClass, Mechanism, sizing.Flow]],
) -> dict[str, PullLimits]:
    """Per class, what bounds its runs besides the path (see PullLimits). Only pulls from on
    premises have such bounds today. DataSync: the wait is every other class's run at the
    interval it would have with no wait (the longest, so the largest run: an upper bound)."""
    if not isinstance(primary, OnPremSite):
        return {}
    mechs = {m for _, m, _ in members}
    if mechs & set(ONE_AGENT_PER_JOB):
        return {c: PullLimits(rate_cap_gbps=pull_rate_cap(plan, primary, m)) for c, m, _ in members}
    if not mechs & set(ONE_TASK_PER_AGENT):
        return {}
    runs = {}
    for cls, _, flow in members:
        others = sum(f.steady_gbps for c, _, f in members if c != cls)
        _, schedule = _estimate(plan, cls, flow, path, others)
        runs[cls] = schedule.transfer_s if schedule else 0.0
    return {
        c: PullLimits(wait_s=sum(t for other, t in runs.items() if other != c))
        for c, _, _ in members
    }


def _pair_design(
    plan: Plan, primary: Site | OnPremSite, dr: Site
) -> tuple[list[DataFlow], list[Path]]:
    flows: list[DataFlow] = []
    paths: list[Path] = []
    for kind, members in _group_flows(plan, primary, dr).items():
        path = _path(plan, primary, dr, kind, (f for _, _, f in members))
        paths.append(path)
        limits = _pull_limits(plan, primary, path, members)
        for cls, mech, flow in members:
            others = sum(f.steady_gbps for c, _, f in members if c != cls)
            est, schedule = _estimate(plan, cls, flow, path, others, limits.get(cls, PullLimits()))
            flows.append(
                _data_flow(plan, FlowFacts(primary, dr, cls, mech, path.key, flow, est, schedule))
            )
    return flows, paths


@dataclass(frozen=True)
class FlowFacts:
    """What one class's data flow is made of, before its notes and verdict."""

    primary: Site | OnPremSite
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
        check_s=_check_s(plan, x),
    )


def _check_s(plan: Plan, x: FlowFacts) -> float | None:
    """The runbook's check of the DR copy: the newest checkpoint (as stored) or the weights
    version read whole by one host (`sizing.verify_seconds`); datasets are only listed (not
    timed)."""
    c = plan.checkpoints
    if x.data_class == DataClass.CHECKPOINTS and c:
        working = c.size_b / c.compression_ratio
    elif x.data_class == DataClass.WEIGHTS:
        working = x.flow.burst_bytes
    else:
        return None
    r = plan.recovery
    return sizing.verify_seconds(working, r.read_gbps_per_node, _read_ceiling(plan, x.dr))


def _data_rto(plan: Plan, x: FlowFacts) -> float | None:
    """The data is already at the DR site: usable after detection and the runbook's check of it
    (`_check_s`)."""
    spec = plan.data_spec(x.data_class)
    if spec is None or spec.rto_s is None:
        return None
    return plan.recovery.detection_s + (_check_s(plan, x) or 0.0)


def _read_ceiling(plan: Plan, dr: Site) -> float:
    """What the DR site's object storage serves to all its readers at once: the plan's
    `recovery.storage_read_gbps`, else the DR cloud's (`sizing.default_storage_read_gbps`)."""
    ceiling = plan.recovery.storage_read_gbps
    return sizing.default_storage_read_gbps(dr.cloud) if ceiling is None else ceiling


def _data_notes(plan: Plan, x: FlowFacts, rpo_s: float | None) -> Iterator[str]:
    yield from _lag_bound_note(plan, x, rpo_s)
    yield from _dataset_change_note(plan, x, rpo_s)
    w = plan.weights
    if x.data_class == DataClass.WEIGHTS and w and w.lock == WeightsLock.GOVERNANCE:
        yield (
            "a trial's lock (data.weights.lock: governance): the weights' owner can lift it and "
            "delete them; the policy pack refuses it unless its config approves these stacks "
            "as trials (immutable-weights approved_trials)"
        )
    yield from _seed_note(plan, x)
    if x.mechanism == Mechanism.DUAL_WRITE:
        yield "every writer must write both copies before it reports success"
        yield from _dual_write_notes(plan, x)
    yield from _schedule_notes(plan, x, rpo_s)
    if x.mechanism in DUAL_REGION:
        yield (
            f"one dual-region bucket spans {x.primary.region} and {x.dr.region}, owned by the DR "
            "site's stack"
        )
    if x.mechanism == Mechanism.AZURE_OR:
        yield _azure_priority_note(x, rpo_s)


# A Direct Connect gateway does not route between the gateways associated with it: between two
# AWS regions the traffic turns at the customer's router (shared/reference/dr-facts-2.md 4).
DX_HAIRPIN_NOTE = (
    "Direct Connect between two AWS regions: the Direct Connect gateway does not route from one "
    "transit gateway to the other; the writes leave AWS at the Direct Connect location and only "
    "come back if your router there advertises each region's range back to the other "
    "(a hairpin through your equipment, which gpudr does not configure). Each GB goes out over "
    "the ports and back in, and both transit gateways bill it. AWS's own region-to-region path is "
    "transit gateway peering (link.kind: tgw-peering)"
)


def _dual_write_notes(plan: Plan, x: FlowFacts) -> Iterator[str]:
    """What a dual write costs beyond its bytes, and the DX hairpin between two AWS regions."""
    c = plan.checkpoints
    if x.data_class == DataClass.CHECKPOINTS and c is not None:
        nodes = sum(cl.nodes for cl in plan.clusters.values() if cl.site == c.site)
        yield (
            f"dual-written checkpoints slow the training that writes them by "
            f"{c.dual_write_slowdown:.0%} (data.checkpoints.dual_write_slowdown; the brief quotes "
            f"15-20%): priced as {c.dual_write_slowdown:.0%} of the GPU hours of the "
            f"{nodes} training node(s) at {c.site}"
        )
    kind = _path_kind(x.mechanism, x.primary, x.dr)
    if isinstance(x.primary, OnPremSite):
        return
    if kind == LinkKind.DIRECT_CONNECT and x.primary.cloud == x.dr.cloud == Cloud.AWS:
        yield DX_HAIRPIN_NOTE


def _lag_bound_note(plan: Plan, x: FlowFacts, rpo_s: float | None) -> Iterator[str]:
    floor = sizing.lag_floor_s(x.mechanism)
    c = plan.checkpoints
    if x.data_class != DataClass.CHECKPOINTS or not c or rpo_s is None:
        return
    if rpo_s <= c.interval_s and not sizing.is_synchronous(x.mechanism):
        # The copy starts once the checkpoint is written: it has RPO - interval = 0 s.
        yield (
            f"no bandwidth can meet this: the checkpoint interval ({fmt_duration(c.interval_s)}) "
            f"is the whole RPO ({fmt_duration(rpo_s)}), leaving no time to replicate a "
            "checkpoint after it is written; checkpoint more often, relax the RPO, or dual-write "
            "the checkpoints (replication: dual-write)"
        )
    elif floor is not None and rpo_s - c.interval_s < floor:
        yield (
            f"no bandwidth can meet this: the interval ({fmt_duration(c.interval_s)}) plus the "
            f"{x.mechanism} lag bound ({fmt_duration(floor)}) exceeds the RPO; checkpoint more "
            "often or relax the RPO"
        )


def _dataset_change_note(plan: Plan, x: FlowFacts, rpo_s: float | None) -> Iterator[str]:
    """What the datasets' need assumes about when their changes arrive."""
    d = plan.datasets
    if x.data_class != DataClass.DATASETS or not d:
        return
    daily = sizing.daily_change_gbps(d.daily_change_b)
    size = f"{fmt_size(d.daily_change_b)}/day"
    if d.refresh is None:
        yield (
            f"the need assumes the daily change spread evenly over the day ({size}: "
            f"{fmt_gbps(daily)}); changes arriving in a burst must reach the DR site within the "
            "RPO: declare them as data.datasets.refresh {size, every} to size for them"
        )
        return
    r = d.refresh
    head = f"a {fmt_size(r.size_b)} refresh every {fmt_duration(r.every_s)}"
    change = f"{fmt_gbps(daily)} for the daily change ({size}, assumed spread evenly over the day)"
    if rpo_s is None:
        yield f"{head} has no RPO to meet: sized at its average rate, plus {change}"
        return
    yield (
        f"{head} must reach the DR site within the {fmt_duration(rpo_s)} RPO: "
        f"{fmt_gbps(sizing.required_gbps(r.size_b, rpo_s))}, plus {change}; "
        f"{fmt_gbps(x.flow.required_gbps)} in all"
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
            + (
                # No dual write from on premises (the spec refuses it): a run must be shorter.
                f": {wan_fix(plan, x.primary)}, or relax the RPO"
                if isinstance(x.primary, OnPremSite)
                else ": relax it, or use dual-write for this class"
            )
        )
    if x.mechanism in PULLED and x.data_class in (DataClass.DATASETS, DataClass.WEIGHTS):
        d = plan.datasets
        size = d.size_b if x.data_class == DataClass.DATASETS and d else x.flow.burst_bytes
        if isinstance(x.primary, OnPremSite):
            capacity = wan_capacity(plan, x.primary)[0]
        elif x.mechanism == Mechanism.STS:
            capacity = plan.quotas.sts_gbps
        else:
            capacity = plan.quotas.datasync_gbps
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


def _rto_params(plan: Plan, kind: PoolKind, dr: Site) -> sizing.RtoParams:
    r = plan.recovery
    return sizing.RtoParams(
        detection_s=r.detection_s,
        traffic_shift_s=r.traffic_shift_s,
        infra_create_s=r.infra_create_s,
        gpu_node_boot_s=r.gpu_node_boot_s,
        gpu_capacity_wait_s=r.gpu_capacity_wait_s,
        restart_s=r.restart_training_s if kind == PoolKind.TRAINING else r.restart_service_s,
        read_gbps_per_node=r.read_gbps_per_node,
        storage_read_gbps=_read_ceiling(plan, dr),
    )


def _working_set(plan: Plan, kind: PoolKind) -> float:
    """Bytes a pool must read at the DR site before it works: the latest full checkpoint for
    training (compressed as stored), the whole weights for a service."""
    if kind == PoolKind.TRAINING:
        c = plan.checkpoints
        return c.size_b / c.compression_ratio if c else 0.0
    return plan.weights.size_b if plan.weights else 0.0


def reservation(cloud: str, instance_type: str) -> str | None:
    """How `cloud` reserves GPU capacity for `instance_type`, or None where it has no
    reservation for it (reference data `recovery.reservations`, with sources)."""
    entry = reference.defaults()["recovery"]["reservations"][cloud]
    unsupported = entry.get("unsupported_prefix")
    if unsupported and instance_type.startswith(str(unsupported)):
        return None
    return str(entry["kind"])


def _reserved(dr: Site, instance_type: str) -> bool:
    """The DR site reserves its GPUs and its cloud has a reservation for the instance."""
    return dr.reserve_capacity and reservation(dr.cloud, instance_type) is not None


Checks = tuple[tuple[str, float | None], ...]  # (data class, the runbook's check of it)


def _checks(flows: Iterable[DataFlow]) -> Checks:
    ordered = sorted(flows, key=lambda f: DATA_CLASSES.index(f.data_class))
    return tuple((str(f.data_class), f.check_s) for f in ordered)


def _timing(kind: PoolKind, name: str, option: PatternOption) -> sizing.PoolTiming:
    return sizing.PoolTiming(name, kind, option.stages, option.scales)


def _failover(
    plan: Plan, checks: Checks, pools: Sequence[sizing.PoolTiming]
) -> tuple[sizing.TimedStep, ...]:
    return sizing.failover_steps(plan.recovery.detection_s, dict(checks), pools)


def _finishes(plan: Plan, checks: Checks, pools: Sequence[sizing.PoolTiming]) -> list[float]:
    """Each pool's estimated RTO: when its last step ends among the pair's failover steps."""
    done = sizing.finish_times(_failover(plan, checks, pools))
    return [done[sizing.workload_step(p.kind, p.name)] for p in pools]


@dataclass(frozen=True)
class PoolSpec:
    """One DR pool to plan: which workload, where, and what its cluster already has standing."""

    primary: Site | OnPremSite
    dr: Site
    name: str
    kind: PoolKind
    workload: Cluster | Service
    rpo_estimate: float | None  # a service's: the weights' estimated RPO at the DR site
    # Another pool keeps this DR cluster's control plane up: backup/restore creates no
    # infrastructure at failover, and no pattern pays for the control plane on this pool.
    control_plane_standing: bool = False
    checks: Checks = ()  # the pair's data checks, which the pool's work waits for

    @property
    def cluster(self) -> str:
        w = self.workload
        return w.cluster if isinstance(w, Service) else w.name


def _pattern_option(
    plan: Plan,
    p: PoolSpec,
    instance_type: str,
    pattern: Pattern,
    reserve: bool | None = None,  # None: as the DR site says; True: priced and timed reserved
) -> PatternOption:
    params = _rto_params(plan, p.kind, p.dr)
    if p.control_plane_standing:
        params = replace(params, infra_create_s=0.0)
    nodes = p.workload.nodes
    standing = sizing.standing_nodes(pattern, nodes, p.dr.warm_fraction)
    site = p.dr if reserve is None else replace(p.dr, reserve_capacity=reserve)
    held = _reserved(site, instance_type)
    stages = sizing.rto_stages(
        pattern,
        p.kind,
        nodes=nodes,
        standing=standing,
        working_set_b=_working_set(plan, p.kind),
        reserved=held,
        params=params,
    )
    scales = standing < nodes
    (total,) = _finishes(plan, p.checks, [sizing.PoolTiming(p.name, p.kind, stages, scales)])
    usages = list(_gpu_usages(site, p.name, instance_type, pattern, nodes))
    if pattern != Pattern.BACKUP_RESTORE and not p.control_plane_standing:
        usages += _cluster_usages(p.dr, p.cluster, dr=True)
    return PatternOption(
        pattern,
        total,
        cost.total(usages),
        _meets(p.workload.rto_s, total),
        stages,
        sizing.capacity_guaranteed(nodes, standing, held),
        scales,
    )


def _choose(p: PoolSpec, options: Sequence[PatternOption]) -> tuple[Pattern, str | None]:
    """The spec's pattern, else the cheapest that meets the RTO, else the fastest (the cheapest
    of equally fast ones); and why."""
    forced = p.workload.pattern or p.dr.pattern
    if forced is not None:
        return forced, f"pattern {forced} set in the spec"
    choice = sizing.cheapest(
        [(o.pattern, o.monthly_usd, o.meets, o.estimated_rto_s) for o in options]
    )
    if choice is not None:
        return Pattern(choice), None
    # Ties as `sizing.cheapest` breaks them: the cheaper, then the more standing.
    fastest = min(
        options,
        key=lambda o: (
            round(o.estimated_rto_s, 6),
            round(o.monthly_usd, 2),
            -DR_PATTERNS.index(o.pattern),
        ),
    )
    return fastest.pattern, (
        f"no pattern meets the RTO; {fastest.pattern} is the fastest "
        f"({fmt_duration(fastest.estimated_rto_s)})"
    )


def _capacity_offer(
    plan: Plan, p: PoolSpec, instance_type: str, chosen: PatternOption
) -> CapacityOffer:
    """What makes the chosen pattern's missing GPUs certain, priced by the cost engine: the
    cloud's reservation for every node, else every node standing (active-active)."""
    kind = reservation(p.dr.cloud, instance_type)
    if kind is not None:
        o = _pattern_option(plan, p, instance_type, chosen.pattern, reserve=True)
        return CapacityOffer(
            "reserve", kind, p.workload.nodes, o.monthly_usd, o.estimated_rto_s, o.meets
        )
    o = _pattern_option(plan, p, instance_type, Pattern.ACTIVE_ACTIVE)
    return CapacityOffer(
        "stand", "every node standing", p.workload.nodes, o.monthly_usd, o.estimated_rto_s, o.meets
    )


# Why a DR pool for an on-premises cluster may not find its GPUs (no regional crowd there).
ONPREM_CROWD = {
    Cloud.AWS: "and on-demand GPU capacity is never promised (AWS notes that short-term "
    "capacity for P-type GPU instances is often limited)",
}


def _capacity_note(
    plan: Plan, p: PoolSpec, instance_type: str, chosen: PatternOption, offer: CapacityOffer
) -> str:
    w, dr = p.workload, p.dr
    missing = w.nodes - sizing.standing_nodes(chosen.pattern, w.nodes, dr.warm_fraction)
    wait = fmt_duration(plan.recovery.gpu_capacity_wait_s)
    verdict = f"RTO {CONDITIONAL}" if chosen.meets else "RTO not met, nor its GPUs certain"
    crowd = (
        ONPREM_CROWD.get(dr.cloud, "and on-demand GPU capacity is never promised")
        if isinstance(p.primary, OnPremSite)
        else f"and in a regional outage every tenant of the failed region ({p.primary.region}) "
        "looks for capacity at once"
    )
    head = (
        f"{verdict}: {missing} of {w.nodes} {instance_type} nodes are neither standing nor "
        f"reserved, {crowd}; the estimate assumes {dr.region} has them within "
        f"recovery.gpu_capacity_wait ({wait})"
    )
    extra = f"${offer.monthly_usd - chosen.monthly_usd:,.0f} more than {chosen.pattern} now"
    rto = fmt_duration(offer.estimated_rto_s) + ("" if offer.meets else ", above the target")
    if offer.how == "reserve":
        fix = (
            f"reserve_capacity: true on site {dr.name} makes them certain: {offer.what} for "
            f"{offer.nodes} nodes, ${offer.monthly_usd:,.0f}/month billed whether used or not "
            f"({extra}), RTO {rto}"
        )
    else:
        fix = (
            f"{dr.cloud} has no capacity reservation for {instance_type} (reference data "
            f"recovery.reservations): only {offer.what} makes them certain (pattern: "
            f"active-active), ${offer.monthly_usd:,.0f}/month ({extra}), RTO {rto}"
        )
    return f"{head}. {fix}"


def _check_note(plan: Plan, p: PoolSpec, chosen: PatternOption) -> list[str]:
    """Say so when the runbook's check of a data class, not the wait for GPUs, holds the work of
    a pool that adds nodes up."""
    timing = sizing.PoolTiming(p.name, p.kind, chosen.stages, chosen.scales)
    path = sizing.critical_path(
        _failover(plan, p.checks, [timing]), sizing.workload_step(p.kind, p.name)
    )
    checks = dict(p.checks)
    held = [k.removeprefix("data:") for k, _ in path if k.startswith("data:")]
    if not held or not chosen.scales:
        return []
    gpus = chosen.stages["infrastructure"] + chosen.stages["capacity"]
    return [
        f"its work waits for the runbook's check of the {held[0]} at {p.dr.name} "
        f"({fmt_duration(checks[held[0]])}: one host reads them whole to hash them), longer "
        f"than its GPUs take ({fmt_duration(gpus)}); a faster checking host "
        "(recovery.read_gbps_per_node) shortens it"
    ]


def _plan_pool(plan: Plan, p: PoolSpec) -> Pool:
    """Price and time every pattern for one pool and pick one (`_choose`)."""
    # The same GPU as the DR cloud sells it (p5.48xlarge at AWS is a3-highgpu-8g at GCP).
    w, dr = p.workload, p.dr
    gpu = reference.gpu_offer(dr.cloud, w.gpu)
    if gpu is None:
        raise ValueError(f"{dr.cloud} offers no {w.gpu}; the spec check should have said so")
    options = [_pattern_option(plan, p, gpu.instance_type, pattern) for pattern in DR_PATTERNS]
    pattern, why = _choose(p, options)
    notes = [why] if why else []
    chosen = next(o for o in options if o.pattern == pattern)
    offer = None
    if not chosen.guaranteed:
        offer = _capacity_offer(plan, p, gpu.instance_type, chosen)
        notes.append(_capacity_note(plan, p, gpu.instance_type, chosen, offer))
    notes += _check_note(plan, p, chosen)
    if _reserved(dr, gpu.instance_type):
        notes.append(f"capacity reservation for {w.nodes} nodes is billed whether used or not")
    elif dr.reserve_capacity:
        notes.append(
            f"{dr.cloud} has no capacity reservation for {gpu.instance_type} (reference data "
            "recovery.reservations): reserve_capacity reserves, bills and makes certain nothing "
            "here; keep the nodes standing (warm-standby or active-active) instead"
        )
    if isinstance(p.primary, OnPremSite) and isinstance(w, Cluster):
        notes += _hardware_notes(p.primary, w, dr, gpu)
    if isinstance(w, Service) and (plan.weights is None or plan.weights.site != w.site):
        notes.append(
            f"RPO not applicable: the plan replicates no model weights from {w.site}, so gpudr "
            "protects no data of this service; its model must reach the DR site another way "
            "(e.g. in its container image), and its RTO assumes no model load"
        )
    return Pool(
        name=p.name,
        kind=p.kind,
        cluster=p.cluster,
        primary=p.primary.name,
        dr=dr.name,
        gpu=w.gpu,
        instance_type=gpu.instance_type,
        gpus_per_node=gpu.gpus_per_node,
        efa_interfaces=gpu.efa_interfaces if isinstance(w, Cluster) else 0,
        nodes=w.nodes,
        pattern=pattern,
        standing=sizing.standing_nodes(pattern, w.nodes, dr.warm_fraction),
        # A site's reserve_capacity reserves only what its cloud can reserve (no ND-series
        # capacity reservation on Azure): nothing is billed or declared as reserved otherwise.
        reserved=_reserved(dr, gpu.instance_type),
        rpo_s=w.rpo_s if isinstance(w, Service) else None,
        rto_s=w.rto_s,
        estimated_rpo_s=p.rpo_estimate,
        options=tuple(options),
        notes=tuple(notes),
        offer=offer,
    )


def _hardware_notes(site: OnPremSite, w: Cluster, dr: Site, gpu: reference.GpuOffer) -> list[str]:
    """How the cluster's training runs on its DR pool against on premises."""
    d = hardware.difference(site.gpus, w.nodes, dr.cloud, w.gpu, gpu.gpus_per_node)
    one = cost.gpu_usage(
        dr.cloud, dr.name, pool=w.name, instance_type=gpu.instance_type, nodes=1, what="", dr=True
    )
    hourly = cost.total([one]) / HOURS_PER_MONTH
    return hardware.notes(d, gpu.instance_type, hourly, w.nodes)


def _plan_pools(
    plan: Plan, primary: Site | OnPremSite, dr: Site, weights_rpo: float | None, checks: Checks
) -> list[Pool]:
    """Pools per DR cluster, in two passes: each pool chooses alone; if any pool keeps the
    cluster's control plane up, the others choose again knowing it is standing. Then each is
    timed among all the pair's pools (`_on_the_pair`)."""
    specs = [
        PoolSpec(primary, dr, cl.pool_name, PoolKind.TRAINING, cl, None, checks=checks)
        for cl in plan.clusters.values()
        if cl.site == primary.name
    ] + [
        PoolSpec(primary, dr, svc.pool_name, PoolKind.SERVICE, svc, weights_rpo, checks=checks)
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
    return _on_the_pair(plan, checks, out)


def _on_the_pair(plan: Plan, checks: Checks, pools: list[Pool]) -> list[Pool]:
    """Each pool's chosen estimate as its finish among all the pair's failover steps. A pool
    that adds nodes waits for the one capacity step (one `pulumi up` grows every pool), which
    lasts as long as the slowest pool's growth: a pool may finish later than it would alone."""
    timings = [_timing(p.kind, p.name, p.chosen) for p in pools]
    out = []
    for p, rto in zip(pools, _finishes(plan, checks, timings), strict=True):
        if abs(rto - p.chosen.estimated_rto_s) < 1e-6:
            out.append(p)
            continue
        chosen = replace(p.chosen, estimated_rto_s=rto, meets=_meets(p.rto_s, rto))
        note = (
            f"waits for the capacity step, which grows the pair's other pools too: "
            f"{fmt_duration(rto)}, not the {fmt_duration(p.chosen.estimated_rto_s)} it would "
            "take alone"
        )
        options = tuple(chosen if o.pattern == p.pattern else o for o in p.options)
        out.append(replace(p, options=options, notes=(*p.notes, note)))
    return out


# --- the design -------------------------------------------------------------------------------


def design(plan: Plan) -> Design:
    flows: list[DataFlow] = []
    paths: dict[str, Path] = {}
    pools: list[Pool] = []
    everything: list[tuple[Site | OnPremSite, Site]] = [*plan.pairs(), *plan.onprem_pairs()]
    for primary, dr in everything:
        pair_flows, pair_paths = _pair_design(plan, primary, dr)
        flows += pair_flows
        paths.update((p.key, p) for p in pair_paths)
        # A service at the DR site serves what was replicated there: its RPO is the weights'.
        # Without weights from its site gpudr protects none of its data: the spec leaves its
        # RPO unset (not applicable) and refuses one stated (spec._services_rpo).
        est_weights = next(
            (f.estimate.estimated_s for f in pair_flows if f.data_class == DataClass.WEIGHTS),
            None,
        )
        pools.extend(_plan_pools(plan, primary, dr, est_weights, _checks(pair_flows)))
    usages = tuple(_usages(plan, flows, paths, pools))
    return Design(
        plan,
        tuple(flows),
        paths,
        tuple(pools),
        tuple(_workloads(plan, flows, paths, pools)),
        cost.report(usages),
        _alternatives(plan, pools, flows),
        usages,
    )


def _workloads(
    plan: Plan, flows: list[DataFlow], paths: dict[str, Path], pools: list[Pool]
) -> list[Workload]:
    return [_data_workload(plan, f, paths[f.path]) for f in flows] + [
        _pool_workload(p) for p in pools
    ]


def _data_workload(plan: Plan, f: DataFlow, path: Path) -> Workload:
    notes = [*f.notes, *([path.choice] if path.choice else []), *_shortfall_notes(plan, path)]
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


def _shortfall_notes(plan: Plan, path: Path) -> Iterator[str]:
    """Why a path cannot carry its flows, by how much, and (on premises) what raises it."""
    if path.ok:
        return
    has = f"has {path.capacity_gbps:,.6g} Gbps"
    onprem = plan.onprem.get(path.primary)
    if onprem is not None:
        # The ports are the user's own, not a plan gpudr picks: name the bound and its fix.
        short = path.needed_gbps - path.capacity_gbps
        yield (
            f"path {path.kind} needs {path.needed_gbps:,.2f} Gbps with headroom but {has} "
            f"({path.capacity_source}): {short:,.2f} Gbps short; {wan_fix(plan, onprem)}"
        )
        return
    dr = plan.sites[path.dr]
    if path.kind == LinkKind.HA_VPN and (plan.sites[path.primary].cloud, dr.cloud) in (
        DEDICATED_LINKS
    ):
        short = path.needed_gbps - path.capacity_gbps
        yield (
            f"path {path.kind} needs {path.needed_gbps:,.2f} Gbps with headroom but {has} "
            f"({path.capacity_source}): {short:,.2f} Gbps short; a dedicated link carries it: "
            f"{cci_fix(dr)}"
            + (
                f" (or name only its places, without kind: {path.kind}: the planner chooses by "
                "the need)"
                if dr.link is not None and dr.link.kind is not None
                else " (the planner chooses it by the need once its places are named)"
            )
        )
        return
    if path.ports is not None:
        # Direct Connect is sized to the need: short only beyond the largest plan.
        link = (
            "Cross-Cloud Interconnect"
            if path.kind == LinkKind.CROSS_CLOUD_INTERCONNECT
            else "Direct Connect"
        )
        has = (
            f"the largest {link} plan gpudr deploys has {path.capacity_gbps:,.6g} Gbps "
            f"({path.capacity_source})"
        )
    short = path.needed_gbps - path.capacity_gbps
    yield (
        f"path {path.kind} needs {path.needed_gbps:,.2f} Gbps with headroom but {has}: "
        f"{short:,.2f} Gbps short"
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
        guaranteed=p.guaranteed,
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
    reserved = _reserved(site, instance_type)
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
    out += _tgw_attachment_usages(plan, paths)
    out += _slowdown_usages(plan, flows)
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
    # A GCP site owning a dual-region bucket keys it in the bucket's multi-region location too
    # (gpudr/build/stackconfig.py: kms_location), so it holds a second key.
    keys = 1 + int(any(f.dr == site.name and f.mechanism in DUAL_REGION for f in flows))
    out = [
        _usage("data-key", site, keys, is_dr),
        *cost.nat_usages(site.cloud, site.name, dr=is_dr),
    ]
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


def datasync_mode(kind: StorageKind) -> str:
    """The DataSync task mode an on-premises store is read in: Enhanced for NFS file servers
    (an Lustre export too), which Enhanced-mode agents read; Basic for object stores and HDFS,
    which only Basic mode reads through an agent (shared/reference/dr-facts-2.md 3, "Choosing a
    task mode"). Basic mode copies at most 50 million files, objects or directories a run."""
    return "enhanced" if kind in NFS_STORAGE_KINDS else "basic"


def _onprem_flow_usages(plan: Plan, f: DataFlow, site: OnPremSite) -> Iterator[Usage]:
    """What the DR cloud bills for a class pulled from on premises. No transfer line: data
    into AWS, GCP or Azure is free, and what leaves the data centre is billed by your own
    carrier, not here."""
    dr = plan.sites[f.dr]
    gb = f.monthly_bytes / cost.GB
    stored_gb = replica_bytes(plan, f.data_class) / cost.GB
    what = f"{f.data_class} replica"
    yield _usage("storage", dr, stored_gb, True, what=what, storage_class=f.replica_class)
    if f.mechanism == Mechanism.STS_AGENT:
        # Per GiB through the agents; no per-run fee and no endpoint (the agents reach
        # Google's APIs over the link or the internet, runbook).
        yield _usage("sts-agent-fee", dr, gb, True, data_class=f.data_class)
        return
    if f.mechanism == Mechanism.STORAGE_MOVER:
        # Storage Mover's own fee: no source read in this pass gives one (listed as unpriced,
        # never assumed to be zero). The uploads cross the replica's private endpoint, which
        # bills per GB; the Logic App starting the job bills per action (two per start).
        yield _usage("storage-mover-fee", dr, gb, True, data_class=f.data_class)
        yield _usage("private-endpoint-gb", dr, gb, True, data_class=f.data_class)
        if f.schedule is not None:
            starts = SECONDS_PER_MONTH / f.schedule.interval_s
            every = fmt_duration(f.schedule.interval_s)
            actions = 2 * starts
            yield _usage(
                "mover-schedule-actions", dr, actions, True, data_class=f.data_class, every=every
            )
        return
    mode = datasync_mode(site.storage.kind)
    yield _usage("datasync-agent-fee", dr, gb, True, data_class=f.data_class, mode=mode)
    if mode == "enhanced" and f.schedule is not None:
        runs = SECONDS_PER_MONTH / f.schedule.interval_s
        every = fmt_duration(f.schedule.interval_s)
        yield _usage("datasync-executions", dr, runs, True, data_class=f.data_class, every=every)
    link = "Direct Connect" if site.link.kind == OnPremLinkKind.DIRECT_CONNECT else "the VPN"
    yield _usage("tgw-processing-onprem", dr, gb, True, data_class=f.data_class, link=link)


def _flow_usages(plan: Plan, f: DataFlow, path: Path) -> list[Usage]:
    if f.primary in plan.onprem:
        return list(_onprem_flow_usages(plan, f, plan.onprem[f.primary]))
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
    elif path.kind == LinkKind.CROSS_CLOUD_INTERCONNECT:
        # At interconnect rates, billed by the cloud the data leaves: Direct Connect's transfer
        # out from AWS, Interconnect egress from GCP (unpriced: prices.yaml missing).
        rule = "dx-transfer-out" if primary.cloud == Cloud.AWS else "interconnect-egress"
        out.append(_usage(rule, primary, gb, True, data_class=f.data_class))
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
    return out + list(_mechanism_usages(plan, f, gb)) + list(_tgw_processing(plan, f, path, gb))


# The DR links that attach to an AWS site's transit gateway; a transit gateway bills every GB
# sent into it from a VPC, a VPN or Direct Connect, none arriving over a peering attachment.
# (`vpn` attaches to one only on AWS -> Azure: components/aws/azure_vpn.py)
TGW_LINKS = (
    LinkKind.TGW_PEERING,
    LinkKind.DIRECT_CONNECT,
    LinkKind.HA_VPN,
    LinkKind.VPN,
    LinkKind.CROSS_CLOUD_INTERCONNECT,
)
# The links whose AWS end is a Direct Connect gateway on the site's transit gateway.
DX_LINKS = (LinkKind.DIRECT_CONNECT, LinkKind.CROSS_CLOUD_INTERCONNECT)


def _tgw_processing(plan: Plan, f: DataFlow, path: Path, gb: float) -> Iterator[Usage]:
    """Dual writes on a DR link through transit gateways: the sender's processes them out of
    its VPC; the receiver's processes what arrives from Direct Connect or a VPN (a hairpin
    through your router on Direct Connect between two AWS regions)."""
    if f.mechanism != Mechanism.DUAL_WRITE or path.kind not in TGW_LINKS:
        return
    primary, dr = plan.sites[f.primary], plan.sites[f.dr]
    if primary.cloud == Cloud.AWS:
        yield _usage("tgw-processing", primary, gb, True, data_class=f.data_class)
    if dr.cloud == Cloud.AWS and path.kind != LinkKind.TGW_PEERING:
        link = "Direct Connect" if path.kind in DX_LINKS else "the VPN"
        yield _usage("tgw-processing-in", dr, gb, True, data_class=f.data_class, link=link)


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
    if f.mechanism == Mechanism.AZCOPY:
        yield from _azcopy_usages(f, dr, gb)
    if f.mechanism in (Mechanism.CRR_RTC, Mechanism.CRR):
        yield _usage("replication-metrics", primary, 4, True, data_class=f.data_class)
        yield _usage("replication-alarms", primary, 2, True, data_class=f.data_class)
    if f.mechanism == Mechanism.DUAL_WRITE and dr.cloud == Cloud.AWS:
        # Per GB the receiving site's S3 interface endpoint takes in (its hours: below).
        yield _usage("endpoint-processing", dr, gb, True, data_class=f.data_class)


def _azcopy_usages(f: DataFlow, dr: Site, gb: float) -> Iterator[Usage]:
    """An AzCopy class at its Azure DR site: each run's replica allocated for the run's
    transfer (its cores and memory: enums.AZCOPY_JOB_VCPU, AZCOPY_JOB_MEMORY_GIB), and the
    replica account's block writes. The S3 egress is the primary's transfer line."""
    yield _usage("azcopy-blob-writes", dr, gb, True, data_class=f.data_class)
    if f.schedule is None:
        return
    runs = SECONDS_PER_MONTH / f.schedule.interval_s
    seconds = runs * f.schedule.transfer_s
    every = fmt_duration(f.schedule.interval_s)
    cls = f.data_class
    vcpu, memory = seconds * AZCOPY_JOB_VCPU, seconds * AZCOPY_JOB_MEMORY_GIB
    yield _usage("azcopy-job-vcpu", dr, vcpu, True, data_class=cls, every=every)
    yield _usage("azcopy-job-memory", dr, memory, True, data_class=cls, every=every)


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


def vpn_connections(tunnels: int) -> int:
    """AWS Site-to-Site VPN connections for an on-premises link of `tunnels` (two each)."""
    return max(1, math.ceil(tunnels / 2))


def _wan_usages(plan: Plan, path: Path) -> Iterator[Usage]:
    """An on-premises site's link, as its DR cloud bills it: the Direct Connect ports (the DR
    stack declares the connections) or the VPN connection; and the interface endpoint the
    agents reach DataSync through."""
    site, dr = plan.onprem[path.primary], plan.sites[path.dr]
    link = site.link
    if dr.cloud == Cloud.GCP:
        yield from _interconnect_usages(site, dr)
        return
    if link.kind == OnPremLinkKind.EXPRESSROUTE:
        yield from _expressroute_usages(dr, link, path)
        return
    if link.kind == OnPremLinkKind.DIRECT_CONNECT:
        ports = {"ports": link.ports, "port_gbps": int(link.port_gbps)}
        yield _usage("dx-ports", dr, link.ports * HOURS_PER_MONTH, True, **ports)
    elif link.kind == OnPremLinkKind.VPN:
        connections = vpn_connections(link.ports)
        hours = connections * HOURS_PER_MONTH
        yield _usage("aws-vpn-connections", dr, hours, True, connections=connections)
    azs = len(dr.azs)
    yield _usage("datasync-endpoint-hours", dr, azs * HOURS_PER_MONTH, True, azs=azs)


def _interconnect_usages(site: OnPremSite, dr: Site) -> Iterator[Usage]:
    """A GCP DR site's end of the on-premises link: over Dedicated Interconnect, the circuits
    (the DR stack orders them) and the VLAN attachment on them; over Partner Interconnect, the
    attachments (the provider bills its part of the path)."""
    link = site.link
    if link.kind == OnPremLinkKind.INTERCONNECT_DEDICATED:
        ports = {"ports": link.ports, "port_gbps": int(link.port_gbps)}
        yield _usage("interconnect-circuits", dr, link.ports * HOURS_PER_MONTH, True, **ports)
    # Dedicated: one attachment over the bundle of circuits; Partner: one per port, each of
    # the port's capacity (components/gcp/onprem.py).
    dedicated = link.kind == OnPremLinkKind.INTERCONNECT_DEDICATED
    count = 1 if dedicated else link.ports
    gbps = link.capacity_gbps if dedicated else link.port_gbps
    what = {"attachments": count, "bandwidth": f"{gbps:g} Gbps"}
    yield _usage("interconnect-vlan-attachments", dr, count * HOURS_PER_MONTH, True, **what)


def expressroute_gateway_sku(capacity_gbps: float) -> str:
    """The ExpressRoute gateway the Azure DR stack declares for a WAN path (the smallest that
    carries it; components/azure/onprem.py builds it from the same table)."""
    table = reference.defaults()["links"]["onprem"]["expressroute_gateways"]
    for sku, gbps in table["gbps"].items():
        if capacity_gbps <= float(gbps):
            return str(sku)
    # Never the largest in silence: it would not carry the path (the spec refuses such a link).
    sku, gbps = list(table["gbps"].items())[-1]
    raise ValueError(
        f"a {capacity_gbps:g} Gbps path is more than the largest ExpressRoute gateway "
        f"({sku}, {gbps:g} Gbps) carries"
    )


def _expressroute_usages(dr: Site, link: OnPremLink, path: Path) -> Iterator[Usage]:
    """The metered circuit at its bandwidth (per month) and the gateway (per hour), neither
    priced in prices.yaml yet (listed as unpriced), and the gateway's Standard public IP; and
    the uploads' private path: a Blob private endpoint per replica account (one per class,
    each in its own account), the privatelink zone answering for them and the resolver's
    inbound endpoint (both unpriced)."""
    mbps = round(link.port_gbps * 1000)
    yield _usage("expressroute-circuit", dr, 1, True, mbps=mbps)
    sku = expressroute_gateway_sku(path.capacity_gbps)
    yield _usage("expressroute-gateway-hours", dr, HOURS_PER_MONTH, True, sku=sku)
    yield _usage("public-ipv4", dr, HOURS_PER_MONTH, True, what="ExpressRoute gateway")
    endpoints = len(path.flows)
    hours = endpoints * HOURS_PER_MONTH
    yield _usage("private-endpoint-hours", dr, hours, True, endpoints=endpoints)
    yield _usage("private-dns-zone", dr, 1, True)
    yield _usage("dns-resolver-inbound-hours", dr, HOURS_PER_MONTH, True)


def _link_usages(plan: Plan, path: Path) -> Iterator[Usage]:
    if path.kind == LinkKind.WAN:
        yield from _wan_usages(plan, path)
        return
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
    if path.kind == LinkKind.CROSS_CLOUD_INTERCONNECT and path.ports:
        yield from _cci_usages(plan, path, path.ports)


def _cci_usages(plan: Plan, path: Path, ports: sizing.PortPlan) -> Iterator[Usage]:
    """Each cloud bills its own end, whichever site is the primary (whose stack declares
    both): AWS the LAGs' Direct Connect ports, Google the connections and one VLAN attachment
    of the port's speed on each (both unpriced: prices.yaml missing)."""
    by_cloud = {plan.sites[n].cloud: plan.sites[n] for n in (path.primary, path.dr)}
    hours = ports.ports * HOURS_PER_MONTH
    what = {"ports": ports.ports, "port_gbps": ports.port_gbps}
    yield _usage("dx-ports", by_cloud[Cloud.AWS], hours, True, **what)
    yield _usage("cci-connections", by_cloud[Cloud.GCP], hours, True, **what)
    bandwidth = {"attachments": ports.ports, "bandwidth": f"{ports.port_gbps} Gbps"}
    yield _usage("interconnect-vlan-attachments", by_cloud[Cloud.GCP], hours, True, **bandwidth)


def link_tunnels(kind: str, vpn_peer: str = "") -> int | None:
    """The IPsec tunnels of a VPN link: HA VPN's four; an Azure gateway's peer's count
    (`sizing.azure_vpn_tunnels`: GCP two, AWS four); None for any other link."""
    if kind == LinkKind.HA_VPN:
        return int(reference.defaults()["links"]["ha-vpn"]["tunnels"])
    if kind == LinkKind.VPN:
        return sizing.azure_vpn_tunnels(vpn_peer)
    return None


def _vpn_usages(plan: Plan, path: Path) -> Iterator[Usage]:
    """Each cloud bills its own end, whichever side is the primary."""
    by_cloud = {plan.sites[n].cloud: plan.sites[n] for n in (path.primary, path.dr)}
    tunnels = path.tunnels or 0
    if Cloud.GCP in by_cloud:
        gcp = by_cloud[Cloud.GCP]
        yield _usage("ha-vpn-tunnels", gcp, tunnels * HOURS_PER_MONTH, True, tunnels=tunnels)
    if Cloud.AWS in by_cloud:
        aws = by_cloud[Cloud.AWS]
        connections = aws_vpn_connections(tunnels)
        yield _usage(
            "aws-vpn-connections", aws, connections * HOURS_PER_MONTH, True, connections=connections
        )
        # Each connection's two tunnels have an AWS public IPv4 address.
        ips = 2 * connections
        what = f"{ips} VPN tunnel endpoints"
        yield _usage("public-ipv4", aws, ips * HOURS_PER_MONTH, True, what=what)
    if Cloud.AZURE in by_cloud and path.gateway_sku:
        azure = by_cloud[Cloud.AZURE]
        yield _usage("azure-vpn-gateway", azure, HOURS_PER_MONTH, True, sku=path.gateway_sku)
        # An active-active gateway: one Standard static address per instance.
        ips = sizing.AZURE_VPN_INSTANCES
        what = f"VPN gateway, {ips} instances"
        yield _usage("public-ipv4", azure, ips * HOURS_PER_MONTH, True, what=what)


def aws_vpn_connections(tunnels: int) -> int:
    """AWS site-to-site VPN connections on a VPN path: each brings two tunnels."""
    return tunnels // 2


def _tgw_attachment_usages(plan: Plan, paths: dict[str, Path]) -> Iterator[Usage]:
    """Every AWS site's transit gateway attachments, billed per hour: its VPC's (every site
    has one, components/aws/network.py), a peering attachment on each side of transit gateway
    peering, one per VPN connection of a VPN path, one for the Direct Connect gateway."""
    for site in plan.sites.values():
        if site.cloud != Cloud.AWS:
            continue
        parts = {"VPC": 1}
        for path in paths.values():
            if site.name not in (path.primary, path.dr):
                continue
            if path.kind == LinkKind.TGW_PEERING:
                parts["peering"] = parts.get("peering", 0) + 1
            elif path.kind in (LinkKind.HA_VPN, LinkKind.VPN):
                parts["VPN"] = parts.get("VPN", 0) + aws_vpn_connections(path.tunnels or 0)
            elif path.kind in DX_LINKS:
                parts["Direct Connect gateway"] = parts.get("Direct Connect gateway", 0) + 1
            elif path.kind == LinkKind.WAN:
                link = plan.onprem[path.primary].link
                if link.kind == OnPremLinkKind.DIRECT_CONNECT:
                    parts["Direct Connect gateway"] = parts.get("Direct Connect gateway", 0) + 1
                else:
                    parts["VPN"] = parts.get("VPN", 0) + vpn_connections(link.ports)
        what = " + ".join(k if n == 1 else f"{n} {k}" for k, n in parts.items())
        count = sum(parts.values())
        yield _usage("tgw-attachments", site, count * HOURS_PER_MONTH, True, what=what)


def _slowdown_usages(plan: Plan, flows: list[DataFlow]) -> Iterator[Usage]:
    """Dual-written checkpoints slow the training that writes them: that share of the primary
    training clusters' GPU hours (data.checkpoints.dual_write_slowdown)."""
    c = plan.checkpoints
    if c is None or not any(
        f.data_class == DataClass.CHECKPOINTS and f.mechanism == Mechanism.DUAL_WRITE for f in flows
    ):
        return
    site = plan.sites[c.site]
    for cl in plan.clusters.values():
        if cl.site != site.name or not c.dual_write_slowdown:
            continue
        yield _usage(
            "dual-write-slowdown",
            site,
            c.dual_write_slowdown * cl.nodes * HOURS_PER_MONTH,
            True,
            pool=cl.pool_name,
            instance_type=cl.instance_type,
            share=f"{c.dual_write_slowdown:.0%}",
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


def _alternatives(
    plan: Plan, pools: list[Pool], flows: list[DataFlow]
) -> dict[str, tuple[float, bool]]:
    """The DR GPU and control-plane bill if every pool used one pattern, and whether every
    pool's RTO target would hold, timed as the failover's steps time them. Timed afresh: with
    every pool on backup/restore, no control plane stands, so each pays the infrastructure
    stage."""
    out: dict[str, tuple[float, bool]] = {}
    for pattern in DR_PATTERNS:
        usages: list[Usage] = []
        ok = True
        for (primary, dr_name), group in _by_pair(pools).items():
            dr = plan.sites[dr_name]
            timings = []
            for p in group:
                usages += _gpu_usages(dr, p.name, p.instance_type, pattern, p.nodes)
                standing = sizing.standing_nodes(pattern, p.nodes, dr.warm_fraction)
                stages = sizing.rto_stages(
                    pattern,
                    p.kind,
                    nodes=p.nodes,
                    standing=standing,
                    working_set_b=_working_set(plan, p.kind),
                    reserved=_reserved(dr, p.instance_type),
                    params=_rto_params(plan, p.kind, dr),
                )
                timings.append(sizing.PoolTiming(p.name, p.kind, stages, standing < p.nodes))
            checks = _checks(f for f in flows if f.primary == primary and f.dr == dr_name)
            rtos = _finishes(plan, checks, timings)
            ok = ok and all(_meets(p.rto_s, t) for p, t in zip(group, rtos, strict=True))
        if pattern != Pattern.BACKUP_RESTORE:
            for dr_name, cluster in sorted({(p.dr, p.cluster) for p in pools}):
                usages += _cluster_usages(plan.sites[dr_name], cluster, dr=True)
        out[pattern] = (cost.total(usages), ok)
    return out


def _by_pair(pools: Iterable[Pool]) -> dict[tuple[str, str], list[Pool]]:
    out: dict[tuple[str, str], list[Pool]] = {}
    for p in pools:
        out.setdefault((p.primary, p.dr), []).append(p)
    return out
