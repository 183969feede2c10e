"""Dedicated DR links between two sites, and the capacity each provisions.

Transit gateway peering is owned by the primary's stack (requester in the primary region,
accepter and return route in the DR region), so the DR stack never depends on it: in a disaster
the DR stack is updated alone. Direct Connect is owned by the DR stack, which must be able to
manage its own way in while the primary is gone; the primary only associates its gateway.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.xcloud.dx import DxPorts, dx_ports
from gpudr.contract.naming import DX_GATEWAY_ASN
from gpudr.contract.site import LinkConfig, PeerConfig


@dataclass(frozen=True)
class TgwPeeringArgs:
    region: pulumi.Input[str]
    cidr: str
    transit_gateway_id: pulumi.Input[str]
    transit_gateway_route_table_id: pulumi.Input[str]
    peer: PeerConfig
    link: LinkConfig
    tags: dict[str, str]


class TgwPeering(pulumi.ComponentResource):
    attachment_id: pulumi.Output[str]
    capacity_gbps: pulumi.Output[float]

    def __init__(
        self, name: str, args: TgwPeeringArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:TgwPeering", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        peer = args.peer
        # Found by its Name tag in the DR region: no StackReference to the DR stack's state.
        peer_tgw = aws.ec2transitgateway.get_transit_gateway_output(
            filters=[
                aws.ec2transitgateway.GetTransitGatewayFilterArgs(
                    name="tag:Name", values=[peer.transit_gateway_name]
                )
            ],
            region=peer.region,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        tags = {**args.tags, "gpudr:capacity-gbps": f"{args.link.capacity_gbps:g}"}
        attachment = aws.ec2transitgateway.PeeringAttachment(
            f"{name}-attachment",
            transit_gateway_id=args.transit_gateway_id,
            peer_transit_gateway_id=peer_tgw.id,
            peer_region=peer.region,
            peer_account_id=peer.account,
            region=args.region,
            tags=tags,
            opts=child,
        )
        accepter = aws.ec2transitgateway.PeeringAttachmentAccepter(
            f"{name}-accepter",
            transit_gateway_attachment_id=attachment.id,
            region=peer.region,
            tags=tags,
            opts=child,
        )
        after_accept = pulumi.ResourceOptions(parent=self, depends_on=[accepter])
        aws.ec2transitgateway.Route(
            f"{name}-route-out",
            destination_cidr_block=peer.cidr,
            transit_gateway_attachment_id=attachment.id,
            transit_gateway_route_table_id=args.transit_gateway_route_table_id,
            region=args.region,
            opts=after_accept,
        )
        aws.ec2transitgateway.Route(
            f"{name}-route-back",
            destination_cidr_block=args.cidr,
            transit_gateway_attachment_id=attachment.id,
            transit_gateway_route_table_id=peer_tgw.association_default_route_table_id,
            region=peer.region,
            opts=after_accept,
        )
        self.attachment_id = attachment.id
        self.capacity_gbps = pulumi.Output.from_input(args.link.capacity_gbps)
        self.register_outputs(
            {"attachment_id": self.attachment_id, "capacity_gbps": self.capacity_gbps}
        )


def dx_gateway_name(system: str, dr_site: str) -> str:
    return f"gpudr-{system}-{dr_site}"


@dataclass(frozen=True)
class DirectConnectLinkArgs:
    region: pulumi.Input[str]
    system: str
    site: str
    cidr: str
    transit_gateway_id: pulumi.Input[str]
    link: LinkConfig
    tags: dict[str, str]


class DirectConnectLink(pulumi.ComponentResource):
    """Dedicated ports sized by the planner, split over two locations for diverse paths; more
    than one port at a location is bundled in a link aggregation group.

    Transit virtual interfaces are not declared here: they need the cross-connect (LOA-CFA)
    completed and your router's ASN and VLAN, which exist only after the ports are ordered."""

    gateway_id: pulumi.Output[str]
    capacity_gbps: pulumi.Output[float]
    # Per location, what a virtual interface is created on: its LAG, or its one connection.
    interconnect_ids: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: DirectConnectLinkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:DirectConnectLink", name, None, opts)
        interconnects: list[pulumi.Output[str]] = []
        child = pulumi.ResourceOptions(parent=self)
        link = args.link
        if not link.port_gbps or not link.ports or not link.location:
            raise ValueError(f"{name}: a direct-connect link needs a location and sized ports")
        speed = f"{link.port_gbps}Gbps"
        tags = {**args.tags, "gpudr:capacity-gbps": f"{link.capacity_gbps:g}"}
        gateway = aws.directconnect.Gateway(
            f"{name}-gateway",
            name=dx_gateway_name(args.system, args.site),
            amazon_side_asn=str(DX_GATEWAY_ASN),  # a string in this provider
            opts=child,
        )
        aws.directconnect.GatewayAssociation(
            f"{name}-association",
            dx_gateway_id=gateway.id,
            associated_gateway_id=args.transit_gateway_id,
            allowed_prefixes=[args.cidr],
            opts=child,
        )
        locations = [link.location] + ([link.secondary_location] if link.secondary_location else [])
        per_location = math.ceil(link.ports / len(locations))
        remaining = link.ports
        for index, location in enumerate(locations):
            count = min(per_location, remaining)
            remaining -= count
            interconnects.append(
                dx_ports(
                    name,
                    index,
                    DxPorts(
                        base=dx_gateway_name(args.system, args.site),
                        speed=speed,
                        location=location,
                        count=count,
                        region=args.region,
                        tags=tags,
                    ),
                    child,
                )
            )
        self.gateway_id = gateway.id
        self.capacity_gbps = pulumi.Output.from_input(link.capacity_gbps)
        self.interconnect_ids = pulumi.Output.all(*interconnects)
        self.register_outputs({"gateway_id": self.gateway_id, "capacity_gbps": self.capacity_gbps})


@dataclass(frozen=True)
class DirectConnectAttachmentArgs:
    system: str
    dr_site: str
    cidr: str
    transit_gateway_id: pulumi.Input[str]


class DirectConnectAttachment(pulumi.ComponentResource):
    """The primary's side of a Direct Connect link: its transit gateway joins the DR site's
    Direct Connect gateway, found by name (a global lookup, no DR stack state)."""

    association_id: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        args: DirectConnectAttachmentArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpudr:links:DirectConnectAttachment", name, None, opts)
        gateway = aws.directconnect.get_gateway_output(
            name=dx_gateway_name(args.system, args.dr_site),
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        association = aws.directconnect.GatewayAssociation(
            f"{name}-association",
            dx_gateway_id=gateway.id,
            associated_gateway_id=args.transit_gateway_id,
            allowed_prefixes=[args.cidr],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.association_id = association.id
        self.register_outputs({"association_id": self.association_id})
