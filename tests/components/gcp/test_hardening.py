"""The controls that cost nothing to run (issue 15), pinned on a GCP primary, a GCP DR site and
a GCP drill: the GKE cluster's shielded nodes and intranode
visibility; secure boot and integrity monitoring on GPU pools; and the site network's firewall,
declared rule by rule (peers allowed both ways, the site and HTTPS allowed out, the rest denied
at the lowest priority, nothing logged).

The sites are test_gcp_site's hand-built pair (a primary in us-central1 peered with its DR site
in us-east4); the drill is `gpudr drill`'s stack for the gcp-two-region example's DR site.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from components.gcp.network import address_plan, rule_name
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.drill import DrillSetup, build_drill
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.components.gcp.test_gcp_site import (
    CLUSTER,
    DR,
    NODE_POOL,
    SITES,
    link,
    of_type,
    peer,
    run,
    standby,
)
from tests.conftest import ROOT

FIREWALL = "gcp:compute/firewall:Firewall"
ANYWHERE = ["0.0.0.0/0"]
EVERY_PROTOCOL = [{"protocol": "all"}]


@cache
def drill_setup() -> DrillSetup:
    plan = load_plan(ROOT / "examples" / "gcp-two-region.yaml")
    now = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)
    return build_drill(design(plan), "use4", now, operator="user:drill-operator@example.com")


@cache
def drill(phase: str = "capacity") -> StackRun:
    s = drill_setup()
    return run_stack(s.stack, s.config(phase), GpudrMocks(default_region=s.site.region))


def stack(name: str) -> StackRun:
    return drill() if name == "drill" else standby(name)


STACKS = ["usc1", "use4", "drill"]


# --- GKE ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STACKS)
def test_new_clusters_enforce_network_policy_and_deployed_ones_keep_their_datapath(
    name: str,
) -> None:
    """Dataplane V2 (network policy enforcement) on every cluster gpudr creates; it is fixed at
    creation, so the engine keeps a deployed cluster's datapath rather than replacing it and
    its warm pools (docs/security.md). Binary Authorization needs an API gpudr does not
    require, so it is not set."""
    (c,) = of_type(stack(name), CLUSTER)
    assert c.inputs["datapathProvider"] == "ADVANCED_DATAPATH", c.urn
    assert c.ignore_changes == ("datapathProvider",), c.urn
    assert "binaryAuthorization" not in c.inputs, c.urn
    assert "networkPolicy" not in c.inputs, c.urn  # Calico's switch; Dataplane V2 replaces it


@pytest.mark.parametrize("name", STACKS)
def test_cluster_has_shielded_nodes_and_intranode_visibility(name: str) -> None:
    (c,) = of_type(stack(name), CLUSTER)
    assert c.inputs["enableShieldedNodes"] is True, c.urn
    assert c.inputs["enableIntranodeVisibility"] is True, c.urn


@pytest.mark.parametrize("name", STACKS)
def test_gpu_pools_boot_securely_and_are_integrity_monitored(name: str) -> None:
    pools = of_type(stack(name), NODE_POOL)
    assert pools
    for pool in pools:
        node = pool.inputs["nodeConfig"]
        assert node["guestAccelerators"], pool.urn  # a GPU pool
        assert node["shieldedInstanceConfig"] == {
            "enableSecureBoot": True,
            "enableIntegrityMonitoring": True,
        }, pool.urn


# --- the site network's firewall --------------------------------------------------------------


def _rules(r: StackRun) -> dict[str, Registration]:
    """The firewall rules, by their suffix after the network's name."""
    (net,) = of_type(r, "gcp:compute/network:Network")
    prefix = f"{net.inputs['name']}-"
    rules = {x.inputs["name"].removeprefix(prefix): x for x in of_type(r, FIREWALL)}
    for x in rules.values():
        assert x.inputs["name"].startswith(prefix), x.urn
        assert x.inputs["network"] == net.id, x.urn
    return rules


def _shape(x: Registration) -> dict[str, Any]:
    keep = ("direction", "priority", "sourceRanges", "destinationRanges", "allows", "denies")
    return {k: x.inputs[k] for k in keep if k in x.inputs}


def _expected(cidr: str, peers: list[str]) -> dict[str, dict[str, Any]]:
    allow = {"priority": 1000, "allows": EVERY_PROTOCOL}
    deny = {"priority": 65534, "denies": EVERY_PROTOCOL}
    out: dict[str, dict[str, Any]] = {}
    if peers:
        out["in-peers"] = {"direction": "INGRESS", "sourceRanges": peers, **allow}
        out["out-peers"] = {"direction": "EGRESS", "destinationRanges": peers, **allow}
    return {
        **out,
        "out-site": {"direction": "EGRESS", "destinationRanges": [cidr], **allow},
        "out-https": {
            "direction": "EGRESS",
            "destinationRanges": ANYWHERE,
            "priority": 1000,
            "allows": [{"protocol": "tcp", "ports": ["443"]}],
        },
        "in-deny-all": {"direction": "INGRESS", "sourceRanges": ANYWHERE, **deny},
        "out-deny-all": {"direction": "EGRESS", "destinationRanges": ANYWHERE, **deny},
    }


@pytest.mark.parametrize("name", ["usc1", "use4"])
def test_site_firewall_allows_the_peer_the_site_and_https_and_denies_the_rest(name: str) -> None:
    cfg = SITES[name]
    rules = _rules(standby(name))
    assert {k: _shape(x) for k, x in rules.items()} == _expected(cfg.cidr, [cfg.peers[0].cidr]), (
        sorted(rules)
    )


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_dr_firewall_is_the_same_in_failover(mode: str) -> None:
    rules = _rules(run(DR, mode))
    assert {k: _shape(x) for k, x in rules.items()} == _expected(DR.cidr, [DR.peers[0].cidr])


def test_drill_firewall_allows_no_peer() -> None:
    s = drill_setup()
    rules = _rules(drill())
    cidr = s.drill.cidr or s.site.cidr
    assert {k: _shape(x) for k, x in rules.items()} == _expected(cidr, []), sorted(rules)
    peers = {p.cidr for p in s.site.peers}
    assert peers
    for x in rules.values():
        ranges = set(x.inputs.get("sourceRanges", []) + x.inputs.get("destinationRanges", []))
        assert not ranges & peers, x.urn


@pytest.mark.parametrize("name", STACKS)
def test_every_rule_is_described_named_and_not_logged(name: str) -> None:
    r = stack(name)
    project = (drill_setup().site if name == "drill" else SITES[name]).project
    for x in of_type(r, FIREWALL):
        assert x.inputs["description"].startswith("gpudr: "), x.urn
        assert len(x.inputs["description"]) > len("gpudr: "), x.urn
        assert len(x.inputs["name"]) <= 63, x.urn
        assert x.inputs["project"] == project, x.urn
        # Firewall rules logging is billed (Cloud Logging): off, and said so in docs/security.md.
        assert "logConfig" not in x.inputs and "enableLogging" not in x.inputs, x.urn
        assert "disabled" not in x.inputs, x.urn


@pytest.mark.parametrize("clusters", [["train"], ["train", "serve", "eval"]])
def test_site_egress_rule_covers_every_range_gke_uses(clusters: list[str]) -> None:
    """Nodes, Pods, Services and the control planes' /28s: all inside the site's CIDR, so the
    out-site rule is all the egress a cluster needs inside the network."""
    site = ipaddress.ip_network(DR.cidr)
    plan = address_plan(DR.cidr, clusters)
    for c in plan.clusters.values():
        for block in (plan.nodes_cidr, c.pods_cidr, c.services_cidr, c.master_cidr):
            assert ipaddress.ip_network(block).subnet_of(site), block  # type: ignore[arg-type]


def test_only_linked_peers_are_allowed() -> None:
    """A peer with no DR link to this site has no path here: its range is not allowed."""
    stranger = peer("usw1", "us-west1", "dr", "10.30.0.0/16", "gpudr-offline-other")
    cfg = dataclasses.replace(DR, peers=(*DR.peers, stranger))
    rules = _rules(run(cfg))
    assert rules["in-peers"].inputs["sourceRanges"] == [DR.peers[0].cidr]
    assert rules["out-peers"].inputs["destinationRanges"] == [DR.peers[0].cidr]
    # Two links to one peer: its range once.
    twice = dataclasses.replace(DR, links=(link("vpc-peering", "usc1"), link("ha-vpn", "usc1")))
    assert _rules(run(twice))["in-peers"].inputs["sourceRanges"] == [DR.peers[0].cidr]


def test_a_site_without_links_declares_no_peer_rule() -> None:
    rules = _rules(run(dataclasses.replace(DR, links=())))
    assert set(rules) == {"out-site", "out-https", "in-deny-all", "out-deny-all"}


def test_rule_names_fit_and_stay_distinct() -> None:
    long = "gpudr-" + "x" * 56  # 62 characters, as long as a drill network's name can be
    a, b = rule_name(long, "out-deny-all"), rule_name(long + "y", "out-deny-all")
    assert len(a) <= 63 and len(b) <= 63 and a != b
    assert a.endswith("-out-deny-all")
    assert rule_name("gpudr-llm-use4", "in-peers") == "gpudr-llm-use4-in-peers"
