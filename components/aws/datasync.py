"""Scheduled pulls into an S3 replica bucket with AWS DataSync, owned by the DR stack: the DR
site holds the tasks, their locations and the role they write with, so it can run and change
them with the source site gone. The RPO is the schedule interval plus one run's transfer.

From Cloud Storage, DataSync reads through the S3-compatible XML API
(`storage.googleapis.com`) with an HMAC key: the only sign-in it accepts for another cloud's
object storage. The key belongs to a read-only service account the primary's stack creates
(components/gcp/cross_cloud.py); its secret reaches this stack as secret config
(components/config.py), never as a file or a plain value.

Tasks run in Enhanced mode, which needs no agent for transfers from other clouds: nothing to
deploy, patch or size. Source:
https://docs.aws.amazon.com/datasync/latest/userguide/choosing-task-mode.html
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpudr.contract.naming import datasync_schedule, datasync_task_name
from gpudr.contract.site import InboundTransfer

GCS_ENDPOINT = "storage.googleapis.com"
# Enhanced mode tasks log only to this group: DataSync sends their logs nowhere else
# (CreateTask/UpdateTask `CloudWatchLogGroupArn`). Basic mode tasks (on premises, through
# agents) may log to any group: they log to this one too, the site's one DataSync log group.
DATASYNC_LOG_GROUP = "/aws/datasync"
LOG_RETENTION_DAYS = 90
# The account's resource policy that lets Basic mode tasks write to DATASYNC_LOG_GROUP (at most
# 10 such policies per account and region; one per site, like the group).
LOG_POLICY_NAME = "gpudr-datasync-basic-mode-logs"


def check_inbound(transfers: Sequence[InboundTransfer]) -> None:
    """What an AWS site can pull: DataSync from Cloud Storage, on a schedule of whole hours.
    Raises before anything is declared."""
    for t in transfers:
        if t.service != "datasync" or t.source_cloud != "gcp":
            raise ValueError(
                f"inbound transfer from {t.source_site} ({t.source_bucket}): {t.service} from "
                f"{t.source_cloud} is not supported into S3; only datasync from gcp is"
            )
        schedule_expression(t)


def schedule_expression(t: InboundTransfer) -> str:
    """DataSync schedules run at most hourly; the planner emits whole hours."""
    if t.schedule_s < 3600 or t.schedule_s % 3600:
        raise ValueError(
            f"inbound transfer from {t.source_site} ({t.source_bucket}): schedule_s "
            f"{t.schedule_s} is not a whole number of hours of at least one; regenerate the "
            "stack with `gpudr generate`"
        )
    return datasync_schedule(t.schedule_s)


@dataclass(frozen=True)
class DataSyncLogsArgs:
    region: pulumi.Input[str]
    # The site's key (its ARN: CloudWatch Logs takes no alias or id). Its policy must let
    # CloudWatch Logs of this region use it for DATASYNC_LOG_GROUP (kms.DataKeyArgs.log_groups).
    key_arn: pulumi.Input[str]
    tags: dict[str, str]
    # Whether Basic mode tasks log here. Enhanced mode tasks write through DataSync's
    # service-linked role (AWSServiceRoleForDataSync, `/aws/datasync*` only); Basic mode tasks
    # write only where a resource policy of CloudWatch Logs lets datasync.amazonaws.com.
    basic_mode: bool = False


class DataSyncLogs(pulumi.ComponentResource):
    """The site's one log group for DataSync tasks, in either mode. Declared (rather than left
    to DataSync to create on first run) so that it has a retention: otherwise transfer logs are
    kept, and billed, forever; and encrypted with the site's key, like the data whose object
    names the logs carry. One per site and region, since the name is fixed. With Basic mode
    tasks, also the resource policy that lets them write to it."""

    log_group_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: DataSyncLogsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:DataSyncLogs", name, None, opts)
        group = aws.cloudwatch.LogGroup(
            f"{name}-group",
            name=DATASYNC_LOG_GROUP,
            retention_in_days=LOG_RETENTION_DAYS,
            kms_key_id=args.key_arn,
            region=args.region,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        if args.basic_mode:
            aws.cloudwatch.LogResourcePolicy(
                f"{name}-basic-mode",
                policy_name=LOG_POLICY_NAME,
                policy_document=group.arn.apply(_logs_write_policy),
                region=args.region,
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.log_group_arn = group.arn
        self.register_outputs({"log_group_arn": self.log_group_arn})


@dataclass(frozen=True)
class DataSyncPullArgs:
    region: pulumi.Input[str]
    account_id: pulumi.Input[str]
    role_name: str
    sink_bucket_arn: pulumi.Input[str]
    key_arn: pulumi.Input[str]  # the DR site's key: the sink's default encryption
    transfers: Sequence[InboundTransfer]
    hmac_access_id: pulumi.Input[str]
    hmac_secret: pulumi.Output[str]  # a secret Output (config.get_secret), never a plain str
    log_group_arn: pulumi.Input[str]
    task_name: str
    tags: dict[str, str]


class DataSyncPull(pulumi.ComponentResource):
    """One replica bucket's pulls: the role DataSync writes to the bucket with, the bucket as a
    DataSync location, and per source a Cloud Storage location and a scheduled task."""

    role_arn: pulumi.Output[str]
    task_arns: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: DataSyncPullArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:DataSyncPull", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        check_inbound(args.transfers)
        # The secret comes from secret config, as an Output: a plain value here means it was
        # read as plain config somewhere. Marked secret again whatever its origin, so that it is
        # encrypted in the state and masked in every diff.
        if not isinstance(args.hmac_secret, pulumi.Output):
            raise TypeError(
                f"{name}: the HMAC secret must be a secret Output (config.get_secret), "
                "not a plain value"
            )
        hmac_secret: pulumi.Output[str] = pulumi.Output.secret(args.hmac_secret)

        sink, role = s3_sink(
            self,
            name,
            SinkArgs(
                args.role_name, args.region, args.account_id, args.sink_bucket_arn, args.key_arn
            ),
            "the pulls from the primary",
            args.tags,
        )
        tasks = []
        for t in args.transfers:
            source = aws.datasync.LocationObjectStorage(
                f"{name}-from-{t.source_site}-source",
                server_hostname=GCS_ENDPOINT,
                server_protocol="HTTPS",
                server_port=443,
                bucket_name=t.source_bucket,
                subdirectory="/",
                access_key=args.hmac_access_id,
                secret_key=hmac_secret,
                # No agent_arns: Enhanced mode reads other clouds' storage without one.
                region=args.region,
                tags=args.tags,
                opts=child,
            )
            tasks.append(
                aws.datasync.Task(
                    f"{name}-from-{t.source_site}",
                    name=datasync_task_name(args.task_name, t.source_site),
                    task_mode="ENHANCED",
                    source_location_arn=source.arn,
                    destination_location_arn=sink.arn,
                    schedule=aws.datasync.TaskScheduleArgs(
                        schedule_expression=schedule_expression(t), status="ENABLED"
                    ),
                    cloudwatch_log_group_arn=args.log_group_arn,
                    options=_options(t),
                    region=args.region,
                    tags={**args.tags, "gpudr:schedule-s": str(t.schedule_s)},
                    opts=child,
                )
            )
        self.role_arn = role.arn
        self.task_arns = pulumi.Output.all(*[task.arn for task in tasks])
        self.register_outputs({"role_arn": self.role_arn, "task_arns": self.task_arns})


def _options(t: InboundTransfer) -> aws.datasync.TaskOptionsArgs:
    return aws.datasync.TaskOptionsArgs(
        # Checksums of what this run copied, compared at the sink. The whole-location scan
        # (POINT_IN_TIME_CONSISTENT) is refused for Enhanced mode tasks.
        verify_mode="ONLY_FILES_TRANSFERRED",
        # After the first full copy, only what is new or changed: each run is one interval's
        # worth, which is what the schedule was sized for.
        transfer_mode="CHANGED",
        overwrite_mode="ALWAYS",
        # Checkpoints: the source keeps the last N and deletes the rest; the sink mirrors those
        # deletes or copies pile up forever. The sink is versioned, so a mirrored delete leaves
        # a noncurrent version its lifecycle keeps: a mistaken delete is still recoverable at
        # the DR site. Other classes never delete at the sink.
        preserve_deleted_files="REMOVE" if t.mirror_deletes else "PRESERVE",
        # Cloud Storage's XML API has no S3 object tagging: there are no tags to copy.
        object_tags="NONE",
        # Errors only: per-object lines for every checkpoint shard every run cost more than
        # they tell; a failed run is what must be seen.
        log_level="BASIC",
    )


def _logs_write_policy(group_arn: str) -> str:
    """DataSync's Basic mode tasks of the group's account and region may write to the group,
    and to nothing else (DataSync User Guide, "Allowing DataSync to upload logs to a CloudWatch
    log group"). The group's ARN has no trailing `:*` in this provider: its streams do."""
    _, partition, _, region, account = group_arn.split(":", 5)[:5]
    return _datasync_policy(
        ["logs:CreateLogStream", "logs:PutLogEvents"],
        account,
        f"arn:{partition}:datasync:{region}:{account}:task/*",
        resource=f"{group_arn}:*",
    )


def _trust_policy(region: str, account: str) -> str:
    return _datasync_policy("sts:AssumeRole", account, f"arn:aws:datasync:{region}:{account}:*")


def _datasync_policy(
    action: str | list[str], account: str, source_arn: str, resource: str | None = None
) -> str:
    """One statement: DataSync may do `action`, only when acting for `source_arn` of this
    account (its tasks, in this region): another account's DataSync cannot be pointed at what
    the policy guards (confused deputy)."""
    statement: dict[str, object] = {
        "Effect": "Allow",
        "Principal": {"Service": "datasync.amazonaws.com"},
        "Action": action,
    }
    if resource is not None:
        statement["Resource"] = resource
    statement["Condition"] = {
        "StringEquals": {"aws:SourceAccount": account},
        "ArnLike": {"aws:SourceArn": source_arn},
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def _write_policy(bucket_arn: str, key_arn: str) -> str:
    # The permissions AWS documents for an S3 DataSync destination, on this bucket only.
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": [
                        "s3:GetBucketLocation",
                        "s3:ListBucket",
                        "s3:ListBucketMultipartUploads",
                    ],
                    "Resource": bucket_arn,
                },
                {
                    "Effect": "Allow",
                    "Action": [
                        "s3:AbortMultipartUpload",
                        "s3:DeleteObject",
                        "s3:GetObject",
                        "s3:GetObjectTagging",
                        "s3:GetObjectVersion",
                        "s3:GetObjectVersionTagging",
                        "s3:ListMultipartUploadParts",
                        "s3:PutObject",
                        "s3:PutObjectTagging",
                    ],
                    "Resource": f"{bucket_arn}/*",
                },
                {
                    # The bucket encrypts with the site's key by default (SSE-KMS): writes need
                    # data keys, multipart uploads and verification reads need decrypt.
                    "Effect": "Allow",
                    "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
                    "Resource": key_arn,
                },
            ],
        }
    )


@dataclass(frozen=True)
class SinkArgs:
    """The replica bucket a DataSync pull writes, and the role DataSync writes it with."""

    role_name: str
    region: pulumi.Input[str]
    account_id: pulumi.Input[str]
    bucket_arn: pulumi.Input[str]
    key_arn: pulumi.Input[str]


def s3_sink(
    parent: pulumi.Resource, name: str, args: SinkArgs, what: str, tags: dict[str, str]
) -> tuple[aws.datasync.S3Location, aws.iam.Role]:
    """The S3 location of a replica bucket and the role DataSync writes it with (trusted by
    DataSync in this account and region only; write and the key's use on that bucket only),
    shared by the pulls from another cloud and from on premises."""
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(
        f"{name}-role",
        name=args.role_name,
        description=f"gpudr: DataSync writes {what} into this bucket",
        assume_role_policy=pulumi.Output.all(args.region, args.account_id).apply(
            lambda a: _trust_policy(a[0], a[1])
        ),
        tags=tags,
        opts=child,
    )
    policy = aws.iam.RolePolicy(
        f"{name}-write",
        role=role.id,
        policy=pulumi.Output.all(args.bucket_arn, args.key_arn).apply(
            lambda a: _write_policy(a[0], a[1])
        ),
        opts=child,
    )
    # DataSync assumes the role when the location is created: the policy must be there.
    location = aws.datasync.S3Location(
        f"{name}-sink",
        s3_bucket_arn=args.bucket_arn,
        subdirectory="/",
        s3_config=aws.datasync.S3LocationS3ConfigArgs(bucket_access_role_arn=role.arn),
        region=args.region,
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[policy]),
    )
    return location, role
