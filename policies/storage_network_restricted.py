"""storage-network-restricted: an Azure storage account refuses networks it does not name.

With `network_rule_set.default_action` Allow (Azure's default) the account's endpoint answers
every address on the internet; only authentication stands between it and the data. Deny by
default, with the site's subnets and named ranges allowed (and `bypass: AzureServices` for
trusted services such as object replication), removes that exposure.

Advisory by default, not mandatory: gpudr's own accounts do not deny by default yet. A Storage
Transfer Service pull from Azure (the azure-to-gcp pair) comes from Google, which publishes no
source ranges to admit and is no trusted Microsoft service; a dual writer at the other site and
`gpudr drill`'s checksum reads need network access that private endpoints would give
(docs/security.md). Raise it to mandatory in the pack config where none of these apply.
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
    AZ_STORAGE_ACCOUNT,
    canonical_type,
    config_schema,
    exempting,
    get,
    policy_config,
    same,
)

SCHEMA = config_schema()


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if canonical_type(args.resource_type) != AZ_STORAGE_ACCOUNT:
        return
    action = get(args.props, "networkRuleSet", "defaultAction")
    if not same(action, "Deny"):
        exempting(report, policy_config(SCHEMA, args), args.urn)(
            f"{args.name} ({args.resource_type}) answers every network: "
            f"network_rule_set.default_action is {action!r}. Set default_action "
            '"Deny" with the site\'s subnets in virtual_network_rules, named ranges in '
            'ip_rules and bypass "AzureServices".',
            None,
        )


storage_network_restricted = ResourceValidationPolicy(
    name="storage-network-restricted",
    description=(
        "Azure storage accounts deny by default the networks they do not name "
        "(network_rule_set.default_action Deny)."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    config_schema=SCHEMA,
    remediation_steps=(
        'network_rule_set={default_action: "Deny", bypass: "AzureServices", '
        "virtual_network_rules: [<the site's subnets>], ip_rules: [<named ranges>]} on each "
        "storage account."
    ),
    tags=["network", "access"],
)
