"""examples/onprem-to-aws.yaml end to end through the CLI (the program under mocks, the pack over
gRPC): met and refused nothing as written; with the committed WAN below the need, not met and
refused by the pack, which judges the same WAN rate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gpudr.app.cli import main
from gpudr.app.offline.mocks import GpudrMocks
from gpudr.app.offline.policy import evaluate
from gpudr.app.offline.run import run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "onprem-to-aws.yaml"
PACK_CONFIG = ROOT / "examples" / "pack-config.json"
BOOTSTRAP = ROOT / "policies" / "config.bootstrap.json"


def plan_json(path: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        main,
        ["plan", str(path), "--format", "json", "--policy-config", str(PACK_CONFIG)],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(result.output)


def test_the_example_meets_every_target_and_the_pack_refuses_nothing() -> None:
    code, report = plan_json(EXAMPLE)
    assert code == 0, report
    assert report["meets"] and report["policy_ok"]
    (stack,) = report["stacks"]
    assert stack["name"] == "fra-training-euc1"  # no stack on premises
    assert stack["policy"]["violations"] == []
    types = {r["type"] for r in stack["resources"]}
    assert {
        "aws:datasync/nfsLocation:NfsLocation",
        "aws:datasync/task:Task",
        "aws:directconnect/transitVirtualInterface:TransitVirtualInterface",
        "aws:ec2/vpcEndpoint:VpcEndpoint",
    } <= types
    (path,) = report["paths"]
    assert path["kind"] == "wan" and path["provisioned_gbps"] == 8.0


@pytest.mark.parametrize(
    ("example", "site", "mechanism"),
    [
        ("onprem-to-aws", "fra1", "datasync-agent"),
        ("onprem-to-gcp", "ams1", "sts-agent"),
        ("onprem-to-azure", "iad1", "storage-mover"),
    ],
)
def test_an_undersized_wan_is_not_met_and_refused_by_the_pack(
    tmp_path: Path, example: str, site: str, mechanism: str
) -> None:
    """Into every DR cloud: the committed WAN below the need (961 Mbps with headroom) leaves
    every class not met, and the pack refuses the replicas at the same asserted rate."""
    raw = yaml.safe_load((ROOT / "examples" / f"{example}.yaml").read_text())
    raw["sites"][site]["wan_committed_gbps"] = 0.5
    plan = tmp_path / f"{example}-small-wan.yaml"
    plan.write_text(yaml.safe_dump(raw))
    code, report = plan_json(plan)
    assert code == 1
    data = [w for w in report["workloads"] if w["name"] in ("checkpoints", "weights", "datasets")]
    assert data and not any(w["meets"] for w in data)
    (stack,) = report["stacks"]
    refused = [
        v
        for v in stack["policy"]["violations"]
        if v["policy"] == "replication-bandwidth" and v["level"] == "mandatory"
    ]
    assert refused and all(
        f"500 Mbps rate asserted for {mechanism}" in v["message"] for v in refused
    )
    assert not report["policy_ok"]


def test_the_example_over_a_vpn_plans_and_writes_its_tunnel_checklist(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["sites"]["fra1"]["link"] = {
        "kind": "vpn",
        "bgp_asn": 65010,
        "address": "145.40.66.7",
        "ports": 4,
    }
    raw["sites"]["fra1"]["wan_committed_gbps"] = 4
    plan = tmp_path / "onprem-vpn.yaml"
    plan.write_text(yaml.safe_dump(raw))
    code, report = plan_json(plan)
    assert code == 0, [v["message"] for s in report["stacks"] for v in s["policy"]["violations"]]
    (stack,) = report["stacks"]
    types = [r["type"] for r in stack["resources"]]
    assert types.count("aws:ec2/vpnConnection:VpnConnection") == 2
    assert "aws:directconnect/connection:Connection" not in types
    # (the workflow names the pack config only from inside the root: none here)
    result = CliRunner().invoke(
        main,
        ["generate", str(plan), "--root", str(tmp_path)],
        env={"GPUDR_POLICY_CONFIG": None},
    )
    assert result.exit_code == 0, result.output
    runbook = (tmp_path / "runbooks" / "fra-training-fra1-to-euc1.md").read_text()
    assert "### 1. The VPN tunnels" in runbook
    assert "Open UDP 500 and 4500 and IP protocol 50 (ESP)" in runbook
    assert "deploy every agent for Enhanced mode" in runbook  # NFS: Enhanced-mode tasks
    assert "Direct Connect" not in runbook.split("## On-premises checklist")[1].split("### 3.")[0]


def test_the_example_from_an_object_store_plans_with_the_stores_key(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["sites"]["fra1"]["storage"] = {
        "kind": "s3-compatible",
        "endpoint": "https://minio.dc1.lan:9000/ml-data",
    }
    plan = tmp_path / "onprem-minio.yaml"
    plan.write_text(yaml.safe_dump(raw))
    code, report = plan_json(plan)
    assert code == 0, [v["message"] for s in report["stacks"] for v in s["policy"]["violations"]]
    (stack,) = report["stacks"]
    sources = [
        r
        for r in stack["resources"]
        if r["type"] == "aws:datasync/locationObjectStorage:LocationObjectStorage"
    ]
    assert len(sources) == 3
    # The key's secret (the offline stand-in) is registered as a secret, and only there.
    for r in stack["resources"]:
        if r in sources:
            assert r["inputs"]["secretKey"]["4dabf18193072939515e22adb298388d"], r["urn"]
        else:
            assert "offline-not-a-real-secret" not in json.dumps(r), r["urn"]
    result = CliRunner().invoke(
        main,
        ["generate", str(plan), "--root", str(tmp_path)],
        env={"GPUDR_POLICY_CONFIG": None},
    )
    assert result.exit_code == 0, result.output
    runbook = (tmp_path / "runbooks" / "fra-training-fra1-to-euc1.md").read_text()
    assert "### 5. The bucket and its read-only key" in runbook
    assert "deploy every agent for Enhanced mode" not in runbook  # Basic-mode tasks
    assert "minio.dc1.lan (the s3-compatible server) | TCP 9000 (HTTPS)" in runbook


def test_the_first_up_before_activation_is_refused_unless_bootstrapped() -> None:
    """The first `pulumi up` creates the endpoint the agents are activated against: without
    their ARNs the stack declares no task, the pack refuses each replica pointing at the
    activation, and policies/config.bootstrap.json lowers exactly that to advisory."""
    plan = load_plan(EXAMPLE)
    site = plan.sites["euc1"]
    name = stack_name(plan, site)
    run = run_stack(
        name, stack_config_values(design(plan), site), GpudrMocks(default_region=site.region)
    )
    stack = {"name": name, "resources": [r.record() for r in run.registrations]}
    config = json.loads(PACK_CONFIG.read_text())
    refused = [v for v in evaluate([stack], config)[name] if v.level == "mandatory"]
    assert len(refused) == 3 and {v.policy for v in refused} == {"replication-meets-rpo"}
    assert all("gpudr:datasync_agent_arns" in v.message for v in refused), refused
    bootstrap = {**config, **json.loads(BOOTSTRAP.read_text())}
    assert [v for v in evaluate([stack], bootstrap)[name] if v.level == "mandatory"] == []
