"""Replication out of a site: the S3 replication role, one replication configuration per source
bucket with Replication Time Control where the RPO needs it, the CloudWatch alarms that page when
replication falls behind, and for data classes that are dual-written the writer policy and the
role it is attached to (the identity the writer's pods assume through EKS Pod Identity)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpudr.contract.grants import S3_PUT_OBJECT, s3_bucket_arn, s3_objects_arn
from gpudr.contract.site import BucketConfig, ReplicationTarget


@dataclass(frozen=True)
class SourceBucket:
    config: BucketConfig
    bucket_id: pulumi.Input[str]
    bucket_arn: pulumi.Input[str]
    versioning_id: pulumi.Input[str]


@dataclass(frozen=True)
class WriterIdentity:
    """Who holds a dual-written class's write grant at a site: the IAM role its writer's pods
    assume (gpudr.contract.naming.writer_role_name), from the site's own EKS clusters."""

    role_name: str
    # The names of the site's EKS clusters, as an IAM pattern:
    # gpudr.contract.naming.cluster_name(system, site, "*").
    clusters: str
    tags: dict[str, str]


@dataclass(frozen=True)
class SiteReplicationArgs:
    region: pulumi.Input[str]
    account_id: pulumi.Input[str]
    role_name: pulumi.Input[str]
    key_arn: pulumi.Input[str]
    sources: Sequence[SourceBucket]
    tags: pulumi.Input[dict[str, str]]
    # data class -> its writer's role, for every dual-written source bucket.
    writers: Mapping[str, WriterIdentity] = field(default_factory=dict)


def kms_alias_arn(region: str, account: str, alias: str) -> str:
    return f"arn:aws:kms:{region}:{account}:{alias}"


class SiteReplication(pulumi.ComponentResource):
    role_arn: pulumi.Output[str]
    rule_ids: pulumi.Output[list[str]]
    # data class -> the ARN of the role its writer assumes (dual-written classes only)
    writer_role_arns: dict[str, pulumi.Output[str]]

    def __init__(
        self, name: str, args: SiteReplicationArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:replication:SiteReplication", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        replicated = [s for s in args.sources if s.config.replication]

        role = aws.iam.Role(
            f"{name}-role",
            name=args.role_name,
            description="gpudr: S3 replicates this site's data classes to their DR sites",
            assume_role_policy=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "s3.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            ),
            tags=args.tags,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-role-policy",
            role=role.id,
            policy=pulumi.Output.all(
                args.region,
                args.account_id,
                args.key_arn,
                [s.bucket_arn for s in replicated],
            ).apply(lambda a: _role_policy(a[0], a[1], a[2], a[3], replicated)),
            opts=child,
        )
        rule_ids: list[str] = []
        for source in replicated:
            cfg = source.config
            aws.s3.BucketReplicationConfig(
                f"{name}-{cfg.data_class}",
                bucket=source.bucket_id,
                role=role.arn,
                rules=pulumi.Output.from_input(args.account_id).apply(_rules_for(cfg)),
                region=args.region,
                # Replication needs versioning on the source; the configuration waits for it.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
            )
            for target in cfg.replication:
                rule_ids.append(target.rule_id)
                _alarms(self, f"{name}-{target.rule_id}", cfg, target, args)
        self.writer_role_arns = {}
        for source in args.sources:
            cfg = source.config
            if cfg.dual_write_buckets:
                policy = writer_policy(
                    self,
                    f"{name}-{cfg.data_class}-writer",
                    cfg=cfg,
                    buckets=[cfg.name, *cfg.dual_write_buckets],
                    account_id=args.account_id,
                    tags=args.tags,
                )
                writer = writer_role(
                    self,
                    f"{name}-{cfg.data_class}-writer",
                    policy=policy,
                    identity=args.writers[cfg.data_class],
                )
                self.writer_role_arns[cfg.data_class] = writer.arn
        self.role_arn = role.arn
        self.rule_ids = pulumi.Output.from_input(rule_ids)
        self.register_outputs({"role_arn": self.role_arn, "rule_ids": self.rule_ids})


def _rules_for(
    cfg: BucketConfig,
) -> Callable[[str], list[aws.s3.BucketReplicationConfigRuleArgs]]:
    return lambda account: _rules(cfg, account)


def _rules(cfg: BucketConfig, default_account: str) -> list[aws.s3.BucketReplicationConfigRuleArgs]:
    rules = []
    for priority, t in enumerate(cfg.replication, start=1):
        rtc = t.mechanism == "crr-rtc"
        account = t.account or default_account
        rules.append(
            aws.s3.BucketReplicationConfigRuleArgs(
                id=t.rule_id,
                status="Enabled",
                priority=priority,
                filter=aws.s3.BucketReplicationConfigRuleFilterArgs(prefix=""),
                # Deletes are not replicated: a mistaken or malicious delete at the primary must
                # not hide the DR copy. The DR bucket's own lifecycle keeps the last N versions.
                delete_marker_replication=aws.s3.BucketReplicationConfigRuleDeleteMarkerReplicationArgs(
                    status="Disabled"
                ),
                source_selection_criteria=aws.s3.BucketReplicationConfigRuleSourceSelectionCriteriaArgs(
                    sse_kms_encrypted_objects=aws.s3.BucketReplicationConfigRuleSourceSelectionCriteriaSseKmsEncryptedObjectsArgs(
                        status="Enabled"
                    )
                ),
                destination=aws.s3.BucketReplicationConfigRuleDestinationArgs(
                    bucket=f"arn:aws:s3:::{t.bucket}",
                    storage_class=t.storage_class,
                    account=t.account,
                    access_control_translation=aws.s3.BucketReplicationConfigRuleDestinationAccessControlTranslationArgs(
                        owner="Destination"
                    )
                    if t.account
                    else None,
                    # Replicas are encrypted with the DR region's own key, named by its alias so
                    # this stack never reads the DR stack's state.
                    encryption_configuration=aws.s3.BucketReplicationConfigRuleDestinationEncryptionConfigurationArgs(
                        replica_kms_key_id=kms_alias_arn(t.region, account, t.kms_alias)
                    ),
                    # RTC is the only S3 mode with a replication-time SLA (15 min); it requires
                    # metrics, and 15 is the only value either accepts.
                    replication_time=aws.s3.BucketReplicationConfigRuleDestinationReplicationTimeArgs(
                        status="Enabled",
                        time=aws.s3.BucketReplicationConfigRuleDestinationReplicationTimeTimeArgs(
                            minutes=15
                        ),
                    )
                    if rtc
                    else None,
                    metrics=aws.s3.BucketReplicationConfigRuleDestinationMetricsArgs(
                        status="Enabled",
                        event_threshold=aws.s3.BucketReplicationConfigRuleDestinationMetricsEventThresholdArgs(
                            minutes=15
                        ),
                    )
                    if rtc
                    else aws.s3.BucketReplicationConfigRuleDestinationMetricsArgs(status="Enabled"),
                ),
            )
        )
    return rules


def _alarms(
    parent: pulumi.Resource,
    name: str,
    cfg: BucketConfig,
    target: ReplicationTarget,
    args: SiteReplicationArgs,
) -> None:
    """Replication metrics are published in the source region, so the alarms live here."""
    dimensions: Mapping[str, str] = {
        "SourceBucket": cfg.name,
        "DestinationBucket": target.bucket,
        "RuleId": target.rule_id,
    }
    opts = pulumi.ResourceOptions(parent=parent)
    aws.cloudwatch.MetricAlarm(
        f"{name}-latency",
        alarm_description=(
            f"{cfg.data_class} replication to {target.site} is slower than "
            f"{target.latency_alarm_s // 60} min: the RPO is at risk"
        ),
        namespace="AWS/S3",
        metric_name="ReplicationLatency",
        dimensions=dimensions,
        statistic="Maximum",
        period=300,
        evaluation_periods=3,
        threshold=target.latency_alarm_s,
        comparison_operator="GreaterThanThreshold",
        treat_missing_data="notBreaching",
        region=args.region,
        tags=args.tags,
        opts=opts,
    )
    aws.cloudwatch.MetricAlarm(
        f"{name}-failed",
        alarm_description=f"{cfg.data_class} objects failed to replicate to {target.site}",
        namespace="AWS/S3",
        metric_name="OperationsFailedReplication",
        dimensions=dimensions,
        statistic="Sum",
        period=300,
        evaluation_periods=1,
        threshold=0,
        comparison_operator="GreaterThanThreshold",
        treat_missing_data="notBreaching",
        region=args.region,
        tags=args.tags,
        opts=opts,
    )


def writer_policy(
    parent: pulumi.Resource,
    name: str,
    *,
    cfg: BucketConfig,
    buckets: Sequence[str],
    account_id: pulumi.Input[str],
    tags: pulumi.Input[dict[str, str]],
    policy_name: str | None = None,
) -> aws.iam.Policy:
    """Dual write holds RPO 0 only if the writer (the model registry's publish job) writes
    every copy before it reports success; `writer_role` attaches it to the role that job
    assumes. `buckets` are the S3 copies it may write, this one first; each stack that owns a
    copy declares one (a DR site's writer assumes its own role after failover). The name is
    `gpudr-<name>` unless given."""
    return aws.iam.Policy(
        name,
        name=policy_name or f"gpudr-{name}"[:128],
        description=f"gpudr: write {cfg.data_class} to every copy (dual write, RPO 0)",
        policy=pulumi.Output.from_input(account_id).apply(
            lambda account: json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": [S3_PUT_OBJECT, "s3:GetObject", "s3:ListBucket"],
                            "Resource": [s3_bucket_arn(b) for b in buckets]
                            + [s3_objects_arn(b) for b in buckets],
                        },
                        {
                            # Encrypt with (and read back under) the copies' own keys: the
                            # buckets' default encryption uses the site's gpudr key.
                            "Effect": "Allow",
                            "Action": ["kms:GenerateDataKey", "kms:Encrypt", "kms:Decrypt"],
                            "Resource": f"arn:aws:kms:*:{account}:key/*",
                            "Condition": {
                                "ForAnyValue:StringLike": {"kms:ResourceAliases": "alias/gpudr/*"}
                            },
                        },
                    ],
                }
            )
        ),
        tags=tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def pod_identity_trust(clusters: str) -> str:
    """The trust policy EKS Pod Identity needs (Amazon EKS User Guide, "Create IAM role with
    trust policy required by EKS Pod Identity",
    https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html): the service principal
    pods.eks.amazonaws.com may sts:AssumeRole, and sts:TagSession to pass the session tags it
    adds (the cluster's name among them). The condition on that tag, as the same page shows for
    namespaces and service accounts, keeps the role to pods of the site's own clusters: no other
    cluster's Pod Identity association can hand it out."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
                    "Effect": "Allow",
                    "Principal": {"Service": "pods.eks.amazonaws.com"},
                    "Action": ["sts:AssumeRole", "sts:TagSession"],
                    "Condition": {"StringLike": {"aws:RequestTag/eks-cluster-name": clusters}},
                }
            ],
        }
    )


def writer_role(
    parent: pulumi.Resource,
    name: str,
    *,
    policy: aws.iam.Policy,
    identity: WriterIdentity,
) -> aws.iam.Role:
    """The role a writer policy is attached to: a policy attached to nothing lets nobody
    write. The writer's pods assume it through EKS Pod Identity (`pod_identity_trust`); the
    attachment names the policy by its ARN output, so it is created after the policy and the
    policy pack sees which policy reaches the role."""
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(
        f"{name}-role",
        name=identity.role_name,
        description="gpudr: the dual writer (EKS Pod Identity) writes every copy of its class",
        assume_role_policy=pod_identity_trust(identity.clusters),
        tags=identity.tags,
        opts=opts,
    )
    aws.iam.RolePolicyAttachment(
        f"{name}-attachment", role=role.name, policy_arn=policy.arn, opts=opts
    )
    return role


def _role_policy(
    region: str,
    account: str,
    key_arn: str,
    source_arns: list[str],
    sources: Sequence[SourceBucket],
) -> str:
    targets = [t for s in sources for t in s.config.replication]
    dest_arns = sorted({f"arn:aws:s3:::{t.bucket}" for t in targets})
    dest_aliases = sorted({t.kms_alias for t in targets})
    dest_key_arns = sorted(
        {f"arn:aws:kms:{t.region}:{t.account or account}:key/*" for t in targets}
    )
    statements: list[dict[str, object]] = [
        {
            "Sid": "ReadSourceConfiguration",
            "Effect": "Allow",
            "Action": ["s3:GetReplicationConfiguration", "s3:ListBucket"],
            "Resource": source_arns,
        },
        {
            "Sid": "ReadSourceVersions",
            "Effect": "Allow",
            "Action": [
                "s3:GetObjectVersionForReplication",
                "s3:GetObjectVersionAcl",
                "s3:GetObjectVersionTagging",
                "s3:GetObjectRetention",
                "s3:GetObjectLegalHold",
            ],
            "Resource": [f"{arn}/*" for arn in source_arns],
        },
        {
            "Sid": "WriteReplicas",
            "Effect": "Allow",
            "Action": [
                "s3:ReplicateObject",
                "s3:ReplicateTags",
                "s3:ObjectOwnerOverrideToBucketOwner",
            ],
            "Resource": [f"{arn}/*" for arn in dest_arns],
        },
        {
            "Sid": "DecryptSource",
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": key_arn,
            "Condition": {"StringLike": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
        },
        {
            # The DR keys are named by alias: IAM authorises KMS calls on the key ARN, so the
            # grant covers keys in the DR region that carry one of these aliases.
            "Sid": "EncryptReplicas",
            "Effect": "Allow",
            "Action": ["kms:Encrypt", "kms:GenerateDataKey"],
            "Resource": dest_key_arns,
            "Condition": {"ForAnyValue:StringEquals": {"kms:ResourceAliases": dest_aliases}},
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})
