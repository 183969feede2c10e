"""`gpudr plan` with its cache (gpudr/app/cache.py): a hit writes exactly what a fresh run writes,
and changing any input of the key (the plan, a component, the pack config, a package version)
runs the plan again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from gpudr.app import cache as cache_module
from gpudr.app import planrun
from gpudr.app.cache import Entry, PlanCache
from gpudr.app.cli import main
from tests.conftest import EXAMPLE, PACK_CONFIG_PATH, ROOT, copy_code

GCP = ROOT / "examples" / "gcp-two-region.yaml"


def plan(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["plan", *map(str, args)], catch_exceptions=False)


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("v*/*/*.json"))


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
@pytest.mark.parametrize("plans", [(EXAMPLE,), (EXAMPLE, GCP)], ids=["one plan", "portfolio"])
def test_a_hit_writes_byte_for_byte_what_a_fresh_run_writes(
    tmp_path: Path, fmt: str, plans: tuple[Path, ...]
) -> None:
    cache = tmp_path / "cache"
    fresh = plan(*plans, "--format", fmt, "--no-cache")
    stored = plan(*plans, "--format", fmt, "--cache-dir", cache)  # misses, stores
    assert len(entries(cache)) == len(plans)
    hit = CliRunner(env={"GPUDR_PROGRESS": "1"}).invoke(
        main, ["plan", *map(str, plans), "--format", fmt, "--cache-dir", str(cache)]
    )
    # Answered from the cache: nothing ran.
    assert f"... plan cache: {len(plans)} of {len(plans)} plan(s) from {cache}" in hit.stderr
    assert "running" not in hit.stderr
    assert fresh.exit_code == stored.exit_code == hit.exit_code == 0
    assert stored.stdout == fresh.stdout
    assert hit.stdout == fresh.stdout
    assert len(entries(cache)) == len(plans)


def test_a_hit_keeps_the_exit_code_of_a_target_not_met(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw.pop("quotas")  # the checkpoint stream overruns the default RTC rate: not met
    short = tmp_path / "short.yaml"
    short.write_text(yaml.safe_dump(raw))
    cache = tmp_path / "cache"
    first = plan(short, "--cache-dir", cache)
    again = plan(short, "--cache-dir", cache)
    assert first.exit_code == again.exit_code == 1
    assert again.stdout == first.stdout


def test_changing_the_plan_misses(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    copy = tmp_path / "plan.yaml"
    copy.write_bytes(EXAMPLE.read_bytes())
    before = plan(copy, "--format", "json", "--cache-dir", cache)
    raw = yaml.safe_load(copy.read_text())
    raw["data"]["checkpoints"]["size"] = "90TB"
    copy.write_text(yaml.safe_dump(raw))
    after = plan(copy, "--format", "json", "--cache-dir", cache)
    assert len(entries(cache)) == 2
    assert after.stdout == plan(copy, "--format", "json", "--no-cache").stdout
    assert after.stdout != before.stdout


def test_changing_the_pack_config_misses(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    config = json.loads(PACK_CONFIG_PATH.read_text())
    config["gpu-standby-sizing"] = "disabled"
    other = tmp_path / "pack-config.json"
    other.write_text(json.dumps(config))
    plan(EXAMPLE, "--format", "json", "--cache-dir", cache)
    plan(EXAMPLE, "--format", "json", "--cache-dir", cache, "--policy-config", other)
    plan(EXAMPLE, "--format", "json", "--cache-dir", cache, "--no-policy")
    assert len(entries(cache)) == 3


def test_changing_a_package_version_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    plan(EXAMPLE, "--format", "json", "--cache-dir", cache)
    real = cache_module.installed_versions()
    bumped = [
        "pulumi_aws-99.0.0.dist-info" if line.startswith("pulumi_aws-") else line for line in real
    ]
    assert bumped != real
    monkeypatch.setattr(cache_module, "installed_versions", lambda: bumped)
    plan(EXAMPLE, "--format", "json", "--cache-dir", cache)
    assert len(entries(cache)) == 2


def test_changing_a_component_misses(tmp_path: Path) -> None:
    """The code is another checkout (as `gpudr diff` runs the base): the same plan, one comment
    added to a component, and the run stores a second entry beside the first."""
    project = copy_code(tmp_path / "project")
    cache = tmp_path / "cache"
    plan_file = project / "plan.yaml"
    plan_file.write_bytes(EXAMPLE.read_bytes())

    def run() -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(project)}
        argv = [sys.executable, "-m", "gpudr", "plan", "plan.yaml", "--format", "json"]
        return subprocess.run(
            [*argv, "--cache-dir", str(cache)],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    first = run()
    assert first.returncode == 0, first.stderr
    assert len(entries(cache)) == 1
    assert run().stdout == first.stdout
    assert len(entries(cache)) == 1  # a hit
    bucket = project / "components" / "aws" / "bucket.py"
    bucket.write_text(bucket.read_text() + "\n# a reviewed change\n")
    again = run()
    assert again.returncode == 0, again.stderr
    assert len(entries(cache)) == 2
    assert again.stdout == first.stdout


def test_a_corrupt_entry_is_a_miss_said_on_stderr_and_rewritten(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fresh = plan(EXAMPLE, "--format", "json", "--cache-dir", cache)
    (entry,) = entries(cache)
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) - 1000])  # a write cut short
    again = plan(EXAMPLE, "--format", "json", "--cache-dir", cache)
    assert again.exit_code == 0
    assert again.stdout == fresh.stdout
    assert f"gpudr: warning: plan cache: {entry}: it does not match its digest" in (again.stderr)
    assert entry.read_bytes() == data  # rewritten whole
    assert plan(EXAMPLE, "--format", "json", "--cache-dir", cache).stderr == ""


def test_no_cache_reads_and_writes_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plan(EXAMPLE, "--format", "json", "--cache-dir", cache)
    (entry,) = entries(cache)
    entry.write_bytes(b"garbage")
    result = plan(EXAMPLE, "--format", "json", "--cache-dir", cache, "--no-cache")
    assert result.exit_code == 0
    assert result.stderr == ""  # the damaged entry was not even read
    assert entry.read_bytes() == b"garbage"
    unused = tmp_path / "unused"
    plan(EXAMPLE, "--format", "json", "--cache-dir", unused, "--no-cache")
    assert not unused.exists()


def test_the_default_directory_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUDR_CACHE_DIR", str(tmp_path / "from-env"))
    plan(EXAMPLE, "--format", "json")
    assert len(entries(tmp_path / "from-env")) == 1
    monkeypatch.delenv("GPUDR_CACHE_DIR")
    monkeypatch.chdir(tmp_path)
    plan(EXAMPLE, "--format", "json")
    assert len(entries(tmp_path / ".gpudr-cache")) == 1
    assert (tmp_path / ".gpudr-cache" / ".gitignore").read_text().endswith("*\n")


@pytest.mark.parametrize("command", ["plan", "diff"])
def test_a_cache_dir_that_is_a_file_is_refused_before_the_run(tmp_path: Path, command: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    args = [command, str(EXAMPLE), "--cache-dir", str(blocker)]
    if command == "diff":
        args += ["--base", "HEAD"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "Invalid value for '--cache-dir'" in result.stderr
    assert f"'{blocker}' is a file" in result.stderr
    under = tmp_path / "file" / "cache"
    args[args.index(str(blocker))] = str(under)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.stderr == (
        f"gpudr: --cache-dir {under}: {blocker} is not a directory; give a directory, or "
        "--no-cache; nothing was run\n"
    )


def test_a_cache_that_cannot_be_written_is_said_once_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: PlanCache, key: str, source: str, entry: Entry) -> None:
        raise cache_module.CacheError(
            f"cannot write the plan cache at {self.directory} (Read-only file system); "
            "give a writable --cache-dir, or --no-cache"
        )

    monkeypatch.setattr(PlanCache, "put", refuse)
    result = plan(EXAMPLE, GCP, "--format", "json", "--cache-dir", tmp_path / "cache")
    assert result.exit_code == 0
    assert result.stderr.count("gpudr: warning: cannot write the plan cache") == 1
    assert "the reports are not cached" in result.stderr
    assert json.loads(result.stdout)["meets"] is True


@pytest.mark.parametrize("unchanged", [0, 1], ids=["before any store", "after one store"])
def test_code_changed_during_the_run_stores_no_report_made_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unchanged: int
) -> None:
    # Each store first checks the code is still what the keys were made from; here, the code
    # is edited after `unchanged` stores.
    checks: list[str] = []

    def digest() -> str:
        checks.append("checked")
        real = cache_module.code_digest()
        return real if len(checks) <= unchanged else real + "-edited"

    monkeypatch.setattr(planrun, "code_digest", digest)
    cache = tmp_path / "cache"
    result = plan(EXAMPLE, GCP, "--format", "json", "--cache-dir", cache)
    assert result.exit_code == 0
    assert result.stderr.count("code changed during the run") == 1, result.stderr
    assert "no further report is cached" in result.stderr
    assert len(entries(cache)) == unchanged
    assert len(checks) == unchanged + 1  # once refused, no store is tried again
    assert json.loads(result.stdout)["meets"] is True


def test_only_the_stacks_asked_for_are_their_own_entry(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    whole = plan(EXAMPLE, "--format", "json", "--cache-dir", cache)
    one: Any = json.loads(
        plan(EXAMPLE, "--format", "json", "--cache-dir", cache, "--stack", "use1").stdout
    )
    assert len(entries(cache)) == 2
    assert [s["site"] for s in one["stacks"]] == ["use1"]
    assert len(json.loads(whole.stdout)["stacks"]) == 2


@pytest.mark.parametrize("met", [True, False], ids=["met", "not met"])
def test_the_command_exits_with_the_plans_code_and_its_output_whole(
    tmp_path: Path, met: bool
) -> None:
    """`gpudr plan` skips the interpreter's teardown once its programs have run (cli.entry):
    the exit code and every byte of stdout must still come out."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    if not met:
        raw.pop("quotas")  # the checkpoint stream overruns the default RTC rate
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(raw))
    argv = [sys.executable, "-m", "gpudr", "plan", str(plan_file), "--format", "json"]
    proc = subprocess.run(
        [*argv, "--no-cache"], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert proc.returncode == (0 if met else 1), proc.stderr
    assert json.loads(proc.stdout)["meets"] is met
    assert proc.stdout == plan(plan_file, "--format", "json", "--no-cache").stdout


def test_a_pack_config_with_nan_is_bad_input(tmp_path: Path) -> None:
    config = tmp_path / "pack-config.json"
    config.write_text('{"replication-meets-rpo": {"headroom": NaN}}')
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--policy-config", str(config)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"gpudr: --policy-config {config}: not a JSON object (NaN")


def test_a_group_writable_cache_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o775)
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--cache-dir", str(cache)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"gpudr: --cache-dir {cache}: {cache} is writable by others (mode 775): a hit is only "
        "as trustworthy as the directory; use one only you can write to, or --no-cache; "
        "nothing was run\n"
    )
