"""SiteNetwork's security groups, on every AWS site of the examples (primaries and DR sites) and
in the drills of the AWS DR sites: the VPC's default security group keeps no rule, and every
rule of every security group says what it admits and why."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpudr.core.spec import load_plan
from tests.components.aws.stacks import every_run, of_type, run_of
from tests.conftest import ROOT

VPC = "aws:ec2/vpc:Vpc"
DEFAULT_SG = "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
# Rules declared as resources of their own, in either generation of the API.
RULES = (
    "aws:ec2/securityGroupRule:SecurityGroupRule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)
# What EC2 accepts in a rule description (at most 255 characters).
DESCRIPTION = re.compile(r"[a-zA-Z0-9. _\-:/()#,@\[\]+=&;{}!$*]{20,255}")


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_the_default_security_group_of_every_vpc_allows_nothing(
    kind: str, example: str, site: str
) -> None:
    """CIS AWS Foundations Benchmark v3.0.0 5.4 (Security Hub EC2.2)."""
    run = run_of(kind, example, site)
    vpcs = of_type(run, VPC)
    defaults = of_type(run, DEFAULT_SG)
    assert vpcs and len(defaults) == len(vpcs)
    for vpc in vpcs:
        (group,) = (g for g in defaults if g.inputs["vpcId"] == vpc.id)
        # Declared empty, not left out: an omitted list would keep whatever rules it has.
        assert group.inputs["ingress"] == [], group.urn
        assert group.inputs["egress"] == [], group.urn
        assert group.inputs["region"] == vpc.inputs["region"], group.urn
        assert group.property_dependencies["vpcId"] == [vpc.urn], group.urn
        assert group.parent == vpc.parent, group.urn


def _rules(run: Any) -> list[tuple[str, dict[str, Any]]]:
    """(URN, rule) for every inline rule of every security group and every rule resource."""
    out = [
        (g.urn, rule)
        for g in of_type(run, SECURITY_GROUP)
        for direction in ("ingress", "egress")
        for rule in g.inputs.get(direction) or []
    ]
    out += [(r.urn, r.inputs) for token in RULES for r in of_type(run, token)]
    return out


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_every_security_group_rule_says_what_it_admits(kind: str, example: str, site: str) -> None:
    run = run_of(kind, example, site)
    rules = _rules(run)
    assert rules  # the EFA pools' rules at least
    for urn, rule in rules:
        assert DESCRIPTION.fullmatch(rule.get("description") or ""), (urn, rule)


def test_the_s3_interface_endpoint_admits_https_from_the_peer_only() -> None:
    """The DR site of aws-two-region takes its primary's dual writes through the endpoint."""
    primary = load_plan(ROOT / "examples" / "aws-two-region.yaml").sites["use1"]
    run = run_of("site", "aws-two-region", "usw2")
    (group,) = [g for g in of_type(run, SECURITY_GROUP) if g.name.endswith("-s3-endpoint-sg")]
    (rule,) = group.inputs["ingress"]
    assert (rule["protocol"], rule["fromPort"], rule["toPort"]) == ("tcp", 443, 443)
    assert rule["cidrBlocks"] == [primary.cidr], rule
    assert rule["description"].startswith("HTTPS from peer site networks"), rule
    assert not group.inputs.get("egress"), group.urn  # the endpoint only answers


@pytest.mark.parametrize(("kind", "example", "site"), every_run())
def test_efa_rules_admit_the_pools_own_group_only(kind: str, example: str, site: str) -> None:
    run = run_of(kind, example, site)
    groups = [g for g in of_type(run, SECURITY_GROUP) if g.name.endswith("-efa-sg")]
    assert groups
    for g in groups:
        for direction in ("ingress", "egress"):
            (rule,) = g.inputs[direction]
            assert rule["self"] is True and not rule.get("cidrBlocks"), g.urn
            assert "GPU nodes of this pool" in rule["description"], g.urn
