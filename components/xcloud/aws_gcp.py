"""The HA VPN between an AWS transit gateway and a GCP HA VPN gateway, in either direction.

The primary's stack owns everything that joins the two clouds, as it owns transit gateway
peering: the DR stack keeps only its anchors (its transit gateway, or its HA VPN gateway and
Cloud Router) and never needs the primary's state or region. The DR site's anchors are found by
their deterministic names (`peer_ha_vpn_gateway`, `peer_transit_gateway`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from components.xcloud.bgp import BgpTunnel, declare_bgp_tunnel
from gpudr.contract.site import LinkConfig, PeerConfig


def peer_ha_vpn_gateway(
    peer: PeerConfig, parent: pulumi.Resource
) -> tuple[pulumi.Output[str], pulumi.Output[list[str]]]:
    """A GCP DR site's HA VPN gateway (its self link and two interface addresses), found by its
    deterministic name in its project: the AWS primary's stack reads nothing of the DR stack."""
    if not peer.project or not peer.network_name:
        raise ValueError(
            f"HA VPN to {peer.site}: the GCP peer needs a project and a network name; "
            "regenerate the stack with `gpudr generate`"
        )
    gateway = gcp.compute.get_hc_vpn_gateway_output(  # "hc": HA VPN in this SDK
        name=f"{peer.network_name}-havpn",
        project=peer.project,
        region=peer.region,
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    ips = gateway.vpn_interfaces.apply(lambda interfaces: [i.ip_address for i in interfaces])
    return gateway.self_link, ips


def peer_transit_gateway(peer: PeerConfig, parent: pulumi.Resource) -> pulumi.Output[str]:
    """An AWS DR site's transit gateway id, found by its Name tag in the DR region (as transit
    gateway peering finds it): the GCP primary's stack reads nothing of the DR stack."""
    gateway = aws.ec2transitgateway.get_transit_gateway_output(
        filters=[
            aws.ec2transitgateway.GetTransitGatewayFilterArgs(
                name="tag:Name", values=[peer.transit_gateway_name]
            )
        ],
        region=peer.region,
        opts=pulumi.InvokeOutputOptions(parent=parent),
    )
    return gateway.id


def _nth(i: int) -> Callable[[Sequence[str]], str]:
    return lambda items: items[i]


@dataclass(frozen=True)
class GcpHaVpnArgs:
    """Both ends of the link, whichever site is the primary (the primary's stack owns it)."""

    aws_region: pulumi.Input[str]  # the transit gateway's region: the VPN connections live there
    transit_gateway_id: pulumi.Input[str]
    aws_asn: int  # the transit gateway's Amazon-side ASN
    gcp_project: str
    gcp_region: str  # the HA VPN gateway's and Cloud Router's region
    # Names the external gateway (as is) and the tunnels and BGP sessions (with -0 .. -3):
    # unique per link, since one HA VPN gateway and Cloud Router can serve several.
    gcp_name: str
    gcp_router: pulumi.Input[str]  # the Cloud Router's name
    gcp_gateway: pulumi.Input[str]  # the HA VPN gateway's self link
    gcp_gateway_ips: pulumi.Input[Sequence[str]]  # its two interface addresses, in order
    gcp_asn: int  # the Cloud Router's ASN
    link: LinkConfig
    tags: dict[str, str]  # AWS tags


class GcpHaVpn(pulumi.ComponentResource):
    """HA VPN between an AWS transit gateway and a GCP HA VPN gateway: two AWS VPN connections
    (four tunnels, BGP) to the gateway's two interfaces, ECMP across all four.

    The VPN attachments need no route table resources: the site's transit gateway (network.py)
    has default route table association and propagation enabled, so each attachment joins the
    default table, which the VPC attachment also uses, and the GCP prefixes learned over BGP
    propagate into it. The VPC's private route table already sends the peer's CIDR to the
    transit gateway."""

    tunnels: pulumi.Output[int]
    capacity_gbps: pulumi.Output[float]

    def __init__(
        self, name: str, args: GcpHaVpnArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:GcpHaVpn", name, None, opts)
        connections = self._aws_connections(name, args)
        external = self._aws_endpoints(name, args, connections)
        for i in range(4):
            self._tunnel(name, i, args, connection=connections[i // 2], external=external)
        self.tunnels = pulumi.Output.from_input(4)
        self.capacity_gbps = pulumi.Output.from_input(args.link.capacity_gbps)
        self.register_outputs({"tunnels": self.tunnels, "capacity_gbps": self.capacity_gbps})

    def _aws_connections(self, name: str, args: GcpHaVpnArgs) -> list[aws.ec2.VpnConnection]:
        """Two AWS VPN connections on the transit gateway, one per GCP gateway interface."""
        child = pulumi.ResourceOptions(parent=self)
        gateway_ips = pulumi.Output.from_input(args.gcp_gateway_ips)
        tags = {**args.tags, "gpudr:capacity-gbps": f"{args.link.capacity_gbps:g}"}
        connections = []
        for i in range(2):
            cgw = aws.ec2.CustomerGateway(
                f"{name}-cgw-{i}",
                bgp_asn=str(args.gcp_asn),  # a string in this provider
                ip_address=gateway_ips.apply(_nth(i)),
                type="ipsec.1",
                region=args.aws_region,
                tags=tags,
                opts=child,
            )
            connections.append(
                aws.ec2.VpnConnection(
                    f"{name}-vpn-{i}",
                    customer_gateway_id=cgw.id,
                    transit_gateway_id=args.transit_gateway_id,
                    type="ipsec.1",
                    static_routes_only=False,
                    tunnel1_ike_versions=["ikev2"],
                    tunnel2_ike_versions=["ikev2"],
                    region=args.aws_region,
                    tags=tags,
                    opts=child,
                )
            )
        return connections

    def _aws_endpoints(
        self, name: str, args: GcpHaVpnArgs, connections: list[aws.ec2.VpnConnection]
    ) -> gcp.compute.ExternalVpnGateway:
        """The four AWS tunnel endpoints, as GCP's external VPN gateway."""
        addresses = [
            connections[0].tunnel1_address,
            connections[0].tunnel2_address,
            connections[1].tunnel1_address,
            connections[1].tunnel2_address,
        ]
        return gcp.compute.ExternalVpnGateway(
            f"{name}-aws-gateway",
            name=args.gcp_name,
            project=args.gcp_project,
            redundancy_type="FOUR_IPS_REDUNDANCY",
            interfaces=[
                gcp.compute.ExternalVpnGatewayInterfaceArgs(id=i, ip_address=ip)
                for i, ip in enumerate(addresses)
            ],
            description="gpudr: the four AWS VPN tunnel endpoints of the transit gateway",
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _tunnel(
        self,
        name: str,
        i: int,
        args: GcpHaVpnArgs,
        *,
        connection: aws.ec2.VpnConnection,
        external: gcp.compute.ExternalVpnGateway,
    ) -> None:
        """GCP's side of AWS tunnel i: tunnels 0-1 on connection 0, 2-3 on connection 1."""
        first = i % 2 == 0
        conn = connection
        psk = conn.tunnel1_preshared_key if first else conn.tunnel2_preshared_key
        cgw_inside = conn.tunnel1_cgw_inside_address if first else conn.tunnel2_cgw_inside_address
        vgw_inside = conn.tunnel1_vgw_inside_address if first else conn.tunnel2_vgw_inside_address
        declare_bgp_tunnel(
            name,
            i,
            BgpTunnel(
                name=f"{args.gcp_name}-{i}",
                project=args.gcp_project,
                region=args.gcp_region,
                router=args.gcp_router,
                gateway=args.gcp_gateway,
                gateway_interface=i // 2,
                external_gateway=external.self_link,
                external_interface=i,
                shared_secret=psk,  # generated by AWS, a secret output, never in config
                inside_range=cgw_inside.apply(lambda ip: f"{ip}/30"),
                peer_ip=vgw_inside,
                peer_asn=args.aws_asn,
            ),
            pulumi.ResourceOptions(parent=self),
        )
