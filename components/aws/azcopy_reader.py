"""The AWS primary's side of AWS -> Azure disaster recovery's data path: what an Azure DR site's
AzCopy jobs sign in as, declared by this (primary) stack, which owns what joins the clouds.

In Azure (through an azure-native provider, in the DR region): a resource group of its own and a
user-assigned managed identity in it, which the DR stack's jobs run as. In AWS: Entra ID as an
OpenID Connect provider, and per DR site a read-only role only that identity may assume. The
jobs exchange the identity's Entra token for the role's credentials (AssumeRoleWithWebIdentity):
no access key exists to leak or rotate. The identity's ids leave as `transfer_credentials` and
reach the DR stack's own config through `pulumi config set`: it never reads this stack's state.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
from pulumi_azure_native import managedidentity, resources

from components.aws.federation import federated_read_role, federated_trust
from gpudr.contract.azcopy_job import ENTRA_ISSUER, TOKEN_EXCHANGE_AUDIENCE
from gpudr.contract.site import AzcopyReader
from gpudr.core.enums import AWS_MAX_SESSION_S


def entra_issuer(tenant_id: pulumi.Input[str]) -> pulumi.Output[str]:
    """The `iss` of the identity's Entra tokens, which the OIDC provider is registered as."""
    return pulumi.Output.from_input(tenant_id).apply(lambda t: ENTRA_ISSUER.format(tenant=t))


def entra_provider(
    name: str, tenant_id: pulumi.Input[str], tags: dict[str, str], parent: pulumi.Resource
) -> aws.iam.OpenIdConnectProvider:
    """Entra ID (the tenant's v1 token issuer) as an identity provider of this account, for
    tokens issued to the token-exchange audience only. One per stack: IAM holds one provider per
    URL, and every Azure DR site of this primary is in the same tenant (the stack's provider).
    No thumbprint: IAM validates the issuer's certificate against its own trusted CAs."""
    return aws.iam.OpenIdConnectProvider(
        name,
        url=entra_issuer(tenant_id),
        client_id_lists=[TOKEN_EXCHANGE_AUDIENCE],
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )


@dataclass(frozen=True)
class AzcopyReadRoleArgs:
    reader: AzcopyReader
    provider_arn: pulumi.Input[str]  # entra_provider's
    tenant_id: pulumi.Input[str]
    key_arn: pulumi.Input[str]
    tags: dict[str, str]


class AzcopyReadRole(pulumi.ComponentResource):
    """One Azure DR site's reader: the identity (in the DR region) and the role it may assume,
    read-only on the DR site's source buckets and their key, for sessions of up to 12 h (one
    AzCopy run must finish within one: its presigned S3 URLs die with the session)."""

    identity_id: pulumi.Output[str]
    client_id: pulumi.Output[str]
    principal_id: pulumi.Output[str]
    tenant_id: pulumi.Output[str]
    role_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: AzcopyReadRoleArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:AzcopyReadRole", name, None, opts)
        reader = args.reader
        child = pulumi.ResourceOptions(parent=self)
        # The identity's own group, apart from the DR stack's: each stack owns its resources.
        group = resources.ResourceGroup(
            f"{name}-rg",
            resource_group_name=reader.resource_group,
            location=reader.dr_region,
            tags=args.tags,
            opts=child,
        )
        identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_name_=reader.identity_name,
            resource_group_name=group.name,
            location=reader.dr_region,
            tags=args.tags,
            opts=child,
        )
        issuer = entra_issuer(args.tenant_id).apply(lambda url: url.removeprefix("https://"))
        # Only this identity's tokens (its object id is the token's subject), and only those
        # issued for the exchange audience: no other identity of the tenant, no other token.
        trust = pulumi.Output.all(args.provider_arn, issuer, identity.principal_id).apply(
            lambda a: federated_trust(
                str(a[0]), {f"{a[1]}:sub": str(a[2]), f"{a[1]}:aud": TOKEN_EXCHANGE_AUDIENCE}
            )
        )
        role = federated_read_role(
            name,
            role_name=reader.role_name,
            description=f"gpudr: AzCopy jobs at the Azure DR site {reader.dr_site} read these "
            "buckets",
            trust=trust,
            buckets=reader.buckets,
            key_arn=args.key_arn,
            tags=args.tags,
            parent=self,
            max_session_s=AWS_MAX_SESSION_S,
        )
        self.identity_id = identity.id
        self.client_id = identity.client_id
        self.principal_id = identity.principal_id
        self.tenant_id = identity.tenant_id
        self.role_arn = role.arn
        self.register_outputs(
            {
                "identity_id": self.identity_id,
                "client_id": self.client_id,
                "principal_id": self.principal_id,
                "tenant_id": self.tenant_id,
                "role_arn": self.role_arn,
            }
        )
