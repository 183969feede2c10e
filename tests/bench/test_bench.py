"""The bench's plan generator, at its smallest size: plans are valid, varied and reproducible.

No timing here: `make bench` measures; this keeps the bench code from rotting and checks its
memory sampler and its growth verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.doc import (
    TARGET_CHANGED_S,
    TARGET_COLD_MB,
    _cache_section,
    _cache_targets,
    _cli_growth,
    _floor,
    _preload_section,
)
from bench.procs import TreePeak
from bench.results import (
    CALIBRATED,
    SIZE,
    CacheBench,
    ChangedPlan,
    CliRun,
    DiffRun,
    PreloadCost,
)
from bench.run import run_worker
from bench.synth import (
    PAIR_CYCLE,
    SynthPlan,
    change_size,
    pairs_of,
    plan_dict,
    plans_to_change,
    write_portfolio,
)
from gpudr.core.spec import PAIRS, load_plan


def test_smallest_portfolio_is_generated_and_validated(tmp_path: Path) -> None:
    plans, loaded = write_portfolio(tmp_path / "plans", 3)
    assert [p.path.exists() for p in plans] == [True] * 3
    # write_portfolio validated each file with gpudr.core.spec.load_plan (it raises otherwise).
    assert [p.name for p in loaded] == [p.name for p in plans]
    assert pairs_of(plans) == {"aws->aws": 1, "gcp->gcp": 1, "azure->azure": 1}
    for plan in loaded:
        assert {s.role for s in plan.sites.values()} == {"primary", "dr"}
    # Deterministic: plan i of a seed is the same document every time.
    assert plan_dict(0) == plan_dict(0)
    assert plan_dict(0, seed=1) != plan_dict(0, seed=2)


def test_pair_cycle_covers_every_supported_pair() -> None:
    assert set(PAIR_CYCLE) == set(PAIRS)


def test_tree_peak_sees_memory_of_a_process_the_measured_one_started() -> None:
    # The root starts a child that holds 150 MB: what a plan worker or the pack is to gpudr.
    child = "x = bytearray(150 * 2**20); import time; time.sleep(0.6)"
    root = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    proc = subprocess.Popen([sys.executable, "-c", root])
    sampler = TreePeak(proc.pid, pss=True)
    proc.wait()
    processes = sampler.stop()
    kinds = [kind for kind, _ in processes]
    assert kinds == ["gpudr", "worker"], processes
    assert processes[1][1] >= 150, processes  # the child's own peak
    assert processes[0][1] < 100, processes  # not the root's
    assert sampler.pss_peak_kb / 1024 >= 150


def test_tree_peak_tells_the_zygote_from_the_workers_it_forks() -> None:
    # gpudr -> zygote -> worker: the child that has a child of its own is the zygote.
    worker = "x = bytearray(120 * 2**20); import time; time.sleep(0.6)"
    zygote = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {worker!r}])"
    root = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {zygote!r}])"
    proc = subprocess.Popen([sys.executable, "-c", root])
    sampler = TreePeak(proc.pid)
    proc.wait()
    processes = sampler.stop()
    assert [kind for kind, _ in processes] == ["gpudr", "zygote", "worker"], processes
    assert processes[2][1] >= 120, processes


def _run(jobs: int | None, walls: list[float], resources: int, systems: int) -> CliRun:
    return CliRun(jobs, SIZE, systems, walls, 1.0, [("gpudr", 60.0)], 0, resources, 2, [])


def test_growth_verdict_scales_the_allowance_with_the_resources() -> None:
    small = _run(None, [1.0, 2.0, 3.0], 100, 1)  # median 2.0 s
    # 5x the resources: 6x the time allowed (12x for 10x).
    inside, outside = _run(None, [11.9], 500, 5), _run(None, [12.1], 500, 5)
    assert _cli_growth([small, inside])[0][-1] == "**met**"
    assert _cli_growth([small, outside])[0][-1] == "**missed**"


def test_checksum_bench_verifies_through_the_drills_code_and_judges_the_defaults() -> None:
    from bench import checksums as bench

    row = bench.measure("md5", 3 << 20, repeats=1)  # raises unless every object verified
    assert row.one_stream_gbps > 0 and row.streams_gbps > 0
    slow = bench.Row("md5", 0.6, 1.3)
    text = bench.render(
        [slow, bench.Row("crc32c", 0.5, 0.9), bench.Row("sha1", 0.1, 0.1)], 1, 1, "x"
    )
    assert "| md5 | Azure Blob | 0.60 GB/s | 1.30 GB/s | **met** 4 at once; one object" in text
    assert "| crc32c | Cloud Storage | 0.50 GB/s | 0.90 GB/s | **missed** |" in text
    assert "| sha1 | S3 (when the uploader asks) | 0.10 GB/s | 0.10 GB/s | - |" in text


def test_the_changed_plan_differs_in_one_size_and_still_validates(tmp_path: Path) -> None:
    plans, loaded = write_portfolio(tmp_path / "plans", 3)
    chosen = plans_to_change(plans)
    # The first plan of each pair the portfolio holds, in the cycle's order.
    assert [p.pair for p in chosen] == list(PAIR_CYCLE[:3])
    for plan, original in zip(chosen, loaded, strict=True):
        before = plan.path.read_text(encoding="utf-8")
        change = change_size(plan.path)
        after = plan.path.read_text(encoding="utf-8")
        changed = [
            (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
        ]
        assert len(changed) == 1, changed  # the size line, nothing else rewritten
        name = change.split(".")[1]  # "data.<class>.size: old -> new"
        spec, old = load_plan(plan.path).data_spec(name), original.data_spec(name)
        assert spec is not None and old is not None
        assert spec.size_b == 2 * old.size_b


def test_a_plan_without_data_is_not_changed_and_the_next_of_its_pair_is(tmp_path: Path) -> None:
    bare = tmp_path / "bare.yaml"
    doc = plan_dict(0)
    del doc["data"]
    bare.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(ValueError, match="no data class"):
        change_size(bare)
    (plan,), _ = write_portfolio(tmp_path / "plans", 1)
    first = SynthPlan(0, "bare", ("aws", "aws"), bare)
    assert plans_to_change([first, plan]) == [plan]


def _cli(walls: list[float], pss: float | None = None) -> CliRun:
    pairs = {"aws->gcp": 4, "azure->azure": 7}
    return CliRun(None, CALIBRATED, 11, walls, 8.0, [("gpudr", 60.0)], 1, 1150, 22, [], pairs, pss)


def _changed(pair: str, walls: list[float]) -> ChangedPlan:
    return ChangedPlan(pair, "000-llm-000.yaml", "data.x.size: 1TB -> 2TB", 100, walls, walls, [99])


def _cache(changed: list[ChangedPlan], cold_s: float, pss: float) -> CacheBench:
    diff = DiffRun(4.0, 0, 0, 0)
    return CacheBench(
        "23d896c",
        _cli([6.0, 6.5, 7.0], 500.0),
        _cli([cold_s], pss),
        changed,
        _cli([27.0]),
        _cli([20.0]),
        True,
        "examples/aws-two-region.yaml",
        "checkpoints `size: 2TB` -> `size: 6TB`",
        diff,
        DiffRun(2.0, 0, 0, 3),
        DiffRun(0.5, 0, 2, 2),
        True,
    )


def _line(text: str, start: str) -> str:
    found = [line for line in text.splitlines() if line.startswith(start)]
    assert len(found) == 1, (start, text)
    return found[0]


def test_issue_21_verdicts_follow_the_figures() -> None:
    at = TARGET_CHANGED_S
    # The slowest pair's median is judged: a pair just over the target misses it for all.
    fast, slow = _changed("gcp->gcp", [1.0, at, 9.0]), _changed("aws->aws", [at + 0.01])
    text = "\n".join(_cache_section(_cache([fast, slow], 5.0, TARGET_COLD_MB), 1000, 2, ""))
    assert _line(text, "| 100 systems, one plan changed, cache warm").endswith(
        f"| {at + 0.01:.2f} s (aws->aws) | at most {at:g} s on 2 cores (2 here) | **missed** |"
    )
    assert _line(text, "| gcp->gcp |").endswith(
        f"| {at:.2f} s (1.00-9.00) | {at:.2f} | 99 of 100 | **met** |"
    )
    # "At most": a figure equal to the target meets it.
    assert _line(text, "| `gpudr plan`, 1,150-resource portfolio (11 plans), cold").endswith(
        "| 6.50 s (6.00-7.00) | 5.00 s | at most 5 s | **met** |"
    )
    assert _line(text, "| ... its peak summed PSS").endswith(
        "| 500 MB | 600 MB | at most 600 MB | **met** |"
    )
    assert _line(text, "| `gpudr diff`").endswith("| 4.00 s | 2.00 s | - | 2.00x faster |")
    assert _line(text, "| ... warm").startswith("| ... warm (the same diff again: 2 of 2 sides")
    over = "\n".join(_cache_section(_cache([fast], 5.01, TARGET_COLD_MB + 1), 1000, 2, ""))
    assert _line(over, "| 100 systems, one plan changed, cache warm").endswith("| **met** |")
    assert _line(over, "| `gpudr plan`, 1,150").endswith("| 5.01 s | at most 5 s | **missed** |")
    assert _line(over, "| ... its peak summed PSS").endswith(
        "| 601 MB | at most 600 MB | **missed** |"
    )
    # The Targets table's rows judge the same figures.
    changed, cold, memory = _cache_targets(_cache([fast], 5.01, TARGET_COLD_MB + 1))
    assert (
        changed[0].startswith("issue 21: 100 systems, one plan changed") and changed[2] == "**met**"
    )
    assert cold[0] == "issue 21: 1,150-resource portfolio on aws, gcp and azure, cold: at most 5 s"
    assert cold[1:] == ["5.01 s, 11 plans, a fresh cache each run", "**missed**"]
    assert memory[1:] == ["601 MB at once (summed PSS)", "**missed**"]


def test_the_floor_is_the_work_spread_over_the_cores() -> None:
    cache = _cache([_changed("aws->aws", [1.0])], 5.01, TARGET_COLD_MB)
    text = _floor(cache, work=8.0, sdk_import=2.0, cores=2)
    assert "8.00 s of work" in text and "spread perfectly over 2 cores, 4.00 s" in text
    assert f"**missed** at 5.01 s) used {cache.cold_after.cpu_s:.2f} s of CPU" in text
    assert "imported once (2.00 s), by the process the workers are forked from" in text
    assert "(met at" in _floor(_cache([_changed("aws->aws", [1.0])], 5.0, 1), 8.0, 2.0, 2)


def test_the_zygotes_imports_are_measured_with_the_collector_on_and_off(tmp_path: Path) -> None:
    found = {
        collector: run_worker(
            {"kind": "preload", "clouds": ["aws"], "collector": collector}, tmp_path
        ).result
        for collector in (True, False)
    }
    for result in found.values():
        cumulative = result["cumulative_cpu_s"]
        assert list(cumulative) == ["pulumi", "aws"]
        assert 0 < cumulative["pulumi"] < cumulative["aws"]
    # Off from the start of the imports: only the interpreter's own start-up collected.
    assert found[False]["collections"] < found[True]["collections"]
    cost = PreloadCost(
        ["aws"],
        1,
        found[True]["cumulative_cpu_s"],
        found[False]["cumulative_cpu_s"],
        found[True]["collections"],
        found[False]["collections"],
    )
    table = "\n".join(_preload_section(cost))
    assert f"| + aws | {cost.on_s:.2f} | {cost.off_s:.2f} |" in table
    assert f"imports in {cost.off_s:.2f} s instead of {cost.on_s:.2f} s" in table
