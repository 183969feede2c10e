"""The recovery of one primary -> DR site pair as a graph of steps, computed from the design
alone: which steps there are, their keys, phases, order, dependencies, numbers, and how long
each is expected to take.

The failover steps the RTO model times (declare, the data checks, capacity, each pool's work
and traffic) take their time and their dependencies from the design's failover
(`Design.failover`, `gpudr.core.sizing.failover_steps`), the same steps the plan's estimated
RTO of each pool is the finish of: the runbook's critical path is the plan's RTO (one model).

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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field

from gpudr.core import sizing
from gpudr.core.design import DataFlow, Design, Pool
from gpudr.core.enums import DATA_CLASSES, DUAL_REGION, PULLED, Pattern, PoolKind
from gpudr.core.units import fmt_duration, fmt_gbps, fmt_size

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
    # The timed steps that workload's recovery waits on, first to last, (step number,
    # seconds): the graph's longest path to its last step. They sum to recovery_s.
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

    def timed(self) -> dict[str, sizing.TimedStep]:
        """The failover steps the RTO model times, by key (`Design.failover`)."""
        return {t.key: t for t in self.design.failover(self.primary, self.dr)}

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


def _after(t: sizing.TimedStep, timed: Mapping[str, sizing.TimedStep]) -> tuple[str, ...]:
    """A timed step's dependencies as the runbook lists them: every failover step comes after
    the declaration, so it is named only when nothing else is."""
    present = tuple(k for k in t.after if k in timed)
    rest = tuple(k for k in present if k != "declare")
    return rest or present


def _declare(pair: PairFacts, timed: Mapping[str, sizing.TimedStep]) -> list[_Draft]:
    out = [
        _Draft(
            "declare",
            "declare",
            "failover",
            expected_s=timed["declare"].seconds,
            basis="detection stage: alarm to decision, recovery.detection",
            parallel_with=("variables", "cloud-login", "pulumi-login", "kubectl"),
        )
    ]
    if any(f.mechanism in PULLED for f in pair.flows):
        out.append(_Draft("pause-pulls", "pause-pulls", "failover", after=("declare",)))
    return out


def _checked(pair: PairFacts, f: DataFlow) -> str:
    """What the data step reads whole to hash it, and its size."""
    plan = pair.design.plan
    c, w = plan.checkpoints, plan.weights
    if f.data_class == "checkpoints" and c:
        return f"the newest checkpoint ({fmt_size(c.size_b / c.compression_ratio)} as stored)"
    return f"the weights version ({fmt_size(w.size_b) if w else '-'})"


def _data(pair: PairFacts, timed: Mapping[str, sizing.TimedStep]) -> list[_Draft]:
    out = []
    for f in pair.flows:
        t = timed[f"data:{f.data_class}"]
        if t.seconds is None:
            basis = f"the {f.data_class} are listed, not read"
        else:
            rto = (
                f"; the plan's {f.data_class} RTO ({fmt_duration(f.estimated_rto_s)}) is "
                "detection plus this"
                if f.estimated_rto_s is not None
                else ""
            )
            rate = fmt_gbps(pair.design.plan.recovery.read_gbps_per_node)
            basis = f"one host reads {_checked(pair, f)} to hash it, at {rate} at most{rto}"
        out.append(
            _Draft(
                f"data:{f.data_class}",
                "data",
                "failover",
                subject=f.data_class,
                after=(*_after(t, timed), *(["pause-pulls"] if f.mechanism in PULLED else [])),
                parallel_with=("capacity", *(f"data:{o.data_class}" for o in pair.flows)),
                expected_s=t.seconds,
                basis=basis,
            )
        )
    return out


def _growth(p: Pool) -> str:
    """How long one pool takes to reach full size, and why."""
    o, s = p.chosen, p.chosen.stages
    if not o.scales:
        return f"{p.name} ({p.pattern}): all {p.nodes} nodes already standing"
    missing = p.nodes - p.standing
    found = "reserved" if o.guaranteed else "on demand: only if capacity is found"
    parts = [f"infrastructure {fmt_duration(s['infrastructure'])}"] if s["infrastructure"] else []
    parts.append(f"capacity {fmt_duration(s['capacity'])} ({missing} nodes {found})")
    return f"{p.name} ({p.pattern}, {p.standing} -> {p.nodes} nodes): " + " + ".join(parts)


def _capacity(pair: PairFacts, timed: Mapping[str, sizing.TimedStep]) -> list[_Draft]:
    if not pair.pools:
        return []
    t = timed["capacity"]
    return [
        _Draft(
            "capacity",
            "capacity",
            "failover",
            after=(*_after(t, timed), "pulumi-login"),
            parallel_with=tuple(f"data:{f.data_class}" for f in pair.flows),
            expected_s=t.seconds,
            basis="the slowest pool that adds nodes; " + "; ".join(_growth(p) for p in pair.pools),
        )
    ]


def _training(pair: PairFacts, p: Pool, timed: Mapping[str, sizing.TimedStep]) -> _Draft:
    t = timed[f"training:{p.name}"]
    s = p.chosen.stages
    ckpt = pair.flow("checkpoints")
    return _Draft(
        f"training:{p.name}",
        "training",
        "failover",
        subject=p.name,
        after=_after(t, timed),
        expected_s=t.seconds,
        basis=f"staging {fmt_duration(s['staging'])} (the checkpoint read once between all "
        f"{p.nodes} nodes, at most recovery.storage_read_gbps together) + restart "
        f"{fmt_duration(s['restart'])}",
        title=f"Restart training {p.name}" + (" from the verified checkpoint" if ckpt else ""),
    )


def _service(pair: PairFacts, p: Pool, timed: Mapping[str, sizing.TimedStep]) -> list[_Draft]:
    s = p.chosen.stages
    work, move = timed[f"service:{p.name}"], timed[f"traffic:{p.name}"]
    serving = p.pattern == Pattern.ACTIVE_ACTIVE
    weights = pair.flow("weights")
    load = (
        "; active-active: already loaded and serving"
        if serving
        else f"; each of the {p.nodes} nodes reads the whole weights"
    )
    return [
        _Draft(
            f"service:{p.name}",
            "service",
            "failover",
            subject=p.name,
            after=_after(work, timed),
            expected_s=work.seconds,
            basis=f"staging {fmt_duration(s['staging'])} + restart "
            f"{fmt_duration(s['restart'])}" + load,
            title=f"{p.name}: {'check it serves' if serving else 'start it'}"
            + (f"{' with' if not serving else ''} the verified weights" if weights else ""),
        ),
        _Draft(
            f"traffic:{p.name}",
            "traffic",
            "failover",
            subject=p.name,
            after=_after(move, timed),
            expected_s=move.seconds,
            basis="traffic_shift stage, recovery.traffic_shift",
            title=f"{p.name}: move client traffic to {pair.dr}",
        ),
    ]


def _workloads(pair: PairFacts, timed: Mapping[str, sizing.TimedStep]) -> list[_Draft]:
    out = [_training(pair, p, timed) for p in pair.of_kind(PoolKind.TRAINING)]
    for p in pair.of_kind(PoolKind.SERVICE):
        out += _service(pair, p, timed)
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


def _critical_path(steps: Sequence[StepNode], end: str | None) -> tuple[tuple[int, float], ...]:
    """The timed steps the recovery of `end` (a step key) waits on, first to last: the graph's
    longest path to it, as `sizing.critical_path` finds it."""
    if end is None:
        return ()
    keys = {s.number: s.key for s in steps}
    timed = [sizing.TimedStep(s.key, s.expected_s, tuple(keys[a] for a in s.after)) for s in steps]
    numbers = {s.key: s.number for s in steps}
    return tuple((numbers[k], sec) for k, sec in sizing.critical_path(timed, end))


def _last_step(pair: PairFacts, workload: str | None) -> str | None:
    """The key of the step that ends a verdict row's recovery: a pool's last step, a data
    class's check."""
    for p in pair.pools:
        if p.workload_name == workload:
            return sizing.workload_step(p.kind, p.name)
    return next((f"data:{f.data_class}" for f in pair.flows if f.data_class == workload), None)


def step_graph(design: Design, primary: str, dr: str) -> StepGraph:
    """The steps of the runbook for one primary -> DR pair of the design's plan."""
    plan = design.plan
    site = plan.sites.get(dr)
    if site is None or site.role != "dr" or site.protects != primary:
        raise ValueError(f"{dr} is not a DR site of {primary} in plan {plan.name}")
    pair = pair_facts(design, primary, dr)
    timed = pair.timed()
    steps = _number(
        [
            *_prepare(pair),
            *_declare(pair, timed),
            *_data(pair, timed),
            *_capacity(pair, timed),
            *_workloads(pair, timed),
            *_failback(pair),
        ]
    )
    estimates = [(est, name) for name, est in pair.workloads() if est is not None]
    recovery_s, slowest = max(estimates) if estimates else (None, None)
    path = _critical_path(steps, _last_step(pair, slowest))
    return StepGraph(primary, dr, steps, slowest, recovery_s, path)
