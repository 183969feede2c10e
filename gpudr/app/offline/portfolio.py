"""Run many plans' programs at once: `gpudr plan A.yaml B.yaml ...` on every core.

One process runs one stack at a time (the Pulumi SDK's state is global), and most of a plan's
time is the SDK's own work per resource and importing each cloud's SDK (docs/benchmarks.md), so
a portfolio of plans goes faster only on more cores. `Workers` forks worker processes that each
run `offline.plan.run_design` for the plans they are given, one plan at a time, and send back
what it returned. A free worker is given the next plan whose clouds it has already imported (an
SDK costs 0.5-1 s to import, per process), else one whose clouds no other worker has imported;
among equals, the plans' order. Results come back as plans finish; callers order them.

With one job, or one plan, everything runs in this process, as `gpudr plan PLAN` always has.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any

from gpudr.core.design import Design

Stacks = list[dict[str, Any]]


class PlanRunError(RuntimeError):
    """A plan's program failed, or the worker running it died; the message names the plan."""


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def plan_clouds(des: Design) -> frozenset[str]:
    """The clouds whose SDKs a plan's stacks import."""
    return frozenset(site.cloud for site in des.plan.sites.values())


def choose_plan(
    pending: Sequence[int],
    clouds: Sequence[frozenset[str]],
    mine: set[str] | frozenset[str],
    others: set[str] | frozenset[str],
) -> int:
    """The plan a free worker runs next: the first pending plan (by index) that needs no SDK the
    worker has not imported (`mine`); else the one needing fewest new SDKs, preferring those no
    other worker has imported (`others`), so each SDK tends to be imported once."""

    def cost(index: int) -> tuple[int, int, int]:
        new = clouds[index] - mine
        return (len(new), len(new & others), index)

    return min(pending, key=cost)


def _label(des: Design) -> str:
    source = f" ({des.plan.source})" if des.plan.source else ""
    return f"plan {des.plan.name}{source}"


def _serve(conn: Connection, designs: Sequence[Design]) -> None:
    """A worker: run the plan whose index it is sent, send back (kind, index, payload)."""
    # Ctrl-C reaches the whole process group; the parent decides, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # An event loop the parent used (it ran a stack before, as in the tests) comes over with a
    # default executor whose threads were not forked: the SDK's calls into it would wait
    # forever. Each worker runs its stacks on a loop of its own.
    asyncio.set_event_loop(asyncio.new_event_loop())
    from gpudr.app.offline.plan import ProgramError, run_design

    while True:
        try:
            index = conn.recv()
        except EOFError:  # the parent is gone
            return
        if index is None:
            return
        try:
            conn.send(("ok", index, run_design(designs[index])))
        except ProgramError as exc:
            conn.send(("error", index, str(exc)))
        except Exception as exc:  # anything else the program raised, or an unpicklable value
            conn.send(("error", index, f"{type(exc).__name__}: {exc}"))


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: Connection
    clouds: set[str] = field(default_factory=set)
    running: int | None = None


class Workers:
    """Worker processes for a portfolio; use as a context manager, then `results()`.

    The workers are forked on entry: enter before this process starts any thread (the policy
    pack's, for one), as forking a process that has threads can deadlock the child."""

    def __init__(
        self,
        designs: Sequence[Design],
        jobs: int,
        progress: Callable[[str], None] | None = None,
        sites: Sequence[str] | None = None,
        on_stack: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> None:
        """`sites`: only these sites' stacks (`gpudr plan --stack`), for a single plan.
        `on_stack(plan index, stack record)`: each stack as soon as it has run, in this process
        (one job) only; workers send a plan's stacks when the plan is done."""
        if sites is not None and len(designs) != 1:
            raise ValueError("sites are for a single plan")
        self.designs = list(designs)
        self.sites = list(sites) if sites is not None else None
        self.jobs = max(1, min(jobs, len(self.designs)))
        self.progress = progress
        self.on_stack = on_stack
        self._workers: list[_Worker] = []

    @property
    def in_process(self) -> bool:
        return self.jobs == 1

    def __enter__(self) -> Workers:
        if self.in_process:
            return self
        # fork: the workers inherit the loaded designs and gpudr's imports, and start in
        # milliseconds. Elsewhere (macOS, Windows) spawn, the platforms' safe default.
        context = (
            multiprocessing.get_context("fork")
            if sys.platform == "linux"
            else multiprocessing.get_context("spawn")
        )
        # Frozen, gpudr's objects are left out of the workers' collections, which would write
        # to every object they visit and so copy the pages the workers share with this process.
        gc.freeze()
        try:
            for _ in range(self.jobs):
                ours, theirs = context.Pipe()
                process = context.Process(
                    target=_serve, args=(theirs, self.designs), name="gpudr-plan", daemon=True
                )
                process.start()
                theirs.close()
                self._workers.append(_Worker(process, ours))
        except BaseException:
            self.close()
            raise
        finally:
            gc.unfreeze()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers: ask, then terminate what is still running a plan."""
        for w in self._workers:
            if w.running is None:
                with contextlib.suppress(OSError):  # it has exited already
                    w.conn.send(None)
        for w in self._workers:
            w.process.join(timeout=2 if w.running is None else 0)
            if w.process.is_alive():
                w.process.terminate()
                w.process.join()
            w.conn.close()
        self._workers = []

    def results(self) -> Iterator[tuple[int, Stacks]]:
        """(plan index, its stacks as `run_design` returns them), as each plan finishes.

        Raises PlanRunError for the first plan whose program fails; the others stop with
        `close`."""
        if self.in_process:
            yield from self._in_process()
            return
        pending = list(range(len(self.designs)))
        while pending or any(w.running is not None for w in self._workers):
            for w in self._workers:
                if w.running is None and pending:
                    self._assign(w, pending)
            busy = {w.conn: w for w in self._workers if w.running is not None}
            for conn in wait(list(busy)):
                w = busy[conn]  # type: ignore[index]
                index = w.running
                assert index is not None
                try:
                    kind, done, payload = w.conn.recv()
                except EOFError:
                    w.process.join(timeout=5)
                    raise PlanRunError(
                        f"{_label(self.designs[index])}: the worker process running it exited"
                        f" (exit code {w.process.exitcode})"
                    ) from None
                w.running = None
                if kind != "ok":
                    raise PlanRunError(f"{_label(self.designs[done])}: {payload}")
                yield done, payload

    def _in_process(self) -> Iterator[tuple[int, Stacks]]:
        from gpudr.app.offline.plan import ProgramError, run_design

        for index, des in enumerate(self.designs):
            each = functools.partial(self.on_stack, index) if self.on_stack else None
            try:
                stacks = run_design(des, self.sites, progress=self.progress, on_stack=each)
            except ProgramError as exc:
                raise PlanRunError(f"{_label(des)}: {exc}") from exc
            yield index, stacks

    def _assign(self, w: _Worker, pending: list[int]) -> None:
        others: set[str] = set()
        for o in self._workers:
            if o is not w:
                others |= o.clouds
        index = choose_plan(pending, [plan_clouds(d) for d in self.designs], w.clouds, others)
        pending.remove(index)
        w.clouds |= plan_clouds(self.designs[index])
        w.running = index
        w.conn.send(index)
        if self.progress:
            self.progress(
                f"running {_label(self.designs[index])} under mocks in worker {w.process.pid}"
            )


__all__ = ["PlanRunError", "Workers", "choose_plan", "default_jobs", "plan_clouds"]
