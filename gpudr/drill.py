"""DR drills, the pure part: what a drill of one DR site creates, runs, costs and reports.

A drill is a disposable Pulumi stack, `drill-<site>-<YYYYMMDDTHHMMSSZ>`, that runs the project's
own program with `gpudr:mode` = `drill` and a `gpudr:drill` object (`DrillConfig`). In that mode
the program builds, instead of the site, a copy of the DR site's GPU clusters on an isolated
network (no route, peering, VPN or link to any other site), each pool at the plan's test size,
and an identity that can only read the DR site's replicas. It never declares a bucket, key or
storage account: the data is neither created nor deleted by a drill. Every taggable resource
carries the drill id and its expiry (`TAG_DRILL`, `TAG_EXPIRES`), and so does the stack (as
stack tags), so that `gpudr drill cleanup` can find and remove expired drills.

The drill runs the runbook's failover steps that need no workload of yours, in order, and times
each against the design's own expectation:

1. infrastructure  `pulumi up` with the pools at 0: network, control planes, reader identity
2. checkpoint      the latest checkpoint located in the replica and checksum-verified
3. capacity        the pools scaled to their test size (`pulumi up`) until the nodes run
4. data-age        per replicated class, now minus the newest replica object: achieved RPO

Then it always destroys the stack and removes it. Nothing here imports Pulumi: the orchestration
(`drill/`) and the program (`components/*/drill.py`) both read these names and models.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from gpudr import cost, reference
from gpudr.design import SITE_PRICES, Design
from gpudr.runbook import build_runbook
from gpudr.spec import Plan, Site, drill_default
from gpudr.stackconfig import (
    AKS_SYSTEM_NODE_COUNT,
    AKS_SYSTEM_VM_SIZE,
    CONFIG_NAMESPACE,
    BucketConfig,
    ClusterConfig,
    SiteConfig,
    agent_pool_name,
    build_site_configs,
    stack_config_values,
)
from gpudr.templating import environment
from gpudr.units import fmt_duration, fmt_size

MODE = "drill"
PHASES = ("infrastructure", "capacity")
# The only names a drill creates, destroys or removes: anything else is refused.
STACK_RE = re.compile(r"^drill-(?P<site>[a-z][a-z0-9-]{0,22}[a-z0-9])-(?P<ts>\d{8}T\d{6}Z)$")
COMPACT = "%Y%m%dT%H%M%SZ"  # ISO 8601 basic format: valid in stack names, tags and GCP labels
EXTENDED = "%Y-%m-%dT%H:%M:%SZ"
TAG_DRILL = "gpudr:drill"
TAG_EXPIRES = "gpudr:expires-at"
TEMPLATE = "drill-report.md.j2"
# Titles of the hourly items besides GPUs a drill runs: a control plane per cluster and one
# egress gateway, priced as design.py prices a standing DR site (`SITE_PRICES`).
_HOURLY_TITLES = {
    "aws": {"control_plane": "EKS control plane", "nat": "NAT gateway"},
    "gcp": {"control_plane": "GKE cluster fee", "nat": "Cloud NAT"},
    "azure": {"control_plane": "AKS Standard tier"},
}


class DrillError(ValueError):
    """Bad input for a drill; the message is one line naming what and how to fix it."""


class DrillNameError(DrillError):
    """A stack name that is not a drill stack: never created, destroyed or removed by a drill."""


# --- names --------------------------------------------------------------------------------------


def format_ts(at: datetime) -> str:
    return at.astimezone(UTC).strftime(COMPACT)


def iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime(EXTENDED)


def parse_ts(text: str) -> datetime:
    """A UTC time in the basic (`20250131T031200Z`) or extended (`2025-01-31T03:12:00Z`) ISO
    8601 format, the two forms a drill writes; a GCP label's lower-case form is accepted too."""
    value = text.strip().upper()
    for form in (COMPACT, EXTENDED):
        try:
            return datetime.strptime(value, form).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f'"{text}" is not a UTC time like 20250131T031200Z or 2025-01-31T03:12:00Z')


def stack_name(site: str, at: datetime) -> str:
    name = f"drill-{site}-{format_ts(at)}"
    check_stack_name(name)
    return name


def is_drill_stack(name: str) -> bool:
    return STACK_RE.match(name) is not None


def check_stack_name(name: str) -> tuple[str, datetime]:
    """(site, creation time) of a drill stack; DrillNameError for any other name."""
    match = STACK_RE.match(name)
    if match is None:
        raise DrillNameError(
            f'stack "{name}" is not a drill stack (drill-<site>-<YYYYMMDDTHHMMSSZ>); a drill '
            "never creates, destroys or removes any other stack"
        )
    return match["site"], parse_ts(match["ts"])


def fit(name: str, limit: int) -> str:
    """`name` if it fits in `limit` characters; else its head and a digest of the whole, so that
    two long names stay distinct."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"{name[: limit - 7].rstrip('-')}-{digest}"


def cluster_name(drill_id: str, cluster: str, cloud: str) -> str:
    """EKS allows 100 characters, GKE 40, AKS 63: never the DR stack's own cluster name."""
    return fit(f"{drill_id}-{cluster}", {"aws": 100, "gcp": 40, "azure": 63}[cloud])


def network_name(drill_id: str, region: str) -> str:
    """GCP names the subnetwork `<network>-<region>` and the router `<network>-router`, each at
    most 63 characters; Azure's virtual network takes the same name."""
    return fit(f"gpudr-{drill_id}", 62 - max(len(region), len("router")))


def resource_group_name(drill_id: str) -> str:
    """Azure: the drill's own resource group, never the DR site's (which holds its data)."""
    return fit(f"gpudr-{drill_id}", 90)


def reader_name(drill_id: str, cloud: str) -> str:
    """The read-only identity: an IAM role name (64), a GCP service account id (6-30 lower-case
    letters, digits and hyphens: a digest of the drill id), an Azure identity name."""
    if cloud == "gcp":
        return f"gpudr-drill-{hashlib.sha256(drill_id.encode()).hexdigest()[:12]}"
    return fit(f"gpudr-{drill_id}-reader", 64 if cloud == "aws" else 128)


# --- the `gpudr:drill` config object ------------------------------------------------------------


@dataclass(frozen=True)
class DrillConfig:
    """`gpudr:drill`, what the program reads in drill mode."""

    stack: str  # drill-<site>-<YYYYMMDDTHHMMSSZ>
    expires_at: str  # UTC, extended ISO 8601
    ttl_s: int
    phase: str  # infrastructure: pools at 0 | capacity: pools at their test size
    nodes: dict[str, int]  # DR pool name -> test size
    cidr: str | None = None  # the isolated network's range; None: the DR site's own
    # GCP: the member (`user:...`, `serviceAccount:...`) allowed to act as the reader, so that
    # the drill's checks run with the reader's rights and no more.
    operator: str | None = None

    @property
    def id(self) -> str:
        """Lower case: usable in every cloud's names and in GCP labels."""
        return self.stack.lower()

    @property
    def expires(self) -> datetime:
        return parse_ts(self.expires_at)

    @property
    def failover(self) -> bool:
        """Pools at their test size (the components' failover sizing) in the capacity phase."""
        return self.phase == "capacity"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        return {k: v for k, v in out.items() if v is not None}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> DrillConfig:
        """Rebuild `gpudr:drill`; ValueError names the first bad key."""
        missing = [k for k in ("stack", "expires_at", "ttl_s", "phase", "nodes") if k not in data]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        check_stack_name(str(data["stack"]))
        parse_ts(str(data["expires_at"]))
        if data["phase"] not in PHASES:
            raise ValueError(f'phase "{data["phase"]}" is not one of {", ".join(PHASES)}')
        nodes = data["nodes"]
        if not isinstance(nodes, Mapping) or not all(
            isinstance(v, int | float) and int(v) >= 1 for v in nodes.values()
        ):
            raise ValueError("nodes is not a mapping of pool name to a node count of at least 1")
        return DrillConfig(
            stack=str(data["stack"]),
            expires_at=str(data["expires_at"]),
            ttl_s=int(data["ttl_s"]),
            phase=str(data["phase"]),
            nodes={str(k): int(v) for k, v in nodes.items()},
            cidr=data.get("cidr"),
            operator=data.get("operator"),
        )


def ttl_tags(drill: DrillConfig) -> dict[str, str]:
    """The TTL tags on every taggable resource (GCP labels lower-case them, which parse_ts
    reads back)."""
    return {TAG_DRILL: drill.id, TAG_EXPIRES: format_ts(drill.expires)}


def drill_clusters(site: SiteConfig, drill: DrillConfig) -> tuple[ClusterConfig, ...]:
    """The DR site's clusters as the drill declares them: every cluster standing (a
    backup/restore cluster is created, as its failover would), named from the drill id, each
    pool at the drill's test size, on demand (a drill cannot consume the DR site's capacity
    reservations: they are targeted at its own pools)."""
    out = []
    for c in site.clusters:
        pools = tuple(
            replace(
                p,
                pattern=MODE,
                nodes=drill.nodes.get(p.name, 1),
                standby_nodes=0,
                reserved=False,
                warm_fraction=None,
            )
            for p in c.pools
        )
        out.append(
            ClusterConfig(
                name=c.name,
                eks_name=cluster_name(drill.id, c.name, site.cloud),
                kubernetes_version=c.kubernetes_version,
                pools=pools,
                standby_control_plane=True,
            )
        )
    return tuple(out)


def replica_buckets(site: SiteConfig) -> tuple[BucketConfig, ...]:
    """What a drill reads: every data bucket of the DR site (replicas, and the dual-region
    buckets a GCP DR site owns). Read, never declared."""
    return tuple(b for b in site.buckets if b.role in ("replica", "dual-region"))


# --- what a drill of one site is ------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One timed step of a drill, with the design's expectation for it."""

    key: str  # infrastructure | checkpoint | capacity | data-age
    title: str
    target_s: float | None
    basis: str  # where the target comes from
    runbook_step: int | None = None  # the failover runbook's step this stands for
    runs: bool = True  # False: listed for completeness, not run (e.g. no checkpoints)


@dataclass(frozen=True)
class DrillPool:
    cluster: str  # the plan's cluster name
    cluster_name: str  # the drill's physical cluster name
    pool: str  # the DR pool's name (node group / node pool)
    agent: str  # the AKS node pool name (Azure); the pool name elsewhere
    instance_type: str
    gpus_per_node: int
    nodes: int  # the drill's test size
    full_nodes: int  # the DR pool's full (failover) size
    pattern: str  # the DR pool's pattern in the plan


@dataclass(frozen=True)
class DataTarget:
    data_class: str
    bucket: BucketConfig
    mechanism: str
    rpo_s: float | None
    estimated_rpo_s: float | None
    # Checkpoints and datasets change continuously, so their newest object's age is the loss a
    # failure now would cause. Weights are published on demand: their age is not loss.
    judged: bool


@dataclass(frozen=True)
class WorkloadModel:
    """A DR pool's RTO stages in the plan, some of which a drill measures."""

    name: str  # cluster-<name> or svc-<name>, as the plan's verdict table names it
    pool: str
    pattern: str
    rto_s: float | None
    stages: dict[str, float]


@dataclass(frozen=True)
class CostLine:
    item: str
    quantity: float  # units running at once
    unit: str
    unit_usd: float  # per unit-hour
    source: str

    @property
    def hourly_usd(self) -> float:
        return self.quantity * self.unit_usd


@dataclass(frozen=True)
class DrillCost:
    lines: tuple[CostLine, ...]
    hours: float  # the TTL
    unpriced: tuple[str, ...] = ()

    @property
    def hourly_usd(self) -> float:
        return sum(x.hourly_usd for x in self.lines)

    @property
    def ttl_usd(self) -> float:
        """The most a drill can cost: everything running until its TTL, at list price."""
        return self.hourly_usd * self.hours

    def for_seconds(self, seconds: float) -> float:
        return self.hourly_usd * seconds / 3600


@dataclass(frozen=True)
class DrillSetup:
    """Everything one drill of one DR site needs, computed from the design."""

    plan: str
    site: SiteConfig  # the DR site's config, as generated
    primary: str
    stack: str
    drill: DrillConfig  # phase infrastructure
    stages: tuple[Stage, ...]
    not_run: tuple[Stage, ...]  # runbook failover steps a drill cannot run, with targets
    pools: tuple[DrillPool, ...]
    data: tuple[DataTarget, ...]
    workloads: tuple[WorkloadModel, ...]
    cost: DrillCost
    verify_b: float
    base_config: dict[str, Any] = field(default_factory=dict)  # the DR stack's own config

    @property
    def id(self) -> str:
        return self.drill.id

    def phase(self, phase: str) -> DrillConfig:
        return replace(self.drill, phase=phase)

    def config(self, phase: str = "infrastructure") -> dict[str, Any]:
        """The drill stack's config: the DR site's generated config, in drill mode."""
        return {
            **self.base_config,
            f"{CONFIG_NAMESPACE}:mode": MODE,
            f"{CONFIG_NAMESPACE}:drill": self.phase(phase).to_dict(),
        }

    def stack_tags(self) -> dict[str, str]:
        return ttl_tags(self.drill)

    def stage(self, key: str) -> Stage:
        return next(s for s in self.stages if s.key == key)


def build_drill(
    design: Design,
    site_name: str,
    now: datetime,
    ttl_s: float | None = None,
    operator: str | None = None,
) -> DrillSetup:
    """The drill of DR site `site_name`, starting at `now`. DrillError for a site that is not a
    DR site of the plan."""
    plan = design.plan
    site = plan.sites.get(site_name)
    if site is None:
        raise DrillError(
            f'--site "{site_name}" is not a site of plan {plan.name}; use one of '
            + ", ".join(s.name for s in plan.sites.values() if s.role == "dr")
        )
    if site.role != "dr" or site.protects is None:
        raise DrillError(
            f'--site "{site_name}" is a primary site; a drill rehearses a failover to a DR site: '
            "use one of " + ", ".join(s.name for s in plan.sites.values() if s.role == "dr")
        )
    spec = plan.drill
    ttl = spec.ttl_s if ttl_s is None else ttl_s
    cfg = build_site_configs(design)[site.name]
    name = stack_name(site.name, now)
    nodes = {p.name: spec.pool_nodes(p.name) for c in cfg.clusters for p in c.pools}
    drill = DrillConfig(
        stack=name,
        expires_at=iso(now + timedelta(seconds=ttl)),
        ttl_s=int(ttl),
        phase=PHASES[0],
        nodes=nodes,
        cidr=spec.cidr,
        operator=operator,
    )
    pools = tuple(
        DrillPool(
            cluster=c.name,
            cluster_name=dc.eks_name,
            pool=p.name,
            agent=agent_pool_name(p.name) if cfg.cloud == "azure" else p.name,
            instance_type=p.instance_type,
            gpus_per_node=p.gpus_per_node,
            nodes=dp.nodes,
            full_nodes=p.nodes,
            pattern=p.pattern,
        )
        for c, dc in zip(cfg.clusters, drill_clusters(cfg, drill), strict=True)
        for p, dp in zip(c.pools, dc.pools, strict=True)
    )
    stages, not_run = _stages(design, plan, site)
    return DrillSetup(
        plan=plan.name,
        site=cfg,
        primary=site.protects,
        stack=name,
        drill=drill,
        stages=stages,
        not_run=not_run,
        pools=pools,
        data=_data_targets(design, cfg),
        workloads=_workloads(design, site),
        cost=drill_cost(cfg.cloud, pools, len(cfg.clusters), ttl),
        verify_b=spec.verify_b,
        base_config=stack_config_values(design, site),
    )


def _stages(design: Design, plan: Plan, site: Site) -> tuple[tuple[Stage, ...], tuple[Stage, ...]]:
    runbook = build_runbook(design, site.protects or "", site.name)
    numbers = {s.key: s.number for s in runbook.steps}
    r = plan.recovery
    ckpt = next(
        (f for f in design.flows if f.dr == site.name and f.data_class == "checkpoints"), None
    )
    stages = [
        Stage(
            "infrastructure",
            "Drill environment up: isolated network, control planes, GPU pools at 0, reader",
            r.infra_create_s,
            f"recovery.infra_create ({fmt_duration(r.infra_create_s)}): network and control "
            "plane created, as a backup/restore failover creates them; the other patterns have "
            "them standing",
        ),
    ]
    if ckpt is not None and ckpt.estimated_rto_s is not None:
        target = max(0.0, ckpt.estimated_rto_s - r.detection_s)
        stages.append(
            Stage(
                "checkpoint",
                "Latest checkpoint located in the replica and checksum-verified",
                target,
                f"the runbook's checkpoint step: the plan's checkpoints RTO "
                f"({fmt_duration(ckpt.estimated_rto_s)}) less detection "
                f"({fmt_duration(r.detection_s)})",
                runbook_step=numbers.get("data:checkpoints"),
            )
        )
    else:
        stages.append(
            Stage(
                "checkpoint",
                "Latest checkpoint located in the replica and checksum-verified",
                None,
                "the plan replicates no checkpoints to this site",
                runs=False,
            )
        )
    capacity = r.gpu_node_boot_s + r.gpu_capacity_wait_s
    has_pools = any(p.dr == site.name for p in design.pools)
    stages.append(
        Stage(
            "capacity",
            "GPU capacity ready: every pool at its test size, nodes running",
            capacity if has_pools else None,
            f"GPU nodes from zero, on demand: recovery.gpu_node_boot "
            f"({fmt_duration(r.gpu_node_boot_s)}) + recovery.gpu_capacity_wait "
            f"({fmt_duration(r.gpu_capacity_wait_s)})",
            runbook_step=numbers.get("capacity"),
            runs=has_pools,
        )
    )
    stages.append(
        Stage(
            "data-age",
            "Data age at the DR site (achieved RPO), per replicated class",
            None,
            "each class against its RPO target; see the data age table",
        )
    )
    not_run = tuple(
        Stage(
            s.key,
            s.title,
            s.expected_s,
            "not run by a drill: it needs your job manifest, health URL or DNS change",
            runbook_step=s.number,
            runs=False,
        )
        for s in runbook.phase("failover")
        if s.key.split(":")[0] in ("training", "service", "traffic")
    )
    return tuple(stages), not_run


def _data_targets(design: Design, cfg: SiteConfig) -> tuple[DataTarget, ...]:
    by_class = {b.data_class: b for b in replica_buckets(cfg)}
    out = []
    for f in design.flows:
        if f.dr != cfg.site or f.data_class not in by_class:
            continue
        out.append(
            DataTarget(
                data_class=f.data_class,
                bucket=by_class[f.data_class],
                mechanism=f.mechanism,
                rpo_s=f.rpo_s,
                estimated_rpo_s=f.estimate.estimated_s,
                judged=f.data_class in ("checkpoints", "datasets") and f.rpo_s is not None,
            )
        )
    order = ("checkpoints", "datasets", "weights")
    return tuple(sorted(out, key=lambda t: order.index(t.data_class)))


def _workloads(design: Design, site: Site) -> tuple[WorkloadModel, ...]:
    return tuple(
        WorkloadModel(
            name=p.workload_name,
            pool=p.name,
            pattern=p.pattern,
            rto_s=p.rto_s,
            stages=dict(p.chosen.stages),
        )
        for p in design.pools
        if p.dr == site.name
    )


def drill_cost(cloud: str, pools: Iterable[DrillPool], clusters: int, ttl_s: float) -> DrillCost:
    """Hourly list prices of what a drill runs (`gpudr/data/prices.yaml`), for up to its TTL."""
    lines: list[CostLine] = []
    unpriced: list[str] = []
    for p in pools:
        price = cost.gpu_hour(cloud, p.instance_type)
        lines.append(
            CostLine(
                f"{p.pool}: {p.instance_type} ({p.gpus_per_node} GPUs)",
                p.nodes,
                "node",
                price.usd,
                price.citation,
            )
        )
    for item in ("control_plane", "nat"):
        key = SITE_PRICES[cloud].get(item)
        count = clusters if item == "control_plane" else 1
        if key is None or not count:
            continue
        try:
            price = reference.price(cloud, *key)
        except reference.ReferenceError:
            unpriced.append(f"{cloud}.{'.'.join(key)}")
            continue
        lines.append(
            CostLine(_HOURLY_TITLES[cloud][item], count, "each", price.usd, price.citation)
        )
    if cloud == "azure" and clusters:
        size, count = AKS_SYSTEM_VM_SIZE, AKS_SYSTEM_NODE_COUNT
        try:
            price = cost.gpu_hour(cloud, size)
            lines.append(
                CostLine("AKS system pool", count * clusters, size, price.usd, price.citation)
            )
        except reference.ReferenceError:
            unpriced.append(f"azure.instance_hour.{size} (AKS system pool, {count} per cluster)")
    return DrillCost(tuple(lines), ttl_s / 3600, tuple(unpriced))


# --- the report -----------------------------------------------------------------------------------


@dataclass
class StageResult:
    key: str
    title: str
    target_s: float | None
    basis: str
    runbook_step: int | None = None
    # not-run | running | passed | failed | interrupted | skipped (the plan gives it nothing)
    status: str = "not-run"
    started_at: str | None = None
    duration_s: float | None = None
    detail: str = ""
    measurements: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """`met`, `missed` or `-` (nothing to judge)."""
        if self.status == "failed":
            return "missed"
        if self.status != "passed" or self.target_s is None or self.duration_s is None:
            return "-"
        return "met" if self.duration_s <= self.target_s else "missed"


@dataclass
class DataAge:
    data_class: str
    bucket: str
    rpo_s: float | None
    estimated_rpo_s: float | None
    judged: bool
    newest_key: str | None = None
    newest_at: str | None = None
    age_s: float | None = None
    objects: int = 0
    detail: str = ""

    @property
    def verdict(self) -> str:
        if not self.judged or self.rpo_s is None:
            return "-"
        if self.age_s is None:
            return "missed"
        return "met" if self.age_s <= self.rpo_s else "missed"


@dataclass
class WorkloadRto:
    name: str
    pattern: str
    rto_s: float | None
    estimated_s: float  # the plan's estimate
    measured_s: float  # the plan's estimate with the drill's measured stages in it
    measured_stages: list[str]

    @property
    def verdict(self) -> str:
        if self.rto_s is None:
            return "-"
        return "met" if self.measured_s <= self.rto_s else "missed"


@dataclass
class Cleanup:
    destroyed: bool = False
    removed: bool = False
    duration_s: float | None = None
    detail: str = "not started"


@dataclass
class DrillReport:
    plan: str
    site: str
    cloud: str
    region: str
    stack: str
    drill_id: str
    started_at: str
    expires_at: str
    ttl_s: int
    stages: list[StageResult]
    not_run: list[StageResult]
    data_age: list[DataAge]
    cost_ttl_usd: float
    cost_lines: list[dict[str, Any]]
    unpriced: list[str]
    finished_at: str | None = None
    outcome: str = "running"  # passed | failed | error | interrupted
    workloads: list[WorkloadRto] = field(default_factory=list)
    cost_measured_usd: float | None = None
    cleanup: Cleanup = field(default_factory=Cleanup)
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)

    def stage(self, key: str) -> StageResult:
        return next(s for s in self.stages if s.key == key)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for s, raw in zip(self.stages, out["stages"], strict=True):
            raw["verdict"] = s.verdict
        for d, raw in zip(self.data_age, out["data_age"], strict=True):
            raw["verdict"] = d.verdict
        for w, raw in zip(self.workloads, out["workloads"], strict=True):
            raw["verdict"] = w.verdict
        finite: dict[str, Any] = _finite(out)
        return finite


def new_report(setup: DrillSetup, now: datetime) -> DrillReport:
    def result(s: Stage) -> StageResult:
        return StageResult(
            s.key,
            s.title,
            s.target_s,
            s.basis,
            s.runbook_step,
            status="not-run" if s.runs else "skipped",
            detail="" if s.runs else s.basis,
        )

    return DrillReport(
        plan=setup.plan,
        site=setup.site.site,
        cloud=setup.site.cloud,
        region=setup.site.region,
        stack=setup.stack,
        drill_id=setup.id,
        started_at=iso(now),
        expires_at=setup.drill.expires_at,
        ttl_s=setup.drill.ttl_s,
        stages=[result(s) for s in setup.stages],
        not_run=[result(s) for s in setup.not_run],
        data_age=[
            DataAge(
                data_class=t.data_class,
                bucket=t.bucket.name,
                rpo_s=t.rpo_s,
                estimated_rpo_s=t.estimated_rpo_s,
                judged=t.judged,
            )
            for t in setup.data
        ],
        cost_ttl_usd=setup.cost.ttl_usd,
        cost_lines=[
            {**asdict(x), "hourly_usd": x.hourly_usd, "ttl_usd": x.hourly_usd * setup.cost.hours}
            for x in setup.cost.lines
        ],
        unpriced=list(setup.cost.unpriced),
    )


def workload_rtos(setup: DrillSetup, report: DrillReport) -> list[WorkloadRto]:
    """Each DR pool's RTO with the stages a drill measures put in place of the plan's: the
    control plane's creation (backup/restore only: the other patterns have it standing) and GPU
    capacity from zero (pilot light and backup/restore: warm standby and active-active scale
    from a standing floor, which a drill does not rehearse). The rest stays the plan's."""
    infra = report.stage("infrastructure")
    capacity = report.stage("capacity")
    out = []
    for w in setup.workloads:
        stages = dict(w.stages)
        measured: list[str] = []
        if w.pattern == "backup-restore" and infra.status == "passed" and infra.duration_s:
            stages["infrastructure"] = infra.duration_s
            measured.append("infrastructure")
        if (
            w.pattern in ("pilot-light", "backup-restore")
            and capacity.status == "passed"
            and capacity.duration_s is not None
        ):
            stages["capacity"] = capacity.duration_s
            measured.append("capacity")
        out.append(
            WorkloadRto(
                name=w.name,
                pattern=w.pattern,
                rto_s=w.rto_s,
                estimated_s=float(sum(w.stages.values())),
                measured_s=float(sum(stages.values())),
                measured_stages=measured,
            )
        )
    return out


def outcome(report: DrillReport) -> str:
    """`error` (the environment or its cleanup failed), `interrupted`, `failed` (a stage failed
    or a target was missed) or `passed`."""
    if not (report.cleanup.destroyed and report.cleanup.removed):
        return "error"
    if report.stage("infrastructure").status == "failed":
        return "error"
    if report.interrupted or any(s.status == "interrupted" for s in report.stages):
        return "interrupted"
    if any(s.status in ("not-run", "running") for s in report.stages):
        return "error"  # the drill ended before a stage it should have run
    missed = (
        any(s.status == "failed" or s.verdict == "missed" for s in report.stages)
        or any(d.verdict == "missed" for d in report.data_age)
        or any(w.verdict == "missed" for w in report.workloads)
    )
    return "failed" if missed else "passed"


def to_json(report: DrillReport) -> str:
    return json.dumps(report.to_dict(), indent=2, sort_keys=False) + "\n"


def to_markdown(report: DrillReport) -> str:
    env = environment(trim=True)
    env.filters["usd"] = usd
    env.filters["rate"] = rate
    text = env.get_template(TEMPLATE).render(r=report, size=fmt_size)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def rate(value: float) -> str:
    """An hourly unit price: cents are not enough for a $0.045 NAT gateway-hour."""
    if value >= 1:
        return f"${value:,.2f}"
    text = f"{value:.3f}"
    return f"${text[:-1] if text.endswith('0') else text}"


def _finite(value: Any) -> Any:
    """JSON-friendly: infinities to None."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


# --- expiry, for cleanup ------------------------------------------------------------------------


def max_ttl_s() -> float:
    return drill_default("max_ttl")


def expiry(name: str, tags: Mapping[str, str]) -> tuple[datetime, str]:
    """When drill stack `name` expires, and how that is known: its `gpudr:expires-at` stack
    tag, else its name's creation time plus the longest TTL a drill may have (so that a drill
    is never removed before its own TTL could have run out). DrillNameError for a non-drill."""
    _, created = check_stack_name(name)
    tagged = tags.get(TAG_EXPIRES)
    if tagged:
        try:
            return parse_ts(tagged), f"stack tag {TAG_EXPIRES}"
        except ValueError:
            pass
    limit = max_ttl_s()
    return (
        created + timedelta(seconds=limit),
        f"no {TAG_EXPIRES} tag: created {iso(created)} + the longest TTL ({fmt_duration(limit)})",
    )
