"""The pack's contract: what policies/__main__.py serves and the CLI shows."""

from __future__ import annotations

import importlib
import re

import pytest
from pulumi_policy import EnforcementLevel, Policy, Severity

from gpudr.contract import logs as contract_logs
from policies.common import exemption
from policies.pack import PACK_NAME, POLICIES
from tests.conftest import ROOT

KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
REASON = "static site, rebuilt from git (SEC-1)"
TOKEN = "aws:s3/bucket:Bucket"
HELPERS = {"__init__.py", "__main__.py", "common.py", "grants.py", "logs.py", "pack.py"}
# Advisory where a violation costs money or RTO, or cannot be avoided on a first deployment.
ADVISORY = {
    "gpu-standby-sizing",
    "weights-immutability-locked",
    "storage-network-restricted",
    "kubernetes-cluster-hardened",
    "network-flow-logged",
}


def test_pack_name() -> None:
    assert PACK_NAME == "gpudr"


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.name)
def test_each_policy_says_what_to_do(policy: Policy) -> None:
    assert KEBAB.match(policy.name), policy.name
    assert policy.description and policy.remediation_steps
    assert isinstance(policy.severity, Severity)
    expected = EnforcementLevel.ADVISORY if policy.name in ADVISORY else EnforcementLevel.MANDATORY
    assert policy.enforcement_level is expected
    if policy.config_schema is not None:
        for key, spec in policy.config_schema.properties.items():
            assert "default" in spec and "description" in spec, (policy.name, key)


def test_one_policy_per_module_all_in_the_pack() -> None:
    names = [p.name for p in POLICIES]
    assert len(set(names)) == len(names)
    modules = sorted(p.name for p in (ROOT / "policies").glob("*.py") if p.name not in HELPERS)
    assert len(modules) == len(POLICIES), modules


def test_the_logging_policies_are_registered_at_their_levels() -> None:
    """Issue 15: data access and control-plane logs are mandatory; flow logs advisory (billed
    by volume, and a network works without them)."""
    levels = {p.name: p.enforcement_level for p in POLICIES}
    assert levels["data-access-logged"] is EnforcementLevel.MANDATORY
    assert levels["cluster-control-plane-logged"] is EnforcementLevel.MANDATORY
    assert levels["network-flow-logged"] is EnforcementLevel.ADVISORY


def test_no_policy_reads_the_planners_answer() -> None:
    for path in (ROOT / "policies").glob("*.py"):
        text = path.read_text()
        assert '"required-mbps"' not in text and "required_mbps" not in text, path


def test_every_policy_takes_exemptions_from_the_pack_config() -> None:
    for policy in POLICIES:
        assert policy.config_schema is not None, policy.name
        assert "exemptions" in policy.config_schema.properties, policy.name


def _entry(resource: str, stack: str | None = "test", reason: str = REASON) -> dict[str, str]:
    entry = {"resource": resource, "reason": reason}
    return {**entry, "stack": stack} if stack is not None else entry


@pytest.mark.parametrize(
    ("entry", "exempt"),
    [
        pytest.param(_entry("logs"), True, id="name-in-a-stack"),
        pytest.param(_entry("log*"), True, id="name-glob-in-a-stack"),
        pytest.param(_entry("logs", stack=None), False, id="name-in-every-stack"),
        pytest.param(_entry("logs", stack="*"), False, id="name-in-any-stack"),
        pytest.param(_entry("*"), False, id="wildcard-only"),
        pytest.param(_entry("*o*"), False, id="one-literal-character"),
        pytest.param(_entry("*gpudr*"), False, id="name-glob-does-not-reach-the-urn"),
        pytest.param(_entry(f"urn:pulumi:test::gpudr::{TOKEN}::logs", None), True, id="urn"),
        pytest.param(_entry(f"urn:pulumi:test::gpudr::{TOKEN}::l*", None), True, id="urn-name"),
        pytest.param(_entry("urn:*", None), False, id="urn-wildcard"),
        pytest.param(_entry("urn:pulumi:*::gpudr::x::logs", None), False, id="urn-any-stack"),
        pytest.param(_entry("logs", stack="gpudr/tes*"), True, id="project-stack"),
        pytest.param(_entry("logs", stack="other/test"), False, id="other-project"),
        pytest.param(_entry("logs", reason="because"), False, id="no-real-reason"),
    ],
)
def test_exemptions_match_what_they_name(entry: dict[str, str], exempt: bool) -> None:
    urn = f"urn:pulumi:test::gpudr::{TOKEN}::logs"
    assert (exemption({"exemptions": [entry]}, urn) is not None) is exempt


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("policies.cluster_control_plane_logged", "EKS_LOG_TYPES"),
        ("policies.cluster_control_plane_logged", "GKE_CONTROL_PLANE_COMPONENTS"),
        ("policies.cluster_control_plane_logged", "AKS_AUDIT_CATEGORIES"),
        ("policies.cluster_control_plane_logged", "AKS_MONITORING_ADDON"),
        ("policies.cluster_control_plane_logged", "AKS_MONITORING_WORKSPACE_KEY"),
        ("policies.data_access_logged", "GCS_AUDIT_SERVICE"),
        ("policies.data_access_logged", "GCS_DATA_ACCESS_TYPES"),
        ("policies.data_access_logged", "BLOB_LOG_CATEGORIES"),
    ],
)
def test_the_log_facts_are_the_contracts(module: str, name: str) -> None:
    """The log types and categories are written once, in gpudr/contract/logs.py, for the
    components that set them and the policies that check them."""
    assert getattr(importlib.import_module(module), name) is getattr(contract_logs, name)


@pytest.mark.parametrize(
    "copy",
    ["EKS_LOGS", "GKE_COMPONENTS", "AKS_AUDIT", "OMS_AGENT", "OMS_WORKSPACE", "BLOB_CATEGORIES",
     "GCS_LOG_TYPES"],
)  # fmt: skip
def test_no_policy_keeps_its_own_copy_of_a_log_fact(copy: str) -> None:
    for path in (ROOT / "policies").glob("*.py"):
        assert not re.search(rf"^{copy}\s*=", path.read_text(), re.M), (path, copy)
