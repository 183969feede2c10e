"""The read role Storage Transfer Service assumes to pull from an AWS primary into a GCP DR
site, declared by the primary's stack (the link between the two clouds is
components/xcloud/aws_gcp.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from gpudr.contract import grants
from gpudr.contract.site import StsReader


@dataclass(frozen=True)
class StsReadRoleArgs:
    reader: StsReader
    key_arn: pulumi.Input[str]
    tags: dict[str, str]


class StsReadRole(pulumi.ComponentResource):
    """The role Storage Transfer Service assumes to pull from S3: web identity federation with
    Google as the identity provider, bound to the project's transfer service agent. No access
    keys exist to leak or rotate."""

    role_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: StsReadRoleArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:StsReadRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        agent = gcp.storage.get_transfer_project_service_account_output(
            project=args.reader.gcp_project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        role = aws.iam.Role(
            f"{name}-role",
            name=args.reader.role_name,
            description="gpudr: Storage Transfer Service at the GCP DR site reads these buckets",
            assume_role_policy=agent.subject_id.apply(
                lambda subject: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Federated": "accounts.google.com"},
                                "Action": "sts:AssumeRoleWithWebIdentity",
                                # Only this project's transfer service agent, nobody else
                                # holding a Google identity token.
                                "Condition": {"StringEquals": {"accounts.google.com:sub": subject}},
                            }
                        ],
                    }
                )
            ),
            tags=args.tags,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-read",
            role=role.id,
            policy=pulumi.Output.from_input(args.key_arn).apply(
                lambda key: _read_policy(args.reader.buckets, key)
            ),
            opts=child,
        )
        self.role_arn = role.arn
        self.register_outputs({"role_arn": self.role_arn})


def _read_policy(buckets: Sequence[str], key_arn: str) -> str:
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
                # Read only: the transfer can never write or delete at the primary.
                {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": key_arn},
            ],
        }
    )
