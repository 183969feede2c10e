"""The example's drill, shared by the drill tests of each layer (contract, build, docs)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache

from gpudr.build import drill as bd
from gpudr.core.design import Design, design
from gpudr.core.spec import load_plan
from gpudr.docs import drillreport as dr
from tests.conftest import EXAMPLE

NOW = datetime(2025, 1, 31, 3, 12, 0, tzinfo=UTC)


@cache
def example_design() -> Design:
    return design(load_plan(EXAMPLE))


@cache
def setup() -> bd.DrillSetup:
    """A drill of the example's DR site, usw2, starting at NOW."""
    return bd.build_drill(example_design(), "usw2", NOW)


def finished_report() -> dr.DrillReport:
    """A report of that drill once every stage passed and the stack is gone."""
    s = setup()
    report = dr.new_report(s, NOW)
    for key, seconds in (("infrastructure", 900), ("checkpoint", 120), ("capacity", 7200)):
        stage = report.stage(key)
        stage.status, stage.duration_s, stage.detail = "passed", float(seconds), "ok | fine"
    report.stage("data-age").status = "passed"
    report.stage("data-age").duration_s = 5.0
    for row, age in zip(report.data_age, (1800.0, 7200.0, 86400.0 * 30), strict=True):
        row.age_s = age
    report.cleanup = dr.Cleanup(True, True, 600.0, "destroyed and removed")
    report.workloads = dr.workload_rtos(s, report)
    report.outcome = dr.outcome(report)
    return report
