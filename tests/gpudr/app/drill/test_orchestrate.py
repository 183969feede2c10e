"""The drill's orchestration against a fake of the stack interface: the order of operations,
cleanup whatever happens (a failing up, a failing stage, an exception, Ctrl-C), refusing any
stack that is not a drill's, expiry-driven cleanup, and a report that records every stage."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from functools import cache
from typing import Any

import pytest

from gpudr.app.drill import orchestrate
from gpudr.app.drill.orchestrate import Deps, cleanup_expired, latest_checkpoint, run_drill, sample
from gpudr.app.drill.probes import ObjectInfo
from gpudr.build.drill import DrillSetup, build_drill
from gpudr.contract.drill import DrillNameError, parse_ts
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.drillreport import DrillReport, to_json
from tests.conftest import EXAMPLE
from tests.gpudr.app.drill.fakes import START, Clock, CommandError, FakeProbe, FakeStacks, Obj

OUTPUTS = {
    "drill": "drill-usw2-20250131t031200z",
    "clusters": {"train": "drill-usw2-20250131t031200z-train"},
    "reader": "arn:aws:iam::123456789012:role/gpudr-drill-usw2-20250131t031200z-reader",
}


@cache
def setup() -> DrillSetup:
    return build_drill(design(load_plan(EXAMPLE)), "usw2", START)


def bucket(data_class: str) -> str:
    return next(t.bucket.name for t in setup().data if t.data_class == data_class)


def replica(**changes: Obj) -> dict[str, dict[str, Obj]]:
    """Two checkpoints (the newer one complete), a dataset and a weights version."""
    checkpoints = {
        "step-100/model.pt": Obj(b"old model" * 10, age_s=5400),
        "step-200/model.pt": Obj(b"new model" * 10, age_s=1800),
        "step-200/optim.pt": Obj(b"new optim" * 12, age_s=1790, recorded="md5"),
        "latest": Obj(b"step-200", age_s=1700),
    }
    checkpoints.update(changes)
    return {
        bucket("checkpoints"): checkpoints,
        bucket("datasets"): {"shard-0": Obj(b"rows", age_s=7200)},
        bucket("weights"): {"v1/weights": Obj(b"w", age_s=86400 * 20)},
    }


class World:
    """A drill with fakes all round; `writes` holds each report as written (JSON)."""

    def __init__(self, **stacks: Any) -> None:
        self.clock = Clock()
        self.stacks = FakeStacks(self.clock, outputs=dict(OUTPUTS), **stacks)
        self.probe = FakeProbe(setup(), self.clock, replica(), ready_after_s=1800)
        self.writes: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self.interrupted = False
        self.cleanup_started: list[str] = []

    def write(self, report: DrillReport) -> None:
        self.writes.append(json.loads(to_json(report)))

    def deps(self, **changes: Any) -> Deps:
        deps = Deps(
            stacks=self.stacks,
            probe=self.probe,
            clock=self.clock,
            sleep=self.clock.advance,
            write=self.write,
            echo=self.lines.append,
            interrupted=lambda: self.interrupted,
            on_cleanup=self.cleanup_started.append,
        )
        return replace(deps, **changes)

    def run(self, **changes: Any) -> DrillReport:
        return run_drill(setup(), self.deps(**changes))


NAME = "drill-usw2-20250131T031200Z"
CLEANUP = [("destroy", NAME), ("remove", NAME)]


def test_order_of_operations_and_a_passing_drill() -> None:
    w = World()
    report = w.run()
    assert w.stacks.calls == [
        ("create", NAME),
        ("set_config", NAME, "infrastructure"),
        ("set_tags", NAME, setup().stack_tags()),
        ("up", NAME),
        ("set_config", NAME, "capacity"),
        ("up", NAME),
        *CLEANUP,
    ]
    assert w.cleanup_started == [NAME]
    assert w.probe.signed_in == OUTPUTS  # the reader identity, from the stack's outputs
    assert report.outcome == "passed", [(s.key, s.status, s.detail) for s in report.stages]
    assert report.cleanup.destroyed and report.cleanup.removed


def test_the_report_records_every_stage_with_status_duration_and_target() -> None:
    w = World()
    report = w.run()
    final = w.writes[-1]
    assert final == json.loads(to_json(report))
    stages = {s["key"]: s for s in final["stages"]}
    assert list(stages) == ["infrastructure", "checkpoint", "capacity", "data-age"]
    for s in stages.values():
        assert s["status"] == "passed" and s["started_at"], s
    # Durations come from the injected clock: up 900 s; two listings and the reads; second up
    # 300 s then polls every 30 s until the pools are ready at START + 1800 s.
    assert stages["infrastructure"]["duration_s"] == 900
    assert stages["infrastructure"]["target_s"] == 1200
    assert stages["infrastructure"]["verdict"] == "met"
    # Capacity: from its start until the pools are ready, to the next 30 s poll.
    until_ready = 1800 - _capacity_start(final)
    assert until_ready <= stages["capacity"]["duration_s"] <= until_ready + 30
    assert stages["capacity"]["verdict"] == "met"
    ages = {d["data_class"]: d for d in final["data_age"]}
    assert ages["checkpoints"]["newest_key"] == "latest"
    assert ages["checkpoints"]["verdict"] == "met"
    assert ages["weights"]["verdict"] == "-"  # published on demand: not judged
    assert final["cleanup"]["detail"] == f"{NAME} destroyed and removed"
    assert final["finished_at"] and final["cost_measured_usd"] > 0
    # A report is written after each stage, so a killed drill still leaves one.
    assert len(w.writes) >= 4
    assert [s["status"] for s in w.writes[0]["stages"]][:2] == ["passed", "not-run"]


def _capacity_start(final: dict[str, Any]) -> float:
    return (parse_ts(final["stages"][2]["started_at"]) - START).total_seconds()


def test_checksums_are_verified_on_the_latest_checkpoint_only() -> None:
    w = World()
    report = w.run()
    ckpt = report.stage("checkpoint")
    assert ckpt.measurements["checkpoint"] == "step-200/"
    assert sorted(w.probe.reads) == ["step-200/model.pt", "step-200/optim.pt"]
    rows = {r["key"]: r for r in ckpt.measurements["verified"]}
    assert rows["step-200/model.pt"]["algorithm"] == "sha256"
    assert rows["step-200/optim.pt"]["algorithm"] == "md5"
    assert all(r["ok"] for r in rows.values())
    assert "every checksum matches" in ckpt.detail


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (Obj(b"new model" * 10, age_s=1800, corrupt=True), "sha256 differs from the recorded"),
        (Obj(b"new model" * 10, age_s=1800, recorded=None), "no recorded checksum"),
    ],
)
def test_a_failing_stage_fails_the_drill_and_it_still_cleans_up(obj: Obj, expected: str) -> None:
    w = World()
    w.probe.buckets = replica(**{"step-200/model.pt": obj})
    report = w.run()
    ckpt = report.stage("checkpoint")
    assert ckpt.status == "failed" and expected in ckpt.detail, ckpt.detail
    # The drill goes on to the other stages, then cleans up.
    assert report.stage("capacity").status == "passed"
    assert w.stacks.calls[-2:] == CLEANUP
    assert report.outcome == "failed"


def test_a_failing_up_is_cleaned_up_and_nothing_else_runs() -> None:
    w = World(fail_up={1: CommandError("code: 255\n error: creating EKS Cluster: quota\n")})
    report = w.run()
    assert w.stacks.ops() == ["create", "set_config", "set_tags", "up", "destroy", "remove"]
    infra = report.stage("infrastructure")
    assert infra.status == "failed" and infra.detail == "error: creating EKS Cluster: quota"
    assert [s.status for s in report.stages[1:]] == ["not-run"] * 3
    assert w.probe.signed_in is None
    assert report.outcome == "error"


def test_an_exception_in_the_report_writer_still_cleans_up() -> None:
    w = World()

    def broken(report: DrillReport) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        w.run(write=broken)
    assert w.stacks.calls[-2:] == CLEANUP
    assert w.stacks.existing == {}


@pytest.mark.parametrize("up", [1, 2])
def test_ctrl_c_inside_up_still_destroys_and_removes(up: int) -> None:
    w = World(fail_up={up: KeyboardInterrupt()})
    report = w.run()
    assert w.stacks.calls[-2:] == CLEANUP
    assert report.outcome == "interrupted"
    key = "infrastructure" if up == 1 else "capacity"
    assert report.stage(key).status == "interrupted"
    assert w.writes[-1]["outcome"] == "interrupted"


def test_a_command_stopped_by_ctrl_c_counts_as_an_interrupt() -> None:
    """The Pulumi CLI, sent SIGINT by the handler, exits with an error: not a stage failure."""
    w = World(fail_up={2: CommandError("error: update canceled")})
    original = w.stacks.up

    def up(name: str, on_output: Any) -> dict[str, Any]:
        if w.stacks.ups == 1:
            w.interrupted = True  # the signal arrives during the second up
        return original(name, on_output)

    w.stacks.up = up  # type: ignore[method-assign]
    report = w.run()
    assert report.stage("capacity").status == "interrupted"
    assert report.stage("data-age").status == "not-run"
    assert report.outcome == "interrupted"
    assert w.stacks.calls[-2:] == CLEANUP


def test_destroy_is_retried_and_remove_waits_for_it() -> None:
    w = World(destroy_failures=2)
    report = w.run()
    assert w.stacks.ops()[-4:] == ["destroy", "destroy", "destroy", "remove"]
    assert report.outcome == "passed"


def test_a_stack_that_cannot_be_destroyed_is_kept_for_cleanup() -> None:
    w = World(destroy_failures=5)
    report = w.run()
    assert w.stacks.ops()[-3:] == ["destroy", "destroy", "destroy"]
    assert NAME in w.stacks.existing  # not removed: cleanup can still find it
    assert report.outcome == "error"
    assert "NOT destroyed" in report.cleanup.detail
    assert "gpudr drill cleanup" in report.cleanup.detail


def test_a_non_drill_stack_is_refused_before_anything() -> None:
    w = World()
    with pytest.raises(DrillNameError, match='"llm-training-usw2" is not a drill stack'):
        run_drill(replace(setup(), stack="llm-training-usw2"), w.deps())
    assert w.stacks.calls == []
    with pytest.raises(DrillNameError):
        orchestrate._destroy_and_remove("llm-training-usw2", w.deps())
    assert w.stacks.calls == []


def test_capacity_that_never_comes_fails_the_stage_in_bounded_time() -> None:
    w = World()
    w.probe.ready_at = START.replace(year=2026)
    report = w.run()
    capacity = report.stage("capacity")
    assert capacity.status == "failed", capacity.detail
    assert "not every pool reached its test size within 2h30m" in capacity.detail
    assert "train: 0 of 1" in capacity.detail
    target = setup().stage("capacity").target_s or 0
    assert capacity.duration_s is not None and capacity.duration_s <= 1.5 * target + 400
    assert w.stacks.calls[-2:] == CLEANUP


def test_the_readers_fresh_grants_are_waited_for() -> None:
    w = World()
    w.probe.fail_list = 2  # AccessDenied twice: IAM still propagating
    report = w.run()
    assert report.stage("checkpoint").status == "passed"


def test_an_empty_replica_fails_checkpoint_and_data_age() -> None:
    w = World()
    w.probe.buckets = {}
    report = w.run()
    assert "holds no object" in report.stage("checkpoint").detail
    assert [d.verdict for d in report.data_age] == ["missed", "missed", "-"]
    assert report.outcome == "failed"


def test_the_report_says_when_no_operator_could_act_as_the_reader() -> None:
    report = World().run()
    (note,) = [n for n in report.notes if "No operator" in n]
    assert "declared no reader role" in note and "operator's own credentials" in note
    known = replace(
        setup(),
        drill=replace(setup().drill, operator="arn:aws:iam::123456789012:user/alice"),
    )
    w = World()
    assert not [n for n in run_drill(known, w.deps()).notes if "No operator" in n]


# --- cleanup of expired drills ------------------------------------------------------------------


def test_cleanup_removes_only_expired_drill_stacks() -> None:
    clock = Clock()
    stacks = FakeStacks(
        clock,
        existing={
            "llm-training-usw2": {"gpudr:expires-at": "20000101T000000Z"},  # never touched
            "drill-usw2-20250131T000000Z": {"gpudr:expires-at": "20250131T020000Z"},
            "drill-usw2-20250131T030000Z": {"gpudr:expires-at": "20250131T070000Z"},
            "drill-use4-20250129T000000Z": {},  # no tag: its name + 24 h has passed
            "drill-use4-20250131T000000Z": {},  # no tag: created 3 h ago, may still run
        },
    )
    deps = Deps(stacks=stacks, clock=clock, sleep=clock.advance)
    dry = cleanup_expired(deps, dry_run=True)
    assert stacks.calls == []
    assert {r.stack: r.action for r in dry} == {
        "drill-use4-20250129T000000Z": "would destroy",
        "drill-use4-20250131T000000Z": "kept",
        "drill-usw2-20250131T000000Z": "would destroy",
        "drill-usw2-20250131T030000Z": "kept",
    }
    done = cleanup_expired(deps)
    assert stacks.calls == [
        ("destroy", "drill-use4-20250129T000000Z"),
        ("remove", "drill-use4-20250129T000000Z"),
        ("destroy", "drill-usw2-20250131T000000Z"),
        ("remove", "drill-usw2-20250131T000000Z"),
    ]
    assert sorted(stacks.existing) == [
        "drill-use4-20250131T000000Z",
        "drill-usw2-20250131T030000Z",
        "llm-training-usw2",
    ]
    sources = {r.stack: r.source for r in done}
    assert sources["drill-usw2-20250131T000000Z"] == "stack tag gpudr:expires-at"
    assert "longest TTL" in sources["drill-use4-20250129T000000Z"]


def test_a_sites_cleanup_touches_only_that_sites_drills() -> None:
    clock = Clock()
    stacks = FakeStacks(
        clock,
        existing={
            "drill-usw2-20250129T000000Z": {},
            "drill-use4-20250129T000000Z": {},
            "drill-usw2-99999999T999999Z": {},  # the site's, though its time is no time
            "drill-usw-20250129T000000Z": {},  # a prefix of the site's name is another site
        },
    )
    deps = Deps(stacks=stacks, clock=clock, sleep=clock.advance)
    done = cleanup_expired(deps, site="usw2")
    assert {r.stack: r.action for r in done} == {
        "drill-usw2-20250129T000000Z": "destroyed",
        "drill-usw2-99999999T999999Z": "skipped",
    }
    assert sorted(stacks.existing) == [
        "drill-use4-20250129T000000Z",
        "drill-usw-20250129T000000Z",
        "drill-usw2-99999999T999999Z",
    ]


@pytest.mark.parametrize("cancel_fails", [False, True])
def test_cleanup_cancels_the_killed_update_holding_an_expired_drill(cancel_fails: bool) -> None:
    # A runner's timeout killed the drill mid-update: its stack stays locked until cancelled.
    clock = Clock()
    name = "drill-usw2-20250129T000000Z"
    stacks = FakeStacks(clock, locked=True, cancel_fails=cancel_fails, existing={name: {}})
    said: list[str] = []
    deps = Deps(stacks=stacks, clock=clock, sleep=clock.advance, echo=said.append)
    (result,) = cleanup_expired(deps)
    if cancel_fails:
        assert result.action == "failed"
        assert stacks.ops() == ["destroy", "cancel", "destroy", "destroy"]  # cancelled once
        assert any(".pulumi/locks/" in line for line in said)
    else:
        assert result.action == "destroyed"
        assert stacks.ops() == ["destroy", "cancel", "destroy", "remove"]


def test_a_running_drill_never_cancels_an_update_on_its_own_stack() -> None:
    clock = Clock()
    stacks = FakeStacks(clock, locked=True)
    stacks.fail_up = {1: RuntimeError("the cloud said no")}
    report = run_drill(
        setup(),
        Deps(
            stacks=stacks,
            probe=FakeProbe(setup(), clock, replica()),
            clock=clock,
            sleep=clock.advance,
        ),
    )
    assert "cancel" not in stacks.ops() and not report.cleanup.destroyed


def test_cleanup_reports_a_failed_destroy() -> None:
    clock = Clock()
    stacks = FakeStacks(clock, destroy_failures=9, existing={"drill-usw2-20250130T000000Z": {}})
    (result,) = cleanup_expired(Deps(stacks=stacks, clock=clock, sleep=clock.advance))
    assert result.action == "failed" and "NOT destroyed" in result.detail
    assert "drill-usw2-20250130T000000Z" in stacks.existing


def test_a_malformed_drill_name_is_skipped_and_reported_and_the_others_cleaned() -> None:
    clock = Clock()
    bad = "drill-aa-99999999T999999Z"  # sorts first: it used to stop cleanup before any destroy
    stacks = FakeStacks(clock, existing={bad: {}, "drill-usw2-20250129T000000Z": {}})
    results = cleanup_expired(Deps(stacks=stacks, clock=clock, sleep=clock.advance))
    assert [(r.stack, r.action) for r in results] == [
        (bad, "skipped"),
        ("drill-usw2-20250129T000000Z", "destroyed"),
    ]
    assert "is not a real UTC time" in results[0].detail
    assert f"`pulumi destroy -s {bad}`" in results[0].detail
    assert stacks.calls == [
        ("destroy", "drill-usw2-20250129T000000Z"),
        ("remove", "drill-usw2-20250129T000000Z"),
    ]


@pytest.mark.parametrize("bad", ["drill-usw2-20990101T000000Z", "drill-usw2-99991231T235959Z"])
def test_a_drill_dated_in_the_future_is_skipped_not_kept(bad: str) -> None:
    # Kept, it would live until its name's time + 24 h: 2099, or an overflow every day.
    clock = Clock()
    stacks = FakeStacks(clock, existing={bad: {}})
    (result,) = cleanup_expired(Deps(stacks=stacks, clock=clock, sleep=clock.advance))
    assert (result.action, stacks.calls) == ("skipped", [])
    assert f"`pulumi destroy -s {bad}`" in result.detail


def test_an_unexpected_error_on_one_stack_is_that_stacks_result() -> None:
    clock = Clock()
    first, second = "drill-use4-20250129T000000Z", "drill-usw2-20250129T000000Z"
    stacks = FakeStacks(clock, destroy_failures=1, existing={first: {}, second: {}})

    def echo(_line: str) -> None:
        raise BrokenPipeError(32, "Broken pipe")  # e.g. the terminal went away

    results = cleanup_expired(Deps(stacks=stacks, clock=clock, sleep=clock.advance, echo=echo))
    assert [(r.stack, r.action) for r in results] == [(first, "failed"), (second, "destroyed")]
    assert "BrokenPipeError" in results[0].detail and "may still bill" in results[0].detail
    assert second not in stacks.existing


def test_a_tags_error_falls_back_to_the_names_time() -> None:
    clock = Clock()
    stacks = FakeStacks(clock, existing={"drill-usw2-20250129T000000Z": {}})

    def tags(_name: str) -> dict[str, str]:
        raise RuntimeError("the backend said no")

    stacks.tags = tags  # type: ignore[method-assign]
    (result,) = cleanup_expired(Deps(stacks=stacks, clock=clock, sleep=clock.advance))
    assert result.action == "destroyed" and "longest TTL" in result.source


# --- pure helpers -------------------------------------------------------------------------------


def info(key: str, size: int, age: float) -> ObjectInfo:
    return ObjectInfo(key, size, START - timedelta(seconds=age))


def test_latest_checkpoint_is_the_folder_of_the_newest_object() -> None:
    objects = [info("a/1", 1, 50), info("b/1", 1, 10), info("b/2", 1, 20), info("top", 1, 1)]
    assert latest_checkpoint(objects) == ("b/", [objects[1], objects[2]])
    flat = [info("x", 1, 5), info("y", 1, 1)]
    assert latest_checkpoint(flat) == ("", flat)


def test_sample_fits_the_budget_and_takes_at_least_one() -> None:
    objects = [info("a", 5, 0), info("b", 10, 0), info("c", 3, 0)]
    assert [o.key for o in sample(objects, 9)] == ["a", "c"]
    assert [o.key for o in sample(objects, 1)] == ["c"]
    assert [o.key for o in sample(objects, 100)] == ["a", "b", "c"]
