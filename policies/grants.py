"""Who the stack lets write into, or read from, a copy: the grants that back a claim.

A dual-written class has no replication to inspect; what infrastructure can show is that the
writer is allowed to write this copy. The source of a scheduled pull has no job in its stack
(the DR site runs it); what its stack can show is that the puller may read it. The stack that
owns a copy declares that grant (the roles and actions are gpudr.contract.grants'): an IAM
policy allowing the action on the bucket's objects, a bucket IAM member with a Cloud Storage
role, or an Azure role assignment scoped to the storage account. A helper, not a policy.
"""

from __future__ import annotations

import re
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
    IAM_ATTACHMENTS,
    IAM_POLICY,
    IAM_ROLE_POLICY,
    S3_BUCKET,
    S3_POLICY,
    Stack,
    items,
    json_document,
    kind,
    links_to,
    same,
)

GUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# Who a Cloud Storage IAM member can name (not allUsers / allAuthenticatedUsers: no one in
# particular, and refused by no-public-access anyway).
GCP_PRINCIPALS = (
    "serviceAccount:",
    "user:",
    "group:",
    "domain:",
    "principal:",
    "principalSet:",
    "projectEditor:",
    "projectOwner:",
    "projectViewer:",
)
# The properties of an attachment that name who gets the policy.
PRINCIPAL_PROPS = ("role", "user", "group", "roles", "users", "groups")


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


def _matches(statement: Mapping[str, Any], objects_arn: str, access: Access) -> bool:
    """The statement names one of the access's actions (or `*`) on the objects (or `*`)."""
    actions = {str(a).lower() for a in items(statement.get("Action"))}
    resources = {str(r) for r in items(statement.get("Resource"))}
    return bool(actions & (access.s3_actions | {"*"})) and bool(resources & {objects_arn, "*"})


def _may_deny(statement: Mapping[str, Any], objects_arn: str, access: Access) -> bool:
    """A Deny that names the access, or whose Not* elements leave that open (fail closed)."""
    if not same(statement.get("Effect"), "Deny"):
        return False
    if any(statement.get(k) for k in ("NotAction", "NotResource", "NotPrincipal")):
        return True
    return _matches(statement, objects_arn, access)


def _allows(document: Mapping[str, Any], objects_arn: str, access: Access) -> bool:
    """An Allow of the access on the objects, and no Deny of it in the same document. A
    statement with a Condition does not count as a grant: it may never hold."""
    statements = [s for s in items(document.get("Statement")) if isinstance(s, Mapping)]
    if any(_may_deny(s, objects_arn, access) for s in statements):
        return False
    return any(
        same(s.get("Effect"), "Allow")
        and not s.get("Condition")
        and _matches(s, objects_arn, access)
        for s in statements
    )


def _reaches_an_identity(stack: Stack, policy: PolicyResource) -> bool:
    """An inline role policy on a named role, or a managed policy attached to something: a
    managed policy attached to nothing grants nobody anything."""
    if kind(policy) == IAM_ROLE_POLICY:
        return _names_principals(policy, "role")
    return any(
        links_to(attachment, "policyArn", policy, ("arn",))
        and _names_principals(attachment, *PRINCIPAL_PROPS)
        for attachment in stack.of_type(*IAM_ATTACHMENTS)
    )


def _names_principals(resource: PolicyResource, *props: str) -> bool:
    """The attachment (or inline policy) names a role, user or group, as a value or an Output."""
    return any(
        bool([v for v in items(resource.props.get(p)) if v])
        or bool(resource.property_dependencies.get(p))
        for p in props
    )


def _bucket_denies(stack: Stack, bucket: PolicyResource, access: Access) -> bool:
    """The bucket's own policy denies the access to everyone, with no condition."""
    objects_arn = grants.s3_objects_arn(str(bucket.props.get("bucket")))
    for policy in stack.linked(bucket, S3_POLICY, "bucket", ("bucket", "id")):
        document = json_document(policy.props.get("policy"))
        for statement in items(document.get("Statement")) if document else []:
            if (
                isinstance(statement, Mapping)
                and not statement.get("Condition")
                and _may_deny(statement, objects_arn, access)
            ):
                return True
    return False


def _s3(stack: Stack, bucket: PolicyResource, access: Access) -> list[PolicyResource]:
    name = bucket.props.get("bucket")
    if not isinstance(name, str) or not name:
        return []
    objects_arn = grants.s3_objects_arn(name)
    if _bucket_denies(stack, bucket, access):
        return []
    return [
        policy
        for policy in stack.of_type(IAM_POLICY, IAM_ROLE_POLICY)
        if (document := json_document(policy.props.get("policy"))) is not None
        and _allows(document, objects_arn, access)
        and _reaches_an_identity(stack, policy)
    ]


def _named_members(grant: PolicyResource) -> bool:
    """Who the grant names: at least one principal, and no condition that may never hold."""
    members = [grant.props.get("member"), *items(grant.props.get("members"))]
    named = [m for m in members if isinstance(m, str) and m.startswith(GCP_PRINCIPALS)]
    return bool(named) and not grant.props.get("condition")


def _gcs(stack: Stack, bucket: PolicyResource, access: Access) -> list[PolicyResource]:
    return [
        grant
        for grant in stack.of_type(GCS_IAM_MEMBER, GCS_IAM_BINDING)
        if grant.props.get("role") in access.gcs_roles
        and _named_members(grant)
        and links_to(grant, "bucket", bucket, ("name", "id"))
    ]


def _scope_is(assignment: PolicyResource, account: PolicyResource) -> bool:
    """The assignment's scope is this account: computed from it (a property dependency), or
    its full resource id, resource group included."""
    if assignment.property_dependencies.get("scope"):
        return links_to(assignment, "scope", account, ("id",))
    scope, name = assignment.props.get("scope"), account.props.get("accountName")
    group = account.props.get("resourceGroupName")
    if not all(isinstance(v, str) and v for v in (scope, name, group)):
        return False
    return bool(
        re.fullmatch(
            rf"/subscriptions/{GUID}/resourceGroups/{re.escape(str(group))}/providers/"
            rf"Microsoft\.Storage/storageAccounts/{re.escape(str(name))}/?",
            str(scope),
            re.IGNORECASE,
        )
    )


def _has_principal(assignment: PolicyResource) -> bool:
    """A principal computed in the stack (an identity's id) or a literal, non-nil object id."""
    if assignment.property_dependencies.get("principalId"):
        return True
    principal = assignment.props.get("principalId")
    return (
        isinstance(principal, str)
        and re.fullmatch(GUID, principal) is not None
        and principal.strip("0-") != ""
    )


def _azure(stack: Stack, account: PolicyResource, access: Access) -> list[PolicyResource]:
    out = []
    for assignment in stack.of_type(AZ_ROLE_ASSIGNMENT):
        role = assignment.props.get("roleDefinitionId")
        if not isinstance(role, str) or grants.azure_role_guid(role) not in access.azure_role_ids:
            continue
        if assignment.props.get("condition"):
            continue  # an ABAC condition may never hold
        if _has_principal(assignment) and _scope_is(assignment, account):
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
