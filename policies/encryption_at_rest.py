"""data-encrypted-at-rest: every bucket and storage account is encrypted with a customer-managed
key, gpudr-tagged or not, whichever SDK class declares it (S3 `Bucket` or `BucketV2`).

A customer-managed key is what lets the DR site keep reading its copy (the key lives at the DR
site, with its own policy and rotation) and what an attacker with only storage access lacks.
S3's default (SSE-S3, or SSE-KMS with the AWS-managed `aws/s3` key) and Google- or
Microsoft-managed keys satisfy neither.

With pulumi-aws v7 an S3 bucket's encryption is a separate resource, so this is a stack policy:
the encryption configuration is found through its `bucket` property dependency.
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
from pulumi_policy.proxy import UnknownValueError

from .common import (
    AWS_KMS_KEY,
    AZ_KEY_VAULT,
    AZ_STORAGE_ACCOUNT,
    AZ_VAULT_KEY,
    GCP_CRYPTO_KEY,
    GCS_BUCKET,
    S3_BUCKET,
    S3_ENCRYPTION,
    Stack,
    UnknownGuard,
    config_schema,
    depends_on_type,
    describe,
    exempting,
    get,
    items,
    kind,
    policy_config,
    same,
)

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
    report(
        f"{describe(bucket)} is not encrypted with a customer-managed KMS key: {found}. Add "
        "aws.s3.BucketServerSideEncryptionConfiguration(bucket=<bucket>.id, "
        'rules=[{apply_server_side_encryption_by_default: {sse_algorithm: "aws:kms", '
        "kms_master_key_id: <the site's aws.kms.Key ARN>}, bucket_key_enabled: True}]) "
        f"(not {AWS_MANAGED_ALIAS}).",
        bucket.urn,
    )


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
        "aws/s3, a Cloud KMS default key, or a Key Vault key."
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
        "(components/*/bucket.py) do all three."
    ),
    tags=["encryption", "data-protection"],
)
