"""default-network-closed: a VPC's default security group admits nothing.

Every VPC comes with a default security group that allows all traffic between its members and
all egress; anything launched without a group lands in it. Declaring it with no rules closes
it (Pulumi adopts the group and removes its rules). A VPC declared in a stack without that
declaration keeps the open default: the pack cannot see it, so it refuses the VPC (fail
closed). CIS AWS Foundations v3.0.0 5.4; Security Hub EC2.2.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .common import (
    EC2_DEFAULT_SECURITY_GROUP,
    EC2_VPC,
    Stack,
    UnknownGuard,
    config_schema,
    describe,
    exempting,
    items,
    policy_config,
)

SCHEMA = config_schema()


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args))
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for vpc in stack.of_type(EC2_VPC):
        with guard.check():
            groups = stack.linked(vpc, EC2_DEFAULT_SECURITY_GROUP, "vpcId", ("id",))
            if not groups:
                report(
                    f"{describe(vpc)} keeps its default security group open (all traffic "
                    "between members, all egress): declare aws.ec2.DefaultSecurityGroup("
                    "vpc_id=<vpc>.id, ingress=[], egress=[]).",
                    vpc.urn,
                )
            for group in groups:
                if items(group.props.get("ingress")) or items(group.props.get("egress")):
                    report(
                        f"{describe(vpc)}'s default security group {group.name} has rules: "
                        "set ingress=[] and egress=[] and put what must be allowed in a "
                        "security group of its own.",
                        vpc.urn,
                    )
    guard.raise_first()


default_network_closed = StackValidationPolicy(
    name="default-network-closed",
    description=(
        "Every AWS VPC declares its default security group with no rules, so nothing that "
        "lands in it can talk to anything."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    config_schema=SCHEMA,
    remediation_steps=(
        "aws.ec2.DefaultSecurityGroup(vpc_id=vpc.id, ingress=[], egress=[]) next to every "
        "aws.ec2.Vpc (gpudr's components/aws/network.py does)."
    ),
    tags=["network"],
)
