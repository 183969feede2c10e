"""Read roles another cloud's transfer service assumes at an AWS primary by web identity
federation: the trust (one federated principal, exact claim conditions) and the read-only grant
on the buckets and their key. Storage Transfer Service (Google as the identity provider,
components/aws/cross_cloud.py) and AzCopy jobs (Entra ID, components/aws/azcopy_reader.py)
share them, so both readers can read exactly the same and nothing more."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws

from gpudr.contract import grants


def federated_trust(principal: str, conditions: Mapping[str, str]) -> str:
    """The trust policy: only a web identity token from `principal` whose claims equal every
    condition (`{"<provider>:<claim>": value}`) may assume the role."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Federated": principal},
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": {"StringEquals": dict(conditions)},
                }
            ],
        }
    )


def read_policy(buckets: Sequence[str], key_arn: str) -> str:
    arns = [grants.s3_bucket_arn(b) for b in buckets]
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
                    "Resource": arns,
                },
                {
                    "Effect": "Allow",
                    "Action": grants.S3_GET_OBJECT,
                    "Resource": [f"{a}/*" for a in arns],
                },
                # Read only: the transfer can never write or delete at the primary. The site key
                # also encrypts its log groups and other buckets: decrypt only what S3 encrypted
                # for these buckets (the object's ARN, or the bucket's with S3 Bucket Keys).
                {
                    "Effect": "Allow",
                    "Action": "kms:Decrypt",
                    "Resource": key_arn,
                    "Condition": {
                        "StringLike": {
                            "kms:EncryptionContext:aws:s3:arn": [
                                *arns,
                                *(f"{a}/*" for a in arns),
                            ]
                        }
                    },
                },
            ],
        }
    )


def federated_read_role(
    name: str,
    *,
    role_name: str,
    description: str,
    trust: pulumi.Input[str],
    buckets: Sequence[str],
    key_arn: pulumi.Input[str],
    tags: dict[str, str],
    parent: pulumi.Resource,
    max_session_s: int | None = None,
) -> aws.iam.Role:
    """The role (named `role_name`, trusting as `trust` says) and its read-only inline policy,
    children of `parent` named f"{name}-role" and f"{name}-read"."""
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(
        f"{name}-role",
        name=role_name,
        description=description,
        assume_role_policy=trust,
        max_session_duration=max_session_s,
        tags=tags,
        opts=child,
    )
    aws.iam.RolePolicy(
        f"{name}-read",
        role=role.id,
        policy=pulumi.Output.from_input(key_arn).apply(lambda key: read_policy(buckets, key)),
        opts=child,
    )
    return role
