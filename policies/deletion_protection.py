"""deletion-protection: what holds DR data, or the keys to read it, is `protect`ed in Pulumi.

`protect=True` makes `pulumi destroy`, a rename that replaces the resource, or a removal from
the program fail instead of deleting it. Deleting a key is as final as deleting the data: every
object encrypted with it becomes unreadable, replicas included. S3 and GCS buckets also take
`force_destroy`, which deletes every object with the bucket: it must never be on. A Key Vault
without purge protection can be purged during its soft-delete window, keys included, by anyone
with that right: protection in Pulumi does not stop a portal or CLI purge, purge protection
does (and cannot be turned off once on).
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .common import (
    AWS_KMS_EXTERNAL_KEY,
    AWS_KMS_KEY,
    AWS_KMS_REPLICA_KEY,
    AZ_BLOB_CONTAINER,
    AZ_KEY_VAULT,
    AZ_MANAGED_HSM,
    AZ_MANAGED_HSM_KEY,
    AZ_STORAGE_ACCOUNT,
    AZ_VAULT_KEY,
    DATA_ROLES,
    GCP_CRYPTO_KEY,
    GCP_KEY_RING,
    GCS_BUCKET,
    S3_BUCKET,
    canonical_type,
    config_schema,
    exempting,
    get,
    is_true,
    policy_config,
    tag_is,
)

SCHEMA = config_schema()

DATA_BEARING = (
    AWS_KMS_EXTERNAL_KEY,
    AWS_KMS_REPLICA_KEY,
    AZ_MANAGED_HSM,
    AZ_MANAGED_HSM_KEY,
    S3_BUCKET,
    GCS_BUCKET,
    AZ_STORAGE_ACCOUNT,
    AZ_BLOB_CONTAINER,
    AWS_KMS_KEY,
    GCP_CRYPTO_KEY,
    GCP_KEY_RING,
    AZ_KEY_VAULT,
    AZ_VAULT_KEY,
)
FORCE_DESTROY = (S3_BUCKET, GCS_BUCKET)


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args), args.urn)
    where = f"{args.name} ({args.resource_type})"
    resource_type = canonical_type(args.resource_type)
    tagged = tag_is(args.resource_type, args.props, "dr-role", *DATA_ROLES)
    if resource_type not in DATA_BEARING and not tagged:
        return
    if not args.opts.protect:
        report(
            f"{where} holds DR data or the key to it but is not protected: pass "
            "opts=pulumi.ResourceOptions(protect=True) (and retain_on_delete=True), so that "
            "destroy, replacement or removal from the program cannot delete it.",
            None,
        )
    if resource_type in FORCE_DESTROY and is_true(args.props.get("forceDestroy")):
        report(
            f"{where} has force_destroy=True, which deletes every object with the bucket: "
            "set force_destroy=False.",
            None,
        )
    if resource_type in (AZ_KEY_VAULT, AZ_MANAGED_HSM) and not is_true(
        get(args.props, "properties", "enablePurgeProtection")
    ):
        report(
            f"{where} has no purge protection: its keys (and every account encrypted with them) "
            "can be purged during the soft-delete window. Set properties.enable_purge_protection"
            "=True and enable_soft_delete=True.",
            None,
        )


deletion_protection = ResourceValidationPolicy(
    name="deletion-protection",
    description=(
        "Data-bearing resources (S3 and GCS buckets, Azure storage accounts and containers, "
        "KMS keys, Cloud KMS key rings and keys, Key Vaults and their keys, and anything tagged "
        "gpudr:dr-role data-*), tagged or not and of any SDK class, are protected; no bucket "
        "has force_destroy; every Key Vault has purge protection."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=SCHEMA,
    remediation_steps=(
        "Declare each such resource with opts=pulumi.ResourceOptions(protect=True, "
        "retain_on_delete=True) and never force_destroy=True; Key Vaults with "
        "enable_purge_protection=True. To really delete one, unprotect it first (`pulumi state "
        "unprotect <urn>`), deliberately."
    ),
    tags=["data-protection"],
)
