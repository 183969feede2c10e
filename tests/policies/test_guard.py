"""Unsafe hand-written resources on every cloud, untagged and of other SDK classes: each is
refused by every policy whose concern it breaks (tests/policies/guard_cases.py)."""

from __future__ import annotations

import pytest

from tests.policies.guard_cases import UNSAFE, Unsafe
from tests.policies.harness import evaluate_pack, records


def refusing(case: Unsafe) -> set[str]:
    """The mandatory policies that report a violation on the case's unsafe resource."""
    found = evaluate_pack(records(case.resources))
    return {p for p, level, urn, _ in found if level == "mandatory" and urn == case.target.urn}


@pytest.mark.parametrize("case", UNSAFE, ids=[c.id for c in UNSAFE])
def test_unsafe_resource_is_refused_by_the_right_policies(case: Unsafe) -> None:
    missing = case.policies - refusing(case)
    assert not missing, f"{case.target.urn}: {case.what}: not refused by {sorted(missing)}"


def test_the_cases_cover_every_cloud() -> None:
    assert {c.cloud for c in UNSAFE} == {"aws", "gcp", "azure"}
    assert len(UNSAFE) >= 14
