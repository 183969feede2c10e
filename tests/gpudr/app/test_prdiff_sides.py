"""What `gpudr diff` passes to, and shows of, each side's `gpudr plan` (gpudr/app/prdiff.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpudr.app.prdiff import _cache_args, _Run


@pytest.mark.parametrize(
    ("cli_text", "cache_dir", "expected"),
    [
        # A base commit from before the cache: its gpudr plan takes no such option.
        ('@click.option("--jobs")', Path("/c"), []),
        ('@click.option(\n    "--cache-dir",', Path("/c"), ["--cache-dir", "/c"]),
        ('@click.option(\n    "--cache-dir",', None, ["--no-cache"]),
    ],
)
def test_each_side_gets_the_cache_options_its_code_has(
    tmp_path: Path, cli_text: str, cache_dir: Path | None, expected: list[str]
) -> None:
    cli = tmp_path / "gpudr" / "app" / "cli.py"
    cli.parent.mkdir(parents=True)
    cli.write_text(cli_text)
    assert _cache_args(tmp_path, cache_dir) == expected
    assert _cache_args(tmp_path / "missing", cache_dir) == []


def test_progress_shows_whole_lines_warnings_and_nothing_unprintable(tmp_path: Path) -> None:
    err = tmp_path / "base.stderr"
    proc = subprocess.Popen(["true"])
    proc.wait()
    run = _Run("base", "main", proc, tmp_path / "base.json", err)
    err.write_bytes(b"... extracting\nnoise\ngpudr: warning: plan cache: x: damaged\n... half")
    assert run.progress_lines() == ["extracting", "gpudr: warning: plan cache: x: damaged"]
    with err.open("ab") as handle:
        handle.write(b" done\n... \x1b[2Jcleared\n")
    assert run.progress_lines() == ["half done", "?[2Jcleared"]
    assert run.progress_lines() == []
