"""The bench's plan generator, at its smallest size: plans are valid, varied and reproducible.

No timing here: `make bench` measures; this keeps the bench code from rotting and checks its
memory sampler and its growth verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.doc import _cli_growth
from bench.procs import TreePeak
from bench.results import SIZE, CliRun
from bench.synth import PAIR_CYCLE, pairs_of, plan_dict, write_portfolio
from gpudr.core.spec import PAIRS


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
