"""The bench's plan generator, at its smallest size: plans are valid, varied and reproducible.

No timing here: `make bench` measures; this only keeps the bench code from rotting."""

from __future__ import annotations

from pathlib import Path

from bench.synth import PAIR_CYCLE, pairs_of, plan_dict, write_portfolio
from gpudr.spec import PAIRS


def test_smallest_portfolio_is_generated_and_validated(tmp_path: Path) -> None:
    plans, loaded = write_portfolio(tmp_path / "plans", 3)
    assert [p.path.exists() for p in plans] == [True] * 3
    # write_portfolio validated each file with gpudr.spec.load_plan (it raises otherwise).
    assert [p.name for p in loaded] == [p.name for p in plans]
    assert pairs_of(plans) == {"aws->aws": 1, "gcp->gcp": 1, "azure->azure": 1}
    for plan in loaded:
        assert {s.role for s in plan.sites.values()} == {"primary", "dr"}
    # Deterministic: plan i of a seed is the same document every time.
    assert plan_dict(0) == plan_dict(0)
    assert plan_dict(0, seed=1) != plan_dict(0, seed=2)


def test_pair_cycle_covers_every_supported_pair() -> None:
    assert set(PAIR_CYCLE) == set(PAIRS)
