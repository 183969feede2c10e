"""data-encrypted-at-rest: every bucket and storage account is encrypted with a customer-managed
key, gpudr-tagged or not, whichever SDK class declares it (S3 `Bucket` or `BucketV2`).

A customer-managed key is what lets the DR site keep reading its copy (the key lives at the DR
site, with its own policy and rotation) and what an attacker with only storage access lacks.
S3's default (SSE-S3, or SSE-KMS with the AWS-managed `aws/s3` key) and Google- or
Microsoft-managed keys satisfy neither.

With pulumi-aws v7 an S3 bucket's encryption is a separate resource, so this is a stack policy:
the encryption configuration is found through its `bucket` property dependency.

One exception, because AWS leaves no other choice: S3 delivers server access logs only to a
bucket whose default encryption is SSE-S3 (`AES256`), so a site's access-log sink cannot use the
site key. SSE-S3 is accepted for a bucket only when all of these hold, and refused otherwise:

(a) another bucket of the stack sends its server access logs to it and S3 can deliver them
    there: its bucket policy lets `logging.s3.amazonaws.com` put objects under that bucket's
    prefix (policies/logs.py); a bucket nothing can deliver logs to is no log sink;
(b) it holds no data: no gpudr data tag (`gpudr:data-class`, a data `gpudr:dr-role`), not part
    of a gpudr DataBucket component (a data bucket re-tagged to pass as a sink is refused);
(c) nothing copies data into or out of it: no replication configuration of its own, not the
    destination of a replication rule, not a DataSync location;
(d) its bucket policy denies `s3:DeleteObject` and `s3:DeleteObjectVersion` to every principal,
    unconditionally, on all its objects (logs expire by lifecycle, which a policy cannot stop).

An unknown replication destination that no property dependency ties to the bucket counts as
another bucket (a value computed from this bucket would record it); any other value unknown
during preview that decides the exception makes the check "can't run" until it is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from .common import (
    AWS_KMS_KEY,
    AZ_KEY_VAULT,
    AZ_STORAGE_ACCOUNT,
    AZ_VAULT_KEY,
    DATASYNC_S3_LOCATION,
    GCP_CRYPTO_KEY,
    GCS_BUCKET,
    S3_BUCKET,
    S3_ENCRYPTION,
    S3_POLICY,
    S3_REPLICATION,
    Stack,
    UnknownGuard,
    config_schema,
    depends_on,
    depends_on_type,
    describe,
    exempting,
    get,
    items,
    json_document,
    kind,
    links_to,
    policy_config,
    same,
)
from .logs import data_marks, undelivered

SCHEMA = config_schema()

AWS_MANAGED_ALIAS = "alias/aws/s3"


def _customer_key(value: object) -> bool:
    """A key id, ARN or alias other than the AWS-managed `aws/s3` key."""
    return isinstance(value, str) and bool(value.strip()) and not value.endswith(AWS_MANAGED_ALIAS)


def _s3_rule_ok(config: PolicyResource, index: int) -> bool:
    default = get(config.props, "rules", index, "applyServerSideEncryptionByDefault")
    if not same(get(default, "sseAlgorithm"), "aws:kms") and not same(
        get(default, "sseAlgorithm"), "aws:kms:dsse"
    ):
        return False
    try:
        return _customer_key(get(default, "kmsMasterKeyId"))
    except UnknownValueError:
        # A key created in this stack has no ARN before it exists: the property dependency
        # shows the value will be that customer-managed key.
        if depends_on_type(config, "rules", AWS_KMS_KEY):
            return True
        raise


def _sse_s3(config: PolicyResource) -> bool:
    return any(
        same(get(rule, "applyServerSideEncryptionByDefault", "sseAlgorithm"), "AES256")
        for rule in items(config.props.get("rules"))
    )


def _check_s3(stack: Stack, bucket: PolicyResource, report: ReportViolation) -> None:
    configs = stack.linked(bucket, S3_ENCRYPTION, "bucket", ("bucket", "id"))
    for config in configs:
        if any(_s3_rule_ok(config, i) for i in range(len(items(config.props.get("rules"))))):
            return
    found = (
        f"its encryption configuration {configs[0].name} does not use one"
        if configs
        else "no BucketServerSideEncryptionConfiguration refers to it"
    )
    if any(_sse_s3(config) for config in configs):
        refusals = _log_sink_refusals(stack, bucket)
        if not refusals:
            return  # the site's access-log sink: S3 delivers only to SSE-S3 buckets
        found += (
            "; SSE-S3 (AES256) is accepted only for an access-log sink, and for this bucket "
            + "; ".join(refusals)
        )
    report(
        f"{describe(bucket)} is not encrypted with a customer-managed KMS key: {found}. Add "
        "aws.s3.BucketServerSideEncryptionConfiguration(bucket=<bucket>.id, "
        'rules=[{apply_server_side_encryption_by_default: {sse_algorithm: "aws:kms", '
        "kms_master_key_id: <the site's aws.kms.Key ARN>}, bucket_key_enabled: True}]) "
        f"(not {AWS_MANAGED_ALIAS}).",
        bucket.urn,
    )


# --- the access-log sink's exception ------------------------------------------------------------

DELETE_ACTIONS = ("s3:DeleteObject", "s3:DeleteObjectVersion")
EVERY_OBJECT = ("*", "arn:aws:s3:::*", "arn:aws:s3:::*/*")


def _log_sink_refusals(stack: Stack, bucket: PolicyResource) -> list[str]:
    """Why the bucket is not an access-log sink that may use SSE-S3 (empty when it is). When no
    condition refuses but one depends on a value unknown during preview, that error is raised:
    the exception is granted only once every condition is shown."""
    refusals: list[str] = []
    unknown: UnknownValueError | None = None
    for condition in (_receives_logs, _holds_data, _copies, _deletable):
        try:
            refusals += condition(stack, bucket)
        except UnknownValueError as error:
            unknown = unknown or error
    if not refusals and unknown is not None:
        raise unknown
    return refusals


def _receives_logs(stack: Stack, bucket: PolicyResource) -> list[str]:
    return undelivered(stack, bucket)


def _holds_data(stack: Stack, bucket: PolicyResource) -> list[str]:
    return [f"it holds data ({mark})" for mark in data_marks(bucket)]


def _arn(bucket: PolicyResource) -> str | None:
    name = bucket.props.get("bucket")
    return f"arn:aws:s3:::{name}" if isinstance(name, str) and name else None


def _inline_rules(bucket: PolicyResource) -> list[object]:
    return [
        rule
        for config in items(bucket.props.get("replicationConfiguration"))
        for rule in items(get(config, "rules"))
    ]


def _copies(stack: Stack, bucket: PolicyResource) -> list[str]:
    """The replication and DataSync that copy data out of or into the bucket."""
    out = []
    own = stack.linked(bucket, S3_REPLICATION, "bucket", ("bucket", "id"))
    if own or _inline_rules(bucket):
        out.append(f"it replicates ({own[0].name if own else 'inline replication_configuration'})")
    arn = _arn(bucket)
    holders = [(c, "rules") for c in stack.of_type(S3_REPLICATION)]
    holders += [(b, "replicationConfiguration") for b in stack.of_type(S3_BUCKET)]
    for holder, prop in holders:
        if holder.urn != bucket.urn and _replicates_into(holder, prop, bucket, arn):
            out.append(f"{holder.name} replicates into it")
    for location in stack.of_type(DATASYNC_S3_LOCATION):
        if links_to(location, "s3BucketArn", bucket, ("arn",)) or (
            arn is not None and _known(location, "s3BucketArn") == arn
        ):
            out.append(f"it is DataSync location {location.name}")
    return out


def _known(resource: PolicyResource, prop: str) -> object:
    """`resource.props[prop]`, None when unknown during preview: with no property dependency
    on the bucket (asked first), an unknown value is computed from another resource."""
    try:
        return resource.props.get(prop)
    except UnknownValueError:
        return None


def _replicates_into(
    holder: PolicyResource, prop: str, bucket: PolicyResource, arn: str | None
) -> bool:
    """Whether a replication configuration (or a bucket's inline one, `prop`) has the bucket
    as a destination: computed from it, or its ARN spelt out. An unknown destination with no
    dependency on the bucket is another bucket's."""
    if depends_on(holder, prop, bucket):
        return True
    if arn is None:
        return False
    try:
        rules = (
            _inline_rules(holder)
            if prop == "replicationConfiguration"
            else items(holder.props.get("rules"))
        )
        destinations = [_known_destination(rule) for rule in rules]
    except UnknownValueError:
        return False
    return arn in destinations


def _known_destination(rule: object) -> object:
    try:
        return get(rule, "destination", "bucket")
    except UnknownValueError:
        return None


def _denied(statement: object, bucket: PolicyResource) -> set[str]:
    """The delete actions an unconditional Deny to every principal on all objects refuses."""
    if not isinstance(statement, Mapping) or not same(statement.get("Effect"), "Deny"):
        return set()
    principal = statement.get("Principal")
    if not (principal == "*" or "*" in items(get(principal, "AWS"))):
        return set()
    # A condition, or a Not* element, narrows the Deny: someone could still delete.
    if statement.get("Condition") or any(
        statement.get(k) for k in ("NotPrincipal", "NotAction", "NotResource")
    ):
        return set()
    arn = _arn(bucket)
    objects = {*EVERY_OBJECT, *([f"{arn}/*"] if arn else [])}
    if not any(r in objects for r in items(statement.get("Resource"))):
        return set()
    patterns = [str(a).lower() for a in items(statement.get("Action"))]
    return {a for a in DELETE_ACTIONS if any(fnmatchcase(a.lower(), p) for p in patterns)}


def _deletable(stack: Stack, bucket: PolicyResource) -> list[str]:
    denied: set[str] = set()
    for policy in stack.linked(bucket, S3_POLICY, "bucket", ("bucket", "id")):
        document = json_document(policy.props.get("policy"))
        for statement in items(get(document, "Statement")):
            denied |= _denied(statement, bucket)
    if denied >= set(DELETE_ACTIONS):
        return []
    return [
        "its bucket policy does not deny s3:DeleteObject and s3:DeleteObjectVersion to every "
        'principal ("Principal": "*", no condition) on all its objects'
    ]


def _check_gcs(bucket: PolicyResource, report: ReportViolation) -> None:
    try:
        key = get(bucket.props, "encryption", "defaultKmsKeyName")
        ok = isinstance(key, str) and bool(key.strip())
    except UnknownValueError:
        if not depends_on_type(bucket, "encryption", GCP_CRYPTO_KEY):
            raise
        ok = True
    if not ok:
        report(
            f"{describe(bucket)} has no customer-managed key: set "
            "encryption.default_kms_key_name to a Cloud KMS CryptoKey in the bucket's location "
            "(and grant the Cloud Storage service agent roles/cloudkms.cryptoKeyEncrypterDecrypter "
            "on it).",
            bucket.urn,
        )


def _check_azure(account: PolicyResource, report: ReportViolation) -> None:
    encryption = account.props.get("encryption")
    source = get(encryption, "keySource")
    try:
        vault = get(encryption, "keyVaultProperties")
        ok_vault = bool(get(vault, "keyName")) and bool(get(vault, "keyVaultUri"))
    except UnknownValueError:
        if not depends_on_type(account, "encryption", AZ_KEY_VAULT, AZ_VAULT_KEY):
            raise
        ok_vault = True
    if not same(source, "Microsoft.Keyvault") or not ok_vault:
        report(
            f"{describe(account)} is encrypted with Microsoft-managed keys "
            f"(encryption.keySource {source!r}, keyVaultProperties "
            f"{'set' if ok_vault else 'missing'}): set encryption.key_source "
            '"Microsoft.Keyvault" with key_vault_properties (key_name, key_vault_uri) of the '
            "site's Key Vault key and an encryption identity that may use it.",
            account.urn,
        )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args))
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.buckets():
        with guard.check():
            if kind(bucket) == S3_BUCKET:
                _check_s3(stack, bucket, report)
            elif kind(bucket) == GCS_BUCKET:
                _check_gcs(bucket, report)
            elif kind(bucket) == AZ_STORAGE_ACCOUNT:
                _check_azure(bucket, report)
    guard.raise_first()


data_encrypted_at_rest = StackValidationPolicy(
    name="data-encrypted-at-rest",
    description=(
        "Every S3 bucket (Bucket or BucketV2), GCS bucket and Azure storage account, tagged "
        "or not, is encrypted with a customer-managed key: SSE-KMS with a key other than "
        "aws/s3, a Cloud KMS default key, or a Key Vault key. SSE-S3 only for an S3 access-log "
        "sink that holds no data, is copied nowhere and denies deletes (S3 delivers access "
        "logs to no other)."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=SCHEMA,
    remediation_steps=(
        "AWS: declare aws.s3.BucketServerSideEncryptionConfiguration for the bucket with "
        'sse_algorithm "aws:kms" and kms_master_key_id set to the site\'s customer-managed '
        "aws.kms.Key. GCP: set encryption.default_kms_key_name on the bucket to a CryptoKey in "
        'its location. Azure: set encryption.key_source "Microsoft.Keyvault" with '
        "key_vault_properties and a user-assigned encryption identity. gpudr's components "
        "(components/*/bucket.py) do all three. A site's S3 access-log bucket keeps SSE-S3 "
        "(AES256): no gpudr data tags, no replication or DataSync, and a bucket policy letting "
        "logging.s3.amazonaws.com put the access logs and denying s3:DeleteObject and "
        "s3:DeleteObjectVersion to every principal."
    ),
    tags=["encryption", "data-protection"],
)
