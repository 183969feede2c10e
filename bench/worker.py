"""One measurement, in a fresh interpreter: `python -m bench.worker SPEC.json`.

The driver (bench/run.py) starts one worker per measurement, so peak RSS (`ru_maxrss`) and
the import state belong to that measurement alone. The spec says what to run; the result is
written as JSON to `spec["out"]`.

kind "portfolio": for each plan, the steps `gpudr plan PLAN` takes (gpudr/app/cli.py `plan`):
  spec     gpudr.core.spec.load_plan + gpudr.core.design.design
  program  offline.plan.run_design (the Pulumi program per stack under mocks; the first plan
           also pays for importing Pulumi and each cloud SDK, as `gpudr plan` does)
  policy   one pack process for the whole portfolio, as `gpudr plan --jobs 1 P1 ... Pn` has,
           but waited for stage by stage (gpudr feeds it from a thread while the next plan's
           program runs), so that each stage's time is its own
  render   gpudr.docs.report.build_report + render_text (the default --format text)
  With `"policy": "none"` in the spec, no pack and no policy stage.
kind "pack": the policy pack's start-up time, alone.
kind "preload": the zygote's imports (gpudr/app/offline/portfolio.py `_zygote`): Pulumi, then
  each cloud's SDK modules (offline/preload.py) in the spec's order, with the cyclic collector
  on (the interpreter's default) or off (as the zygote imports); CPU seconds as each is in.
kind "program": a warm-up pass of gpudr's program over the plans (imports every SDK module
  the portfolio uses, and records what each stack registered), then measured passes of gpudr's
  program and of the flat baseline (bench/flat.py) over the same stacks, alternating.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.procs import TreePeak, status_kb

STARTED_AT = time.time()  # the driver compares it with its own clock: interpreter start-up
SDK_PACKAGES = ("pulumi_aws", "pulumi_gcp", "pulumi_azure_native", "pulumi_random")
# What `gpudr plan` does for each plan, in order: the kind "portfolio" times each one.
STAGES = ("spec", "program", "policy", "render")


class GcClock:
    """Time spent in the cyclic garbage collector, from gc.callbacks."""

    def __init__(self) -> None:
        self.collections = 0
        self.full = 0
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: Mapping[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.collections += 1
            self.full += info["generation"] == 2
            self.seconds += time.perf_counter() - self._started

    def snapshot(self) -> dict[str, float]:
        return {"collections": self.collections, "full": self.full, "seconds": self.seconds}


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Stages:
    """Wall and CPU time per stage, summed over plans (CPU: the running thread's, plus the
    child processes the stage waited for: the policy pack), and how much each stage raised the
    process's peak RSS (VmHWM), summed: the stages' shares of the final peak."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.wall = dict.fromkeys(names, 0.0)
        self.cpu = dict.fromkeys(names, 0.0)
        self.child_cpu = dict.fromkeys(names, 0.0)
        self.peak_growth_mb = dict.fromkeys(names, 0.0)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        wall, cpu, child = time.perf_counter(), time.thread_time(), _children_cpu()
        hwm = status_kb("self", "VmHWM")
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - wall
            self.cpu[name] += time.thread_time() - cpu
            self.child_cpu[name] += _children_cpu() - child
            self.peak_growth_mb[name] += (status_kb("self", "VmHWM") - hwm) / 1024

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            name: {
                "wall_s": self.wall[name],
                "cpu_s": self.cpu[name] + self.child_cpu[name],
                "child_cpu_s": self.child_cpu[name],
                "peak_rss_growth_mb": self.peak_growth_mb[name],
            }
            for name in self.wall
        }


def sdk_modules() -> dict[str, int]:
    """How many modules of each cloud SDK this interpreter has imported."""
    counts = dict.fromkeys(SDK_PACKAGES, 0)
    for name in list(sys.modules):
        top = name.split(".")[0]
        if top in counts:
            counts[top] += 1
    return counts


def custom_resources(stacks: Iterable[Mapping[str, Any]]) -> int:
    """The custom resources the stacks' programs registered (a report's `stacks`)."""
    return sum(1 for s in stacks for r in s["resources"] if r["custom"])


def _plan_counts(stacks: list[dict[str, Any]], *, meets: bool) -> dict[str, Any]:
    """What the result counts of one plan's stacks (with their policy verdicts)."""
    levels = [v["level"] for s in stacks for v in s.get("policy", {}).get("violations", ())]
    return {
        "resources": custom_resources(stacks),
        "registrations": sum(len(s["resources"]) for s in stacks),
        "clouds": sorted(
            {r["type"].split(":")[0] for s in stacks for r in s["resources"] if r["custom"]}
        ),
        "stacks": len(stacks),
        "meets": meets,
        "mandatory": levels.count("mandatory"),
        "advisory": levels.count("advisory"),
    }


def _summed(done: list[dict[str, Any]]) -> dict[str, Any]:
    """The plans' counts (`_plan_counts`), summed over the portfolio."""
    return {
        "plans": len(done),
        "stacks": sum(d["stacks"] for d in done),
        "resources": sum(d["resources"] for d in done),
        "registrations": sum(d["registrations"] for d in done),
        "plans_meeting_targets": sum(d["meets"] for d in done),
        "violations": {
            "mandatory": sum(d["mandatory"] for d in done),
            "advisory": sum(d["advisory"] for d in done),
        },
    }


def run_portfolio(spec: Mapping[str, Any]) -> dict[str, Any]:
    """gpudr plan's stages, one plan after another, with one pack process for the portfolio."""
    from gpudr.core.design import Design, design
    from gpudr.core.spec import load_plan
    from gpudr.docs.report import build_report, render_text

    startup_rss_mb = status_kb("self", "VmHWM") / 1024
    gc_clock = GcClock()
    # The policy pack's peak: the other processes under this one are none.
    children = TreePeak(os.getpid())
    stages = Stages(STAGES)
    # "none" (the import-cost runs): no pack, so that only the program's imports are counted.
    with_policy = spec.get("policy", "shared") != "none"
    session: Any = None

    def finish(des: Design, stacks: list[dict[str, Any]]) -> dict[str, Any]:
        """Policy and rendering of one plan; what the result counts."""
        nonlocal session
        if with_policy:
            with stages.stage("policy"):
                from gpudr.app.offline.policy import PackSession, with_violations

                if session is None:
                    session = PackSession()
                # Waited for here, where gpudr plan goes on with the next program.
                stacks = with_violations(stacks, session.submit(stacks).result())
        with stages.stage("render"):
            report = build_report(des, stacks)
            render_text(report)
        return _plan_counts(stacks, meets=bool(report["meets"]))

    done: list[dict[str, Any]] = []
    started = time.perf_counter()
    for path in spec["plans"]:
        with stages.stage("spec"):
            des = design(load_plan(path))
        with stages.stage("program"):
            from gpudr.app.offline.plan import run_design

            stacks = run_design(des)
        done.append(finish(des, stacks))
    if session is not None:
        with stages.stage("policy"):
            session.close()
    elapsed = time.perf_counter() - started
    return {
        **_summed(done),
        "stages": stages.as_dict(),
        "per_plan_resources": [d["resources"] for d in done],
        # The providers the registered resources belong to (aws, gcp, azure-native, random).
        "resource_clouds": sorted({c for d in done for c in d["clouds"]} - {"pulumi"}),
        "in_process_wall_s": elapsed,
        "startup_rss_mb": startup_rss_mb,
        "rss_peak_mb": _maxrss_mb(),
        "pack_rss_peak_mb": sum(mb for kind, mb in children.stop() if kind == "pack"),
        "gc": gc_clock.snapshot(),
        "sdk_modules": sdk_modules(),
        "modules_total": len(sys.modules),
    }


def run_program(spec: Mapping[str, Any]) -> dict[str, Any]:
    """gpudr's program against the flat baseline, alternating in one process: after the
    warm-up, `pairs` times one pass of each, the order swapped every pair, so both see the same
    process state and machine drift cancels in the pairwise ratios."""
    from bench import flat
    from gpudr.app.offline.mocks import GpudrMocks
    from gpudr.app.offline.plan import run_design
    from gpudr.app.offline.run import run_stack  # what run_design runs each stack with
    from gpudr.build.stackconfig import stack_config_values
    from gpudr.core.design import design
    from gpudr.core.spec import load_plan

    designs = [design(load_plan(p)) for p in spec["plans"]]
    # Warm-up: every SDK module the portfolio needs is imported, and each stack's custom
    # resources are recorded for the flat baseline.
    recorded: list[tuple[str, str, dict[str, Any], list[flat.FlatResource]]] = []
    for des in designs:
        for s in run_design(des):
            config = stack_config_values(des, des.plan.sites[s["site"]])
            recorded.append((s["name"], s["region"], config, flat.flat_resources(s["resources"])))
    custom = sum(len(r[3]) for r in recorded)
    # Settle: the warm-up's garbage is collected here, not in whichever pass comes first.
    gc.collect()
    gc_clock = GcClock()
    passes: dict[str, list[dict[str, float]]] = {"gpudr": [], "flat": []}
    mismatches = 0

    def one(variant: str, check: bool) -> None:
        nonlocal mismatches
        before = gc_clock.snapshot()
        wall, cpu = time.perf_counter(), time.process_time()
        if variant == "gpudr":
            for des in designs:
                run_design(des)
        else:
            for name, region, config, resources in recorded:
                flat.CURRENT[:] = resources
                result = run_stack(
                    name, config, GpudrMocks(default_region=region), program=Path(flat.PROGRAM)
                )
                if check:
                    got = {(x.type, x.name): x.inputs for x in result.registrations if x.custom}
                    mismatches += sum(got.get((f.type, f.name)) != f.inputs for f in resources)
                    mismatches += len(got) != len(resources)
        passes[variant].append(
            {
                "wall_s": time.perf_counter() - wall,
                "cpu_s": time.process_time() - cpu,
                "gc_s": gc_clock.snapshot()["seconds"] - before["seconds"],
            }
        )

    for pair in range(int(spec.get("pairs", 1))):
        for variant in ("gpudr", "flat") if pair % 2 == 0 else ("flat", "gpudr"):
            one(variant, check=pair == 0)
    return {
        "resources": custom,
        "stacks": len(recorded),
        "passes": passes,
        "ratios": [
            g["wall_s"] / f["wall_s"] for g, f in zip(passes["gpudr"], passes["flat"], strict=True)
        ],
        "flat_mismatches": mismatches,
        "rss_peak_mb": _maxrss_mb(),
    }


def run_pack(spec: Mapping[str, Any]) -> dict[str, Any]:
    """How long the policy pack process takes to start and answer (`PolicyPackProcess.start`:
    spawn, the pack's imports, the gRPC server, GetAnalyzerInfo), as `evaluate` pays it."""
    from gpudr.app.offline.policy import PolicyPackProcess

    walls = []
    for _ in range(int(spec.get("repeats", 3))):
        pack = PolicyPackProcess()
        started = time.perf_counter()
        pack.start()
        walls.append(time.perf_counter() - started)
        pack.stop()
    return {"start_wall_s": walls}


def run_preload(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What `preload` imports, as the zygote imports it, with the collector as the spec says:
    cumulative CPU seconds once Pulumi is in, then once each cloud is."""
    if not spec["collector"]:
        gc.disable()
    started = time.process_time()
    import gpudr.app.offline.plan  # noqa: F401  # the zygote's first import: Pulumi
    from gpudr.app.offline import preload

    cumulative = {"pulumi": time.process_time() - started}
    for cloud, module in preload.steps(spec["clouds"]):
        if module is None:
            cumulative[cloud] = time.process_time() - started
        else:
            preload.load(module)
    return {
        "cumulative_cpu_s": cumulative,
        "collections": sum(generation["collections"] for generation in gc.get_stats()),
    }


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    kind = spec["kind"]
    if kind == "portfolio":
        result = run_portfolio(spec)
    elif kind == "program":
        result = run_program(spec)
    elif kind == "pack":
        result = run_pack(spec)
    elif kind == "preload":
        result = run_preload(spec)
    else:
        raise SystemExit(f"bench.worker: unknown kind {kind!r}")
    result["sdk_modules"] = sdk_modules()
    result["pid"] = os.getpid()
    result["started_at"] = STARTED_AT
    result["finished_at"] = time.time()  # the rest, to exit, is the interpreter's teardown
    Path(spec["out"]).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
