"""A data bucket for one data class at one site: versioned, SSE-KMS with the site's key, public
access blocked, TLS-only, lifecycle tiers, object lock for weights, server access logs to the
site's log sink; protected from deletion."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpudr.contract.naming import DATA_BUCKET_COMPONENT
from gpudr.contract.site import BucketConfig


@dataclass(frozen=True)
class AccessLogs:
    """Where a bucket's S3 server access logs go: the site's log sink and the bucket's prefix
    there (`logs.SiteLogs.access_logs`), and what must exist before S3 is told to deliver
    there (the sink's policy, which lets the logging service write)."""

    target_bucket: pulumi.Input[str]
    target_prefix: str
    ready: Sequence[pulumi.Resource] = ()


@dataclass(frozen=True)
class DataBucketArgs:
    config: BucketConfig
    region: pulumi.Input[str]
    key_arn: pulumi.Input[str]
    tags: pulumi.Input[dict[str, str]]
    access_logs: AccessLogs
    # Cross-account replicas: the source account's replication role may write replicas here.
    replication_role_arn: pulumi.Input[str] | None = None


class DataBucket(pulumi.ComponentResource):
    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]
    versioning_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: DataBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(DATA_BUCKET_COMPONENT, name, None, opts)
        cfg = args.config
        # Data-bearing: protect blocks `pulumi destroy` and replacement, retain_on_delete keeps
        # the bucket if it is ever removed from the program, and force_destroy stays off so
        # a non-empty bucket cannot be deleted with its objects.
        bucket = aws.s3.Bucket(
            f"{name}-bucket",
            bucket=cfg.name,
            force_destroy=False,
            object_lock_enabled=cfg.object_lock_days is not None,
            region=args.region,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        # Versioning is what replication, object lock and "keep the last N" all stand on.
        versioning = aws.s3.BucketVersioning(
            f"{name}-versioning",
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(
                status="Enabled"
            ),
            region=args.region,
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        self._guard(name, bucket, args)
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-lifecycle",
            bucket=bucket.id,
            rules=_lifecycle_rules(cfg),
            region=args.region,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[versioning]),
        )
        if cfg.object_lock_days is not None:
            self._object_lock(name, bucket, versioning, args, cfg)
        self._access_logs(name, bucket, args)
        self.bucket_name = bucket.bucket
        self.bucket_arn = bucket.arn
        self.versioning_id = versioning.id
        self.register_outputs({"bucket_name": self.bucket_name, "bucket_arn": self.bucket_arn})

    def _guard(self, name: str, bucket: aws.s3.Bucket, args: DataBucketArgs) -> None:
        """Encryption at rest with the site's key, no public access, TLS-only by policy."""
        child = pulumi.ResourceOptions(parent=self)
        # Bucket keys cut KMS requests (and their cost) by orders of magnitude on checkpoints.
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="aws:kms", kms_master_key_id=args.key_arn
                    ),
                    bucket_key_enabled=True,
                )
            ],
            region=args.region,
            opts=child,
        )
        public_block = aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            region=args.region,
            opts=child,
        )
        aws.s3.BucketPolicy(
            f"{name}-policy",
            bucket=bucket.id,
            policy=pulumi.Output.all(bucket.arn, args.replication_role_arn).apply(
                lambda a: _bucket_policy(a[0], a[1])
            ),
            region=args.region,
            # After the public access block, so the policy is never briefly evaluated without it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[public_block]),
        )

    def _access_logs(self, name: str, bucket: aws.s3.Bucket, args: DataBucketArgs) -> None:
        """Every request on the bucket, logged to the site's sink under its own prefix: who
        read, wrote or deleted which object, from where (Security Hub S3.9). Delivery is best
        effort and not billed; the sink's storage is."""
        aws.s3.BucketLogging(
            f"{name}-access-logs",
            bucket=bucket.id,
            target_bucket=args.access_logs.target_bucket,
            target_prefix=args.access_logs.target_prefix,
            region=args.region,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.access_logs.ready)),
        )

    def _object_lock(
        self,
        name: str,
        bucket: aws.s3.Bucket,
        versioning: aws.s3.BucketVersioning,
        args: DataBucketArgs,
        cfg: BucketConfig,
    ) -> None:
        aws.s3.BucketObjectLockConfiguration(
            f"{name}-object-lock",
            bucket=bucket.id,
            object_lock_enabled="Enabled",
            rule=aws.s3.BucketObjectLockConfigurationRuleArgs(
                default_retention=aws.s3.BucketObjectLockConfigurationRuleDefaultRetentionArgs(
                    mode=object_lock_mode(cfg), days=cfg.object_lock_days
                )
            ),
            region=args.region,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[versioning], protect=True),
        )


def object_lock_mode(cfg: BucketConfig) -> str:
    """COMPLIANCE: nobody, root included, can shorten or remove a version's lock; a published
    model version cannot be deleted or overwritten before its retention ends, nor the bucket
    while it holds one. GOVERNANCE, for a trial (data.weights.lock: governance): the same
    retention, which a principal granted s3:BypassGovernanceRetention can lift, so the trial's
    buckets can be emptied and deleted. The policy pack accepts it only on an approved trial."""
    return "GOVERNANCE" if cfg.trial_lock else "COMPLIANCE"


def _lifecycle_rules(cfg: BucketConfig) -> list[aws.s3.BucketLifecycleConfigurationRuleArgs]:
    lc = cfg.lifecycle
    everything = aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix="")
    rules = [
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="abort-incomplete-uploads",
            status="Enabled",
            filter=everything,
            abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                days_after_initiation=lc.abort_multipart_days
            ),
        ),
        # "Keep the last N": old versions go only once N newer ones exist. Current objects are
        # never expired by age here, so a stalled job cannot lose its last good state.
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="keep-newest-versions",
            status="Enabled",
            filter=everything,
            noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                noncurrent_days=lc.noncurrent_days,
                newer_noncurrent_versions=lc.noncurrent_keep,
            ),
        ),
    ]
    rules += [
        # Deleted or overwritten data stays recoverable for noncurrent_max_days, then goes,
        # however few newer versions it has (uniquely named checkpoints never get any).
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="expire-old-versions",
            status="Enabled",
            filter=everything,
            noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                noncurrent_days=lc.noncurrent_max_days
            ),
        ),
        # Delete markers left with no versions behind them are clutter that slows listing.
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="remove-orphan-delete-markers",
            status="Enabled",
            filter=everything,
            expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(
                expired_object_delete_marker=True
            ),
        ),
    ]
    if lc.archive_after_days is not None and lc.archive_class is not None:
        rules.append(
            aws.s3.BucketLifecycleConfigurationRuleArgs(
                id="archive-older",
                status="Enabled",
                filter=everything,
                transitions=[
                    aws.s3.BucketLifecycleConfigurationRuleTransitionArgs(
                        days=lc.archive_after_days, storage_class=lc.archive_class
                    )
                ],
            )
        )
    return rules


def tls_only_statements(bucket_arn: str) -> list[dict[str, object]]:
    """The statements that refuse any request on the bucket over plain HTTP or TLS older than
    1.2, whoever makes it: every bucket gpudr declares carries them."""
    return [
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [bucket_arn, f"{bucket_arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        },
        {
            "Sid": "DenyOutdatedTls",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [bucket_arn, f"{bucket_arn}/*"],
            "Condition": {"NumericLessThan": {"s3:TlsVersion": "1.2"}},
        },
    ]


def _bucket_policy(bucket_arn: str, replication_role_arn: str | None) -> str:
    statements = tls_only_statements(bucket_arn)
    if replication_role_arn:
        statements.append(
            {
                "Sid": "AcceptReplicasFromSource",
                "Effect": "Allow",
                "Principal": {"AWS": replication_role_arn},
                "Action": [
                    "s3:ReplicateObject",
                    "s3:ReplicateTags",
                    "s3:ObjectOwnerOverrideToBucketOwner",
                    "s3:GetBucketVersioning",
                    "s3:PutBucketVersioning",
                ],
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})
