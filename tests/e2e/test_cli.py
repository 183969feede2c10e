"""`gpudr` as a user runs it: exit codes, error lines, the JSON contract, generated files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gpudr.app.cli import main
from tests.conftest import EXAMPLE, ROOT


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_json_contract(report: dict[str, Any]) -> None:
    assert [s["name"] for s in report["stacks"]] == ["llm-training-use1", "llm-training-usw2"]
    for stack in report["stacks"]:
        assert {"name", "cloud", "region", "resources"} <= stack.keys()
        for r in stack["resources"]:
            assert {"type", "name", "urn", "id", "inputs"} <= r.keys()
    for w in report["workloads"]:
        assert {
            "name",
            "rpo_s",
            "rto_s",
            "pattern",
            "required_gbps",
            "provisioned_gbps",
            "estimated_rpo_s",
            "estimated_rto_s",
            "meets",
        } <= w.keys()
    assert report["cost"]["monthly_usd"] > 0


def test_ids_can_be_followed(report: dict[str, Any]) -> None:
    """An input that refers to another resource holds that resource's offline id."""
    dr = next(s for s in report["stacks"] if s["site"] == "usw2")
    ids = {r["id"]: r for r in dr["resources"] if r["custom"]}
    versioning = [
        r for r in dr["resources"] if r["type"] == "aws:s3/bucketVersioning:BucketVersioning"
    ]
    for v in versioning:
        assert ids[v["inputs"]["bucket"]]["type"] == "aws:s3/bucket:Bucket", v["urn"]
    node_groups = [r for r in dr["resources"] if r["type"] == "aws:eks/nodeGroup:NodeGroup"]
    for ng in node_groups:
        assert (
            ids[ng["inputs"]["launchTemplate"]["id"]]["type"]
            == "aws:ec2/launchTemplate:LaunchTemplate"
        )


def test_resources_listed_are_what_the_program_registered(report: dict[str, Any]) -> None:
    from gpudr.app.offline.run import run_stack
    from gpudr.build.stackconfig import stack_config_values, stack_name
    from gpudr.core.design import design
    from gpudr.core.spec import load_plan

    plan = load_plan(EXAMPLE)
    d = design(plan)
    site = plan.sites["usw2"]
    direct = run_stack(stack_name(plan, site), stack_config_values(d, site))
    listed = next(s for s in report["stacks"] if s["site"] == "usw2")["resources"]
    assert sorted(r["urn"] for r in listed) == sorted(r.urn for r in direct.registrations)


def test_text_and_markdown(tmp_path: Path) -> None:
    text = invoke("plan", str(EXAMPLE))
    assert text.exit_code == 0
    assert "Every recovery target is met." in text.output
    assert "llm-training-usw2 (aws us-west-2, dr)" in text.output
    md = invoke(
        "plan",
        str(EXAMPLE),
        "--format",
        "markdown",
        "--stack",
        "usw2",
        "-o",
        str(tmp_path / "p.md"),
    )
    assert md.exit_code == 0 and md.output == ""
    body = (tmp_path / "p.md").read_text()
    assert body.startswith("# gpudr plan: llm-training") and "| checkpoints | use1->usw2 |" in body
    assert "llm-training-use1 (" not in body  # --stack kept only the DR stack


def test_not_met_exits_1(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw.pop("quotas")  # back to the default 1 Gbps RTC rate: the checkpoint stream overruns it
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(raw))
    result = invoke("plan", str(plan), "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.output)["meets"] is False


def test_bad_input_exits_2_with_one_line_per_problem(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["data"]["checkpoints"]["rpo"] = "4 hours"
    raw["sites"]["usw2"]["region"] = "us-west-9"
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump(raw))
    out_dir = tmp_path / "stacks"
    proc = subprocess.run(
        [sys.executable, "-m", "gpudr", "generate", str(plan), "--root", str(out_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert (
        'gpudr: data.checkpoints.rpo: "4 hours" is not a duration; use e.g. 45m, 4h, 1h30m, 7d or 0'
        in lines
    )
    assert any(
        line.startswith('gpudr: sites.usw2.region: "us-west-9" is not a known aws region')
        for line in lines
    )
    assert "Traceback" not in proc.stderr
    assert not out_dir.exists(), "nothing is written for a bad plan"


def test_unknown_stack_exits_2() -> None:
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--stack", "nope"])
    assert result.exit_code == 2
    assert 'gpudr: --stack "nope" is not a stack of this plan' in result.output


def test_generate_writes_the_stack_files_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workflow names the plan by its path under the root: the plan must be there, and so
    # must the pack config (none here).
    monkeypatch.delenv("GPUDR_POLICY_CONFIG")
    (tmp_path / "examples").mkdir()
    plan = tmp_path / "examples" / EXAMPLE.name
    shutil.copy(EXAMPLE, plan)
    result = invoke("generate", str(plan), "--root", str(tmp_path))
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (tmp_path / "stacks").iterdir())
    assert names == ["Pulumi.llm-training-use1.yaml", "Pulumi.llm-training-usw2.yaml"]
    for name in names:
        text = (tmp_path / "stacks" / name).read_text()
        assert text.startswith("# Generated by `gpudr generate")
        cfg = yaml.safe_load(text)["config"]
        assert cfg["gpudr:site"]["site"] in name and cfg["aws:region"]
    dr = yaml.safe_load((tmp_path / "stacks" / "Pulumi.llm-training-usw2.yaml").read_text())
    assert dr["config"]["gpudr:mode"] == "standby"


def test_json_carries_the_policy_verdicts(report: dict[str, Any]) -> None:
    assert report["policy_ok"] is True
    for stack in report["stacks"]:
        assert "violations" in stack["policy"], stack["name"]
        for v in stack["policy"]["violations"]:
            assert {"policy", "level", "urn", "message"} == v.keys()


def test_a_mandatory_policy_violation_exits_1(tmp_path: Path) -> None:
    """A stricter pack config than the plan satisfies: weights are locked 365 days, the config
    asks for 400."""
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"immutable-weights": {"min_retention_days": 400}}))
    result = invoke("plan", str(EXAMPLE), "--format", "json", "--policy-config", str(config))
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["meets"] is True and out["policy_ok"] is False
    found = [
        (s["name"], v["urn"])
        for s in out["stacks"]
        for v in s["policy"]["violations"]
        if v["policy"] == "immutable-weights" and v["level"] == "mandatory"
    ]
    assert {name for name, _ in found} == {"llm-training-use1", "llm-training-usw2"}, found
    assert all("weights" in urn for _, urn in found), found
    md = invoke("plan", str(EXAMPLE), "--format", "markdown", "--policy-config", str(config))
    assert md.exit_code == 1
    assert "Policy violations:" in md.output and "immutable-weights" in md.output


def test_a_policy_config_that_is_not_json_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "policy.json"
    config.write_text("min_retention_days: 400")
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--policy-config", str(config)])
    assert result.exit_code == 2
    assert "--policy-config" in result.output and "Traceback" not in result.output


def test_a_policy_config_naming_an_unknown_policy_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"immutable-weight": {"min_retention_days": 1}}))
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE), "--policy-config", str(config)])
    assert result.exit_code == 2
    assert '"immutable-weight", which is not a policy' in result.output


@pytest.mark.parametrize("name", ["config.example.json", "config.bootstrap.json"])
def test_the_committed_policy_configs_are_accepted(name: str) -> None:
    """On an example that asserts no raised quota (these configs approve none)."""
    plan = ROOT / "examples" / "gcp-to-aws.yaml"
    result = CliRunner().invoke(
        main, ["plan", str(plan), "--policy-config", str(ROOT / "policies" / name)]
    )
    assert result.exit_code == 0, result.output


def test_without_the_organisations_approval_the_raised_quota_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fail closed: the example asserts 5 Gbps of S3 RTC; with no pack config naming that
    approval, the vendor's default (1 Gbps) bounds it, and the message names the fix."""
    monkeypatch.delenv("GPUDR_POLICY_CONFIG")
    result = CliRunner().invoke(main, ["plan", str(EXAMPLE)])
    assert result.exit_code == 1, result.output
    assert "dr-tags-verified" in result.output and "approved_quotas" in result.output
