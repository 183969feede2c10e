"""A site's network on Azure: a virtual network, the AKS node subnet, and this site's half of
each VNet peering to a peer site.

Address plan, carved from the site's CIDR (a /16 shown):

    10.x.0.0/20        aks-nodes (first /20; overlay pods and services use ranges outside it)
    10.x.255.192/26    GatewaySubnet, reserved only when the site has a VPN link (last /26);
                       the subnet itself is declared with the gateway (cross_cloud.py)

VNet peering needs a peering on each side; each stack owns the half that starts in its own
virtual network and names the peer's network by an ARM id built from the plan, so neither
stack reads the other's state and the DR stack registers nothing in the primary's region.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import network

from components.azure.arm import virtual_network_id

NODES_SUBNET = "aks-nodes"


@dataclass(frozen=True)
class VnetPeer:
    site: str
    resource_group: str
    network_name: str


@dataclass(frozen=True)
class AzureSiteNetworkArgs:
    resource_group_name: pulumi.Input[str]
    location: str
    network_name: str
    cidr: str
    subscription_id: pulumi.Input[str]
    peers: Sequence[VnetPeer]
    tags: dict[str, str]


def nodes_subnet_cidr(cidr: str) -> str:
    """The AKS node subnet: the first /20 of the site's range (the whole range if smaller).
    With Azure CNI overlay only nodes take addresses from it: a /20 holds 4,091 nodes."""
    net = ipaddress.ip_network(cidr)
    return str(next(net.subnets(new_prefix=max(20, net.prefixlen))))


def gateway_subnet_cidr(cidr: str) -> str:
    """The VPN gateway's subnet: the last /26 of the site's range. Microsoft asks for /27 or
    larger; /26 leaves room for an ExpressRoute gateway to coexist in it later. At the end of
    the range so it never moves the node subnet, which starts at the beginning."""
    net = ipaddress.ip_network(cidr)
    nodes = ipaddress.ip_network(nodes_subnet_cidr(cidr))
    if net.prefixlen > 26 or nodes == net:
        raise ValueError(
            f"site cidr {cidr}: a VPN link needs a GatewaySubnet (/26) outside the AKS node "
            "subnet (the first /20); give the site a range larger than a /20 (a /16 is usual)"
        )
    return str(list(net.subnets(new_prefix=26))[-1])


class AzureSiteNetwork(pulumi.ComponentResource):
    network_id: pulumi.Output[str]
    network_name: pulumi.Output[str]
    nodes_subnet_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: AzureSiteNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:network:AzureSiteNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        # No inline subnets: the subnet below is its own resource, and declaring subnets in both
        # places makes each update of one undo the other.
        vnet = network.VirtualNetwork(
            f"{name}-vnet",
            virtual_network_name=args.network_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            address_space=network.AddressSpaceArgs(address_prefixes=[args.cidr]),
            tags=args.tags,
            opts=child,
        )
        nodes = network.Subnet(
            f"{name}-nodes",
            subnet_name=NODES_SUBNET,
            virtual_network_name=vnet.name,
            resource_group_name=args.resource_group_name,
            address_prefix=nodes_subnet_cidr(args.cidr),
            opts=child,
        )
        for peer in args.peers:
            network.VirtualNetworkPeering(
                f"{name}-to-{peer.site}",
                virtual_network_peering_name=f"to-{peer.site}",
                virtual_network_name=vnet.name,
                resource_group_name=args.resource_group_name,
                remote_virtual_network=network.SubResourceArgs(
                    id=virtual_network_id(
                        args.subscription_id, peer.resource_group, peer.network_name
                    )
                ),
                allow_virtual_network_access=True,
                # Only the two sites talk over the peering: no transit for third networks.
                allow_forwarded_traffic=False,
                allow_gateway_transit=False,
                use_remote_gateways=False,
                # After the subnet: Azure refuses concurrent changes to one virtual network.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[nodes]),
            )
        self.network_id = vnet.id
        self.network_name = vnet.name
        self.nodes_subnet_id = nodes.id
        self.register_outputs(
            {
                "network_id": self.network_id,
                "network_name": self.network_name,
                "nodes_subnet_id": self.nodes_subnet_id,
            }
        )
