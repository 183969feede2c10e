"""Azure Resource Manager ids, built-in role ids and deterministic names.

What crosses stacks on Azure is an ARM id built from names in the plan (the DR storage account
a primary replicates into, the peer's virtual network), never read from another stack's state.
"""

from __future__ import annotations

import uuid

import pulumi

from gpudr.contract import grants

# Built-in role definition ids (the same GUID in every subscription and tenant).
# Wrap/unwrap with a Key Vault key: what a storage account needs for customer-managed keys.
KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER = "e147488a-f6f5-4113-8e2d-b22465e65bf6"
# Join and read a subnet: what an AKS control-plane identity needs on a bring-your-own subnet.
NETWORK_CONTRIBUTOR = "4d97b98b-1d4f-4787-a291-c67834d212e7"
# AKS deploys node pools into a capacity reservation group only with this role on it.
CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"
# Read and list blobs and containers, nothing else: what a scheduled pull from another cloud
# needs on a source account (gpudr.contract.grants, which the policy pack reads too).
STORAGE_BLOB_DATA_READER = grants.STORAGE_BLOB_DATA_READER

# Role assignment names are GUIDs; uuid5 over a gpudr-specific namespace keeps them stable
# from one run to the next, so an assignment is never re-created under a new name.
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://gpudr/azure/role-assignments")


def assignment_name(*parts: str) -> str:
    """A deterministic role assignment name (a GUID) for what `parts` identify."""
    return str(uuid.uuid5(_NAMESPACE, "/".join(parts)))


def role_definition_id(subscription_id: pulumi.Input[str], role: str) -> pulumi.Output[str]:
    """The full id of a built-in role definition, scoped to the subscription."""
    return pulumi.Output.concat(
        "/subscriptions/",
        subscription_id,
        "/providers/Microsoft.Authorization/roleDefinitions/",
        role,
    )


def resource_id(
    subscription_id: pulumi.Input[str], resource_group: str, provider_path: str
) -> pulumi.Output[str]:
    """`/subscriptions/{sub}/resourceGroups/{rg}/providers/{provider_path}`."""
    return pulumi.Output.concat(
        "/subscriptions/",
        subscription_id,
        f"/resourceGroups/{resource_group}/providers/{provider_path}",
    )


def storage_account_id(
    subscription_id: pulumi.Input[str], resource_group: str, account: str
) -> pulumi.Output[str]:
    return resource_id(
        subscription_id, resource_group, f"Microsoft.Storage/storageAccounts/{account}"
    )


def virtual_network_id(
    subscription_id: pulumi.Input[str], resource_group: str, network: str
) -> pulumi.Output[str]:
    return resource_id(
        subscription_id, resource_group, f"Microsoft.Network/virtualNetworks/{network}"
    )


def log_workspace_id(
    subscription_id: pulumi.Input[str], resource_group: str, workspace: str
) -> pulumi.Output[str]:
    """A site's Log Analytics workspace, by the deterministic name its stack gave it: how a
    drill sends its clusters' logs to the DR site's workspace without reading that stack."""
    return resource_id(
        subscription_id, resource_group, f"Microsoft.OperationalInsights/workspaces/{workspace}"
    )
