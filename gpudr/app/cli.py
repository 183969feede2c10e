"""`gpudr`: plan, size and price DR for GPU infrastructure; generate the Pulumi stack files.

Exit codes: 0 every target met and no mandatory policy violation; 1 a target is not met or
the policy pack refuses a stack; 2 bad input (the spec, an option); 3 the Pulumi program or
the policy pack failed to run. `gpudr drill`: 0 the drill passed, 1 a stage failed or a target
was missed, 2 bad input, 3 the drill could not run or clean up (including no Pulumi CLI), 130
interrupted (Ctrl-C, SIGTERM or SIGHUP; the stack is still destroyed). `gpudr drill cleanup`: 0
done, 1 a stack skipped for a person to look at, 3 a stack not destroyed or not removed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from gpudr.app.cache import DEFAULT_DIR as DEFAULT_CACHE_DIR
from gpudr.app.env import (
    CACHE_DIR_ENV,
    POLICY_CONFIG_ENV,
    PROGRESS_ENV,
    PROGRESS_PREFIX,
    WARNING_PREFIX,
)
from gpudr.app.exitcodes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_NOT_MET, EXIT_PROGRAM
from gpudr.app.offline.errors import PlanRunError, PolicyPackError
from gpudr.app.outputs import escape_problem, output_file_problem, output_root_problem
from gpudr.app.planrun import CachedRun, PlanReport, plan_source, run_designs
from gpudr.build.stackconfig import stack_name
from gpudr.core.design import Design, design
from gpudr.core.spec import Plan, PlanError, load_plan, parse_plan_bytes
from gpudr.docs.report import (
    build_portfolio,
    portfolio_json,
    portfolio_markdown,
    portfolio_text,
    render_text,
    to_markdown,
)

if TYPE_CHECKING:  # imported where used: the other commands load neither jinja2 nor asyncio
    from gpudr.app.generate import Outcome
    from gpudr.app.offline.portfolio import Workers

DRILL_EXIT = {"passed": 0, "failed": EXIT_NOT_MET, "error": EXIT_PROGRAM}
# `gpudr plan --format` -> how one plan's report and a portfolio's are rendered; json is
# written from the reports' text (`_render`).
_FORMATS: dict[str, tuple[Callable[[dict[str, Any]], str], Callable[[dict[str, Any]], str]]] = {
    "text": (render_text, portfolio_text),
    "markdown": (to_markdown, portfolio_markdown),
}
FORMAT_CHOICES = [*_FORMATS, "json"]


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"gpudr: {message}", err=True)
    sys.exit(code)


def _load(path: str) -> tuple[Plan, Design]:
    loaded = _try_load(path, "; nothing was run or written")
    if loaded is None:
        sys.exit(EXIT_BAD_INPUT)
    return loaded


def _try_load(path: str, suffix: str = "", data: bytes | None = None) -> tuple[Plan, Design] | None:
    """The plan and its design (from `data`, the file's bytes, when already read); None after
    printing its problems, one line each."""
    try:
        spec = load_plan(path) if data is None else parse_plan_bytes(data, plan_source(path))
    except PlanError as exc:
        for error in exc.errors:
            click.echo(f"gpudr: {error}", err=True)
        click.echo(f"gpudr: {len(exc.errors)} problem(s) in {path}{suffix}", err=True)
        return None
    return spec, design(spec)


def _emit(text: str, output: str | None) -> None:
    """`text` to the --output file, or to stdout."""
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def _check_output(output: str | None) -> None:
    """Refuse an --output that cannot be written before the work, not after it."""
    if output and (problem := output_file_problem(output)):
        _fail(f"{problem}; nothing was run", EXIT_BAD_INPUT)


def _progress(message: str) -> None:
    if sys.stderr.isatty() or os.environ.get(PROGRESS_ENV, "") not in ("", "0"):
        click.echo(f"{PROGRESS_PREFIX}{message}", err=True)


class _Path(click.Path):
    """click.Path that refuses a NUL byte (os.stat raises ValueError on it) as bad input."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if "\x00" in os.fsdecode(value):
            self.fail("a path cannot hold a NUL byte", param, ctx)
        return super().convert(value, param, ctx)


# Where `gpudr plan` (and each side of `gpudr diff`) keeps reports to reuse (gpudr/app/cache.py).
_cache_dir = click.option(
    "--cache-dir",
    type=_Path(file_okay=False),
    envvar=CACHE_DIR_ENV,
    show_envvar=True,
    default=DEFAULT_CACHE_DIR,
    show_default=True,
    help="Where plans' reports are kept and reused: a plan whose file, gpudr's code, the "
    "installed packages and the pack config are unchanged is not run again. Created with a "
    ".gitignore; keep it where only you (or your CI's cache) write.",
)
_no_cache = click.option(
    "--no-cache", is_flag=True, help="Run every plan; neither read nor write the cache."
)
# What the commands that take one plan, or write one document, say about it.
_plan_file = click.argument("plan_file", metavar="PLAN.yaml", type=_Path(dir_okay=False))
_output = click.option("--output", "-o", type=_Path(dir_okay=False), help="Write here, not stdout.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpudr")
def main() -> None:
    """Disaster recovery for AI GPU infrastructure, as code."""


@main.command()
@click.argument(
    "plan_files", metavar="PLAN.yaml...", nargs=-1, required=True, type=_Path(dir_okay=False)
)
@click.option("--stack", "stack", help="Only this stack (stack name or site name); one plan only.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMAT_CHOICES),
    default="text",
    show_default=True,
)
@_output
@click.option(
    "--policy-config",
    type=_Path(dir_okay=False, exists=True),
    envvar=POLICY_CONFIG_ENV,
    show_envvar=True,
    help="The policy pack config (levels, thresholds, approved quotas, exemptions), as for "
    "`pulumi preview --policy-pack-config`.",
)
@click.option(
    "--no-policy", is_flag=True, help="Do not run the policy pack (faster; verdicts omitted)."
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Plans run at once, each in a worker process [default: the cores gpudr may use, at "
    "most one per plan]. 1 runs every plan in this process, one after another.",
)
@_cache_dir
@_no_cache
def plan(
    plan_files: tuple[str, ...],
    stack: str | None,
    fmt: str,
    output: str | None,
    policy_config: str | None,
    no_policy: bool,
    jobs: int | None,
    cache_dir: str,
    no_cache: bool,
) -> None:
    """Show what each site stack would create, whether the targets are met, and the cost.

    Runs the same Pulumi program `pulumi up` runs, per stack, in-process under the SDK's mocks:
    no credentials, no CLI, nothing deployed. Given several plans (a portfolio), it runs them
    on every core with one policy pack and ends with a table of the plans; the exit code is
    the worst of them.
    """
    _check_output(output)
    if stack is not None and len(plan_files) > 1:
        _fail(f"--stack needs exactly one PLAN.yaml; {len(plan_files)} were given", EXIT_BAD_INPUT)
    if len(set(plan_files)) != len(plan_files):
        twice = sorted({f for f in plan_files if plan_files.count(f) > 1})
        _fail(f"{', '.join(twice)}: given more than once; give each plan once", EXIT_BAD_INPUT)
    config = _policy_config(policy_config) if not no_policy else None
    sites = _stack_sites(plan_files[0], stack) if stack is not None else None
    cached = None if no_cache else _open_cache(cache_dir, config, sites)
    # The cache first: a plan it holds is neither loaded nor run (its key covers both).
    reports: dict[int, PlanReport] = cached.lookup(plan_files) if cached else {}
    if cached and reports:
        _progress(f"plan cache: {len(reports)} of {len(plan_files)} plan(s) from {cache_dir}")
    misses = [i for i in range(len(plan_files)) if i not in reports]
    from gpudr.app.offline.portfolio import Workers, default_jobs

    # The process that imports the SDKs and forks the workers starts first, and imports Pulumi
    # while the plans load (none starts for one plan: it runs in this process).
    with Workers(len(misses), jobs or default_jobs(), progress=_progress) as workers:
        designs = _load_misses(plan_files, misses, cached)
        _refuse_shared_stacks(
            [_stacks_of(d) for d in designs]
            + [(r.source, list(r.stacks)) for r in reports.values()]
        )
        # Reports are stored as they are made, most while the other plans still run.
        store = (lambda i, report: cached.store(misses[i], report)) if cached else None
        fresh = _run_designs(designs, workers, sites, config, store) if designs else []
    global _programs_ran
    _programs_ran = bool(designs)
    reports.update(zip(misses, fresh, strict=True))
    ordered = [reports[i] for i in range(len(plan_files))]
    _emit(_render(fmt, ordered), output)
    verdicts = [r.verdict for r in ordered]
    met = all(meets for meets, _ in verdicts) and all(ok is not False for _, ok in verdicts)
    sys.exit(0 if met else EXIT_NOT_MET)


def _load_misses(
    plan_files: Sequence[str], misses: Sequence[int], cached: CachedRun | None
) -> list[Design]:
    """The designs of the plans the cache did not answer, each from the bytes it keyed. Every
    plan is checked before anything runs: a typo in the tenth plan costs nothing."""
    suffix = "; nothing was run or written" if len(plan_files) == 1 else ""
    keyed = cached.data if cached else {}
    loaded = [_try_load(plan_files[i], suffix, keyed.get(i)) for i in misses]
    bad = sum(item is None for item in loaded)
    if bad:
        if len(plan_files) == 1:
            sys.exit(EXIT_BAD_INPUT)
        _fail(f"{bad} of {len(plan_files)} plans have problems; nothing was run", EXIT_BAD_INPUT)
    return [item[1] for item in loaded if item is not None]


def _render(fmt: str, reports: list[PlanReport]) -> str:
    """The plans' reports in `--format`: one plan's report, or the portfolio's."""
    if fmt == "json":
        # From the reports' stored text, never encoded again: a cached portfolio of a hundred
        # plans is written in milliseconds, not the seconds json.dumps(indent=2) takes.
        if len(reports) == 1:
            return reports[0].text + "\n"
        return portfolio_json([r.text for r in reports])
    render_one, render_portfolio = _FORMATS[fmt]
    if len(reports) == 1:
        return render_one(reports[0].report)
    return render_portfolio(build_portfolio([r.report for r in reports]))


def _run_designs(
    designs: list[Design],
    workers: Workers,
    sites: list[str] | None,
    config: dict[str, Any] | None,
    on_report: Callable[[int, PlanReport], None] | None,
) -> list[PlanReport]:
    """`planrun.run_designs`, its failures as one line and an exit code."""
    try:
        return run_designs(designs, workers, sites, config, _progress, on_report)
    except KeyboardInterrupt:  # the workers and the pack are stopped on the way out
        _fail("interrupted; no output was written", EXIT_INTERRUPTED)
    except PlanRunError as exc:
        _fail(str(exc), EXIT_PROGRAM)
    except PolicyPackError as exc:
        # A bad --policy-config is the user's input; a pack that does not run is ours.
        code = EXIT_BAD_INPUT if "policy config" in str(exc) else EXIT_PROGRAM
        _fail(f"policy pack: {exc}", code)


def _stack_sites(plan_file: str, stack: str) -> list[str]:
    """The sites `--stack` names (a stack or a site name) in the one plan given."""
    spec = _load(plan_file)[0]
    matches = [s.name for s in spec.sites.values() if stack in (s.name, stack_name(spec, s))]
    if not matches:
        names = ", ".join(stack_name(spec, s) for s in spec.sites.values())
        _fail(f'--stack "{stack}" is not a stack of this plan; use one of {names}', EXIT_BAD_INPUT)
    return matches


def _warn(line: str) -> None:
    click.echo(f"{WARNING_PREFIX}{line}", err=True)


def _open_cache(
    cache_dir: str, config: dict[str, Any] | None, sites: list[str] | None
) -> CachedRun | None:
    """The cache for this run; None (said) when the code cannot be keyed with certainty."""
    from gpudr.app.cache import Context, PlanCache, UncacheableCode

    _check_cache_dir(cache_dir)
    try:
        context = Context.current(config, sites)
    except UncacheableCode as exc:
        _warn(f"plan cache: {exc}; every plan runs, and nothing is cached")
        return None
    return CachedRun(PlanCache(Path(cache_dir)), context, warn=_warn)


def _check_cache_dir(cache_dir: str) -> None:
    """Refuse, before the work, a --cache-dir that cannot be a directory, or that someone else
    could write to: a hit is only as trustworthy as the directory it was read from. One that
    exists but cannot be written is read, and nothing is stored (said when storing)."""
    from gpudr.app.cache import trust_problem

    path = Path(cache_dir)
    if path.is_dir():
        if problem := trust_problem(path):
            _fail(f"--cache-dir {cache_dir}: {problem}", EXIT_BAD_INPUT)
        return
    if problem := output_root_problem(cache_dir, "--cache-dir"):
        _fail(f"{problem}, or --no-cache; nothing was run", EXIT_BAD_INPUT)


def _stacks_of(des: Design) -> tuple[str, list[str]]:
    return des.plan.source, [stack_name(des.plan, s) for s in des.plan.sites.values()]


def _refuse_shared_stacks(plans: list[tuple[str, list[str]]]) -> None:
    """Two plans (source, stack names) that name the same stack would deploy into one another's
    state."""
    owner: dict[str, str] = {}
    for source, stacks in plans:
        for name in stacks:
            if name in owner:
                _fail(
                    f'{source} and {owner[name]} both have stack "{name}"; '
                    f"give the plans different names",
                    EXIT_BAD_INPUT,
                )
            owner[name] = source


def _no_constant(name: str) -> Any:
    """JSON has no NaN or Infinity: a threshold written so would compare false with anything."""
    raise ValueError(f"{name} is not a JSON number")


def _policy_config(config_path: str | None) -> dict[str, Any]:
    import json

    if config_path is None:
        return {}
    try:
        config = json.loads(
            Path(config_path).read_bytes().decode("utf-8"), parse_constant=_no_constant
        )
    except OSError as exc:
        _fail(f"--policy-config {config_path}: cannot read it ({exc.strerror})", EXIT_BAD_INPUT)
    except UnicodeDecodeError as exc:
        _fail(
            f"--policy-config {config_path}: not UTF-8 (byte {exc.start}); save it as UTF-8 JSON",
            EXIT_BAD_INPUT,
        )
    except (ValueError, RecursionError) as exc:
        _fail(f"--policy-config {config_path}: not a JSON object ({exc})", EXIT_BAD_INPUT)
    if not isinstance(config, dict):
        _fail(f"--policy-config {config_path}: not a JSON object", EXIT_BAD_INPUT)
    return config


@main.command()
@click.argument(
    "plan_files", metavar="PLAN.yaml...", nargs=-1, required=True, type=_Path(dir_okay=False)
)
@click.option(
    "--root",
    type=_Path(file_okay=False),
    default=".",
    show_default=True,
    help="The project root: stacks/, runbooks/ and .github/ are written under it.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 listing the files that differ and the secrets in plain text.",
)
@click.option("--force", is_flag=True, help="Also overwrite files without the generated header.")
@click.option(
    "--pack-config",
    type=_Path(dir_okay=False, exists=True),
    envvar=POLICY_CONFIG_ENV,
    show_envvar=True,
    help="The organisation's policy pack config (approved quotas, RPO floors, exemptions): the "
    "workflow's jobs judge the plan under it.",
)
def generate(
    plan_files: tuple[str, ...], root: str, check: bool, force: bool, pack_config: str | None
) -> None:
    """Write, from each plan: stacks/Pulumi.<stack>.yaml per site, runbooks/<pair>.md per site
    pair, .github/workflows/gpudr-<plan>.yml (pull requests), .github/workflows/
    gpudr-<plan>-drills.yml (each DR site drilled on the plan's drill.schedule, cleanup daily),
    and .github/dependabot.yml. Values set with `pulumi config set` (the failover switch, copied
    credentials, secrets) are kept; --check also fails on a secret key with a plain-text value
    in a stack file."""
    from gpudr.app.generate import plan_path_for, plan_path_problem

    if not check and (problem := output_root_problem(root)):
        _fail(f"{problem}; nothing was written", EXIT_BAD_INPUT)
    # Every plan, and the path each is named by in the workflow, is checked before anything
    # is written.
    loaded = [_try_load(plan_file, "; nothing was written") for plan_file in plan_files]
    designs = [item[1] for item in loaded if item is not None]
    if len(designs) != len(plan_files):
        sys.exit(EXIT_BAD_INPUT)
    base = Path(root)
    plan_paths = {plan_file: plan_path_for(plan_file, base) for plan_file in plan_files}
    config_path = plan_path_for(pack_config, base) if pack_config else None
    problems = [p for p in map(plan_path_problem, plan_paths.values()) if p is not None]
    if config_path is not None and (problem := plan_path_problem(config_path, "pack config")):
        problems.append(f"{problem} (from --pack-config or {POLICY_CONFIG_ENV})")
    for problem in problems:
        click.echo(f"gpudr: {problem}; nothing was written", err=True)
    if problems:
        sys.exit(EXIT_BAD_INPUT)
    _refuse_shared_stacks([_stacks_of(d) for d in designs])
    from gpudr.app.generate import plaintext_secrets, reconcile, render_all

    # Every plan is rendered before anything is written, and all files are written at once:
    # a failure on the last file leaves none of them.
    prepared = []
    for plan_file, des in zip(plan_files, designs, strict=True):
        files = render_all(des, plan_paths[plan_file], config_path)
        # Not even read through a symlink out of the root (reconcile reads what is there).
        escapes = [p for p in (escape_problem(base, f.path) for f in files) if p is not None]
        for problem in escapes:
            click.echo(f"gpudr: {problem}", err=True)
        if escapes:
            _fail("nothing was written", EXIT_BAD_INPUT)
        outcomes = reconcile(files, base, des.plan)
        for o in outcomes:
            if o.note:
                click.echo(f"gpudr: note: {o.path}: {o.note}", err=True)
        prepared.append((plan_file, outcomes, plaintext_secrets(files, base)))
    if check:
        sys.exit(max(_check(*item) for item in prepared))
    sys.exit(_write_generated(prepared, base, force))


def _write_generated(
    prepared: list[tuple[str, list[Outcome], list[str]]], base: Path, force: bool
) -> int:
    """Write every plan's files in one go; the exit code."""
    from gpudr.app.generate import write
    from gpudr.app.outputs import OutputError

    for _, _, secrets in prepared:
        for line in secrets:
            _warn(line)
    everything = [o for _, outcomes, _ in prepared for o in outcomes]
    try:
        written = {o.path for o in write(everything, base, force=force)}
    except OutputError as exc:
        for problem in exc.problems:
            click.echo(f"gpudr: {problem}", err=True)
        _fail("nothing was written", EXIT_BAD_INPUT)
    except OSError as exc:
        _fail(f"{base}: cannot write ({exc.strerror or exc}); nothing was written", EXIT_BAD_INPUT)
    refused = []
    for o in everything:
        if o.path in written:
            click.echo(f"wrote {base / o.path}")
        elif o.status == "unchanged":
            click.echo(f"unchanged {base / o.path}")
        elif o.status == "stale":
            _warn(f"{base / o.path}: {o.detail}")
        elif o.status == "not-generated":
            refused.append(o)
    for o in refused:
        click.echo(f"gpudr: {base / o.path} {o.detail}", err=True)
    if refused:
        click.echo(f"gpudr: {len(refused)} file(s) not written; nothing else was skipped", err=True)
        return EXIT_BAD_INPUT
    return 0


def _check(plan_file: str, outcomes: list[Outcome], secrets: list[str]) -> int:
    """`gpudr generate --check` of one plan: 1 when a file differs or a secret is in plain text."""
    differing = [o for o in outcomes if o.differs]
    for o in differing:
        click.echo(f"differs: {o.path}: {o.detail}")
    for line in secrets:
        click.echo(f"gpudr: {line}", err=True)
    if differing:
        click.echo(
            f"gpudr: {len(differing)} generated file(s) do not match {plan_file}; "
            f"run `gpudr generate {plan_file}` and commit the result",
            err=True,
        )
    if secrets:
        click.echo(
            f"gpudr: {len(secrets)} secret(s) in plain text, or keys that could hide one, in "
            f"{plan_file}'s stacks",
            err=True,
        )
    if differing or secrets:
        return EXIT_NOT_MET
    click.echo(f"{len(outcomes)} generated files match {plan_file}")
    return 0


@main.command()
@_plan_file
@click.option(
    "--base",
    "base_ref",
    required=True,
    metavar="REF",
    help="The git branch, tag or commit to compare with, e.g. origin/main.",
)
@_output
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help="Most characters of markdown (default 60000: a GitHub comment holds 65,536; 0: no "
    "limit). Detail is summarised to fit, never cut.",
)
@_cache_dir
@_no_cache
def diff(
    plan_file: str,
    base_ref: str,
    output: str | None,
    limit: int | None,
    cache_dir: str,
    no_cache: bool,
) -> None:
    """Markdown for a pull request: what changes from the plan at --base REF to the working tree.

    Runs `gpudr plan` on both, each with its own code (a change to components/ or policies/
    shows too): resources added, changed and removed per stack, policy verdicts, targets and
    sizing, monthly cost. Exit code 0 when the diff is written, whatever it says.
    """
    from gpudr.app.prdiff import DiffError, run_diff

    _check_output(output)
    if not no_cache:
        _check_cache_dir(cache_dir)
    cache = None if no_cache else Path(cache_dir).absolute()
    try:
        text = run_diff(plan_file, base_ref, limit=limit, progress=_progress, cache_dir=cache)
    except DiffError as exc:
        click.echo(f"gpudr: {exc}", err=True)
        for line in exc.details:
            click.echo(f"gpudr:   {line}", err=True)
        sys.exit(exc.code)
    _emit(text, output)


class _DrillGroup(click.Group):
    """`gpudr drill PLAN.yaml --site S` runs a drill (`gpudr drill run ...`); `gpudr drill
    cleanup` removes expired ones."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@main.group("drill", cls=_DrillGroup)
def drill_group() -> None:
    """Rehearse a failover to a DR site in a disposable stack, time it against the plan, and
    always destroy it.

    \b
    gpudr drill PLAN.yaml --site SITE [--ttl 4h] [--dry-run] [--report-dir DIR]
    gpudr drill cleanup [--dry-run]
    """


@drill_group.command("run")
@_plan_file
@click.option("--site", required=True, help="The DR site to drill.")
@click.option("--ttl", help="How long the drill stack may live (default: the plan's drill.ttl).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show what the drill would create and run, offline: no Pulumi CLI, no credentials.",
)
@click.option(
    "--report-dir",
    type=_Path(file_okay=False),
    default="drill-reports",
    show_default=True,
    help="Where the report goes: <stack>.json and <stack>.md.",
)
@click.option(
    "--operator",
    help="Who may act as the drill's reader: an AWS principal ARN (a user, a role, or "
    "arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION) or a GCP IAM member (user:EMAIL, "
    "serviceAccount:EMAIL). Default: the caller, found at drill time (aws sts "
    "get-caller-identity, gcloud's account); a dry run finds nobody unless named.",
)
def drill_run(
    plan_file: str,
    site: str,
    ttl: str | None,
    dry_run: bool,
    report_dir: str,
    operator: str | None,
) -> None:
    """Drill a DR site: create drill-<site>-<UTC time>, verify the latest checkpoint, time GPU
    capacity and data age against the plan, destroy and remove the stack, write a report."""
    from datetime import UTC, datetime

    from gpudr.build.drill import DrillError, build_drill
    from gpudr.docs.drillreport import usd

    _, des = _load(plan_file)
    ttl_s = _drill_ttl(ttl) if ttl is not None else None
    now = datetime.now(UTC)
    try:
        setup = build_drill(des, site, now, ttl_s=ttl_s)
    except DrillError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
    if operator is not None:
        _check_operator(operator, setup.site.cloud)
    if dry_run:
        setup = build_drill(des, site, now, ttl_s=ttl_s, operator=operator)
        from gpudr.app.drill.dryrun import render, run

        _progress(f"running the drill program for {setup.stack} under mocks")
        try:
            result = run(setup)
        except Exception as exc:  # the program's own error, reported with its stack
            _fail(f"drill stack {setup.stack}: {type(exc).__name__}: {exc}", EXIT_PROGRAM)
        click.echo(render(setup, result), nl=False)
        return
    from gpudr.app.drill.stacks import missing_cli_message, pulumi_available

    if not pulumi_available():
        _fail(missing_cli_message(), EXIT_PROGRAM)
    # Checked before a stack is created: a report that cannot be written after a paid drill
    # loses what the drill measured.
    if problem := output_root_problem(report_dir, "--report-dir"):
        _fail(f"{problem}; nothing was run", EXIT_BAD_INPUT)
    setup = build_drill(des, site, now, ttl_s=ttl_s, operator=operator or _discover(setup))
    from gpudr.app.drill.console import Console

    console = Console(Path(report_dir) / f"{setup.stack}.log")
    console.line(
        f"gpudr: drill {setup.stack}: estimated cost at most {usd(setup.cost.ttl_usd)} "
        f"(the {len(setup.pools)} test pool(s) and control plane for the TTL, at list price); "
        f"should this terminal go away, the drill still ends and writes to {console.log}"
    )
    report = _run_drill(setup, Path(report_dir), console)
    _summary(report, Path(report_dir), console)
    if report.outcome == "interrupted":
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(DRILL_EXIT[report.outcome])


def _drill_ttl(text: str) -> float:
    from gpudr.core.enums import DRILL_MAX_TTL_S
    from gpudr.core.spec import drill_default
    from gpudr.core.units import UnitError, fmt_duration, parse_duration

    try:
        ttl = parse_duration(text)
    except UnitError as exc:
        _fail(f"--ttl: {exc}", EXIT_BAD_INPUT)
    low, high = drill_default("min_ttl"), DRILL_MAX_TTL_S
    if not low <= ttl <= high:
        _fail(
            f"--ttl: {fmt_duration(ttl)} is outside {fmt_duration(low)}..{fmt_duration(high)}; "
            "use e.g. --ttl 4h",
            EXIT_BAD_INPUT,
        )
    return ttl


def _discover(setup: Any) -> str | None:
    """The caller, as the drill stack will let them act as its reader; None said aloud."""
    from gpudr.app.drill.operator import discover

    operator = discover(setup.site.cloud, setup.site.region)
    if operator is None and setup.site.cloud != "azure":
        click.echo(
            "gpudr: the caller could not be identified (credentials?): nobody may act as the "
            "drill's reader, and its checks read the replicas with your own credentials",
            err=True,
        )
    return operator


def _summary(report: Any, report_dir: Path, console: Any) -> None:
    """The drill's outcome, one line per stage, on stdout (or in the log, the terminal gone)."""
    console.line(
        f"drill {report.stack}: {report.outcome}; report {report_dir / report.stack}.md",
        err=False,
    )
    for s in report.stages:
        console.line(f"  {s.key}: {s.status}, {s.verdict}; {s.detail}", err=False)
    console.line(f"  cleanup: {report.cleanup.detail}", err=False)


def _check_operator(operator: str, cloud: str) -> None:
    """--operator names a principal of the drilled site's cloud (Azure's reader takes none)."""
    from gpudr.contract.drill import operator_cloud

    if cloud == "azure":
        _fail("--operator: an Azure drill's reader is signed in to from Azure only", EXIT_BAD_INPUT)
    if operator_cloud(operator) != cloud:
        kind = "an AWS" if cloud == "aws" else "a GCP"
        _fail(
            f'--operator: "{operator}" is not {kind} principal; use '
            + (
                "an ARN like arn:aws:iam::ACCOUNT:user/NAME or "
                "arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION"
                if cloud == "aws"
                else "user:EMAIL or serviceAccount:EMAIL"
            ),
            EXIT_BAD_INPUT,
        )


def _run_drill(setup: Any, report_dir: Path, console: Any) -> Any:
    """The drill, its output on `console` (which outlives the terminal) and its signals
    handled: Ctrl-C, SIGTERM and SIGHUP stop it, and its stack is still destroyed."""
    import time
    from datetime import UTC, datetime

    from gpudr.app.drill.interrupts import Children, Guard
    from gpudr.app.drill.orchestrate import Deps, run_drill
    from gpudr.app.drill.probes import probe_for
    from gpudr.app.drill.stacks import AutomationStacks
    from gpudr.core.paths import PROJECT_DIR
    from gpudr.core.units import fmt_duration
    from gpudr.docs.drillreport import DrillReport, to_json, to_markdown

    def write(report: DrillReport) -> None:
        report_dir.mkdir(parents=True, exist_ok=True)
        (report_dir / f"{report.stack}.json").write_text(to_json(report), encoding="utf-8")
        (report_dir / f"{report.stack}.md").write_text(to_markdown(report), encoding="utf-8")

    children = Children()
    guard = Guard(
        children, console.line, on_hangup=lambda: console.detach("SIGHUP: the terminal is gone")
    )
    deps = Deps(
        stacks=AutomationStacks(PROJECT_DIR, children),
        probe=probe_for(setup, time.sleep),
        write=write,
        echo=console.line,
        interrupted=lambda: guard.interrupted,
        stop_reason=lambda: guard.reason,
        on_cleanup=guard.start_cleanup,
    )
    left = (setup.drill.stop_at - datetime.now(UTC)).total_seconds()
    before = fmt_duration((setup.drill.expires - setup.drill.stop_at).total_seconds())
    deadline = f"its deadline, {before} before the TTL: the time its destroy needs"
    with guard.installed(), guard.deadline(left, deadline):
        try:
            return run_drill(setup, deps)
        except Exception as exc:
            from gpudr.app.drill.orchestrate import _one_line

            console.line(f"gpudr: drill {setup.stack}: {_one_line(exc)}")
            sys.exit(EXIT_PROGRAM)


@drill_group.command("cleanup")
@click.option("--dry-run", is_flag=True, help="List what would be destroyed; change nothing.")
@click.option(
    "--site",
    help="Only this DR site's drills (drill-<site>-<time>): what a site's scheduled cleanup runs.",
)
def drill_cleanup(dry_run: bool, site: str | None) -> None:
    """Destroy and remove every drill stack whose TTL has passed, in the backend you are logged
    in to. Stacks whose names are not drill-<site>-<time> are never touched.

    A TTL runs from the time in the stack's name, for at most a day; an earlier
    gpudr:expires-at tag ends it sooner. Exit 3 when a stack could not be destroyed or removed
    (it may still bill: the line says what to run); else exit 1 when a stack was skipped (a
    drill-shaped name whose time is not a real one: gpudr cannot tell its age, so a person must
    look at it; exiting 0 would let a scheduled cleanup hide it for ever); else 0.

    Ctrl-C, SIGTERM and SIGHUP do not stop it: each destroy it started is the thing that stops a
    bill (a killed one would leave its stack locked). Should the terminal go away, its output
    continues in drill-reports/cleanup-<UTC time>.log."""
    from datetime import UTC, datetime

    from gpudr.app.drill.console import Console
    from gpudr.app.drill.interrupts import Children, Guard
    from gpudr.app.drill.orchestrate import Deps, cleanup_expired
    from gpudr.app.drill.stacks import AutomationStacks, pulumi_available
    from gpudr.contract.drill import format_ts
    from gpudr.core.paths import PROJECT_DIR

    if not pulumi_available():
        _fail(
            "drill cleanup needs the Pulumi CLI (not found on PATH), logged in to the backend "
            "that holds the drill stacks, and the clouds' credentials",
            EXIT_PROGRAM,
        )
    log = Path("drill-reports") / f"cleanup-{format_ts(datetime.now(UTC))}.log"
    console = Console(log, what="drill cleanup")
    children = Children()
    guard = Guard(children, console.line, on_hangup=lambda: console.detach("SIGHUP"))
    guard.start_cleanup("every expired drill stack")
    with guard.installed():
        results = cleanup_expired(
            Deps(stacks=AutomationStacks(PROJECT_DIR, children), echo=console.line),
            dry_run=dry_run,
            site=site,
        )
    if not results:
        console.line(f"no drill stacks{f' of site {site}' if site else ''} in this backend", False)
    for r in results:
        when = "" if r.action == "skipped" else f" (expires {r.expires_at}; {r.source})"
        console.line(f"{r.action}: {r.stack}{when} {r.detail}".rstrip(), False)
    if any(r.action == "failed" for r in results):
        sys.exit(EXIT_PROGRAM)
    if any(r.action == "skipped" for r in results):
        sys.exit(EXIT_NOT_MET)


# Set by `gpudr plan` once its programs have run and every worker and the pack are stopped.
_programs_ran = False


def entry() -> None:
    """The `gpudr` command and `python -m gpudr`: `main`, and after `gpudr plan` has run
    programs, an exit that skips the interpreter's teardown. The process then holds the Pulumi
    SDKs' thousands of modules, and freeing them one by one took a tenth of a warm portfolio
    run while writing nothing: the output is flushed and every file, worker and pack gpudr
    opened is already closed. Every other command exits as usual (a drill's cleanup must run)."""
    try:
        main()
    except SystemExit as exc:
        if _programs_ran and isinstance(exc.code, int):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exc.code)
        raise


if __name__ == "__main__":
    entry()
