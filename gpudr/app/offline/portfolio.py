"""Run many plans' programs at once: `gpudr plan A.yaml B.yaml ...` on every core.

One process runs one stack at a time (the Pulumi SDK's state is global), and most of a plan's
time is the SDK's own work per resource and importing each cloud's SDK (docs/benchmarks.md), so
a portfolio of plans goes faster only on more cores, and only if the SDKs are not imported again
in every process. `Workers` forks one process, the zygote, that imports the portfolio's SDKs
(offline/preload.py) one cloud after another; the worker processes are forked from it, and so
start with every SDK it had imported by then, shared with it page for page. A worker runs the
plans it is given, one at a time, that need no SDK it lacks, and sends back what
`offline.plan.run_design` returned. While the zygote imports, the first workers already run the
plans of the clouds it has: the cloud that lets the most plans run comes first. A worker with
nothing left that its SDKs can run exits, and a new one is forked with more.

With one job, or one plan, or where processes cannot be forked (only Linux is assumed to fork
safely), everything runs in this process, as `gpudr plan PLAN` always has.
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
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any

from gpudr.core.design import Design

Stacks = list[dict[str, Any]]

# How long the zygote sleeps between checks for exited workers once it has nothing to import.
_REAP_S = 0.05
# How long a worker's exit code is waited for once its pipe has closed.
_EXIT_CODE_WAIT_S = 5.0


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


def load_order(clouds: Sequence[frozenset[str]]) -> list[str]:
    """The order in which the zygote imports the clouds' SDKs: each time, the cloud that lets
    the most plans run (with those before it), then the one the most plans need; ties in the
    order the plans first name them."""
    first_seen = [c for plan in clouds for c in sorted(plan)]
    rank = {c: first_seen.index(c) for c in set(first_seen)}
    order: list[str] = []
    left = set(rank)
    while left:

        def gain(cloud: str) -> tuple[int, int, int]:
            have = {*order, cloud}
            runnable = sum(1 for plan in clouds if cloud in plan and plan <= have)
            needed = sum(1 for plan in clouds if cloud in plan)
            return (-runnable, -needed, rank[cloud])

        best = min(left, key=gain)
        order.append(best)
        left.remove(best)
    return order


def _pool_size(jobs: int, order: Sequence[str]) -> int:
    """The workers a run may fork (each needs its pipe before the zygote is forked): a full
    set after each cloud is imported, and before."""
    return jobs * (len(order) + 1)


def _label(des: Design) -> str:
    source = f" ({des.plan.source})" if des.plan.source else ""
    return f"plan {des.plan.name}{source}"


def _serve(conn: Connection, designs: Sequence[Design]) -> None:
    """A worker: run the plan whose index it is sent; send back ("stack", index, record) as
    each of its stacks has run (the pack can judge it while the next one runs), then
    (kind, index, payload): ("ok", index, run_design's list) or ("error", index, message)."""
    # An event loop the parent used (it ran a stack before, as in the tests) comes over with a
    # default executor whose threads were not forked: the SDK's calls into it would wait
    # forever. Each worker runs its stacks on a loop of its own.
    asyncio.set_event_loop(asyncio.new_event_loop())
    # run_stack collects once before each stack and keeps the collector off while it runs;
    # off between stacks too, a worker does not scan one stack's objects twice. It exits
    # without tearing anything down.
    gc.disable()
    from gpudr.app.offline.plan import ProgramError, run_design

    while True:
        try:
            index = conn.recv()
        except EOFError:  # the parent is gone
            return
        if index is None:
            return
        try:
            each = functools.partial(_send_stack, conn, index)
            conn.send(("ok", index, run_design(designs[index], on_stack=each)))
        except ProgramError as exc:
            conn.send(("error", index, str(exc)))
        except Exception as exc:  # anything else the program raised, or an unpicklable value
            conn.send(("error", index, f"{type(exc).__name__}: {exc}"))


def _send_stack(conn: Connection, index: int, record: dict[str, Any]) -> None:
    conn.send(("stack", index, record))


def _zygote(
    control: Connection,
    ends: list[Connection | None],
    designs: Sequence[Design],
    clouds: Sequence[str],
) -> None:
    """Import the SDKs of `clouds`, one after another, and fork a worker on `ends[k]` whenever
    asked ("fork", k). Tells the parent ("loaded", cloud) as each cloud's SDK is in, and
    ("forked", k, pid) and ("exited", k, exit code) for its workers. None, or the parent gone:
    wait for the workers, and exit."""
    from gpudr.app.offline import preload

    # Ctrl-C reaches the whole process group; the parent decides, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import gpudr.app.offline.plan  # noqa: F401  # Pulumi itself, for every worker

    todo = list(preload.steps(clouds))
    workers: dict[int, int] = {}  # pid -> k
    while True:
        _reap(workers, control, block=False)
        if control.poll(0 if todo else _REAP_S):
            try:
                message = control.recv()
            except EOFError:
                break
            if message is None:
                break
            k = message[1]
            pid = _fork_worker(control, ends, k, designs)
            workers[pid] = k
            control.send(("forked", k, pid))
        elif todo:
            cloud, module = todo.pop(0)
            if module is None:
                control.send(("loaded", cloud))
                continue
            try:
                preload.load(module)
            except Exception as exc:  # a worker that needs it fails with the program's error
                control.send(("skipped", module, f"{type(exc).__name__}: {exc}"))
    while workers:
        _reap(workers, control, block=True)


def _fork_worker(
    control: Connection, ends: list[Connection | None], k: int, designs: Sequence[Design]
) -> int:
    # Frozen, what the zygote imported is left out of the workers' collections, which would
    # write to every object they visit and so copy the pages the workers share with it.
    gc.collect()
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        # The worker keeps its own pipe only: a pipe another process also holds open never
        # tells the parent that its worker died.
        control.close()
        for j, end in enumerate(ends):
            if end is not None and j != k:
                end.close()
        conn = ends[k]
        assert conn is not None
        code = 1
        try:
            _serve(conn, designs)
            code = 0
        except BaseException:  # its pipe broke: said on stderr, and in the exit code
            traceback.print_exc()
        finally:
            os._exit(code)
    end = ends[k]
    assert end is not None
    end.close()
    ends[k] = None
    return pid


def _reap(workers: dict[int, int], control: Connection, block: bool) -> None:
    """Tell the parent the exit code of each worker that has exited."""
    while workers:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            workers.clear()
            return
        if pid == 0:
            return
        k = workers.pop(pid, None)
        if k is not None:
            with contextlib.suppress(OSError):  # the parent has gone
                control.send(("exited", k, os.waitstatus_to_exitcode(status)))
        if block:
            return


@dataclass
class _Worker:
    k: int  # its pipe, in the pool
    conn: Connection
    clouds: frozenset[str]  # the SDKs the zygote had imported when it was forked
    pid: int | None = None
    running: int | None = None
    stopping: bool = False


class Workers:
    """The zygote and its worker processes for a portfolio; use as a context manager, then
    `results()`.

    The zygote is forked on entry: enter before this process starts any thread (the policy
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
        or a worker; called in this process."""
        if sites is not None and len(designs) != 1:
            raise ValueError("sites are for a single plan")
        self.designs = list(designs)
        self.sites = list(sites) if sites is not None else None
        can_fork = sys.platform == "linux"
        self.jobs = max(1, min(jobs, len(self.designs))) if can_fork else 1
        self.progress = progress
        self.on_stack = on_stack
        self.clouds = [plan_clouds(d) for d in self.designs]
        self.order = load_order(self.clouds)
        self._zygote: multiprocessing.process.BaseProcess | None = None
        self._control: Connection | None = None
        self._pool: list[Connection] = []  # our ends of the workers' pipes, by k
        self._workers: list[_Worker] = []
        self._loaded: set[str] = set()
        self._exit_codes: dict[int, int] = {}

    @property
    def in_process(self) -> bool:
        return self.jobs == 1

    def __enter__(self) -> Workers:
        if self.in_process:
            return self
        context = multiprocessing.get_context("fork")
        ours, theirs = zip(
            *(context.Pipe() for _ in range(_pool_size(self.jobs, self.order))), strict=True
        )
        self._pool = list(ours)
        control, zygote_end = context.Pipe()
        gc.freeze()  # as in _fork_worker: this process's objects stay unwritten in the zygote
        try:
            self._zygote = context.Process(
                target=_zygote,
                args=(zygote_end, list(theirs), self.designs, self.order),
                name="gpudr-zygote",
                daemon=True,
            )
            self._zygote.start()
            self._control = control
        except BaseException:
            control.close()
            self.close()
            raise
        finally:
            gc.unfreeze()
            zygote_end.close()
            for end in theirs:
                end.close()
        if self.progress:
            self.progress(
                f"importing the SDKs of {', '.join(self.order)} once, in the process that forks"
                f" the workers ({self._zygote.pid})"
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the workers (ask; terminate one still running a plan), then the zygote."""
        with contextlib.suppress(PlanRunError, OSError):  # learn the pids of the last forks
            while self._control is not None and self._control.poll(0):
                self._from_zygote()
        for w in self._workers:
            if w.running is not None and w.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(w.pid, signal.SIGTERM)
            elif not w.stopping:
                with contextlib.suppress(OSError):  # it has exited already
                    w.conn.send(None)
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.send(None)
        if self._zygote is not None:
            self._zygote.join(timeout=_EXIT_CODE_WAIT_S)
            if self._zygote.is_alive():
                self._zygote.terminate()
                self._zygote.join()
        for conn in [*self._pool, *([self._control] if self._control else [])]:
            conn.close()
        self._zygote, self._control, self._pool, self._workers = None, None, [], []

    def results(self) -> Iterator[tuple[int, Stacks]]:
        """(plan index, its stacks as `run_design` returns them), as each plan finishes.

        Raises PlanRunError for the first plan whose program fails; the others stop with
        `close`."""
        if self.in_process:
            yield from self._in_process()
            return
        assert self._control is not None
        pending = list(range(len(self.designs)))
        while pending or any(w.running is not None for w in self._workers):
            self._schedule(pending)
            busy = {w.conn: w for w in self._workers if w.running is not None}
            for conn in wait([self._control, *busy]):
                if conn is self._control:
                    self._from_zygote()
                    continue
                w = busy[conn]  # type: ignore[index]
                index = w.running
                assert index is not None
                try:
                    kind, done, payload = w.conn.recv()
                except EOFError:
                    raise PlanRunError(
                        f"{_label(self.designs[index])}: the worker process running it exited"
                        f" (exit code {self._exit_code(w)})"
                    ) from None
                if kind == "stack":
                    if self.on_stack is not None:
                        self.on_stack(done, payload)
                    continue
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

    def _from_zygote(self) -> None:
        assert self._control is not None
        try:
            message = self._control.recv()
        except EOFError:
            code = None
            if self._zygote is not None:
                self._zygote.join(timeout=_EXIT_CODE_WAIT_S)
                code = self._zygote.exitcode
            raise PlanRunError(
                f"the process that forks the plan workers exited (exit code {code})"
            ) from None
        kind = message[0]
        if kind == "loaded":
            self._loaded.add(message[1])
        elif kind == "forked":
            for w in self._workers:
                if w.k == message[1]:
                    w.pid = message[2]
        elif kind == "exited":
            self._exit_codes[message[1]] = message[2]
        elif kind == "skipped" and self.progress:
            self.progress(f"could not import {message[1]} ahead ({message[2]}); workers will")

    def _exit_code(self, w: _Worker) -> int | None:
        """A dead worker's exit code, from the zygote that reaps it."""
        while w.k not in self._exit_codes and self._control is not None:
            if not self._control.poll(_EXIT_CODE_WAIT_S):
                break
            self._from_zygote()
        return self._exit_codes.get(w.k)

    def _schedule(self, pending: list[int]) -> None:
        """Give each idle worker the first pending plan its SDKs can run; stop idle workers
        that can run none while the zygote has more; fork workers for what the zygote can run
        while there are free cores."""
        for w in self._workers:
            if w.running is not None or w.stopping:
                continue
            runnable = [i for i in pending if self.clouds[i] <= w.clouds]
            if not runnable and self._next_k() == len(self._pool):
                runnable = pending  # no worker can be forked any more: it imports for itself
            if runnable:
                self._assign(w, runnable[0], pending)
            else:
                # Its plans are done: the next worker is forked with what the zygote has since.
                w.stopping = True
                w.conn.send(None)
        alive = sum(1 for w in self._workers if not w.stopping)
        # While the zygote imports it has a core of its own: every plan waits on its imports,
        # and a worker more would only slow them down.
        cores = self.jobs if self._loaded >= set(self.order) else max(1, self.jobs - 1)
        while alive < cores and self._next_k() < len(self._pool):
            runnable = [i for i in pending if self.clouds[i] <= self._loaded]
            if not runnable:
                return
            w = self._fork()
            self._assign(w, runnable[0], pending)
            alive += 1

    def _next_k(self) -> int:
        return len(self._workers)

    def _fork(self) -> _Worker:
        assert self._control is not None
        k = self._next_k()
        self._control.send(("fork", k))
        w = _Worker(k, self._pool[k], frozenset(self._loaded))
        self._workers.append(w)
        return w

    def _assign(self, w: _Worker, index: int, pending: list[int]) -> None:
        pending.remove(index)
        w.running = index
        w.clouds |= self.clouds[index]
        w.conn.send(index)
        if self.progress:
            self.progress(f"running {_label(self.designs[index])} under mocks in worker {w.k + 1}")


__all__ = ["PlanRunError", "Workers", "default_jobs", "load_order", "plan_clouds"]
