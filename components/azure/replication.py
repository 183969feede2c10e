"""Object replication out of an Azure primary: for each source container and each DR target, the
policy on the destination account, then the policy on the source account that names it.

Owned by the primary's stack, like transit gateway peering on AWS: Azure makes the destination
policy first (requested with id "default", it returns the real policy id and rule ids) and the
source policy must repeat them. Doing both here means the DR stack never reads the primary's
state; the destination account is named by an ARM id built from the plan.

Standard object replication is asynchronous and carries no replication-time SLA. Priority
replication (99.9% of new objects within 15 minutes, void above 1 Gbps of ingress or 100
CopyBlob requests/s) is not settable through azure-native 3.29: the plan's RPO estimate for
"azure-or" assumes no guarantee.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import storage

from components.azure.arm import storage_account_id
from gpudr.contract.site import BucketConfig, ReplicationTarget

MECHANISM = "azure-or"


@dataclass(frozen=True)
class ReplicationSource:
    config: BucketConfig
    account_name: pulumi.Input[str]
    account_id: pulumi.Input[str]
    # The source's versioning and change feed; replication is refused without them.
    ready: Sequence[pulumi.Resource]


@dataclass(frozen=True)
class AzureSiteReplicationArgs:
    resource_group_name: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    sources: Sequence[ReplicationSource]


class AzureSiteReplication(pulumi.ComponentResource):
    policy_ids: pulumi.Output[dict[str, str]]

    def __init__(
        self, name: str, args: AzureSiteReplicationArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:replication:AzureSiteReplication", name, None, opts)
        policy_ids: dict[str, pulumi.Output[str]] = {}
        for source in args.sources:
            for target in source.config.replication:
                policy = self._pair(name, source, target, args)
                policy_ids[target.rule_id] = policy
        self.policy_ids = (
            pulumi.Output.all(**policy_ids) if policy_ids else pulumi.Output.from_input({})
        )
        self.register_outputs({"policy_ids": self.policy_ids})

    def _pair(
        self,
        name: str,
        source: ReplicationSource,
        target: ReplicationTarget,
        args: AzureSiteReplicationArgs,
    ) -> pulumi.Output[str]:
        cfg = source.config
        if target.mechanism != MECHANISM:
            raise ValueError(
                f"bucket {cfg.data_class}: replication to {target.site} uses "
                f'"{target.mechanism}", which an Azure site cannot push; only {MECHANISM}'
            )
        if not target.storage_account or not target.resource_group:
            raise ValueError(
                f"bucket {cfg.data_class}: the azure-or target {target.site} needs "
                "storage_account and resource_group in gpudr:site; regenerate the stack"
            )
        prefix = f"{name}-{cfg.data_class}-to-{target.site}"
        # Cross-tenant replication is off on every gpudr account, and then Azure requires both
        # accounts by full resource id rather than by name.
        destination_id = storage_account_id(
            args.subscription_id, target.resource_group, target.storage_account
        )
        metrics = storage.ObjectReplicationPolicyPropertiesMetricsArgs(enabled=True)
        destination = storage.ObjectReplicationPolicy(
            f"{prefix}-destination",
            account_name=target.storage_account,
            resource_group_name=target.resource_group,
            object_replication_policy_id="default",
            source_account=source.account_id,
            destination_account=destination_id,
            rules=[
                storage.ObjectReplicationPolicyRuleArgs(
                    source_container=cfg.name, destination_container=target.bucket
                )
            ],
            metrics=metrics,
            opts=pulumi.ResourceOptions(parent=self),
        )
        storage.ObjectReplicationPolicy(
            f"{prefix}-source",
            account_name=source.account_name,
            resource_group_name=args.resource_group_name,
            object_replication_policy_id=destination.policy_id,
            source_account=source.account_id,
            destination_account=destination_id,
            rules=destination.rules.apply(_source_rules),
            metrics=metrics,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(source.ready)),
        )
        return destination.policy_id


def _source_rules(
    rules: Sequence[storage.outputs.ObjectReplicationPolicyRuleResponse] | None,
) -> list[storage.ObjectReplicationPolicyRuleArgs]:
    """The destination's rules, with the rule ids Azure gave them."""
    return [
        storage.ObjectReplicationPolicyRuleArgs(
            rule_id=r.rule_id,
            source_container=r.source_container,
            destination_container=r.destination_container,
        )
        for r in rules or ()
    ]
