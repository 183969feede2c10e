"""planrun.run_designs hands each report on as soon as it is made, while other plans still run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gpudr.app import planrun


class _Workers:
    """Two plans' results, one at a time; records when each is pulled."""

    in_process = True
    jobs = 1

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def run(self, designs: Any, sites: Any = None, on_stack: Any = None) -> Iterator[Any]:
        for index in range(len(designs)):
            self.events.append(f"plan {index} done")
            yield index, [{"name": f"stack-{index}"}]


def test_a_report_is_handed_on_before_the_next_plan_finishes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def report(des: Any, stacks: list[dict[str, Any]]) -> dict[str, Any]:
        return {"plan": {"source": des}, "stacks": stacks}

    monkeypatch.setattr(planrun, "build_report", report)
    events: list[str] = []
    reports = planrun.run_designs(
        ["a.yaml", "b.yaml"],  # type: ignore[list-item]  # only passed to build_report here
        _Workers(events),  # type: ignore[arg-type]
        None,
        None,  # no pack: a report is made as soon as its plan's stacks are in
        on_report=lambda index, r: events.append(f"report {index} stored"),
    )
    assert events == ["plan 0 done", "report 0 stored", "plan 1 done", "report 1 stored"]
    assert [r.source for r in reports] == ["a.yaml", "b.yaml"]
