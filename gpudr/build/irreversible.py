"""The settings a `pulumi up` of the plan's stacks makes that nobody can undo, or not for a long
time: each with what it is, where, for how long, and how a trial avoids it. The plan report and
every runbook list them (`gpudr plan`, runbooks/), so that a first deployment is never a
year-long commitment by surprise.

They are read from the site configurations the stacks are generated from (`build_site_configs`),
so the list names exactly what the components will declare.

Vendor facts (docs/sizing.md, "Irreversible settings"):
- S3 Object Lock: once enabled on a bucket it cannot be disabled; a COMPLIANCE retention cannot
  be shortened or removed by anyone, root included; GOVERNANCE is lifted by a principal granted
  s3:BypassGovernanceRetention (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lock.html).
- Cloud Storage Bucket Lock: a locked retention policy can never be removed or shortened, and the
  bucket cannot be deleted until every object has met it; an unlocked policy can be removed
  (https://cloud.google.com/storage/docs/bucket-lock).
- Azure version-level immutability: support is set at account creation for good; a locked
  policy cannot be shortened or deleted, and the account cannot be deleted while a version is
  under one; unlocked policies can be shortened or deleted
  (https://learn.microsoft.com/azure/storage/blobs/immutable-version-level-worm-policies).
- Azure Key Vault purge protection cannot be turned off, and a deleted vault or key cannot be
  purged before its soft-delete retention ends
  (https://learn.microsoft.com/azure/key-vault/general/soft-delete-overview).
- Cloud KMS key rings and keys cannot be deleted (https://cloud.google.com/kms/docs/resource-hierarchy).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudr.build.stackconfig import build_site_configs, stack_name
from gpudr.contract.site import KEY_VAULT_SOFT_DELETE_DAYS, BucketConfig, SiteConfig
from gpudr.core.design import Design
from gpudr.core.enums import Cloud

TRIAL_SWITCH = "data.weights.lock: governance"
APPROVAL = "the pack config's immutable-weights approved_trials naming the stack"


@dataclass(frozen=True)
class Irreversible:
    """One setting a deployment cannot undo (or not soon)."""

    site: str
    stack: str
    what: str  # the setting
    where: str  # the resource that holds it
    lasts: str  # for how long it binds, and whom
    trial: str  # how a trial deployment avoids it, or why it cannot

    def to_dict(self) -> dict[str, str]:
        return {
            "site": self.site,
            "stack": self.stack,
            "what": self.what,
            "where": self.where,
            "lasts": self.lasts,
            "trial": self.trial,
        }


def irreversible_settings(design: Design, sites: tuple[str, ...] = ()) -> tuple[Irreversible, ...]:
    """Every irreversible setting of the plan's stacks (of `sites` only, when given), in plan
    order: the weights locks, then each site's keys."""
    plan = design.plan
    configs = build_site_configs(design)
    out: list[Irreversible] = []
    for site in plan.sites.values():
        if sites and site.name not in sites:
            continue
        cfg, stack = configs[site.name], stack_name(plan, site)
        for bucket in cfg.buckets:
            if bucket.object_lock_days is not None:
                what, where, lasts, trial = _lock(cfg, bucket)
                out.append(Irreversible(site.name, stack, what, where, lasts, trial))
        key = _key(cfg)
        if key is not None:
            out.append(Irreversible(site.name, stack, *key))
    return tuple(out)


def _lock(cfg: SiteConfig, b: BucketConfig) -> tuple[str, str, str, str]:
    """(what, where, for how long, in a trial) of a write-once weights copy."""
    days = f"{b.object_lock_days} days"
    if cfg.cloud == Cloud.AWS:
        return _s3_lock(b, days)
    if cfg.cloud == Cloud.GCP:
        return _gcs_lock(b, days)
    return _azure_lock(b, days)


def _s3_lock(b: BucketConfig, days: str) -> tuple[str, str, str, str]:
    where = f"S3 bucket {b.name}"
    if b.trial_lock:
        return (
            f"S3 Object Lock enabled, GOVERNANCE mode, default retention {days} (a trial)",
            where,
            "object lock stays enabled for the bucket's life; a principal granted "
            "s3:BypassGovernanceRetention can delete the versions, then the bucket",
            "this is the trial setting: delete versions with --bypass-governance-retention, "
            "then the bucket",
        )
    return (
        f"S3 Object Lock, COMPLIANCE mode, default retention {days}",
        where,
        f"every weights version: {days} from its write, for everyone, root included; the "
        "bucket: until its newest version's retention ends; object lock: the bucket's life",
        f"{TRIAL_SWITCH} (GOVERNANCE mode, liftable), with {APPROVAL}",
    )


def _gcs_lock(b: BucketConfig, days: str) -> tuple[str, str, str, str]:
    where = f"Cloud Storage bucket {b.name}"
    if b.trial_lock:
        return (
            f"retention policy of {days}, unlocked (a trial)",
            where,
            "objects cannot be deleted before their retention ends while the policy stands; "
            "anyone with storage.buckets.update can remove it",
            f"this is the trial setting: `gcloud storage buckets update gs://{b.name} "
            "--clear-retention-period`, then delete the bucket",
        )
    return (
        f"Bucket Lock: a locked retention policy of {days}",
        where,
        f"the policy for good (it can only grow); every object: {days} from its creation; "
        "the bucket: until every object has met it",
        f"{TRIAL_SWITCH} (the policy unlocked, removable), with {APPROVAL}",
    )


def _azure_lock(b: BucketConfig, days: str) -> tuple[str, str, str, str]:
    where = f"storage account {b.storage_account}"
    if b.trial_lock:
        return (
            f"version-level immutability, {days} per blob version, unlocked (a trial)",
            where,
            "immutability support stays enabled for the account's life; the unlocked policies "
            "can be shortened or deleted, and the account deleted once empty; gpudr refuses "
            "gpudr:lock_weights on it",
            "this is the trial setting: never set gpudr:lock_weights on the stack",
        )
    return (
        f"version-level immutability, {days} per blob version; locked by `pulumi config set "
        "gpudr:lock_weights true`",
        where,
        "immutability support: the account's life (set at creation); once locked: every new "
        f"version {days} from its creation, the policy only growing, and the account "
        "undeletable while a version is held",
        f"do not set gpudr:lock_weights; {TRIAL_SWITCH} makes gpudr refuse it",
    )


def _key(cfg: SiteConfig) -> tuple[str, str, str, str] | None:
    """(what, where, for how long, in a trial) of the site's key store, where the cloud makes
    deleting it a long or permanent affair."""
    if cfg.cloud == Cloud.AZURE and cfg.key_vault:
        days = KEY_VAULT_SOFT_DELETE_DAYS
        return (
            f"Key Vault purge protection, {days}-day soft delete",
            f"key vault {cfg.key_vault}",
            "purge protection: the vault's life; a deleted vault or key stays recoverable, "
            f"cannot be purged, and keeps its name for {days} days",
            "unavoidable (the deletion-protection policy requires it): a trial redeployed "
            f"under the same plan and site names within {days} days must first recover the "
            f"vault (`az keyvault recover --name {cfg.key_vault}`)",
        )
    if cfg.cloud == Cloud.GCP and cfg.key_ring:
        return (
            "Cloud KMS key rings and their `data` keys",
            f"key rings {cfg.key_ring}-<location> in project {cfg.project}",
            "for good: key rings and keys cannot be deleted, only their key versions destroyed",
            "unavoidable: deploy a trial in a project of its own; a later stack with the same "
            "plan and site names in this project must adopt them (`pulumi import`)",
        )
    return None
