"""Commands and their outputs (issue 17): outputs checked before the work, `generate` all or
nothing and never through a symlink out of its root, every form of Pulumi's policy pack config,
and unreadable command-line files as one line with exit 2."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudr.app import cli, outputs
from gpudr.app.cli import main
from gpudr.app.env import POLICY_CONFIG_ENV
from gpudr.app.offline.policy import LEVELS, PolicyPackError, resolve_config
from tests.conftest import ROOT

PLAN = str(ROOT / "examples" / "aws-two-region.yaml")
CODE = {name: code for code, name in LEVELS.items()}


def _generate(root: Path, *args: str) -> Result:
    """`gpudr generate` into `root`, the plan copied there as a user's repository has it (the
    workflow names it by its path in the repository) and no pack config."""
    plan = root / "plans" / "aws-two-region.yaml"
    if not plan.exists():
        plan.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PLAN, plan)
    env: dict[str, str | None] = {POLICY_CONFIG_ENV: None}
    return CliRunner().invoke(main, ["generate", str(plan), "--root", str(root), *args], env=env)


def _written(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if not p.is_relative_to(root / "plans")
    )


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The output check comes before the programs run: running them fails the test."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the plans ran before the output was checked")

    monkeypatch.setattr(cli, "_run_designs", refuse)
    monkeypatch.setattr("gpudr.app.prdiff.run_diff", refuse)


def _read_only(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """`directory` as a read-only mount shows it, even to root (which chmod does not stop)."""
    real = os.access

    def access(path: Any, mode: int, **kwargs: Any) -> bool:
        if Path(path).absolute() == directory.absolute() and mode & os.W_OK:
            return False
        return real(path, mode, **kwargs)

    monkeypatch.setattr(outputs.os, "access", access)


@pytest.mark.parametrize("command", [["plan", PLAN], ["diff", PLAN, "--base", "HEAD"]])
@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("missing/dir/out.txt", "does not exist; create it"),
        ("readonly/out.txt", "is not writable"),
        (".", "is a directory"),
    ],
)
def test_an_unwritable_output_is_refused_before_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_run: None,
    command: list[str],
    where: str,
    said: str,
) -> None:
    (tmp_path / "readonly").mkdir()
    _read_only(monkeypatch, tmp_path / "readonly")
    target = tmp_path / where
    result = CliRunner().invoke(main, [*command, "-o", str(target)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip().splitlines()[-1]
    assert str(target) in line and said in line  # the run itself is refused by `no_run`


def test_generate_refuses_a_read_only_root_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plans").mkdir()
    _read_only(monkeypatch, tmp_path)
    result = _generate(tmp_path)
    assert result.exit_code == 2
    assert f"--root {tmp_path}" in result.output and "not writable" in result.output
    assert _written(tmp_path) == []


def test_generate_writes_nothing_when_one_file_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: two stack files and a runbook were written, then the workflow failed."""
    real = Path.write_text

    def write_text(self: Path, text: str, *args: Any, **kwargs: Any) -> int:
        if self.name.startswith("gpudr-") and self.suffix == ".yml":
            raise OSError(28, "No space left on device")
        return real(self, text, *args, **kwargs)

    (tmp_path / "plans").mkdir()
    shutil.copy(PLAN, tmp_path / "plans")
    monkeypatch.setattr(Path, "write_text", write_text)
    result = _generate(tmp_path)
    assert result.exit_code == 2, result.output
    assert "nothing was written" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert _written(tmp_path) == []  # no stack file, runbook, or staging directory


def _generated(tmp_path: Path) -> list[str]:
    first = tmp_path / "first"
    assert _generate(first).exit_code == 0
    return [f for f in _written(first) if (first / f).is_file()]


@pytest.mark.parametrize("link", ["directory", "file"])
def test_generate_never_writes_through_a_symlink_out_of_its_root(tmp_path: Path, link: str) -> None:
    files = _generated(tmp_path)
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    rel = next(f for f in files if f.startswith("stacks/"))
    if link == "directory":
        (root / "stacks").symlink_to(outside, target_is_directory=True)
    else:
        (root / rel).parent.mkdir(parents=True)
        (root / rel).symlink_to(outside / "keep.txt")
    result = _generate(root)
    assert result.exit_code == 2, result.output
    assert "outside" in result.output and "nothing was written" in result.output
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "mine"
    assert not (root / ".github").exists()


def test_a_symlink_inside_the_root_is_replaced_not_written_through(tmp_path: Path) -> None:
    files = _generated(tmp_path)
    root = tmp_path / "repo"
    rel = next(f for f in files if f.startswith("runbooks/"))
    (root / rel).parent.mkdir(parents=True)
    (root / "notes.md").write_text("mine")
    (root / rel).symlink_to(root / "notes.md")
    assert _generate(root, "--force").exit_code == 0
    assert (root / "notes.md").read_text() == "mine"
    assert not (root / rel).is_symlink()


DEFAULTS = {"no-public-access": CODE["mandatory"], "bucket-versioning": CODE["advisory"]}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # Pulumi's level shorthand: before, AttributeError ('str' has no .items).
        ({"no-public-access": "advisory"}, {"no-public-access": ("advisory", {})}),
        (
            {"no-public-access": {"enforcementLevel": "disabled", "x": 1}},
            {"no-public-access": ("disabled", {"x": 1})},
        ),
        ({"no-public-access": {"x": 1}}, {"no-public-access": ("mandatory", {"x": 1})}),
        # `all` sets every policy's level (before: "not a policy of this pack") ...
        (
            {"all": "disabled"},
            {"no-public-access": ("disabled", {}), "bucket-versioning": ("disabled", {})},
        ),
        (
            {"all": {"enforcementLevel": "mandatory"}},
            {"no-public-access": ("mandatory", {}), "bucket-versioning": ("mandatory", {})},
        ),
        # ... and a policy's own level overrides it, whatever the order of the keys.
        (
            {"bucket-versioning": "advisory", "all": "mandatory"},
            {"no-public-access": ("mandatory", {}), "bucket-versioning": ("advisory", {})},
        ),
        (
            {"all": "disabled", "bucket-versioning": {"y": 2}},
            {"no-public-access": ("disabled", {}), "bucket-versioning": ("disabled", {"y": 2})},
        ),
    ],
)
def test_every_form_of_pulumis_policy_config(
    config: dict[str, Any], expected: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    got = resolve_config(config, DEFAULTS)
    assert {k: (LEVELS[code], props) for k, (code, props) in got.items()} == expected


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ({"no-public-access": "strict"}, "no-public-access.enforcementLevel"),
        ({"no-public-access": 3}, "give a level"),
        ({"all": {"enforcementLevel": "advisory", "x": 1}}, "takes only enforcementLevel"),
        ({"all": "everything"}, "all.enforcementLevel"),
        ({"nope": "advisory"}, '"nope", which is not a policy'),
    ],
)
def test_a_bad_policy_config_is_one_line(config: dict[str, Any], said: str) -> None:
    with pytest.raises(PolicyPackError, match="policy config") as raised:
        resolve_config(config, DEFAULTS)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_the_shorthand_and_all_run_through_the_pack(tmp_path: Path) -> None:
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"all": "advisory", "no-public-access": "mandatory"}))
    result = CliRunner().invoke(
        main, ["plan", PLAN, "--policy-config", str(config), "--format", "json"]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1), result.output
    json.loads(result.stdout)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"\xff\xfe{}", "not UTF-8 (byte 0); save it as UTF-8"),
        (b"[" * 100_000, "not a JSON object"),  # before: RecursionError, a traceback
        (b"[]", "not a JSON object"),
        (b"{", "not a JSON object"),
    ],
)
def test_an_unreadable_policy_config_is_exit_2_with_its_path(
    tmp_path: Path, no_run: None, content: bytes, said: str
) -> None:
    config = tmp_path / "pack.json"
    config.write_bytes(content)
    result = CliRunner().invoke(main, ["plan", PLAN, "--policy-config", str(config)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"gpudr: --policy-config {config}:") and said in line
    assert len(line) < 400


# Arbitrary command lines: every token a user (or a fuzzer) might type, with files that exist
# but are bad. No valid plan here (each would run the programs for seconds): the slow variant
# below adds them.
_FILES = {
    "latin1.yaml": b"name: caf\xe9\n",
    "deep.json": b"[" * 50_000,
    "shorthand.json": b'{"no-public-access": "advisory", "all": "mandatory"}',
    "empty.yaml": b"",
    "list.yaml": b"- 1\n",
}
_TOKENS = st.sampled_from(
    [
        "plan", "generate", "diff", "drill", "run", "--help", "--version", "-o", "--output",
        "--format", "json", "text", "markdown", "--stack", "--policy-config", "--pack-config",
        "--no-policy", "--jobs", "-j", "0", "1", "--root", "--check", "--force", "--base",
        "HEAD", "--limit", "-1", "--site", "--ttl", "--dry-run", "--report-dir", ".",
        "missing.yaml", "missing/dir/out.txt", "sub", *_FILES,
    ]
)  # fmt: skip
_ARGS = st.lists(st.one_of(_TOKENS, st.text(max_size=12)), max_size=8)


def _fuzz(args: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        for name, content in _FILES.items():
            Path(name).write_bytes(content)
        Path("sub").mkdir()
        result = CliRunner().invoke(main, args, env={POLICY_CONFIG_ENV: None})
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exception,
    )
    assert result.exit_code in (0, 1, 2), (args, result.output)
    assert "Traceback" not in result.output


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ARGS)
def test_any_command_line_exits_0_1_or_2(args: list[str]) -> None:
    _fuzz(args)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ARGS, st.integers(min_value=0, max_value=8))
def test_any_command_line_around_a_valid_plan_exits_0_1_or_2(args: list[str], at: int) -> None:
    """As above with a valid plan somewhere in the line: the programs and the pack run."""
    _fuzz([*args[:at], PLAN, *args[at:]])


def test_drill_refuses_an_unwritable_report_dir_before_creating_a_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the drill ran before its report directory was checked")

    monkeypatch.setattr(cli, "_run_drill", refuse)
    monkeypatch.setattr("gpudr.app.drill.stacks.pulumi_available", lambda: True)
    _read_only(monkeypatch, tmp_path)
    args = ["drill", "run", PLAN, "--site", "usw2", "--report-dir", str(tmp_path / "reports")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"--report-dir {tmp_path / 'reports'}: {tmp_path} is not writable" in result.output


@pytest.mark.parametrize(
    "command", [["plan", "\x00"], ["generate", "a\x00.yaml"], ["plan", "x.yaml", "-o", "o\x00"]]
)
def test_a_path_with_a_nul_byte_is_bad_input_not_a_traceback(command: list[str]) -> None:
    """Found by the CLI property test: os.stat raised ValueError on an embedded NUL."""
    from click.testing import CliRunner

    from gpudr.app.cli import main

    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2, result.output
    assert "NUL byte" in result.output
