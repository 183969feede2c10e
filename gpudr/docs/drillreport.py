"""A drill's report: what each stage measured against the plan, the data age per class, each
pool's RTO with the measured stages in it, the cost and the cleanup; as JSON and as markdown
(`templates/drill-report.md.j2`). Written by `gpudr.app.drill.orchestrate` after every stage.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from gpudr.build.drill import DrillSetup, Stage
from gpudr.contract.drill import iso
from gpudr.core.units import fmt_size
from gpudr.docs.templating import environment

TEMPLATE = "drill-report.md.j2"

# --- the report -----------------------------------------------------------------------------------


@dataclass
class StageResult:
    key: str
    title: str
    target_s: float | None
    basis: str
    runbook_step: int | None = None
    # not-run | running | passed | failed | interrupted | skipped (the plan gives it nothing)
    status: str = "not-run"
    started_at: str | None = None
    duration_s: float | None = None
    detail: str = ""
    measurements: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """`met`, `missed` or `-` (nothing to judge)."""
        if self.status == "failed":
            return "missed"
        if self.status != "passed" or self.target_s is None or self.duration_s is None:
            return "-"
        return "met" if self.duration_s <= self.target_s else "missed"


@dataclass
class DataAge:
    data_class: str
    bucket: str
    rpo_s: float | None
    estimated_rpo_s: float | None
    judged: bool
    newest_key: str | None = None
    newest_at: str | None = None
    age_s: float | None = None
    objects: int = 0
    detail: str = ""

    @property
    def verdict(self) -> str:
        if not self.judged or self.rpo_s is None:
            return "-"
        if self.age_s is None:
            return "missed"
        return "met" if self.age_s <= self.rpo_s else "missed"


@dataclass
class WorkloadRto:
    name: str
    pattern: str
    rto_s: float | None
    estimated_s: float  # the plan's estimate
    measured_s: float  # the plan's estimate with the drill's measured stages in it
    measured_stages: list[str]

    @property
    def verdict(self) -> str:
        if self.rto_s is None:
            return "-"
        return "met" if self.measured_s <= self.rto_s else "missed"


@dataclass
class Cleanup:
    destroyed: bool = False
    removed: bool = False
    duration_s: float | None = None
    detail: str = "not started"


@dataclass
class DrillReport:
    plan: str
    site: str
    cloud: str
    region: str
    stack: str
    drill_id: str
    started_at: str
    expires_at: str
    ttl_s: int
    stages: list[StageResult]
    not_run: list[StageResult]
    data_age: list[DataAge]
    cost_ttl_usd: float
    cost_lines: list[dict[str, Any]]
    unpriced: list[str]
    finished_at: str | None = None
    outcome: str = "running"  # passed | failed | error | interrupted
    workloads: list[WorkloadRto] = field(default_factory=list)
    cost_measured_usd: float | None = None
    cleanup: Cleanup = field(default_factory=Cleanup)
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)

    def stage(self, key: str) -> StageResult:
        return next(s for s in self.stages if s.key == key)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for s, raw in zip(self.stages, out["stages"], strict=True):
            raw["verdict"] = s.verdict
        for d, raw in zip(self.data_age, out["data_age"], strict=True):
            raw["verdict"] = d.verdict
        for w, raw in zip(self.workloads, out["workloads"], strict=True):
            raw["verdict"] = w.verdict
        finite: dict[str, Any] = _finite(out)
        return finite


def new_report(setup: DrillSetup, now: datetime) -> DrillReport:
    def result(s: Stage) -> StageResult:
        return StageResult(
            s.key,
            s.title,
            s.target_s,
            s.basis,
            s.runbook_step,
            status="not-run" if s.runs else "skipped",
            detail="" if s.runs else s.basis,
        )

    return DrillReport(
        plan=setup.plan,
        site=setup.site.site,
        cloud=setup.site.cloud,
        region=setup.site.region,
        stack=setup.stack,
        drill_id=setup.id,
        started_at=iso(now),
        expires_at=setup.drill.expires_at,
        ttl_s=setup.drill.ttl_s,
        stages=[result(s) for s in setup.stages],
        not_run=[result(s) for s in setup.not_run],
        data_age=[
            DataAge(
                data_class=t.data_class,
                bucket=t.bucket.name,
                rpo_s=t.rpo_s,
                estimated_rpo_s=t.estimated_rpo_s,
                judged=t.judged,
            )
            for t in setup.data
        ],
        cost_ttl_usd=setup.cost.ttl_usd,
        cost_lines=[
            {**asdict(x), "hourly_usd": x.amount_usd, "ttl_usd": x.amount_usd * setup.cost.hours}
            for x in setup.cost.lines
        ],
        unpriced=list(setup.cost.unpriced),
    )


def workload_rtos(setup: DrillSetup, report: DrillReport) -> list[WorkloadRto]:
    """Each DR pool's RTO with the stages a drill measures put in place of the plan's: the
    control plane's creation (backup/restore only: the other patterns have it standing) and GPU
    capacity from zero (pilot light and backup/restore: warm standby and active-active scale
    from a standing floor, which a drill does not rehearse). The rest stays the plan's."""
    infra = report.stage("infrastructure")
    capacity = report.stage("capacity")
    out = []
    for w in setup.workloads:
        stages = dict(w.stages)
        measured: list[str] = []
        if w.pattern == "backup-restore" and infra.status == "passed" and infra.duration_s:
            stages["infrastructure"] = infra.duration_s
            measured.append("infrastructure")
        if (
            w.pattern in ("pilot-light", "backup-restore")
            and capacity.status == "passed"
            and capacity.duration_s is not None
        ):
            stages["capacity"] = capacity.duration_s
            measured.append("capacity")
        out.append(
            WorkloadRto(
                name=w.name,
                pattern=w.pattern,
                rto_s=w.rto_s,
                estimated_s=float(sum(w.stages.values())),
                measured_s=float(sum(stages.values())),
                measured_stages=measured,
            )
        )
    return out


def outcome(report: DrillReport) -> str:
    """`error` (the environment or its cleanup failed), `interrupted`, `failed` (a stage failed
    or a target was missed) or `passed`."""
    if not (report.cleanup.destroyed and report.cleanup.removed):
        return "error"
    if report.stage("infrastructure").status == "failed":
        return "error"
    if report.interrupted or any(s.status == "interrupted" for s in report.stages):
        return "interrupted"
    if any(s.status in ("not-run", "running") for s in report.stages):
        return "error"  # the drill ended before a stage it should have run
    missed = (
        any(s.status == "failed" or s.verdict == "missed" for s in report.stages)
        or any(d.verdict == "missed" for d in report.data_age)
        or any(w.verdict == "missed" for w in report.workloads)
    )
    return "failed" if missed else "passed"


def to_json(report: DrillReport) -> str:
    return json.dumps(report.to_dict(), indent=2, sort_keys=False) + "\n"


def to_markdown(report: DrillReport) -> str:
    env = environment(trim=True)
    env.filters["usd"] = usd
    env.filters["rate"] = rate
    text = env.get_template(TEMPLATE).render(r=report, size=fmt_size)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip("\n") + "\n"


def usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def rate(value: float) -> str:
    """An hourly unit price: cents are not enough for a $0.045 NAT gateway-hour."""
    if value >= 1:
        return f"${value:,.2f}"
    text = f"{value:.3f}"
    return f"${text[:-1] if text.endswith('0') else text}"


def _finite(value: Any) -> Any:
    """JSON-friendly: infinities to None."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return None
    return value
