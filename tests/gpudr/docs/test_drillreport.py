"""The drill report: stage verdicts, the measured RTO per pool, the outcome, JSON and markdown."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpudr.docs import drillreport as dr
from tests.gpudr.drills import finished_report, setup


def test_verdicts_measured_rto_and_outcome() -> None:
    report = finished_report()
    assert [s.verdict for s in report.stages] == ["met", "met", "missed", "-"]
    assert [r.verdict for r in report.data_age] == ["met", "met", "-"]
    train = next(w for w in report.workloads if w.name == "cluster-train")
    # Pilot light: the measured capacity (2 h) replaces the plan's 1h40m.
    assert train.measured_stages == ["capacity"]
    assert train.measured_s == pytest.approx(train.estimated_s + 7200 - 6000)
    chat = next(w for w in report.workloads if w.name == "svc-chat")
    assert chat.measured_stages == [] and chat.measured_s == chat.estimated_s
    assert report.outcome == "failed"  # capacity missed its target


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda r: None, "failed"),
        (lambda r: setattr(r.cleanup, "removed", False), "error"),
        (lambda r: setattr(r.stage("infrastructure"), "status", "failed"), "error"),
        (lambda r: setattr(r, "interrupted", True), "interrupted"),
        (lambda r: setattr(r.stage("capacity"), "duration_s", 60.0), "passed"),
        (lambda r: setattr(r.stage("capacity"), "status", "not-run"), "error"),
    ],
)
def test_outcome(change: Any, expected: str) -> None:
    report = finished_report()
    change(report)
    report.workloads = dr.workload_rtos(setup(), report)
    assert dr.outcome(report) == expected


def test_json_and_markdown_record_every_stage() -> None:
    report = finished_report()
    data = json.loads(dr.to_json(report))
    assert [s["key"] for s in data["stages"]] == [s.key for s in setup().stages]
    for s in data["stages"]:
        assert {"status", "duration_s", "target_s", "verdict", "basis", "detail"} <= s.keys()
    assert data["cleanup"] == {
        "destroyed": True,
        "removed": True,
        "duration_s": 600.0,
        "detail": "destroyed and removed",
    }
    text = dr.to_markdown(report)
    assert text.startswith("# DR drill drill-usw2-20250131t031200z: FAILED")
    for key in ("infrastructure", "checkpoint", "capacity", "data-age"):
        assert f"| {key} |" in text
    assert "| capacity | " in text and "| missed |" in text
    assert "ok / fine" in text  # a table cell never breaks the table
    assert "At most $440.92" in text  # 4 h of the drill, its NAT's public IPv4 address included
    assert "Destroyed, removed in 10m" in text
