"""Provider-like answers for pulumi_azure_native resources and lookups under the offline mocks.

Ids are ARM ids in an all-zero subscription and tenant; computed values (principal ids, key
URIs, object replication policy and rule ids) are derived from the inputs, so the same plan
gives the same answers. Nothing here was created anywhere.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from gpudr.app.offline.ids import short_hash

OFFLINE_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
OFFLINE_TENANT = "11111111-1111-1111-1111-111111111111"
_NAMESPACE = uuid.UUID("6f66666c-696e-6567-7075-64722d617a75")  # "offline-gpudr-azu"

# Resource type (module:Type) -> (the input carrying its Azure name, its ARM path under the
# resource group). Placeholders are inputs; {name} is the resource's own Azure name.
_ARM: dict[str, tuple[str, str]] = {
    "resources:ResourceGroup": ("resourceGroupName", ""),
    "authorization:RoleAssignment": ("roleAssignmentName", ""),
    "authorization:RoleDefinition": ("roleDefinitionId", ""),
    "managedidentity:UserAssignedIdentity": (
        "resourceName",
        "Microsoft.ManagedIdentity/userAssignedIdentities/{name}",
    ),
    "managedidentity:FederatedIdentityCredential": (
        "federatedIdentityCredentialResourceName",
        "Microsoft.ManagedIdentity/userAssignedIdentities/{resourceName}"
        "/federatedIdentityCredentials/{name}",
    ),
    "keyvault:Vault": ("vaultName", "Microsoft.KeyVault/vaults/{name}"),
    "keyvault:Key": ("keyName", "Microsoft.KeyVault/vaults/{vaultName}/keys/{name}"),
    "storage:StorageAccount": ("accountName", "Microsoft.Storage/storageAccounts/{name}"),
    "storage:BlobServiceProperties": (
        "blobServicesName",
        "Microsoft.Storage/storageAccounts/{accountName}/blobServices/{name}",
    ),
    "storage:BlobContainer": (
        "containerName",
        "Microsoft.Storage/storageAccounts/{accountName}/blobServices/default/containers/{name}",
    ),
    "storage:ManagementPolicy": (
        "managementPolicyName",
        "Microsoft.Storage/storageAccounts/{accountName}/managementPolicies/{name}",
    ),
    "storage:ObjectReplicationPolicy": (
        "objectReplicationPolicyId",
        "Microsoft.Storage/storageAccounts/{accountName}/objectReplicationPolicies/{name}",
    ),
    "network:VirtualNetwork": ("virtualNetworkName", "Microsoft.Network/virtualNetworks/{name}"),
    "network:Subnet": (
        "subnetName",
        "Microsoft.Network/virtualNetworks/{virtualNetworkName}/subnets/{name}",
    ),
    "network:VirtualNetworkPeering": (
        "virtualNetworkPeeringName",
        "Microsoft.Network/virtualNetworks/{virtualNetworkName}/virtualNetworkPeerings/{name}",
    ),
    "network:PublicIPAddress": (
        "publicIpAddressName",
        "Microsoft.Network/publicIPAddresses/{name}",
    ),
    "network:VirtualNetworkGateway": (
        "virtualNetworkGatewayName",
        "Microsoft.Network/virtualNetworkGateways/{name}",
    ),
    "network:LocalNetworkGateway": (
        "localNetworkGatewayName",
        "Microsoft.Network/localNetworkGateways/{name}",
    ),
    "network:VirtualNetworkGatewayConnection": (
        "virtualNetworkGatewayConnectionName",
        "Microsoft.Network/connections/{name}",
    ),
    "containerservice:ManagedCluster": (
        "resourceName",
        "Microsoft.ContainerService/managedClusters/{name}",
    ),
    "containerservice:AgentPool": (
        "agentPoolName",
        "Microsoft.ContainerService/managedClusters/{resourceName}/agentPools/{name}",
    ),
    "compute:CapacityReservationGroup": (
        "capacityReservationGroupName",
        "Microsoft.Compute/capacityReservationGroups/{name}",
    ),
    "compute:CapacityReservation": (
        "capacityReservationName",
        "Microsoft.Compute/capacityReservationGroups/{capacityReservationGroupName}"
        "/capacityReservations/{name}",
    ),
    "operationalinsights:Workspace": (
        "workspaceName",
        "Microsoft.OperationalInsights/workspaces/{name}",
    ),
    "monitor:DataCollectionRule": (
        "dataCollectionRuleName",
        "Microsoft.Insights/dataCollectionRules/{name}",
    ),
    "network:PrivateEndpoint": ("privateEndpointName", "Microsoft.Network/privateEndpoints/{name}"),
    "network:PrivateDnsZoneGroup": (
        "privateDnsZoneGroupName",
        "Microsoft.Network/privateEndpoints/{privateEndpointName}/privateDnsZoneGroups/{name}",
    ),
    "privatedns:PrivateZone": ("privateZoneName", "Microsoft.Network/privateDnsZones/{name}"),
    "privatedns:VirtualNetworkLink": (
        "virtualNetworkLinkName",
        "Microsoft.Network/privateDnsZones/{privateZoneName}/virtualNetworkLinks/{name}",
    ),
    "dnsresolver:DnsResolver": ("dnsResolverName", "Microsoft.Network/dnsResolvers/{name}"),
    "dnsresolver:InboundEndpoint": (
        "inboundEndpointName",
        "Microsoft.Network/dnsResolvers/{dnsResolverName}/inboundEndpoints/{name}",
    ),
    "logic:Workflow": ("workflowName", "Microsoft.Logic/workflows/{name}"),
    "storagemover:StorageMover": (
        "storageMoverName",
        "Microsoft.StorageMover/storageMovers/{name}",
    ),
    "storagemover:Project": (
        "projectName",
        "Microsoft.StorageMover/storageMovers/{storageMoverName}/projects/{name}",
    ),
    "storagemover:Endpoint": (
        "endpointName",
        "Microsoft.StorageMover/storageMovers/{storageMoverName}/endpoints/{name}",
    ),
    "storagemover:JobDefinition": (
        "jobDefinitionName",
        "Microsoft.StorageMover/storageMovers/{storageMoverName}/projects/{projectName}"
        "/jobDefinitions/{name}",
    ),
    # Extension resources: their id is under the resource they attach to (`resourceUri`).
    "monitor:DiagnosticSetting": ("name", "Microsoft.Insights/diagnosticSettings/{name}"),
    "monitor:DataCollectionRuleAssociation": (
        "associationName",
        "Microsoft.Insights/dataCollectionRuleAssociations/{name}",
    ),
}
_EXTENSIONS = ("monitor:DiagnosticSetting", "monitor:DataCollectionRuleAssociation")


def _guid(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "/".join(parts)))


def _group_id(rg: str) -> str:
    return f"/subscriptions/{OFFLINE_SUBSCRIPTION}/resourceGroups/{rg}"


def _arm_id(kind: str, name: str, azure_name: str, inputs: dict[str, Any]) -> str:
    rg = str(inputs.get("resourceGroupName") or "offline-rg")
    if kind == "resources:ResourceGroup":
        return _group_id(azure_name)
    if kind in ("authorization:RoleAssignment", "authorization:RoleDefinition"):
        scope = str(inputs.get("scope") or f"/subscriptions/{OFFLINE_SUBSCRIPTION}")
        leaf = "roleAssignments" if kind.endswith("Assignment") else "roleDefinitions"
        return f"{scope}/providers/Microsoft.Authorization/{leaf}/{azure_name}"
    template = _ARM.get(kind, ("", ""))[1]
    if kind in _EXTENSIONS and isinstance(inputs.get("resourceUri"), str):
        return f"{inputs['resourceUri']}/providers/{template.format(name=azure_name)}"
    values = {k: str(v) for k, v in inputs.items() if isinstance(v, str)}
    try:
        path = template.format(**{**values, "name": azure_name})
    except KeyError:
        path = ""
    if not path:
        path = f"Microsoft.Offline/{kind.replace(':', '/')}/{azure_name or name}"
    return f"{_group_id(rg)}/providers/{path}"


def answer(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for an Azure resource: an ARM id, inputs echoed, the Azure name as `name`,
    and the computed fields gpudr reads."""
    state = dict(inputs)
    kind = typ.split(":", 1)[1]  # azure-native:storage:StorageAccount -> storage:StorageAccount
    name_key = _ARM.get(kind, ("", ""))[0]
    azure_name = str(inputs.get(name_key) or name) if name_key else name
    if kind == "storage:ObjectReplicationPolicy":
        azure_name = _policy_id(inputs)
        state.update(_replication_policy(inputs, azure_name))
    rid = _arm_id(kind, name, azure_name, inputs)
    identity = inputs.get("identity")
    if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
        # A list of ids on input, a map of id -> {principalId, clientId} on output.
        state["identity"] = {
            **identity,
            "userAssignedIdentities": {
                str(i): {
                    "principalId": _guid("principal", str(i)),
                    "clientId": _guid("client", str(i)),
                }
                for i in identity["userAssignedIdentities"]
            },
        }
    if isinstance(identity, dict) and identity.get("type") == "SystemAssigned":
        # Azure creates the identity with the resource: its object id is known only then.
        state["identity"] = {
            **identity,
            "principalId": _guid("principal", rid),
            "tenantId": OFFLINE_TENANT,
        }
    if kind == "managedidentity:UserAssignedIdentity":
        state.update(
            principalId=_guid("principal", rid),
            clientId=_guid("client", rid),
            tenantId=OFFLINE_TENANT,
        )
    elif kind == "keyvault:Vault":
        properties = dict(inputs.get("properties") or {})
        properties.setdefault("vaultUri", f"https://{azure_name}.vault.azure.net/")
        state["properties"] = properties
    elif kind == "keyvault:Key":
        uri = f"https://{inputs.get('vaultName')}.vault.azure.net/keys/{azure_name}"
        state.update(
            keyUri=uri, keyUriWithVersion=f"{uri}/{short_hash('version', rid)}00000000000000000000"
        )
    elif kind == "operationalinsights:Workspace":
        state["customerId"] = _guid("workspace", rid)  # the GUID agents and queries use
    elif kind == "storage:StorageAccount":
        state["primaryEndpoints"] = {"blob": f"https://{azure_name}.blob.core.windows.net/"}
    elif kind == "network:PublicIPAddress":
        # Static addresses are allocated at creation. TEST-NET-1 (RFC 5737): never routable.
        state["ipAddress"] = f"192.0.2.{int(short_hash('ip', rid), 16) % 200 + 10}"
    elif kind == "containerservice:ManagedCluster":
        state.update(
            fqdn=f"{short_hash(rid)}.hcp.{inputs.get('location')}.azmk8s.io",
            oidcIssuerProfile={
                **dict(inputs.get("oidcIssuerProfile") or {}),
                "issuerURL": f"https://{inputs.get('location')}.oic.prod-aks.azure.com/"
                f"{OFFLINE_TENANT}/{_guid('oidc', rid)}/",
            },
        )
    state["id"] = rid
    state["name"] = azure_name
    return rid, state


def _policy_id(inputs: dict[str, Any]) -> str:
    """Azure assigns the id when a policy is created as "default" on the destination; the
    source policy is then created under that same id."""
    requested = str(inputs.get("objectReplicationPolicyId") or "default")
    if requested != "default":
        return requested
    return _guid(
        "object-replication",
        str(inputs.get("sourceAccount")),
        str(inputs.get("destinationAccount")),
    )


def _replication_policy(inputs: dict[str, Any], policy_id: str) -> dict[str, Any]:
    rules = []
    for rule in inputs.get("rules") or []:
        r = dict(rule)
        r.setdefault(
            "ruleId",
            _guid(
                "rule",
                policy_id,
                str(r.get("sourceContainer")),
                str(r.get("destinationContainer")),
            ),
        )
        rules.append(r)
    return {"policyId": policy_id, "rules": rules, "enabledTime": "2025-01-01T00:00:00Z"}


def answer_random(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for a pulumi_random resource (the VPN shared keys of an Azure site): the
    value is derived from the resource's name, so the same plan gives the same keys, and says
    it is offline. The program marks it secret itself; the mock does not have to."""
    state = dict(inputs)
    if typ == "random:index/randomPassword:RandomPassword":
        length = int(inputs.get("length") or 16)
        digest = hashlib.sha256(f"offline-psk/{name}".encode()).hexdigest()
        state["result"] = ("offline" + digest * 2)[:length]
    return f"none-{short_hash(typ, name)}", state


def lookup(token: str, args: dict[str, Any]) -> dict[str, Any]:
    if token == "azure-native:authorization:getClientConfig":
        return {
            "subscriptionId": OFFLINE_SUBSCRIPTION,
            "tenantId": OFFLINE_TENANT,
            "clientId": "22222222-2222-2222-2222-222222222222",
            "objectId": "33333333-3333-3333-3333-333333333333",
        }
    if token == "azure-native:network:getVirtualNetworkGateway":
        # An Azure DR site's VPN gateway, as an AWS primary's stack finds it by name: the id
        # the DR stack's own run registers for it.
        name = str(args.get("virtualNetworkGatewayName"))
        inputs = {"resourceGroupName": args.get("resourceGroupName")}
        return {"id": _arm_id("network:VirtualNetworkGateway", name, name, inputs), "name": name}
    if token == "azure-native:network:getPublicIPAddress":
        # The DR gateway's instance addresses: the ones its stack's run allocates.
        name = str(args.get("publicIpAddressName"))
        _rid, state = answer(
            "azure-native:network:PublicIPAddress",
            name,
            {"resourceGroupName": args.get("resourceGroupName"), "publicIpAddressName": name},
        )
        return {"id": state["id"], "name": name, "ipAddress": state["ipAddress"]}
    raise LookupError(f"the offline mocks do not answer {token}; add it to offline/mocks_azure.py")
