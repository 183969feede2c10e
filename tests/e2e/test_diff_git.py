"""`gpudr diff --base REF` as CI runs it: a real git history in a temporary repository holding
the project, the real CLI in a subprocess, each side's plan run with that side's own code."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from bench.run import GIT_ENV, git
from gpudr.app.offline.plan import run_design
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.report import custom_resources
from tests.conftest import ROOT

PLAN = "examples/aws-two-region.yaml"


@cache
def resource_count() -> str:
    """The plan's custom resources over all its stacks, as `gpudr diff` counts them."""
    stacks = run_design(design(load_plan(ROOT / PLAN)))
    return str(sum(len(custom_resources(s)) for s in stacks))


# What the program needs to run offline: the library, the Pulumi program, the pack, the plan.
SOURCES = (
    "gpudr",
    "components",
    "offline",
    "policies",
    "templates",
    "__main__.py",
    "Pulumi.yaml",
    "pyproject.toml",
    ".gitignore",
    PLAN,
)


def gpudr_diff(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it from the repository: the repository's own gpudr."""
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "gpudr", "diff", *args],
        cwd=repo,
        env={**inherited, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def row(text: str, *starts: str) -> str:
    prefix = "| " + " | ".join(starts) + " |"
    found = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(found) == 1, (prefix, text)
    return found[0]


def usd(text: str) -> float:
    return float(text.strip().lstrip("$").replace(",", ""))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project in a new repository: commit 1 as it is, commit 2 with 6 TB checkpoints."""
    repo = tmp_path_factory.mktemp("repo")
    # Tracked and new (not ignored) files of the working tree: the code under test.
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z", "--", *SOURCES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / name)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the example as it is")
    edit(repo / PLAN, "size: 2TB", "size: 6TB")
    git(repo, "commit", "-q", "-a", "-m", "checkpoints grow to 6 TB")
    return repo


@pytest.fixture
def clone(repo: Path, tmp_path: Path) -> Path:
    """A copy of `repo` this test may change."""
    subprocess.run(
        ["git", "clone", "-q", str(repo), str(tmp_path / "clone")],
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
    )
    return tmp_path / "clone"


def test_a_committed_plan_change_shows_settings_bandwidth_and_cost(repo: Path) -> None:
    proc = gpudr_diff(repo, "--base", "HEAD~1", PLAN)
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert md.startswith("<!-- gpudr-diff: llm-training -->\n")
    assert "base `HEAD~1` (" in md and "-> head working tree (HEAD " in md
    assert "uncommitted" not in md
    # Only the checkpoint buckets change, in both stacks: their sizing tags.
    n = resource_count()
    assert row(md, "resources", n, n).endswith("| +0 ~2 -0 |")
    for site in ("use1", "usw2"):
        bucket = row(md, "~", "s3.Bucket", f"`{site}-checkpoints-bucket`")
        assert "`tags.gpudr:required-mbps`: `790.123` -> `2370.370`" in bucket
        assert "`tags.gpudr:burst-bytes`: `266666666666` -> `800000000000`" in bucket
    # The bandwidth row of the checkpoints workload, and the RTC path it shares.
    checkpoints = row(md, "checkpoints", "use1->usw2")
    assert "| yes |" in checkpoints and "| 790 Mbps -> **2.37 Gbps** | 5 Gbps |" in checkpoints
    assert "1.1 Gbps -> **3.08 Gbps**" in row(md, "use1->usw2", "s3-rtc")
    # More to replicate costs more: transfer and RTC fees triple.
    cost = row(md, "DR cost / month").split("|")
    base_usd, head_usd, change = usd(cost[2]), usd(cost[3]), cost[4]
    assert head_usd > base_usd
    assert re.fullmatch(r" \*\*\+\$[\d,]+\*\* \(\+\d+\.\d%\) ", change), change
    assert "+$10,382" in row(md, "use1", "replication", "checkpoints transfer aws -> aws")
    assert row(md, "policy pack").startswith("| policy pack | refuses nothing | refuses nothing |")


def test_an_uncommitted_change_is_diffed_against_head(clone: Path) -> None:
    edit(clone / PLAN, "nodes: 16", "nodes: 24")
    proc = gpudr_diff(clone, "--base", "HEAD", PLAN, "-o", "diff.md")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    md = (clone / "diff.md").read_text(encoding="utf-8")
    assert "-> head working tree (HEAD " in md and "with uncommitted changes" in md
    # The DR pool's ceiling follows the primary's size (pilot light: 0 until failover).
    pool = row(md, "~", "eks.NodeGroup", "`usw2-train-train-nodes`")
    assert "`scalingConfig.maxSize`: `16` -> `24`<br>`tags.gpudr:nodes`: `16` -> `24`" in pool
    total = row(md, "total cost / month").split("|")
    assert usd(total[3]) > usd(total[2])


def test_a_code_change_shows_with_each_side_running_its_own_code(clone: Path) -> None:
    """A change to the program's code only (the tag writer): the base side must run the base
    commit's code, or there would be nothing to show."""
    edit(
        clone / "gpudr" / "contract" / "tags.py",
        "Tag.SYSTEM.key: site.system,",
        'Tag.SYSTEM.key: site.system,\n        "gpudr:owner": "sre",',
    )
    proc = gpudr_diff(clone, "--base", "HEAD", PLAN)
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert "`tags.gpudr:owner`: `(none)` -> `sre`" in row(md, "~", "ec2.Vpc", "`use1-net-vpc`")
    assert row(md, "DR cost / month").endswith("| **$0** (0%) |")
    assert "Recovery targets and sizing" not in md


def test_a_plan_absent_at_base_is_all_added(clone: Path) -> None:
    shutil.copy(clone / PLAN, clone / "examples" / "new-system.yaml")
    proc = gpudr_diff(clone, "--base", "HEAD", "examples/new-system.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "(the plan is new: everything is added)" in proc.stdout
    n = resource_count()
    assert row(proc.stdout, "resources", "-", n).endswith(f"| +{n} ~0 -0 |")


def test_a_plan_invalid_at_base_is_bad_input(clone: Path) -> None:
    edit(clone / PLAN, "rpo: 4h", 'rpo: "4 hours"')
    git(clone, "commit", "-q", "-a", "-m", "a typo")
    edit(clone / PLAN, 'rpo: "4 hours"', "rpo: 4h")
    proc = gpudr_diff(clone, "--base", "HEAD", PLAN)
    assert proc.returncode == 2, proc.stderr
    first, *details = proc.stderr.splitlines()
    assert first.startswith("gpudr: the plan at HEAD is invalid; fix the plan")
    assert any(line.startswith("gpudr:   base: data.checkpoints.rpo: ") for line in details)
    assert any('"4 hours" is not a duration' in line for line in details)
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base", "no-such-branch", PLAN], r'--base "no-such-branch" is not a commit of the'),
        (["--base", "HEAD~5", PLAN], r'--base "HEAD~5" is not a commit'),
        (["--base", "--help=x", PLAN], r'--base "--help=x" is not a git ref'),
        (["--base", "HEAD", "examples/gone.yaml"], r"examples/gone.yaml: no such plan file"),
    ],
)
def test_bad_input_is_one_line_exit_2(repo: Path, args: list[str], message: str) -> None:
    proc = gpudr_diff(repo, *args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert re.match(r"gpudr: " + message, proc.stderr), proc.stderr
    assert proc.stdout == ""


def test_a_plan_outside_git_is_bad_input(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "plan.yaml"
    shutil.copy(repo / PLAN, outside)
    proc = gpudr_diff(repo, "--base", "HEAD", str(outside))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"gpudr: {outside} is not in a git repository;")
    assert len(proc.stderr.splitlines()) == 1


def test_a_second_diff_reads_both_sides_from_the_cache_and_shows_progress(
    repo: Path, tmp_path: Path
) -> None:
    """As the pull-request workflow runs it on the next push: the base commit's plan (its own
    code) and the head's are in the restored cache. GPUDR_PROGRESS stands in for a terminal:
    each side's progress is shown as it runs."""
    cache = tmp_path / "cache"
    args = ("--base", "HEAD~1", PLAN, "--cache-dir", str(cache))
    env = {"GPUDR_PROGRESS": "1"}
    first = gpudr_diff(repo, *args, env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert "... head: running the program for stack llm-training-use1 under mocks" in lines
    assert "... base: running the program for stack llm-training-use1 under mocks" in lines
    assert any(line.startswith("... base (HEAD~1) done in ") for line in lines)
    assert len(list(cache.glob("v*/*/*.json"))) == 2  # one entry per side
    second = gpudr_diff(repo, *args, env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert "... base: plan cache: 1 of 1 plan(s) from " in second.stderr
    assert "... head: plan cache: 1 of 1 plan(s) from " in second.stderr
    assert "running the program" not in second.stderr
    uncached = gpudr_diff(repo, "--base", "HEAD~1", PLAN, "--no-cache")
    assert uncached.stdout == first.stdout
