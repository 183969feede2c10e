"""Unsafe hand-written resources on every cloud, untagged and of other SDK classes: each is
refused by every policy whose concern it breaks (tests/policies/guard_cases.py)."""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel, StackValidationPolicy

from policies.pack import POLICIES
from tests.policies.guard_cases import UNSAFE, Unsafe
from tests.policies.harness import records, run_resource_records, run_stack_records


def refusing(case: Unsafe) -> set[str]:
    """The mandatory policies that report a violation on the case's unsafe resource."""
    registered = records(case.resources)
    out = set()
    for policy in POLICIES:
        if policy.enforcement_level is not EnforcementLevel.MANDATORY:
            continue
        if isinstance(policy, StackValidationPolicy):
            found = run_stack_records(policy, registered)
        else:
            found = run_resource_records(policy, registered)
        if any(urn == case.target.urn for _, urn in found):
            out.add(policy.name)
    return out


@pytest.mark.parametrize("case", UNSAFE, ids=[c.id for c in UNSAFE])
def test_unsafe_resource_is_refused_by_the_right_policies(case: Unsafe) -> None:
    missing = case.policies - refusing(case)
    assert not missing, f"{case.target.urn}: {case.what}: not refused by {sorted(missing)}"


def test_the_cases_cover_every_cloud() -> None:
    assert {c.cloud for c in UNSAFE} == {"aws", "gcp", "azure"}
    assert len(UNSAFE) >= 14
