"""`gpudr plan`'s work behind the CLI: what the plan cache holds, and the programs under mocks and
the policy pack for what it does not.

The CLI checks its inputs, asks `lookup` which plans the cache answers, loads and validates the
others, and runs them (`run_designs`), storing each report (`store`) while the others still
run. A hit is not loaded or validated again: its key covers the plan's bytes and every line of
code that validates it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudr.app.cache import (
    CacheError,
    Context,
    Entry,
    Miss,
    PlanCache,
    UncacheableCode,
    code_digest,
    plan_key,
)
from gpudr.core import yamlsafe
from gpudr.core.design import Design
from gpudr.docs.report import build_report, plan_json, plan_verdict

if TYPE_CHECKING:  # forks processes; imported only when a plan runs
    from gpudr.app.offline.portfolio import Workers

Progress = Callable[[str], None]


@dataclass
class PlanReport:
    """One plan's report: its `plan_json` text (what the cache stores, what `--format json`
    writes) and, decoded from that text when a format needs it, its data. A fresh report is
    decoded from its text too, so that a cached report renders byte for byte as a fresh one."""

    text: str
    stacks: tuple[str, ...]  # its stacks' names
    source: str  # the plan's path, as the report names it
    _data: dict[str, Any] | None = None

    @classmethod
    def fresh(cls, report: dict[str, Any]) -> PlanReport:
        stacks = tuple(s["name"] for s in report["stacks"])
        return cls(plan_json(report), stacks, report["plan"]["source"])

    @property
    def report(self) -> dict[str, Any]:
        if self._data is None:
            self._data = json.loads(self.text)
        return self._data

    @property
    def verdict(self) -> tuple[bool, bool | None]:
        """(meets every target, policy_ok: False when the pack refuses a stack, None unrun)."""
        return plan_verdict(self.text)


def plan_source(path: str) -> str:
    """How a report names the plan given as `path` (`core.spec.load_plan`'s `source`)."""
    return str(Path(path))


def _read_plan(path: str) -> bytes | None:
    """The plan's bytes; None when it cannot be read or is over the size `load_plan` accepts
    (then it is not cached: `load_plan` says what is wrong)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(yamlsafe.MAX_BYTES + 1)
    except (OSError, ValueError):
        return None
    return data if len(data) <= yamlsafe.MAX_BYTES else None


@dataclass
class CachedRun:
    """The cache as one `gpudr plan` run uses it: each plan's key, the hits, and the stores."""

    cache: PlanCache
    context: Context
    warn: Callable[[str], None]
    keys: dict[int, tuple[str, str]] = field(default_factory=dict)  # index -> (key, source)
    # index -> the bytes keyed: a plan that misses is validated and run from these very bytes.
    data: dict[int, bytes] = field(default_factory=dict)
    _store_failed: bool = False

    def lookup(self, paths: Sequence[str]) -> dict[int, PlanReport]:
        """{plan index: its stored report} for every plan the cache holds."""
        hits: dict[int, PlanReport] = {}
        for index, path in enumerate(paths):
            data = _read_plan(path)
            if data is None:
                continue
            source = plan_source(path)
            key = plan_key(source, data, self.context)
            self.keys[index] = (key, source)
            self.data[index] = data
            found = self.cache.get(key)
            if isinstance(found, Miss):
                if found.problem:
                    self.warn(
                        f"plan cache: {found.problem}; running {source} again and rewriting it"
                    )
                continue
            hits[index] = PlanReport(found.text, found.stacks, source)
        return hits

    def _code_unchanged(self) -> bool:
        """Whether the code is still what the key says (a checkout or an edit during the run
        would store a report under the key of code that did not make it). Checked before each
        store: reports are stored while the other plans still run."""
        try:
            now = code_digest()
        except UncacheableCode as exc:
            now = str(exc)
        if now != self.context.code:
            self._store_failed = True
            self.warn("plan cache: the code changed during the run; no further report is cached")
            return False
        return True

    def store(self, index: int, report: PlanReport) -> None:
        """Store a plan's report; a cache that cannot be written is said once, and the run goes
        on without it."""
        if index not in self.keys or self._store_failed or not self._code_unchanged():
            return
        key, source = self.keys[index]
        try:
            self.cache.put(key, source, Entry(report.text, report.stacks))
        except CacheError as exc:
            self._store_failed = True
            self.warn(f"{exc}; the reports are not cached")


def run_designs(
    designs: Sequence[Design],
    workers: Workers,
    sites: Sequence[str] | None,
    policy_config: Mapping[str, Any] | None,
    progress: Progress | None = None,
    on_report: Callable[[int, PlanReport], None] | None = None,
) -> list[PlanReport]:
    """Each plan's report, in the plans' order: the programs under mocks (on `workers`, entered
    before the plans were loaded), each stack sent to the one policy pack as soon as it has
    run, while the next ones run (no pack when `policy_config` is None).

    `on_report(plan index, report)`: each report once it is made (to store it): when a plan
    finishes, for every finished plan whose stacks the pack has judged by then, and at the
    end for the rest.

    Raises PlanRunError (a program failed) and PolicyPackError (the pack did not run)."""
    runs: dict[int, list[dict[str, Any]]] = {}
    verdicts: dict[int, list[Future[dict[str, list[Violation]]]]] = {}
    pack: PackSession | None = None

    def stack_done(index: int, stack: dict[str, Any]) -> None:
        """Each stack goes to the pack as soon as it has run: the pack judges a plan's primary
        while its DR stack runs."""
        if pack is not None:
            if progress:
                progress(f"policy pack: stack {stack['name']}")
            verdicts.setdefault(index, []).append(pack.submit([stack]))

    if not workers.in_process and progress:
        progress(f"running {len(designs)} plans in up to {workers.jobs} worker processes")
    # The plans go to the zygote first: it imports their SDKs while this process imports gRPC
    # and Pulumi for the pack's client, and starts the pack (a thread: after the fork).
    results = workers.run(designs, sites, on_stack=stack_done)
    from gpudr.app.offline.policy import PackSession, Violation, with_violations

    reports: dict[int, PlanReport] = {}

    def report(index: int) -> None:
        stacks = runs.pop(index)
        futures = verdicts.pop(index, None)
        if futures is not None:
            stacks = with_violations(stacks, {n: v for f in futures for n, v in f.result().items()})
        reports[index] = PlanReport.fresh(build_report(designs[index], stacks))
        if on_report is not None:
            on_report(index, reports[index])

    pack = PackSession(policy_config) if policy_config is not None else None
    with pack if pack is not None else nullcontext():
        for index, stacks in results:
            runs[index] = stacks
            # The plans the pack has judged are reported now, not after the last one.
            for done in [i for i in runs if all(f.done() for f in verdicts.get(i, ()))]:
                report(done)
        for index in list(runs):
            report(index)
    return [reports[i] for i in range(len(designs))]


__all__ = ["CachedRun", "PlanReport", "plan_source", "run_designs"]
