"""immutable-weights: published model weights cannot be deleted or overwritten, by anyone, for
at least `min_retention_days`.

Weights have RPO 0: a lost or tampered version invalidates every run trained from it. Each cloud's
WORM feature, as gpudr deploys it:

- S3 Object Lock in compliance mode (nobody, root included, can shorten it) with a default
  retention, on a bucket created with object lock enabled, versioned.
- GCS: a retention policy locked with Bucket Lock. Cloud Storage refuses object versioning
  together with a retention policy, so the locked retention stands in for versioning there.
- Azure: version-level immutability on the storage account (every blob version is immutable
  for the period) with blob versioning on. Azure creates the policy unlocked; locking it is a
  second, irreversible step, reported by the advisory policy weights-immutability-locked.

A trial (the plan's `data.weights.lock: governance`) holds weights for the same retention under
a lock its owner can lift, so that a first deployment leaves nothing undeletable for a year: S3
Object Lock in GOVERNANCE mode, an unlocked GCS retention policy. It is accepted only when both
say so: the bucket declares the trial (`gpudr:lock` governance) and the pack config's
`approved_trials` names its stack. The config is the organisation's and a stack cannot change
it, so a production stack cannot leave compliance mode by editing its own tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpudr.core.enums import WeightsLock

from .common import (
    AZ_BLOB_SERVICE,
    AZ_STORAGE_ACCOUNT,
    GCS_BUCKET,
    S3_BUCKET,
    S3_OBJECT_LOCK,
    S3_VERSIONING,
    Stack,
    UnknownGuard,
    approval,
    config_number,
    config_schema,
    describe,
    exempting,
    get,
    gpudr_tag,
    is_true,
    items,
    kind,
    names_enough,
    number,
    policy_config,
    same,
    stack_of,
    tag_is,
)

SCHEMA = config_schema(
    min_retention_days={
        "type": "number",
        "minimum": 1,
        "default": 30,
        "description": "Each weights version stays immutable at least this many days.",
    },
    allowed_modes={
        "type": "array",
        "items": {"type": "string", "enum": ["COMPLIANCE", "GOVERNANCE"]},
        "default": ["COMPLIANCE"],
        "description": (
            "S3 Object Lock modes accepted. GOVERNANCE can be bypassed by anyone with "
            "s3:BypassGovernanceRetention."
        ),
    },
    approved_trials={
        "type": "array",
        "default": [],
        "description": (
            "Stacks that may hold weights under a trial's liftable lock (the plan's "
            "data.weights.lock: governance: S3 Object Lock GOVERNANCE, an unlocked GCS "
            "retention policy), when their buckets declare it (tag gpudr:lock governance): "
            "each {stacks: [stack name globs, each with at least 3 literal characters], "
            "reason}. Never list a production stack."
        ),
        "items": {
            "type": "object",
            "required": ["stacks", "reason"],
            "additionalProperties": False,
            "properties": {
                "stacks": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "reason": {"type": "string", "minLength": 10},
            },
        },
    },
)
TRIAL_RULE = (
    "a trial's lock is accepted only when the bucket declares it (tag gpudr:lock governance, "
    "from the plan's data.weights.lock: governance) and the pack config's approved_trials "
    "names this stack"
)


def is_weights(bucket: PolicyResource) -> bool:
    return gpudr_tag(bucket.resource_type, bucket.props, "data-class") == "weights"


def approved_trial(bucket: PolicyResource, config: Mapping[str, Any]) -> str | None:
    """Why this weights copy may hold a trial's liftable lock, or None: it declares the trial
    and an approved_trials entry names its stack (with a reason)."""
    if not tag_is(bucket.resource_type, bucket.props, "lock", WeightsLock.GOVERNANCE):
        return None
    stack = stack_of(bucket.urn)
    return approval(
        config,
        "approved_trials",
        lambda e: any(names_enough(g) and fnmatchcase(stack, g) for g in items(e.get("stacks"))),
    )


def _s3_retention_days(retention: Any) -> float | None:
    days = number(get(retention, "days"))
    years = number(get(retention, "years"))
    if days is not None:
        return days
    return None if years is None else years * 365


def _check_s3(
    stack: Stack, bucket: PolicyResource, config: Mapping[str, Any], report: ReportViolation
) -> None:
    min_days = config_number(config, "min_retention_days")
    modes = [str(m).upper() for m in items(config.get("allowed_modes"))]
    if approved_trial(bucket, config) is not None and "GOVERNANCE" not in modes:
        modes.append("GOVERNANCE")
    problems = []
    if not is_true(bucket.props.get("objectLockEnabled")):
        problems.append(
            "the bucket is not created with object_lock_enabled=True (it cannot be added "
            "later without AWS support)"
        )
    locks = stack.linked(bucket, S3_OBJECT_LOCK, "bucket", ("bucket", "id"))
    retentions = [get(lock.props, "rule", "defaultRetention") for lock in locks]
    good = [
        r
        for r in retentions
        if str(get(r, "mode")).upper() in modes and (_s3_retention_days(r) or 0) >= min_days
    ]
    if not good:
        if not locks:
            problems.append("no BucketObjectLockConfiguration refers to it")
        else:
            r = retentions[0]
            problems.append(
                f"its object lock {locks[0].name} retains mode {get(r, 'mode')!r} for "
                f"{_s3_retention_days(r)} days"
                + (f" ({TRIAL_RULE})" if same(get(r, "mode"), "GOVERNANCE") else "")
            )
    versioning = stack.linked(bucket, S3_VERSIONING, "bucket", ("bucket", "id"))
    if not any(
        same(get(v.props, "versioningConfiguration", "status"), "Enabled") for v in versioning
    ):
        problems.append("versioning is not Enabled by a BucketVersioning (object lock needs it)")
    if problems:
        report(
            f"{describe(bucket)} holds model weights that can be deleted or overwritten: "
            f"{'; '.join(problems)}. Required: object_lock_enabled=True on the bucket, "
            "aws.s3.BucketVersioning status Enabled, and aws.s3.BucketObjectLockConfiguration "
            f"with rule.default_retention mode {' or '.join(modes)} for at least "
            f"{min_days:g} days.",
            bucket.urn,
        )


def _check_gcs(bucket: PolicyResource, config: Mapping[str, Any], report: ReportViolation) -> None:
    min_days = config_number(config, "min_retention_days")
    policy = bucket.props.get("retentionPolicy")
    period = number(get(policy, "retentionPeriod"))
    problems = []
    if period is None or period < min_days * 86400:
        have = "no retention policy" if period is None else f"retention of {period / 86400:g} days"
        problems.append(f"it has {have}")
    elif not is_true(get(policy, "isLocked")) and approved_trial(bucket, config) is None:
        problems.append(
            "its retention policy is not locked (anyone with storage.buckets.update can remove "
            f"it; {TRIAL_RULE})"
        )
    if is_true(get(bucket.props, "versioning", "enabled")):
        problems.append("versioning is on, which Cloud Storage refuses with a retention policy")
    if problems:
        report(
            f"{describe(bucket)} holds model weights that can be deleted or overwritten: "
            f"{'; '.join(problems)}. Set retention_policy={{retention_period: "
            f'"{int(min_days * 86400)}" (or more), is_locked: True}} and versioning '
            "{enabled: False}: the locked retention stands in for versioning.",
            bucket.urn,
        )


def _check_azure(
    stack: Stack, account: PolicyResource, config: Mapping[str, Any], report: ReportViolation
) -> None:
    min_days = config_number(config, "min_retention_days")
    immutable = account.props.get("immutableStorageWithVersioning")
    days = number(get(immutable, "immutabilityPolicy", "immutabilityPeriodSinceCreationInDays"))
    state = get(immutable, "immutabilityPolicy", "state")
    problems = []
    if not is_true(get(immutable, "enabled")):
        problems.append("immutable_storage_with_versioning is not enabled")
    elif days is None or days < min_days:
        problems.append(f"its immutability period is {days} days")
    elif same(state, "Disabled"):
        problems.append("its immutability policy is Disabled")
    services = stack.linked(account, AZ_BLOB_SERVICE, "accountName", ("accountName", "name"))
    if not any(is_true(s.props.get("isVersioningEnabled")) for s in services):
        problems.append("no BlobServiceProperties of the account enables versioning")
    # A declared trial can never be locked (the program refuses gpudr:lock_weights there), so
    # like a GOVERNANCE lock on S3 it needs the organisation's approval.
    declares_trial = tag_is(account.resource_type, account.props, "lock", WeightsLock.GOVERNANCE)
    if declares_trial and approved_trial(account, config) is None:
        problems.append(f"it declares a trial that will never be locked, but {TRIAL_RULE}")
    if problems:
        report(
            f"{describe(account)} holds model weights that can be deleted or overwritten: "
            f"{'; '.join(problems)}. Set immutable_storage_with_versioning={{enabled: True, "
            "immutability_policy: {immutability_period_since_creation_in_days: "
            f'{int(min_days)} (or more), state: "Unlocked", then "Locked"}}}} on the account '
            "and storage.BlobServiceProperties(is_versioning_enabled=True).",
            account.urn,
        )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    config = policy_config(SCHEMA, args)
    report = exempting(report, config)
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.data_buckets():
        with guard.check():
            if not is_weights(bucket):
                continue
            if kind(bucket) == S3_BUCKET:
                _check_s3(stack, bucket, config, report)
            elif kind(bucket) == GCS_BUCKET:
                _check_gcs(bucket, config, report)
            elif kind(bucket) == AZ_STORAGE_ACCOUNT:
                _check_azure(stack, bucket, config, report)
    guard.raise_first()


immutable_weights = StackValidationPolicy(
    name="immutable-weights",
    description=(
        "Model weights buckets (gpudr:data-class weights) are write-once for at least "
        "min_retention_days: S3 Object Lock in compliance mode on a versioned bucket, a locked "
        "GCS retention policy, or Azure version-level immutability with versioning; governance "
        "mode or an unlocked GCS policy only on a trial the pack config approves."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=SCHEMA,
    remediation_steps=(
        "AWS: create the bucket with object_lock_enabled=True, version it, and declare "
        'aws.s3.BucketObjectLockConfiguration(rule={default_retention: {mode: "COMPLIANCE", '
        "days: N}}). GCP: retention_policy={retention_period: str(N * 86400), is_locked: True} "
        "and versioning off. Azure: immutable_storage_with_versioning={enabled: True, "
        "immutability_policy: {immutability_period_since_creation_in_days: N}} and blob "
        "versioning; then lock it (`pulumi config set gpudr:lock_weights true`). gpudr sets N "
        "from the plan's weights retention. A trial whose buckets must stay deletable: "
        "data.weights.lock: governance in the plan, and an approved_trials entry naming the "
        "stack in this policy's config."
    ),
    tags=["data-protection", "immutability"],
)
