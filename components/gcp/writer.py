"""The writer of a dual-written data class at a GCP site: a service account, and its grant to
create objects in this site's copy.

A dual-written class has no replication: the writer (the model registry's publish job) writes
every copy itself before it reports success, so each copy's stack declares who may write it.
The grant names the bucket by its Output, so it waits for the bucket, and the policy pack finds
it on the copy it covers (gpudr/contract/grants.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.gcp.bucket import grant_bucket_roles
from gpudr.contract.grants import GCS_OBJECT_CREATOR, GCS_OBJECT_USER
from gpudr.contract.site import BucketConfig


@dataclass(frozen=True)
class DualWriterArgs:
    project: str
    site: str
    account_id: str  # gpudr.contract.naming.writer_account_id
    config: BucketConfig
    bucket: pulumi.Input[str]  # this copy's bucket name, an Output of the bucket


# The grant's name ends with its role's label.
ROLE_LABELS = {GCS_OBJECT_CREATOR: "object-creator", GCS_OBJECT_USER: "object-user"}


def writer_role(cfg: BucketConfig) -> str:
    """Create only for a locked class (weights): its objects are immutable under the locked
    retention policy, so the writer never overwrites, reads back or deletes, and a leaked
    writer credential cannot destroy a published model. A class without a lock is one whose
    writer also removes what it replaces (a checkpoint job keeping the last N), so it gets
    object read/write/delete, still without any bucket-level right."""
    return GCS_OBJECT_CREATOR if cfg.object_lock_days is not None else GCS_OBJECT_USER


def dual_writer(
    parent: pulumi.Resource, name: str, args: DualWriterArgs
) -> tuple[gcp.serviceaccount.Account, gcp.storage.BucketIAMMember]:
    """The writer's service account (`name`) and its grant on this copy (`<name>-<role>`),
    children of `parent`."""
    cfg = args.config
    child = pulumi.ResourceOptions(parent=parent)
    account = gcp.serviceaccount.Account(
        name,
        account_id=args.account_id,
        project=args.project,
        display_name=f"gpudr {cfg.data_class} writer at {args.site}",
        description=(
            f"The publish job writes {cfg.data_class} to {cfg.name} as this account: dual "
            "write, every copy written before the publish reports success (RPO 0)"
        ),
        opts=child,
    )
    role = writer_role(cfg)
    (grant,) = grant_bucket_roles(
        name,
        bucket=args.bucket,
        roles={ROLE_LABELS[role]: role},
        member=account.member,
        opts=child,
    )
    return account, grant
