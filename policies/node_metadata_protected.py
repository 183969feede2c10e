"""node-metadata-protected: pods cannot take the node's cloud credentials.

An EC2 node's instance profile is reachable from every pod through the instance metadata
service unless IMDSv2 is required with a response hop limit of 1 (the extra hop a pod's
network namespace adds makes the reply undeliverable). A GPU node role can read data keys and
pull images: a compromised pod would hold them. Pods get their own credentials through EKS
Pod Identity or IRSA instead. CIS AWS Foundations v3.0.0 5.6; Security Hub AutoScaling.4 and
EC2.170 (launch templates require IMDSv2). Every launch template is judged, tagged or not.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .common import (
    EC2_LAUNCH_TEMPLATE,
    canonical_type,
    config_schema,
    exempting,
    get,
    number,
    policy_config,
    same,
)

SCHEMA = config_schema()


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    options = args.props.get("metadataOptions")
    if canonical_type(args.resource_type) != EC2_LAUNCH_TEMPLATE:
        return
    if same(get(options, "httpEndpoint"), "disabled"):
        return  # no metadata service at all: nothing to reach
    problems = []
    if not same(get(options, "httpTokens"), "required"):
        problems.append(f"http_tokens is {get(options, 'httpTokens')!r} (IMDSv1 allowed)")
    hops = number(get(options, "httpPutResponseHopLimit"))
    if hops is None or hops > 1:
        problems.append(f"http_put_response_hop_limit is {hops!r}: a pod reaches the node role")
    if problems:
        exempting(report, policy_config(SCHEMA, args), args.urn)(
            f"{args.name} ({args.resource_type}) lets pods take the node's credentials: "
            f'{"; ".join(problems)}. Set metadata_options={{http_tokens: "required", '
            "http_put_response_hop_limit: 1}} and give pods EKS Pod Identity or IRSA roles.",
            None,
        )


node_metadata_protected = ResourceValidationPolicy(
    name="node-metadata-protected",
    description=(
        "Every EC2 launch template requires IMDSv2 with a response hop limit of 1, so pods "
        "cannot read the node role's credentials."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        'aws.ec2.LaunchTemplate(metadata_options={"http_tokens": "required", '
        '"http_put_response_hop_limit": 1}); pods that need AWS access use EKS Pod Identity '
        "(the eks-pod-identity-agent add-on) or IRSA."
    ),
    tags=["access", "kubernetes"],
)
