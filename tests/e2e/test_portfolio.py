"""`gpudr plan A.yaml B.yaml ...`: several plans on worker processes with one policy pack."""

from __future__ import annotations

import gc
import json
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gpudr.app.cli import main
from gpudr.app.offline import plan as offline_plan
from gpudr.app.offline import portfolio, preload
from gpudr.app.offline.policy import PackSession, PolicyPackError, PolicyPackProcess
from gpudr.app.offline.portfolio import PlanRunError, Workers, load_order, run_order
from gpudr.core.design import design
from gpudr.core.enums import Cloud
from gpudr.core.spec import load_plan
from tests.conftest import EXAMPLE, PACK_CONFIG, ROOT

GCP = ROOT / "examples" / "gcp-two-region.yaml"
AZURE = ROOT / "examples" / "azure-two-region.yaml"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def singles() -> dict[str, dict[str, Any]]:
    """Each plan's report from `gpudr plan PLAN` alone."""
    out = {}
    for path in (EXAMPLE, GCP, AZURE):
        result = CliRunner().invoke(main, ["plan", str(path), "--format", "json"])
        assert result.exit_code == 0, result.output
        out[str(path)] = json.loads(result.output)
    return out


@pytest.mark.parametrize("jobs", ["1", "2", "3"])
def test_a_portfolio_reports_each_plan_as_gpudr_plan_does_alone(
    singles: dict[str, dict[str, Any]], jobs: str
) -> None:
    paths = [str(EXAMPLE), str(GCP), str(AZURE)]
    result = invoke("plan", *paths, "--format", "json", "--jobs", jobs)
    assert result.exit_code == 0, result.output
    portfolio = json.loads(result.output)
    assert portfolio["meets"] is True
    assert portfolio["policy_ok"] is True
    # In the order given, whichever finished first; each exactly as run alone, policy included.
    assert [r["plan"]["source"] for r in portfolio["plans"]] == paths
    for r in portfolio["plans"]:
        assert r == singles[r["plan"]["source"]], r["plan"]["source"]


def test_two_runs_of_a_plan_are_identical() -> None:
    # The SDK gathers dependencies from sets: unsorted, their order changed between runs.
    first = invoke("plan", str(EXAMPLE), "--format", "json")
    second = invoke("plan", str(EXAMPLE), "--format", "json", "--jobs", "2")
    assert first.output == second.output


def test_text_and_markdown_end_and_start_with_the_portfolio(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw.pop("quotas")  # the checkpoint stream overruns the default RTC rate: not met
    short = tmp_path / "short.yaml"
    raw["name"] = "short"
    short.write_text(yaml.safe_dump(raw))
    text = invoke("plan", str(EXAMPLE), str(short))
    assert text.exit_code == 1  # the worst of the plans
    tail = text.output[text.output.index("Portfolio") :]
    assert "llm-training" in tail and "short" in tail
    assert "NOT MET: checkpoints, datasets" in tail
    # replication-meets-rpo refuses the 2 overrun streams, and dr-tags-verified each of the 6
    # data buckets: the short-* stacks are in no site_roles entry of the examples' config.
    assert "8 mandatory, 0 advisory" in tail
    # Both plans' training clusters are pilot light without reserved GPUs: met only if
    # on-demand capacity is found at failover (docs/sizing.md, capacity model).
    assert tail.rstrip().endswith(
        "2 plans: targets NOT MET in short. Met only if on-demand GPU capacity is found in "
        "llm-training, short. The policy pack refuses short."
    )
    md = invoke("plan", str(EXAMPLE), str(short), "--format", "markdown")
    assert md.output.startswith("# gpudr plan: portfolio\n\n2 plans: targets NOT MET in short.")
    assert md.output.index("| short |") < md.output.index("# gpudr plan: llm-training")


def test_every_plan_is_checked_before_anything_runs(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["data"]["checkpoints"]["rpo"] = "4 hours"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), str(bad), str(tmp_path / "gone.yaml")])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert any("data.checkpoints.rpo" in line for line in lines), lines
    assert any("gone.yaml" in line for line in lines), lines
    assert lines[-1] == "gpudr: 2 of 3 plans have problems; nothing was run"
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--stack", "use1", str(GCP)], "--stack needs exactly one PLAN.yaml; 2 were given"),
        ([str(EXAMPLE)], "given more than once; give each plan once"),
        (["--jobs", "0"], "--jobs"),
    ],
)
def test_bad_options_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_plans_that_share_a_stack_name_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "copy.yaml"
    copy.write_text(EXAMPLE.read_text())
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), str(copy)])
    assert result.exit_code == 2
    assert 'both have stack "llm-training-use1"; give the plans different names' in result.stderr


def _failing_for(name: str, how: str) -> Any:
    real = offline_plan.run_design

    def run_design(des: Any, *args: Any, **kwargs: Any) -> Any:
        if des.plan.name == name:
            if how == "die":
                os._exit(7)
            raise offline_plan.ProgramError(f"stack {name}-x: ValueError: broken on purpose")
        return real(des, *args, **kwargs)

    return run_design


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failing_program_names_its_plan_and_exits_3(
    monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    # Forked workers inherit the patched module, as they inherit every import.
    monkeypatch.setattr(offline_plan, "run_design", _failing_for("vision-models", "raise"))
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), str(GCP), "--jobs", str(jobs)])
    assert result.exit_code == 3
    assert result.stderr == (
        f"gpudr: plan vision-models ({GCP}): stack vision-models-x: ValueError: broken on purpose\n"
    )


def _children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    return [int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()]


def test_a_worker_that_dies_is_reported_and_the_others_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(offline_plan, "run_design", _failing_for("vision-models", "die"))
    designs = [design(load_plan(p)) for p in (EXAMPLE, GCP, AZURE)]
    with Workers(len(designs), 2) as workers:
        zygote = workers._pid
        assert zygote is not None
        with pytest.raises(
            PlanRunError, match=r"vision-models .*worker process .* exited \(exit code 7\)"
        ):
            list(workers.run(designs))
        left = _children(zygote)  # the workers still there when the run fails
    # Closed, the zygote has stopped and reaped its workers, and exited.
    for pid in [zygote, *left]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_zygote_given_no_plans_is_stopped() -> None:
    # Forked before the plans load; one fails to load, and the run ends before any is sent.
    with Workers(3, 2) as workers:
        zygote = workers._pid
        assert zygote is not None
        os.kill(zygote, 0)  # running
    with pytest.raises(ProcessLookupError):
        os.kill(zygote, 0)
    # Stopped by a signal, not left to finish importing Pulumi before it reads a stop.
    assert workers._zygote_code == -signal.SIGTERM


def test_a_worker_that_died_idle_is_reported_when_next_given_work() -> None:
    designs = [design(load_plan(p)) for p in (EXAMPLE, GCP)]
    with Workers(len(designs), 2) as workers:
        zygote = workers._pid
        assert zygote is not None
        workers.run(designs)  # sends the zygote the plans; nothing is given a plan yet
        w = workers._fork()
        deadline = time.monotonic() + 30  # the zygote forks once it has imported Pulumi
        while not (children := _children(zygote)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert children, "the zygote forked no worker"
        os.kill(children[0], signal.SIGKILL)
        with pytest.raises(
            PlanRunError, match=r"exited before it was given a plan \(exit code -9\)"
        ):
            for _ in range(100):  # the first sends may still fill the socket's buffer
                workers._send(w.conn, None, w)
                time.sleep(0.01)


def test_each_plan_runs_in_a_worker_forked_with_its_sdks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One cloud per plan: the worker forked for the first cloud has nothing left to run once
    # the others are imported, and gives way to workers forked with them.
    ran: list[tuple[int, int, bool]] = []
    assign = Workers._assign

    def record(self: Workers, w: Any, index: int, pending: list[int]) -> None:
        ran.append((w.k, index, self.clouds[index] <= w.clouds))
        assign(self, w, index, pending)

    monkeypatch.setattr(Workers, "_assign", record)
    designs = [design(load_plan(p)) for p in (EXAMPLE, GCP, AZURE)]
    with Workers(len(designs), 2) as workers:
        done = sorted(index for index, _ in workers.run(designs))
        stopped = [w.k for w in workers._workers if w.stopping]
    assert done == [0, 1, 2]
    assert all(had for _, _, had in ran), ran
    assert stopped, ran


def test_a_module_the_zygote_cannot_import_is_said_and_left_to_the_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aws = preload.SDK_MODULES[Cloud.AWS]
    monkeypatch.setitem(preload.SDK_MODULES, Cloud.AWS, (*aws, "pulumi_aws.no_such_module"))
    said: list[str] = []
    designs = [design(load_plan(p)) for p in (EXAMPLE, GCP)]
    with Workers(len(designs), 2, progress=said.append) as workers:
        done = sorted(index for index, _ in workers.run(designs))
    assert done == [0, 1]
    assert any(
        line.startswith("could not import pulumi_aws.no_such_module ahead (ModuleNotFoundError")
        for line in said
    ), said


def test_a_zygote_that_dies_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preload, "load", lambda module: os._exit(5))
    designs = [design(load_plan(p)) for p in (EXAMPLE, GCP)]
    with (
        pytest.raises(
            PlanRunError, match=r"the process that forks the plan workers exited \(exit code 5\)"
        ),
        Workers(len(designs), 2) as workers,
    ):
        list(workers.run(designs))


@pytest.mark.parametrize(
    ("clouds", "expected"),
    [
        # The cloud that lets the most plans run alone comes first...
        ([{"aws"}, {"gcp"}, {"gcp"}], ["gcp", "aws"]),
        # ...then the one that, with it, lets the most run; ties: the order plans name them.
        ([{"aws"}, {"azure"}, {"aws", "gcp"}, {"aws", "gcp"}], ["aws", "gcp", "azure"]),
        ([{"azure", "gcp"}, {"aws", "gcp"}], ["gcp", "azure", "aws"]),
        # Only cross-cloud plans: the cloud most plans need, first.
        ([{"aws", "azure"}, {"azure", "gcp"}], ["azure", "aws", "gcp"]),
        ([{"aws"}], ["aws"]),
    ],
)
def test_the_zygote_imports_first_what_lets_the_most_plans_run(
    clouds: list[set[str]], expected: list[str]
) -> None:
    assert load_order([frozenset(c) for c in clouds]) == expected


def test_pack_session_answers_as_the_pack_does(singles: dict[str, dict[str, Any]]) -> None:
    stacks = singles[str(EXAMPLE)]["stacks"]
    with PolicyPackProcess(config=PACK_CONFIG) as pack:
        # One Analyze at a time, waiting for each answer: what evaluate_stack pipelines.
        expected = {}
        for s in stacks:
            pack.configure_stack(s["name"])
            found = [v for r in s["resources"] if r["custom"] for v in pack.analyze(r)]
            expected[s["name"]] = found + pack.analyze_stack(s["resources"])
    with PackSession(PACK_CONFIG) as session:
        got = session.submit(stacks).result()
    assert got == expected
    assert [v.as_dict() for v in got[stacks[0]["name"]]] == stacks[0]["policy"]["violations"]


def test_pack_session_reports_a_pack_that_cannot_start_and_stops_it() -> None:
    session = PackSession({"no-such-policy": {"enforcementLevel": "mandatory"}})
    first, second = session.submit([]), session.submit([])
    with pytest.raises(PolicyPackError, match='names "no-such-policy"'):
        first.result()
    with pytest.raises(PolicyPackError):
        second.result()
    session.close()
    assert session.pack._proc is None


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        # Data flows + GPU pools: the largest first; ties in the order given.
        ([(1, 2), (3, 3), (2, 4), (1, 1)], [1, 2, 0, 3]),
        ([(2, 1), (1, 2), (3, 0)], [0, 1, 2]),
        ([(0, 0)], [0]),
    ],
)
def test_the_largest_plans_are_given_to_workers_first(
    sizes: list[tuple[int, int]], expected: list[int]
) -> None:
    designs: Any = [SimpleNamespace(flows=(None,) * f, pools=(None,) * p) for f, p in sizes]
    assert run_order(designs) == expected


@pytest.mark.parametrize(("limit", "collects"), [(0, True), (10**9, False)])
def test_a_worker_collects_only_once_its_stacks_left_enough_objects(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, limit: int, collects: bool
) -> None:
    monkeypatch.setattr(portfolio, "_GARBAGE_OBJECTS", limit)
    real = offline_plan.run_stack
    log = tmp_path / "collections"

    def run_stack(*args: Any, **kwargs: Any) -> Any:
        # Whether run_stack collected: the full collections the interpreter counts.
        before = gc.get_stats()[2]["collections"]
        run = real(*args, **kwargs)
        with log.open("a") as out:
            out.write(f"{gc.get_stats()[2]['collections'] > before}\n")
        return run

    monkeypatch.setattr(offline_plan, "run_stack", run_stack)
    # Three plans on two workers, six stacks: with no limit every one collects first, with a
    # limit no stack reaches, none does.
    designs = [design(load_plan(EXAMPLE))] * 3
    with Workers(len(designs), 2) as workers:
        assert len(list(workers.run(designs))) == 3
    seen = log.read_text().split()
    assert len(seen) == 6
    assert set(seen) == {str(collects)}, seen


def test_workers_are_given_the_largest_plan_first(monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[int] = []
    assign = Workers._assign

    def record(self: Workers, w: Any, index: int, pending: list[int]) -> None:
        given.append(index)
        assign(self, w, index, pending)

    monkeypatch.setattr(Workers, "_assign", record)
    # Both on AWS: the smaller (4 flows and pools) named first, the larger (5) second.
    onprem = ROOT / "examples" / "onprem-to-aws.yaml"
    designs = [design(load_plan(onprem)), design(load_plan(EXAMPLE))]
    assert run_order(designs) == [1, 0]
    with Workers(len(designs), 2) as workers:
        assert sorted(index for index, _ in workers.run(designs)) == [0, 1]
    assert given == [1, 0]
