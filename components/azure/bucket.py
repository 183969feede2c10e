"""A data class at one Azure site: its own storage account (customer-managed key from the site's
Key Vault, TLS 1.2, HTTPS only, no public blobs, no shared keys; its network rules admit every
network until private endpoints exist: see `_network_rules`), versioning and change feed for
object replication, soft delete, one private container, lifecycle tiers, and for weights a
locked version-level immutability policy, and its blob access logs in the site's Log Analytics
workspace. One account per class because immutability and redundancy are account settings, and
weights need both without imposing them on checkpoints.

The account and its container are protected from deletion.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import storage

from components.azure.logs import blob_access_logs
from gpudr.contract.naming import AZURE_DATA_BUCKET_COMPONENT
from gpudr.contract.site import BucketConfig

# Lifecycle archive tiers as the plan names them (Azure access tiers).
ARCHIVE_TIERS = ("Cool", "Cold", "Archive")


@dataclass(frozen=True)
class AzureDataBucketArgs:
    config: BucketConfig
    resource_group_name: pulumi.Input[str]
    location: str
    identity_id: pulumi.Input[str]
    key_name: pulumi.Input[str]
    vault_uri: pulumi.Input[str]
    # The identity's grant on the key: the account is created with the key, so after it.
    key_access: pulumi.Resource
    tags: dict[str, str]
    # The site's Log Analytics workspace: the account's blob access logs go there.
    log_workspace_id: pulumi.Input[str]
    # Azure creates an account-level immutability policy only "Unlocked" (or "Disabled"), and
    # only an unlocked policy can become "Locked". See AzureSiteArgs.immutability_state.
    immutability_state: str = "Unlocked"


class AzureDataBucket(pulumi.ComponentResource):
    account_name: pulumi.Output[str]
    account_id: pulumi.Output[str]
    container_name: pulumi.Output[str]
    path: pulumi.Output[str]  # "<storage account>/<container>"
    # Object replication needs versioning and the change feed: a policy waits for this.
    blob_service: storage.BlobServiceProperties

    def __init__(
        self, name: str, args: AzureDataBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(AZURE_DATA_BUCKET_COMPONENT, name, None, opts)
        cfg = args.config
        if not cfg.storage_account or not cfg.sku:
            raise ValueError(
                f"bucket {cfg.data_class}: an Azure data class needs storage_account and sku "
                "in gpudr:site; regenerate the stack with `gpudr generate`"
            )
        account = self._account(name, args, sku=cfg.sku)
        # Versioning is what object replication, immutability and restores stand on. Object
        # replication needs versioning on both accounts and the change feed on the source; every
        # account gets both, so a DR account can replicate back once it has become the primary.
        blob_service = storage.BlobServiceProperties(
            f"{name}-blob-service",
            account_name=account.name,
            resource_group_name=args.resource_group_name,
            blob_services_name="default",
            is_versioning_enabled=True,
            change_feed=storage.ChangeFeedArgs(enabled=True),
            delete_retention_policy=storage.DeleteRetentionPolicyArgs(enabled=True, days=7),
            container_delete_retention_policy=storage.DeleteRetentionPolicyArgs(
                enabled=True, days=7
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        container = storage.BlobContainer(
            f"{name}-container",
            account_name=account.name,
            resource_group_name=args.resource_group_name,
            container_name=cfg.name,
            public_access=storage.PublicAccess.NONE,
            opts=pulumi.ResourceOptions(
                parent=self, protect=True, retain_on_delete=True, depends_on=[blob_service]
            ),
        )
        storage.ManagementPolicy(
            f"{name}-lifecycle",
            account_name=account.name,
            resource_group_name=args.resource_group_name,
            management_policy_name="default",
            policy=storage.ManagementPolicySchemaArgs(rules=lifecycle_rules(cfg)),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[blob_service]),
        )
        blob_access_logs(
            f"{name}-access-logs",
            blob_service_id=blob_service.id,
            workspace_id=args.log_workspace_id,
            parent=self,
        )
        self.account_name = account.name
        self.account_id = account.id
        self.container_name = container.name
        self.path = pulumi.Output.concat(account.name, "/", container.name)
        self.blob_service = blob_service
        self.register_outputs(
            {"account_name": self.account_name, "path": self.path, "account_id": self.account_id}
        )

    def _account(self, name: str, args: AzureDataBucketArgs, *, sku: str) -> storage.StorageAccount:
        cfg = args.config
        # Data-bearing: protect blocks `pulumi destroy` and replacement, retain_on_delete keeps
        # the account if it is ever removed from the program.
        return storage.StorageAccount(
            f"{name}-account",
            account_name=cfg.storage_account,
            resource_group_name=args.resource_group_name,
            location=args.location,
            kind=storage.Kind.STORAGE_V2,
            sku=storage.SkuArgs(name=sku),
            minimum_tls_version=storage.MinimumTlsVersion.TLS1_2,
            enable_https_traffic_only=True,
            allow_blob_public_access=False,
            # Entra ID only: no account keys or SAS signed with them.
            allow_shared_key_access=False,
            default_to_o_auth_authentication=True,
            # Replication stays inside this tenant. Object replication policies then name
            # both accounts by full resource id (see replication.py).
            allow_cross_tenant_replication=False,
            identity=storage.IdentityArgs(
                type=storage.IdentityType.USER_ASSIGNED, user_assigned_identities=[args.identity_id]
            ),
            encryption=_encryption(args),
            network_rule_set=_network_rules(),
            immutable_storage_with_versioning=_immutability(cfg, args.immutability_state),
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=True,
                retain_on_delete=True,
                depends_on=[args.key_access],
            ),
        )


def _encryption(args: AzureDataBucketArgs) -> storage.EncryptionArgs:
    return storage.EncryptionArgs(
        key_source=storage.KeySource.MICROSOFT_KEYVAULT,
        # No key_version: the account follows the key's rotation on its own.
        key_vault_properties=storage.KeyVaultPropertiesArgs(
            key_name=args.key_name, key_vault_uri=args.vault_uri
        ),
        encryption_identity=storage.EncryptionIdentityArgs(
            encryption_user_assigned_identity=args.identity_id
        ),
        # A second, platform-managed layer of AES-256 underneath (set at creation only).
        require_infrastructure_encryption=True,
        services=storage.EncryptionServicesArgs(
            blob=storage.EncryptionServiceArgs(enabled=True, key_type=storage.KeyType.ACCOUNT)
        ),
    )


def _network_rules() -> storage.NetworkRuleSetArgs:
    """The account's firewall (data plane only: ARM calls such as creating containers or
    replication policies are not filtered).

    Not deny-by-default yet, on any account: what DR itself needs would be refused. A dual
    writer at the other site writes this copy over the DR link, `gpudr drill` reads the DR copy
    from the operator's machine to compare checksums, and object replication behind a firewall
    is unverified here. Admitting them by network needs private endpoints over the DR link (a
    priced resource, issue 15's next part); until then the account admits every network and
    authentication guards it: shared keys are off, so only Entra ID tokens of identities granted
    on the account work. The policy pack's advisory storage-network-restricted reports it, and
    docs/security.md lists it as a deliberate exception with this reason.

    Google's Storage Transfer Service (an Azure -> GCP pair) would stay open even then: the
    narrowest rule that lets that pull in is Allow. Google publishes no Storage Transfer Service
    source ranges for an ip_rules entry, Google is not a trusted Microsoft service that `bypass`
    admits, and resource-instance rules name only Azure resources; the transfer jobs' federated
    identity may only read blobs in the accounts it is granted (cross_cloud.StsFederatedReader).
    Closing it means pushing from Azure instead (a copy inside the site's network) or opening it
    for the transfer window only."""
    return storage.NetworkRuleSetArgs(
        default_action=storage.DefaultAction.ALLOW,
        bypass=storage.Bypass.AZURE_SERVICES,
    )


def _immutability(cfg: BucketConfig, state: str) -> storage.ImmutableStorageAccountArgs | None:
    """Version-level WORM for weights: every blob version is immutable for object_lock_days
    from its creation. A locked account policy only lets the period grow: nobody, the account
    owner included, can shorten it or delete a version before it ends. A trial's
    (data.weights.lock: governance) is never locked: its owner can disable it and delete.

    Account level, not container level: a container-level policy
    (`storage.BlobContainerImmutabilityPolicy`) is locked by a separate POST action that this
    SDK does not expose, so through Pulumi it could only ever be unlocked, and an unlocked policy
    can be deleted."""
    if cfg.object_lock_days is None:
        return None
    if cfg.trial_lock and state == "Locked":
        # Locking is irreversible: a trial's accounts must stay deletable.
        raise ValueError(
            f"bucket {cfg.data_class}: the plan's weights lock is governance (a trial), but "
            "gpudr:lock_weights asks to lock its immutability, which cannot be undone; run "
            "`pulumi config rm gpudr:lock_weights`, or set data.weights.lock: compliance in the "
            "plan and regenerate the stack"
        )
    return storage.ImmutableStorageAccountArgs(
        enabled=True,
        immutability_policy=storage.AccountImmutabilityPolicyPropertiesArgs(
            immutability_period_since_creation_in_days=cfg.object_lock_days,
            state=state,
            allow_protected_append_writes=False,
        ),
    )


def lifecycle_rules(cfg: BucketConfig) -> list[storage.ManagementPolicyRuleArgs]:
    """The plan's lifecycle as Azure lifecycle management rules.

    Azure lifecycle rules are age-based only: there is no "keep the newest N versions" (S3's
    newer_noncurrent_versions). Previous versions are deleted noncurrent_days after the
    version was created, whatever their number; noncurrent_keep has no Azure equivalent, so the
    training job's own "delete beyond N after validating checksums" is the only count-based
    guard here. Current blobs are never deleted by age. Incomplete uploads need no rule:
    Azure discards uncommitted blocks after 7 days by itself."""
    lc = cfg.lifecycle
    block_blobs = storage.ManagementPolicyFilterArgs(blob_types=["blockBlob"])
    rules = [
        storage.ManagementPolicyRuleArgs(
            name="expire-previous-versions",
            enabled=True,
            type=storage.RuleType.LIFECYCLE,
            definition=storage.ManagementPolicyDefinitionArgs(
                filters=block_blobs,
                actions=storage.ManagementPolicyActionArgs(
                    version=storage.ManagementPolicyVersionArgs(
                        delete=storage.DateAfterCreationArgs(
                            days_after_creation_greater_than=lc.noncurrent_days
                        )
                    )
                ),
            ),
        )
    ]
    if lc.archive_after_days is not None and lc.archive_class is not None:
        rules.append(
            storage.ManagementPolicyRuleArgs(
                name="archive-older",
                enabled=True,
                type=storage.RuleType.LIFECYCLE,
                definition=storage.ManagementPolicyDefinitionArgs(
                    filters=block_blobs,
                    actions=storage.ManagementPolicyActionArgs(
                        base_blob=_tier_after(cfg, lc.archive_class, lc.archive_after_days)
                    ),
                ),
            )
        )
    return rules


def _tier_after(cfg: BucketConfig, tier: str, days: int) -> storage.ManagementPolicyBaseBlobArgs:
    after = storage.DateAfterModificationArgs(days_after_modification_greater_than=days)
    if tier == "Cool":
        return storage.ManagementPolicyBaseBlobArgs(tier_to_cool=after)
    if tier == "Cold":
        return storage.ManagementPolicyBaseBlobArgs(tier_to_cold=after)
    if tier == "Archive":
        # The archive tier exists only on LRS, GRS and RA-GRS accounts; object replication
        # also skips archived blobs.
        if "ZRS" in (cfg.sku or ""):
            raise ValueError(
                f"bucket {cfg.data_class}: archive tier Archive is not available on "
                f"{cfg.sku} accounts; use Cold"
            )
        return storage.ManagementPolicyBaseBlobArgs(tier_to_archive=after)
    raise ValueError(
        f'bucket {cfg.data_class}: lifecycle archive_class "{tier}" is not an Azure access '
        f"tier; use one of {', '.join(ARCHIVE_TIERS)}"
    )
