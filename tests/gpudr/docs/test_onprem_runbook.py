"""The on-premises runbooks' checklists (gpudr/docs/onprem_runbook.py and
templates/runbook-onprem*.md.j2), rendered from the examples: what they tell the operator to
run and in which order."""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from gpudr.core.design import design
from gpudr.core.spec import parse_plan
from gpudr.docs.onprem_runbook import (
    build_onprem_runbook,
    render_onprem_runbook,
    storage_mover_agent_fqdns,
)
from tests.conftest import ROOT


def _example(name: str) -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text()))


def _render(raw: dict[str, Any]) -> str:
    d = design(parse_plan(raw))
    ((onprem, dr),) = d.plan.onprem_pairs()
    return render_onprem_runbook(build_onprem_runbook(d, onprem, dr), "")


def _reads_of_onprem(text: str) -> list[str]:
    return [line for line in text.splitlines() if "pulumi stack output onprem" in line]


def test_the_azure_service_key_is_read_with_show_secrets() -> None:
    reads = _reads_of_onprem(_render(_example("onprem-to-azure")))
    assert reads and all("--show-secrets" in line for line in reads), reads


def test_the_partner_pairing_keys_are_read_with_show_secrets() -> None:
    raw = _example("onprem-to-gcp")
    ((name, site),) = [(n, s) for n, s in raw["sites"].items() if s.get("cloud") == "onprem"]
    site["link"] = {"kind": "interconnect-partner", "port_gbps": 5, "ports": 2, "bgp_asn": 65020}
    site["wan_committed_gbps"] = 8
    reads = [line for line in _reads_of_onprem(_render(raw)) if "pairing_keys" in line]
    assert reads and all("--show-secrets" in line for line in reads), (name, reads)


def test_the_azure_dns_step_says_who_forwards_and_why_other_accounts_still_resolve() -> None:
    text = _render(_example("onprem-to-azure"))
    step = text.split("### 6. DNS")[1].split("###")[0]
    assert "On the DNS servers the agents use, and only those" in step
    assert "a forwarder of their own" in step  # when corporate resolvers must not change
    assert "NxDomainRedirect" in step and "instead of NXDOMAIN" in step


def test_the_azure_firewall_step_lists_the_agents_endpoints_before_they_register() -> None:
    text = _render(_example("onprem-to-azure"))
    checklist = text.split("## On-premises checklist")[1].split("## Failover")[0]
    steps = re.findall(r"^### (\d+)\. (.+)$", checklist, flags=re.M)
    assert [int(n) for n, _ in steps] == list(range(1, 8)), steps
    titles = dict(steps)
    assert titles["3"] == "Firewall openings", steps  # registration needs them
    assert titles["4"] == "Agent VMs and their registration", steps
    assert titles["7"] == "Check the first runs", steps
    firewall = checklist.split("### 3.")[1].split("### 4.")[0]
    fqdns = storage_mover_agent_fqdns("eastus")  # the DR site's region
    assert "eastus.agentgateway.prd.azsm.azure.com" in fqdns
    assert "evhns-sm-ur-prd-eastus.servicebus.windows.net" in fqdns
    for fqdn in fqdns:
        assert f"`{fqdn}`" in firewall, fqdn
    assert "{region}" not in text and "<region>" not in text


def test_the_arc_identity_is_read_through_the_agents_arc_resource() -> None:
    text = _render(_example("onprem-to-azure"))
    registration = text.split("### 4.")[1].split("### 5.")[0]
    assert "az connectedmachine" not in registration  # the machine's name is not the agent's
    assert "--query arcResourceId -o tsv" in registration
    assert 'az resource show --ids "$ARC_ID" --query identity.principalId' in registration
