"""docs/benchmarks.md from a bench run: every figure in it comes from `Results`."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

from bench.run import (
    AS_IS,
    AWS_ONLY,
    CALIBRATED,
    PIPELINED,
    SHARED,
    TARGET_GROWTH,
    TARGET_OVERHEAD,
    TARGET_RSS_MB,
    TARGET_WALL_S,
    CliLoop,
    ImportCost,
    Overhead,
    Results,
    Row,
)

STAGES = ("spec", "program", "policy", "render")
SDK_COLUMNS = ("pulumi_aws", "pulumi_gcp", "pulumi_azure_native", "pulumi_random")


def _s(value: float) -> str:
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def _mb(value: float) -> str:
    return f"{value:.0f}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _pairs(pairs: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(pairs.items()))


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _res(row: Row) -> int:
    n: int = row.measured.result["resources"]
    return n


def _stage(row: Row, stage: str) -> float:
    value: float = row.measured.result["stages"][stage]["wall_s"]
    return value


def _peak(row: Row) -> float:
    r = row.measured.result
    total: float = r["rss_peak_mb"] + r["pack_rss_peak_mb"]
    return total


def _startup(row: Row) -> float:
    """Wall time outside the stages and the exit: interpreter start, gpudr's imports."""
    m = row.measured
    return m.wall_s - sum(_stage(row, s) for s in STAGES) - m.teardown_s


def _name(row: Row) -> str:
    n = row.systems
    systems = f"{n} system{'s' if n != 1 else ''}"
    if row.role == CALIBRATED:
        return f"{_res(row):,} resources ({systems})"
    if row.role == AWS_ONLY:
        return f"aws only, {_res(row):,} resources ({systems})"
    return systems


def _portfolio_table(rows: Sequence[Row], with_label: bool) -> str:
    head = [
        *(["gpudr"] if with_label else []),
        "portfolio",
        "stacks",
        "resources",
        "wall s (min-max)",
        "CPU s",
        "peak RSS MB: gpudr + pack",
        *[f"{s} s" for s in STAGES],
        "start-up s",
        "exit s",
        "of which GC s",
        "ms / resource",
    ]
    out = []
    for row in rows:
        r = row.measured.result
        m = row.measured
        wall = _s(m.wall_s)
        if row.repeats > 1:
            wall += f" ({_s(row.wall_min)}-{_s(row.wall_max)})"
        overlapped = bool(r.get("overlapped"))
        stage_cells = [
            _s(_stage(row, st)) + (" ‡" if overlapped and st in ("policy", "render") else "")
            for st in STAGES
        ]
        out.append(
            [
                *([row.label] if with_label else []),
                _name(row),
                str(r["stacks"]),
                f"{_res(row):,}",
                wall,
                _s(m.cpu_s),
                f"{_mb(r['rss_peak_mb'])} + {_mb(r['pack_rss_peak_mb'])}",
                *stage_cells,
                "-" if overlapped else _s(_startup(row)),
                _s(m.teardown_s),
                _s(r["gc"]["seconds"]),
                f"{1000 * m.wall_s / _res(row):.1f}",
            ]
        )
    return _table(head, out)


def _stage_detail(row: Row) -> str:
    r = row.measured.result
    out = []
    for s in STAGES:
        st = r["stages"][s]
        cpu = _s(st["cpu_s"])
        if st["child_cpu_s"]:
            cpu += f" (pack {_s(st['child_cpu_s'])})"
        out.append([s, _s(st["wall_s"]), cpu, _mb(st["peak_rss_growth_mb"])])
    out.append(
        [
            "start-up (interpreter, gpudr's imports)",
            _s(_startup(row)),
            "-",
            f"{_mb(r['startup_rss_mb'])} (RSS at start)",
        ]
    )
    out.append(["exit (interpreter teardown, final GC)", _s(row.measured.teardown_s), "-", "-"])
    return _table(["stage", "wall s", "CPU s", "raised gpudr's peak RSS by MB"], out)


GROWTH_HEAD = (
    "portfolios",
    "resources",
    "wall s",
    "program stage s",
    "ms / resource",
    "wall ratio allowed",
    "verdict",
)


def _growth(rows: Sequence[Row]) -> list[list[str]]:
    out = []
    for a, b in itertools.pairwise(rows):
        res_ratio = _res(b) / _res(a)
        wall_ratio = b.measured.wall_s / a.measured.wall_s
        pa, pb = _stage(a, "program"), _stage(b, "program")
        allowed = TARGET_GROWTH * res_ratio / 10
        out.append(
            [
                f"{a.systems} -> {b.systems} systems",
                f"{_res(a):,} -> {_res(b):,} ({res_ratio:.1f}x)",
                f"{_s(a.measured.wall_s)} -> {_s(b.measured.wall_s)} ({wall_ratio:.1f}x)",
                f"{_s(pa)} -> {_s(pb)} ({pb / pa:.1f}x)",
                f"{1000 * a.measured.wall_s / _res(a):.1f} -> "
                f"{1000 * b.measured.wall_s / _res(b):.1f}",
                f"{allowed:.1f}x",
                _verdict(wall_ratio <= allowed),
            ]
        )
    return out


def _overhead_table(o: Overhead) -> str:
    r = o.measured.result
    row = [
        f"{r['resources']:,} in {r['stacks']} stacks",
        _s(o.median("gpudr")),
        _s(o.median("flat")),
        f"**{o.ratio:.2f}x**",
        ", ".join(f"{x:.2f}" for x in o.ratios),
        f"{_s(o.median_gc('gpudr'))} / {_s(o.median_gc('flat'))}",
        "yes" if r["flat_mismatches"] == 0 else f"no ({r['flat_mismatches']} differ)",
    ]
    head = [
        "resources",
        "gpudr program s",
        "flat program s",
        "ratio",
        "ratio of each pair",
        "in GC s: gpudr / flat",
        "flat inputs identical",
    ]
    return _table(head, [row])


def _imports_table(imports: Sequence[ImportCost]) -> str:
    out = []
    for c in imports:
        mods = c.measured.result["sdk_modules"]
        out.append(
            [
                c.label,
                _pairs(c.pairs),
                ", ".join(c.measured.result["resource_clouds"]),
                *[f"{mods.get(sdk, 0)} ({_s(c.seconds.get(sdk, 0.0))} s)" for sdk in SDK_COLUMNS],
                _s(c.seconds.get("pulumi", 0.0)),
                _s(sum(c.seconds.values())),
                _s(c.measured.wall_s),
            ]
        )
    head = [
        "run (program only)",
        "cloud pairs",
        "resources registered on",
        "pulumi_aws modules (import s)",
        "pulumi_gcp",
        "pulumi_azure_native",
        "pulumi_random",
        "pulumi core import s",
        "every import s",
        "wall s",
    ]
    return _table(head, out)


def _cli_table(cli: CliLoop) -> str:
    rows = [
        [
            str(cli.plans),
            f"{cli.resources:,}",
            _s(cli.wall_s),
            _s(cli.wall_s / cli.plans),
            f"{_s(min(cli.per_plan_wall))}-{_s(max(cli.per_plan_wall))}",
            _s(cli.cpu_s),
            _mb(cli.maxrss_mb),
            ", ".join(f"{v} x exit {k}" for k, v in sorted(cli.exit_codes.items())),
        ]
    ]
    head = [
        "plans",
        "resources",
        "total wall s",
        "per plan s (mean)",
        "per plan s (min-max)",
        "CPU s",
        "largest process peak RSS MB",
        "exit codes",
    ]
    return _table(head, rows)


def _budget(results: Results, shared: Row) -> list[list[str]]:
    """Where the calibrated portfolio's time goes with one shared pack, against the flat
    program's floor."""
    over = results.overhead
    imports = results.imports[-1]
    sdk_import = sum(imports.seconds.get(p, 0.0) for p in (*SDK_COLUMNS, "pulumi"))
    flat, gpudr = over.median("flat"), over.median("gpudr")
    return [
        [
            "importing Pulumi and the cloud SDKs the portfolio uses",
            _s(sdk_import),
            f"`-X importtime`, {imports.label}: Pulumi's and the SDKs' own import time",
        ],
        [
            "registering the resources with the SDK, no gpudr code (flat program)",
            _s(flat),
            "warm (SDKs imported): the floor of any Pulumi program under these mocks",
        ],
        ["gpudr's components and config on top of that", _s(gpudr - flat), "gpudr - flat"],
        ["policy pack (one process, all stacks)", _s(_stage(shared, "policy")), SHARED],
        ["spec + render", _s(_stage(shared, "spec") + _stage(shared, "render")), ""],
        [
            "interpreter start-up and exit",
            _s(_startup(shared) + shared.measured.teardown_s),
            "",
        ],
    ]


def _targets(results: Results) -> list[list[str]]:
    cal, aws = results.row(AS_IS, CALIBRATED), results.row(AS_IS, AWS_ONLY)
    assert cal is not None

    def best(role: str) -> Row | None:
        """The fastest of the emulated policy-pack variants for a portfolio."""
        rows = [r for label in (SHARED, PIPELINED) if (r := results.row(label, role))]
        return min(rows, key=lambda r: r.measured.wall_s) if rows else None

    def wall_cells(row: Row | None, named: bool = False) -> list[str]:
        if row is None:
            return ["-", "-"]
        return [
            f"{_s(row.measured.wall_s)} s ({_res(row):,} resources, "
            f"{row.systems} system{'s' if row.systems != 1 else ''}"
            + (f"; {row.label}" if named else "")
            + ")",
            _verdict(row.measured.wall_s < TARGET_WALL_S),
        ]

    def rss_cells(row: Row | None) -> list[str]:
        if row is None:
            return ["-", "-"]
        r = row.measured.result
        return [
            f"{_mb(r['rss_peak_mb'])} + {_mb(r['pack_rss_peak_mb'])} (pack) = {_mb(_peak(row))} MB",
            _verdict(_peak(row) < TARGET_RSS_MB),
        ]

    o = results.overhead
    growth = [g[-1] if g else None for g in (_growth(results.sizes(AS_IS)),)]
    growth_shared = _growth(results.sizes(SHARED))
    last, last_shared = growth[0], (growth_shared[-1] if growth_shared else None)
    return [
        [
            f"{results.config.target_resources:,}-resource portfolio, plan + policy under "
            f"{TARGET_WALL_S:g} s: three clouds",
            *wall_cells(cal),
            *wall_cells(best(CALIBRATED), named=True),
        ],
        ["... aws only", *wall_cells(aws), *wall_cells(best(AWS_ONLY), named=True)],
        [
            f"... peak memory under {TARGET_RSS_MB:g} MB",
            *rss_cells(cal),
            *rss_cells(results.row(SHARED, CALIBRATED)),
        ],
        [
            f"program overhead at most {TARGET_OVERHEAD:g}x a flat program",
            f"{o.ratio:.2f}x ({_s(o.median('gpudr'))} s vs {_s(o.median('flat'))} s)",
            _verdict(o.ratio <= TARGET_OVERHEAD),
            "(no change)",
            "",
        ],
        [
            f"10x the resources in at most {TARGET_GROWTH:g}x the time",
            *([f"{last[0]}: resources {last[1]}, wall {last[2]}", last[6]] if last else ["-"] * 2),
            *(
                [f"{last_shared[0]}: wall {last_shared[2]}", last_shared[6]]
                if last_shared
                else ["-"] * 2
            ),
        ],
    ]


def render(results: Results) -> str:
    cal = results.row(AS_IS, CALIBRATED)
    shared = results.row(SHARED, CALIBRATED)
    assert cal is not None and shared is not None
    cmd = "make bench" if not results.quick else "python -m bench.run --quick"
    quick_note = " **Quick smoke run: small sizes, one repeat; not for comparison.**"
    parts: list[str] = [
        "<!-- Generated by `make bench` (python -m bench.run): do not edit; rerun it. -->",
        "# Benchmarks: how `gpudr plan`'s cost grows with what it protects",
        "",
        f"Generated by `{cmd}`: every figure below comes from that run."
        + (quick_note if results.quick else "")
        + f" To rerun: `make bench` (it took {results.elapsed_s / 60:.0f} min here) rewrites "
        "this file; `.venv/bin/python -m bench.run --quick` is a smoke run that prints to "
        "stdout. The bench is not part of `make test`.",
        "",
        "## Machine",
        "",
        _table(["", ""], [[k, v] for k, v in results.machine.items()]),
        "",
        "## Targets",
        "",
        "Judged on one Python process that runs `gpudr plan`'s steps for each plan of the "
        "portfolio in turn (see below). *With one pack* is the same run with the policy pack "
        "process shared by the whole portfolio (and, in its best variant, fed from a second "
        "thread), emulated by the bench from outside: gpudr starts one pack per plan today.",
        "",
        _table(
            ["target (issue 7)", "as is", "", "with one pack (emulated)", ""],
            _targets(results),
        ),
        "",
        f"Medians of {results.config.repeats} fresh-process runs (min-max in the tables); "
        "portfolios of more than 20 systems ran once.",
        "",
        f"### Where the {_res(shared):,}-resource portfolio's time goes, with one pack",
        "",
        _table(["part", "s", "measured as"], _budget(results, shared)),
        "",
        f"Total with one pack: {_s(shared.measured.wall_s)} s wall. The parts come from "
        "separate measurements (the import run, the overhead run, the portfolio run), so "
        "they need not add up to it exactly.",
        "",
        "## Portfolios, as `gpudr plan` runs today",
        "",
        "Each row is one fresh Python process (bench/worker.py) that runs, for each plan in "
        "turn, the steps of `gpudr plan PLAN` (gpudr/cli.py): **spec** `load_plan` + `design`; "
        "**program** `offline.plan.run_design`, the real `__main__.py` per stack under the "
        "Pulumi mocks (the first plan on each cloud also imports Pulumi and that cloud's SDK "
        "there, as `gpudr plan` does); **policy** `offline.policy.evaluate`, which starts the "
        "policy pack process and sends it every resource over gRPC, once per plan as `gpudr "
        "plan` does; **render** `build_report` + the default text rendering. This is a CI job "
        "that loops over plan files in one Python process. *resources*: custom resources "
        "registered (the JSON report's `stacks[].resources` with `custom`). *wall*: the "
        "process's, spawn to exit; *CPU*: user + system of the process and the pack (`wait4`). "
        "*start-up*: wall outside the stages before exit (interpreter start, gpudr's imports); "
        "*exit*: from the last statement to the process's end (interpreter teardown, whose "
        "final garbage collection walks every object still alive). *of which GC*: time in the "
        "cyclic garbage collector during the stages (`gc.callbacks`). *peak RSS*: the gpudr "
        "process's `ru_maxrss` plus the pack's VmHWM sampled every 20 ms; they run at the "
        "same time, so the sum bounds the peak.",
        "",
        _portfolio_table(results.rows, with_label=False),
        "",
    ]
    largest = results.sizes(AS_IS)[-1]
    lr = largest.measured.result
    parts += [
        f"Cloud pairs in the largest portfolio: {_pairs(largest.pairs)}. Plans meeting "
        f"every target: {lr['plans_meeting_targets']} of {largest.systems}; policy "
        f"violations: {lr['violations']['mandatory']} mandatory, "
        f"{lr['violations']['advisory']} advisory (synthetic plans are not tuned to pass; "
        "the work done is the same). Peak RSS of the gpudr process: "
        + ", ".join(
            f"{_mb(r.measured.result['rss_peak_mb'])} MB at {r.systems} system"
            + ("s" if r.systems != 1 else "")
            for r in results.sizes(AS_IS)
        )
        + ".",
        "",
        f"### Stage split: {_name(cal)}",
        "",
        _stage_detail(cal),
        "",
        "## Growth",
        "",
        f"Between consecutive sizes; allowed: {TARGET_GROWTH:g}x the time for 10x the "
        "resources, scaled to the measured resource ratio. The program stage alone "
        "is shown too: the total is flattered by fixed costs (start-up, first imports).",
        "",
        _table(GROWTH_HEAD, _growth(results.sizes(AS_IS))),
        "",
        "## Program overhead against a flat program",
        "",
        "One fresh process. It first runs gpudr's program over the "
        f"{_res(cal):,}-resource portfolio once (importing every SDK module it needs, and "
        "recording each stack's custom resources: type, name, inputs as the engine received "
        "them, protect, retain-on-delete), then alternates "
        f"{results.config.program_pairs} pairs of passes: gpudr's program "
        "(`offline.plan.run_design`) and the flat baseline, bench/flat_program.py run by the "
        "same `offline.run.run_stack` under the same `GpudrMocks` and recording monitor, "
        "stack by stack, the order swapped every pair. The flat program registers the same "
        "custom resources with each cloud SDK's own class (so the SDK's per-resource work, "
        "its aliases and declared outputs cost the same), with literal inputs: no "
        "ComponentResource, no Output passed between resources, no config parsing. The "
        "ratio is the median of the pairs' ratios (passes next to each other see the same "
        "machine speed, which drifts: see the min-max of repeated runs above); the times are "
        "median passes. "
        "*flat inputs identical*: every resource the flat program registered was checked "
        "against gpudr's (type, name, inputs).",
        "",
        _overhead_table(results.overhead),
        "",
        "## Import cost",
        "",
        "A fresh interpreter with `python -X importtime` running the program for the plans "
        "(no policy: the pack is its own process): the modules of each cloud SDK in "
        "`sys.modules` at the end, and the summed self time of their imports, next to the "
        "providers of the resources the program registered. `__main__.py` imports a cloud's "
        "components only for a site on that cloud; a cross-cloud pair's stacks also register "
        "resources on the other cloud (the VPN and transfer ends), so they import both SDKs.",
        "",
        _imports_table(results.imports),
        "",
    ]
    if results.cli is not None:
        parts += [
            "## One process per plan",
            "",
            "What a shell loop over plan files does today: `gpudr plan PLAN --format json -o "
            f"FILE` for each of the {results.cli.plans} plans of the {_res(cal):,}-resource "
            "portfolio, one after the other, each a new process that imports Pulumi and its "
            "clouds' SDKs and starts its own policy pack. The targets are judged in one "
            "process (above); this is what a user pays who loops in a shell instead.",
            "",
            _cli_table(results.cli),
            "",
        ]
    parts += [
        "## One policy pack for the portfolio (emulated by the bench)",
        "",
        "Not in gpudr: `gpudr plan` (`offline.policy.evaluate`) starts a pack process per "
        f"plan. *{SHARED}*: one pack process for the whole portfolio "
        "(`PolicyPackProcess.evaluate_stack` per stack, which is what `evaluate` does). "
        f"*{PIPELINED}*: the shared pack, with each plan's policy and rendering done by a "
        "second thread while the main thread runs the next plan's program, so the pack's "
        "work runs on the other core.",
        "",
        _portfolio_table(results.whatif, with_label=True),
        "",
        "‡ Done by the second thread while the main thread ran the next plan: these overlap "
        "the program stage and do not add up to the wall time.",
        "",
        f"Starting the policy pack alone (`PolicyPackProcess.start`: spawn, the pack's imports, "
        f"its gRPC server, the first call) takes {_s(statistics.median(results.pack_start_s))} s "
        f"(median of {len(results.pack_start_s)}, {_s(min(results.pack_start_s))}-"
        f"{_s(max(results.pack_start_s))}); `gpudr plan` pays it once per plan.",
        "",
        "Growth with one pack:",
        "",
        _table(GROWTH_HEAD, _growth(results.sizes(SHARED))),
        "",
        "## How the portfolios are made",
        "",
        f"`bench/synth.py`, seed {results.seed}: plan *i* is always the same plan, so each "
        "portfolio is a prefix of the largest. Each plan is one protected system: a primary "
        "and a DR site on one of gpudr's cloud pairs (cycling through aws->aws, gcp->gcp, "
        "azure->azure, aws->gcp, gcp->aws and azure->gcp), in regions (and, on GCP, zones) "
        "that the catalog says offer the plan's GPU, with one or two clusters, zero to two "
        "services, some or all of checkpoints, weights and datasets with varied sizes and "
        "targets, sometimes an explicit standby pattern, reserved capacity or Direct Connect. "
        "Every plan is validated by `gpudr.spec.load_plan` before it is measured. The "
        f"{results.config.target_resources:,}-resource portfolios are the first plans (or "
        "the first aws->aws plans) whose programs register at least that many custom "
        "resources, counted by the run itself.",
        "",
    ]
    return "\n".join(parts)
