"""The GCP half of a VPN to another cloud: one HA VPN tunnel, the Cloud Router interface on it
and its BGP session. Shared by the AWS <-> GCP HA VPN (aws_gcp.py) and the Azure <-> GCP VPN
(components/azure/cross_cloud.py), which each declare the other cloud's half themselves."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp


@dataclass(frozen=True)
class BgpTunnel:
    """One HA VPN tunnel to a peer gateway's interface and the BGP session over it."""

    name: str  # the GCP name of the tunnel, its router interface and its BGP peer
    project: str
    region: str
    router: pulumi.Input[str]
    gateway: pulumi.Input[str]  # the HA VPN gateway's self link
    gateway_interface: int
    external_gateway: pulumi.Input[str]  # the peer's ExternalVpnGateway self link
    external_interface: int
    shared_secret: pulumi.Input[str]  # a secret Output, never config
    inside_range: pulumi.Input[str]  # this side's link-local /30
    peer_ip: pulumi.Input[str]  # the peer's BGP address in that /30
    peer_asn: int


def declare_bgp_tunnel(
    resource_name: str, index: int, t: BgpTunnel, opts: pulumi.ResourceOptions
) -> None:
    """The tunnel, the Cloud Router interface on it and the BGP peer, named
    `{resource_name}-tunnel-{index}`, `-bgp-if-`, `-bgp-peer-`: the GCP half of every VPN a
    primary's stack joins to a GCP site (aws_gcp.py, components/azure/cross_cloud.py)."""
    tunnel = gcp.compute.VPNTunnel(
        f"{resource_name}-tunnel-{index}",
        name=t.name,
        project=t.project,
        region=t.region,
        vpn_gateway=t.gateway,
        vpn_gateway_interface=t.gateway_interface,
        peer_external_gateway=t.external_gateway,
        peer_external_gateway_interface=t.external_interface,
        shared_secret=t.shared_secret,
        router=t.router,
        ike_version=2,
        opts=opts,
    )
    interface = gcp.compute.RouterInterface(
        f"{resource_name}-bgp-if-{index}",
        name=t.name,
        project=t.project,
        region=t.region,
        router=t.router,
        ip_range=t.inside_range,
        vpn_tunnel=tunnel.name,
        opts=opts,
    )
    gcp.compute.RouterPeer(
        f"{resource_name}-bgp-peer-{index}",
        name=t.name,
        project=t.project,
        region=t.region,
        router=t.router,
        interface=interface.name,
        peer_ip_address=t.peer_ip,
        peer_asn=t.peer_asn,
        opts=opts,
    )
