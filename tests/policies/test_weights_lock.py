"""weights-immutability-locked: advisory until the second, locking step."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import EnforcementLevel

from policies.weights_lock import weights_immutability_locked
from tests.policies.builders import CHECKPOINTS, WEIGHTS, azure
from tests.policies.harness import check, run_resource


@pytest.mark.parametrize(
    ("facts", "state", "expected"),
    [
        pytest.param(WEIGHTS, "Locked", None, id="locked"),
        pytest.param(WEIGHTS, "Unlocked", "gpudr:lock_weights true", id="unlocked"),
        pytest.param(WEIGHTS, None, "Unlocked", id="state-unset"),
        pytest.param(CHECKPOINTS, "Unlocked", None, id="not-weights"),
        # A trial is never locked: the advice is to leave it so, and how to reach production.
        pytest.param(
            {**WEIGHTS, "lock": "governance"}, "Unlocked", "on purpose", id="trial-unlocked"
        ),
    ],
)
def test_lock_state(facts: dict[str, str], state: str | None, expected: str | None) -> None:
    account = azure("weights", facts)["account"]
    policy: dict[str, Any] = account.inputs.setdefault(
        "immutableStorageWithVersioning", {"enabled": True, "immutabilityPolicy": {}}
    )["immutabilityPolicy"]
    policy.pop("state", None)
    if state:
        policy["state"] = state
    check(run_resource(weights_immutability_locked, account), account, expected)


def test_is_advisory() -> None:
    assert weights_immutability_locked.enforcement_level is EnforcementLevel.ADVISORY
