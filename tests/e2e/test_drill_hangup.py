"""A drill whose terminal goes away still ends: a real `gpudr drill` process (drill_hangup.py,
fakes for Pulumi and the clouds), its output on a terminal that hangs up (a pty whose master is
closed, as when an SSH session drops: the kernel sends SIGHUP and every later write fails with
EIO) or on pipes that are closed before SIGHUP is sent (writes fail with EPIPE). Its stack is
destroyed and removed, the report says interrupted, and what it printed after the hangup is in
the log next to the report."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpudr.app.exitcodes import EXIT_INTERRUPTED
from tests.conftest import ROOT

RUNNER = [sys.executable, "-m", "tests.e2e.drill_hangup"]
WAIT_S = 60.0


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def read_until(fd: int, marker: bytes) -> bytes:
    """What the process printed, up to the line with `marker` (its slow `up` has begun)."""
    seen = b""
    deadline = time.monotonic() + WAIT_S
    while marker not in seen:
        assert time.monotonic() < deadline, seen.decode(errors="replace")
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            chunk = os.read(fd, 4096)
            assert chunk, seen.decode(errors="replace")  # it ended before its up
            seen += chunk
    return seen


def wait(pid: int) -> int:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError("gpudr did not end after the hangup")


def check(tmp_path: Path, code: int) -> None:
    calls = json.loads((tmp_path / "calls.json").read_text())
    ops = [c[0] for c in calls]
    assert ops[:4] == ["create", "set_config", "set_tags", "up"], ops
    assert ops[-2:] == ["destroy", "remove"], ops
    assert code == EXIT_INTERRUPTED
    (report,) = (tmp_path / "reports").glob("drill-usw2-*.json")
    data = json.loads(report.read_text())
    assert data["outcome"] == "interrupted"
    assert data["stages"][0]["status"] == "interrupted"
    assert data["cleanup"]["destroyed"] and data["cleanup"]["removed"]
    log = report.with_suffix(".log").read_text()
    # What was printed after the hangup: the signal, cleanup's progress, the summary.
    assert "output continues here" in log
    assert "gpudr: SIGHUP: stopping the drill" in log
    assert "Destroying (drill-usw2-" in log
    assert f"drill {data['stack']}: interrupted; report" in log


def test_a_drill_whose_ssh_session_drops_is_destroyed(tmp_path: Path) -> None:
    # pty.fork: the child leads a session whose controlling terminal is the pty, like a shell's
    # job; closing the master is the hangup, and the kernel sends SIGHUP.
    pid, master = pty.fork()
    if pid == 0:  # the child
        try:
            os.chdir(ROOT)
            os.execve(
                sys.executable,
                [*RUNNER, str(tmp_path / "calls.json"), str(tmp_path / "reports")],
                env(),
            )
        finally:
            os._exit(127)
    try:
        seen = read_until(master, b"Updating (drill-usw2-")
        assert b"the drill still ends and writes to" in seen
    finally:
        os.close(master)
    check(tmp_path, wait(pid))


def test_closed_pipes_then_sighup_and_a_second_signal(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*RUNNER, str(tmp_path / "calls.json"), str(tmp_path / "reports")],
        cwd=ROOT,
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        read_until(proc.stderr.fileno(), b"Updating (drill-usw2-")
    finally:
        proc.stdout.close()
        proc.stderr.close()
    proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)  # a second signal, while its stack is being destroyed
    try:
        code = proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    check(tmp_path, code)
    (log,) = (tmp_path / "reports").glob("drill-usw2-*.log")
    assert (
        "is in progress and continues until the stack is destroyed and removed; SIGTERM does not"
        in log.read_text()
    )
