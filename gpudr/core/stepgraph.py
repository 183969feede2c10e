"""The recovery of one primary -> DR site pair as a graph of steps, computed from the design
alone: which steps there are, their keys, phases, order, dependencies, numbers, and how long
each is expected to take, from the design's RTO stages.

The runbook (`gpudr.docs.runbook`) words each step and adds its commands; a drill
(`gpudr.build.drill`) times some of the failover steps against the same expectations and
names the others by their numbers. Neither decides which steps exist or in which order.

Order follows the plan's dependencies: the disaster is declared; the data is verified at the DR
site while its GPU capacity scales; training restarts from the verified checkpoint once both are
done; services are checked against the verified weights before traffic moves. Failback copies
back what the DR site wrote, brings the primary up, moves work and traffic back, and only then
shrinks the DR site to its standby size and restarts replication.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field

from gpudr.core.design import DataFlow, Design, Pool
from gpudr.core.enums import DATA_CLASSES, DUAL_REGION, PULLED, Pattern, PoolKind
from gpudr.core.units import fmt_duration

PHASES = ("prepare", "failover", "failback")


@dataclass(frozen=True)
class StepNode:
    number: int
    key: str  # stable id, e.g. "capacity", "data:checkpoints", "training:train"
    kind: str  # what the step does, e.g. "data", "training", "fb-copy": how the runbook words it
    phase: str  # prepare | failover | failback
    _: KW_ONLY
    subject: str | None = None  # the data class or the pool the step is about
    after: tuple[int, ...] = ()  # steps that must be done first
    parallel_with: tuple[int, ...] = ()  # steps that may run at the same time
    expected_s: float | None = None  # None: the RTO model does not time this step
    basis: str = ""  # where expected_s comes from
    # A drill (below the runbook's templates) lists the failover steps it cannot run under
    # their titles: those steps' titles are set here. None: the runbook's template words it.
    title: str | None = None


@dataclass(frozen=True)
class StepGraph:
    primary: str
    dr: str
    steps: tuple[StepNode, ...]
    # The slowest workload of the pair (the verdict table's name) and its estimated RTO.
    slowest: str | None = None
    recovery_s: float | None = None
    # That workload's RTO stages as steps, (step number, seconds): they sum to recovery_s.
    critical_path: tuple[tuple[int, float], ...] = field(default=())

    def find(self, key: str) -> StepNode | None:
        return next((s for s in self.steps if s.key == key), None)

    def step(self, key: str) -> StepNode:
        found = self.find(key)
        if found is None:
            raise KeyError(f"no runbook step {key} for {self.primary} -> {self.dr}")
        return found

    def phase(self, name: str) -> tuple[StepNode, ...]:
        return tuple(s for s in self.steps if s.phase == name)

    def of_kind(self, kind: str) -> tuple[StepNode, ...]:
        return tuple(s for s in self.steps if s.kind == kind)


# --- what a pair holds ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PairFacts:
    """The design's flows, pools and workloads of one primary -> DR pair, in runbook order."""

    design: Design
    primary: str
    dr: str
    flows: tuple[DataFlow, ...]
    pools: tuple[Pool, ...]

    @property
    def name(self) -> str:
        """The pair as the verdict table names it (`Workload.pair`)."""
        return f"{self.primary}->{self.dr}"

    @property
    def detection_s(self) -> float:
        return self.design.plan.recovery.detection_s

    def flow(self, data_class: str) -> DataFlow | None:
        return next((f for f in self.flows if f.data_class == data_class), None)

    def of_kind(self, kind: str) -> tuple[Pool, ...]:
        return tuple(p for p in self.pools if p.kind == kind)

    @property
    def standing_clusters(self) -> tuple[str, ...]:
        """DR clusters whose control plane stands before a failover (`Design.standing_clusters`,
        the rule `ClusterConfig.standby_control_plane` is built by too)."""
        return self.design.standing_clusters(self.dr)

    @property
    def copies_back(self) -> tuple[DataFlow, ...]:
        """Flows whose DR copy the DR site writes to during a failover, and which live in two
        places (a dual-region bucket is one bucket in both regions: nothing to copy)."""
        written = set()
        if self.of_kind(PoolKind.TRAINING):
            written.add("checkpoints")
        if self.of_kind(PoolKind.SERVICE) or self.flow("weights"):
            written.add("weights")
        return tuple(
            f for f in self.flows if f.data_class in written and f.mechanism not in DUAL_REGION
        )

    def workloads(self) -> tuple[tuple[str, float | None], ...]:
        """(name, estimated RTO) of each verdict row of the pair."""
        return tuple(
            (w.name, w.estimated_rto_s) for w in self.design.workloads if w.pair == self.name
        )


def pair_facts(design: Design, primary: str, dr: str) -> PairFacts:
    return PairFacts(
        design=design,
        primary=primary,
        dr=dr,
        flows=tuple(
            sorted(
                (f for f in design.flows if f.primary == primary and f.dr == dr),
                key=lambda f: [str(c) for c in DATA_CLASSES].index(f.data_class),
            )
        ),
        pools=tuple(p for p in design.pools if p.primary == primary and p.dr == dr),
    )


# --- building -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Draft:
    key: str
    kind: str
    phase: str
    _: KW_ONLY
    subject: str | None = None
    after: tuple[str, ...] = ()  # keys; a key of a step the pair has not is left out
    parallel_with: tuple[str, ...] = ()
    expected_s: float | None = None
    basis: str = ""
    title: str | None = None


def _number(drafts: Sequence[_Draft]) -> tuple[StepNode, ...]:
    ordered = sorted(drafts, key=lambda d: PHASES.index(d.phase))  # stable
    numbers = {d.key: i + 1 for i, d in enumerate(ordered)}
    if len(numbers) != len(ordered):
        raise ValueError("duplicate runbook step")

    def resolve(keys: Iterable[str]) -> tuple[int, ...]:
        return tuple(sorted({numbers[k] for k in keys if k in numbers}))

    out = []
    for d in ordered:
        n = numbers[d.key]
        after = resolve(d.after)
        if any(a >= n for a in after):
            raise ValueError(f"runbook step {d.key} depends on a later step")
        out.append(
            StepNode(
                number=n,
                key=d.key,
                kind=d.kind,
                phase=d.phase,
                subject=d.subject,
                after=after,
                parallel_with=tuple(p for p in resolve(d.parallel_with) if p != n),
                expected_s=d.expected_s,
                basis=d.basis,
                title=d.title,
            )
        )
    return tuple(out)


def _prepare(pair: PairFacts) -> list[_Draft]:
    out = [
        _Draft("variables", "variables", "prepare"),
        _Draft("cloud-login", "cloud-login", "prepare"),
        _Draft("pulumi-login", "pulumi-login", "prepare"),
    ]
    if pair.standing_clusters:
        out.append(_Draft("kubectl", "kubectl", "prepare"))
    return out


def _declare(pair: PairFacts) -> list[_Draft]:
    out = [
        _Draft(
            "declare",
            "declare",
            "failover",
            expected_s=pair.detection_s,
            basis="detection stage: alarm to decision, recovery.detection",
            parallel_with=("variables", "cloud-login", "pulumi-login", "kubectl"),
        )
    ]
    if any(f.mechanism in PULLED for f in pair.flows):
        out.append(_Draft("pause-pulls", "pause-pulls", "failover", after=("declare",)))
    return out


def _data(pair: PairFacts) -> list[_Draft]:
    out = []
    for f in pair.flows:
        expected = None
        if f.estimated_rto_s is not None:
            expected = max(0.0, f.estimated_rto_s - pair.detection_s)
            basis = (
                f"the plan's {f.data_class} RTO ({fmt_duration(f.estimated_rto_s)}) less "
                "detection: one node reads the working set"
            )
        else:
            basis = f"no RTO for {f.data_class} in the plan; it does not hold up recovery"
        out.append(
            _Draft(
                f"data:{f.data_class}",
                "data",
                "failover",
                subject=f.data_class,
                after=("declare", *(["pause-pulls"] if f.mechanism in PULLED else [])),
                parallel_with=("capacity", *(f"data:{o.data_class}" for o in pair.flows)),
                expected_s=expected,
                basis=basis,
            )
        )
    return out


def _capacity(pair: PairFacts) -> list[_Draft]:
    if not pair.pools:
        return []
    stages = [(p, p.chosen.stages) for p in pair.pools]
    return [
        _Draft(
            "capacity",
            "capacity",
            "failover",
            after=("declare", "pulumi-login"),
            parallel_with=tuple(f"data:{f.data_class}" for f in pair.flows),
            expected_s=max(s["infrastructure"] + s["capacity"] for _, s in stages),
            basis="; ".join(
                f"{p.name} ({p.pattern}): infrastructure {fmt_duration(s['infrastructure'])} + "
                f"capacity {fmt_duration(s['capacity'])}"
                for p, s in stages
            ),
        )
    ]


def _workloads(pair: PairFacts) -> list[_Draft]:
    ckpt, weights = pair.flow("checkpoints"), pair.flow("weights")
    data = tuple(f"data:{c}" for c in ("checkpoints", "datasets") if pair.flow(c))
    out = []
    for p in pair.of_kind(PoolKind.TRAINING):
        s = p.chosen.stages
        out.append(
            _Draft(
                f"training:{p.name}",
                "training",
                "failover",
                subject=p.name,
                after=("capacity", *data),
                expected_s=s["staging"] + s["restart"],
                basis=f"staging {fmt_duration(s['staging'])} (the checkpoint read by all "
                f"{p.nodes} nodes) + restart {fmt_duration(s['restart'])}",
                title=f"Restart training {p.name}"
                + (" from the verified checkpoint" if ckpt else ""),
            )
        )
    for p in pair.of_kind(PoolKind.SERVICE):
        s = p.chosen.stages
        serving = p.pattern == Pattern.ACTIVE_ACTIVE
        out += [
            _Draft(
                f"service:{p.name}",
                "service",
                "failover",
                subject=p.name,
                after=("capacity", *(["data:weights"] if weights else [])),
                expected_s=s["staging"] + s["restart"],
                basis=f"staging {fmt_duration(s['staging'])} + restart "
                f"{fmt_duration(s['restart'])}"
                + (
                    "; active-active: already loaded and serving"
                    if serving
                    else "; one node reads the weights"
                ),
                title=f"{p.name}: {'check it serves' if serving else 'start it'}"
                + (f"{' with' if not serving else ''} the verified weights" if weights else ""),
            ),
            _Draft(
                f"traffic:{p.name}",
                "traffic",
                "failover",
                subject=p.name,
                after=(f"service:{p.name}",),
                expected_s=s["traffic_shift"],
                basis="traffic_shift stage, recovery.traffic_shift",
                title=f"{p.name}: move client traffic to {pair.dr}",
            ),
        ]
    return out


def _failback(pair: PairFacts) -> list[_Draft]:
    trainings = [p.name for p in pair.of_kind(PoolKind.TRAINING)]
    services = [p.name for p in pair.of_kind(PoolKind.SERVICE)]
    healthy = "fb:primary-healthy"
    out = [
        _Draft(
            healthy,
            "fb-primary-healthy",
            "failback",
            after=tuple(
                f"{'training' if p.kind == PoolKind.TRAINING else 'traffic'}:{p.name}"
                for p in pair.pools
            )
            or tuple(f"data:{f.data_class}" for f in pair.flows),
        )
    ]
    stop: tuple[str, ...] = ()
    if trainings:
        stop = ("fb:stop-dr-training",)
        out.append(_Draft(stop[0], "fb-stop-dr-training", "failback", after=(healthy,)))
    copies = tuple(f"fb:copy:{f.data_class}" for f in pair.copies_back)
    for f, key in zip(pair.copies_back, copies, strict=True):
        after = (healthy, *(stop if f.data_class == "checkpoints" else ()))
        out.append(
            _Draft(
                key, "fb-copy", "failback", subject=f.data_class, after=after, parallel_with=copies
            )
        )
    up = "fb:primary-up"
    out.append(_Draft(up, "fb-primary-up", "failback", after=(healthy, *copies)))
    resumed = tuple(f"fb:training:{name}" for name in trainings)
    moved = tuple(f"fb:traffic:{name}" for name in services)
    out += [
        _Draft(k, "fb-training", "failback", subject=n, after=(up, *stop))
        for k, n in zip(resumed, trainings, strict=True)
    ]
    out += [
        _Draft(k, "fb-traffic", "failback", subject=n, after=(up,))
        for k, n in zip(moved, services, strict=True)
    ]
    standby: tuple[str, ...] = ()
    if pair.pools:
        standby = ("fb:standby",)
        out.append(_Draft(standby[0], "fb-standby", "failback", after=(up, *resumed, *moved)))
    if pair.flows:
        after = (up, *resumed, *moved, *standby)
        out.append(_Draft("fb:replication", "fb-replication", "failback", after=after))
    return out


def _critical_path(pair: PairFacts, workload: str | None) -> list[tuple[str, float]]:
    """The steps the slowest workload's estimate is made of, with that workload's own stages."""
    for p in pair.pools:
        if p.workload_name != workload:
            continue
        s = p.chosen.stages
        out = [
            ("declare", s["detection"]),
            ("capacity", s["infrastructure"] + s["capacity"]),
        ]
        if p.kind == PoolKind.TRAINING:
            return [*out, (f"training:{p.name}", s["staging"] + s["restart"])]
        return [
            *out,
            (f"service:{p.name}", s["staging"] + s["restart"]),
            (f"traffic:{p.name}", s["traffic_shift"]),
        ]
    for f in pair.flows:
        if f.data_class == workload and f.estimated_rto_s is not None:
            return [
                ("declare", pair.detection_s),
                (f"data:{f.data_class}", f.estimated_rto_s - pair.detection_s),
            ]
    return []


def step_graph(design: Design, primary: str, dr: str) -> StepGraph:
    """The steps of the runbook for one primary -> DR pair of the design's plan."""
    plan = design.plan
    site = plan.sites.get(dr)
    if site is None or site.role != "dr" or site.protects != primary:
        raise ValueError(f"{dr} is not a DR site of {primary} in plan {plan.name}")
    pair = pair_facts(design, primary, dr)
    steps = _number(
        [
            *_prepare(pair),
            *_declare(pair),
            *_data(pair),
            *_capacity(pair),
            *_workloads(pair),
            *_failback(pair),
        ]
    )
    timed = [(est, name) for name, est in pair.workloads() if est is not None]
    recovery_s, slowest = max(timed) if timed else (None, None)
    numbers = {s.key: s.number for s in steps}
    path = tuple(
        (numbers[key], seconds) for key, seconds in _critical_path(pair, slowest) if key in numbers
    )
    return StepGraph(primary, dr, steps, slowest, recovery_s, path)
