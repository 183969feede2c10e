"""Run many plans' programs at once: `gpudr plan A.yaml B.yaml ...` on every core.

One process runs one stack at a time (the Pulumi SDK's state is global), and most of a plan's
time is the SDK's own work per resource and importing each cloud's SDK (docs/benchmarks.md), so
a portfolio of plans goes faster only on more cores, and only if the SDKs are not imported again
in every process. `Workers` forks one process, the zygote, that imports Pulumi while gpudr loads
the plans, then the portfolio's SDKs (offline/preload.py) one cloud after another; the worker
processes are forked from it, and so start with every SDK it had imported by then, shared with
it page for page. A worker runs the plans it is given, one at a time, that need no SDK it lacks,
and sends back each stack as it has run. While the zygote imports (on a core of its own: one
worker fewer runs), the first workers already run the plans of the clouds it has: the cloud
that lets the most plans run comes first. A worker with nothing left that its SDKs can run
exits, and a new one is forked with more. Once stopped, the zygote stops its workers, and a
worker or the zygote whose parent has gone sees its pipe close and exits.

With one job, or one plan, or where processes cannot be forked (only Linux is assumed to fork
safely), everything runs in gpudr's own process, as `gpudr plan PLAN` always has.
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
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any, NoReturn

from gpudr.app.offline.errors import PlanRunError
from gpudr.core.design import Design

Stacks = list[dict[str, Any]]

# How long the zygote sleeps between checks for exited workers once it has nothing to import.
_REAP_S = 0.05
# How long an exit code is waited for once a process's pipe has closed, and the zygote for once
# asked to stop (it stops its workers first).
_EXIT_WAIT_S = 5.0
# How many objects the stacks a worker ran may leave before it collects them: some 30 MB of
# the SDK's Outputs and futures (about 10,000 objects a MB, in the bench portfolio's plans).
_GARBAGE_OBJECTS = 250_000


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def plan_clouds(des: Design) -> frozenset[str]:
    """The clouds whose SDKs a plan's stacks import."""
    return frozenset(site.cloud for site in des.plan.sites.values())


def run_order(designs: Sequence[Design]) -> list[int]:
    """The order in which plans are given to workers, among those their SDKs can run: the
    largest first, so that the last plans to finish are short ones and no core waits long on
    the last. A plan's size, before it has run, is its data flows and GPU pools: each is what
    its stacks register buckets, replication, clusters and node groups for. Ties: as given."""
    return sorted(range(len(designs)), key=lambda i: (-_size(designs[i]), i))


def _size(des: Design) -> int:
    return len(des.flows) + len(des.pools)


def load_order(clouds: Sequence[frozenset[str]]) -> list[str]:
    """The order in which the zygote imports the clouds' SDKs: each time, the cloud that lets
    the most plans run (with those before it), then the one the most plans need; ties: the
    first plan naming a cloud first (within a plan, by name)."""
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


def _label(des: Design) -> str:
    source = f" ({des.plan.source})" if des.plan.source else ""
    return f"plan {des.plan.name}{source}"


def _serve(conn: Connection, designs: Sequence[Design]) -> None:
    """A worker: run the plan whose index it is sent; send ("stack", index, record) as each
    of its stacks has run (the pack judges it while the next one runs), then ("ok", index,
    the stacks' names in run_design's order) or ("error", index, message)."""
    # An event loop the parent used (it ran a stack before, as in the tests) comes over with a
    # default executor whose threads were not forked: the SDK's calls into it would wait
    # forever. Each worker runs its stacks on a loop of its own.
    asyncio.set_event_loop(asyncio.new_event_loop())
    # The collector off, and run_stack's collection before a stack only once the objects made
    # since the last number _GARBAGE_OBJECTS. A collection takes time in proportion to the
    # garbage, the stacks' own objects (the SDK's Outputs and futures): an eighth of the
    # program's time (docs/benchmarks.md, the overhead table's "in GC"), spent on memory that
    # a worker running a few plans frees at once when it exits, without tearing anything
    # down. A worker that runs many plans still collects, so its memory stays bounded.
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
            stacks = run_design(designs[index], on_stack=each, garbage_limit=_GARBAGE_OBJECTS)
            conn.send(("ok", index, [s["name"] for s in stacks]))
        except ProgramError as exc:
            conn.send(("error", index, str(exc)))
        except Exception as exc:  # anything else the program raised, or an unpicklable value
            conn.send(("error", index, f"{type(exc).__name__}: {exc}"))


def _send_stack(conn: Connection, index: int, record: dict[str, Any]) -> None:
    conn.send(("stack", index, record))


def _zygote(control: Connection) -> int:
    """Import Pulumi, wait for the plans (("plans", designs, the clouds in load order)), then
    import the SDKs of those clouds, one after another, and fork a worker whenever asked
    (("fork", k), then the worker's end of its pipe, passed as a file descriptor). Tells the
    parent ("loaded", cloud) as each cloud's SDK is in, and ("exited", k, exit code) as its
    workers exit. None, or the parent gone: stop the workers, wait for them, return."""
    # The collector off for good. Importing the SDKs makes hundreds of thousands of objects
    # that live as long as the process; the collector, started every few hundred new ones,
    # rescanned them again and again, and the plans waited on it (docs/benchmarks.md, "The
    # zygote's imports, collector on and off"). Imports leave almost no cyclic garbage, and
    # the zygote makes nothing else.
    gc.disable()
    import gpudr.app.offline.plan  # noqa: F401  # Pulumi itself, for every worker
    from gpudr.app.offline import preload

    workers: dict[int, int] = {}  # pid -> k
    try:
        message = control.recv()  # while this process imported Pulumi, the parent loaded them
        if message is None:
            return 0
        _, designs, clouds = message
        _serve_forks(control, designs, list(preload.steps(clouds)), workers)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the parent is gone
    finally:
        # A worker still running a plan has nothing to keep: the run is over or has failed.
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        while workers:
            _reap(workers, control, block=True)
    return 0


def _serve_forks(
    control: Connection,
    designs: Sequence[Design],
    todo: list[tuple[str, str | None]],
    workers: dict[int, int],
) -> None:
    """The zygote's loop, until told to stop or the parent is gone: import the next module,
    or fork the worker asked for."""
    from gpudr.app.offline import preload

    while True:
        _reap(workers, control, block=False)
        if control.poll(0 if todo else _REAP_S):
            try:
                message = control.recv()
            except EOFError:
                return
            if message is None:
                return
            conn = Connection(reduction.recv_handle(control))
            workers[_fork_worker(control, conn, designs)] = message[1]
        elif todo:
            cloud, module = todo.pop(0)
            if module is None:
                control.send(("loaded", cloud))
                continue
            try:
                preload.load(module)
            except Exception as exc:  # a worker that needs it fails with the program's error
                control.send(("skipped", module, f"{type(exc).__name__}: {exc}"))


def _fork_worker(control: Connection, conn: Connection, designs: Sequence[Design]) -> int:
    """Fork a worker serving `conn`; its pid."""
    # Frozen, what the zygote holds is left out of the worker's collections (run_stack's),
    # which would write to every object they visit and so copy the pages the two share. The
    # zygote itself never collects.
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        control.close()
        _run_child(_serve, conn, designs)
    conn.close()
    return pid


def _run_child(target: Callable[..., int | None], *args: Any) -> NoReturn:
    """In a forked child: run `target`, exit with its code (1, said, for an exception)."""
    code = 1
    try:
        code = target(*args) or 0
    except BaseException:  # a pipe broke, or anything else: said on stderr and in the code
        traceback.print_exc()
    finally:
        os._exit(code)


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
    k: int  # the order in which it was forked
    conn: Connection
    clouds: frozenset[str]  # the SDKs the zygote had imported when it was forked, and its own
    running: int | None = None
    stopping: bool = False
    stacks: dict[str, dict[str, Any]] = field(default_factory=dict)  # the running plan's


OnStack = Callable[[int, dict[str, Any]], None]


class Workers:
    """The zygote and its worker processes for a portfolio; use as a context manager, then
    `run(designs)`.

    The zygote is forked on entry, before the plans are loaded: it imports Pulumi while this
    process loads them. Enter before this process starts any thread (the policy pack's, for
    one), as forking a process that has threads can deadlock the child."""

    def __init__(
        self, plans: int, jobs: int, progress: Callable[[str], None] | None = None
    ) -> None:
        """`plans`: how many plans `run` will be given; with one, or one job, or off Linux,
        they run in this process and no zygote is forked."""
        self.jobs = max(1, min(jobs, plans))
        if self.jobs > 1 and sys.platform != "linux":
            if progress:
                progress("--jobs: plans run in parallel on Linux only; here, one after another")
            self.jobs = 1
        self.progress = progress
        self.designs: list[Design] = []
        self.clouds: list[frozenset[str]] = []
        self.order: list[str] = []
        self.on_stack: OnStack | None = None
        self._pid: int | None = None  # the zygote's
        self._zygote_code: int | None = None  # its exit code, once waited for
        self._control: Connection | None = None
        self._plans_sent = False
        self._workers: list[_Worker] = []
        self._loaded: set[str] = set()
        self._exit_codes: dict[int, int] = {}

    @property
    def in_process(self) -> bool:
        return self.jobs == 1

    def __enter__(self) -> Workers:
        if self.in_process:
            return self
        control, theirs = multiprocessing.Pipe()
        pid = os.fork()
        if pid == 0:
            # Ctrl-C reaches the whole process group; the parent decides, and stops us.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            control.close()
            _run_child(_zygote, theirs)
        theirs.close()
        self._pid, self._control = pid, control
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the zygote, which stops its workers first, and wait for it."""
        if self._pid is not None and self._zygote_code is None and not self._plans_sent:
            # No plan came (one failed to load): it has forked nothing, and need not finish
            # importing Pulumi before it reads the stop.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGTERM)
        elif self._control is not None:
            with contextlib.suppress(OSError):  # it has exited already
                self._control.send(None)
        if self._pid is not None and self._wait_zygote(_EXIT_WAIT_S) is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            self._wait_zygote(None)
        for w in self._workers:
            w.conn.close()
        if self._control is not None:
            self._control.close()
        self._pid, self._control, self._workers = None, None, []

    def _wait_zygote(self, timeout: float | None) -> int | None:
        """The zygote's exit code once it has exited (waiting up to `timeout` s, None: for
        ever); None if it is still running."""
        assert self._pid is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                pid, status = os.waitpid(self._pid, os.WNOHANG if deadline else 0)
            except ChildProcessError:  # already waited for
                return self._zygote_code
            if pid:
                self._zygote_code = os.waitstatus_to_exitcode(status)
                return self._zygote_code
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def run(
        self,
        designs: Sequence[Design],
        sites: Sequence[str] | None = None,
        on_stack: OnStack | None = None,
    ) -> Iterator[tuple[int, Stacks]]:
        """(plan index, its stacks as `run_design` returns them), as each plan finishes.

        `sites`: only these sites' stacks (`gpudr plan --stack`), for a single plan.
        `on_stack(plan index, stack record)`: each stack as soon as it has run, in this process
        or a worker; called in this process. Raises PlanRunError for the first plan whose
        program fails, or a process that exits; the others stop with `close`."""
        if sites is not None and len(designs) != 1:
            raise ValueError("sites are for a single plan")
        self.designs, self.on_stack = list(designs), on_stack
        self.clouds = [plan_clouds(d) for d in self.designs]
        if self.in_process:
            return self._in_process(sites)
        self._begin()
        return self._results()

    def _begin(self) -> None:
        """Send the zygote the plans, and the order in which to import their clouds' SDKs."""
        assert self._control is not None
        self.order = load_order(self.clouds)
        try:
            self._control.send(("plans", self.designs, self.order))
        except OSError:
            raise self._zygote_gone() from None
        self._plans_sent = True
        if self.progress:
            self.progress(
                f"importing the SDKs of {', '.join(self.order)} once, in the process that forks"
                f" the workers ({self._pid})"
            )

    def _results(self) -> Iterator[tuple[int, Stacks]]:
        assert self._control is not None
        pending = run_order(self.designs)
        while pending or any(w.running is not None for w in self._workers):
            self._schedule(pending)
            busy = {w.conn: w for w in self._workers if w.running is not None}
            for conn in wait([self._control, *busy]):
                if conn is self._control:
                    self._from_zygote()
                    continue
                w = busy[conn]  # type: ignore[index]
                if (done := self._from_worker(w)) is not None:
                    # The worker that finished gets its next plan before this one's report
                    # is made and stored.
                    self._schedule(pending)
                    yield done

    def _from_worker(self, w: _Worker) -> tuple[int, Stacks] | None:
        """A finished plan's (index, stacks), once its worker says it is done."""
        index = w.running
        assert index is not None
        try:
            kind, _, payload = w.conn.recv()
        except EOFError:
            raise PlanRunError(
                f"{_label(self.designs[index])}: the worker process running it exited"
                f" (exit code {self._exit_code(w)})"
            ) from None
        if kind == "stack":
            w.stacks[payload["name"]] = payload
            if self.on_stack is not None:
                self.on_stack(index, payload)
            return None
        w.running = None
        if kind != "ok":
            raise PlanRunError(f"{_label(self.designs[index])}: {payload}")
        stacks, w.stacks = [w.stacks[name] for name in payload], {}
        return index, stacks

    def _in_process(self, sites: Sequence[str] | None) -> Iterator[tuple[int, Stacks]]:
        from gpudr.app.offline.plan import ProgramError, run_design

        for index, des in enumerate(self.designs):
            each = functools.partial(self.on_stack, index) if self.on_stack else None
            try:
                stacks = run_design(des, sites, progress=self.progress, on_stack=each)
            except ProgramError as exc:
                raise PlanRunError(f"{_label(des)}: {exc}") from exc
            yield index, stacks

    def _from_zygote(self) -> None:
        assert self._control is not None
        try:
            message = self._control.recv()
        except EOFError:
            raise self._zygote_gone() from None
        kind = message[0]
        if kind == "loaded":
            self._loaded.add(message[1])
        elif kind == "exited":
            self._exit_codes[message[1]] = message[2]
        elif kind == "skipped" and self.progress:
            self.progress(f"could not import {message[1]} ahead ({message[2]}); workers will")

    def _zygote_gone(self) -> PlanRunError:
        # Its end of the pipe is closed only by its exit: it is gone, or going.
        code = self._wait_zygote(_EXIT_WAIT_S)
        return PlanRunError(f"the process that forks the plan workers exited (exit code {code})")

    def _exit_code(self, w: _Worker) -> int | None:
        """A dead worker's exit code, from the zygote that reaps it."""
        while w.k not in self._exit_codes and self._control is not None:
            if not self._control.poll(_EXIT_WAIT_S):
                break
            self._from_zygote()
        return self._exit_codes.get(w.k)

    def _schedule(self, pending: list[int]) -> None:
        """Give each idle worker the first pending plan (in run_order) its SDKs can run, and
        stop those that can run none (a worker forked later has the SDKs imported since); fork
        workers for the plans the zygote's SDKs can run, one per free core."""
        for w in self._workers:
            if w.running is not None or w.stopping:
                continue
            runnable = [i for i in pending if self.clouds[i] <= w.clouds]
            if runnable:
                self._assign(w, runnable[0], pending)
            else:
                w.stopping = True
                self._send(w.conn, None, w)
        alive = sum(1 for w in self._workers if not w.stopping)
        # While the zygote imports it has a core of its own: every plan waits on its imports,
        # and a worker more would only slow them down.
        cores = self.jobs if self._loaded >= set(self.order) else max(1, self.jobs - 1)
        while alive < cores:
            runnable = [i for i in pending if self.clouds[i] <= self._loaded]
            if not runnable:
                return
            self._assign(self._fork(), runnable[0], pending)
            alive += 1

    def _fork(self) -> _Worker:
        """A new worker, forked by the zygote, its pipe's other end passed to it."""
        assert self._control is not None and self._pid is not None
        ours, theirs = multiprocessing.Pipe()
        w = _Worker(len(self._workers), ours, frozenset(self._loaded))
        self._workers.append(w)
        try:
            self._control.send(("fork", w.k))
            reduction.send_handle(self._control, theirs.fileno(), self._pid)
        except OSError:
            raise self._zygote_gone() from None
        finally:
            theirs.close()
        return w

    def _send(self, conn: Connection, message: int | None, w: _Worker) -> None:
        try:
            conn.send(message)
        except OSError:  # it died while idle
            raise PlanRunError(
                f"a plan worker process exited before it was given a plan (exit code"
                f" {self._exit_code(w)})"
            ) from None

    def _assign(self, w: _Worker, index: int, pending: list[int]) -> None:
        pending.remove(index)
        w.running = index
        w.clouds |= self.clouds[index]
        self._send(w.conn, index, w)
        if self.progress:
            self.progress(f"running {_label(self.designs[index])} under mocks in worker {w.k + 1}")


__all__ = ["PlanRunError", "Workers", "default_jobs", "load_order", "plan_clouds", "run_order"]
