"""The writer of a dual-written data class at an Azure site: a user-assigned managed identity,
and its role assignment to write blobs in this site's copy (the class's storage account).

A dual-written class has no object replication: the writer (the model registry's publish job)
writes every copy itself before it reports success, so each copy's stack declares who may write
it. The assignment's scope is the account's id, an Output of the account, so it waits for the
account, and the policy pack finds it on the copy it covers (gpudr/contract/grants.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, managedidentity

from components.azure.arm import assignment_name, role_definition_id
from gpudr.contract.grants import STORAGE_BLOB_DATA_CONTRIBUTOR
from gpudr.contract.site import BucketConfig


@dataclass(frozen=True)
class DualWriterArgs:
    config: BucketConfig
    identity_name: str  # gpudr.contract.naming.writer_name
    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    account_id: pulumi.Input[str]  # this copy's storage account id, an Output of the account
    tags: dict[str, str]


def dual_writer(
    parent: pulumi.Resource, name: str, args: DualWriterArgs
) -> tuple[managedidentity.UserAssignedIdentity, authorization.RoleAssignment]:
    """The writer's identity (`name`) and its role assignment on this copy (`<name>-grant`),
    children of `parent`."""
    cfg = args.config
    child = pulumi.ResourceOptions(parent=parent)
    identity = managedidentity.UserAssignedIdentity(
        name,
        resource_name_=args.identity_name,
        resource_group_name=args.resource_group_name,
        location=args.location,
        tags=args.tags,
        opts=child,
    )
    # Blob data read, write and delete on this account only: no account keys, no control
    # plane. Azure has no create-only data role; the weights account's locked version-level
    # immutability still refuses every overwrite and delete of a published version.
    grant = authorization.RoleAssignment(
        f"{name}-grant",
        role_assignment_name=assignment_name(
            cfg.storage_account or cfg.name, args.identity_name, STORAGE_BLOB_DATA_CONTRIBUTOR
        ),
        scope=args.account_id,
        role_definition_id=role_definition_id(args.subscription_id, STORAGE_BLOB_DATA_CONTRIBUTOR),
        principal_id=identity.principal_id,
        # Set so Azure does not look the new identity up in Entra ID, which can lag.
        principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
        opts=child,
    )
    return identity, grant
