"""A customer-managed KMS key for a site's data, with rotation and a stable alias.

The alias is how other stacks name this key without reading this stack's state: a primary
encrypts its replicas with the DR key through `alias/gpudr/<system>/<site>`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class DataKeyArgs:
    region: pulumi.Input[str]
    alias: pulumi.Input[str]
    account_id: pulumi.Input[str]
    tags: pulumi.Input[dict[str, str]]
    # Another account's replication role that encrypts replicas with this key (cross-account DR).
    replication_role_arn: pulumi.Input[str] | None = None
    # Names of the log groups in the key's region that CloudWatch Logs encrypts with this key
    # (the DataSync log group of a site that pulls, its clusters' control-plane log groups).
    log_groups: Sequence[str] = ()
    # Log group names with IAM wildcards (`*`, `?`), for groups this stack does not declare
    # and cannot name in advance: its drills' clusters' groups (a drill uses this key by
    # alias and cannot change its policy).
    log_group_patterns: Sequence[str] = ()


class DataKey(pulumi.ComponentResource):
    key_arn: pulumi.Output[str]
    key_id: pulumi.Output[str]
    alias_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: DataKeyArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:kms:DataKey", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        log_groups = (*args.log_groups, *args.log_group_patterns)
        policy = pulumi.Output.all(args.account_id, args.replication_role_arn, args.region).apply(
            lambda a: _key_policy(a[0], a[1], region=a[2], log_groups=log_groups)
        )
        # Protected and with the longest deletion window: deleting this key makes every object
        # encrypted with it unreadable, replicas included.
        key = aws.kms.Key(
            f"{name}-key",
            description="gpudr data key: checkpoints, weights and datasets at this site",
            enable_key_rotation=True,
            rotation_period_in_days=365,
            deletion_window_in_days=30,
            policy=policy,
            region=args.region,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        alias = aws.kms.Alias(
            f"{name}-alias",
            name=args.alias,
            target_key_id=key.key_id,
            region=args.region,
            opts=child,
        )
        self.key_arn = key.arn
        self.key_id = key.key_id
        self.alias_name = alias.name
        self.register_outputs(
            {"key_arn": self.key_arn, "key_id": self.key_id, "alias_name": self.alias_name}
        )


def _key_policy(
    account_id: str,
    replication_role_arn: str | None,
    *,
    region: str,
    log_groups: Sequence[str] = (),
) -> str:
    statements: list[dict[str, object]] = [
        {
            # The account keeps control of the key; IAM policies grant the rest.
            "Sid": "AccountAdministers",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{account_id}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ]
    if replication_role_arn:
        statements.append(
            {
                "Sid": "CrossAccountReplicaEncryption",
                "Effect": "Allow",
                "Principal": {"AWS": replication_role_arn},
                "Action": ["kms:Encrypt", "kms:GenerateDataKey"],
                "Resource": "*",
            }
        )
    if log_groups:
        statements.append(_logs_statement(account_id, region, log_groups))
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def _logs_statement(account_id: str, region: str, log_groups: Sequence[str]) -> dict[str, object]:
    """CloudWatch Logs of this region may use the key for these log groups only: the service
    principal is regional, and the encryption context it passes names the log group
    (CloudWatch Logs User Guide, "Encrypt log data in CloudWatch Logs using AWS Key Management
    Service", step 2: the key policy). Without this statement a log group cannot be
    associated with the key. ArnLike: an exact name matches itself only, a pattern (a
    drill's groups) what its wildcards admit."""
    arns = [f"arn:aws:logs:{region}:{account_id}:log-group:{group}" for group in log_groups]
    return {
        "Sid": "CloudWatchLogsEncryptLogGroups",
        "Effect": "Allow",
        "Principal": {"Service": f"logs.{region}.amazonaws.com"},
        "Action": [
            "kms:Encrypt*",
            "kms:Decrypt*",
            "kms:ReEncrypt*",
            "kms:GenerateDataKey*",
            "kms:Describe*",
        ],
        "Resource": "*",
        # Several values of one key: any of them matches.
        "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": arns}},
    }
