"""`gpudr drill` as a user runs it: the dry run offline, one-line errors and exit codes, and a
whole drill through the CLI against fakes of the stack interface and the cloud checks."""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpudr.app.cli import main
from gpudr.app.drill import operator as drill_operator
from gpudr.app.drill import probes as drill_probes
from gpudr.app.drill import stacks as drill_stacks
from gpudr.build.drill import build_drill
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.drillreport import usd
from tests.conftest import EXAMPLE, ROOT
from tests.gpudr.app.drill.fakes import Clock, FakeProbe, FakeStacks, Obj


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def no_pulumi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drill_stacks.shutil, "which", lambda _name: None)


@pytest.mark.parametrize(
    ("example", "site", "types"),
    [
        ("aws-two-region", "usw2", ["aws:eks/nodeGroup:NodeGroup", "aws:iam/rolePolicy"]),
        ("gcp-two-region", "use4", ["gcp:container/nodePool:NodePool", "BucketIAMMember"]),
        ("azure-two-region", "wus", ["containerservice:AgentPool", "RoleAssignment"]),
    ],
)
def test_dry_run_shows_resources_steps_and_cost_offline(
    monkeypatch: pytest.MonkeyPatch, example: str, site: str, types: list[str]
) -> None:
    no_pulumi(monkeypatch)  # needs neither the CLI nor credentials
    result = invoke(
        "drill", str(ROOT / "examples" / f"{example}.yaml"), "--site", site, "--dry-run"
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"Drill of {site} " in out and "nothing was created" in out
    for t in types:
        assert t in out, t
    for step in ("infrastructure", "capacity", "data-age", "destroy the stack", "remove the stack"):
        assert step in out, step
    assert "Estimated cost: at most $" in out
    assert "transitGateway" not in out and "Peering" not in out


def ttl_ceiling() -> str:
    """What the example's usw2 drill costs at most over its TTL, from the one cost engine."""
    return usd(build_drill(design(load_plan(EXAMPLE)), "usw2", datetime.now(UTC)).cost.ttl_usd)


ROLE_SESSION = "arn:aws:sts::123456789012:assumed-role/DrillRunner/alice"


def test_dry_run_for_the_aws_example_prices_two_test_nodes() -> None:
    result = invoke(
        "drill", "run", str(EXAMPLE), "--site", "usw2", "--dry-run", "--operator", ROLE_SESSION
    )
    assert result.exit_code == 0, result.output
    assert f"Estimated cost: at most {ttl_ceiling()}" in result.stdout
    assert "nodes 1..1 (desired 1)" in result.stdout
    assert "allows s3:ListBucket, s3:GetObject" in result.stdout
    assert f"Reader: only {ROLE_SESSION} may act as it." in result.stdout
    assert (
        "assumable by arn:aws:iam::123456789012:role/DrillRunner or "
        "arn:aws:iam::123456789012:role/*/DrillRunner only"
    ) in result.stdout


def test_a_dry_run_naming_no_operator_shows_no_aws_reader() -> None:
    result = invoke("drill", "run", str(EXAMPLE), "--site", "usw2", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "Reader: no operator named, so no reader role is declared" in result.stdout
    assert "-reader " not in result.stdout and "s3:GetObject" not in result.stdout


@pytest.mark.parametrize(
    ("operator", "message"),
    [
        ("user:alice@example.com", '--operator: "user:alice@example.com" is not an AWS principal'),
        ("arn:aws:iam::123456789012:root", "is not an AWS principal"),
    ],
)
def test_an_operator_of_the_wrong_form_is_bad_input(operator: str, message: str) -> None:
    result = invoke("drill", str(EXAMPLE), "--site", "usw2", "--dry-run", "--operator", operator)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--site", "use1", "--dry-run"], 'gpudr: --site "use1" is a primary site'),
        (["--site", "nope", "--dry-run"], 'gpudr: --site "nope" is not a site of plan'),
        (["--site", "usw2", "--ttl", "3d", "--dry-run"], "gpudr: --ttl: 3d is outside 30m..1d"),
        (["--site", "usw2", "--ttl", "4 hours"], 'gpudr: --ttl: "4 hours" is not a duration'),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = invoke("drill", str(EXAMPLE), *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(message), result.stderr


def test_without_the_pulumi_cli_a_drill_is_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    no_pulumi(monkeypatch)
    result = invoke("drill", str(EXAMPLE), "--site", "usw2")
    assert result.exit_code == 3, result.output
    (line,) = result.stderr.strip().splitlines()
    assert "needs the Pulumi CLI" in line and "--dry-run" in line
    assert result.stdout == ""
    cleanup = invoke("drill", "cleanup")
    assert cleanup.exit_code == 3 and len(cleanup.stderr.strip().splitlines()) == 1


class Fakes:
    """What `gpudr drill` runs against, swapped in for the Automation API and the CLIs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, corrupt: bool = False) -> None:
        # The CLI times the drill with the real clock: the replica is recent in real time.
        self.clock = Clock(datetime.now(UTC))
        self.stacks = FakeStacks(self.clock, outputs={"reader": "r", "clusters": {}})
        self.corrupt = corrupt
        monkeypatch.setattr(drill_stacks.shutil, "which", lambda _name: "/usr/bin/pulumi")
        monkeypatch.setattr(drill_stacks, "AutomationStacks", lambda *_a, **_k: self.stacks)
        monkeypatch.setattr(drill_probes, "probe_for", self.probe_for)
        # The caller, as `aws sts get-caller-identity` would name it: no network in tests.
        monkeypatch.setattr(drill_operator, "discover", lambda _cloud, _region: ROLE_SESSION)

    def probe_for(self, setup: Any, sleep: Any) -> FakeProbe:
        """Every replica holds a recent object; GPU capacity is there at once."""
        replica = {
            t.bucket.name: {"step-1/part.bin": Obj(b"data" * 100, 600, corrupt=self.corrupt)}
            for t in setup.data
        }
        return FakeProbe(setup, self.clock, replica)


@pytest.mark.parametrize(
    ("corrupt", "outcome", "code"), [(False, "passed", 0), (True, "failed", 1)]
)
def test_a_drill_through_the_cli_writes_its_report_and_exits_by_outcome(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, corrupt: bool, outcome: str, code: int
) -> None:
    fakes = Fakes(monkeypatch, corrupt=corrupt)
    result = invoke("drill", str(EXAMPLE), "--site", "usw2", "--report-dir", str(tmp_path))
    assert result.exit_code == code, result.output
    assert fakes.stacks.ops()[-2:] == ["destroy", "remove"]
    (report_json,) = tmp_path.glob("drill-usw2-*.json")
    report = json.loads(report_json.read_text())
    assert report["outcome"] == outcome
    assert report_json.with_suffix(".md").read_text().startswith("# DR drill drill-usw2-")
    assert f"estimated cost at most {ttl_ceiling()}" in result.stderr
    assert f"drill {report['stack']}: {outcome}; report {tmp_path}" in result.stdout


def test_a_drill_interrupted_by_ctrl_c_exits_130_after_cleanup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fakes = Fakes(monkeypatch)
    fakes.stacks.fail_up = {1: KeyboardInterrupt()}
    result = invoke("drill", str(EXAMPLE), "--site", "usw2", "--report-dir", str(tmp_path))
    assert result.exit_code == 130, result.output
    assert fakes.stacks.ops()[-2:] == ["destroy", "remove"]
    assert "interrupted" in result.stdout


def test_cleanup_through_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = Fakes(monkeypatch)
    fakes.stacks.existing = {"drill-usw2-20000101T000000Z": {}, "prod-usw2": {}}
    result = invoke("drill", "cleanup")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("destroyed: drill-usw2-20000101T000000Z")
    assert list(fakes.stacks.existing) == ["prod-usw2"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_cleanup_does_not_stop_a_destroy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, signum: int
) -> None:
    monkeypatch.chdir(tmp_path)  # where a SIGHUP's log goes (drill-reports/)
    fakes = Fakes(monkeypatch)
    fakes.stacks.existing = {"drill-usw2-20000101T000000Z": {}, "drill-use4-20000101T000000Z": {}}
    destroy = fakes.stacks.destroy

    def destroy_then_signal(name: str, on_output: Any) -> None:
        os.kill(os.getpid(), signum)  # Ctrl-C, a cancelled job, a dropped SSH session
        signal.sigtimedwait([], 0.1)  # the handler runs here, in the middle of the destroy
        destroy(name, on_output)

    monkeypatch.setattr(fakes.stacks, "destroy", destroy_then_signal)
    result = invoke("drill", "cleanup")
    assert result.exit_code == 0, result.output
    assert fakes.stacks.existing == {}  # both destroyed and removed, the signals notwithstanding


def test_a_sites_cleanup_through_the_cli_leaves_other_sites(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fakes = Fakes(monkeypatch)
    fakes.stacks.existing = {"drill-use4-20000101T000000Z": {}}
    result = invoke("drill", "cleanup", "--site", "usw2")
    assert (result.exit_code, result.stdout) == (
        0,
        "no drill stacks of site usw2 in this backend\n",
    )
    assert list(fakes.stacks.existing) == ["drill-use4-20000101T000000Z"]


def test_cleanup_skips_a_malformed_drill_name_says_why_and_exits_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fakes = Fakes(monkeypatch)
    bad = "drill-aa-99999999T999999Z"
    fakes.stacks.existing = {bad: {}, "drill-usw2-20000101T000000Z": {}}
    result = invoke("drill", "cleanup")
    assert result.exit_code == 1, result.output
    skipped, destroyed = result.stdout.strip().splitlines()
    assert skipped.startswith(f"skipped: {bad} stack") and "yourself" in skipped
    assert destroyed.startswith("destroyed: drill-usw2-20000101T000000Z")
    assert list(fakes.stacks.existing) == [bad]
