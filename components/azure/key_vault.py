"""A site's customer-managed keys on Azure: a premium Key Vault (HSM-backed keys) with purge
protection; a rotating RSA-HSM data key, with the user-assigned identity every data storage
account uses to wrap and unwrap its account key with it; and, where the site runs AKS clusters,
a disk encryption set that encrypts the nodes' OS and data disks with the same data key, and a
second key that encrypts the clusters' Kubernetes secrets (the AKS KMS plugin).

The vault and the keys are protected: deleting either makes every blob encrypted with the key
unreadable, replicas included (and a cluster whose secrets or disks it encrypts unusable). Purge
protection keeps a deleted vault or key recoverable for the whole soft-delete window, even
against its owner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, compute, keyvault, managedidentity

from components.azure.arm import (
    KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER,
    assignment_name,
    role_definition_id,
)

KEY_NAME = "data"
# The Kubernetes secrets key. A key of its own: the AKS KMS plugin encrypts and decrypts with it
# (RSA-OAEP-256), and the data key allows only wrapKey/unwrapKey. Key Vault keeps a key's
# operations as created (ARM creates a key once and never updates it), so the data key cannot be
# widened in place; and a key per purpose keeps the data key's operations narrow.
KMS_KEY_NAME = "k8s-secrets"

# The vault's firewall. Not default-deny, deliberately: the AKS KMS plugin reaches the vault from
# the AKS control plane, whose addresses are neither published nor in the site's network, and
# Microsoft documents that KMS with a public key vault does not work behind the vault firewall
# ("allow public access from specific virtual networks and IP addresses" blocks it) and that a
# private key vault needs API Server VNet Integration and a private endpoint (paid, not built
# here). AKS is not a trusted service that `bypass: AzureServices` admits (the trusted list names
# Azure Storage and Azure Disk Storage with a disk encryption set, not AKS). So the vault stays
# reachable over its public endpoint, where every data-plane call still needs an Entra ID token
# and an RBAC grant: the storage and disk identities may only wrap/unwrap with the data key, the
# clusters' identities only encrypt/decrypt with the secrets key. With no KMS in a site, Deny
# with this bypass would keep storage and disk encryption working: both sign in through the
# trusted-service path with their managed identities.
VAULT_DEFAULT_ACTION = keyvault.NetworkRuleAction.ALLOW


@dataclass(frozen=True)
class AzureDataKeyArgs:
    resource_group_name: pulumi.Input[str]
    location: str
    vault_name: str
    identity_name: str
    tenant_id: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    tags: dict[str, str]
    # The site runs AKS clusters: declare the disk encryption set and the secrets key for them.
    clusters: bool = False


@dataclass(frozen=True)
class ClusterKeys:
    """What a site's AKS clusters encrypt with: their Kubernetes secrets (KMS) and their nodes'
    disks (the disk encryption set)."""

    vault_id: pulumi.Output[str]
    # The secrets key, versioned (AKS KMS names one key version), and its ARM id (a grant's scope).
    kms_key_id: pulumi.Output[str]
    kms_key_resource_id: pulumi.Output[str]
    disk_encryption_set_id: pulumi.Output[str]


class AzureDataKey(pulumi.ComponentResource):
    key_uri: pulumi.Output[str]
    key_name: pulumi.Output[str]
    vault_uri: pulumi.Output[str]
    vault_id: pulumi.Output[str]
    identity_id: pulumi.Output[str]
    # The identity's grant on the vault: storage accounts wait for it, or their creation with
    # a customer-managed key fails on access to the key.
    storage_access: authorization.RoleAssignment
    # None when the site runs no AKS cluster.
    cluster_keys: ClusterKeys | None

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
                soft_delete_retention_in_days=90,
                enable_rbac_authorization=True,
                network_acls=_network_acls(),
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
            properties=_key_properties(DATA_KEY_OPS),
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
        self.cluster_keys = (
            ClusterKeys(
                vault_id=vault.id,
                **self._kms_key(name, args, vault),
                disk_encryption_set_id=self._disk_encryption_set(name, args, vault, key).id,
            )
            if args.clusters
            else None
        )
        self.register_outputs(
            {
                "key_uri": self.key_uri,
                "vault_uri": self.vault_uri,
                "identity_id": self.identity_id,
            }
        )

    def _kms_key(
        self, name: str, args: AzureDataKeyArgs, vault: keyvault.Vault
    ) -> dict[str, pulumi.Output[str]]:
        """The Kubernetes secrets key: encrypt and decrypt only, protected like the data key
        (AKS cannot recover a cluster whose KMS key is deleted)."""
        key = keyvault.Key(
            f"{name}-kms-key",
            key_name=KMS_KEY_NAME,
            vault_name=vault.name,
            resource_group_name=args.resource_group_name,
            properties=_key_properties(KMS_KEY_OPS),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        # AKS KMS names one key version. Rotation (every 90 days) makes a new version; the stack
        # moves the clusters to it on the next `pulumi up --refresh`, and AKS keeps decrypting
        # with the old one, which stays enabled until it expires two years after its creation.
        return {"kms_key_id": key.key_uri_with_version, "kms_key_resource_id": key.id}

    def _disk_encryption_set(
        self, name: str, args: AzureDataKeyArgs, vault: keyvault.Vault, key: keyvault.Key
    ) -> compute.DiskEncryptionSet:
        """The AKS nodes' OS and data disks, encrypted with the data key by a disk encryption set
        that signs in to the vault as an identity of its own, granted on the data key alone."""
        identity_name = f"{args.vault_name}-disks"
        identity = managedidentity.UserAssignedIdentity(
            f"{name}-disk-identity",
            resource_name_=identity_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            tags=args.tags,
            # The disks reach their key only as this identity, as the accounts do as theirs.
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        # get, wrapKey and unwrapKey (what a disk encryption set needs), on the data key only.
        grant = authorization.RoleAssignment(
            f"{name}-disk-crypto",
            role_assignment_name=assignment_name(
                args.vault_name, KEY_NAME, identity_name, KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER
            ),
            scope=key.id,
            role_definition_id=role_definition_id(
                args.subscription_id, KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER
            ),
            principal_id=identity.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return compute.DiskEncryptionSet(
            f"{name}-disk-encryption-set",
            disk_encryption_set_name=identity_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            identity=compute.EncryptionSetIdentityArgs(
                type=compute.DiskEncryptionSetIdentityType.USER_ASSIGNED,
                user_assigned_identities=[identity.id],
            ),
            # Platform encryption underneath the customer key, as the storage accounts have
            # (require_infrastructure_encryption).
            encryption_type=compute.DiskEncryptionSetType.ENCRYPTION_AT_REST_WITH_PLATFORM_AND_CUSTOMER_KEYS,
            # Azure asks for a versioned key URL and then follows the key's rotations itself.
            active_key=compute.KeyForDiskEncryptionSetArgs(
                key_url=key.key_uri_with_version,
                source_vault=compute.SourceVaultArgs(id=vault.id),
            ),
            rotation_to_latest_key_version_enabled=True,
            tags=args.tags,
            # Deleting it leaves every disk it encrypts unreadable.
            opts=pulumi.ResourceOptions(parent=self, protect=True, depends_on=[grant]),
        )


# Storage accounts and the disk encryption set only wrap and unwrap their own keys with the data
# key; the AKS KMS plugin encrypts and decrypts with the secrets key.
DATA_KEY_OPS = (keyvault.JsonWebKeyOperation.WRAP_KEY, keyvault.JsonWebKeyOperation.UNWRAP_KEY)
KMS_KEY_OPS = (keyvault.JsonWebKeyOperation.ENCRYPT, keyvault.JsonWebKeyOperation.DECRYPT)


def _network_acls() -> keyvault.NetworkRuleSetArgs:
    """The vault's firewall: see VAULT_DEFAULT_ACTION for why it is not default-deny. Trusted
    services (Azure Storage, Azure Disk Storage) bypass it whatever the default."""
    return keyvault.NetworkRuleSetArgs(
        default_action=VAULT_DEFAULT_ACTION,
        bypass=keyvault.NetworkRuleBypassOptions.AZURE_SERVICES,
        ip_rules=[],
        virtual_network_rules=[],
    )


def _key_properties(ops: Sequence[keyvault.JsonWebKeyOperation]) -> keyvault.KeyPropertiesArgs:
    """RSA-HSM 3072 for `ops` only, rotated every 90 days, expiring after two years."""
    return keyvault.KeyPropertiesArgs(
        kty=keyvault.JsonWebKeyType.RS_A_HSM,
        key_size=3072,
        key_ops=list(ops),
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
