"""Who the stack lets write into, or read from, a copy: the grants that back a claim.

A dual-written class has no replication to inspect; what infrastructure can show is that the
writer is allowed to write this copy. The source of a scheduled pull has no job in its stack
(the DR site runs it); what its stack can show is that the puller may read it. The stack that
owns a copy declares that grant (the roles and actions are gpudr.contract.grants'): an IAM
policy allowing the action on the bucket's objects, a bucket IAM member with a Cloud Storage
role, or an Azure role assignment scoped to the storage account. A helper, not a policy.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource

from gpudr.contract import grants

from .common import (
    AZ_ROLE_ASSIGNMENT,
    AZ_STORAGE_ACCOUNT,
    GCS_BUCKET,
    GCS_IAM_BINDING,
    GCS_IAM_MEMBER,
    IAM_POLICY,
    IAM_ROLE_POLICY,
    S3_BUCKET,
    Stack,
    items,
    json_document,
    kind,
    links_to,
    same,
)


@dataclass(frozen=True)
class Access:
    """What counts as a grant of one kind of access, per cloud."""

    s3_actions: frozenset[str]  # lower case: IAM compares actions case-insensitively
    gcs_roles: tuple[str, ...]
    azure_role_ids: Collection[str]


WRITE = Access(
    frozenset(a.lower() for a in grants.S3_WRITE_ACTIONS),
    grants.GCS_WRITE_ROLES,
    grants.AZURE_BLOB_WRITE_ROLE_IDS,
)
READ = Access(
    frozenset(a.lower() for a in grants.S3_READ_ACTIONS),
    grants.GCS_READ_ROLES,
    grants.AZURE_BLOB_READ_ROLE_IDS,
)


def _allows(statement: Any, objects_arn: str, access: Access) -> bool:
    if not isinstance(statement, Mapping) or not same(statement.get("Effect"), "Allow"):
        return False
    actions = {str(a).lower() for a in items(statement.get("Action"))}
    resources = [str(r) for r in items(statement.get("Resource"))]
    return bool(actions & access.s3_actions) and objects_arn in resources


def _s3(stack: Stack, bucket: PolicyResource, access: Access) -> list[PolicyResource]:
    name = bucket.props.get("bucket")
    if not isinstance(name, str) or not name:
        return []
    objects_arn = grants.s3_objects_arn(name)
    out = []
    for policy in stack.of_type(IAM_POLICY, IAM_ROLE_POLICY):
        document = json_document(policy.props.get("policy"))
        statements = items(document.get("Statement")) if document else []
        if any(_allows(s, objects_arn, access) for s in statements):
            out.append(policy)
    return out


def _gcs(stack: Stack, bucket: PolicyResource, access: Access) -> list[PolicyResource]:
    return [
        grant
        for grant in stack.of_type(GCS_IAM_MEMBER, GCS_IAM_BINDING)
        if grant.props.get("role") in access.gcs_roles
        and links_to(grant, "bucket", bucket, ("name", "id"))
    ]


def _azure(stack: Stack, account: PolicyResource, access: Access) -> list[PolicyResource]:
    name = account.props.get("accountName")
    out = []
    for assignment in stack.of_type(AZ_ROLE_ASSIGNMENT):
        role = assignment.props.get("roleDefinitionId")
        if not isinstance(role, str) or grants.azure_role_guid(role) not in access.azure_role_ids:
            continue
        scope = assignment.props.get("scope")
        by_id = (
            isinstance(scope, str)
            and isinstance(name, str)
            and bool(name)
            and scope.rstrip("/").lower().endswith(f"/storageaccounts/{name.lower()}")
        )
        if by_id or links_to(assignment, "scope", account, ("id",)):
            out.append(assignment)
    return out


def _grants(stack: Stack, bucket: PolicyResource, access: Access) -> list[PolicyResource]:
    if kind(bucket) == S3_BUCKET:
        return _s3(stack, bucket, access)
    if kind(bucket) == GCS_BUCKET:
        return _gcs(stack, bucket, access)
    if kind(bucket) == AZ_STORAGE_ACCOUNT:
        return _azure(stack, bucket, access)
    return []


def write_grants(stack: Stack, bucket: PolicyResource) -> list[PolicyResource]:
    """The stack's grants that let some identity write objects into this bucket or account."""
    return _grants(stack, bucket, WRITE)


def read_grants(stack: Stack, bucket: PolicyResource) -> list[PolicyResource]:
    """The stack's grants that let some identity read objects of this bucket or account."""
    return _grants(stack, bucket, READ)
