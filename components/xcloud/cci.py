"""GCP Cross-Cloud Interconnect between an AWS transit gateway and a GCP Cloud Router, in either
direction: Google's dedicated connections, each cross-connected to its own AWS Direct Connect
LAG, alternating the two edge availability domains of one metro.

As for the HA VPN (aws_gcp.py), the primary's stack owns both ends: the DR stack keeps only its
anchors (its transit gateway, or its Cloud Router) and never needs the primary's state or
region; the primary finds them by their deterministic names. Google provisions the connections
and AWS the LAGs only after the cross-connects are made (the runbook's ordering checklist):
until the operator sets `gpudr:cross_cloud_interconnect_provisioned`, the stack orders the
ports and declares nothing that needs them (the VLAN attachments, the transit virtual
interfaces, the BGP sessions), and warns with what to do.

Sources: defaults.yaml links.cross-cloud-interconnect (one LAG per connection, LACP; the two
edge availability domains), shared/reference/dr-facts-2.md 4.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from components.xcloud.dx import DxPorts, dx_ports
from gpudr.contract.naming import DX_GATEWAY_ASN
from gpudr.contract.site import LinkConfig
from gpudr.contract.stack import CCI_PROVISIONED_KEY
from gpudr.contract.tags import Tag, gcp_labels

# Google's link types by port speed (Compute API), and the VLAN attachment of the port's speed.
LINK_TYPES = {10: "LINK_TYPE_ETHERNET_10G_LR", 100: "LINK_TYPE_ETHERNET_100G_LR"}
# The BGP addresses of each VLAN attachment, which Google allocates in 169.254.0.0/16 and the
# transit virtual interface takes as they are. Google takes 29 or 30 (and prefers 29 where a
# remote location allows both); 30 because an AWS virtual interface's peer addresses are a /30
# pair as far as read in this pass (unconfirmed against Google's AWS guide: if it says 29,
# change it here).
BGP_SUBNET_LENGTH = 30


def interconnect_location(project: str, location: str) -> str:
    return (
        f"https://www.googleapis.com/compute/v1/projects/{project}/global/"
        f"interconnectLocations/{location}"
    )


def pending_message(link: LinkConfig, dx_gateway: str, stack: str) -> str:
    """What the operator does before the attachments, interfaces and BGP sessions deploy."""
    return (
        f"Cross-Cloud Interconnect to {link.peer_site}: {link.ports} x {link.port_gbps} Gbps "
        f"connections ordered at {link.location} and {link.secondary_location} (remote location "
        f"{link.remote_location}) and one Direct Connect LAG each at {link.aws_location} "
        f"({dx_gateway}-lag-*); the VLAN attachments, transit virtual interfaces and BGP "
        "sessions are not declared until both are provisioned. Give Google each LAG's LOA-CFA "
        "(aws directconnect describe-loa), wait until `gcloud compute interconnects describe` "
        "shows every connection PROVISIONED and every LAG is available, then: "
        f"pulumi config set {CCI_PROVISIONED_KEY} true -s {stack} && pulumi up -s {stack}"
    )


@dataclass(frozen=True)
class CrossCloudInterconnectArgs:
    """Both ends of the link, whichever site is the primary (the primary's stack owns it)."""

    aws_region: pulumi.Input[str]  # the transit gateway's region: the LAGs are ordered there
    aws_cidr: str  # the AWS site's range: what its Direct Connect gateway advertises to Google
    transit_gateway_id: pulumi.Input[str]
    dx_gateway_name: str  # names the gateway and the LAGs (`{name}-lag-{i}`)
    gcp_project: str  # the GCP site's project: the connections and attachments are its
    gcp_region: str  # the Cloud Router's region
    gcp_name: str  # names Google's resources: `{gcp_name}-{i}`
    gcp_router: str  # the Cloud Router's name
    gcp_asn: int  # the Cloud Router's ASN: the virtual interfaces' customer side
    link: LinkConfig
    provisioned: bool  # gpudr:cross_cloud_interconnect_provisioned
    tags: dict[str, str]  # AWS tags; GCP labels are made from them


class CrossCloudInterconnect(pulumi.ComponentResource):
    """Connection i (0..ports-1) sits in edge availability domain i % 2 (`location`, then
    `secondary_location`): one Google connection of one port with `remote_location` set, one
    AWS LAG of one port at `aws_location`, and once provisioned one VLAN attachment of the
    port's speed on the Cloud Router, one transit virtual interface on the LAG to the Direct
    Connect gateway (associated with the transit gateway), and the BGP session between them,
    authenticated with the MD5 key AWS generates for the interface."""

    capacity_gbps: pulumi.Output[float]
    attachment_names: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        args: CrossCloudInterconnectArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpudr:links:CrossCloudInterconnect", name, None, opts)
        link = args.link
        locations = (link.location, link.secondary_location)
        if (
            link.port_gbps not in LINK_TYPES
            or not link.ports
            or not all(locations)
            or not link.remote_location
            or not link.aws_location
            or link.vlan is None
        ):
            raise ValueError(
                f"cross-cloud-interconnect to {link.peer_site}: no locations or sized ports "
                f"(sites.<dr>.link needs location, secondary_location, remote_location and "
                "aws_location); add them to the plan and regenerate the stack with `gpudr generate`"
            )
        child = pulumi.ResourceOptions(parent=self)
        tags = {**args.tags, "gpudr:capacity-gbps": f"{link.capacity_gbps:g}"}
        gateway = aws.directconnect.Gateway(
            f"{name}-dx-gateway",
            name=args.dx_gateway_name,
            amazon_side_asn=str(DX_GATEWAY_ASN),  # a string in this provider
            opts=child,
        )
        aws.directconnect.GatewayAssociation(
            f"{name}-dx-association",
            dx_gateway_id=gateway.id,
            associated_gateway_id=args.transit_gateway_id,
            allowed_prefixes=[args.aws_cidr],
            # the transit gateway's region: a GCP primary's stack has no AWS region of its own
            region=args.aws_region,
            opts=child,
        )
        attachments: list[pulumi.Output[str]] = []
        for i in range(link.ports):
            where = str(locations[i % 2])
            interconnect = gcp.compute.Interconnect(
                f"{name}-interconnect-{i}",
                name=f"{args.gcp_name}-{i}",
                project=args.gcp_project,
                description=f"gpudr: Cross-Cloud Interconnect to AWS ({link.peer_site}), "
                f"connection {i}",
                interconnect_type="DEDICATED",
                link_type=LINK_TYPES[link.port_gbps],
                requested_link_count=1,  # one port per connection: its own LAG on AWS
                location=interconnect_location(args.gcp_project, where),
                remote_location=link.remote_location,  # a Cross-Cloud Interconnect (no LOA name)
                admin_enabled=True,
                labels=gcp_labels({**tags, Tag.EDGE_DOMAIN.key: where}),
                opts=child,
            )
            lag = dx_ports(
                f"{name}-aws",
                i,
                DxPorts(
                    base=args.dx_gateway_name,
                    speed=f"{link.port_gbps}Gbps",
                    location=link.aws_location,
                    count=1,
                    region=args.aws_region,
                    tags={**tags, Tag.EDGE_DOMAIN.key: where},
                    always_lag=True,
                ),
                child,
            )
            if args.provisioned:
                attachments.append(
                    self._bgp(name, i, args, interconnect=interconnect, lag=lag, gateway=gateway)
                )
        if not args.provisioned:
            pulumi.log.warn(
                pending_message(link, args.dx_gateway_name, pulumi.get_stack()), resource=self
            )
        self.capacity_gbps = pulumi.Output.from_input(link.capacity_gbps)
        self.attachment_names = pulumi.Output.all(*attachments)
        self.register_outputs(
            {"capacity_gbps": self.capacity_gbps, "attachment_names": self.attachment_names}
        )

    def _bgp(
        self,
        name: str,
        i: int,
        args: CrossCloudInterconnectArgs,
        *,
        interconnect: gcp.compute.Interconnect,
        lag: pulumi.Output[str],
        gateway: aws.directconnect.Gateway,
    ) -> pulumi.Output[str]:
        """Connection i's VLAN attachment, transit virtual interface and BGP session."""
        child = pulumi.ResourceOptions(parent=self)
        link = args.link
        gcp_name = f"{args.gcp_name}-{i}"
        router = f"projects/{args.gcp_project}/regions/{args.gcp_region}/routers/{args.gcp_router}"
        attachment = gcp.compute.InterconnectAttachment(
            f"{name}-attachment-{i}",
            name=gcp_name,
            project=args.gcp_project,
            region=args.gcp_region,
            type="DEDICATED",
            # (an Interconnect exports no self link; its id is the path the URL ends in)
            interconnect=interconnect.id.apply(
                lambda x: f"https://www.googleapis.com/compute/v1/{x}"
            ),
            router=router,
            vlan_tag8021q=link.vlan,
            bandwidth=f"BPS_{link.port_gbps}G",  # the port's speed: the connection's all
            subnet_length=BGP_SUBNET_LENGTH,
            admin_enabled=True,
            labels=gcp_labels(args.tags),
            opts=child,
        )
        # Google's "customer" is AWS: its customer-router address is Amazon's side.
        vif = aws.directconnect.TransitVirtualInterface(
            f"{name}-vif-{i}",
            name=f"{args.dx_gateway_name}-{i}",
            connection_id=lag,
            dx_gateway_id=gateway.id,
            vlan=link.vlan,
            bgp_asn=args.gcp_asn,
            amazon_address=attachment.customer_router_ip_address,
            customer_address=attachment.cloud_router_ip_address,
            address_family="ipv4",
            region=args.aws_region,
            tags=args.tags,
            # The provider does not mark the BGP MD5 key AWS generates as secret: without this
            # it would sit in the stack's state and previews in plain text.
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(additional_secret_outputs=["bgpAuthKey"])
            ),
        )
        interface = gcp.compute.RouterInterface(
            f"{name}-bgp-if-{i}",
            name=gcp_name,
            project=args.gcp_project,
            region=args.gcp_region,
            router=args.gcp_router,
            ip_range=attachment.cloud_router_ip_address,
            interconnect_attachment=attachment.name,
            opts=child,
        )
        gcp.compute.RouterPeer(
            f"{name}-bgp-peer-{i}",
            name=gcp_name,
            project=args.gcp_project,
            region=args.gcp_region,
            router=args.gcp_router,
            interface=interface.name,
            peer_asn=DX_GATEWAY_ASN,
            peer_ip_address=attachment.customer_router_ip_address.apply(
                lambda cidr: cidr.split("/")[0]
            ),
            # AWS generates the interface's BGP key: both sides must use it.
            md5_authentication_key=gcp.compute.RouterPeerMd5AuthenticationKeyArgs(
                name=gcp_name, key=pulumi.Output.secret(vif.bgp_auth_key)
            ),
            opts=child,
        )
        return attachment.name
