"""The BGP site-to-site VPN between an AWS primary's transit gateway and its Azure DR site's
active-active VPN gateway (Microsoft's guide "How to connect AWS and Azure using a BGP-enabled
VPN gateway", defaults.yaml source azure-aws-vpn).

The primary's stack owns everything that joins the two clouds, as it does for the HA VPN to a
GCP DR site (components/xcloud/aws_gcp.py): the DR stack keeps only its anchor, the gateway
(components/azure/vpn.AwsVpnAnchor), found here by its deterministic name in the DR site's
resource group; the local network gateways and connections are declared next to it, in that
resource group, through this stack's azure-native provider. The DR stack never needs this
stack's state, region or keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_random as random
from pulumi_azure_native import network

from components.azure.vpn import (
    AWS_TUNNEL_CIDRS,
    AWS_TUNNELS,
    INSTANCES,
    ip_configuration_id,
    public_ip_name,
    tunnel_addresses,
    vpn_gateway_name,
)
from gpudr.contract.site import LinkConfig, PeerConfig

# The IPsec parameters, the same at both ends so that whichever side initiates, one proposal
# matches. Phase 2 is AES-GCM-256: AWS accepts AES256-GCM-16 for phase 2 (tunnel options,
# defaults.yaml aws-vpn-tunnel-options), and the per-tunnel throughput the planner counts for
# the Azure gateway SKU is Microsoft's figure with GCMAES256. Phase 1 is AES-CBC-256 with
# SHA2-256 and DH group 14, PFS with group 14 (Azure's name for it is PFS2048); no SHA-1 or
# 1024-bit group is offered anywhere. Lifetimes: AWS allows at most 3600 s for phase 2, so
# Azure's SA lifetime is set to it; phase 1 is 28800 s, Azure's fixed IKE SA lifetime and
# AWS's default.
IKE_ENCRYPTION, IKE_INTEGRITY, IKE_DH_GROUP = "AES256", "SHA2-256", 14
IPSEC_ENCRYPTION, IPSEC_INTEGRITY, PFS_GROUP = "AES256-GCM-16", "SHA2-256", 14
PHASE1_LIFETIME_S = 28800
PHASE2_LIFETIME_S = 3600
IPSEC_POLICY = network.IpsecPolicyArgs(
    ike_encryption=network.IkeEncryption.AES256,
    ike_integrity=network.IkeIntegrity.SHA256,
    dh_group=network.DhGroup.DH_GROUP14,
    ipsec_encryption=network.IpsecEncryption.GCMAES256,
    ipsec_integrity=network.IpsecIntegrity.GCMAES256,
    pfs_group=network.PfsGroup.PFS2048,
    sa_life_time_seconds=PHASE2_LIFETIME_S,
    sa_data_size_kilobytes=102400000,  # Azure's default; the lifetime rekeys first
)


@dataclass(frozen=True)
class AzureGateway:
    """The Azure DR site's gateway as this stack finds it: by name, never by its state."""

    id: pulumi.Output[str]
    public_ips: Sequence[pulumi.Output[str]]  # instance 0, instance 1


def peer_vpn_gateway(peer: PeerConfig, parent: pulumi.Resource) -> AzureGateway:
    """An Azure DR site's VPN gateway and its instances' public addresses, found by their
    deterministic names in its resource group: the AWS primary's stack reads nothing of the DR
    stack."""
    if not peer.resource_group or not peer.network_name or not peer.asn:
        raise ValueError(
            f"VPN to {peer.site}: the Azure peer needs resource_group, network_name and asn in "
            "gpudr:site peers; regenerate the stack with `gpudr generate`"
        )
    name = vpn_gateway_name(peer.network_name)
    opts = pulumi.InvokeOutputOptions(parent=parent)
    gateway = network.get_virtual_network_gateway_output(
        resource_group_name=peer.resource_group, virtual_network_gateway_name=name, opts=opts
    )
    ips = [
        network.get_public_ip_address_output(
            resource_group_name=peer.resource_group,
            public_ip_address_name=public_ip_name(name, i),
            opts=opts,
        ).apply(lambda ip: str(ip.ip_address))
        for i in range(INSTANCES)
    ]
    return AzureGateway(id=gateway.apply(lambda g: str(g.id)), public_ips=ips)


@dataclass(frozen=True)
class AzureVpnArgs:
    aws_region: str  # the transit gateway's region: the VPN connections live there
    transit_gateway_id: pulumi.Input[str]
    aws_asn: int  # the transit gateway's Amazon-side ASN
    peer: PeerConfig  # the Azure DR site
    gateway: AzureGateway
    link: LinkConfig
    tags: dict[str, str]  # AWS and Azure tags alike


class AzureVpn(pulumi.ComponentResource):
    """Two AWS VPN connections on the transit gateway, one per Azure gateway instance, two
    tunnels each (four, BGP on each, ECMP across them), and Azure's side of each tunnel: a
    local network gateway (the tunnel's AWS outside address and BGP speaker) and a connection
    from the DR site's gateway with the custom IPsec policy and Azure's APIPA address for it.

    The VPN attachments need no route table resources: the site's transit gateway (network.py)
    has default route table association and propagation enabled, so the Azure prefixes learned
    over BGP propagate into the default table the VPC attachment uses. On Azure, the gateway
    propagates what it learns into the DR VNet's subnets."""

    tunnels: pulumi.Output[int]
    capacity_gbps: pulumi.Output[float]

    def __init__(
        self, name: str, args: AzureVpnArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:AzureVpn", name, None, opts)
        if args.link.tunnels != AWS_TUNNELS:
            raise ValueError(
                f"{name}: the vpn link to {args.peer.site} plans {args.link.tunnels} tunnels; "
                f"two AWS VPN connections to an active-active Azure gateway have {AWS_TUNNELS}; "
                "regenerate the stack with `gpudr generate`"
            )
        self._name, self._args = name, args
        self._child = pulumi.ResourceOptions(parent=self)
        self._tags = {**args.tags, "gpudr:capacity-gbps": f"{args.link.capacity_gbps:g}"}
        for instance in range(INSTANCES):
            keys = [self._key(instance, t) for t in range(len(AWS_TUNNEL_CIDRS[instance]))]
            connection = self._aws_connection(instance, keys)
            for t, key in enumerate(keys):
                self._azure_tunnel(instance, t, connection, key)
        self.tunnels = pulumi.Output.from_input(AWS_TUNNELS)
        self.capacity_gbps = pulumi.Output.from_input(args.link.capacity_gbps)
        self.register_outputs({"tunnels": self.tunnels, "capacity_gbps": self.capacity_gbps})

    def _key(self, instance: int, tunnel: int) -> pulumi.Output[str]:
        """One pre-shared key per tunnel, generated here and never in config, sent to both ends
        as a secret. Letters only: AWS takes letters, digits, `.` and `_` and refuses a key that
        starts with 0; Azure takes any of them (32 letters: about 182 bits)."""
        key = random.RandomPassword(
            f"{self._name}-psk-{instance}-{tunnel}",
            length=32,
            special=False,
            numeric=False,
            opts=self._child,
        )
        return pulumi.Output.secret(key.result)

    def _aws_connection(
        self, instance: int, keys: Sequence[pulumi.Output[str]]
    ) -> aws.ec2.VpnConnection:
        """Azure instance `instance` as a customer gateway, and the VPN connection to it."""
        args = self._args
        cgw = aws.ec2.CustomerGateway(
            f"{self._name}-cgw-{instance}",
            bgp_asn=str(args.peer.asn),  # a string in this provider
            ip_address=args.gateway.public_ips[instance],
            type="ipsec.1",
            region=args.aws_region,
            tags=self._tags,
            opts=self._child,
        )
        first, second = AWS_TUNNEL_CIDRS[instance]
        return aws.ec2.VpnConnection(
            f"{self._name}-vpn-{instance}",
            customer_gateway_id=cgw.id,
            transit_gateway_id=args.transit_gateway_id,
            type="ipsec.1",
            static_routes_only=False,  # BGP
            tunnel_inside_ip_version="ipv4",
            tunnel1_inside_cidr=first,
            tunnel2_inside_cidr=second,
            tunnel1_preshared_key=keys[0],
            tunnel2_preshared_key=keys[1],
            # AWS starts the negotiation rather than waiting for Azure (Microsoft's guide), and
            # starts it again when dead peer detection gives up on the tunnel.
            tunnel1_startup_action="start",
            tunnel2_startup_action="start",
            tunnel1_dpd_timeout_action="restart",
            tunnel2_dpd_timeout_action="restart",
            tunnel1_ike_versions=["ikev2"],
            tunnel2_ike_versions=["ikev2"],
            tunnel1_phase1_encryption_algorithms=[IKE_ENCRYPTION],
            tunnel2_phase1_encryption_algorithms=[IKE_ENCRYPTION],
            tunnel1_phase1_integrity_algorithms=[IKE_INTEGRITY],
            tunnel2_phase1_integrity_algorithms=[IKE_INTEGRITY],
            tunnel1_phase1_dh_group_numbers=[IKE_DH_GROUP],
            tunnel2_phase1_dh_group_numbers=[IKE_DH_GROUP],
            tunnel1_phase1_lifetime_seconds=PHASE1_LIFETIME_S,
            tunnel2_phase1_lifetime_seconds=PHASE1_LIFETIME_S,
            tunnel1_phase2_encryption_algorithms=[IPSEC_ENCRYPTION],
            tunnel2_phase2_encryption_algorithms=[IPSEC_ENCRYPTION],
            # GCM authenticates by itself; the list still leaves SHA-1 out of every proposal.
            tunnel1_phase2_integrity_algorithms=[IPSEC_INTEGRITY],
            tunnel2_phase2_integrity_algorithms=[IPSEC_INTEGRITY],
            tunnel1_phase2_dh_group_numbers=[PFS_GROUP],
            tunnel2_phase2_dh_group_numbers=[PFS_GROUP],
            tunnel1_phase2_lifetime_seconds=PHASE2_LIFETIME_S,
            tunnel2_phase2_lifetime_seconds=PHASE2_LIFETIME_S,
            region=args.aws_region,
            tags=self._tags,
            opts=self._child,
        )

    def _azure_tunnel(
        self,
        instance: int,
        tunnel: int,
        connection: aws.ec2.VpnConnection,
        key: pulumi.Output[str],
    ) -> None:
        """Azure's side of AWS tunnel `tunnel` (1 or 2 at AWS) of the connection to `instance`:
        AWS's outside address and BGP speaker, and the IPsec connection from the gateway."""
        args, name, peer = self._args, self._name, self._args.peer
        assert peer.resource_group is not None and peer.network_name is not None  # looked up
        first = tunnel == 0
        outside = connection.tunnel1_address if first else connection.tunnel2_address
        aws_bgp = (
            connection.tunnel1_vgw_inside_address
            if first
            else connection.tunnel2_vgw_inside_address
        )
        index = instance * 2 + tunnel
        local = network.LocalNetworkGateway(
            f"{name}-peer-{index}",
            local_network_gateway_name=f"{vpn_gateway_name(peer.network_name)}-aws-{index}",
            resource_group_name=peer.resource_group,
            location=peer.region,
            gateway_ip_address=outside,
            # No address space: the AWS prefixes are learned over BGP, and an APIPA peer
            # address needs no /32 route of its own.
            bgp_settings=network.BgpSettingsArgs(asn=args.aws_asn, bgp_peering_address=aws_bgp),
            tags=self._tags,
            opts=self._child,
        )
        # Every connection of an active-active gateway names one address per instance; only
        # the one of the instance this tunnel reaches is used (Microsoft's guide: the other is
        # that instance's first address).
        azure_bgp = [
            tunnel_addresses(AWS_TUNNEL_CIDRS[i][tunnel if i == instance else 0])[1]
            for i in range(INSTANCES)
        ]
        network.VirtualNetworkGatewayConnection(
            f"{name}-connection-{index}",
            virtual_network_gateway_connection_name=(
                f"{vpn_gateway_name(peer.network_name)}-aws-{index}"
            ),
            resource_group_name=peer.resource_group,
            location=peer.region,
            connection_type=network.VirtualNetworkGatewayConnectionType.IPSEC,
            connection_protocol=network.VirtualNetworkGatewayConnectionProtocol.IK_EV2,
            virtual_network_gateway1=network.VirtualNetworkGatewayArgs(id=args.gateway.id),
            local_network_gateway2=network.LocalNetworkGatewayArgs(id=local.id),
            enable_bgp=True,
            use_policy_based_traffic_selectors=False,
            shared_key=key,
            ipsec_policies=[IPSEC_POLICY],
            gateway_custom_bgp_ip_addresses=[
                network.GatewayCustomBgpIpAddressIpConfigurationArgs(
                    ip_configuration_id=ip_configuration_id(args.gateway.id, i),
                    custom_bgp_ip_address=azure_bgp[i],
                )
                for i in range(INSTANCES)
            ],
            tags=self._tags,
            opts=self._child,
        )
