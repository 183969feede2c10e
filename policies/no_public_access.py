"""no-public-access: no bucket or storage account can be made public, gpudr-tagged or not.

A public bucket leaks checkpoints and weights, and lets anyone delete or overwrite what DR
depends on. Each cloud has a switch that overrides any later ACL or policy mistake: S3's
public access block (all four flags), GCS public access prevention with uniform bucket-level
access (no object ACLs), Azure's account-wide `allow_blob_public_access=False` (and private
containers, which count again if the account setting is ever flipped).

A grant to everyone (a public canned ACL or an `AllUsers` grant on S3, `allUsers` in a GCS
bucket's IAM) is refused even behind those switches: it states an intent the switches only
happen to block. Azure shared keys are refused too: an account key, or a SAS signed with it,
reads every blob from anywhere with no identity behind it.
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
    GCS_IAM_BINDING,
    GCS_IAM_MEMBER,
    S3_ACCOUNT_PUBLIC_ACCESS_BLOCK,
    S3_ACL,
    S3_BUCKET,
    S3_PUBLIC_ACCESS_BLOCK,
    Stack,
    UnknownGuard,
    config_schema,
    describe,
    exempting,
    get,
    is_true,
    items,
    kind,
    policy_config,
    same,
)

SCHEMA = config_schema()
FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
SNAKE = {
    "blockPublicAcls": "block_public_acls",
    "blockPublicPolicy": "block_public_policy",
    "ignorePublicAcls": "ignore_public_acls",
    "restrictPublicBuckets": "restrict_public_buckets",
}
PUBLIC_CANNED_ACLS = ("public-read", "public-read-write", "authenticated-read")
PUBLIC_GRANTEES = (
    "http://acs.amazonaws.com/groups/global/AllUsers",
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
)
PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
# Switches Azure defaulted to "allowed" in older API versions: each must be explicitly False.
AZURE_SWITCHES = (
    ("allowBlobPublicAccess", "allow_blob_public_access", "public blob access"),
    ("allowSharedKeyAccess", "allow_shared_key_access", "shared key (and account SAS) access"),
)


def _all_blocked(block: PolicyResource) -> bool:
    return all(is_true(block.props.get(f)) for f in FLAGS)


def _check_s3(stack: Stack, bucket: PolicyResource, report: ReportViolation) -> None:
    # An account-wide block with all four flags covers every bucket of the account: the stack
    # provider's account, so only a block that names no other account counts.
    if any(
        _all_blocked(b) and not b.props.get("accountId")
        for b in stack.of_type(S3_ACCOUNT_PUBLIC_ACCESS_BLOCK)
    ):
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
        f"{describe(bucket)} can be made public: {found}. Declare "
        "aws.s3.BucketPublicAccessBlock(bucket=<bucket>.id, block_public_acls=True, "
        "block_public_policy=True, ignore_public_acls=True, restrict_public_buckets=True).",
        bucket.urn,
    )


def _public_acl(owner: PolicyResource) -> str | None:
    """What makes an ACL public: a public canned `acl` or a grant to everyone."""
    canned = owner.props.get("acl")
    if isinstance(canned, str) and canned.strip().lower() in PUBLIC_CANNED_ACLS:
        return f'the canned ACL "{canned}"'
    for grant in items(get(owner.props, "accessControlPolicy", "grants")):
        uri = get(grant, "grantee", "uri")
        if isinstance(uri, str) and uri in PUBLIC_GRANTEES:
            return f"a {get(grant, 'permission')} grant to {uri.rsplit('/', 1)[-1]}"
    # A bucket's deprecated inline `grants` (type Group, uri, permissions).
    for grant in items(owner.props.get("grants")):
        uri = get(grant, "uri")
        if isinstance(uri, str) and uri in PUBLIC_GRANTEES:
            permissions = ", ".join(map(str, items(get(grant, "permissions"))))
            return f"an inline {permissions} grant to {uri.rsplit('/', 1)[-1]}"
    return None


def _check_s3_acl(stack: Stack, bucket: PolicyResource, report: ReportViolation) -> None:
    for owner in [bucket, *stack.linked(bucket, S3_ACL, "bucket", ("bucket", "id"))]:
        found = _public_acl(owner)
        if found:
            where = "the bucket itself" if owner is bucket else f"its BucketAcl {owner.name}"
            report(
                f"{describe(bucket)} is granted to everyone: {found} on {where}. Remove the "
                'grant (acl="private", or no ACL with object ownership BucketOwnerEnforced).',
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
            f"{describe(bucket)} can be made public: {'; '.join(problems)}.",
            bucket.urn,
        )


def _check_gcs_iam(stack: Stack, bucket: PolicyResource, report: ReportViolation) -> None:
    grants = stack.linked(bucket, GCS_IAM_MEMBER, "bucket", ("name", "id"))
    grants += stack.linked(bucket, GCS_IAM_BINDING, "bucket", ("name", "id"))
    for grant in grants:
        members = [grant.props.get("member"), *items(grant.props.get("members"))]
        public = [m for m in members if m in PUBLIC_MEMBERS]
        if public:
            report(
                f"{describe(bucket)} is granted to everyone: {grant.name} gives "
                f"{grant.props.get('role')} to {', '.join(public)}. Grant named principals only.",
                bucket.urn,
            )


def _check_azure_account(account: PolicyResource, report: ReportViolation) -> None:
    for prop, snake, what in AZURE_SWITCHES:
        if account.props.get(prop) is not False:
            report(
                f"{describe(account)} allows {what} ({snake} {account.props.get(prop)!r}): "
                f"set {snake}=False.",
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
    report = exempting(report, policy_config(SCHEMA, args))
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.buckets():
        with guard.check():
            if kind(bucket) == S3_BUCKET:
                _check_s3(stack, bucket, report)
                _check_s3_acl(stack, bucket, report)
            elif kind(bucket) == GCS_BUCKET:
                _check_gcs(bucket, report)
                _check_gcs_iam(stack, bucket, report)
            elif kind(bucket) == AZ_STORAGE_ACCOUNT:
                _check_azure_account(bucket, report)
    for container in stack.of_type(AZ_BLOB_CONTAINER):
        with guard.check():
            _check_container(container, report)
    guard.raise_first()


no_public_access = StackValidationPolicy(
    name="no-public-access",
    description=(
        "No bucket can be made public, gpudr-tagged or not: S3 buckets (Bucket, BucketV2) have "
        "a public access block with all four flags and no grant to everyone; GCS buckets "
        "enforce public access prevention and uniform bucket-level access and grant nothing to "
        "allUsers; Azure accounts disallow public blob access and shared keys, and containers "
        "are private."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=SCHEMA,
    remediation_steps=(
        "AWS: aws.s3.BucketPublicAccessBlock for each bucket with block_public_acls, "
        "block_public_policy, ignore_public_acls and restrict_public_buckets all True (or an "
        "account-wide aws.s3.AccountPublicAccessBlock), and no public ACL. GCP: "
        'public_access_prevention="enforced", uniform_bucket_level_access=True, no allUsers or '
        "allAuthenticatedUsers member. Azure: allow_blob_public_access=False and "
        'allow_shared_key_access=False on the account, public_access="None" on every '
        "BlobContainer. A bucket that must be public is exempted in the pack config, with a "
        "reason."
    ),
    tags=["data-protection", "access"],
)
