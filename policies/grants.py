"""Who the stack lets write into a copy: the grants that back a `dual-write` claim.

A dual-written class has no replication to inspect; what infrastructure can show is that the
writer is allowed to write this copy. The stack that owns a copy declares that grant (the roles
and actions are gpudr.contract.grants'): an IAM policy allowing `s3:PutObject` on the bucket's
objects, a bucket IAM member with a Cloud Storage write role, or an Azure role assignment of a
blob-writing role scoped to the storage account. Not a helper of one policy: not a policy.
"""

from __future__ import annotations

from collections.abc import Mapping
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

_WRITE_ACTIONS = {a.lower() for a in grants.S3_WRITE_ACTIONS}


def _allows_s3_write(statement: Any, objects_arn: str) -> bool:
    if not isinstance(statement, Mapping) or not same(statement.get("Effect"), "Allow"):
        return False
    actions = {str(a).lower() for a in items(statement.get("Action"))}
    resources = [str(r) for r in items(statement.get("Resource"))]
    return bool(actions & _WRITE_ACTIONS) and objects_arn in resources


def _s3(stack: Stack, bucket: PolicyResource) -> list[PolicyResource]:
    name = bucket.props.get("bucket")
    if not isinstance(name, str) or not name:
        return []
    objects_arn = grants.s3_objects_arn(name)
    out = []
    for policy in stack.of_type(IAM_POLICY, IAM_ROLE_POLICY):
        document = json_document(policy.props.get("policy"))
        statements = items(document.get("Statement")) if document else []
        if any(_allows_s3_write(s, objects_arn) for s in statements):
            out.append(policy)
    return out


def _gcs(stack: Stack, bucket: PolicyResource) -> list[PolicyResource]:
    return [
        grant
        for grant in stack.of_type(GCS_IAM_MEMBER, GCS_IAM_BINDING)
        if grant.props.get("role") in grants.GCS_WRITE_ROLES
        and links_to(grant, "bucket", bucket, ("name", "id"))
    ]


def _azure(stack: Stack, account: PolicyResource) -> list[PolicyResource]:
    name = account.props.get("accountName")
    out = []
    for assignment in stack.of_type(AZ_ROLE_ASSIGNMENT):
        role = assignment.props.get("roleDefinitionId")
        if not isinstance(role, str) or grants.azure_role_guid(role) not in (
            grants.AZURE_BLOB_WRITE_ROLE_IDS
        ):
            continue
        scope = assignment.props.get("scope")
        by_id = isinstance(scope, str) and isinstance(name, str) and bool(name)
        if links_to(assignment, "scope", account, ("id",)) or (
            by_id and scope.rstrip("/").lower().endswith(f"/storageaccounts/{name.lower()}")
        ):
            out.append(assignment)
    return out


def write_grants(stack: Stack, bucket: PolicyResource) -> list[PolicyResource]:
    """The stack's grants that let some identity write objects into this bucket or account."""
    if kind(bucket) == S3_BUCKET:
        return _s3(stack, bucket)
    if kind(bucket) == GCS_BUCKET:
        return _gcs(stack, bucket)
    if kind(bucket) == AZ_STORAGE_ACCOUNT:
        return _azure(stack, bucket)
    return []
