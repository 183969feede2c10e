"""`gpudr`: plan, size and price DR for GPU infrastructure; generate the Pulumi stack files.

Exit codes: 0 every target met; 1 a target is not met; 2 bad input (the spec, an option);
3 the Pulumi program failed for a stack.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gpudr.design import Design, design
from gpudr.report import build_report, render_text, to_json, to_markdown
from gpudr.spec import Plan, PlanError, load_plan
from gpudr.stackconfig import stack_name

EXIT_NOT_MET = 1
EXIT_BAD_INPUT = 2
EXIT_PROGRAM = 3


def _fail(message: str, code: int) -> None:
    click.echo(f"gpudr: {message}", err=True)
    sys.exit(code)


def _load(path: str) -> tuple[Plan, Design]:
    try:
        plan = load_plan(path)
    except PlanError as exc:
        for error in exc.errors:
            click.echo(f"gpudr: {error}", err=True)
        click.echo(
            f"gpudr: {len(exc.errors)} problem(s) in {path}; nothing was run or written", err=True
        )
        sys.exit(EXIT_BAD_INPUT)
    return plan, design(plan)


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        click.echo(f"... {message}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpudr")
def main() -> None:
    """Disaster recovery for AI GPU infrastructure, as code."""


@main.command()
@click.argument("plan_file", metavar="PLAN.yaml", type=click.Path(dir_okay=False))
@click.option("--stack", "stack", help="Only this stack (stack name or site name).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write here, not stdout.")
def plan(plan_file: str, stack: str | None, fmt: str, output: str | None) -> None:
    """Show what each site stack would create, whether the targets are met, and the cost.

    Runs the same Pulumi program `pulumi up` runs, per stack, in-process under the SDK's mocks:
    no credentials, no CLI, nothing deployed.
    """
    spec, des = _load(plan_file)
    sites = None
    if stack is not None:
        matches = [s.name for s in spec.sites.values() if stack in (s.name, stack_name(spec, s))]
        if not matches:
            names = ", ".join(stack_name(spec, s) for s in spec.sites.values())
            _fail(
                f'--stack "{stack}" is not a stack of this plan; use one of {names}', EXIT_BAD_INPUT
            )
        sites = matches
    from offline.plan import ProgramError, run_design  # imports Pulumi: only when running

    try:
        stacks = run_design(des, sites, progress=_progress)
    except ProgramError as exc:
        _fail(str(exc), EXIT_PROGRAM)
    report = build_report(des, stacks)
    text = _render(report, fmt)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    sys.exit(0 if report["meets"] else EXIT_NOT_MET)


def _render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return to_json(report)
    if fmt == "markdown":
        return to_markdown(report)
    return render_text(report)


@main.command()
@click.argument("plan_file", metavar="PLAN.yaml", type=click.Path(dir_okay=False))
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default="stacks",
    show_default=True,
    help="Where the Pulumi.<stack>.yaml files go (the project's stackConfigDir).",
)
def generate(plan_file: str, out_dir: str) -> None:
    """Write stacks/Pulumi.<stack>.yaml for every site of the plan."""
    from gpudr.generate import render_stack_files, write_stack_files

    _, des = _load(plan_file)
    files = render_stack_files(des, command=f"gpudr generate {plan_file}")
    for path in write_stack_files(files, Path(out_dir)):
        click.echo(f"wrote {path}")


if __name__ == "__main__":
    main()
