"""A site's customer-managed key on Azure: a premium Key Vault (HSM-backed keys) with purge
protection, a rotating RSA-HSM key, and the user-assigned identity every data storage account
uses to wrap and unwrap its account key with it.

The vault and the key are protected: deleting either makes every blob encrypted with the key
unreadable, replicas included. Purge protection keeps a deleted vault or key recoverable for the
whole soft-delete window, even against its owner.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, keyvault, managedidentity

from components.azure.arm import (
    KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER,
    assignment_name,
    role_definition_id,
)
from gpudr.contract.site import KEY_VAULT_SOFT_DELETE_DAYS

KEY_NAME = "data"


@dataclass(frozen=True)
class AzureDataKeyArgs:
    resource_group_name: pulumi.Input[str]
    location: str
    vault_name: str
    identity_name: str
    tenant_id: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    tags: dict[str, str]


class AzureDataKey(pulumi.ComponentResource):
    key_uri: pulumi.Output[str]
    key_name: pulumi.Output[str]
    vault_uri: pulumi.Output[str]
    vault_id: pulumi.Output[str]
    identity_id: pulumi.Output[str]
    # The identity's grant on the vault: storage accounts wait for it, or their creation with
    # a customer-managed key fails on access to the key.
    storage_access: authorization.RoleAssignment

    def __init__(
        self, name: str, args: AzureDataKeyArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:kms:AzureDataKey", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        identity = managedidentity.UserAssignedIdentity(
            f"{name}-storage-identity",
            resource_name_=args.identity_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            tags=args.tags,
            # Protected like the key: the storage accounts reach their key only as this
            # identity, so deleting it cuts them off from their own data.
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        # Premium: keys live in HSMs. RBAC authorization instead of access policies, so the
        # grant below is an ordinary, auditable role assignment.
        vault = keyvault.Vault(
            f"{name}-vault",
            vault_name=args.vault_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            properties=keyvault.VaultPropertiesArgs(
                tenant_id=args.tenant_id,
                sku=keyvault.SkuArgs(family=keyvault.SkuFamily.A, name=keyvault.SkuName.PREMIUM),
                enable_purge_protection=True,
                enable_soft_delete=True,
                soft_delete_retention_in_days=KEY_VAULT_SOFT_DELETE_DAYS,
                enable_rbac_authorization=True,
            ),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        # Storage encrypts with the key's latest version (no version pinned on the accounts),
        # so rotation takes effect on its own; the expiry forces a rotation to have happened.
        key = keyvault.Key(
            f"{name}-key",
            key_name=KEY_NAME,
            vault_name=vault.name,
            resource_group_name=args.resource_group_name,
            properties=_key_properties(),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        access = authorization.RoleAssignment(
            f"{name}-storage-crypto",
            role_assignment_name=assignment_name(
                args.vault_name, args.identity_name, KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER
            ),
            scope=vault.id,
            role_definition_id=role_definition_id(
                args.subscription_id, KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER
            ),
            principal_id=identity.principal_id,
            # Set so Azure does not look the new identity up in Entra ID, which can lag.
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            opts=child,
        )
        self.key_uri = key.key_uri
        self.key_name = key.name
        self.vault_uri = vault.properties.vault_uri
        self.vault_id = vault.id
        self.identity_id = identity.id
        self.storage_access = access
        self.register_outputs(
            {
                "key_uri": self.key_uri,
                "vault_uri": self.vault_uri,
                "identity_id": self.identity_id,
            }
        )


def _key_properties() -> keyvault.KeyPropertiesArgs:
    """RSA-HSM 3072 for wrap and unwrap only, rotated every 90 days, expiring after two years."""
    return keyvault.KeyPropertiesArgs(
        kty=keyvault.JsonWebKeyType.RS_A_HSM,
        key_size=3072,
        # Storage only wraps and unwraps its account key with this key.
        key_ops=[
            keyvault.JsonWebKeyOperation.WRAP_KEY,
            keyvault.JsonWebKeyOperation.UNWRAP_KEY,
        ],
        rotation_policy=keyvault.RotationPolicyArgs(
            attributes=keyvault.KeyRotationPolicyAttributesArgs(expiry_time="P2Y"),
            lifetime_actions=[
                keyvault.LifetimeActionArgs(
                    action=keyvault.ActionArgs(type=keyvault.KeyRotationPolicyActionType.ROTATE),
                    trigger=keyvault.TriggerArgs(time_after_create="P90D"),
                )
            ],
        ),
    )
