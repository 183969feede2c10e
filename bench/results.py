"""What a bench run measured: the records bench/run.py makes and bench/doc.py reads.

Their own module so that the driver and the document both import them, and neither the other's
internals (the driver imports the document, to render what it measured).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Config:
    systems: tuple[int, ...]  # portfolio sizes, in protected systems (plans)
    target_resources: int  # the calibrated portfolio: the first plans reaching this many
    repeats: int  # fresh-process repeats for portfolios up to the calibrated one
    program_pairs: int  # gpudr/flat pairs of passes for the overhead comparison
    import_plans: tuple[int, ...]  # single plans whose imports are listed (by index)


@dataclass
class Measured:
    """A worker's result plus what the driver saw of the process: wall from start to exit, and
    CPU of the worker and every child it waited for (wait4)."""

    result: dict[str, Any]
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    stderr: str = ""
    spawned_at: float = 0.0  # time.time() when started, and when it had exited
    exited_at: float = 0.0

    @property
    def interpreter_start_s(self) -> float:
        """From spawn to the worker module running: interpreter start-up."""
        return float(self.result["started_at"]) - self.spawned_at

    @property
    def teardown_s(self) -> float:
        """From the worker's last statement to the process's exit: interpreter finalization
        (including its final garbage collection)."""
        return self.exited_at - float(self.result["finished_at"])


SIZE, CALIBRATED, AWS_ONLY = "size", "calibrated", "aws only"


@dataclass
class Row:
    """bench/worker.py: gpudr plan's stages for a portfolio in one process, each timed."""

    role: str  # SIZE (one of Config.systems), CALIBRATED or AWS_ONLY: which portfolio
    systems: int
    measured: Measured
    wall_min: float
    wall_max: float
    repeats: int
    pairs: dict[str, int] = field(default_factory=dict)


@dataclass
class Overhead:
    """gpudr's program and the flat baseline, alternating passes in one process."""

    measured: Measured

    def passes(self, variant: str) -> list[dict[str, float]]:
        found: list[dict[str, float]] = self.measured.result["passes"][variant]
        return found

    def median(self, variant: str) -> float:
        return statistics.median(float(p["wall_s"]) for p in self.passes(variant))

    def median_gc(self, variant: str) -> float:
        return statistics.median(float(p["gc_s"]) for p in self.passes(variant))

    @property
    def ratios(self) -> list[float]:
        return [float(r) for r in self.measured.result["ratios"]]

    @property
    def ratio(self) -> float:
        """The median of the pairwise ratios (gpudr pass / the flat pass next to it)."""
        return statistics.median(self.ratios)


@dataclass
class ImportCost:
    label: str
    pairs: dict[str, int]
    measured: Measured
    seconds: dict[str, float]


@dataclass
class PreloadCost:
    """The zygote's imports for the calibrated portfolio's clouds, in its load order: the
    median of `repeats` fresh-process runs with the cyclic collector on, and as many off."""

    clouds: list[str]
    repeats: int
    on: dict[str, float]  # cumulative CPU s once Pulumi, then each cloud, is imported
    off: dict[str, float]
    collections_on: int  # the collector's runs during the imports
    collections_off: int

    @property
    def on_s(self) -> float:
        return self.on[self.clouds[-1]]

    @property
    def off_s(self) -> float:
        return self.off[self.clouds[-1]]


@dataclass
class CliLoop:
    plans: int
    resources: int
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    per_plan_wall: list[float]
    exit_codes: dict[int, int]


@dataclass
class CliRun:
    """`gpudr plan P1 ... Pn --format json -o FILE [--jobs N]`, the real CLI, in a fresh
    process: the median of `repeats` runs by wall time."""

    jobs: int | None  # None: gpudr's default (the usable cores)
    role: str
    systems: int
    walls: list[float]
    cpu_s: float
    processes: list[tuple[str, float]]  # (gpudr | worker | pack, peak RSS MB)
    exit_code: int
    resources: int
    stacks: int
    per_plan_resources: list[int]
    pairs: dict[str, int] = field(default_factory=dict)
    pss_peak_mb: float | None = None  # from one more, untimed run (TreePeak with pss)

    @property
    def wall_s(self) -> float:
        return sorted(self.walls)[len(self.walls) // 2]

    @property
    def peak_mb(self) -> float:
        return sum(mb for _, mb in self.processes)

    @property
    def label(self) -> str:
        return cli_label(self.jobs)


def cli_label(jobs: int | None) -> str:
    return "gpudr plan" if jobs is None else f"gpudr plan --jobs {jobs}"


@dataclass
class ChangedPlan:
    """Issue 21: the largest portfolio with one plan changed, `gpudr plan` over all of it with
    a copy of a cache warmed from the unchanged portfolio (a fresh copy for each run)."""

    pair: str  # the changed plan's cloud pair, e.g. "aws->aws"
    plan: str  # its file name
    change: str  # e.g. "data.checkpoints.size: 2TB -> 4TB"
    systems: int
    walls: list[float]
    cpus: list[float]
    from_cache: list[int]  # per run: the plans read from the cache (those it did not store)

    @property
    def wall_s(self) -> float:
        return sorted(self.walls)[len(self.walls) // 2]

    @property
    def cpu_s(self) -> float:
        """The CPU of the run with the median wall."""
        return self.cpus[self.walls.index(self.wall_s)]


@dataclass
class DiffRun:
    """One `gpudr diff --base HEAD~1 PLAN` from a temporary repository, spawn to exit."""

    wall_s: float
    exit_code: int
    from_cache: int  # sides whose plan came from the cache (its progress lines say so)
    progress_lines: int  # the `... what` lines it wrote to stderr while it ran


@dataclass
class CacheBench:
    """Issue 21's figures, each with the code before the plan cache (`before`, extracted from
    that commit) and after it (this checkout), from the same bench run."""

    before: str  # the before commit, as the document names it
    cold_before: CliRun  # the calibrated portfolio; before: no cache
    cold_after: CliRun  # the same, each run with a fresh, empty --cache-dir
    changed: list[ChangedPlan]  # one per cloud pair
    changed_before: CliRun  # the before code over the first pair's changed portfolio, once
    changed_uncached: CliRun  # the same portfolio with this code and --no-cache, once
    warm_equals_uncached: bool  # a warm run's JSON report, byte for byte that run's
    diff_plan: str
    diff_change: str
    diff_before: DiffRun
    diff_cold: DiffRun  # a fresh, empty --cache-dir
    diff_warm: DiffRun  # the same diff again, with the cache the cold run filled
    diff_warm_equals_cold: bool  # the two runs' markdown, byte for byte

    @property
    def slowest_pair(self) -> ChangedPlan:
        return max(self.changed, key=lambda c: c.wall_s)


@dataclass
class Results:
    config: Config
    quick: bool
    seed: int
    machine: dict[str, str]
    cli: list[CliRun]  # the real `gpudr plan P1 ... Pn`
    rows: list[Row]  # one process, stage by stage (bench/worker.py)
    overhead: Overhead
    imports: list[ImportCost]
    loop: CliLoop | None  # one process per plan
    pack_start_s: list[float]
    elapsed_s: float = 0.0
    cache: CacheBench | None = None  # issue 21's before/after figures
    preload: PreloadCost | None = None  # the zygote's imports, collector on and off

    def cli_run(self, role: str, jobs: int | None = None) -> CliRun | None:
        for r in self.cli:
            if r.role == role and r.jobs == jobs:
                return r
        return None

    def cli_sizes(self, jobs: int | None = None) -> list[CliRun]:
        return sorted(
            (r for r in self.cli if r.role == SIZE and r.jobs == jobs), key=lambda r: r.systems
        )

    def row(self, role: str) -> Row | None:
        for r in self.rows:
            if r.role == role:
                return r
        return None

    def sizes(self) -> list[Row]:
        return sorted((r for r in self.rows if r.role == SIZE), key=lambda r: r.systems)
