"""Scheduled pulls into a replica bucket with Storage Transfer Service, owned by the DR stack:
the DR site holds the jobs and the identity they run as, so it can run and change them with
the source site gone. The RPO is the repeat interval plus the transfer time.

From S3 the job authenticates by federation, not keys: it assumes an AWS IAM role that trusts
Google (`accounts.google.com`, audience/subject = the transfer service agent's subject id). That
role lives in the source's AWS account and belongs to the source side's stack (`sts_readers`).
From another GCS bucket the agent reads with its own identity: the read grant on the source
bucket belongs to the source side's stack too, never to this one.

From Azure Blob Storage the job signs in by workload identity federation too: Entra ID trusts
the transfer service agent's Google ID token through a federated credential on a user-assigned
identity with read-only data access to the source accounts. The identity belongs to the
source side's stack (`azure_sts_readers`); its client and tenant ids reach this stack through
its own config (`gpudr:azure_sts_client_id`, `gpudr:azure_tenant_id`, see components/config.py),
never through the primary's state. No SAS token or account key exists. Until those are set,
no job is declared for an Azure source, and a warning names the commands that set them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config import TransferCredentials
from components.gcp.bucket import grant_bucket_roles
from components.gcp.onprem import check_inbound as check_onprem_inbound
from components.gcp.onprem import job_source
from gpudr.contract.grants import GCS_OBJECT_VIEWER
from gpudr.contract.site import InboundTransfer, OnPremSource
from gpudr.contract.stack import copy_credential_command

# What the transfer service agent needs on the sink bucket: objects (write, overwrite, list)
# and the bucket's metadata.
SINK_ROLES = {
    "object-admin": "roles/storage.objectAdmin",
    "bucket-reader": "roles/storage.legacyBucketReader",
}
# What a Storage Transfer Service agent needs on a Cloud Storage source: list and read objects,
# and the bucket's metadata (Storage Transfer Service, "Configure access to a source: Cloud
# Storage"). Granted by the source's stack.
SOURCE_ROLES = {
    "object-viewer": GCS_OBJECT_VIEWER,
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
    # The system and this (DR) site: the names of the stacks a warning tells the user to run.
    system: str = "<system>"
    site: str = "<this site>"
    # Pulls from on premises (sts-agent): what they read and the pool whose agents read it.
    onprem: OnPremSource | None = None
    agent_pool: pulumi.Input[str] | None = None
    # The agents' grants on the sink (they write it): the jobs wait for them too.
    agent_grants: Sequence[pulumi.Resource] = ()
    # In failover mode: leave the schedules as the operator set them (the runbook pauses the
    # pulls from on premises, whose source is gone and whose return must not overwrite or,
    # for checkpoints, delete what the DR site now writes). A `pulumi up` during the failover
    # then never resumes them; the failback's up in standby, with --refresh, does.
    hold_schedules: bool = False


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
        if t.source_cloud == "azure":
            source = f"https://{t.source_storage_account}.blob.core.windows.net/{t.source_bucket}"
        elif t.source_cloud == "onprem":
            source = f"{t.source_bucket} through the agent pool"
        else:
            source = f"{'s3' if t.source_cloud == 'aws' else 'gs'}://{t.source_bucket}"
        return (
            f"gpudr: {source} ({t.source_site}, {t.source_region}) "
            f"to gs://{sink} every {t.schedule_s}s"
        )


# Storage Transfer's Azure source and its federated sign-in (client and tenant id, no secret).
AzureSource = gcp.storage.TransferJobTransferSpecAzureBlobStorageDataSourceArgs
AzureFederation = (
    gcp.storage.TransferJobTransferSpecAzureBlobStorageDataSourceFederatedIdentityConfigArgs
)


def azure_source(t: InboundTransfer, credentials: TransferCredentials) -> AzureSource | None:
    """The container to read and the identity to sign in as, or None while this stack's config
    lacks the identity. No SAS token (`azure_credentials`) and no `credentials_secret`: the
    federated identity is the only sign-in."""
    if not credentials.azure_client_id or not credentials.azure_tenant_id:
        return None
    return AzureSource(
        storage_account=t.source_storage_account or "",
        container=t.source_bucket,
        federated_identity_config=AzureFederation(
            client_id=credentials.azure_client_id, tenant_id=credentials.azure_tenant_id
        ),
    )


def missing_azure_identity(t: InboundTransfer, system: str, dr: str) -> str:
    """What to run so the next `pulumi up` declares the Azure source's job. gpudr names every
    stack `<system>-<site>` (gpudr.stackconfig.stack_name)."""
    primary, here = f"{system}-{t.source_site}", pulumi.get_stack()

    def copy(key: str) -> str:
        return copy_credential_command(primary, dr, key, False, here)

    return (
        f"Storage Transfer from Azure ({t.source_storage_account}/{t.source_bucket}, site "
        f"{t.source_site}) is not declared: gpudr:azure_sts_client_id and gpudr:azure_tenant_id "
        f"are not set on stack {here}. They name the federated reader identity that the "
        f"primary's stack {primary} creates (output transfer_credentials). Once {primary} is "
        f"deployed, run: {copy('azure_sts_client_id')} && {copy('azure_tenant_id')} && "
        f"pulumi up -s {here}"
    )


class ScheduledTransfer(pulumi.ComponentResource):
    job_names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: ScheduledTransferArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:storage:ScheduledTransfer", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        check_onprem_inbound(list(args.transfers), args.onprem)
        for t in args.transfers:
            if t.source_cloud == "onprem":
                if args.agent_pool is None:
                    raise ValueError(
                        f"inbound transfer from {t.source_site}: no agent pool to read it through"
                    )
                continue
            if t.service != "sts" or t.source_cloud not in ("aws", "gcp", "azure"):
                raise ValueError(
                    f"inbound transfer from {t.source_site}: {t.service} from {t.source_cloud} "
                    "is not supported into Cloud Storage; only sts from aws, gcp or azure is"
                    " (and sts-agent from onprem)"
                )
            # Fail here, before anything is declared, without what names the source.
            if t.source_cloud == "aws":
                role_arn(t)
            if t.source_cloud == "azure" and not t.source_storage_account:
                raise ValueError(
                    f"inbound transfer from {t.source_site} ({t.source_bucket}): "
                    "source_storage_account is not set, so the Azure container cannot be "
                    "named; regenerate the stack with `gpudr generate`"
                )

        grants: list[pulumi.Resource] = [args.key_grant, *args.agent_grants]
        grants += grant_bucket_roles(
            f"{name}-sts",
            bucket=args.sink_bucket,
            roles=SINK_ROLES,
            member=args.agent_member,
            opts=child,
        )
        jobs = []
        for t in args.transfers:
            azure = azure_source(t, args.credentials) if t.source_cloud == "azure" else None
            if t.source_cloud == "azure" and azure is None:
                # A job without a sign-in would fail on every run; the sink's grants above stay
                # declared, so the next `pulumi up` only adds the job.
                pulumi.log.warn(missing_azure_identity(t, args.system, args.site), resource=self)
                continue
            onprem: dict[str, Any] = (
                job_source(t, args.onprem, args.agent_pool)
                if t.source_cloud == "onprem" and args.onprem and args.agent_pool is not None
                else {}
            )
            jobs.append(
                gcp.storage.TransferJob(
                    f"{name}-from-{t.source_site}",
                    project=args.project,
                    description=pulumi.Output.from_input(args.sink_bucket).apply(_Describe(t)),
                    transfer_spec=gcp.storage.TransferJobTransferSpecArgs(
                        **onprem,
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
                        azure_blob_storage_data_source=azure,
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
                    opts=pulumi.ResourceOptions(
                        parent=self,
                        depends_on=grants,
                        ignore_changes=["status"] if args.hold_schedules else [],
                    ),
                )
            )
        self.job_names = pulumi.Output.all(*[j.name for j in jobs])
        self.register_outputs({"job_names": self.job_names})
