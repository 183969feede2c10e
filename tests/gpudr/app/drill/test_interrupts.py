"""Ctrl-C during a drill, with real signals sent to this process: the first stops the drill
(through the running command if there is one), later ones during cleanup only say so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gpudr.app.drill.interrupts import Children, Guard

READY_THEN_SLEEP = (
    "import signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "print('ready', flush=True); time.sleep(30)"
)


def test_first_ctrl_c_without_a_command_interrupts_the_drill() -> None:
    said: list[str] = []
    guard = Guard(Children(), said.append)
    with guard.installed(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0.1)  # let the handler run here, not at a later bytecode
    assert guard.interrupted
    assert said == ["gpudr: SIGINT: stopping the drill; its stack is destroyed and removed next"]


@contextmanager
def running_command(children: Children) -> Iterator[subprocess.Popen[str]]:
    """A command of the drill's, in its own session, ready for signals; killed afterwards.
    It takes SIGINT's default itself and says so before a signal is sent: a child of a shell
    without job control (`cmd &`) inherits SIGINT ignored, and Python keeps it so."""
    child = subprocess.Popen(
        [sys.executable, "-c", READY_THEN_SLEEP],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    children.add(child)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        yield child
    finally:
        children.discard(child)
        if child.poll() is None:
            child.kill()


def test_first_signal_goes_to_the_running_command_which_stops() -> None:
    children = Children()
    guard = Guard(children, lambda _m: None)
    with running_command(children) as child, guard.installed():
        os.kill(os.getpid(), signal.SIGTERM)  # e.g. a CI job cancelled
        assert child.wait(timeout=10) != 0  # the command got SIGINT and stopped
    assert guard.interrupted


def test_during_cleanup_ctrl_c_only_says_cleanup_is_in_progress() -> None:
    said: list[str] = []
    guard = Guard(Children(), said.append)
    guard.interrupted = True
    guard.start_cleanup("drill-usw2-20250131T031200Z")
    with guard.installed():
        for _ in range(2):
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0.1)
    assert (
        said
        == [
            "gpudr: cleanup of drill-usw2-20250131T031200Z is in progress and continues until the "
            "stack is destroyed and removed; Ctrl-C does not stop it"
        ]
        * 2
    )


def test_handlers_are_restored_afterwards() -> None:
    before = signal.getsignal(signal.SIGINT)
    with Guard(Children(), lambda _m: None).installed():
        assert signal.getsignal(signal.SIGINT) != before
    assert signal.getsignal(signal.SIGINT) == before


def test_sighup_is_a_hangup_first_then_stops_the_drill_like_sigterm() -> None:
    said: list[str] = []
    hung_up: list[int] = []
    guard = Guard(Children(), said.append, on_hangup=lambda: hung_up.append(len(said)))
    with guard.installed(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGHUP)
        signal.sigtimedwait([], 0.1)
    assert guard.interrupted
    assert hung_up == [0]  # the output is moved before anything is said
    assert said == ["gpudr: SIGHUP: stopping the drill; its stack is destroyed and removed next"]


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_second_signal_during_cleanup_does_not_stop_it(signum: int) -> None:
    said: list[str] = []
    guard = Guard(Children(), said.append)
    guard.interrupted = True
    guard.start_cleanup("drill-usw2-20250131T031200Z")
    with guard.installed():
        os.kill(os.getpid(), signum)
        signal.sigtimedwait([], 0.1)
    name = signal.Signals(signum).name
    assert said == [
        "gpudr: cleanup of drill-usw2-20250131T031200Z is in progress and continues until the "
        f"stack is destroyed and removed; {name} does not stop it"
    ]


def test_a_write_that_fails_in_a_handler_raises_nothing_but_the_interrupt() -> None:
    def echo(_line: str) -> None:
        raise OSError(5, "Input/output error")  # the terminal is gone

    guard = Guard(Children(), echo, on_hangup=lambda: echo(""))
    guard.start_cleanup("drill-usw2-20250131T031200Z")
    with guard.installed():
        os.kill(os.getpid(), signal.SIGHUP)
        signal.sigtimedwait([], 0.1)  # no OSError surfaces in the middle of cleanup
    guard.cleaning = None
    with guard.installed(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGHUP)
        signal.sigtimedwait([], 0.1)


def test_sigpipe_is_ignored_while_a_drill_runs() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGPIPE)}
    with Guard(Children(), lambda _m: None).installed():
        assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, before[signal.SIGHUP])
    assert {s: signal.getsignal(s) for s in before} == before


def test_the_deadline_stops_a_drill_blocked_in_a_wait_as_ctrl_c_would() -> None:
    said: list[str] = []
    guard = Guard(Children(), said.append)
    with (
        guard.installed(),
        guard.deadline(0.2, "its deadline"),
        pytest.raises(KeyboardInterrupt),
    ):
        threading.Event().wait(10)  # a wait in the main thread, woken by the watchdog's signal
    assert guard.interrupted and guard.reason == "its deadline"
    assert said == [
        "gpudr: its deadline: stopping the drill; its stack is destroyed and removed next"
    ]


def test_the_deadline_sends_the_running_command_sigint() -> None:
    children = Children()
    guard = Guard(children, lambda _m: None)
    with running_command(children) as child, guard.installed(), guard.deadline(0.1, "its deadline"):
        assert child.wait(10) != 0  # KeyboardInterrupt in the child: it stopped on SIGINT
    assert guard.reason == "its deadline"


def test_the_deadline_never_interrupts_cleanup() -> None:
    guard = Guard(Children(), lambda _m: None)
    guard.start_cleanup("drill-usw2-20250131T031200Z")
    with guard.installed(), guard.deadline(0.05, "its deadline"):
        threading.Event().wait(0.3)  # no KeyboardInterrupt: the destroy goes on
    assert not guard.interrupted
