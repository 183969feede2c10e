"""An Azure site's active-active VPN gateway, and the Azure DR site's anchor for an AWS primary.

One gateway shape serves every VPN into or out of Azure: route-based, Generation2, a zone-
redundant (AZ) SKU, two instances each with its own zone-redundant Standard public IP, BGP with
custom APIPA addresses on each instance. The Azure primary's VPN to GCP declares it with its
tunnels (cross_cloud.GcpVpn); the Azure DR site of an AWS primary declares only the gateway
(`AwsVpnAnchor`), under a deterministic name, and the AWS primary's stack joins it
(components/aws/azure_vpn.py), as an AWS primary joins a GCP DR site's HA VPN gateway.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import network

from components.azure.network import gateway_subnet_cidr
from gpudr.contract.site import LinkConfig, PeerConfig

# The gateway's two instances, by their IP configuration names.
IP_CONFIGURATIONS = ("ipconfig-0", "ipconfig-1")
INSTANCES = len(IP_CONFIGURATIONS)
# Azure's zones: a zone-redundant public IP, so the AZ gateway SKU survives the loss of a zone.
ZONES = ["1", "2", "3"]

# The AWS tunnels' inside CIDRs, by Azure instance (the customer gateway AWS sees) and AWS
# tunnel, from Microsoft's guide "How to connect AWS and Azure using a BGP-enabled VPN gateway"
# (defaults.yaml source azure-aws-vpn). Each /30 lies in Azure's APIPA range for VPN gateways
# (169.254.21.0 - 169.254.22.255) and outside AWS's reserved /30s (169.254.0.0/30 ..
# 169.254.5.0/30, 169.254.169.252/30); AWS takes the first address of each, Azure the second.
AWS_TUNNEL_CIDRS = (
    ("169.254.21.0/30", "169.254.22.0/30"),
    ("169.254.21.4/30", "169.254.22.4/30"),
)
AWS_TUNNELS = sum(len(t) for t in AWS_TUNNEL_CIDRS)


def tunnel_addresses(cidr: str) -> tuple[str, str]:
    """(AWS's BGP address, Azure's) in a tunnel's inside /30: its first and second hosts."""
    first, second = list(ipaddress.ip_network(cidr).hosts())[:2]
    return str(first), str(second)


def aws_bgp_addresses() -> list[list[str]]:
    """Azure's custom APIPA BGP addresses per instance for the AWS tunnels (one per tunnel)."""
    return [[tunnel_addresses(c)[1] for c in cidrs] for cidrs in AWS_TUNNEL_CIDRS]


def vpn_gateway_name(network_name: str) -> str:
    """A site's VPN gateway, by the name an AWS primary's stack finds it under."""
    return f"{network_name}-vpngw"


def public_ip_name(gateway_name: str, instance: int) -> str:
    return f"{gateway_name}-{instance}"


def ip_configuration_id(gateway_id: pulumi.Input[str], instance: int) -> pulumi.Output[str]:
    """An instance's IP configuration, the id its BGP addresses and each connection name."""
    return pulumi.Output.concat(gateway_id, "/ipConfigurations/", IP_CONFIGURATIONS[instance])


def gateway_arm_id(
    subscription_id: pulumi.Input[str], resource_group_name: pulumi.Input[str], gateway_name: str
) -> pulumi.Output[str]:
    """The gateway's ARM id, known before it exists (its BGP settings name its own instances)."""
    return pulumi.Output.concat(
        "/subscriptions/",
        subscription_id,
        "/resourceGroups/",
        resource_group_name,
        "/providers/Microsoft.Network/virtualNetworkGateways/",
        gateway_name,
    )


@dataclass(frozen=True)
class GatewaySpec:
    """What one active-active gateway is declared from."""

    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    cidr: str  # the site's range: the GatewaySubnet is carved from it (network.py)
    network_name: str  # the site's virtual network
    # The site's network component: the GatewaySubnet waits for all of it (the VNet exists,
    # and Azure refuses concurrent changes to one virtual network).
    network: pulumi.Resource
    sku: str
    asn: int  # this site's private ASN (transit_gateway_asn in the site config)
    bgp_addresses: Sequence[Sequence[str]]  # the custom APIPA addresses of each instance
    tags: dict[str, str]


def declare_gateway(
    name: str, spec: GatewaySpec, owner: pulumi.Resource
) -> tuple[network.VirtualNetworkGateway, list[network.PublicIPAddress]]:
    """The GatewaySubnet, one public IP per instance and the active-active, route-based gateway
    in it, children of `owner` named `{name}-subnet`, `{name}-ip-{i}`, `{name}-gateway`."""
    child = pulumi.ResourceOptions(parent=owner)
    gateway_name = vpn_gateway_name(spec.network_name)
    public_ips = [
        # AZ gateway SKUs take only Standard, static addresses.
        network.PublicIPAddress(
            f"{name}-ip-{i}",
            public_ip_address_name=public_ip_name(gateway_name, i),
            resource_group_name=spec.resource_group_name,
            location=spec.location,
            sku=network.PublicIPAddressSkuArgs(
                name=network.PublicIPAddressSkuName.STANDARD,
                tier=network.PublicIPAddressSkuTier.REGIONAL,
            ),
            public_ip_allocation_method=network.IPAllocationMethod.STATIC,
            public_ip_address_version=network.IPVersion.I_PV4,
            zones=ZONES,
            tags=spec.tags,
            opts=child,
        )
        for i in range(INSTANCES)
    ]
    subnet = network.Subnet(
        f"{name}-subnet",
        subnet_name="GatewaySubnet",  # the only name Azure accepts for a gateway's subnet
        virtual_network_name=spec.network_name,
        resource_group_name=spec.resource_group_name,
        address_prefix=gateway_subnet_cidr(spec.cidr),
        opts=pulumi.ResourceOptions(parent=owner, depends_on=[spec.network]),
    )
    own_id = gateway_arm_id(spec.subscription_id, spec.resource_group_name, gateway_name)
    gateway = network.VirtualNetworkGateway(
        f"{name}-gateway",
        virtual_network_gateway_name=gateway_name,
        resource_group_name=spec.resource_group_name,
        location=spec.location,
        gateway_type=network.VirtualNetworkGatewayType.VPN,
        vpn_type=network.VpnType.ROUTE_BASED,  # BGP needs route-based
        vpn_gateway_generation=network.VpnGatewayGeneration.GENERATION2,
        sku=network.VirtualNetworkGatewaySkuArgs(name=spec.sku, tier=spec.sku),
        # Both instances carry tunnels: the planned capacity counts every tunnel, and a peer
        # with two addresses (HA VPN's SLA, AWS's two customer gateways) needs both.
        active_active=True,
        enable_bgp=True,
        bgp_settings=network.BgpSettingsArgs(
            asn=spec.asn,
            bgp_peering_addresses=[
                network.IPConfigurationBgpPeeringAddressArgs(
                    ipconfiguration_id=ip_configuration_id(own_id, i),
                    custom_bgp_ip_addresses=list(spec.bgp_addresses[i]),
                )
                for i in range(INSTANCES)
            ],
        ),
        ip_configurations=[
            network.VirtualNetworkGatewayIPConfigurationArgs(
                name=IP_CONFIGURATIONS[i],
                private_ip_allocation_method=network.IPAllocationMethod.DYNAMIC,
                subnet=network.SubResourceArgs(id=subnet.id),
                public_ip_address=network.SubResourceArgs(id=public_ips[i].id),
            )
            for i in range(INSTANCES)
        ],
        tags=spec.tags,
        opts=child,
    )
    return gateway, public_ips


@dataclass(frozen=True)
class AzureVpnArgs:
    """An Azure site's VPN gateway and what it joins: the same for an Azure primary's VPN to a
    GCP DR site (cross_cloud.GcpVpn) and an Azure DR site's anchor for an AWS primary."""

    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    cidr: str  # the site's range: the GatewaySubnet is carved from it (network.py)
    network_name: str  # the site's virtual network
    # The site's network component: the GatewaySubnet waits for all of it (the VNet exists,
    # and Azure refuses concurrent changes to one virtual network).
    network: pulumi.Resource
    asn: int  # this site's private ASN (transit_gateway_asn in the site config)
    peer: PeerConfig  # the other cloud's site
    link: LinkConfig
    tags: dict[str, str]


class AwsVpnAnchor(pulumi.ComponentResource):
    """The Azure DR site's end of the VPN from an AWS primary's transit gateway: the
    active-active gateway alone, each instance speaking BGP from the Azure address of both AWS
    tunnels that reach it. Everything that joins it (the AWS customer gateways and VPN
    connections, the local network gateways and connections here) is the AWS primary's stack's,
    with the shared keys: this stack holds no secret of, and no reference to, the primary."""

    gateway_id: pulumi.Output[str]
    public_ips: pulumi.Output[list[str]]
    capacity_gbps: pulumi.Output[float]

    def __init__(
        self, name: str, args: AzureVpnArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:AwsVpnAnchor", name, None, opts)
        link = args.link
        if not link.gateway_sku:
            raise ValueError(
                f"{name}: the vpn link from {args.peer.site} has no gateway_sku; regenerate the "
                "stack with `gpudr generate`"
            )
        if link.tunnels != AWS_TUNNELS:
            raise ValueError(
                f"{name}: the vpn link from {args.peer.site} plans {link.tunnels} tunnels; an "
                f"AWS primary's two VPN connections bring {AWS_TUNNELS}; regenerate the stack"
            )
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
                bgp_addresses=aws_bgp_addresses(),
                tags={**args.tags, "gpudr:capacity-gbps": f"{link.capacity_gbps:g}"},
            ),
            self,
        )
        self.gateway_id = gateway.id
        self.public_ips = pulumi.Output.all(*[ip.ip_address for ip in public_ips]).apply(
            lambda ips: [str(ip) for ip in ips]
        )
        self.capacity_gbps = pulumi.Output.from_input(link.capacity_gbps)
        self.register_outputs(
            {
                "gateway_id": self.gateway_id,
                "public_ips": self.public_ips,
                "capacity_gbps": self.capacity_gbps,
            }
        )
