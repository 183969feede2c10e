"""The Azure primary's side of Azure -> GCP disaster recovery.

The primary's stack owns everything that joins the two clouds, as the AWS primary does for
AWS -> GCP: the DR stack (GCP) keeps only its anchors (HA VPN gateway, Cloud Router, buckets
and transfer jobs) and never needs this stack's state or region. What the DR stack does need
from here, the reader identity's client and tenant ids, leaves as the `transfer_credentials`
output and reaches the DR stack's own config through `pulumi config set`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_random as random
from pulumi_azure_native import authorization, managedidentity, network

from components.azure.arm import STORAGE_BLOB_DATA_READER, assignment_name, role_definition_id
from components.azure.vpn import (
    IP_CONFIGURATIONS,
    AzureVpnArgs,
    GatewaySpec,
    declare_gateway,
    gateway_arm_id,
    ip_configuration_id,
    vpn_gateway_name,
)
from components.xcloud.bgp import BgpTunnel, declare_bgp_tunnel
from gpudr.contract.site import AzureStsReader

# Storage Transfer Service presents a Google-signed ID token for its service agent; Entra ID
# exchanges it for an Azure token when a federated credential on the identity matches issuer,
# subject and audience exactly.
GOOGLE_ISSUER = "https://accounts.google.com"
TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"


@dataclass(frozen=True)
class StsFederatedReaderArgs:
    reader: AzureStsReader
    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    # This site's data accounts by name: each grant names the account by its resource id, so it
    # is created after the account.
    account_ids: Mapping[str, pulumi.Input[str]]
    tags: dict[str, str]


class StsFederatedReader(pulumi.ComponentResource):
    """The identity Storage Transfer Service (the GCP DR site's jobs) signs in to Azure as, by
    workload identity federation with Google as the issuer, bound to the DR project's transfer
    service agent. It may only read blobs in the named accounts. No SAS token, account key or
    client secret exists to leak or rotate (the accounts refuse shared-key access anyway).

    Google documents an Entra application with a federated credential. A user-assigned managed
    identity is used instead: it supports federated credentials the same way, and it lives in
    azure-native, so the stack needs no azuread provider and no directory permissions."""

    client_id: pulumi.Output[str]
    tenant_id: pulumi.Output[str]
    principal_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: StsFederatedReaderArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:StsFederatedReader", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        reader = args.reader
        missing = [a for a in reader.storage_accounts if a not in args.account_ids]
        if missing:
            raise ValueError(
                f"azure_sts_readers {reader.identity_name}: storage accounts "
                f"{', '.join(missing)} are not data accounts of this site; regenerate the stack "
                "with `gpudr generate`"
            )
        agent = gcp.storage.get_transfer_project_service_account_output(
            project=reader.gcp_project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_name_=reader.identity_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            tags=args.tags,
            opts=child,
        )
        # Only this project's transfer service agent, nobody else holding a Google ID token.
        managedidentity.FederatedIdentityCredential(
            f"{name}-federation",
            federated_identity_credential_resource_name="gcp-storage-transfer",
            resource_name_=identity.name,
            resource_group_name=args.resource_group_name,
            issuer=GOOGLE_ISSUER,
            subject=agent.subject_id,
            audiences=[TOKEN_EXCHANGE_AUDIENCE],
            opts=child,
        )
        for account in reader.storage_accounts:
            # Read only, account by account: the pull can never write or delete at the primary.
            authorization.RoleAssignment(
                f"{name}-read-{account}",
                role_assignment_name=assignment_name(
                    account, reader.identity_name, STORAGE_BLOB_DATA_READER
                ),
                scope=args.account_ids[account],
                role_definition_id=role_definition_id(
                    args.subscription_id, STORAGE_BLOB_DATA_READER
                ),
                principal_id=identity.principal_id,
                # Set so Azure does not look the new identity up in Entra ID, which can lag.
                principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
                opts=child,
            )
        self.client_id = identity.client_id
        self.tenant_id = identity.tenant_id
        self.principal_id = identity.principal_id
        self.register_outputs(
            {
                "client_id": self.client_id,
                "tenant_id": self.tenant_id,
                "principal_id": self.principal_id,
            }
        )


# One tunnel per HA VPN interface, each to one instance of the active-active Azure gateway, with
# a BGP session over a link-local /30 in Azure's APIPA range for VPN gateways (169.254.21.0 -
# 169.254.22.255): (Azure's address, Google's address), as in Google's guide "Create HA VPN
# connections between Google Cloud and Azure".
BGP_ADDRESSES = (("169.254.21.1", "169.254.21.2"), ("169.254.22.1", "169.254.22.2"))
TUNNELS = len(BGP_ADDRESSES)
assert len(IP_CONFIGURATIONS) == TUNNELS  # one tunnel per gateway instance

# A custom IPsec policy instead of Azure's default proposals. Phase 2 uses AES-GCM-256: the
# per-tunnel throughput the planner counts for the gateway SKU is Microsoft's figure with
# GCMAES256. Every choice is also in Cloud VPN's supported IKEv2 cipher list (phase 1 AES-CBC-256,
# HMAC-SHA2-256, DH group 14; phase 2 AES-GCM-16-256, PFS group 14), and the phase 2 lifetime is
# Cloud VPN's own (3 h). Azure then proposes and accepts only this set, so it is what is
# negotiated whichever side initiates.
IPSEC_POLICY = network.IpsecPolicyArgs(
    ike_encryption=network.IkeEncryption.AES256,
    ike_integrity=network.IkeIntegrity.SHA256,
    dh_group=network.DhGroup.DH_GROUP14,
    ipsec_encryption=network.IpsecEncryption.GCMAES256,
    ipsec_integrity=network.IpsecIntegrity.GCMAES256,
    pfs_group=network.PfsGroup.PFS14,
    sa_life_time_seconds=10800,
    sa_data_size_kilobytes=102400000,  # Azure's default; the lifetime rekeys first
)


class GcpVpn(pulumi.ComponentResource):
    """An active-active Azure VPN gateway joined to the GCP DR site's HA VPN gateway: two
    tunnels (one per HA VPN interface, each to one Azure instance), IKEv2, BGP over each.

    The DR site's gateway and Cloud Router are found by name in its project; the external
    gateway, tunnels and BGP sessions on the GCP side are declared here, with the shared keys,
    so the DR stack never holds a secret of, or a reference to, this stack."""

    tunnels: pulumi.Output[int]
    capacity_gbps: pulumi.Output[float]
    gateway_id: pulumi.Output[str]
    public_ips: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: AzureVpnArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:GcpVpn", name, None, opts)
        _check_vpn(name, args)
        peer, link = args.peer, args.link
        assert peer.project is not None and peer.network_name is not None  # _check_vpn
        self._name, self._args = name, args
        self._child = pulumi.ResourceOptions(parent=self)
        self._gateway_name = vpn_gateway_name(args.network_name)
        self._tags = {**args.tags, "gpudr:capacity-gbps": f"{link.capacity_gbps:g}"}
        # The gateway's own sub-resource ids, known before it exists: each connection names
        # the instance (IP configuration) an APIPA address belongs to.
        own_id = gateway_arm_id(args.subscription_id, args.resource_group_name, self._gateway_name)
        ip_configuration_ids = [ip_configuration_id(own_id, i) for i in range(TUNNELS)]
        assert link.gateway_sku is not None  # _check_vpn
        gateway, public_ips = declare_gateway(
            name,
            GatewaySpec(
                resource_group_name=args.resource_group_name,
                location=args.location,
                subscription_id=args.subscription_id,
                cidr=args.cidr,
                network_name=args.network_name,
                network=args.network,
                sku=link.gateway_sku,
                asn=args.asn,
                bgp_addresses=[[azure] for azure, _google in BGP_ADDRESSES],
                tags=self._tags,
            ),
            self,
        )
        ha_vpn = gcp.compute.get_hc_vpn_gateway_output(  # "hc": HA VPN in this SDK
            name=f"{peer.network_name}-havpn",
            project=peer.project,
            region=peer.region,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        external = gcp.compute.ExternalVpnGateway(
            f"{name}-azure-gateway",
            name=f"{peer.network_name}-azure",
            project=peer.project,
            # One peer device (the Azure gateway) with two addresses, one per instance.
            redundancy_type="TWO_IPS_REDUNDANCY",
            interfaces=[
                gcp.compute.ExternalVpnGatewayInterfaceArgs(id=i, ip_address=ip.ip_address)
                for i, ip in enumerate(public_ips)
            ],
            description="gpudr: the Azure primary's active-active VPN gateway",
            opts=self._child,
        )
        for i in range(TUNNELS):
            self._tunnel(i, gateway, ha_vpn, external, ip_configuration_ids)
        self.tunnels = pulumi.Output.from_input(TUNNELS)
        self.capacity_gbps = pulumi.Output.from_input(link.capacity_gbps)
        self.gateway_id = gateway.id
        self.public_ips = pulumi.Output.all(*[ip.ip_address for ip in public_ips]).apply(
            lambda ips: [str(ip) for ip in ips]
        )
        self.register_outputs(
            {
                "tunnels": self.tunnels,
                "capacity_gbps": self.capacity_gbps,
                "gateway_id": self.gateway_id,
                "public_ips": self.public_ips,
            }
        )

    def _tunnel(
        self,
        i: int,
        gateway: network.VirtualNetworkGateway,
        ha_vpn: pulumi.Output[gcp.compute.GetHcVpnGatewayResult],
        external: gcp.compute.ExternalVpnGateway,
        ip_configuration_ids: list[pulumi.Output[str]],
    ) -> None:
        """Tunnel i, both halves: the GCP tunnel with its BGP session to Azure instance i, and
        Azure's view of HA VPN interface i with the IPsec connection to it. One key per tunnel,
        generated here and never in config: it goes to both ends as a secret. Alphanumeric, the
        character set both Azure and Google accept as is."""
        args, name, peer = self._args, self._name, self._args.peer
        assert peer.project is not None and peer.network_name is not None  # _check_vpn
        azure_bgp, google_bgp = BGP_ADDRESSES[i]
        key = random.RandomPassword(f"{name}-psk-{i}", length=32, special=False, opts=self._child)
        shared_key: pulumi.Output[str] = pulumi.Output.secret(key.result)
        declare_bgp_tunnel(
            name,
            i,
            BgpTunnel(
                name=f"{peer.network_name}-azure-{i}",
                project=peer.project,
                region=peer.region,
                router=f"{peer.network_name}-router",
                gateway=ha_vpn.self_link,
                gateway_interface=i,
                external_gateway=external.self_link,
                external_interface=i,
                shared_secret=shared_key,
                inside_range=f"{google_bgp}/30",
                peer_ip=azure_bgp,
                peer_asn=args.asn,
            ),
            self._child,
        )
        # Azure's view of HA VPN interface i: its address and its BGP speaker.
        local = network.LocalNetworkGateway(
            f"{name}-peer-{i}",
            local_network_gateway_name=f"{peer.network_name}-if{i}",
            resource_group_name=args.resource_group_name,
            location=args.location,
            gateway_ip_address=ha_vpn.vpn_interfaces[i].ip_address,
            # No address space: the GCP prefixes are learned over BGP, and an APIPA peer
            # address needs no /32 route of its own.
            bgp_settings=network.BgpSettingsArgs(asn=peer.asn, bgp_peering_address=google_bgp),
            tags=self._tags,
            opts=self._child,
        )
        network.VirtualNetworkGatewayConnection(
            f"{name}-connection-{i}",
            virtual_network_gateway_connection_name=f"{self._gateway_name}-{peer.site}-{i}",
            resource_group_name=args.resource_group_name,
            location=args.location,
            connection_type=network.VirtualNetworkGatewayConnectionType.IPSEC,
            connection_protocol=network.VirtualNetworkGatewayConnectionProtocol.IK_EV2,
            virtual_network_gateway1=network.VirtualNetworkGatewayArgs(id=gateway.id),
            local_network_gateway2=network.LocalNetworkGatewayArgs(id=local.id),
            enable_bgp=True,
            use_policy_based_traffic_selectors=False,
            shared_key=shared_key,
            ipsec_policies=[IPSEC_POLICY],
            # Each instance speaks BGP from its one APIPA address; a connection of an
            # active-active gateway names both.
            gateway_custom_bgp_ip_addresses=[
                network.GatewayCustomBgpIpAddressIpConfigurationArgs(
                    ip_configuration_id=ip_configuration_ids[j],
                    custom_bgp_ip_address=BGP_ADDRESSES[j][0],
                )
                for j in range(TUNNELS)
            ],
            tags=self._tags,
            opts=self._child,
        )


def _check_vpn(name: str, args: AzureVpnArgs) -> None:
    """The plan's side of the link: the GCP peer's names and ASN, the gateway SKU, and the
    two tunnels an active-active gateway to an HA VPN gateway has."""
    peer, link = args.peer, args.link
    if not peer.project or not peer.network_name or not peer.asn:
        raise ValueError(
            f"{name}: the GCP peer {peer.site} needs project, network_name and asn in "
            "gpudr:site peers; regenerate the stack with `gpudr generate`"
        )
    if not link.gateway_sku:
        raise ValueError(
            f"{name}: the vpn link to {peer.site} has no gateway_sku; regenerate the stack"
        )
    if link.tunnels is not None and link.tunnels != TUNNELS:
        raise ValueError(
            f"{name}: the vpn link to {peer.site} plans {link.tunnels} tunnels; an "
            f"active-active Azure gateway to an HA VPN gateway has {TUNNELS}"
        )
