"""A drill's output, which outlives the terminal.

When the terminal goes away (an SSH session drops: SIGHUP, then every write to the terminal
fails with EIO; or the pipe gpudr writes to is closed: EPIPE), the drill must still stop,
destroy its stack and write its report. So no line gpudr or the Pulumi CLI prints may raise:
the first write that fails (or a SIGHUP, whichever comes first) points gpudr's standard output
and error at a log file next to the report, once and for all, and every later line, whoever
writes it (click, a traceback, the interpreter's last flush), lands there.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import click


class Console:
    """Lines for the terminal, or for `log` once the terminal is gone. Thread-safe: the Pulumi
    CLI's output arrives on reader threads while the drill's own lines come from the main
    thread (and from signal handlers, hence a reentrant lock)."""

    def __init__(self, log: Path, what: str = "the drill") -> None:
        self.log = log
        self.what = what  # what goes on once the terminal is gone
        self.detached = False
        self._lock = threading.RLock()

    def line(self, text: str, err: bool = True) -> None:
        """`text` on stderr (stdout when not `err`), or in the log; never raises."""
        with self._lock:
            try:
                click.echo(text, err=err)
                return
            except (OSError, ValueError) as exc:  # EIO, EPIPE, or a closed stream
                self.detach(f"the terminal is gone ({type(exc).__name__})")
            with contextlib.suppress(OSError, ValueError):
                click.echo(text, err=err)

    def detach(self, why: str) -> None:
        """From now on, standard output and error go to the log; `why` is its first line. A
        signal handler calls this too: the lock is waited for briefly, never for ever (a
        reader thread may be stuck writing to a pipe nobody reads)."""
        locked = self._lock.acquire(timeout=2)
        try:
            if self.detached:
                return
            self.detached = True
            self._say_where(why)
            self._redirect(why)
        finally:
            if locked:
                self._lock.release()

    def _say_where(self, why: str) -> None:
        """The one line the terminal may still get, if it is there at all."""
        with contextlib.suppress(OSError, ValueError):
            click.echo(f"gpudr: {why}; {self.what} goes on, its output in {self.log}", err=True)

    def _redirect(self, why: str) -> None:
        """File descriptors 1 and 2 become the log: Python's own streams, and anything that
        writes to them later, keep working without knowing."""
        try:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError:
            fd = os.open(os.devnull, os.O_WRONLY)  # nowhere to write: the drill still ends
        try:
            os.write(fd, f"gpudr: {why}; output continues here\n".encode())
            for target in (1, 2):
                os.dup2(fd, target)
        finally:
            os.close(fd)
