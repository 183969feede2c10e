"""encryption-in-transit: DR data never crosses a network in clear text.

S3 accepts plain HTTP unless a bucket policy refuses it (`aws:SecureTransport` false); Azure
storage accounts accept old TLS versions and HTTP unless told otherwise. Cloud Storage serves
only HTTPS (its JSON and XML APIs have no plain-HTTP endpoint), so GCS buckets have nothing to
check here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .common import (
    AZ_STORAGE_ACCOUNT,
    S3_BUCKET,
    S3_POLICY,
    Stack,
    UnknownGuard,
    config_schema,
    describe,
    exempting,
    get,
    is_true,
    items,
    json_document,
    kind,
    policy_config,
    same,
)

SCHEMA = config_schema()

ACCEPTED_TLS = ("TLS1_2", "TLS1_3")


def _condition_false(value: Any) -> bool:
    return any(v is False or same(v, "false") for v in items(value))


def _denies_insecure_transport(statement: Any) -> bool:
    if not isinstance(statement, Mapping) or not same(statement.get("Effect"), "Deny"):
        return False
    principal = statement.get("Principal")
    if not (
        principal == "*" or get(principal, "AWS") == "*" or "*" in items(get(principal, "AWS"))
    ):
        return False
    actions = items(statement.get("Action"))
    if not any(a in ("s3:*", "*") for a in actions):
        return False
    # Exactly `Bool: {aws:SecureTransport: false}`: any other operator or key is ANDed with it
    # and narrows the Deny (`IpAddress` would leave plain HTTP open from everywhere else).
    condition = statement.get("Condition")
    if not isinstance(condition, Mapping) or list(condition) != ["Bool"]:
        return False
    operator = condition["Bool"]
    if not isinstance(operator, Mapping) or list(operator) != ["aws:SecureTransport"]:
        return False
    if not _condition_false(operator["aws:SecureTransport"]):
        return False
    if statement.get("NotPrincipal") or statement.get("NotAction") or statement.get("NotResource"):
        return False
    # Both the bucket and its objects: a Deny on the bucket ARN alone leaves GetObject open.
    resources = items(statement.get("Resource"))
    return any(r == "*" or (isinstance(r, str) and r.endswith("/*")) for r in resources)


def _check_s3(stack: Stack, bucket: PolicyResource, report: ReportViolation) -> None:
    policies = stack.linked(bucket, S3_POLICY, "bucket", ("bucket", "id"))
    for policy in policies:
        document = json_document(policy.props.get("policy"))
        if document and any(
            _denies_insecure_transport(s) for s in items(document.get("Statement"))
        ):
            return
    found = (
        f"its bucket policy {policies[0].name} has no such statement"
        if policies
        else "no BucketPolicy refers to it"
    )
    report(
        f"{describe(bucket)} accepts plain HTTP: {found}. Add to an "
        'aws.s3.BucketPolicy for it the statement {"Sid": "DenyInsecureTransport", "Effect": '
        '"Deny", "Principal": "*", "Action": "s3:*", "Resource": [<bucket ARN>, '
        '<bucket ARN>/*], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}.',
        bucket.urn,
    )


def _check_azure(account: PolicyResource, report: ReportViolation) -> None:
    problems = []
    tls = account.props.get("minimumTlsVersion")
    if tls not in ACCEPTED_TLS:
        problems.append(f'minimum_tls_version is {tls!r}: set "TLS1_2"')
    if not is_true(account.props.get("enableHttpsTrafficOnly")):
        problems.append("enable_https_traffic_only is not True: set it")
    if problems:
        report(
            f"{describe(account)} accepts insecure connections: {'; '.join(problems)}.",
            account.urn,
        )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args))
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.buckets():
        if kind(bucket) == S3_BUCKET:
            with guard.check():
                _check_s3(stack, bucket, report)
        # gcp:storage/bucket:Bucket: Cloud Storage is HTTPS-only by design; nothing to set.
    # Every storage account, gpudr-tagged or not: an account is reachable however it is used.
    for account in stack.of_type(AZ_STORAGE_ACCOUNT):
        with guard.check():
            _check_azure(account, report)
    guard.raise_first()


encryption_in_transit = StackValidationPolicy(
    name="encryption-in-transit",
    description=(
        "Storage is reachable only over TLS, gpudr-tagged or not: S3 buckets have a bucket "
        "policy denying aws:SecureTransport false; Azure storage accounts require TLS 1.2 "
        "and HTTPS only. (Cloud Storage is HTTPS-only by design.)"
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        "AWS: attach an aws.s3.BucketPolicy to each bucket with a Deny of s3:* on the "
        "bucket and bucket/* for Principal * when aws:SecureTransport is false (gpudr's "
        'components/aws/bucket.py also denies s3:TlsVersion < 1.2). Azure: minimum_tls_version="'
        'TLS1_2" and enable_https_traffic_only=True on every storage account.'
    ),
    tags=["encryption", "network"],
)
