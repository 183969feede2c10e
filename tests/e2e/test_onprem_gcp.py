"""examples/onprem-to-gcp.yaml end to end through the CLI (the program under mocks, the pack over
gRPC): met and refused nothing as written; HA VPN from on premises refused. The undersized WAN
is tests/e2e/test_onprem.py's table."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from gpudr.app.cli import main
from tests.conftest import ROOT
from tests.e2e.test_onprem import plan_json

EXAMPLE = ROOT / "examples" / "onprem-to-gcp.yaml"


def test_the_example_meets_every_target_and_the_pack_refuses_nothing() -> None:
    code, report = plan_json(EXAMPLE)
    assert code == 0, report
    assert report["meets"] and report["policy_ok"]
    (stack,) = report["stacks"]
    assert stack["name"] == "ams-training-euw4"  # no stack on premises
    assert stack["policy"]["violations"] == []
    types = {r["type"] for r in stack["resources"]}
    assert {
        "gcp:storage/transferAgentPool:TransferAgentPool",
        "gcp:storage/transferJob:TransferJob",
        "gcp:compute/interconnectAttachment:InterconnectAttachment",
        "gcp:compute/routerPeer:RouterPeer",
    } <= types
    (path,) = report["paths"]
    assert path["kind"] == "wan" and path["provisioned_gbps"] == 8.0


def test_ha_vpn_from_on_premises_into_gcp_is_refused_with_the_fix(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["sites"]["ams1"]["link"] = {"kind": "vpn", "bgp_asn": 65020, "address": "145.40.66.7"}
    raw["sites"]["ams1"]["wan_committed_gbps"] = 2
    plan = tmp_path / "onprem-gcp-vpn.yaml"
    plan.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(main, ["plan", str(plan)])
    assert result.exit_code != 0
    assert 'sites.ams1.link.kind: "vpn" does not reach gcp' in result.output, result.output
