"""immutable-weights: S3 Object Lock, GCS Bucket Lock, Azure version-level immutability."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.immutable_weights import immutable_weights
from tests.policies.builders import CHECKPOINTS, WEIGHTS, azure, gcs, s3
from tests.policies.harness import Res, check, run_stack

Mutation = Callable[[dict[str, Res]], Any]


def retention(r: dict[str, Res]) -> dict[str, Any]:
    return r["lock"].inputs["rule"]["defaultRetention"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mutate", "config", "expected"),
    [
        pytest.param(lambda r: None, None, None, id="compliance-365-days"),
        pytest.param(
            lambda r: (retention(r).pop("days"), retention(r).update(years=1.0)),
            None,
            None,
            id="compliance-1-year",
        ),
        pytest.param(lambda r: retention(r).update(days=29.0), None, "for 29.0 days", id="29-days"),
        pytest.param(
            lambda r: retention(r).update(days=29.0),
            {"min_retention_days": 14},
            None,
            id="29-days-with-14-day-minimum",
        ),
        pytest.param(
            lambda r: retention(r).update(mode="GOVERNANCE"),
            None,
            "mode 'GOVERNANCE'",
            id="governance",
        ),
        pytest.param(
            lambda r: retention(r).update(mode="GOVERNANCE"),
            {"allowed_modes": ["COMPLIANCE", "GOVERNANCE"]},
            None,
            id="governance-allowed-by-config",
        ),
        pytest.param(
            lambda r: r["bucket"].inputs.update(objectLockEnabled=False),
            None,
            "object_lock_enabled=True",
            id="bucket-without-object-lock",
        ),
        pytest.param(lambda r: r.pop("lock"), None, "no BucketObjectLockConfiguration", id="none"),
        pytest.param(
            lambda r: r["versioning"].inputs.update(
                versioningConfiguration={"status": "Suspended"}
            ),
            None,
            "versioning is not Enabled",
            id="versioning-suspended",
        ),
        pytest.param(lambda r: r.pop("versioning"), None, "versioning", id="no-versioning"),
    ],
)
def test_s3(mutate: Mutation, config: dict[str, Any] | None, expected: str | None) -> None:
    r = s3("weights", WEIGHTS)
    mutate(r)
    check(run_stack(immutable_weights, list(r.values()), config), r["bucket"], expected)


def policy(r: dict[str, Res]) -> dict[str, Any]:
    return r["bucket"].inputs["retentionPolicy"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="locked-365-days"),
        pytest.param(lambda r: policy(r).update(retentionPeriod=2592000.0), None, id="30d-number"),
        pytest.param(
            lambda r: policy(r).update(retentionPeriod="86400"), "retention of 1 days", id="1-day"
        ),
        pytest.param(lambda r: policy(r).update(isLocked=False), "not locked", id="unlocked"),
        pytest.param(
            lambda r: r["bucket"].inputs.pop("retentionPolicy"), "no retention policy", id="none"
        ),
        pytest.param(
            lambda r: r["bucket"].inputs.update(versioning={"enabled": True}),
            "versioning is on",
            id="versioning-with-retention",
        ),
    ],
)
def test_gcs(mutate: Mutation, expected: str | None) -> None:
    r = gcs("weights", WEIGHTS)
    mutate(r)
    check(run_stack(immutable_weights, list(r.values())), r["bucket"], expected)


def immutability(r: dict[str, Res]) -> dict[str, Any]:
    return r["account"].inputs["immutableStorageWithVersioning"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="locked-365-days"),
        pytest.param(
            lambda r: immutability(r)["immutabilityPolicy"].update(state="Unlocked"),
            None,
            id="unlocked-is-weights-immutability-locked's-advisory",
        ),
        pytest.param(
            lambda r: immutability(r)["immutabilityPolicy"].update(state="Disabled"),
            "Disabled",
            id="disabled",
        ),
        pytest.param(
            lambda r: immutability(r)["immutabilityPolicy"].update(
                immutabilityPeriodSinceCreationInDays=7.0
            ),
            "period is 7.0 days",
            id="7-days",
        ),
        pytest.param(lambda r: immutability(r).update(enabled=False), "not enabled", id="off"),
        pytest.param(
            lambda r: r["account"].inputs.pop("immutableStorageWithVersioning"),
            "not enabled",
            id="none",
        ),
        pytest.param(
            lambda r: r["service"].inputs.update(isVersioningEnabled=False),
            "enables versioning",
            id="versioning-off",
        ),
        pytest.param(
            lambda r: r["service"].property_dependencies.clear(), None, id="service-by-name"
        ),
    ],
)
def test_azure(mutate: Mutation, expected: str | None) -> None:
    r = azure("weights", WEIGHTS)
    mutate(r)
    check(run_stack(immutable_weights, list(r.values())), r["account"], expected)


def test_other_classes_are_not_weights() -> None:
    r = s3("checkpoints", CHECKPOINTS)
    assert "lock" not in r
    assert run_stack(immutable_weights, list(r.values())) == []


# --- a trial's liftable lock: declared by the stack, approved by the pack config --------------

TRIAL = {"approved_trials": [{"stacks": ["tes*"], "reason": "first deployment in the sandbox"}]}


def declare(r: dict[str, Res], value: str = "governance") -> None:
    """The bucket declares its lock (gpudr:lock), as components set it from the plan."""
    if "labels" in r["bucket"].inputs:
        r["bucket"].inputs["labels"]["gpudr-lock"] = value
    else:
        r["bucket"].inputs["tags"]["gpudr:lock"] = value


def governance(r: dict[str, Res]) -> None:
    retention(r).update(mode="GOVERNANCE")


@pytest.mark.parametrize(
    ("mutate", "config", "expected"),
    [
        pytest.param(
            lambda r: (governance(r), declare(r)), TRIAL, None, id="declared-and-approved"
        ),
        pytest.param(
            lambda r: (governance(r), declare(r)),
            None,
            "approved_trials names this stack",
            id="declared-not-approved",
        ),
        # A production stack flipping its own mode: its tag does not declare a trial.
        pytest.param(governance, TRIAL, "mode 'GOVERNANCE'", id="approved-not-declared"),
        pytest.param(
            lambda r: (governance(r), declare(r, "compliance")),
            TRIAL,
            "mode 'GOVERNANCE'",
            id="declared-compliance",
        ),
        # A hostile tag on a stack the config does not name.
        pytest.param(
            lambda r: (governance(r), declare(r)),
            {"approved_trials": [{"stacks": ["prod-*"], "reason": "first deployment"}]},
            "mode 'GOVERNANCE'",
            id="other-stack-approved",
        ),
        pytest.param(
            lambda r: (governance(r), declare(r)),
            {"approved_trials": [{"stacks": ["*"], "reason": "every stack is a trial"}]},
            "mode 'GOVERNANCE'",
            id="glob-approving-every-stack",
        ),
        pytest.param(
            lambda r: (governance(r), declare(r)),
            {"approved_trials": [{"stacks": ["test"], "reason": "short"}]},
            "mode 'GOVERNANCE'",
            id="approval-without-reason",
        ),
        pytest.param(lambda r: declare(r), TRIAL, None, id="trial-in-compliance-mode"),
        # A trial still needs a lock: the approval lifts only the mode.
        pytest.param(
            lambda r: (declare(r), r.pop("lock")),
            TRIAL,
            "no BucketObjectLockConfiguration",
            id="trial-without-lock",
        ),
        pytest.param(
            lambda r: (governance(r), declare(r), retention(r).update(days=29.0)),
            TRIAL,
            "for 29.0 days",
            id="trial-too-short",
        ),
    ],
)
def test_s3_trial(mutate: Mutation, config: dict[str, Any] | None, expected: str | None) -> None:
    r = s3("weights", WEIGHTS)
    mutate(r)
    check(run_stack(immutable_weights, list(r.values()), config), r["bucket"], expected)


@pytest.mark.parametrize(
    ("mutate", "config", "expected"),
    [
        pytest.param(
            lambda r: (policy(r).update(isLocked=False), declare(r)),
            TRIAL,
            None,
            id="unlocked-declared-and-approved",
        ),
        pytest.param(
            lambda r: (policy(r).update(isLocked=False), declare(r)),
            None,
            "not locked",
            id="unlocked-declared-not-approved",
        ),
        pytest.param(
            lambda r: policy(r).update(isLocked=False), TRIAL, "not locked", id="not-declared"
        ),
        pytest.param(
            lambda r: (r["bucket"].inputs.pop("retentionPolicy"), declare(r)),
            TRIAL,
            "no retention policy",
            id="trial-without-retention",
        ),
    ],
)
def test_gcs_trial(mutate: Mutation, config: dict[str, Any] | None, expected: str | None) -> None:
    r = gcs("weights", WEIGHTS)
    mutate(r)
    check(run_stack(immutable_weights, list(r.values()), config), r["bucket"], expected)


def declare_account(r: dict[str, Res]) -> None:
    r["account"].inputs["tags"]["gpudr:lock"] = "governance"


@pytest.mark.parametrize(
    ("mutate", "config", "expected"),
    [
        pytest.param(declare_account, TRIAL, None, id="declared-and-approved"),
        pytest.param(declare_account, None, "declares a trial", id="declared-not-approved"),
        pytest.param(lambda r: None, None, None, id="production-unlocked-until-lock-weights"),
    ],
)
def test_azure_trial(mutate: Mutation, config: dict[str, Any] | None, expected: str | None) -> None:
    """An Azure trial is never locked (the program refuses gpudr:lock_weights there): like a
    GOVERNANCE lock on S3, only an approved trial passes."""
    r = azure("weights", WEIGHTS)
    mutate(r)
    check(run_stack(immutable_weights, list(r.values()), config), r["account"], expected)
