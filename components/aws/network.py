"""A site's network: VPC with private subnets across AZs, one NAT for egress, an S3 gateway
endpoint, a transit gateway that DR links (peering, Direct Connect) attach to, and flow logs of
all its traffic to the site's log sink.

An isolated network (a DR drill's) has no transit gateway and no route to any peer: nothing can
attach to it, so it reaches no other site's network; egress is its NAT only."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws.logs import flow_log_destination

# What the S3 interface endpoint's one rule admits, and why (no egress rule: the endpoint only
# answers). EC2 allows a-z A-Z 0-9, spaces and ._-:/()#,@[]+=&;{}!$* in rule descriptions.
ENDPOINT_INGRESS_DESCRIPTION = (
    "HTTPS from peer site networks over the DR link: dual writers at the peers write "
    "to the buckets of this region through the S3 interface endpoint"
)


@dataclass(frozen=True)
class SiteNetworkArgs:
    region: pulumi.Input[str]
    cidr: str
    azs: Sequence[str]
    peer_cidrs: Sequence[str]
    dual_write_endpoint: bool
    tags: dict[str, str]
    # The S3 bucket the VPC's flow logs go to: the site's log sink, by name (a drill's network
    # sends its flow logs to the DR site's sink). `flow_log_ready`: what delivery waits for
    # (the sink's policy, when the same stack declares it).
    flow_log_bucket: str
    flow_log_ready: Sequence[pulumi.Resource] = ()
    # A drill's network: no transit gateway, no peer routes, no endpoint for dual writers.
    isolated: bool = False
    # The transit gateway's name tag and ASN: required unless isolated.
    transit_gateway_name: str | None = None
    transit_gateway_asn: int | None = None


def subnet_plan(cidr: str, azs: Sequence[str]) -> tuple[list[str], str]:
    """Private /20s (for a /16) per AZ, then one public subnet for the NAT gateway."""
    net = ipaddress.ip_network(cidr)
    blocks = list(net.subnets(new_prefix=min(net.prefixlen + 4, 28)))
    return [str(b) for b in blocks[: len(azs)]], str(blocks[len(azs)])


class SiteNetwork(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[list[str]]
    gpu_subnet_id: pulumi.Output[str]
    transit_gateway_id: pulumi.Output[str]
    transit_gateway_route_table_id: pulumi.Output[str]
    s3_interface_endpoint_dns: pulumi.Output[str | None]

    def __init__(
        self, name: str, args: SiteNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:network:SiteNetwork", name, None, opts)
        _check(name, args)
        self._name, self._args = name, args
        self._child = pulumi.ResourceOptions(parent=self)
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            region=args.region,
            tags=self._tags("vpc"),
            opts=self._child,
        )
        self._close_default_security_group(vpc)
        self._flow_logs(vpc)
        private_cidrs, public_cidr = subnet_plan(args.cidr, args.azs)
        private = [
            aws.ec2.Subnet(
                f"{name}-private-{az}",
                vpc_id=vpc.id,
                cidr_block=block,
                availability_zone=az,
                region=args.region,
                tags={**self._tags(f"private-{az}"), "kubernetes.io/role/internal-elb": "1"},
                opts=self._child,
            )
            for az, block in zip(args.azs, private_cidrs, strict=True)
        ]
        nat = self._egress(vpc, public_cidr)
        tgw, attachment = self._transit_gateway(vpc, private)
        private_rt = self._private_routes(vpc, private, nat, tgw, attachment)
        # Checkpoint reads and writes to this region's buckets stay off the NAT (and its bill).
        aws.ec2.VpcEndpoint(
            f"{name}-s3-endpoint",
            vpc_id=vpc.id,
            service_name=_s3_service(args.region),
            vpc_endpoint_type="Gateway",
            route_table_ids=[private_rt.id],
            region=args.region,
            tags=self._tags("s3-endpoint"),
            opts=self._child,
        )
        self.s3_interface_endpoint_dns = (
            self._dual_write_endpoint(vpc, private)
            if args.dual_write_endpoint
            else pulumi.Output.from_input(None)
        )
        self.vpc_id = vpc.id
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in private])
        # One AZ for GPU pools: a cluster placement group cannot span AZs.
        self.gpu_subnet_id = private[0].id
        # An isolated network has no gateway: "" so that nothing can attach to it by mistake.
        self.transit_gateway_id = tgw.id if tgw is not None else pulumi.Output.from_input("")
        self.transit_gateway_route_table_id = (
            tgw.association_default_route_table_id
            if tgw is not None
            else pulumi.Output.from_input("")
        )
        self.register_outputs(
            {
                "vpc_id": self.vpc_id,
                "private_subnet_ids": self.private_subnet_ids,
                "transit_gateway_id": self.transit_gateway_id,
                "s3_interface_endpoint_dns": self.s3_interface_endpoint_dns,
            }
        )

    def _tags(self, role: str) -> dict[str, str]:
        return {**self._args.tags, "Name": f"{self._name}-{role}"}

    def _close_default_security_group(self, vpc: aws.ec2.Vpc) -> None:
        """The VPC's default security group, adopted with no rules at all: AWS creates it
        allowing all traffic between its members and all egress, and anything launched
        without a group of its own lands in it. Emptied, such a resource reaches nothing and
        is noticed; everything gpudr launches names its own group. CIS AWS Foundations
        Benchmark v3.0.0 5.4 "Ensure the default security group of every VPC restricts all
        traffic" (4.3 in v1.2.0); Security Hub EC2.2. The group itself cannot be deleted: on
        destroy it is only released from the stack's state."""
        aws.ec2.DefaultSecurityGroup(
            f"{self._name}-default-sg",
            vpc_id=vpc.id,
            ingress=[],
            egress=[],
            region=self._args.region,
            tags=self._tags("default-sg"),
            opts=self._child,
        )

    def _flow_logs(self, vpc: aws.ec2.Vpc) -> None:
        """Every accepted and rejected flow of the VPC, to the log sink: CIS AWS Foundations
        Benchmark v3.0.0 3.7, Security Hub EC2.6. Delivered to S3 (billed as vended logs and
        the sink's storage, no CloudWatch Logs ingestion), in 10-minute aggregation windows
        (the default: fewer records to pay for than 1-minute ones) and hourly partitions, so
        that looking into one hour reads one hour of objects."""
        args = self._args
        aws.ec2.FlowLog(
            f"{self._name}-flow-logs",
            vpc_id=vpc.id,
            traffic_type="ALL",
            log_destination_type="s3",
            log_destination=flow_log_destination(args.flow_log_bucket),
            max_aggregation_interval=600,
            destination_options=aws.ec2.FlowLogDestinationOptionsArgs(per_hour_partition=True),
            region=args.region,
            tags=self._tags("flow-logs"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.flow_log_ready)),
        )

    def _egress(self, vpc: aws.ec2.Vpc, public_cidr: str) -> aws.ec2.NatGateway:
        """The public subnet, its internet gateway and the NAT the private subnets egress
        through."""
        name, region = self._name, self._args.region
        public = aws.ec2.Subnet(
            f"{name}-public",
            vpc_id=vpc.id,
            cidr_block=public_cidr,
            availability_zone=self._args.azs[0],
            region=region,
            tags=self._tags("public"),
            opts=self._child,
        )
        igw = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, region=region, tags=self._tags("igw"), opts=self._child
        )
        public_rt = aws.ec2.RouteTable(
            f"{name}-public-rt",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            region=region,
            tags=self._tags("public-rt"),
            opts=self._child,
        )
        aws.ec2.RouteTableAssociation(
            f"{name}-public-rta",
            subnet_id=public.id,
            route_table_id=public_rt.id,
            region=region,
            opts=self._child,
        )
        eip = aws.ec2.Eip(
            f"{name}-nat-ip",
            domain="vpc",
            region=region,
            tags=self._tags("nat-ip"),
            opts=self._child,
        )
        return aws.ec2.NatGateway(
            f"{name}-nat",
            allocation_id=eip.allocation_id,
            subnet_id=public.id,
            region=region,
            tags=self._tags("nat"),
            opts=self._child,
        )

    def _transit_gateway(
        self, vpc: aws.ec2.Vpc, private: list[aws.ec2.Subnet]
    ) -> tuple[
        aws.ec2transitgateway.TransitGateway | None, aws.ec2transitgateway.VpcAttachment | None
    ]:
        """The site's transit gateway, which every DR link attaches to, and the VPC's
        attachment; none on an isolated network (a drill's)."""
        args = self._args
        if args.isolated:
            return None, None
        assert args.transit_gateway_name is not None  # checked in _check
        tgw = aws.ec2transitgateway.TransitGateway(
            f"{self._name}-tgw",
            description=f"gpudr DR links for {args.transit_gateway_name}",
            amazon_side_asn=args.transit_gateway_asn,
            default_route_table_association="enable",
            default_route_table_propagation="enable",
            dns_support="enable",
            region=args.region,
            # The name tag is how the peer stack finds this gateway without this stack's state.
            tags={**args.tags, "Name": args.transit_gateway_name},
            opts=self._child,
        )
        attachment = aws.ec2transitgateway.VpcAttachment(
            f"{self._name}-tgw-vpc",
            transit_gateway_id=tgw.id,
            vpc_id=vpc.id,
            subnet_ids=[s.id for s in private],
            region=args.region,
            tags=self._tags("tgw-vpc"),
            opts=self._child,
        )
        return tgw, attachment

    def _private_routes(
        self,
        vpc: aws.ec2.Vpc,
        private: list[aws.ec2.Subnet],
        nat: aws.ec2.NatGateway,
        tgw: aws.ec2transitgateway.TransitGateway | None,
        attachment: aws.ec2transitgateway.VpcAttachment | None,
    ) -> aws.ec2.RouteTable:
        """The private subnets' routes: the internet through the NAT, and each peer site over
        the DR link (the transit gateway), never the internet."""
        name, region = self._name, self._args.region
        peer_routes = (
            [
                aws.ec2.RouteTableRouteArgs(cidr_block=peer, transit_gateway_id=tgw.id)
                for peer in self._args.peer_cidrs
            ]
            if tgw is not None
            else []
        )
        private_rt = aws.ec2.RouteTable(
            f"{name}-private-rt",
            vpc_id=vpc.id,
            routes=[
                aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id),
                *peer_routes,
            ],
            region=region,
            tags=self._tags("private-rt"),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[attachment] if attachment is not None else None
            ),
        )
        for az, subnet in zip(self._args.azs, private, strict=True):
            aws.ec2.RouteTableAssociation(
                f"{name}-private-rta-{az}",
                subnet_id=subnet.id,
                route_table_id=private_rt.id,
                region=region,
                opts=self._child,
            )
        return private_rt

    def _dual_write_endpoint(
        self, vpc: aws.ec2.Vpc, private: list[aws.ec2.Subnet]
    ) -> pulumi.Output[str | None]:
        """Dual writers at the peer site reach this region's buckets through an S3 interface
        endpoint, over the DR link (their route to this CIDR is the transit gateway), not
        through their NAT and the public S3 endpoint. Only the peers' address space may use it.
        Its DNS name is what the writers are given."""
        name, args = self._name, self._args
        endpoint_sg = aws.ec2.SecurityGroup(
            f"{name}-s3-endpoint-sg",
            description="gpudr: HTTPS to the S3 interface endpoint from peer sites",
            vpc_id=vpc.id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    description=ENDPOINT_INGRESS_DESCRIPTION,
                    protocol="tcp",
                    from_port=443,
                    to_port=443,
                    cidr_blocks=list(args.peer_cidrs),
                )
            ],
            region=args.region,
            tags=self._tags("s3-endpoint-sg"),
            opts=self._child,
        )
        interface = aws.ec2.VpcEndpoint(
            f"{name}-s3-interface",
            vpc_id=vpc.id,
            service_name=_s3_service(args.region),
            vpc_endpoint_type="Interface",
            subnet_ids=[s.id for s in private],
            security_group_ids=[endpoint_sg.id],
            private_dns_enabled=False,
            region=args.region,
            tags=self._tags("s3-interface"),
            opts=self._child,
        )
        return interface.dns_entries.apply(
            lambda entries: entries[0]["dns_name"] if entries else None
        )


def _check(name: str, args: SiteNetworkArgs) -> None:
    """An isolated network routes to no peer and takes no dual writes; any other needs its
    transit gateway's name and ASN."""
    if args.isolated:
        if args.peer_cidrs or args.dual_write_endpoint:
            raise ValueError(
                f"network {name}: an isolated network routes to no peer and takes no dual "
                "writes; pass peer_cidrs=[] and dual_write_endpoint=False"
            )
        return
    for field in ("transit_gateway_name", "transit_gateway_asn"):
        if getattr(args, field) is None:
            raise ValueError(f"network {name}: {field} is required unless isolated=True")


def _s3_service(region: pulumi.Input[str]) -> pulumi.Output[str]:
    return pulumi.Output.from_input(region).apply(lambda r: f"com.amazonaws.{r}.s3")
