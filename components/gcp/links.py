"""DR links of a GCP site.

- VPC peering: each network declares its own side of the peering (it becomes active once both
  sides exist). The peer network is named by its deterministic path, so this stack needs no
  lookup of, and no state from, the peer: the DR side previews with the primary gone.
- HA VPN: a site declares its anchors, the HA VPN gateway and the site's Cloud Router (see
  network.py). The other side, the tunnels and their BGP sessions belong to the primary's
  stack: they need the shared secrets and both gateways' interfaces. On a GCP DR site that is
  all its stack declares; a GCP primary declares the tunnels too
  (components/xcloud/aws_gcp.GcpHaVpn). Each tunnel's GCP half, with its BGP session, is
  components/xcloud/bgp.py, shared by the AWS and Azure links.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from gpudr.contract.site import PeerConfig


def peer_network(peer: PeerConfig) -> str:
    if peer.cloud != "gcp" or not peer.project or not peer.network_name:
        raise ValueError(
            f"vpc-peering to {peer.site}: the peer must be a GCP site with project and "
            f"network_name set (cloud={peer.cloud}, project={peer.project}, "
            f"network_name={peer.network_name}); regenerate the stack with `gpudr generate`"
        )
    return f"projects/{peer.project}/global/networks/{peer.network_name}"


@dataclass(frozen=True)
class VpcPeeringArgs:
    network_name: str
    network_id: pulumi.Input[str]
    peer: PeerConfig


class VpcPeering(pulumi.ComponentResource):
    peering_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: VpcPeeringArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:network:VpcPeering", name, None, opts)
        peering = gcp.compute.NetworkPeering(
            f"{name}-peering",
            name=f"{args.network_name}-to-{args.peer.site}"[:63],
            network=args.network_id,
            peer_network=peer_network(args.peer),
            # Routes a Cloud Router learns (e.g. from an HA VPN or Interconnect) cross too.
            export_custom_routes=True,
            import_custom_routes=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.peering_name = peering.name
        self.register_outputs({"peering_name": self.peering_name})


@dataclass(frozen=True)
class HaVpnAnchorArgs:
    project: str
    region: str
    network_name: str
    network_id: pulumi.Input[str]
    labels: Mapping[str, str]


class HaVpnAnchor(pulumi.ComponentResource):
    gateway_id: pulumi.Output[str]
    self_link: pulumi.Output[str]
    interface_ips: pulumi.Output[list[str]]  # interface 0, then 1: the tunnels pair with them

    def __init__(
        self, name: str, args: HaVpnAnchorArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:network:HaVpnAnchor", name, None, opts)
        # Named deterministically: the primary's stack names it in its tunnels.
        gateway = gcp.compute.HaVpnGateway(
            f"{name}-gateway",
            name=f"{args.network_name}-havpn",
            project=args.project,
            region=args.region,
            network=args.network_id,
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.gateway_id = gateway.id
        self.self_link = gateway.self_link
        self.interface_ips = gateway.vpn_interfaces.apply(
            lambda interfaces: [i.ip_address or "" for i in sorted(interfaces, key=_interface_id)]
        )
        self.register_outputs(
            {
                "gateway_id": self.gateway_id,
                "self_link": self.self_link,
                "interface_ips": self.interface_ips,
            }
        )


def _interface_id(interface: gcp.compute.outputs.HaVpnGatewayVpnInterface) -> int:
    return interface.id or 0
