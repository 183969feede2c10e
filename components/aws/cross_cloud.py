"""The read role Storage Transfer Service assumes to pull from an AWS primary into a GCP DR
site, declared by the primary's stack (the link between the two clouds is
components/xcloud/aws_gcp.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.aws.federation import federated_read_role, federated_trust
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
        agent = gcp.storage.get_transfer_project_service_account_output(
            project=args.reader.gcp_project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        role = federated_read_role(
            name,
            role_name=args.reader.role_name,
            description="gpudr: Storage Transfer Service at the GCP DR site reads these buckets",
            # Only this project's transfer service agent, nobody else holding a Google identity
            # token.
            trust=agent.subject_id.apply(
                lambda subject: federated_trust(
                    "accounts.google.com", {"accounts.google.com:sub": subject}
                )
            ),
            buckets=args.reader.buckets,
            key_arn=args.key_arn,
            tags=args.tags,
            parent=self,
        )
        self.role_arn = role.arn
        self.register_outputs({"role_arn": self.role_arn})
