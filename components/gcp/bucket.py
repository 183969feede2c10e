"""A data bucket for one data class at one site on Cloud Storage: CMEK with the site's key in
the bucket's location, uniform access, public access prevented, versioned (or, for weights, a
locked retention policy), lifecycle tiers, soft delete; protected from deletion.

A `dual-region` bucket is the replication itself: Cloud Storage keeps both regions' copies, and
turbo replication (`rpo=ASYNC_TURBO`) targets 15 minutes whatever the object size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from gpudr.contract.naming import DATA_BUCKET_COMPONENT
from gpudr.contract.site import BucketConfig

# Storage classes a lifecycle rule may move objects to (an S3 class such as GLACIER_IR is not one).
GCS_CLASSES = ("NEARLINE", "COLDLINE", "ARCHIVE", "STANDARD")
# Multi-regions: a bucket there is not a dual-region unless `data_locations` makes it one.
MULTI_REGIONS = ("US", "EU", "ASIA")
SOFT_DELETE_S = 7 * 86400


@dataclass(frozen=True)
class DataBucketArgs:
    config: BucketConfig
    project: str
    location: str  # the bucket's location as GCS reports it (upper case)
    key_id: pulumi.Input[str]  # CryptoKey id in the bucket's location
    # The Cloud Storage service agent's grant on that key: the bucket must wait for it.
    key_grant: pulumi.Resource
    labels: Mapping[str, str]


class DataBucket(pulumi.ComponentResource):
    bucket_name: pulumi.Output[str]
    bucket_url: pulumi.Output[str]

    def __init__(
        self, name: str, args: DataBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(DATA_BUCKET_COMPONENT, name, None, opts)
        cfg = args.config
        _check(cfg, args.location)
        locked = cfg.object_lock_days is not None

        # Data-bearing: protect blocks `pulumi destroy` and replacement, retain_on_delete keeps
        # the bucket if it is ever removed from the program, and force_destroy stays off so
        # a non-empty bucket cannot be deleted with its objects.
        bucket = gcp.storage.Bucket(
            f"{name}-bucket",
            name=cfg.name,
            project=args.project,
            location=args.location,
            # A custom dual-region: the multi-region code plus the two regions holding copies.
            custom_placement_config=gcp.storage.BucketCustomPlacementConfigArgs(
                data_locations=[d.upper() for d in cfg.data_locations]
            )
            if cfg.data_locations
            else None,
            # Turbo replication: the 15-minute RPO target; without it a dual-region's
            # replication has no time guarantee (99.9% within an hour is only a target).
            rpo="ASYNC_TURBO" if cfg.turbo else None,
            encryption=gcp.storage.BucketEncryptionArgs(default_kms_key_name=args.key_id),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            # GCS refuses Object Versioning on a bucket with a retention policy, so a locked
            # bucket is not versioned: the locked policy is what makes weights immutable (no
            # object can be deleted or overwritten before its retention ends, by anyone).
            versioning=gcp.storage.BucketVersioningArgs(enabled=not locked),
            retention_policy=gcp.storage.BucketRetentionPolicyArgs(
                # A string in this provider, in seconds. Locking (Bucket Lock) is irreversible:
                # the period can then only grow, and the bucket cannot be deleted while objects
                # are held. A trial (data.weights.lock: governance) holds objects just as long
                # under an unlocked policy, which its owner can remove to delete the bucket.
                retention_period=str((cfg.object_lock_days or 0) * 86400),
                is_locked=not cfg.trial_lock,
            )
            if locked
            else None,
            lifecycle_rules=_lifecycle_rules(cfg, versioned=not locked),
            # Deleted or overwritten objects stay restorable for 7 days, versioned or not.
            soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                retention_duration_seconds=SOFT_DELETE_S
            ),
            force_destroy=False,
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(
                parent=self, protect=True, retain_on_delete=True, depends_on=[args.key_grant]
            ),
        )
        self.bucket_name = bucket.name
        self.bucket_url = bucket.url
        self.register_outputs({"bucket_name": self.bucket_name, "bucket_url": self.bucket_url})


def grant_bucket_roles(
    name: str,
    *,
    bucket: pulumi.Input[str],
    roles: Mapping[str, str],
    member: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> list[gcp.storage.BucketIAMMember]:
    """`member` gets each of `roles` ({label: role}) on `bucket`, one IAM member per role,
    named `<name>-<label>`. Pass the bucket's name and the member as Outputs of the resources
    that make them, so that each grant waits for (and records) what it names."""
    return [
        gcp.storage.BucketIAMMember(
            f"{name}-{label}", bucket=bucket, role=role, member=member, opts=opts
        )
        for label, role in roles.items()
    ]


def _check(cfg: BucketConfig, location: str) -> None:
    """What the mocks would accept and Cloud Storage would refuse at deploy time."""
    dual_region = len(cfg.data_locations) == 2 or (
        "-" not in location and location not in MULTI_REGIONS
    )  # custom dual-region, or a predefined one such as NAM4
    if cfg.turbo and not dual_region:
        raise ValueError(
            f"bucket {cfg.name}: turbo replication (rpo ASYNC_TURBO) needs a dual-region; "
            f'location "{location}" with data_locations {list(cfg.data_locations)} is not one'
        )
    archive = cfg.lifecycle.archive_class
    if cfg.lifecycle.archive_after_days is not None and archive not in GCS_CLASSES:
        raise ValueError(
            f'bucket {cfg.name}: lifecycle archive_class "{archive}" is not a Cloud Storage '
            f"class; use one of {', '.join(GCS_CLASSES)}"
        )


def _lifecycle_rules(
    cfg: BucketConfig, versioned: bool
) -> Sequence[gcp.storage.BucketLifecycleRuleArgs]:
    lc = cfg.lifecycle
    rules = [
        gcp.storage.BucketLifecycleRuleArgs(
            action=gcp.storage.BucketLifecycleRuleActionArgs(type="AbortIncompleteMultipartUpload"),
            condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=lc.abort_multipart_days),
        )
    ]
    if versioned:
        # "Keep the last N": a noncurrent version goes only once it has been noncurrent for
        # `noncurrent_days` and N newer noncurrent versions exist. GCS counts the live version
        # among the newer ones, hence N + 1. Live objects are never deleted by age here, so a
        # stalled job cannot lose its last good state. (Without versioning there are no
        # noncurrent versions, and a locked bucket cannot be versioned.)
        rules.append(
            gcp.storage.BucketLifecycleRuleArgs(
                action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                    with_state="ARCHIVED",
                    num_newer_versions=lc.noncurrent_keep + 1,
                    days_since_noncurrent_time=lc.noncurrent_days,
                ),
            )
        )
        # Deleted or overwritten data stays recoverable for noncurrent_max_days, then goes,
        # however few newer versions it has (uniquely named checkpoints never get any).
        rules.append(
            gcp.storage.BucketLifecycleRuleArgs(
                action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                    with_state="ARCHIVED",
                    days_since_noncurrent_time=lc.noncurrent_max_days,
                ),
            )
        )
    if lc.archive_after_days is not None and lc.archive_class is not None:
        rules.append(
            gcp.storage.BucketLifecycleRuleArgs(
                action=gcp.storage.BucketLifecycleRuleActionArgs(
                    type="SetStorageClass", storage_class=lc.archive_class
                ),
                condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                    age=lc.archive_after_days, with_state="LIVE"
                ),
            )
        )
    return rules
