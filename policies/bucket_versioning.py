"""bucket-versioning: every S3 bucket keeps earlier versions of what is overwritten or deleted.

Without versioning an overwrite or a delete is final: a training job that writes a corrupt
checkpoint over a good one, or a script that empties a prefix, destroys the copy DR restores
from, and S3 replication (which needs versioning on both sides) cannot run. With pulumi-aws 7
versioning is a separate resource (`aws.s3.BucketVersioning`), found through its `bucket`
property dependency; the deprecated inline `versioning` of a `BucketV2` counts too. Every
bucket is judged, tagged or not.
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
    S3_BUCKET,
    S3_VERSIONING,
    Stack,
    UnknownGuard,
    config_schema,
    describe,
    exempting,
    get,
    is_true,
    items,
    policy_config,
    same,
)

SCHEMA = config_schema()


def _enabled(stack: Stack, bucket: PolicyResource) -> tuple[bool, str]:
    """Whether versioning is on, and what was found when it is not."""
    if any(is_true(get(v, "enabled")) for v in items(bucket.props.get("versioning"))):
        return True, ""
    configs = stack.linked(bucket, S3_VERSIONING, "bucket", ("bucket", "id"))
    for config in configs:
        if same(get(config.props, "versioningConfiguration", "status"), "Enabled"):
            return True, ""
    if configs:
        status = get(configs[0].props, "versioningConfiguration", "status")
        return False, f"its BucketVersioning {configs[0].name} has status {status!r}"
    return False, "no BucketVersioning refers to it"


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args))
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.of_type(S3_BUCKET):
        with guard.check():
            ok, found = _enabled(stack, bucket)
            if not ok:
                report(
                    f"{describe(bucket)} keeps no earlier versions: {found}. Declare "
                    "aws.s3.BucketVersioning(bucket=<bucket>.id, versioning_configuration="
                    '{status: "Enabled"}).',
                    bucket.urn,
                )
    guard.raise_first()


bucket_versioning = StackValidationPolicy(
    name="bucket-versioning",
    description=(
        "Every S3 bucket (Bucket or BucketV2), tagged or not, has versioning Enabled, so an "
        "overwrite or delete can be undone and replication can run."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        "Declare aws.s3.BucketVersioning(bucket=<bucket>.id, versioning_configuration={status: "
        '"Enabled"}) for each bucket (gpudr\'s components/aws/bucket.py does); pair it with a '
        "lifecycle rule expiring noncurrent versions to bound the cost."
    ),
    tags=["data-protection"],
)
