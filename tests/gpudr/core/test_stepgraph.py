"""gpudr.core.stepgraph: the runbook's steps for a site pair, computed from the design alone
(keys, phases, order, dependencies, numbers, expected durations), as the runbook and the drill
read them."""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpudr.build.stackconfig import build_site_configs
from gpudr.core.design import Design, design
from gpudr.core.spec import load_plan, parse_plan
from gpudr.core.stepgraph import PHASES, pair_facts, step_graph
from gpudr.docs.runbook import build_runbook
from tests.conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def _variant(**dr: Any) -> Design:
    raw = copy.deepcopy(yaml.safe_load((ROOT / "examples" / "aws-two-region.yaml").read_text()))
    raw["sites"]["usw2"].update(dr)
    return design(parse_plan(raw))


def _designs() -> list[Design]:
    return [design(load_plan(p)) for p in EXAMPLES] + [
        _variant(pattern="backup-restore"),
        _variant(pattern="warm-standby"),
    ]


@pytest.fixture(scope="module", params=EXAMPLES, ids=lambda p: p.stem)
def example(request: pytest.FixtureRequest) -> Design:
    path: Path = request.param
    return design(load_plan(path))


def test_the_runbook_is_the_graph_worded(example: Design) -> None:
    for primary, dr in example.plan.pairs():
        graph = step_graph(example, primary.name, dr.name)
        rb = build_runbook(example, primary.name, dr.name)
        assert [
            (n.number, n.key, n.phase, n.after, n.parallel_with, n.expected_s, n.basis)
            for n in graph.steps
        ] == [
            (s.number, s.key, s.phase, s.after, s.parallel_with, s.expected_s, s.basis)
            for s in rb.steps
        ]
        assert graph.critical_path == rb.critical_path
        assert graph.recovery_s == rb.expected_recovery_s
        for n in graph.steps:
            if n.title is not None:
                assert rb.step(n.key).title == n.title


def test_numbers_phases_and_dependencies_are_consistent() -> None:
    for d in _designs():
        for primary, dr in d.plan.pairs():
            graph = step_graph(d, primary.name, dr.name)
            assert [n.number for n in graph.steps] == list(range(1, len(graph.steps) + 1))
            phases = [PHASES.index(n.phase) for n in graph.steps]
            assert phases == sorted(phases)
            for n in graph.steps:
                assert all(a < n.number for a in n.after), n.key
                assert n.number not in n.parallel_with
                assert graph.step(n.key) is n
            # The headline estimate is the slowest workload's stages, each tied to its step.
            assert sum(s for _, s in graph.critical_path) == pytest.approx(graph.recovery_s)
            assert graph.critical_path[0] == (
                graph.step("declare").number,
                d.plan.recovery.detection_s,
            )


def test_the_drill_lists_the_steps_it_cannot_run_by_the_graphs_titles() -> None:
    for d in _designs():
        for primary, dr in d.plan.pairs():
            for n in step_graph(d, primary.name, dr.name).steps:
                assert (n.title is not None) == (n.kind in ("training", "service", "traffic"))


def test_standing_control_planes_are_the_stack_configs() -> None:
    """The graph decides from the design alone whether there is a DR cluster to reach before a
    failover (step "kubectl"); the stack config builds the clusters by the same rule."""
    for d in _designs():
        configs = build_site_configs(d)
        for primary, dr in d.plan.pairs():
            facts = pair_facts(d, primary.name, dr.name)
            standing = [c.name for c in configs[dr.name].clusters if c.standby_control_plane]
            assert sorted(facts.standing_clusters) == sorted(standing)
            graph = step_graph(d, primary.name, dr.name)
            assert (graph.find("kubectl") is not None) == bool(standing)


def test_a_pair_that_is_not_one_is_refused() -> None:
    d = design(load_plan(ROOT / "examples" / "aws-two-region.yaml"))
    with pytest.raises(ValueError, match="not a DR site"):
        step_graph(d, "usw2", "use1")
    with pytest.raises(KeyError, match="no runbook step"):
        step_graph(d, "use1", "usw2").step("no-such-step")


def test_the_graph_needs_the_design_only() -> None:
    """No words, no templates, no stack config: the planner can read the same graph."""
    tree = ast.parse((ROOT / "gpudr" / "core" / "stepgraph.py").read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert {m for m in imported if m.startswith("gpudr")} <= {
        "gpudr.core",  # sizing: the failover's timed steps and their critical path
        "gpudr.core.design",
        "gpudr.core.enums",
        "gpudr.core.units",
    }
    assert "jinja2" not in imported
