"""no-public-access: no DR data bucket can be made public.

A public bucket leaks checkpoints and weights, and lets anyone delete or overwrite what DR
depends on. Each cloud has a switch that overrides any later ACL or policy mistake: S3's
public access block (all four flags), GCS public access prevention with uniform bucket-level
access (no object ACLs), Azure's account-wide `allow_blob_public_access=False` (and private
containers, which count again if the account setting is ever flipped).
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .common import (
    AZ_BLOB_CONTAINER,
    AZ_STORAGE_ACCOUNT,
    GCS_BUCKET,
    S3_ACCOUNT_PUBLIC_ACCESS_BLOCK,
    S3_BUCKET,
    S3_PUBLIC_ACCESS_BLOCK,
    Stack,
    UnknownGuard,
    describe,
    is_true,
    same,
)

FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
SNAKE = {
    "blockPublicAcls": "block_public_acls",
    "blockPublicPolicy": "block_public_policy",
    "ignorePublicAcls": "ignore_public_acls",
    "restrictPublicBuckets": "restrict_public_buckets",
}


def _all_blocked(block: PolicyResource) -> bool:
    return all(is_true(block.props.get(f)) for f in FLAGS)


def _check_s3(stack: Stack, bucket: PolicyResource, report: ReportViolation) -> None:
    # An account-wide block with all four flags covers every bucket of the account.
    if any(_all_blocked(b) for b in stack.of_type(S3_ACCOUNT_PUBLIC_ACCESS_BLOCK)):
        return
    blocks = stack.linked(bucket, S3_PUBLIC_ACCESS_BLOCK, "bucket", ("bucket", "id"))
    if any(_all_blocked(b) for b in blocks):
        return
    if blocks:
        off = [SNAKE[f] for f in FLAGS if not is_true(blocks[0].props.get(f))]
        found = f"its public access block {blocks[0].name} leaves {', '.join(off)} off"
    else:
        found = "no BucketPublicAccessBlock refers to it"
    report(
        f"{describe(bucket)} holds gpudr data and can be made public: {found}. Declare "
        "aws.s3.BucketPublicAccessBlock(bucket=<bucket>.id, block_public_acls=True, "
        "block_public_policy=True, ignore_public_acls=True, restrict_public_buckets=True).",
        bucket.urn,
    )


def _check_gcs(bucket: PolicyResource, report: ReportViolation) -> None:
    problems = []
    prevention = bucket.props.get("publicAccessPrevention")
    if not same(prevention, "enforced"):
        problems.append(f'public_access_prevention is {prevention!r}: set "enforced"')
    if not is_true(bucket.props.get("uniformBucketLevelAccess")):
        problems.append("uniform_bucket_level_access is not True: set it (no object ACLs)")
    if problems:
        report(
            f"{describe(bucket)} holds gpudr data and can be made public: {'; '.join(problems)}.",
            bucket.urn,
        )


def _check_azure_account(account: PolicyResource, report: ReportViolation) -> None:
    # Explicitly False: older API versions defaulted to allowing public blob access.
    if account.props.get("allowBlobPublicAccess") is not False:
        report(
            f"{describe(account)} holds gpudr data and allows public blob access "
            f"(allow_blob_public_access {account.props.get('allowBlobPublicAccess')!r}): set "
            "allow_blob_public_access=False.",
            account.urn,
        )


def _check_container(container: PolicyResource, report: ReportViolation) -> None:
    # Unset means "None": private is the API's default for containers.
    access = container.props.get("publicAccess")
    if access is not None and not same(access, "None"):
        report(
            f"{describe(container)} is public (public_access {access!r}): set "
            'public_access="None" (storage.PublicAccess.NONE).',
            container.urn,
        )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.data_buckets():
        with guard.check():
            if bucket.resource_type == S3_BUCKET:
                _check_s3(stack, bucket, report)
            elif bucket.resource_type == GCS_BUCKET:
                _check_gcs(bucket, report)
            elif bucket.resource_type == AZ_STORAGE_ACCOUNT:
                _check_azure_account(bucket, report)
    # Containers carry no tags: every container in the stack must be private.
    for container in stack.of_type(AZ_BLOB_CONTAINER):
        with guard.check():
            _check_container(container, report)
    guard.raise_first()


no_public_access = StackValidationPolicy(
    name="no-public-access",
    description=(
        "No gpudr data can be made public: S3 data buckets have a public access block with all "
        "four flags; GCS data buckets enforce public access prevention and uniform bucket-level "
        "access; Azure data accounts disallow public blob access and containers are private."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps=(
        "AWS: aws.s3.BucketPublicAccessBlock for each data bucket with block_public_acls, "
        "block_public_policy, ignore_public_acls and restrict_public_buckets all True (or an "
        'account-wide aws.s3.AccountPublicAccessBlock). GCP: public_access_prevention="enforced" '
        "and uniform_bucket_level_access=True. Azure: allow_blob_public_access=False on the "
        'account and public_access="None" on every BlobContainer.'
    ),
    tags=["data-protection", "access"],
)
