"""The runner for the few CLI calls a drill still makes (gcloud's signed-in account), on this
machine's own tools."""

from __future__ import annotations

import pytest

from gpudr.app.drill.commands import CommandFailed, SubprocessRunner


def test_subprocess_runner_output_errors_and_missing_tools() -> None:
    runner = SubprocessRunner()
    assert runner.run(["sh", "-c", "printf hello"]) == "hello"
    with pytest.raises(CommandFailed, match="the last line"):
        runner.run(["sh", "-c", "echo noise >&2; echo 'the last line' >&2; exit 3"])
    with pytest.raises(CommandFailed, match="exit code 4"):
        runner.run(["sh", "-c", "exit 4"])
    with pytest.raises(CommandFailed, match="is not installed"):
        runner.run(["gpudr-no-such-tool"])
    # An empty value unsets a variable.
    assert runner.run(["sh", "-c", 'echo "${HOME:-unset}"'], {"HOME": ""}).strip() == "unset"
