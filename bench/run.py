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
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.procs import TreePeak
from bench.results import (
    AWS_ONLY,
    CALIBRATED,
    SIZE,
    CliLoop,
    CliRun,
    Config,
    ImportCost,
    Measured,
    Overhead,
    Results,
    Row,
    cli_label,
)
from bench.synth import DEFAULT_SEED, SynthPlan, pairs_of, write_portfolio
from bench.worker import custom_resources
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


def _spawn(argv: list[str], stderr_path: Path | None = None) -> _Exited:
    err = open(stderr_path, "w") if stderr_path else subprocess.PIPE  # noqa: SIM115
    spawned_at = time.time()
    started = time.perf_counter()
    proc = _start(argv, err)
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
        run = _spawn(_plan_argv([plan], out, jobs=None))
        if run.code not in (0, 1):
            raise RuntimeError(f"gpudr plan {plan.path} exited {run.code}: {run.stderr[-3000:]}")
        codes[run.code] = codes.get(run.code, 0) + 1
        walls.append(run.wall_s)
        cpu += run.cpu_s
        maxrss = max(maxrss, run.maxrss_mb)
        report = json.loads(out.read_text(encoding="utf-8"))
        resources += custom_resources(report["stacks"])
    return CliLoop(len(plans), resources, sum(walls), cpu, maxrss, walls, codes)


def _plan_argv(plans: Sequence[SynthPlan], out: Path, *, jobs: int | None) -> list[str]:
    """`gpudr plan P1 ... Pn --format json -o OUT [--jobs N]`, in this interpreter."""
    argv = [sys.executable, "-m", "gpudr", "plan", *(str(p.path) for p in plans)]
    return [*argv, "--format", "json", "-o", str(out), *(["--jobs", str(jobs)] if jobs else [])]


def _start(argv: list[str], stderr: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=stderr)


@dataclass(frozen=True)
class _Timed:
    """One timed run of `gpudr plan` over a portfolio."""

    wall_s: float
    cpu_s: float  # wait4: the process and every child it waited for (its workers, the pack)
    processes: list[tuple[str, float]]  # (gpudr | worker | pack, peak RSS MB)
    exit_code: int


def _timed_plan(argv: list[str]) -> _Timed:
    """Run `argv` (a `gpudr plan`) once, its process tree's memory sampled."""
    started = time.perf_counter()
    proc = _start(argv)
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


def _pss_peak_mb(argv: list[str]) -> float:
    """The peak of the processes' summed PSS during one more, untimed run of `argv`."""
    proc = _start(argv)
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
    argv = _plan_argv(plans, out, jobs=jobs)
    label = cli_label(jobs)
    runs: list[_Timed] = []
    for i in range(repeats):
        progress(f"{label}, {role}: {len(plans)} plan(s), run {i + 1}/{repeats}")
        runs.append(_timed_plan(argv))
        peak = sum(mb for _, mb in runs[-1].processes)
        progress(f"  {runs[-1].wall_s:.2f} s wall, peak {peak:.0f} MB")
    pss_peak_mb = None
    if pss:
        progress(f"{label}, {role}: one more run, sampling PSS (untimed)")
        pss_peak_mb = _pss_peak_mb(argv)
        progress(f"  peak of the summed PSS {pss_peak_mb:.0f} MB")
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


def run_all(config: Config, seed: int, quick: bool, work: Path) -> Results:
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
    args = parser.parse_args(argv)
    from bench.doc import render  # after argparse: --help stays fast

    config = QUICK if args.quick else FULL
    output = args.output if args.output is not None else (None if args.quick else DOC)
    work = Path(tempfile.mkdtemp(prefix="gpudr-bench-"))
    try:
        results = run_all(config, args.seed, args.quick, work)
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
