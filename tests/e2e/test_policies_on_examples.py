"""Every committed example through the real program (offline, under mocks), then through every
policy of the pack, with the resources as registered: inputs as props, protect, parent,
dependencies and property dependencies."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from gpudr.app.offline.mocks import GpudrMocks
from gpudr.app.offline.plan import run_design
from gpudr.app.offline.run import run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from policies.common import (
    DATA_BUCKET_TYPES,
    data_class,
    gpudr_tag,
    is_data_bucket,
    need_mbps,
    number,
)
from tests.conftest import PACK_CONFIG, ROOT
from tests.policies.guard_cases import TAMPERS, changes, tampered
from tests.policies.harness import (
    evaluate_pack,
    policy_resources,
)

EXAMPLES = [
    "aws-two-region",
    "gcp-two-region",
    "azure-two-region",
    "aws-to-gcp",
    "aws-to-gcp-dedicated",  # dual writes over Cross-Cloud Interconnect
    "gcp-to-aws",  # DataSync pulls into S3
    "azure-to-gcp",  # Storage Transfer from Azure Blob, Azure VPN gateway to HA VPN
    "aws-to-azure",  # AzCopy jobs copying from S3 into Blob
]


@cache
def stacks(example: str) -> list[dict[str, Any]]:
    return run_design(design(load_plan(ROOT / "examples" / f"{example}.yaml")))


def evaluate(
    resources: list[dict[str, Any]], config: dict[str, dict[str, Any]] | None = None
) -> list[tuple[str, str, str, str]]:
    """(policy, level, urn, message) of every violation the pack reports on one stack, under
    the examples' pack config unless another is given."""
    return evaluate_pack(resources, PACK_CONFIG if config is None else config)


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_no_mandatory_violation(example: str) -> None:
    for stack in stacks(example):
        violations = evaluate(stack["resources"])
        mandatory = [v for v in violations if v[1] == "mandatory"]
        assert mandatory == [], (stack["name"], mandatory)


@pytest.mark.slow
def test_azure_weights_are_reported_unlocked_advisory_until_locked() -> None:
    """Azure creates account immutability unlocked; `gpudr:lock_weights` locks it later."""
    for stack in stacks("azure-two-region"):
        advisory = [v for v in evaluate(stack["resources"]) if v[1] == "advisory"]
        # Every account also answers every network (advisory: see storage_network_restricted).
        network = [v for v in advisory if v[0] == "storage-network-restricted"]
        assert len(network) == 3, advisory
        # The AKS cluster and pools lack creation-time hardening (advisory: docs/security.md).
        cluster = [v for v in advisory if v[0] == "kubernetes-cluster-hardened"]
        assert cluster and all("containerservice" in v[2] for v in cluster), advisory
        locked = [v for v in advisory if v not in network and v not in cluster]
        assert [v[0] for v in locked] == ["weights-immutability-locked"], advisory
        assert "weights-account" in locked[0][2]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "site"),
    [("aws-two-region", "usw2"), ("gcp-two-region", "use4"), ("azure-two-region", "wus")],
)
def test_dr_pools_in_failover_mode_pass(example: str, site: str) -> None:
    """Failover scales every DR pool to full size: the pilot light floor rule allows it."""
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    s = plan.sites[site]
    config = {**stack_config_values(design(plan), s), "gpudr:mode": "failover"}
    run = run_stack(stack_name(plan, s), config, GpudrMocks(default_region=s.region))
    resources = [r.record() for r in run.registrations]
    violations = [v for v in evaluate(resources) if v[0] == "gpu-standby-sizing"]
    assert violations == []


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_needs_recomputed_from_tags_equal_the_planners(example: str) -> None:
    """The pack never reads `gpudr:required-mbps`; here, once, its recomputation is compared
    with that answer, so that the two formulas cannot drift apart."""
    checked = 0
    for stack in stacks(example):
        for resource in policy_resources(stack["resources"]):
            if resource.resource_type not in DATA_BUCKET_TYPES or not is_data_bucket(resource):
                continue
            facts = data_class(resource)
            assert not isinstance(facts, str), facts
            planner = number(gpudr_tag(resource.resource_type, resource.props, "required-mbps"))
            assert planner is not None
            assert need_mbps(facts) == pytest.approx(planner, abs=0.001), resource.urn
            checked += 1
    assert checked >= 3


@pytest.mark.slow
@pytest.mark.parametrize("tamper", list(TAMPERS))
@pytest.mark.parametrize("example", EXAMPLES)
def test_every_tamper_of_every_stack_is_refused(example: str, tamper: str) -> None:
    """Edits that switched the pack off on gpudr's own stacks (tests/policies/guard_cases.py
    TAMPERS), on every stack that holds what the tamper edits."""
    for stack in stacks(example):
        if not changes(stack["resources"], tamper):
            continue  # e.g. no replication of its own to scope
        mandatory = [
            v for v in evaluate(tampered(stack["resources"], tamper)) if v[1] == "mandatory"
        ]
        assert mandatory, f"{stack['name']}: {tamper} passes the pack"


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_retyping_changes_no_verdict(example: str) -> None:
    """A bucket declared as BucketV2, or an account through an API-version module, is judged
    exactly as the class gpudr uses: with and without the examples' quota approval."""

    def verdicts(records: list[dict[str, Any]], config: dict[str, Any]) -> list[tuple[str, str]]:
        return sorted((v[0], v[2].rsplit("::", 1)[-1]) for v in evaluate(records, config))

    for stack in stacks(example):
        for config in (PACK_CONFIG, {}):
            retyped = tampered(stack["resources"], "retyped-only")
            assert verdicts(retyped, config) == verdicts(stack["resources"], config), stack["name"]


@pytest.mark.slow
def test_an_unapproved_quota_is_refused_and_names_the_fix() -> None:
    """Without the organisation's approval the asserted 5 Gbps RTC quota is bounded by the
    vendor's default (1 Gbps): fail closed."""
    for stack in stacks("aws-two-region"):
        found = [v for v in evaluate(stack["resources"], {}) if v[1] == "mandatory"]
        assert {v[0] for v in found} == {"dr-tags-verified"}, found
        assert all("approved_quotas" in v[3] and "1.00 Gbps" in v[3] for v in found), found
