"""DR drills, the pure part: what a drill of one DR site creates, runs, costs and is judged by.

The drill's names and the `gpudr:drill` object the program reads are the contract
(`gpudr.contract.drill`); this module computes, from the design, everything one drill needs.

The drill runs the runbook's failover steps that need no workload of yours, in order, and times
each against the design's own expectation:

1. infrastructure  `pulumi up` with the pools at 0: network, control planes, reader identity
2. checkpoint      the latest checkpoint located in the replica and checksum-verified
3. capacity        the pools scaled to their test size (`pulumi up`) until the nodes run
4. data-age        per replicated class, now minus the newest replica object: achieved RPO

Then it always destroys the stack and removes it (`gpudr.app.drill`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from gpudr.build.stackconfig import build_site_configs, stack_config_values
from gpudr.contract.drill import (
    MODE,
    PHASES,
    DrillConfig,
    check_stack_name,
    drill_clusters,
    iso,
    parse_ts,
    replica_buckets,
    stack_name,
    ttl_tags,
)
from gpudr.contract.naming import agent_pool_name
from gpudr.contract.site import BucketConfig, SiteConfig
from gpudr.contract.stack import DRILL_KEY, MODE_KEY
from gpudr.contract.tags import TAG_EXPIRES
from gpudr.core import cost
from gpudr.core.design import Design
from gpudr.core.enums import DRILL_MAX_TTL_S
from gpudr.core.spec import Plan, Site
from gpudr.core.stepgraph import step_graph
from gpudr.core.units import fmt_duration


class DrillError(ValueError):
    """Bad input for a drill; the message is one line naming what and how to fix it."""


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
class DrillCost:
    """The cost engine's lines for one hour of what a drill runs, and its TTL."""

    lines: tuple[cost.CostLine, ...]
    hours: float  # the TTL
    unpriced: tuple[str, ...] = ()

    @property
    def hourly_usd(self) -> float:
        return sum((x.amount_usd for x in self.lines), 0.0)

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
            MODE_KEY: MODE.value,
            DRILL_KEY: self.phase(phase).to_dict(),
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
        cost=drill_cost(cfg, pools, ttl),
        verify_b=spec.verify_b,
        base_config=stack_config_values(design, site),
    )


def _stages(design: Design, plan: Plan, site: Site) -> tuple[tuple[Stage, ...], tuple[Stage, ...]]:
    # The runbook's steps for this pair, numbered as the runbook numbers them.
    graph = step_graph(design, site.protects or "", site.name)
    r = plan.recovery
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
    ckpt = graph.find("data:checkpoints")
    flow = next(
        (f for f in design.flows if f.dr == site.name and f.data_class == "checkpoints"), None
    )
    if ckpt is not None and ckpt.expected_s is not None and flow is not None:
        stages.append(
            Stage(
                "checkpoint",
                "Latest checkpoint located in the replica and checksum-verified",
                ckpt.expected_s,
                f"the runbook's checkpoint step: the plan's checkpoints RTO "
                f"({fmt_duration(flow.estimated_rto_s)}) less detection "
                f"({fmt_duration(r.detection_s)})",
                runbook_step=ckpt.number,
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
    scale = graph.find("capacity")
    stages.append(
        Stage(
            "capacity",
            "GPU capacity ready: every pool at its test size, nodes running",
            capacity if has_pools else None,
            f"GPU nodes from zero, on demand: recovery.gpu_node_boot "
            f"({fmt_duration(r.gpu_node_boot_s)}) + recovery.gpu_capacity_wait "
            f"({fmt_duration(r.gpu_capacity_wait_s)})",
            runbook_step=scale.number if scale else None,
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
            s.title or s.key,
            s.expected_s,
            "not run by a drill: it needs your job manifest, health URL or DNS change",
            runbook_step=s.number,
            runs=False,
        )
        for s in graph.phase("failover")
        if s.kind in ("training", "service", "traffic")
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


def drill_cost(site: SiteConfig, pools: Iterable[DrillPool], ttl_s: float) -> DrillCost:
    """What a drill runs for an hour, priced by the cost engine, and its TTL: the test pools,
    a control plane per cluster (with its AKS system pool on Azure) and the network's NAT."""
    usages = [
        cost.gpu_usage(
            site.cloud,
            site.site,
            pool=p.pool,
            instance_type=p.instance_type,
            nodes=p.nodes,
            what=f"({p.gpus_per_node} GPUs)",
            dr=True,
            hours=1,
        )
        for p in pools
    ]
    for c in site.clusters:
        usages += cost.cluster_usages(site.cloud, site.site, c.name, dr=True, hours=1)
    usages += cost.nat_usages(site.cloud, site.site, dr=True, hours=1)
    priced = cost.report(usages)
    return DrillCost(priced.lines, ttl_s / 3600, priced.unpriced)


# --- expiry, for cleanup ------------------------------------------------------------------------


def expiry(name: str, tags: Mapping[str, str]) -> tuple[datetime, str]:
    """When drill stack `name` expires, and which source says so. The name's creation time plus
    the longest TTL a drill may have is the latest any drill may live: its `gpudr:expires-at`
    stack tag may only bring that earlier (a tag anyone can edit must not keep a drill up for
    ever), and a tag that is unreadable or before the creation time is not believed.
    DrillNameError for a non-drill."""
    _, created = check_stack_name(name)
    cap = created + timedelta(seconds=DRILL_MAX_TTL_S)
    capped = f"created {iso(created)} + the longest TTL ({fmt_duration(DRILL_MAX_TTL_S)})"
    tagged = tags.get(TAG_EXPIRES)
    if not tagged:
        return cap, f"no {TAG_EXPIRES} tag: {capped}"
    try:
        when = parse_ts(tagged)
    except ValueError:
        return cap, f"{TAG_EXPIRES} tag {tagged!r} unreadable: {capped}"
    if when < created:
        return cap, f"{TAG_EXPIRES} tag {iso(when)} is before the stack's creation: {capped}"
    if when > cap:
        return cap, f"{TAG_EXPIRES} tag {iso(when)} is beyond the longest TTL: {capped}"
    return when, f"stack tag {TAG_EXPIRES}"
