"""Run one drill, and clean up expired ones.

`run_drill` does, in this order: refuse a name that is not a drill stack's; create the stack;
set its config (the DR site's, in drill mode) and its TTL tags; `up` with the pools at 0
(infrastructure); locate the latest checkpoint and verify its checksums; scale the pools to
their test size (`up` again) and wait for the nodes (capacity); measure the data age per
replicated class (achieved RPO). Whatever happens (a stage failing, an exception, Ctrl-C) it
then destroys the stack and, once that succeeded, removes it; a stack whose destroy failed is
kept, so that `gpudr drill cleanup` (or `pulumi destroy`) can finish the job. The report is
written after each stage and once more at the end, with the cleanup's result.

Checksum-verified means: the objects of the latest checkpoint (the newest object's folder, or
the bucket's root when nothing is in a folder) are listed; up to the plan's byte budget
(`drill.verify`, default 2 GB) of them, in key order, are streamed from the replica through
this host and hashed with the algorithm the cloud recorded at upload (S3: the object's
additional checksum, per part for multipart uploads; Cloud Storage: CRC32C; Azure:
Content-MD5); each must equal the recorded value, and its length the listed size. An object
with no recorded checksum fails the check: a replica nobody can verify is not verified. It
proves the sampled bytes are the bytes written; it does not prove the checkpoint complete or
loadable by your framework.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpudr.app.drill.probes import ObjectInfo, Probe, ProbeError
from gpudr.app.drill.stacks import StackInterface
from gpudr.app.drill.verify import verify_all
from gpudr.build.drill import DrillSetup, expiry
from gpudr.contract.drill import (
    DrillNameError,
    check_not_future,
    check_stack_name,
    drill_site,
    iso,
    looks_like_drill_stack,
    parse_ts,
)
from gpudr.contract.site import BucketConfig
from gpudr.core.units import fmt_duration, fmt_size
from gpudr.docs.drillreport import (
    Cleanup,
    DataAge,
    DrillReport,
    StageResult,
    new_report,
    outcome,
    workload_rtos,
)

DESTROY_ATTEMPTS = 3
DESTROY_RETRY_S = 60.0
LIST_ATTEMPTS = 6  # a new identity's grants reach the storage service within minutes
LIST_RETRY_S = 20.0
POLL_S = 30.0
# Capacity is awaited up to 1.5 x its target (at least 15 minutes), and never so long that the
# stack could outlive its TTL: destroying GPU pools and a control plane takes a while.
CAPACITY_FACTOR = 1.5
CAPACITY_MIN_S = 900.0


class StageFailed(RuntimeError):
    """A drill stage ran and found a problem; the message says what, in one line."""


@dataclass
class Deps:
    """What a drill talks to; tests pass fakes."""

    stacks: StackInterface
    probe: Probe | None = None  # the cloud checks; not needed to clean up
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    sleep: Callable[[float], None] = time.sleep
    write: Callable[[DrillReport], None] = lambda _r: None
    echo: Callable[[str], None] = lambda _m: None
    interrupted: Callable[[], bool] = lambda: False  # set by the signal handler (Guard)
    stop_reason: Callable[[], str] = lambda: "Ctrl-C, SIGTERM or SIGHUP"  # the Guard's reason
    on_cleanup: Callable[[str], None] = lambda _s: None
    poll_s: float = POLL_S


def run_drill(setup: DrillSetup, deps: Deps) -> DrillReport:
    """Run the drill `setup` describes; DrillNameError before anything for a non-drill name.
    An error outside the stages (the backend refusing the stack, the report writer failing) is
    raised again once the stack is cleaned up."""
    check_stack_name(setup.stack)
    if deps.probe is None:
        raise ValueError("run_drill needs deps.probe, the cloud's checks")
    name = setup.stack
    report = new_report(setup, deps.clock())
    if setup.drill.operator is None and setup.site.cloud != "azure":
        report.notes.append(
            "No operator was identified, so the drill stack let nobody act as its reader"
            + (" (it declared no reader role)" if setup.site.cloud == "aws" else "")
            + ": the checks read the replicas with the operator's own credentials."
        )
    created = False
    error: Exception | None = None
    try:
        deps.stacks.create(name)
        created = True
        deps.stacks.set_config(name, setup.config("infrastructure"))
        deps.stacks.set_tags(name, setup.stack_tags())
        outputs: dict[str, Any] = {}
        with _stage(report, "infrastructure", deps) as s:
            outputs = deps.stacks.up(name, deps.echo)
            clusters = ", ".join(sorted((outputs.get("clusters") or {}).values())) or "-"
            s.detail = f"clusters {clusters}; reader {outputs.get('reader') or '-'}"
            s.measurements = {"outputs": outputs}
        deps.write(report)
        # Nothing stands to test when the environment failed: straight to cleanup.
        if report.stage("infrastructure").status == "passed":
            _stages(setup, deps, report, outputs)
    except KeyboardInterrupt:
        report.interrupted = True
        for s in report.stages:
            if s.status == "running":
                s.status = "interrupted"
        report.notes.append(f"Interrupted ({deps.stop_reason()}): the drill stopped there.")
    except Exception as exc:
        if deps.interrupted():  # a command stopped by the signal handler
            report.interrupted = True
            report.notes.append(f"Interrupted ({deps.stop_reason()}): the drill stopped there.")
        else:
            error = exc
            report.notes.append(f"Error: {_one_line(exc)}")
    finally:
        if created:
            _cleanup(name, deps, report)
        report.finished_at = iso(deps.clock())
        report.workloads = workload_rtos(setup, report)
        started = parse_ts(report.started_at)
        elapsed = (deps.clock() - started).total_seconds()
        report.cost_measured_usd = setup.cost.for_seconds(elapsed) if created else 0.0
        report.outcome = "error" if error is not None else outcome(report)
    if error is not None:
        # The error being raised says more than a second failure of the writer would.
        with contextlib.suppress(Exception):
            deps.write(report)
        raise error
    deps.write(report)
    return report


def _stages(setup: DrillSetup, deps: Deps, report: DrillReport, outputs: dict[str, Any]) -> None:
    """The stages after the environment is up, in the runbook's order. Each stage that reads
    the replicas signs in as the reader first: its session lasts an hour, a drill longer."""
    probe = _probe(deps)
    if report.stage("checkpoint").status != "skipped":
        with _stage(report, "checkpoint", deps) as s:
            probe.sign_in(outputs)
            _checkpoint(setup, deps, s)
        deps.write(report)
    if report.stage("capacity").status != "skipped":
        with _stage(report, "capacity", deps) as s:
            deps.stacks.set_config(setup.stack, setup.config("capacity"))
            deps.stacks.up(setup.stack, deps.echo)
            _capacity(setup, deps, s)
        deps.write(report)
    with _stage(report, "data-age", deps) as s:
        probe.sign_in(outputs)
        _data_age(setup, deps, report, s)
    report.notes.append(f"Replicas were read as {probe.identity()}.")


@contextmanager
def _stage(report: DrillReport, key: str, deps: Deps) -> Iterator[StageResult]:
    """Times one stage. A StageFailed or ProbeError fails the stage and the drill goes on;
    an interrupt (or a command that failed because of one) stops the drill."""
    s = report.stage(key)
    start = deps.clock()
    s.started_at = iso(start)
    s.status = "running"
    try:
        yield s
        s.status = "passed"
    except KeyboardInterrupt:
        s.status = "interrupted"
        raise
    except Exception as exc:
        if deps.interrupted():
            s.status = "interrupted"
            raise KeyboardInterrupt from exc
        s.status = "failed"
        s.detail = _one_line(exc)
    finally:
        s.duration_s = (deps.clock() - start).total_seconds()


def _probe(deps: Deps) -> Probe:
    assert deps.probe is not None  # run_drill checked
    return deps.probe


def _one_line(exc: BaseException, limit: int = 400) -> str:
    """An exception as one line. A Pulumi CLI error carries the whole output: keep its last
    line that says `error`, which is the one that names the resource and the reason."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    errors = [x for x in lines if "error" in x.lower()]
    text = (errors or lines or [type(exc).__name__])[-1]
    if not isinstance(exc, StageFailed | ProbeError) and len(lines) <= 1:
        text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- checkpoint ---------------------------------------------------------------------------------


def _list(setup: DrillSetup, deps: Deps, bucket: BucketConfig) -> list[ObjectInfo]:
    """The bucket's objects, retried while the reader's fresh grants propagate."""
    for attempt in range(LIST_ATTEMPTS):
        try:
            return _probe(deps).list_objects(bucket)
        except ProbeError:
            if attempt == LIST_ATTEMPTS - 1 or deps.interrupted():
                raise
            deps.sleep(LIST_RETRY_S)
    raise AssertionError("unreachable")


def latest_checkpoint(objects: list[ObjectInfo]) -> tuple[str, list[ObjectInfo]]:
    """The folder (key prefix up to the last `/`) holding the newest object, with its objects
    in key order. Objects at the bucket's root (a `latest` pointer file, say) count only when
    no object is in a folder."""
    groups: dict[str, list[ObjectInfo]] = {}
    for o in objects:
        prefix = o.key.rsplit("/", 1)[0] + "/" if "/" in o.key else ""
        groups.setdefault(prefix, []).append(o)
    candidates = {p: g for p, g in groups.items() if p} or groups
    prefix = max(candidates, key=lambda p: max(o.modified for o in candidates[p]))
    return prefix, sorted(candidates[prefix], key=lambda o: o.key)


def sample(objects: list[ObjectInfo], budget: float) -> list[ObjectInfo]:
    """Objects in key order while their sizes fit in `budget` bytes; at least the smallest."""
    chosen: list[ObjectInfo] = []
    used = 0
    for o in objects:
        if used + o.size <= budget:
            chosen.append(o)
            used += o.size
    if not chosen and objects:
        chosen.append(min(objects, key=lambda o: (o.size, o.key)))
    return chosen


def _checkpoint(setup: DrillSetup, deps: Deps, s: StageResult) -> None:
    target = next(t for t in setup.data if t.data_class == "checkpoints")
    bucket = target.bucket
    objects = _list(setup, deps, bucket)
    where = _probe(deps).url(bucket)
    if not objects:
        raise StageFailed(f"{where} holds no object: nothing has been replicated to it yet")
    prefix, group = latest_checkpoint(objects)
    chosen = sample(group, setup.verify_b)
    rows = verify_all(_probe(deps), bucket, chosen)
    total = sum(o.size for o in group)
    checked = sum(r["size"] for r in rows)
    s.measurements = {
        "bucket": where,
        "checkpoint": prefix or "(bucket root)",
        "objects": len(group),
        "bytes": total,
        "newest_at": iso(max(o.modified for o in group)),
        "verified_objects": len(rows),
        "verified_bytes": checked,
        "budget_bytes": setup.verify_b,
        "verified": rows,
    }
    failed = [r for r in rows if not r["ok"]]
    summary = (
        f"{where}/{prefix}: {len(group)} object(s), {fmt_size(total)}; "
        f"{len(rows)} re-hashed ({fmt_size(checked)}, "
        f"{100 * checked / total if total else 100:.0f}% of the bytes)"
    )
    if failed:
        first = failed[0]
        raise StageFailed(
            f"{summary}; {len(failed)} failed verification, first {first['key']}: {first['detail']}"
        )
    s.detail = f"{summary}: every checksum matches"


# --- capacity -----------------------------------------------------------------------------------


def _capacity(setup: DrillSetup, deps: Deps, s: StageResult) -> None:
    stage = setup.stage("capacity")
    start = deps.clock()
    wait = max(CAPACITY_MIN_S, CAPACITY_FACTOR * (stage.target_s or 0.0))
    left = (setup.drill.stop_at - start).total_seconds()
    wait = max(0.0, min(wait, left))
    states: dict[str, str] = {}
    while True:
        ready = True
        for p in setup.pools:
            state = _probe(deps).pool_state(p)
            states[p.pool] = f"{min(state.ready, p.nodes)} of {p.nodes} ({state.detail})"
            ready = ready and state.ready >= p.nodes
        s.measurements = {"pools": dict(states)}
        if ready:
            s.detail = "; ".join(f"{k}: {v}" for k, v in states.items())
            return
        waited = (deps.clock() - start).total_seconds()
        if waited >= wait:
            raise StageFailed(
                f"not every pool reached its test size within {fmt_duration(wait)}: "
                + "; ".join(f"{k}: {v}" for k, v in states.items())
            )
        deps.sleep(deps.poll_s)


# --- data age -----------------------------------------------------------------------------------


def _data_age(setup: DrillSetup, deps: Deps, report: DrillReport, s: StageResult) -> None:
    """Listed now, not reused from the checkpoint stage: the age is the one at this moment."""
    problems = []
    for target, row in zip(setup.data, report.data_age, strict=True):
        bucket = target.bucket
        try:
            objects = _list(setup, deps, bucket)
        except ProbeError as exc:
            if deps.interrupted():
                raise KeyboardInterrupt from exc
            row.detail = _one_line(exc)
            problems.append(f"{target.data_class}: {row.detail}")
            continue
        _age(row, objects, deps.clock())
        if target.mechanism.startswith("gcs-"):
            row.detail += (
                " One bucket spans both regions: a listed object's bytes may not all be in this "
                "region yet."
            )
        if not target.judged:
            row.detail += " Not judged: published on demand, so its age is not data loss."
    s.measurements = {d.data_class: d.age_s for d in report.data_age}
    s.detail = "; ".join(
        f"{d.data_class} {fmt_duration(d.age_s) if d.age_s is not None else '?'} old"
        for d in report.data_age
    )
    if problems:
        raise StageFailed("; ".join(problems))


def _age(row: DataAge, objects: list[ObjectInfo], now: datetime) -> None:
    row.objects = len(objects)
    if not objects:
        row.detail = "no object in the replica."
        return
    newest = max(objects, key=lambda o: o.modified)
    row.newest_key = newest.key
    row.newest_at = iso(newest.modified)
    row.age_s = max(0.0, (now - newest.modified).total_seconds())
    row.detail = f"newest {newest.key}, written {row.newest_at}."


# --- cleanup ------------------------------------------------------------------------------------


def _locked(exc: BaseException) -> bool:
    """Pulumi refusing an operation because an update holds the stack: Pulumi Cloud's 409
    ("Another update is currently in progress") or a self-managed backend's lock file ("the
    stack is currently locked")."""
    text = str(exc).lower()
    return "currently in progress" in text or "currently locked" in text


def _destroy_and_remove(name: str, deps: Deps, unlock: bool = False) -> Cleanup:
    """Destroy (retried), then remove only once destroyed: a stack whose resources may still
    exist stays listed, so that cleanup can find it again. `unlock` (an expired drill, whose
    own process is gone): an update still holding the stack was killed mid-way (a runner's
    timeout, SIGKILL), so it is cancelled once (`pulumi cancel`) and the destroy tried again."""
    check_stack_name(name)
    start = deps.clock()
    result = Cleanup(detail="")
    last: BaseException | None = None
    cancelled = False
    for attempt in range(DESTROY_ATTEMPTS):
        try:
            deps.stacks.destroy(name, deps.echo)
            result.destroyed = True
            break
        except Exception as exc:
            last = exc
            deps.echo(f"gpudr: destroy of {name} failed (attempt {attempt + 1}): {_one_line(exc)}")
            if unlock and not cancelled and _locked(exc):
                cancelled = True
                _cancel(name, deps)
            if attempt < DESTROY_ATTEMPTS - 1:
                deps.sleep(DESTROY_RETRY_S)
    if result.destroyed:
        try:
            deps.stacks.remove(name)
            result.removed = True
            result.detail = f"{name} destroyed and removed"
        except Exception as exc:
            result.detail = (
                f"{name} destroyed but not removed ({_one_line(exc)}); run "
                f"`pulumi stack rm {name} --yes`"
            )
    else:
        reason = _one_line(last) if last else "unknown"
        result.detail = (
            f"{name} NOT destroyed after {DESTROY_ATTEMPTS} attempts ({reason}); its resources "
            f"may still bill: run `pulumi destroy -s {name}` or `gpudr drill cleanup`"
        )
    result.duration_s = (deps.clock() - start).total_seconds()
    return result


def _cancel(name: str, deps: Deps) -> None:
    deps.echo(f"gpudr: {name} is held by an update that was killed; cancelling it")
    try:
        deps.stacks.cancel(name)
    except Exception as exc:
        deps.echo(
            f"gpudr: cancel of {name} failed ({_one_line(exc)}): on a self-managed backend, "
            f"remove its lock under .pulumi/locks/ once no pulumi process runs for {name}"
        )


def _cleanup(name: str, deps: Deps, report: DrillReport) -> None:
    deps.on_cleanup(name)
    deps.echo(f"gpudr: destroying and removing {name}")
    report.cleanup = _destroy_and_remove(name, deps)


@dataclass(frozen=True)
class Expired:
    stack: str
    expires_at: str  # "-" when it cannot be known
    source: str  # where the expiry was read
    action: str  # kept | would destroy | destroyed | failed | skipped
    detail: str = ""


def cleanup_expired(deps: Deps, dry_run: bool = False, site: str | None = None) -> list[Expired]:
    """Destroy and remove every drill stack of the current backend whose TTL has passed (only
    `site`'s drills when given: one site's scheduled cleanup leaves other sites' drills, which
    its credentials may not reach, to theirs). Only names of drill stacks are looked at; any
    other stack is never touched. A stack is handled
    on its own: one that cannot be judged (a drill-shaped name with an impossible time) is
    skipped and reported, and an error on one (reading its tags, destroying it) is that
    stack's result, never a reason to leave the others up."""
    out = []
    for name in sorted(deps.stacks.list()):
        if not looks_like_drill_stack(name) or site not in (None, drill_site(name)):
            continue
        try:
            out.append(_expire(name, deps, dry_run))
        except Exception as exc:
            out.append(Expired(name, "-", "-", "failed", _unexpected(name, exc)))
    return out


def _expire(name: str, deps: Deps, dry_run: bool) -> Expired:
    try:
        check_not_future(name, deps.clock())
    except DrillNameError as exc:
        return Expired(name, "-", "its name", "skipped", _malformed(name, exc))
    try:
        tags = deps.stacks.tags(name)
    except Exception:
        tags = {}  # no tags (or a backend without them): the name's time says
    expires, source = expiry(name, tags)
    if expires > deps.clock():
        return Expired(name, iso(expires), source, "kept")
    if dry_run:
        return Expired(name, iso(expires), source, "would destroy")
    result = _destroy_and_remove(name, deps, unlock=True)
    action = "destroyed" if result.destroyed and result.removed else "failed"
    return Expired(name, iso(expires), source, action, result.detail)


def _malformed(name: str, exc: DrillNameError) -> str:
    return (
        f"{exc}; gpudr neither destroys nor removes it: see what it holds (`pulumi stack -s "
        f"{name}`), then `pulumi destroy -s {name}` and `pulumi stack rm {name}` yourself"
    )


def _unexpected(name: str, exc: Exception) -> str:
    return (
        f"{_one_line(exc)}; it may still bill: look at it (`pulumi stack -s {name}`), then "
        f"`pulumi destroy -s {name}`"
    )
