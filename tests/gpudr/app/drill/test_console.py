"""The drill's output once its terminal is gone: a real process writing to a pipe nobody reads
any more (EPIPE) moves its output to the log, the first line saying why, and ends cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

WRITER = """
import sys
from pathlib import Path
from gpudr.app.drill.console import Console

console = Console(Path(sys.argv[1]))
sys.stdin.readline()  # the test closes our stdout and stderr, then says go
for n in range(3):
    console.line(f"line {n}")
console.line("summary", err=False)
print("a plain print after", flush=True)
"""


def test_lines_after_the_pipe_closes_go_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "reports" / "drill-usw2-20250131T031200Z.log"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(log)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()
    proc.stdin.write("go\n")
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0  # no BrokenPipeError, not even at exit
    lines = log.read_text().splitlines()
    assert lines == [
        "gpudr: the terminal is gone (BrokenPipeError); output continues here",
        "line 0",
        "line 1",
        "line 2",
        "summary",
        "a plain print after",
    ]
