"""guarded-class-supported: what the pack guards is declared with a provider it can judge.

The pack reads buckets, storage accounts, keys and Kubernetes clusters as pulumi-aws, pulumi-gcp
and pulumi-azure-native register them. The same cloud resource declared through another
provider (AWS Cloud Control's `aws-native`, the classic `azure` provider, `google-native`) has
other property names, so every check would pass it unread. Fail closed: such a resource is
refused until it is declared with a provider the pack judges, or exempted in the pack config
with a reason.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .common import config_schema, exempting, policy_config

SCHEMA = config_schema()
# (package, module) of other providers' classes for what the pack guards, and what it is.
UNJUDGED = {
    ("aws-native", "s3"): "an S3 bucket",
    ("aws-native", "s3express"): "an S3 directory bucket",
    ("aws-native", "eks"): "an EKS cluster",
    ("aws-native", "kms"): "a KMS key",
    ("azure", "storage"): "an Azure storage account or container",
    ("azure", "containerservice"): "an AKS cluster",
    ("azure", "keyvault"): "a Key Vault or key",
    ("google-native", "storage"): "a Cloud Storage bucket",
    ("google-native", "container"): "a GKE cluster",
    ("google-native", "cloudkms"): "a Cloud KMS key",
}
JUDGED_BY = {
    "aws-native": "pulumi-aws (aws.s3, aws.eks, aws.kms)",
    "azure": "pulumi-azure-native (azure-native.storage, containerservice, keyvault)",
    "google-native": "pulumi-gcp (gcp.storage, gcp.container, gcp.kms)",
}


def _unjudged(resource_type: str) -> str | None:
    package, _, rest = resource_type.partition(":")
    module = rest.split(":", 1)[0].split("/", 1)[0]
    return UNJUDGED.get((package, module))


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    what = _unjudged(args.resource_type)
    if what is None:
        return
    package = args.resource_type.split(":", 1)[0]
    exempting(report, policy_config(SCHEMA, args), args.urn)(
        f"{args.name} ({args.resource_type}) is {what} declared with a provider gpudr's pack "
        f"cannot judge, so no encryption, public access or deletion check reads it: declare it "
        f"with {JUDGED_BY[package]}, or exempt it in the pack config with a reason.",
        None,
    )


guarded_class_supported = ResourceValidationPolicy(
    name="guarded-class-supported",
    description=(
        "Buckets, storage accounts, keys and Kubernetes clusters are declared with pulumi-aws, "
        "pulumi-gcp or pulumi-azure-native, whose properties the pack reads; the same resource "
        "through aws-native, the classic azure provider or google-native is refused."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        "Declare the resource with the provider the pack judges (aws.s3.Bucket, "
        "azure_native.storage.StorageAccount, gcp.storage.Bucket, ...), or add it to this "
        "policy's exemptions in the pack config with the reason it is safe."
    ),
    tags=["integrity"],
)
