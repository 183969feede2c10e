"""On premises -> Azure end to end: `gpudr plan` of examples/onprem-to-azure.yaml meets every
target with the pack refusing nothing; one agent per job; the spec's refusals for what Azure
does not take. The undersized WAN is tests/e2e/test_onprem.py's table."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gpudr.app.cli import main
from gpudr.build.stackconfig import build_site_configs
from gpudr.core.design import design
from gpudr.core.spec import PlanError, parse_plan
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "onprem-to-azure.yaml"
PACK_CONFIG = ROOT / "examples" / "pack-config.json"


def raw() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))


def plan_json(path: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        main,
        ["plan", str(path), "--format", "json", "--policy-config", str(PACK_CONFIG)],
        catch_exceptions=False,
    )
    return result.exit_code, json.loads(result.output)


def test_the_example_meets_every_target_and_the_pack_refuses_nothing() -> None:
    code, report = plan_json(EXAMPLE)
    assert code == 0, [v["message"] for s in report["stacks"] for v in s["policy"]["violations"]]
    assert report["meets"] and report["policy_ok"]
    (stack,) = report["stacks"]
    assert stack["name"] == "iad-training-eus"  # no stack on premises
    assert [v for v in stack["policy"]["violations"] if v["level"] == "mandatory"] == []
    types = [r["type"] for r in stack["resources"]]
    assert types.count("azure-native:storagemover:JobDefinition") == 3
    # each job started by its own schedule; each replica account reached privately
    assert types.count("azure-native:logic:Workflow") == 3
    assert types.count("azure-native:network:PrivateEndpoint") == 3
    assert types.count("azure-native:network:PrivateDnsZoneGroup") == 3
    assert types.count("azure-native:authorization:RoleDefinition") == 1
    assert {
        "azure-native:privatedns:PrivateZone",
        "azure-native:privatedns:VirtualNetworkLink",
        "azure-native:dnsresolver:DnsResolver",
        "azure-native:dnsresolver:InboundEndpoint",
    } <= set(types)
    assert {
        "azure-native:storagemover:StorageMover",
        "azure-native:network:ExpressRouteCircuit",
        "azure-native:network:ExpressRouteCircuitPeering",
        "azure-native:network:VirtualNetworkGatewayConnection",
    } <= set(types)
    (path,) = report["paths"]
    assert path["kind"] == "wan" and path["provisioned_gbps"] == 3.0


def test_the_wan_path_is_bound_by_the_storage_mover_agents() -> None:
    d = design(parse_plan(raw()))
    (path,) = d.paths.values()
    assert path.capacity_gbps == 3.0  # 3 agents x quotas.storage_mover_agent_gbps (1)
    assert "storage_mover_agent_gbps" in path.capacity_source


def test_each_run_is_bounded_by_its_one_agent() -> None:
    """A job definition names one agent: every class's run is sized at one agent's rate, not
    the path's 3 Gbps, and the replica states that rate for the pack."""
    d = design(parse_plan(raw()))
    for f in d.flows:
        assert f.schedule is not None
        run_at_one_agent = f.schedule.run_bytes * 8 / 1e9  # seconds at 1 Gbps
        assert f.schedule.transfer_s == pytest.approx(run_at_one_agent), f.data_class
    replicas = {b.data_class: b for b in build_site_configs(d)["eus"].buckets}
    assert {c: b.agent_gbps for c, b in replicas.items()} == {
        "checkpoints": 1.0,
        "weights": 1.0,
        "datasets": 1.0,
    }


@pytest.mark.parametrize("agents", [1, 2])
def test_fewer_agents_than_classes_is_refused(agents: int) -> None:
    plan = raw()
    plan["sites"]["iad1"]["agents"] = plan["sites"]["iad1"]["agents"][:agents]
    with pytest.raises(PlanError, match=f"sites.iad1.agents: {agents} for 3 data classes"):
        parse_plan(plan)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("storage", {"kind": "s3-compatible", "endpoint": "https://minio.lan:9000/ml-data"}),
            "Storage Mover reads NFS and SMB shares, not object stores",
        ),
        (
            ("link", {"kind": "vpn", "bgp_asn": 65020, "address": "203.0.113.7"}),
            "declares no VPN gateway for an on-premises router",
        ),
        (
            (
                "link",
                {
                    "kind": "expressroute",
                    "provider": "Equinix",
                    "location": "Washington DC",
                    "port_gbps": 3,
                    "bgp_asn": 65020,
                    "vlan": 420,
                    "peering_subnets": ["192.168.50.0/30", "192.168.50.4/30"],
                },
            ),
            "3 is not a circuit bandwidth",
        ),
        (
            (
                "link",
                {
                    "kind": "expressroute",
                    "provider": "Equinix",
                    "location": "Washington DC",
                    "port_gbps": 10,
                    "bgp_asn": 65020,
                    "vlan": 420,
                    "peering_subnets": ["192.168.50.0/29", "192.168.50.8/30"],
                },
            ),
            "is not an IPv4 /30",
        ),
    ],
)
def test_what_azure_does_not_take_is_refused_with_the_reason(
    change: tuple[str, dict[str, Any]], message: str
) -> None:
    plan = raw()
    field, value = change
    plan["sites"]["iad1"][field] = value
    if field == "link" and value["kind"] == "expressroute" and value["port_gbps"] == 3:
        plan["sites"]["iad1"]["wan_committed_gbps"] = 2
    with pytest.raises(PlanError, match=message):
        parse_plan(plan)
