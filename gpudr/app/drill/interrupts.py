"""Ctrl-C, SIGTERM and SIGHUP during a drill: the drill stops, and its stack is destroyed and
removed.

Every external command a drill runs (the Pulumi CLI; gcloud, asked who you are) starts in its
own session, so the terminal's Ctrl-C (or its hangup) reaches gpudr only, and gpudr decides:

- the first Ctrl-C, SIGTERM or SIGHUP stops the drill: the running command gets SIGINT (the
  Pulumi CLI cancels its update gracefully, finishing the operations in flight), or, with none
  running, the drill's own code is interrupted (an SDK call in progress; checksum streams stop
  at their next chunk, drill/verify.py); then cleanup starts;
- SIGHUP means the terminal is gone (an SSH session dropped): from then on gpudr writes to a log
  file next to the report instead (drill/console.py), so that cleanup never fails on a write;
  SIGPIPE is ignored, so a closed pipe is an error on a write, which the console handles alike;
- during cleanup, any of them only says that cleanup is in progress: the destroy it would
  otherwise cancel is the one thing that stops the bill. (SIGKILL cannot be caught: `gpudr drill
  cleanup` removes what a killed drill left, once its TTL has passed.)
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


class Children:
    """The external processes running for the drill right now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[Any]] = set()

    def add(self, proc: subprocess.Popen[Any]) -> None:
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[Any]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def interrupt(self) -> bool:
        """SIGINT to every running child; False when none runs."""
        with self._lock:
            running = [p for p in self._procs if p.poll() is None]
        for proc in running:
            proc.send_signal(signal.SIGINT)
        return bool(running)


# How each signal is named to the operator.
_SAID = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
STOPS = tuple(_SAID)


class Guard:
    """Signal handling for one drill; `interrupted` tells the drill why a command failed.
    `on_hangup` runs on SIGHUP, before anything is said: the terminal is gone."""

    def __init__(
        self,
        children: Children,
        echo: Callable[[str], None],
        on_hangup: Callable[[], None] = lambda: None,
    ) -> None:
        self.children = children
        self.echo = echo
        self.on_hangup = on_hangup
        self.interrupted = False
        self.reason = ""  # what stopped the drill, for its report
        self.cleaning: str | None = None  # the stack being cleaned up
        self._deadline: str | None = None  # set when the watchdog, not a person, stops it

    def start_cleanup(self, stack: str) -> None:
        self.cleaning = stack

    def _say(self, line: str) -> None:
        """A handler raises nothing but the interrupt it means: a failing write must not
        surface in the middle of the drill's code, least of all in cleanup."""
        with contextlib.suppress(Exception):
            self.echo(line)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if signum == signal.SIGHUP:
            with contextlib.suppress(Exception):
                self.on_hangup()
        said = _SAID.get(signal.Signals(signum), signal.Signals(signum).name)
        if self.cleaning is not None:
            self._say(
                f"gpudr: cleanup of {self.cleaning} is in progress and continues until the stack "
                f"is destroyed and removed; {said} does not stop it"
            )
            return
        if self.interrupted:
            self._say("gpudr: already stopping; the drill stack is destroyed next")
            return
        self.interrupted = True
        self.reason = self._deadline or said
        name = self._deadline or signal.Signals(signum).name
        self._say(f"gpudr: {name}: stopping the drill; its stack is destroyed and removed next")
        if not self.children.interrupt():
            raise KeyboardInterrupt

    @contextmanager
    def deadline(self, seconds: float, what: str) -> Iterator[None]:
        """Stop the drill as Ctrl-C would once `seconds` have passed (`what` says why): a drill
        whose `pulumi up` waits on capacity, or whose checks hang, still leaves its destroy the
        time it needs before the stack's TTL, and before a CI job's timeout kills it mid-destroy.
        The watchdog signals the main thread, so that a wait there is woken like by Ctrl-C."""
        main = threading.main_thread().ident

        def fire() -> None:
            if self.cleaning is None and not self.interrupted and main is not None:
                self._deadline = what
                signal.pthread_kill(main, signal.SIGINT)

        timer = threading.Timer(max(0.0, seconds), fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    @contextmanager
    def installed(self) -> Iterator[Guard]:
        """Handlers for SIGINT, SIGTERM and SIGHUP while the drill runs, and SIGPIPE ignored
        (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self.handle) for s in STOPS}
        previous[signal.SIGPIPE] = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
