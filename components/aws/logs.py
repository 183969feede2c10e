"""A site's log sink on AWS: the S3 bucket that keeps the server access logs of the site's data
buckets (`s3/<bucket>/`) and the flow logs of its VPC and of its drills' VPCs
(`vpc-flow-logs/`), for the plan's retention. Owned by the site's stack and named
deterministically (`cfg.logs.sink`), so that a drill delivers to it by name and its logs outlive
the drill.

Nothing that a site's workloads run as can erase the trail: the bucket policy denies object
deletion to every principal, and only the lifecycle (which bucket policies do not govern)
removes logs once they are older than the retention.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws.bucket import AccessLogs, tls_only_statements
from gpudr.contract.site import SiteConfig
from gpudr.contract.tags import DrRole, site_tags

# The sink's top-level prefixes, one per delivering service: each service may write under its
# own prefix only.
ACCESS_LOG_ROOT = "s3"
FLOW_LOG_ROOT = "vpc-flow-logs"


def access_log_prefix(bucket: str) -> str:
    """Where a data bucket's server access logs go in the sink."""
    return f"{ACCESS_LOG_ROOT}/{bucket}/"


def flow_log_destination(sink: str) -> str:
    """The `log_destination` of a VPC flow log delivered to the sink (a bucket ARN and a
    prefix: S3 adds `AWSLogs/<account>/vpcflowlogs/<region>/...` under it)."""
    return f"arn:aws:s3:::{sink}/{FLOW_LOG_ROOT}/"


@dataclass(frozen=True)
class SiteLogsArgs:
    config: SiteConfig
    # The site's account: only deliveries on behalf of this account may write to the sink.
    account_id: pulumi.Input[str]


class SiteLogs(pulumi.ComponentResource):
    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: SiteLogsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:logs:SiteLogs", name, None, opts)
        cfg = args.config
        logs = cfg.require_logs()
        self._name, self._region = name, cfg.region
        # The trail of who touched the site's data: protected and retained like the data
        # buckets (components/aws/bucket.py), and never force-destroyed with its objects.
        bucket = aws.s3.Bucket(
            f"{name}-bucket",
            bucket=logs.sink,
            force_destroy=False,
            region=cfg.region,
            tags=site_tags(cfg, DrRole.SITE_LOGS),
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        public_block = self._settings(bucket, logs.retention_days)
        self._policy = self._bucket_policy(bucket, public_block, args.account_id)
        self.bucket_name = bucket.bucket
        self.bucket_arn = bucket.arn
        self.register_outputs({"bucket_name": self.bucket_name, "bucket_arn": self.bucket_arn})

    def access_logs(self, bucket: str) -> AccessLogs:
        """What a data bucket of the site needs to log its requests here."""
        return AccessLogs(
            target_bucket=self.bucket_name,
            target_prefix=access_log_prefix(bucket),
            ready=[self._policy],
        )

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a delivery to the sink waits for: the policy that lets the services write."""
        return [self._policy]

    def _settings(
        self, bucket: aws.s3.Bucket, retention_days: int
    ) -> aws.s3.BucketPublicAccessBlock:
        """Owner-enforced objects, no public access, SSE-S3, versioning and the expiry; returns
        the public access block, which the policy waits for."""
        name, region = self._name, self._region
        child = pulumi.ResourceOptions(parent=self)
        # ACLs off: every log object belongs to the bucket owner, whichever service wrote it.
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership",
            bucket=bucket.id,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
            region=region,
            opts=child,
        )
        public_block = aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            region=region,
            opts=child,
        )
        # SSE-S3, not the site's KMS key: S3 delivers server access logs only to a target
        # bucket whose default encryption is SSE-S3 (AES256); a target with SSE-KMS default
        # encryption is not supported (Amazon S3 User Guide, "Enabling Amazon S3 server access
        # logging"). The flow logs share the bucket, so they share its encryption.
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="AES256"
                    ),
                )
            ],
            region=region,
            opts=child,
        )
        # Versioned: an overwritten log object stays recoverable until the lifecycle says.
        versioning = aws.s3.BucketVersioning(
            f"{name}-versioning",
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(
                status="Enabled"
            ),
            region=region,
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        self._lifecycle(bucket, versioning, retention_days)
        return public_block

    def _lifecycle(
        self, bucket: aws.s3.Bucket, versioning: aws.s3.BucketVersioning, retention_days: int
    ) -> None:
        """Logs go once older than the plan's retention; the noncurrent version an expiry
        leaves goes a day later. With a `days` expiry, S3 also removes the delete markers left
        behind, so no second rule is needed."""
        aws.s3.BucketLifecycleConfiguration(
            f"{self._name}-lifecycle",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="expire-logs",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(
                        days=retention_days
                    ),
                    noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                        noncurrent_days=1
                    ),
                )
            ],
            region=self._region,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[versioning]),
        )

    def _bucket_policy(
        self,
        bucket: aws.s3.Bucket,
        public_block: aws.s3.BucketPublicAccessBlock,
        account_id: pulumi.Input[str],
    ) -> aws.s3.BucketPolicy:
        return aws.s3.BucketPolicy(
            f"{self._name}-policy",
            bucket=bucket.id,
            policy=pulumi.Output.all(bucket.arn, account_id).apply(
                lambda a: sink_policy(a[0], a[1])
            ),
            region=self._region,
            # After the public access block, so the policy is never briefly evaluated without it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[public_block]),
        )


def sink_policy(bucket_arn: str, account_id: str) -> str:
    """TLS only; the S3 logging service writes access logs under `s3/`, the log delivery
    service flow logs under `vpc-flow-logs/`, each only on behalf of this account; and nobody
    deletes a log object or version."""
    own_account = {"aws:SourceAccount": account_id}
    statements = [
        *tls_only_statements(bucket_arn),
        {
            # Amazon S3 User Guide, "Permissions for log delivery" (bucket policy form).
            "Sid": "S3ServerAccessLogsDelivery",
            "Effect": "Allow",
            "Principal": {"Service": "logging.s3.amazonaws.com"},
            "Action": "s3:PutObject",
            "Resource": f"{bucket_arn}/{ACCESS_LOG_ROOT}/*",
            "Condition": {"StringEquals": own_account},
        },
        {
            # Amazon VPC User Guide, "Flow logs: S3 bucket permissions".
            "Sid": "VpcFlowLogsDelivery",
            "Effect": "Allow",
            "Principal": {"Service": "delivery.logs.amazonaws.com"},
            "Action": "s3:PutObject",
            "Resource": f"{bucket_arn}/{FLOW_LOG_ROOT}/*",
            "Condition": {
                "StringEquals": {**own_account, "s3:x-amz-acl": "bucket-owner-full-control"}
            },
        },
        {
            "Sid": "VpcFlowLogsAclCheck",
            "Effect": "Allow",
            "Principal": {"Service": "delivery.logs.amazonaws.com"},
            "Action": "s3:GetBucketAcl",
            "Resource": bucket_arn,
            "Condition": {"StringEquals": own_account},
        },
        {
            # The workloads whose requests and traffic are logged here cannot erase their
            # trail, whatever their IAM policies grant. Lifecycle expiry is not a request
            # under this policy, so logs still go after the retention.
            "Sid": "DenyLogDeletion",
            "Effect": "Deny",
            "Principal": "*",
            "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
            "Resource": f"{bucket_arn}/*",
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})
