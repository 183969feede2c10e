"""The AWS primary's side of AWS -> GCP disaster recovery.

The primary's stack owns everything that joins the two clouds, as it owns transit gateway
peering: the DR stack (GCP) keeps only its anchors (HA VPN gateway, Cloud Router, buckets and
transfer jobs) and never needs this stack's state or region.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from gpudr.stackconfig import LinkConfig, PeerConfig, StsReader


@dataclass(frozen=True)
class StsReadRoleArgs:
    reader: StsReader
    key_arn: pulumi.Input[str]
    tags: dict[str, str]


class StsReadRole(pulumi.ComponentResource):
    """The role Storage Transfer Service assumes to pull from S3: web identity federation with
    Google as the identity provider, bound to the project's transfer service agent. No access
    keys exist to leak or rotate."""

    role_arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: StsReadRoleArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:StsReadRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        agent = gcp.storage.get_transfer_project_service_account_output(
            project=args.reader.gcp_project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        role = aws.iam.Role(
            f"{name}-role",
            name=args.reader.role_name,
            description="gpudr: Storage Transfer Service at the GCP DR site reads these buckets",
            assume_role_policy=agent.subject_id.apply(
                lambda subject: json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Federated": "accounts.google.com"},
                                "Action": "sts:AssumeRoleWithWebIdentity",
                                # Only this project's transfer service agent, nobody else
                                # holding a Google identity token.
                                "Condition": {"StringEquals": {"accounts.google.com:sub": subject}},
                            }
                        ],
                    }
                )
            ),
            tags=args.tags,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-read",
            role=role.id,
            policy=pulumi.Output.from_input(args.key_arn).apply(
                lambda key: _read_policy(args.reader.buckets, key)
            ),
            opts=child,
        )
        self.role_arn = role.arn
        self.register_outputs({"role_arn": self.role_arn})


def _read_policy(buckets: Sequence[str], key_arn: str) -> str:
    arns = [f"arn:aws:s3:::{b}" for b in buckets]
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": ["s3:ListBucket", "s3:GetBucketLocation"],
                    "Resource": arns,
                },
                {"Effect": "Allow", "Action": "s3:GetObject", "Resource": [f"{a}/*" for a in arns]},
                # Read only: the transfer can never write or delete at the primary.
                {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": key_arn},
            ],
        }
    )


@dataclass(frozen=True)
class GcpHaVpnArgs:
    region: pulumi.Input[str]
    transit_gateway_id: pulumi.Input[str]
    transit_gateway_asn: int
    peer: PeerConfig
    peer_router_asn: int
    link: LinkConfig
    tags: dict[str, str]


class GcpHaVpn(pulumi.ComponentResource):
    """HA VPN between this site's transit gateway and the GCP DR site's HA VPN gateway: two
    AWS VPN connections (four tunnels, BGP) to the gateway's two interfaces, ECMP across all
    four. The DR site's gateway and Cloud Router are found by name in its project."""

    tunnels: pulumi.Output[int]
    capacity_gbps: pulumi.Output[float]

    def __init__(
        self, name: str, args: GcpHaVpnArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:GcpHaVpn", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        peer = args.peer
        if not peer.project or not peer.network_name:
            raise ValueError(f"{name}: the GCP peer needs a project and a network name")
        router = f"{peer.network_name}-router"
        gateway = gcp.compute.get_hc_vpn_gateway_output(  # "hc": HA VPN in this SDK
            name=f"{peer.network_name}-havpn",
            project=peer.project,
            region=peer.region,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        tags = {**args.tags, "gpudr:capacity-gbps": f"{args.link.capacity_gbps:g}"}
        connections = []
        for i in range(2):
            cgw = aws.ec2.CustomerGateway(
                f"{name}-cgw-{i}",
                bgp_asn=str(args.peer_router_asn),  # a string in this provider
                ip_address=gateway.vpn_interfaces[i].ip_address,
                type="ipsec.1",
                region=args.region,
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
                    region=args.region,
                    tags=tags,
                    opts=child,
                )
            )
        addresses = [
            connections[0].tunnel1_address,
            connections[0].tunnel2_address,
            connections[1].tunnel1_address,
            connections[1].tunnel2_address,
        ]
        external = gcp.compute.ExternalVpnGateway(
            f"{name}-aws-gateway",
            name=f"{peer.network_name}-aws",
            project=peer.project,
            redundancy_type="FOUR_IPS_REDUNDANCY",
            interfaces=[
                gcp.compute.ExternalVpnGatewayInterfaceArgs(id=i, ip_address=ip)
                for i, ip in enumerate(addresses)
            ],
            description="gpudr: the AWS primary's four VPN tunnel endpoints",
            opts=child,
        )
        for i in range(4):
            conn = connections[i // 2]
            t = i % 2 + 1
            psk = conn.tunnel1_preshared_key if t == 1 else conn.tunnel2_preshared_key
            cgw_inside = (
                conn.tunnel1_cgw_inside_address if t == 1 else conn.tunnel2_cgw_inside_address
            )
            vgw_inside = (
                conn.tunnel1_vgw_inside_address if t == 1 else conn.tunnel2_vgw_inside_address
            )
            tunnel = gcp.compute.VPNTunnel(
                f"{name}-tunnel-{i}",
                name=f"{peer.network_name}-aws-{i}",
                project=peer.project,
                region=peer.region,
                vpn_gateway=gateway.self_link,
                vpn_gateway_interface=i // 2,
                peer_external_gateway=external.self_link,
                peer_external_gateway_interface=i,
                shared_secret=psk,  # generated by AWS, a secret output, never in config
                router=router,
                ike_version=2,
                opts=child,
            )
            interface = gcp.compute.RouterInterface(
                f"{name}-bgp-if-{i}",
                name=f"{peer.network_name}-aws-{i}",
                project=peer.project,
                region=peer.region,
                router=router,
                ip_range=cgw_inside.apply(lambda ip: f"{ip}/30"),
                vpn_tunnel=tunnel.name,
                opts=child,
            )
            gcp.compute.RouterPeer(
                f"{name}-bgp-peer-{i}",
                name=f"{peer.network_name}-aws-{i}",
                project=peer.project,
                region=peer.region,
                router=router,
                interface=interface.name,
                peer_ip_address=vgw_inside,
                peer_asn=args.transit_gateway_asn,
                opts=child,
            )
        self.tunnels = pulumi.Output.from_input(4)
        self.capacity_gbps = pulumi.Output.from_input(args.link.capacity_gbps)
        self.register_outputs({"tunnels": self.tunnels, "capacity_gbps": self.capacity_gbps})
