"""Scheduled pulls into a replica bucket with Storage Transfer Service, owned by the DR stack:
the DR site holds the jobs and the identity they run as, so it can run and change them with
the source site gone. The RPO is the repeat interval plus the transfer time.

From S3 the job authenticates by federation, not keys: it assumes an AWS IAM role that trusts
Google (`accounts.google.com`, audience/subject = the transfer service agent's subject id). That
role lives in the source's AWS account and belongs to the source side's stack (`sts_readers`).
From another GCS bucket the agent reads with its own identity: the read grant on the source
bucket belongs to the source side's stack too, never to this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.config import TransferCredentials
from gpudr.stackconfig import InboundTransfer

# What the transfer service agent needs on the sink bucket: objects (write, overwrite, list)
# and the bucket's metadata.
SINK_ROLES = {
    "object-admin": "roles/storage.objectAdmin",
    "bucket-reader": "roles/storage.legacyBucketReader",
}
# A start date in the past with no start time of day: a recurring job runs at once, then every
# repeat interval. Fixed, so the job is not updated on every run.
START = gcp.storage.TransferJobScheduleScheduleStartDateArgs(year=2025, month=1, day=1)


@dataclass(frozen=True)
class ScheduledTransferArgs:
    project: str
    sink_bucket: pulumi.Input[str]
    transfers: Sequence[InboundTransfer]
    # `serviceAccount:<transfer service agent>`; its grant on the sink's key is made once per
    # key by the site (see kms.py), and passed here so the jobs wait for it.
    agent_member: pulumi.Input[str]
    key_grant: pulumi.Resource
    # Sign-ins copied from the source's outputs into this stack's config (Azure Blob sources).
    credentials: TransferCredentials = field(default_factory=TransferCredentials)


def role_arn(transfer: InboundTransfer) -> str:
    if transfer.source_account is None:
        raise ValueError(
            f"inbound transfer from {transfer.source_site} ({transfer.source_bucket}): "
            "source_account is not set, so the AWS role to assume cannot be named; "
            "regenerate the stack with `gpudr generate`"
        )
    return f"arn:aws:iam::{transfer.source_account}:role/{transfer.role_name}"


@dataclass(frozen=True)
class _Describe:
    """The job's description, naming source and sink (the sink's name is an Output)."""

    transfer: InboundTransfer

    def __call__(self, sink: str) -> str:
        t = self.transfer
        scheme = "s3" if t.source_cloud == "aws" else "gs"
        return (
            f"gpudr: {scheme}://{t.source_bucket} ({t.source_site}, {t.source_region}) "
            f"to gs://{sink} every {t.schedule_s}s"
        )


class ScheduledTransfer(pulumi.ComponentResource):
    job_names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: ScheduledTransferArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:storage:ScheduledTransfer", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        for t in args.transfers:
            if t.service != "sts" or t.source_cloud not in ("aws", "gcp"):
                raise ValueError(
                    f"inbound transfer from {t.source_site}: {t.service} from {t.source_cloud} "
                    "is not supported into Cloud Storage; only sts from aws or gcp is"
                )
            if t.source_cloud == "aws":
                role_arn(t)  # fails here, before anything is declared, without the account

        grants: list[pulumi.Resource] = [args.key_grant]
        for label, role in SINK_ROLES.items():
            grants.append(
                gcp.storage.BucketIAMMember(
                    f"{name}-sts-{label}",
                    bucket=args.sink_bucket,
                    role=role,
                    member=args.agent_member,
                    opts=child,
                )
            )
        jobs = []
        for t in args.transfers:
            jobs.append(
                gcp.storage.TransferJob(
                    f"{name}-from-{t.source_site}",
                    project=args.project,
                    description=pulumi.Output.from_input(args.sink_bucket).apply(_Describe(t)),
                    transfer_spec=gcp.storage.TransferJobTransferSpecArgs(
                        aws_s3_data_source=gcp.storage.TransferJobTransferSpecAwsS3DataSourceArgs(
                            bucket_name=t.source_bucket, role_arn=role_arn(t)
                        )
                        if t.source_cloud == "aws"
                        else None,
                        gcs_data_source=gcp.storage.TransferJobTransferSpecGcsDataSourceArgs(
                            bucket_name=t.source_bucket
                        )
                        if t.source_cloud == "gcp"
                        else None,
                        gcs_data_sink=gcp.storage.TransferJobTransferSpecGcsDataSinkArgs(
                            bucket_name=args.sink_bucket
                        ),
                        # Never a move: the source keeps everything. Deletes reach the sink only
                        # for checkpoints (mirror_deletes), whose job keeps the last N at the
                        # source; the versioned sink keeps each mirrored delete as a noncurrent
                        # version, so a mistaken delete is still recoverable at the DR site.
                        transfer_options=gcp.storage.TransferJobTransferSpecTransferOptionsArgs(
                            overwrite_when="DIFFERENT",
                            delete_objects_from_source_after_transfer=False,
                            delete_objects_unique_in_sink=t.mirror_deletes,
                        ),
                    ),
                    schedule=gcp.storage.TransferJobScheduleArgs(
                        schedule_start_date=START, repeat_interval=f"{t.schedule_s}s"
                    ),
                    status="ENABLED",
                    # Without the grants the first run fails on permissions.
                    opts=pulumi.ResourceOptions(parent=self, depends_on=grants),
                )
            )
        self.job_names = pulumi.Output.all(*[j.name for j in jobs])
        self.register_outputs({"job_names": self.job_names})
