"""The on-premises runbooks' checklists (gpudr/docs/onprem_runbook.py and
templates/runbook-onprem*.md.j2), rendered from the examples: what they tell the operator to
run and in which order."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from gpudr.core.design import design
from gpudr.core.spec import parse_plan
from gpudr.docs.onprem_runbook import build_onprem_runbook, render_onprem_runbook
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
