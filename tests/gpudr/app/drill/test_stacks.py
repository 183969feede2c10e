"""The stack interface's real implementation (the Pulumi Automation API) against a stand-in
`pulumi` executable that records its arguments: the CLI commands a drill runs, each in its
own session, and the refusal of non-drill names. The real CLI is not installed here."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from gpudr.app.drill.stacks import AutomationStacks, PulumiMissingError
from gpudr.contract.drill import DrillNameError
from gpudr.core.paths import PROJECT_DIR

FAKE = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PULUMI_LOG"], "a") as f:
    f.write(json.dumps({{"args": args, "own_session": os.getsid(0) == os.getpid()}}) + "\\n")
words = [a for a in args if not a.startswith("-")]
if args == ["version"]:
    print("v3.272.0")
elif "history" in words:
    print(json.dumps([{{"kind": "update", "startTime": "2025-01-31T03:12:00.000Z",
        "endTime": "2025-01-31T03:30:00.000Z", "message": "", "environment": {{}},
        "config": {{}}, "result": "succeeded", "version": 1}}]))
elif "output" in words:
    print(json.dumps({{"reader": "arn:aws:iam::1:role/r", "clusters": {{"train": "c"}}}}))
elif words[:2] == ["stack", "ls"]:
    print(json.dumps([{{"name": "drill-usw2-20250131T031200Z", "current": False}},
                      {{"name": "acme/gpudr/llm-training-usw2", "current": False}}]))
elif words[:3] == ["stack", "tag", "ls"]:
    print(json.dumps({{"gpudr:expires-at": "20250131T071200Z"}}))
"""
NAME = "drill-usw2-20250131T031200Z"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import sys

    binary = tmp_path / "bin" / "pulumi"
    binary.parent.mkdir()
    binary.write_text(FAKE.format(python=sys.executable))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{binary.parent}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_PULUMI_LOG", str(tmp_path / "log"))
    return tmp_path / "log"


def commands(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_drills_operations_as_pulumi_commands(log: Path) -> None:
    stacks = AutomationStacks(PROJECT_DIR)
    stacks.create(NAME)
    stacks.set_config(NAME, {"aws:region": "us-west-2", "gpudr:drill": {"phase": "capacity"}})
    stacks.set_tags(NAME, {"gpudr:expires-at": "20250131T071200Z"})
    lines: list[str] = []
    assert stacks.up(NAME, lines.append) == {
        "reader": "arn:aws:iam::1:role/r",
        "clusters": {"train": "c"},
    }
    stacks.destroy(NAME, lines.append)
    stacks.remove(NAME)
    assert stacks.list() == [NAME, "llm-training-usw2"]
    assert stacks.tags(NAME) == {"gpudr:expires-at": "20250131T071200Z"}
    ran = [c["args"] for c in commands(log) if c["args"] != ["version"]]
    assert ["--non-interactive", "stack", "init", NAME] in ran
    assert [
        "--non-interactive",
        "config",
        "set-all",
        "--stack",
        NAME,
        "--plaintext",
        "aws:region=us-west-2",
        "--plaintext",
        'gpudr:drill={"phase": "capacity"}',
    ] in ran
    assert [
        "--non-interactive",
        "stack",
        "tag",
        "set",
        "gpudr:expires-at",
        "20250131T071200Z",
        "--stack",
        NAME,
    ] in ran
    verbs = [a[1] for a in ran if a[1] in ("up", "destroy")]
    assert verbs == ["up", "destroy"]
    assert ["--non-interactive", "stack", "rm", "--yes", NAME] in ran
    # Each CLI run is its own session: the terminal's Ctrl-C reaches gpudr, not pulumi.
    assert all(c["own_session"] for c in commands(log) if c["args"] != ["version"])


def test_destroy_and_remove_refuse_other_stacks(log: Path) -> None:
    stacks = AutomationStacks(PROJECT_DIR)
    for call in (
        lambda: stacks.destroy("llm-training-usw2", print),
        lambda: stacks.remove("llm-training-usw2"),
        lambda: stacks.create("llm-training-usw2"),
    ):
        with pytest.raises(DrillNameError):
            call()
    assert [c["args"] for c in commands(log)] == [["version"]]


def test_no_cli_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PulumiMissingError, match="--dry-run"):
        AutomationStacks(PROJECT_DIR)
