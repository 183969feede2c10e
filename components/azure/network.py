"""A site's network on Azure: a virtual network, the AKS node subnet with its network security
group, and this site's half of each VNet peering to a peer site.

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
from components.azure.gpu_cluster import POD_CIDR

NODES_SUBNET = "aks-nodes"
# Service endpoint that lets storage accounts admit the node subnet by a virtual network rule
# (bucket.py). The global one: an account in any region admits the subnet (Microsoft.Storage
# covers accounts in the subnet's own region only), so a rule keeps working for a copy written
# from another site. Free; traffic to Storage then leaves with the node's private address.
STORAGE_ENDPOINT = "Microsoft.Storage.Global"
# Inbound rules of the node subnet's NSG, by priority. Azure's own defaults stay underneath
# (65000 AllowVnetInBound, 65001 AllowAzureLoadBalancerInBound, 65500 DenyAllInBound); the rules
# here name what the cluster and the DR link need, and deny the internet before any default.
NODES_PRIORITY = 100
PEER_PRIORITY = 200
DENY_INTERNET_PRIORITY = 4096  # the lowest priority a rule can have: every allow above it wins


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
    # (peer site, its CIDR) for each site this one has a DR link to (VNet peering or VPN): the
    # only networks outside the site whose traffic the node subnet admits.
    link_peers: Sequence[tuple[str, str]] = ()


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


def inbound_rule(
    name: str,
    priority: int,
    source: str,
    destination: str,
    description: str,
    *,
    allow: bool = True,
    protocol: network.SecurityRuleProtocol = network.SecurityRuleProtocol.ASTERISK,
    port: str = "*",
) -> network.SecurityRuleArgs:
    """One inbound rule (every protocol and port unless given)."""
    return network.SecurityRuleArgs(
        name=name,
        priority=priority,
        direction=network.SecurityRuleDirection.INBOUND,
        access=network.SecurityRuleAccess.ALLOW if allow else network.SecurityRuleAccess.DENY,
        protocol=protocol,
        source_address_prefix=source,
        source_port_range="*",
        destination_address_prefix=destination,
        destination_port_range=port,
        description=description,
    )


def deny_internet_rule(what: str) -> network.SecurityRuleArgs:
    """The last inbound rule of every gpudr subnet NSG: nothing from the internet."""
    return inbound_rule(
        "deny-internet-inbound",
        DENY_INTERNET_PRIORITY,
        "Internet",
        "*",
        f"Nothing from the internet reaches {what}",
        allow=False,
    )


def nodes_security_rules(
    cidr: str, link_peers: Sequence[tuple[str, str]]
) -> list[network.SecurityRuleArgs]:
    """The node subnet's inbound rules. The first three are what AKS documents for Azure CNI
    overlay behind a subnet NSG (pod traffic is not encapsulated, so the NSG sees pod addresses):
    node to node, node to pod (service routing) and pod to pod (including DNS), every port.
    Pods reach anything outside the pod range with the node's address (SNAT), which the node rule
    covers. Then Azure's load balancer probes, each DR link's peer, and a deny of the internet."""
    nodes = nodes_subnet_cidr(cidr)
    rules = [
        inbound_rule(
            "allow-nodes-to-nodes",
            NODES_PRIORITY,
            nodes,
            nodes,
            "AKS (CNI overlay): node to node, every protocol and port",
        ),
        inbound_rule(
            "allow-nodes-to-pods",
            NODES_PRIORITY + 10,
            nodes,
            POD_CIDR,
            "AKS (CNI overlay): node to pod, every port (service routing)",
        ),
        inbound_rule(
            "allow-pods-to-pods",
            NODES_PRIORITY + 20,
            POD_CIDR,
            POD_CIDR,
            "AKS (CNI overlay): pod to pod, every port (pod and service traffic, DNS)",
        ),
        inbound_rule(
            "allow-azure-load-balancer",
            NODES_PRIORITY + 30,
            "AzureLoadBalancer",
            nodes,
            "Azure load balancer health probes to the nodes",
        ),
    ]
    for i, (site, peer_cidr) in enumerate(sorted(link_peers)):
        rules.append(
            inbound_rule(
                f"allow-dr-link-{site}",
                PEER_PRIORITY + 10 * i,
                peer_cidr,
                nodes,
                f"DR link: the peer site {site} ({peer_cidr}) to the nodes",
            )
        )
    rules.append(deny_internet_rule("the nodes (no public services on GPU clusters)"))
    return rules


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
        nsg = network.NetworkSecurityGroup(
            f"{name}-nodes-nsg",
            network_security_group_name=f"{args.network_name}-{NODES_SUBNET}",
            resource_group_name=args.resource_group_name,
            location=args.location,
            security_rules=nodes_security_rules(args.cidr, args.link_peers),
            tags=args.tags,
            opts=child,
        )
        nodes = network.Subnet(
            f"{name}-nodes",
            subnet_name=NODES_SUBNET,
            virtual_network_name=vnet.name,
            resource_group_name=args.resource_group_name,
            address_prefix=nodes_subnet_cidr(args.cidr),
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            service_endpoints=[
                network.ServiceEndpointPropertiesFormatArgs(service=STORAGE_ENDPOINT)
            ],
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
