"""`gpudr diff`: the plan run at a git ref and on the working tree, and what changed between them.

Each side runs the way a user runs it, `python -m gpudr plan PLAN --format json`, in its own
process and with its own code: the base side in a copy of the base commit (`git archive`), so a
change to `components/`, `policies/` or `gpudr/` shows up as well as a change to the plan. Both
run at once. Git and subprocesses only: no Pulumi import here (the runs import it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from gpudr.app.env import POLICY_CONFIG_ENV, PROGRESS_ENV, PROGRESS_PREFIX, WARNING_PREFIX
from gpudr.app.exitcodes import EXIT_BAD_INPUT, EXIT_PROGRAM
from gpudr.core.paths import PROJECT_DIR
from gpudr.docs.diff import DEFAULT_LIMIT, diff_reports

# A side's plan run still going after this long is stopped.
PLAN_TIMEOUT_S = 900.0
STDERR_TAIL = 8
# Read-only: `git status` must not refresh the index of a repository others are working in.
GIT = ("git", "--no-optional-locks")
# `python -m gpudr plan`; before gpudr/__main__.py existed the CLI was `python -m gpudr.cli`.
ENTRY = "gpudr"
LEGACY_ENTRY = "gpudr.cli"
ENTRY_FILES = ("gpudr/__main__.py", "gpudr/cli.py")


def plan_command(project: Path) -> tuple[str, ...]:
    """How to run `gpudr plan` with `project`'s own code."""
    entry = ENTRY if (project / "gpudr" / "__main__.py").is_file() else LEGACY_ENTRY
    return (sys.executable, "-m", entry, "plan")


class DiffError(Exception):
    """A problem that ends `gpudr diff`: one line, an exit code, and the failed run's last
    lines of stderr when there was one."""

    def __init__(self, message: str, code: int, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.details = list(details)


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise DiffError(
            "git is not installed or not on PATH; install git to diff against a ref",
            EXIT_BAD_INPUT,
        ) from None


@dataclass(frozen=True)
class Sides:
    """Where the plan is, in the repository and at the base commit."""

    root: Path  # the repository's top level
    plan_rel: PurePosixPath  # the plan's path from `root`
    sha: str
    base_has_plan: bool
    # The gpudr project's path from `root` when the running code lives in this repository.
    project_rel: PurePosixPath | None
    # The same, when the base commit has the project there too: the base runs its own code.
    base_project_rel: PurePosixPath | None


def resolve(plan_file: str, ref: str) -> Sides:
    """Check the inputs and find the plan and the project in the repository and at `ref`.

    Raises DiffError (exit 2) for a missing plan, a plan outside git, an unknown ref."""
    plan = Path(plan_file)
    if not plan.is_file():
        raise DiffError(
            f"{plan_file}: no such plan file in the working tree; pass the path of a plan that "
            "exists at head (a plan deleted by the change has nothing to diff)",
            EXIT_BAD_INPUT,
        )
    plan = plan.resolve()
    top = _git(["rev-parse", "--show-toplevel"], plan.parent)
    if top.returncode != 0:
        raise DiffError(
            f"{plan_file} is not in a git repository; run gpudr diff on a plan tracked in git",
            EXIT_BAD_INPUT,
        )
    root = Path(top.stdout.strip()).resolve()
    if ref.startswith("-") or not ref.strip():
        raise DiffError(
            f'--base "{ref}" is not a git ref; use a branch, tag or commit, e.g. origin/main',
            EXIT_BAD_INPUT,
        )
    rev = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root)
    if rev.returncode != 0:
        raise DiffError(
            f'--base "{ref}" is not a commit of the repository at {root}; use a branch, tag or '
            "commit that exists locally (in CI, fetch it first, e.g. `git fetch origin main` "
            "or actions/checkout with fetch-depth: 0)",
            EXIT_BAD_INPUT,
        )
    sha = rev.stdout.strip()
    plan_rel = PurePosixPath(plan.relative_to(root).as_posix())
    try:
        project_rel: PurePosixPath | None = PurePosixPath(PROJECT_DIR.relative_to(root).as_posix())
    except ValueError:
        project_rel = None
    base_has_project = (
        project_rel is not None
        and _exists_at(root, sha, project_rel / "__main__.py")
        and any(_exists_at(root, sha, project_rel / name) for name in ENTRY_FILES)
    )
    return Sides(
        root,
        plan_rel,
        sha,
        _exists_at(root, sha, plan_rel),
        project_rel,
        project_rel if base_has_project else None,
    )


def _exists_at(root: Path, sha: str, path: PurePosixPath) -> bool:
    return _git(["cat-file", "-e", f"{sha}:{path}"], root).returncode == 0


def extract(root: Path, sha: str, paths: Sequence[PurePosixPath], dest: Path) -> None:
    """The files of commit `sha` under `paths` (all of it for `.`), written below `dest`."""
    specs = [] if any(str(p) == "." for p in paths) else [str(p) for p in paths]
    proc = subprocess.Popen(
        [*GIT, "archive", "--format=tar", sha, "--", *specs],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError) as exc:
        proc.kill()
        proc.wait()
        raise DiffError(
            f"could not extract commit {sha[:12]} ({exc}); check `git archive {sha[:12]}`",
            EXIT_PROGRAM,
        ) from None
    err = proc.stderr.read().decode(errors="replace").strip()
    if proc.wait() != 0:
        raise DiffError(
            f"git archive {sha[:12]} failed: {err.splitlines()[-1] if err else 'no message'}",
            EXIT_PROGRAM,
        )


@dataclass
class _Run:
    """One side's `gpudr plan` process."""

    side: str  # "base" or "head", as error messages name it
    label: str
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path
    started: float = field(default_factory=time.monotonic)
    code: int | None = None
    shown: int = 0  # bytes of `err` read for progress lines

    def progress_lines(self) -> list[str]:
        """The progress lines (`... what`) and warnings (`gpudr: warning: ...`, e.g. a damaged
        cache entry) the run wrote to its stderr since the last call, made printable."""
        try:
            with self.err.open("rb") as handle:
                handle.seek(self.shown)
                data = handle.read()
        except OSError:
            return []
        done = data.rfind(b"\n") + 1  # whole lines only: the rest is still being written
        self.shown += done
        lines = data[:done].decode(errors="replace").splitlines()
        return [
            "".join(c if c.isprintable() else "?" for c in line.removeprefix(PROGRESS_PREFIX))
            for line in lines
            if line.startswith((PROGRESS_PREFIX, WARNING_PREFIX))
        ]


def _cache_args(project: Path, cache_dir: Path | None) -> list[str]:
    """`gpudr plan`'s cache options for a side, if its code has the cache: the one directory,
    absolute (a side runs from its own project), or none at all with --no-cache."""
    cli = project / "gpudr" / "app" / "cli.py"
    try:
        has_cache = '"--cache-dir"' in cli.read_text(encoding="utf-8")
    except OSError:
        has_cache = False
    if not has_cache:
        return []
    return ["--cache-dir", str(cache_dir)] if cache_dir is not None else ["--no-cache"]


def absolute_policy_config(env: dict[str, str]) -> dict[str, str]:
    """`env` with the pack config made absolute: both sides are judged under the pack config of
    the working tree (the base may not have the file, or an older one), and they start
    elsewhere."""
    if env.get(POLICY_CONFIG_ENV):
        env[POLICY_CONFIG_ENV] = str(Path(env[POLICY_CONFIG_ENV]).resolve())
    return env


def side_env(project: Path) -> dict[str, str]:
    """The environment a side's `gpudr plan` runs in: `project`'s code first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        x for x in (str(project), os.environ.get("PYTHONPATH", "")) if x
    )
    env.pop("PYTHONSAFEPATH", None)
    return absolute_policy_config(env)


def _start(
    side: str, label: str, project: Path, plan: Path, tmp: Path, cache_dir: Path | None
) -> _Run:
    """`gpudr plan` with `project`'s code first on the path, from `project`."""
    out, err = tmp / f"{side}.json", tmp / f"{side}.stderr"
    env = side_env(project)
    # Its progress lines go to its stderr file, which is no terminal: `_wait` shows them.
    env[PROGRESS_ENV] = "1"
    plan_arg = os.path.relpath(plan, project)
    with err.open("wb") as err_file:
        proc = subprocess.Popen(
            [
                *plan_command(project),
                plan_arg,
                "--format",
                "json",
                "-o",
                str(out),
                *_cache_args(project, cache_dir),
            ],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
        )
    return _Run(side, label, proc, out, err)


def _wait(runs: Sequence[_Run], progress: Callable[[str], None] | None) -> None:
    """Until every run has exited. The caller stops what is still running (a timeout here, or
    anything else going wrong)."""
    deadline = time.monotonic() + PLAN_TIMEOUT_S
    pending = list(runs)
    while pending:
        for run in list(pending):
            code = run.proc.poll()
            if progress:
                for line in run.progress_lines():
                    progress(f"{run.side}: {line}")
            if code is not None:
                run.code = code
                pending.remove(run)
                if progress:
                    took = time.monotonic() - run.started
                    progress(f"{run.side} ({run.label}) done in {took:.1f} s")
        if pending and time.monotonic() > deadline:
            raise DiffError(
                f"the plan run on the {pending[0].side} side took over "
                f"{PLAN_TIMEOUT_S:g} s and was stopped",
                EXIT_PROGRAM,
            )
        if pending:
            time.sleep(0.05)


def _tail(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    # The failure, not the progress that led to it.
    shown = [line for line in lines if line.strip() and not line.startswith(PROGRESS_PREFIX)]
    return shown[-STDERR_TAIL:]


def _report(run: _Run) -> dict[str, Any] | tuple[int, list[str]]:
    """The run's report, or (exit code, last lines of stderr) when it did not produce one.
    Exit codes 0 and 1 (a target not met, a policy violation) both write the report."""
    if run.code in (0, 1):
        try:
            report = json.loads(run.out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = None
        if isinstance(report, dict):
            return report
    return (run.code if run.code is not None else -1, _tail(run.err))


def _head_label(sides: Sides) -> str:
    head = _git(["rev-parse", "--short", "HEAD"], sides.root)
    if head.returncode != 0:
        return "working tree"
    specs = [str(sides.plan_rel)]
    if sides.project_rel is not None:
        specs.append(str(sides.project_rel))
    status = _git(["status", "--porcelain", "--", *specs], sides.root)
    dirty = ", with uncommitted changes" if status.stdout.strip() else ""
    return f"working tree (HEAD {head.stdout.strip()}{dirty})"


def run_diff(
    plan_file: str,
    base_ref: str,
    *,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    cache_dir: Path | None = None,
) -> str:
    """Markdown of what changes from the plan at `base_ref` to the plan in the working tree.
    Both sides use the plan cache in `cache_dir` (None: none), when their code has it: a base
    side already planned (an earlier push of the pull request, the base branch's own run) is
    read, not run.

    Raises DiffError: exit 2 for bad input (no plan, not git, unknown ref, an invalid plan on
    either side), 3 when a plan run fails."""
    sides = resolve(plan_file, base_ref)
    base_label = f"`{base_ref}`"
    if not sides.sha.startswith(base_ref.lower()):
        base_label += f" ({sides.sha[:7]})"
    head_label = _head_label(sides)
    with tempfile.TemporaryDirectory(prefix="gpudr-diff-") as tmp_name:
        results = _run_sides(sides, base_ref, Path(tmp_name), progress, cache_dir)
    failed = {side: r for side, r in results.items() if isinstance(r, tuple)}
    if failed:
        raise _failure(failed, base_ref)
    base = results.get("base")
    head = results["head"]
    assert isinstance(head, dict) and (base is None or isinstance(base, dict))
    return diff_reports(
        base,
        head,
        base_label=base_label,
        head_label=head_label,
        limit=DEFAULT_LIMIT if limit is None else limit,
        plan_path=str(sides.plan_rel),
        notes=_code_notes(sides, base_ref),
    )


def _code_notes(sides: Sides, base_ref: str) -> list[str]:
    """Why only the plan's changes show, when one side could not run its own code."""
    if sides.project_rel is None:
        return [
            f"The gpudr code ({PROJECT_DIR}) is not in this repository: both sides ran with it, "
            "so only the plan's changes show."
        ]
    if sides.base_project_rel is None:
        return [
            f"{base_ref} has no gpudr project at {sides.project_rel}: the base plan ran with the "
            "working tree's code, so only the plan's changes show."
        ]
    return []


def _run_sides(
    sides: Sides,
    base_ref: str,
    tmp: Path,
    progress: Callable[[str], None] | None,
    cache_dir: Path | None,
) -> dict[str, dict[str, Any] | tuple[int, list[str]]]:
    """Each side's report (or its failure, as `_report` gives it), the two runs at once; the
    base side only when the plan exists there."""
    runs: list[_Run] = []
    try:
        if sides.base_has_plan:
            runs.append(_start_base(sides, base_ref, tmp, progress, cache_dir))
        head_plan = sides.root / sides.plan_rel
        runs.append(_start("head", "working tree", PROJECT_DIR, head_plan, tmp, cache_dir))
        if progress:
            progress(
                "running the plan "
                + (f"at {base_ref} and " if sides.base_has_plan else "")
                + "on the working tree"
            )
        _wait(runs, progress)
    finally:
        for run in runs:
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
    return {run.side: _report(run) for run in runs}


def _start_base(
    sides: Sides,
    base_ref: str,
    tmp: Path,
    progress: Callable[[str], None] | None,
    cache_dir: Path | None,
) -> _Run:
    """The base commit's plan (and project, when it has one) extracted below `tmp`, and its
    `gpudr plan` started."""
    tree = tmp / "base"
    rel = sides.base_project_rel
    if progress:
        progress(f"extracting {base_ref} ({sides.sha[:7]})")
    extract(sides.root, sides.sha, [sides.plan_rel, *([rel] if rel is not None else [])], tree)
    base_project = tree / rel if rel is not None else PROJECT_DIR
    return _start("base", base_ref, base_project, tree / sides.plan_rel, tmp, cache_dir)


def _failure(failed: dict[str, tuple[int, list[str]]], base_ref: str) -> DiffError:
    where = {"base": f"at {base_ref}", "head": "in the working tree"}
    parts, details = [], []
    for side, (code, tail) in failed.items():
        what = "is invalid" if code == EXIT_BAD_INPUT else f"failed to run (exit {code})"
        parts.append(f"the plan {where[side]} {what}")
        details += [f"{side}: {line.removeprefix('gpudr: ')}" for line in tail]
    invalid_only = all(code == EXIT_BAD_INPUT for code, _ in failed.values())
    fix = (
        "; fix the plan (run `gpudr plan` on it for the full list)"
        if invalid_only
        else "; run `gpudr plan` on that side for the full error"
    )
    return DiffError(
        " and ".join(parts) + fix, EXIT_BAD_INPUT if invalid_only else EXIT_PROGRAM, details
    )


__all__ = [
    "DiffError",
    "Sides",
    "absolute_policy_config",
    "extract",
    "resolve",
    "run_diff",
    "side_env",
]
