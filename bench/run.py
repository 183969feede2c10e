"""`make bench`: measure how `gpudr plan`'s cost grows with the portfolio, write docs/benchmarks.md.

    python -m bench.run            # the full run (about 12 minutes on 2 cores); rewrites the doc
    python -m bench.run --quick    # a smoke run of the smallest sizes; writes nothing unless -o

Every measurement runs in its own fresh interpreter (bench/worker.py), so peak RSS and import
state are that measurement's own. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

from bench.procs import TreePeak
from bench.results import (
    AWS_ONLY,
    CALIBRATED,
    SIZE,
    CacheBench,
    ChangedPlan,
    CliLoop,
    CliRun,
    Config,
    DiffRun,
    ImportCost,
    Measured,
    Overhead,
    PreloadCost,
    Results,
    Row,
    cli_label,
)
from bench.synth import (
    DEFAULT_SEED,
    SynthPlan,
    change_size,
    pairs_of,
    plans_to_change,
    write_portfolio,
)
from bench.worker import custom_resources
from gpudr.app.cache import CODE, PlanCache
from gpudr.app.env import PROGRESS_ENV, PROGRESS_PREFIX
from gpudr.app.offline.portfolio import load_order
from gpudr.app.prdiff import absolute_policy_config, extract, plan_command, side_env
from gpudr.core.paths import PROJECT_DIR

DOC = PROJECT_DIR / "docs" / "benchmarks.md"
PACKAGES = (
    "pulumi",
    "pulumi-aws",
    "pulumi-gcp",
    "pulumi-azure-native",
    "pulumi-random",
    "pulumi-policy",
    "grpcio",
    "protobuf",
)

FULL = Config(
    systems=(1, 10, 100),
    target_resources=1000,
    repeats=3,
    program_pairs=6,
    import_plans=(0, 1, 2, 3),
)
QUICK = Config(
    systems=(1, 3),
    target_resources=150,
    repeats=1,
    program_pairs=2,
    import_plans=(0,),
)


# The code the issue-21 figures compare with ("before"): main at 23d896c, the last commit before
# the plan cache (3cef3a8, issue 21) landed. `--before REV` compares with another commit.
BEFORE = "23d896c"
# Issue 21's motivation: `gpudr diff` of one example, with the change the e2e tests make
# (tests/e2e/test_diff_git.py), in a temporary repository holding the project.
DIFF_PLAN = "examples/aws-two-region.yaml"
DIFF_EDIT = ("size: 2TB", "size: 6TB")
# What that repository holds: what gpudr needs to run offline, the examples, and the .gitignore
# (it keeps the bytecode out of `git status`, which `gpudr diff` reads for its head label).
DIFF_SOURCES = (
    "gpudr",
    "components",
    "policies",
    "templates",
    "__main__.py",
    "Pulumi.yaml",
    "pyproject.toml",
    ".gitignore",
    "examples",
)
# Commits in the temporary repositories (the bench's and the diff tests'): an identity, and no
# user or system git config.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "gpudr bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "gpudr bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- running workers ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Exited:
    """A process run to its end: what wait4 said of it (and every child it waited for)."""

    code: int
    wall_s: float
    cpu_s: float  # user + system
    maxrss_mb: float
    stderr: str  # "" when it went to a file
    spawned_at: float  # time.time() when started, and when it had exited
    exited_at: float


@dataclass(frozen=True)
class Launch:
    """A command, where it starts and its environment (None: this process's)."""

    argv: list[str]
    cwd: Path = PROJECT_DIR
    env: dict[str, str] | None = None


def _start(launch: Launch, stderr: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        launch.argv, cwd=launch.cwd, env=launch.env, stdout=subprocess.DEVNULL, stderr=stderr
    )


def _spawn(argv: list[str], stderr_path: Path | None = None) -> _Exited:
    err = open(stderr_path, "w") if stderr_path else subprocess.PIPE  # noqa: SIM115
    spawned_at = time.time()
    started = time.perf_counter()
    proc = _start(Launch(argv), err)
    text = ""
    if stderr_path is None:
        assert proc.stderr is not None
        text = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    exited_at = time.time()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if stderr_path is not None:
        err.close()  # type: ignore[union-attr]
    cpu, maxrss_mb = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
    return _Exited(proc.returncode, wall, cpu, maxrss_mb, text, spawned_at, exited_at)


def run_worker(spec: dict[str, Any], work: Path, importtime: bool = False) -> Measured:
    spec_path = work / f"spec-{time.monotonic_ns()}.json"
    out = spec_path.with_suffix(".out.json")
    spec = {**spec, "out": str(out)}
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "bench.worker"]
    err_path = spec_path.with_suffix(".stderr") if importtime else None
    run = _spawn([*argv, str(spec_path)], err_path)
    text = run.stderr
    if err_path is not None:
        text = err_path.read_text(encoding="utf-8", errors="replace")
    if run.code != 0:
        raise RuntimeError(f"bench worker failed ({run.code}) for {spec['kind']}: {text[-3000:]}")
    return Measured(
        json.loads(out.read_text(encoding="utf-8")),
        run.wall_s,
        run.cpu_s,
        run.maxrss_mb,
        text,
        run.spawned_at,
        run.exited_at,
    )


def median_run(runs: Sequence[Measured]) -> tuple[Measured, float, float]:
    """The run with the median wall time, and the min and max wall of all runs."""
    ordered = sorted(runs, key=lambda m: m.wall_s)
    return ordered[len(ordered) // 2], ordered[0].wall_s, ordered[-1].wall_s


# --- measurements -----------------------------------------------------------------------------


def portfolio(plans: Sequence[SynthPlan], work: Path, *, repeats: int, role: str) -> Row:
    spec = {"kind": "portfolio", "plans": [str(p.path) for p in plans]}
    runs = []
    for i in range(repeats):
        progress(f"one process, {role}: {len(plans)} system(s), run {i + 1}/{repeats}")
        runs.append(run_worker(spec, work))
        r = runs[-1].result
        progress(f"  {runs[-1].wall_s:.1f} s wall, {r['resources']} resources")
    m, lo, hi = median_run(runs)
    return Row(role, len(plans), m, lo, hi, repeats, pairs_of(plans))


def calibrate(per_plan: Sequence[int], target: int) -> int:
    """How many of the first plans it takes to register `target` custom resources (all of them
    if they never do)."""
    total = 0
    for i, n in enumerate(per_plan):
        total += n
        if total >= target:
            return i + 1
    return len(per_plan)


def aws_only(plans: Sequence[SynthPlan], per_plan: Sequence[int], target: int) -> list[SynthPlan]:
    """The first aws->aws plans that register `target` custom resources together."""
    chosen = [(p, n) for p, n in zip(plans, per_plan, strict=True) if p.pair == ("aws", "aws")]
    k = calibrate([n for _, n in chosen], target)
    return [p for p, _ in chosen[:k]]


def overhead(plans: Sequence[SynthPlan], work: Path, pairs: int) -> Overhead:
    progress(f"program overhead: {pairs} pairs of passes")
    spec = {"kind": "program", "plans": [str(p.path) for p in plans], "pairs": pairs}
    return Overhead(run_worker(spec, work))


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)")


def import_times(stderr: str) -> dict[str, float]:
    """Seconds of import (self time, summed) per top-level package, from -X importtime."""
    out: dict[str, float] = {}
    for line in stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match:
            top = match.group(4).split(".")[0]
            out[top] = out.get(top, 0.0) + int(match.group(1)) / 1e6
    return out


def import_cost(plans: Sequence[SynthPlan], work: Path, label: str) -> ImportCost:
    progress(f"imports: {label}")
    spec = {"kind": "portfolio", "plans": [str(p.path) for p in plans], "policy": "none"}
    m = run_worker(spec, work, importtime=True)
    return ImportCost(label, pairs_of(plans), m, import_times(m.stderr))


def preload_cost(plans: Sequence[SynthPlan], work: Path, repeats: int) -> PreloadCost:
    """The zygote's imports for `plans`' clouds, in its load order (bench/worker.py kind
    "preload"), with the cyclic collector on and off, runs alternating; each the median run."""
    clouds = load_order([frozenset(p.pair) for p in plans])
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for i in range(repeats):
        for collector in runs:
            progress(
                f"the zygote's imports, collector {'on' if collector else 'off'}: "
                f"run {i + 1}/{repeats}"
            )
            spec = {"kind": "preload", "clouds": clouds, "collector": collector}
            runs[collector].append(run_worker(spec, work).result)
    on, off = (
        sorted(runs[c], key=lambda r: r["cumulative_cpu_s"][clouds[-1]])[repeats // 2]
        for c in (True, False)
    )
    return PreloadCost(
        clouds,
        repeats,
        on["cumulative_cpu_s"],
        off["cumulative_cpu_s"],
        on["collections"],
        off["collections"],
    )


def cli_loop(plans: Sequence[SynthPlan], work: Path) -> CliLoop:
    """`gpudr plan PLAN --format json -o FILE` once per plan, one process each, in sequence, as
    a CI job looping over plan files in a shell does."""
    walls: list[float] = []
    cpu = maxrss = 0.0
    resources = 0
    codes: dict[int, int] = {}
    for i, plan in enumerate(plans):
        progress(f"gpudr plan, one process per plan: {i + 1}/{len(plans)} {plan.path.name}")
        out = work / f"cli-{plan.index:03d}.json"
        run = _spawn(_plan_argv([plan], out, jobs=None, cache=None))
        if run.code not in (0, 1):
            raise RuntimeError(f"gpudr plan {plan.path} exited {run.code}: {run.stderr[-3000:]}")
        codes[run.code] = codes.get(run.code, 0) + 1
        walls.append(run.wall_s)
        cpu += run.cpu_s
        maxrss = max(maxrss, run.maxrss_mb)
        report = json.loads(out.read_text(encoding="utf-8"))
        resources += custom_resources(report["stacks"])
    return CliLoop(len(plans), resources, sum(walls), cpu, maxrss, walls, codes)


def _plan_argv(
    plans: Sequence[SynthPlan], out: Path, *, jobs: int | None, cache: Path | None
) -> list[str]:
    """`gpudr plan P1 ... Pn --format json -o OUT [--jobs N]`, in this interpreter, with the
    plan cache in `cache`; None: `--no-cache`, a cold run (no entry of an earlier run is read,
    and nothing is written into the checkout's .gpudr-cache)."""
    argv = [sys.executable, "-m", "gpudr", "plan", *(str(p.path) for p in plans)]
    argv += ["--format", "json", "-o", str(out), *(["--jobs", str(jobs)] if jobs else [])]
    return [*argv, *(["--cache-dir", str(cache)] if cache is not None else ["--no-cache"])]


@dataclass(frozen=True)
class _Timed:
    """One timed run of `gpudr plan` over a portfolio."""

    wall_s: float
    cpu_s: float  # wait4: the process and every child it waited for (its workers, the pack)
    processes: list[tuple[str, float]]  # (gpudr | worker | pack, peak RSS MB)
    exit_code: int


def _timed_plan(launch: Launch) -> _Timed:
    """Run `launch` (a `gpudr plan`) once, its process tree's memory sampled."""
    started = time.perf_counter()
    proc = _start(launch)
    sampler = TreePeak(proc.pid)
    assert proc.stderr is not None
    text = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    processes = sampler.stop()
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"gpudr plan exited {code}: {text[-3000:]}")
    return _Timed(wall, usage.ru_utime + usage.ru_stime, processes, code)


def _pss_peak_mb(launch: Launch) -> float:
    """The peak of the processes' summed PSS during one more, untimed run of `launch`."""
    proc = _start(launch)
    sampler = TreePeak(proc.pid, pss=True)
    proc.communicate()
    sampler.stop()
    return sampler.pss_peak_kb / 1024


def cli_portfolio(
    plans: Sequence[SynthPlan],
    work: Path,
    *,
    repeats: int,
    role: str,
    jobs: int | None,
    pss: bool = False,
) -> CliRun:
    out = work / f"portfolio-{time.monotonic_ns()}.json"
    launch = Launch(_plan_argv(plans, out, jobs=jobs, cache=None))
    label = cli_label(jobs)
    runs: list[_Timed] = []
    for i in range(repeats):
        progress(f"{label}, {role}: {len(plans)} plan(s), run {i + 1}/{repeats}")
        runs.append(_timed_plan(launch))
        _said(runs[-1])
    pss_peak_mb = None
    if pss:
        progress(f"{label}, {role}: one more run, sampling PSS (untimed)")
        pss_peak_mb = _pss(launch)
    return _cli_run(plans, runs, out, role=role, jobs=jobs, pss_peak_mb=pss_peak_mb)


def _said(run: _Timed) -> None:
    peak = sum(mb for _, mb in run.processes)
    progress(f"  {run.wall_s:.2f} s wall, peak {peak:.0f} MB")


def _pss(launch: Launch) -> float:
    pss_peak_mb = _pss_peak_mb(launch)
    progress(f"  peak of the summed PSS {pss_peak_mb:.0f} MB")
    return pss_peak_mb


def _cli_run(
    plans: Sequence[SynthPlan],
    runs: Sequence[_Timed],
    out: Path,
    *,
    role: str,
    jobs: int | None,
    pss_peak_mb: float | None,
) -> CliRun:
    """The record of `runs` of one `gpudr plan` over `plans`, its JSON report in `out`."""
    report = json.loads(out.read_text(encoding="utf-8"))
    reports = report.get("plans", [report])
    per_plan = [custom_resources(r["stacks"]) for r in reports]
    median = sorted(runs, key=lambda r: r.wall_s)[len(runs) // 2]
    return CliRun(
        jobs=jobs,
        role=role,
        systems=len(plans),
        walls=[r.wall_s for r in runs],
        cpu_s=median.cpu_s,
        processes=median.processes,
        exit_code=median.exit_code,
        resources=sum(per_plan),
        stacks=sum(len(r["stacks"]) for r in reports),
        per_plan_resources=per_plan,
        pairs=pairs_of(plans),
        pss_peak_mb=pss_peak_mb,
    )


# --- issue 21: the plan cache, before and after -------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in `cwd`, with no user or system config and the bench's identity (GIT_ENV):
    also what tests/e2e/test_diff_git.py makes its repositories with."""
    proc = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd} failed: {proc.stderr.strip()}")
    return proc.stdout


def _compile(project: Path) -> None:
    """Its code compiled to bytecode, untimed: this checkout's is (every run before wrote it),
    so a before or after figure does not include compiling."""
    names = [str(project / name) for name in CODE if (project / name).exists()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *names], check=True)


@dataclass(frozen=True)
class Before:
    """A commit's project, extracted (`git archive`) into the work directory. Its `gpudr plan`
    runs as `gpudr diff` runs a base side (gpudr/app/prdiff.py `_start`): from that project,
    which comes first on PYTHONPATH, in this interpreter and venv, with GPUDR_POLICY_CONFIG
    made absolute; without GPUDR_PROGRESS, as this checkout's runs here are."""

    sha: str
    project: Path
    label: str  # how the document names it

    def env(self) -> dict[str, str]:
        return side_env(self.project)

    def plan(self, plans: Sequence[SynthPlan], out: Path) -> Launch:
        """Its `gpudr plan P1 ... Pn --format json -o OUT`; no cache option: it has no cache."""
        argv = [*plan_command(self.project), *(str(p.path) for p in plans)]
        return Launch([*argv, "--format", "json", "-o", str(out)], self.project, self.env())


def checkout_before(rev: str, work: Path) -> Before:
    """`rev`'s project, extracted below `work`."""
    top = Path(git(PROJECT_DIR, "rev-parse", "--show-toplevel").strip()).resolve()
    sha = git(PROJECT_DIR, "rev-parse", "--verify", f"{rev}^{{commit}}").strip()
    rel = PurePosixPath(PROJECT_DIR.relative_to(top).as_posix())
    progress(f"extracting {rev} ({sha[:7]}) for the before figures")
    extract(top, sha, [rel], work / "before")
    project = work / "before" / rel
    _compile(project)
    label = sha[:7] + (" (main before issue 21)" if sha.startswith(BEFORE) else "")
    return Before(sha, project, label)


def _fresh(work: Path, prefix: str) -> Path:
    """A new, empty directory."""
    path = work / f"{prefix}-{time.monotonic_ns()}"
    path.mkdir()
    return path


def cold_portfolio(
    plans: Sequence[SynthPlan], work: Path, *, repeats: int, before: Before
) -> tuple[CliRun, CliRun]:
    """The calibrated portfolio cold, with the before code and with this checkout's, runs
    alternating (so that the machine's drift falls on both); each of this checkout's runs with
    a fresh, empty --cache-dir: a CI job's first run, which stores every plan's entry. Then one
    more, untimed run of each for the summed PSS."""
    outs = {side: work / f"cold-{side}-{time.monotonic_ns()}.json" for side in ("before", "after")}

    def launch(side: str) -> Launch:
        if side == "before":
            return before.plan(plans, outs[side])
        cache = _fresh(work, "cache")
        return Launch(_plan_argv(plans, outs[side], jobs=None, cache=cache))

    runs: dict[str, list[_Timed]] = {side: [] for side in outs}
    for i in range(repeats):
        for side in outs:
            progress(f"cold, {side}: {len(plans)} plan(s), run {i + 1}/{repeats}")
            runs[side].append(_timed_plan(launch(side)))
            _said(runs[side][-1])
    found = {}
    for side in outs:
        progress(f"cold, {side}: one more run, sampling PSS (untimed)")
        found[side] = _cli_run(
            plans,
            runs[side],
            outs[side],
            role=CALIBRATED,
            jobs=None,
            pss_peak_mb=_pss(launch(side)),
        )
    return found["before"], found["after"]


def _entries(cache: Path) -> int:
    """The reports stored in a plan cache directory."""
    return sum(1 for _ in PlanCache(cache).root.glob("*/*.json"))


def changed_portfolio(
    plans: Sequence[SynthPlan], work: Path, *, repeats: int, before: Before
) -> tuple[list[ChangedPlan], CliRun, CliRun, bool]:
    """The portfolio with one plan changed, the others' reports in a cache warmed from the
    unchanged portfolio: for the first plan of each cloud pair, `repeats` runs, each with a
    fresh copy of the warm cache. With the first pair's change: the before code's run (no
    cache), and this code's with --no-cache, whose report must be a warm run's byte for byte."""
    warm, out = work / "cache-warm", work / "changed.json"
    progress(f"warming a plan cache with the {len(plans)} unchanged plans (untimed)")
    _timed_plan(Launch(_plan_argv(plans, out, jobs=None, cache=warm)))
    stored = _entries(warm)
    if stored != len(plans):
        raise RuntimeError(f"the warm-up stored {stored} reports for {len(plans)} plans")
    chosen = plans_to_change(plans)
    if not chosen:
        raise RuntimeError("no plan of the portfolio has a data class to resize")
    changed: list[ChangedPlan] = []
    checks: tuple[CliRun, CliRun, bool] | None = None
    for plan in chosen:
        original = plan.path.read_bytes()
        try:
            change = change_size(plan.path)
            pair = f"{plan.pair[0]}->{plan.pair[1]}"
            walls, cpus, hits = [], [], []
            for i in range(repeats):
                copy = work / f"cache-{time.monotonic_ns()}"
                shutil.copytree(warm, copy)
                progress(f"one plan changed ({pair}, {change}), warm: run {i + 1}/{repeats}")
                run = _timed_plan(Launch(_plan_argv(plans, out, jobs=None, cache=copy)))
                walls.append(run.wall_s)
                cpus.append(run.cpu_s)
                # What the run did not store, it read.
                hits.append(len(plans) - (_entries(copy) - stored))
                shutil.rmtree(copy)
                progress(f"  {run.wall_s:.2f} s wall, {hits[-1]} of {len(plans)} from the cache")
            changed.append(ChangedPlan(pair, plan.path.name, change, len(plans), walls, cpus, hits))
            if checks is None:
                checks = _changed_checks(plans, work, out.read_bytes(), before)
        finally:
            plan.path.write_bytes(original)
    assert checks is not None
    return (changed, *checks)


def _changed_checks(
    plans: Sequence[SynthPlan], work: Path, warm_report: bytes, before: Before
) -> tuple[CliRun, CliRun, bool]:
    """The changed portfolio, once with the before code and once with --no-cache; whether the
    latter's report is `warm_report`, byte for byte."""
    outs = {side: work / f"changed-{side}.json" for side in ("before", "uncached")}
    progress(f"one plan changed, before ({before.label}): {len(plans)} plans, once")
    before_run = _timed_plan(before.plan(plans, outs["before"]))
    _said(before_run)
    progress(f"one plan changed, --no-cache: {len(plans)} plans, once")
    uncached_run = _timed_plan(Launch(_plan_argv(plans, outs["uncached"], jobs=None, cache=None)))
    _said(uncached_run)
    same = outs["uncached"].read_bytes() == warm_report
    progress(f"  the warm run's report {'equals' if same else 'DIFFERS FROM'} the --no-cache one")
    return (
        _cli_run(plans, [before_run], outs["before"], role=SIZE, jobs=None, pss_peak_mb=None),
        _cli_run(plans, [uncached_run], outs["uncached"], role=SIZE, jobs=None, pss_peak_mb=None),
        same,
    )


def _diff_repo(dest: Path, project: Path, files: Sequence[str]) -> Path:
    """A new repository at `dest` holding `files` of `project`: commit 1 as they are, commit 2
    with DIFF_PLAN's change (DIFF_EDIT)."""
    for name in files:
        src = project / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "the example as it is")
    plan = dest / DIFF_PLAN
    text = plan.read_text(encoding="utf-8")
    old, new = DIFF_EDIT
    if old not in text:
        raise RuntimeError(f"{plan} has no {old!r} to change")
    plan.write_text(text.replace(old, new, 1), encoding="utf-8")
    git(dest, "commit", "-q", "-a", "-m", "checkpoints grow")
    _compile(dest)
    return dest


_CACHE_LINE = re.compile(r"^\.\.\. (?:base|head): plan cache: (\d+) of \d+ plan", re.MULTILINE)


def _diff(repo: Path, cache: Path | None) -> tuple[DiffRun, str]:
    """`python -m gpudr diff --base HEAD~1 DIFF_PLAN [--cache-dir CACHE]` as a user runs it from
    the repository (tests/e2e/test_diff_git.py `gpudr_diff`): no PYTHONPATH, so the repository's
    own gpudr runs (checked first); with GPUDR_PROGRESS, whose lines say which side came from
    the cache. Its wall, and its markdown."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    env = absolute_policy_config({**env, **GIT_ENV, PROGRESS_ENV: "1"})
    which = subprocess.run(
        [sys.executable, "-c", "import gpudr; print(gpudr.__file__)"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(which).resolve().is_relative_to(repo.resolve()):
        raise RuntimeError(f"gpudr diff from {repo} would run {which}, not the repository's code")
    argv = [sys.executable, "-m", "gpudr", "diff", "--base", "HEAD~1", DIFF_PLAN]
    argv += ["--cache-dir", str(cache)] if cache is not None else []
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"gpudr diff in {repo} exited {proc.returncode}: {proc.stderr[-3000:]}")
    hits = sum(int(n) for n in _CACHE_LINE.findall(proc.stderr))
    shown = sum(line.startswith(PROGRESS_PREFIX) for line in proc.stderr.splitlines())
    progress(f"  {wall:.2f} s wall, {hits} side(s) from the cache, {shown} progress lines")
    return DiffRun(wall, proc.returncode, hits, shown), proc.stdout


def diff_runs(work: Path, before: Before) -> tuple[DiffRun, DiffRun, DiffRun, bool]:
    """`gpudr diff` of DIFF_PLAN's change: with the before code from a repository of its own
    files, then with this checkout's cold (a fresh, empty cache) and warm (the same cache)."""
    listed = git(PROJECT_DIR, "ls-files", "-co", "--exclude-standard", "-z", "--", *DIFF_SOURCES)
    after = _diff_repo(work / "diff-after", PROJECT_DIR, listed.split("\0"))
    # At the commit: git lists them from the project's directory, relative to it.
    at_before = git(
        PROJECT_DIR, "ls-tree", "-r", "-z", "--name-only", before.sha, "--", *DIFF_SOURCES
    )
    before_repo = _diff_repo(work / "diff-before", before.project, at_before.split("\0"))
    progress(f"gpudr diff, before ({before.label})")
    before_run, _ = _diff(before_repo, None)
    cache = _fresh(work, "cache")
    progress("gpudr diff, after, cold (a fresh, empty cache)")
    cold, cold_md = _diff(after, cache)
    progress("gpudr diff, after, warm (the same cache again)")
    warm, warm_md = _diff(after, cache)
    return before_run, cold, warm, warm_md == cold_md


def cache_bench(
    config: Config,
    plans: Sequence[SynthPlan],
    calibrated: Sequence[SynthPlan],
    work: Path,
    rev: str,
) -> CacheBench:
    """Issue 21's figures, before and after, in this run."""
    before = checkout_before(rev, work)
    cold_before, cold_after = cold_portfolio(
        calibrated, work, repeats=config.repeats, before=before
    )
    changed, changed_before, uncached, same = changed_portfolio(
        plans, work, repeats=config.repeats, before=before
    )
    diff_before, diff_cold, diff_warm, diff_same = diff_runs(work, before)
    old, new = DIFF_EDIT
    return CacheBench(
        before=before.label,
        cold_before=cold_before,
        cold_after=cold_after,
        changed=changed,
        changed_before=changed_before,
        changed_uncached=uncached,
        warm_equals_uncached=same,
        diff_plan=DIFF_PLAN,
        diff_change=f"checkpoints `{old}` -> `{new}`",
        diff_before=diff_before,
        diff_cold=diff_cold,
        diff_warm=diff_warm,
        diff_warm_equals_cold=diff_same,
    )


# --- the machine ------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    commit = "unknown"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_DIR, capture_output=True, text=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=PROJECT_DIR, capture_output=True, text=True
        ).stdout.splitlines()
        # The bench's own files do not change what is measured; anything else would.
        ours = (
            "bench/",
            "docs/benchmarks.md",
            "docs/bench-checksums.md",
            "tests/bench/",
            "Makefile",
        )
        others = sorted({line[3:] for line in status if not line[3:].startswith(ours)})
        commit += (
            f"; uncommitted changes to measured code: {', '.join(others)}"
            if others
            else "; no uncommitted changes outside the bench's own files"
        )
    except OSError:
        pass
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "CPU": cpu,
        "cores": f"{os.cpu_count()} (usable by this process: {affinity})",
        "RAM": mem,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": ", ".join(versions),
        "gpudr commit": commit,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }


# --- the whole run ----------------------------------------------------------------------------


def run_all(config: Config, seed: int, quick: bool, work: Path, before: str = BEFORE) -> Results:
    started = time.perf_counter()
    info = machine()
    largest = max(config.systems)
    progress(f"generating {largest} synthetic plans (seed {seed}) into {work / 'plans'}")
    plans, _ = write_portfolio(work / "plans", largest, seed)
    progress(f"{len(plans)} plans validated by gpudr.core.spec.load_plan: {pairs_of(plans)}")

    def once_if_large(n: int) -> int:
        return 1 if n > 20 else config.repeats

    # The largest portfolio first: it counts every plan's resources, which calibrates the
    # 1,000-resource portfolios (plans are prefixes of one sequence).
    first = cli_portfolio(plans, work, repeats=once_if_large(largest), role=SIZE, jobs=None)
    per_plan = first.per_plan_resources
    calibrated = plans[: calibrate(per_plan, config.target_resources)]
    aws = aws_only(plans, per_plan, config.target_resources)
    portfolios: list[tuple[str, list[SynthPlan]]] = [
        *[(SIZE, plans[:n]) for n in sorted(config.systems)],
        (CALIBRATED, calibrated),
        (AWS_ONLY, aws),
    ]
    cli = [first]
    for role, chosen in portfolios:
        if not (role == SIZE and len(chosen) == largest):
            repeats = once_if_large(len(chosen))
            pss = role in (CALIBRATED, AWS_ONLY)  # the memory target's portfolios
            cli.append(cli_portfolio(chosen, work, repeats=repeats, role=role, jobs=None, pss=pss))
    for role, chosen in ((CALIBRATED, calibrated), (AWS_ONLY, aws)):
        cli.append(cli_portfolio(chosen, work, repeats=config.repeats, role=role, jobs=1, pss=True))
    rows = [
        portfolio(chosen, work, repeats=once_if_large(len(chosen)), role=role)
        for role, chosen in portfolios
    ]
    progress("policy pack start-up")
    pack = run_worker({"kind": "pack", "repeats": 5}, work).result["start_wall_s"]
    over = overhead(calibrated, work, config.program_pairs)
    imports = [
        import_cost([plans[i]], work, f"plan {i} only") for i in config.import_plans if i < largest
    ]
    imports.append(import_cost(calibrated, work, f"first {len(calibrated)} plans"))
    loop = cli_loop(calibrated, work)
    results = Results(config, quick, seed, info, cli, rows, over, imports, loop, pack)
    results.preload = preload_cost(calibrated, work, config.repeats)
    results.cache = cache_bench(config, plans, calibrated, work, before)
    results.elapsed_s = time.perf_counter() - started
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: the smallest sizes")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help=f"where to write the markdown (default: {DOC.relative_to(PROJECT_DIR)}; "
        "--quick: nowhere)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--before",
        metavar="REV",
        default=BEFORE,
        help=f"the commit issue 21's figures compare with (default: {BEFORE}, main before the "
        "plan cache)",
    )
    args = parser.parse_args(argv)
    from bench.doc import render  # after argparse: --help stays fast

    config = QUICK if args.quick else FULL
    output = args.output if args.output is not None else (None if args.quick else DOC)
    work = Path(tempfile.mkdtemp(prefix="gpudr-bench-"))
    try:
        results = run_all(config, args.seed, args.quick, work, args.before)
    finally:
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        else:
            progress(f"kept {work}")
    text = render(results)
    if args.json is not None:
        from dataclasses import asdict

        args.json.write_text(json.dumps(asdict(results), indent=1, default=str), encoding="utf-8")
    if output is not None:
        output.write_text(text, encoding="utf-8")
        progress(f"wrote {output} ({results.elapsed_s:.0f} s)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
