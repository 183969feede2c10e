"""The private path an on-premises site's Storage Mover agents upload through into an Azure DR
site: a private endpoint for the Blob service of each replica account, in a subnet of the DR
virtual network that the ExpressRoute gateway reaches; the `privatelink.blob.core.windows.net`
zone that answers the accounts' names with those endpoints, linked to the network; and a DNS
Private Resolver whose inbound endpoint (a fixed address) on-premises DNS forwards
`blob.core.windows.net` to (runbook, on-premises checklist). Both subnets share an NSG that
admits HTTPS to the endpoints and DNS to the resolver from on premises, and denies everything
else from the network (on premises included) and from the internet.

Why: the WAN sizing assumes the uploads cross the ExpressRoute circuit. Private peering carries
only traffic to private addresses in the DR network; an agent that resolves an account's public
name uploads over the internet instead, at whatever rate that gives. With these resources the
name resolves, on premises and in the DR network alike, to an address only the circuit reaches.
gpudr/contract/azure_onprem.py holds the names and the address plan; the runbook checks the
answer from an agent host before the first job runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import dnsresolver, network, privatedns

from components.azure.network import deny_internet_rule, inbound_rule
from gpudr.contract.azure_onprem import (
    BLOB_GROUP,
    BLOB_PRIVATE_ZONE,
    DNS_RESOLVER_DELEGATION,
    upload_subnets,
)

# Private DNS zones and their links are global resources.
GLOBAL = "global"
UPLOADS_PRIORITY = 100
# After every allow, before the internet's deny (4096): what the allows do not admit from the
# VirtualNetwork tag is denied here, not admitted by Azure's AllowVnetInBound (65000).
DENY_NETWORK_PRIORITY = 4000


def uploads_security_rules(
    onprem_cidr: str, endpoints_cidr: str, inbound_cidr: str
) -> list[network.SecurityRuleArgs]:
    """What reaches the two subnets: HTTPS to the private endpoints from on premises (the
    agents) and from the DR network (its cluster reads the replicas at failover), DNS to the
    resolver from on premises (your DNS servers forward to it); nothing else from the
    VirtualNetwork tag, nothing from the internet. The tag covers what the ExpressRoute gateway
    learns, so on premises is in it: without the explicit deny, Azure's default
    AllowVnetInBound (65000) would admit every port from there."""
    tcp = network.SecurityRuleProtocol.TCP
    return [
        inbound_rule(
            "allow-onprem-https-to-endpoints",
            UPLOADS_PRIORITY,
            onprem_cidr,
            endpoints_cidr,
            "On premises (the Storage Mover agents) to the replicas' private endpoints",
            protocol=tcp,
            port="443",
        ),
        inbound_rule(
            "allow-network-https-to-endpoints",
            UPLOADS_PRIORITY + 10,
            "VirtualNetwork",
            endpoints_cidr,
            "The DR network (its cluster at failover) to the replicas' private endpoints",
            protocol=tcp,
            port="443",
        ),
        inbound_rule(
            "allow-onprem-dns-to-resolver",
            UPLOADS_PRIORITY + 20,
            onprem_cidr,
            inbound_cidr,
            "On-premises DNS servers forwarding blob.core.windows.net to the resolver",
            port="53",
        ),
        inbound_rule(
            "deny-network-inbound",
            DENY_NETWORK_PRIORITY,
            "VirtualNetwork",
            "*",
            "Nothing else from the network, its peers or on premises (the allows above only)",
            allow=False,
        ),
        deny_internet_rule("the private endpoints or the resolver"),
    ]


@dataclass(frozen=True)
class PrivateBlobPathArgs:
    resource_group_name: pulumi.Input[str]
    location: str
    network_name: str
    network_id: pulumi.Input[str]
    network: pulumi.Resource  # the DR VNet, which the subnets wait for
    cidr: str  # the DR VNet's range (gpudr.contract.azure_onprem.upload_subnets carves it)
    onprem_cidr: str  # the on-premises network the agents and your DNS servers are in
    accounts: Mapping[str, pulumi.Input[str]]  # data class -> its replica account's id
    tags: dict[str, str]


class PrivateBlobPath(pulumi.ComponentResource):
    """Private endpoints (Blob) for the replica accounts, their DNS zone, and the resolver
    on-premises DNS forwards to."""

    inbound_address: pulumi.Output[str]  # where on-premises DNS forwards blob.core.windows.net
    endpoints: pulumi.Output[dict[str, str]]  # data class -> its private endpoint's name

    def __init__(
        self, name: str, args: PrivateBlobPathArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:PrivateBlobPath", name, None, opts)
        self._name, self._args = name, args
        endpoints_subnet, inbound_subnet = self._subnets()
        zone, link = self._zone()
        names = {
            data_class: self._endpoint(data_class, account_id, endpoints_subnet, zone)
            for data_class, account_id in args.accounts.items()
        }
        self.inbound_address = self._resolver(inbound_subnet, link)
        self.endpoints = pulumi.Output.all(**names).apply(dict)
        self.register_outputs(
            {"inbound_address": self.inbound_address, "endpoints": self.endpoints}
        )

    def _subnets(self) -> tuple[network.Subnet, network.Subnet]:
        """The private endpoints' subnet and the resolver's, under one NSG."""
        name, args = self._name, self._args
        endpoints_cidr, inbound_cidr, _ = upload_subnets(args.cidr)
        nsg = network.NetworkSecurityGroup(
            f"{name}-nsg",
            network_security_group_name=f"{args.network_name}-uploads",
            resource_group_name=args.resource_group_name,
            location=args.location,
            security_rules=uploads_security_rules(args.onprem_cidr, endpoints_cidr, inbound_cidr),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Subnets of one VNet are created one at a time: Azure refuses concurrent writes to a
        # virtual network's subnets (AnotherOperationInProgress).
        endpoints_subnet = network.Subnet(
            f"{name}-endpoints-subnet",
            subnet_name="blob-endpoints",
            virtual_network_name=args.network_name,
            resource_group_name=args.resource_group_name,
            address_prefix=endpoints_cidr,
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            # The NSG applies to the private endpoints' traffic only with network policies on.
            private_endpoint_network_policies=(
                network.VirtualNetworkPrivateEndpointNetworkPolicies.ENABLED
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.network]),
        )
        inbound_subnet = network.Subnet(
            f"{name}-dns-subnet",
            subnet_name="dns-inbound",
            virtual_network_name=args.network_name,
            resource_group_name=args.resource_group_name,
            address_prefix=inbound_cidr,
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            delegations=[
                network.DelegationArgs(name="dns-resolver", service_name=DNS_RESOLVER_DELEGATION)
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[endpoints_subnet]),
        )
        return endpoints_subnet, inbound_subnet

    def _zone(self) -> tuple[privatedns.PrivateZone, privatedns.VirtualNetworkLink]:
        """The privatelink zone that answers the accounts' names, linked to the DR network."""
        name, args = self._name, self._args
        child = pulumi.ResourceOptions(parent=self)
        zone = privatedns.PrivateZone(
            f"{name}-zone",
            private_zone_name=BLOB_PRIVATE_ZONE,
            resource_group_name=args.resource_group_name,
            location=GLOBAL,
            tags=args.tags,
            opts=child,
        )
        link = privatedns.VirtualNetworkLink(
            f"{name}-zone-link",
            private_zone_name=zone.name,
            resource_group_name=args.resource_group_name,
            location=GLOBAL,
            virtual_network=privatedns.SubResourceArgs(id=args.network_id),
            # The zone only answers; nothing in the network registers names in it.
            registration_enabled=False,
            # A name with no record here (an account with a private endpoint elsewhere in the
            # company, whose public name is a CNAME into this zone too) falls back to public
            # resolution rather than NXDOMAIN for whoever forwards blob.core.windows.net here.
            resolution_policy=privatedns.ResolutionPolicy.NX_DOMAIN_REDIRECT,
            tags=args.tags,
            opts=child,
        )
        return zone, link

    def _resolver(
        self, subnet: network.Subnet, link: privatedns.VirtualNetworkLink
    ) -> pulumi.Output[str]:
        """The DNS resolver on-premises DNS forwards to, answering on a fixed address."""
        name, args = self._name, self._args
        _, _, inbound_ip = upload_subnets(args.cidr)
        resolver = dnsresolver.DnsResolver(
            f"{name}-resolver",
            resource_group_name=args.resource_group_name,
            location=args.location,
            virtual_network=dnsresolver.SubResourceArgs(id=args.network_id),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[link]),
        )
        inbound = dnsresolver.InboundEndpoint(
            f"{name}-inbound",
            dns_resolver_name=resolver.name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            ip_configurations=[
                dnsresolver.IpConfigurationArgs(
                    subnet=dnsresolver.SubResourceArgs(id=subnet.id),
                    # Fixed, so that the runbook names it before anything is deployed.
                    private_ip_address=inbound_ip,
                    private_ip_allocation_method=dnsresolver.IpAllocationMethod.STATIC,
                )
            ],
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return inbound.ip_configurations.apply(
            lambda c: str(c[0].private_ip_address or inbound_ip) if c else inbound_ip
        )

    def _endpoint(
        self,
        data_class: str,
        account_id: pulumi.Input[str],
        subnet: network.Subnet,
        zone: privatedns.PrivateZone,
    ) -> pulumi.Output[str]:
        """One account's Blob endpoint, its A record kept in the zone by a zone group (Azure
        updates the record if the endpoint's address changes)."""
        name, args = self._name, self._args
        endpoint = network.PrivateEndpoint(
            f"{name}-{data_class}-endpoint",
            resource_group_name=args.resource_group_name,
            location=args.location,
            subnet=network.SubnetArgs(id=subnet.id),
            private_link_service_connections=[
                network.PrivateLinkServiceConnectionArgs(
                    name=f"{data_class}-blob",
                    private_link_service_id=account_id,
                    group_ids=[BLOB_GROUP],
                )
            ],
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        group = network.PrivateDnsZoneGroup(
            f"{name}-{data_class}-dns",
            private_endpoint_name=endpoint.name,
            resource_group_name=args.resource_group_name,
            private_dns_zone_group_name="default",
            private_dns_zone_configs=[
                network.PrivateDnsZoneConfigArgs(name=BLOB_GROUP, private_dns_zone_id=zone.id)
            ],
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Resolves once its record is kept too: the endpoint is of no use to an agent before.
        return pulumi.Output.all(endpoint.name, group.id).apply(lambda x: str(x[0]))
