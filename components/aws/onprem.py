"""The cloud end of an on-premises site's replication into an AWS DR site, owned by the DR stack:
the link's AWS side (Direct Connect ports, gateway, transit virtual interface), the DataSync
interface endpoint the agents reach over it, and per replica bucket the DataSync locations and
scheduled tasks that read the on-premises store through the agents.

Nothing here runs on premises or reads anything there: the agents are VMs the operator deploys
and activates (the activation key expires in 30 minutes and is fetched from the agent itself),
and their ARNs reach this stack as config (`gpudr:datasync_agent_arns`). Until every agent the
plan names has its ARN, the tasks are not declared and the stack warns with the commands; the
policy pack's replication-meets-rpo refuses the replicas without a task, so nothing claims a
copy that is not made. The router, VLAN and firewall settings are the runbook's checklist.

Sources: DataSync agents and task modes, shared/reference/dr-facts-2.md 3; the endpoint's ports,
https://docs.aws.amazon.com/datasync/latest/userguide/datasync-network.html
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws.datasync import SinkArgs, _options, s3_sink, schedule_expression
from components.aws.links import DirectConnectLink, DirectConnectLinkArgs
from gpudr.contract.naming import datasync_task_name
from gpudr.contract.onprem import DATASYNC_ENDPOINT_PORTS, NFS_STORAGE_KINDS, OBJECT_STORAGE_KINDS
from gpudr.contract.site import InboundTransfer, LinkConfig, OnPremSource
from gpudr.contract.stack import DATASYNC_AGENT_ARNS_KEY

AGENT_ARN = re.compile(r"arn:aws[a-z-]*:datasync:[a-z0-9-]+:[0-9]{12}:agent/agent-[0-9a-z]{17}")
# The provider takes a 4-byte ASN (up to 4294967294, which the spec accepts) in a second
# argument above what the first one's integer holds: exactly one of the two may be set.
VIF_BGP_ASN_MAX = 2147483646  # TransitVirtualInterface.bgp_asn; above: bgp_asn_long
CUSTOMER_GATEWAY_BGP_ASN_MAX = 2147483647  # CustomerGateway.bgp_asn; above: bgp_asn_extended


def check_inbound(transfers: Sequence[InboundTransfer], source: OnPremSource | None) -> None:
    """What an AWS site pulls from on premises: DataSync through agents, on a schedule of whole
    hours, from a store this component reads. Raises before anything is declared."""
    for t in transfers:
        if source is None or t.source_site != source.site:
            raise ValueError(
                f"inbound transfer from {t.source_site}: no on-premises source of that name in "
                "gpudr:site; regenerate the stack with `gpudr generate`"
            )
        if source.storage_kind not in (*NFS_STORAGE_KINDS, *OBJECT_STORAGE_KINDS):
            raise ValueError(
                f"inbound transfer from {t.source_site}: a {source.storage_kind} store is not "
                "read into S3 yet (docs/onprem.md, Not done); serve the data over NFS or S3"
            )
        schedule_expression(t)


def agent_arns(source: OnPremSource, configured: Mapping[str, str]) -> list[str] | None:
    """The agents' ARNs in the plan's order; None while any is missing. A malformed ARN is
    an error naming the config key, never passed to DataSync."""
    out = []
    for name in source.agents:
        arn = configured.get(name)
        if arn is None:
            return None
        if not isinstance(arn, str) or not AGENT_ARN.fullmatch(arn):
            raise ValueError(
                f"{DATASYNC_AGENT_ARNS_KEY}.{name}: {str(arn)[:60]!r} is not a DataSync agent "
                "ARN (arn:aws:datasync:<region>:<account>:agent/agent-<17 characters>)"
            )
        out.append(arn)
    return out


def missing_key_message(source: OnPremSource, stack: str) -> str:
    """What to do before the tasks can read an S3-compatible store: its read-only key."""
    return "\n".join(
        [
            f"DataSync tasks from {source.site} are not declared: gpudr:onprem_s3_access_key and "
            f"gpudr:onprem_s3_secret_key (secret) are not set. Create a read-only key for "
            f"bucket {source.storage_path} on {source.storage_host}, then:",
            f"  pulumi config set gpudr:onprem_s3_access_key <access key> -s {stack}",
            f"  pulumi config set --secret gpudr:onprem_s3_secret_key -s {stack}   "
            "# prompts; not in your shell history",
            f"  pulumi up -s {stack}",
        ]
    )


def missing_agents_message(source: OnPremSource, configured: Mapping[str, str], stack: str) -> str:
    """What to do before the tasks can be declared: activate each agent, then set its ARN."""
    missing = [a for a in source.agents if a not in configured]
    lines = [
        f"DataSync tasks from {source.site} are not declared: {DATASYNC_AGENT_ARNS_KEY} has no "
        f"ARN for agent(s) {', '.join(missing)}. Activate each agent against this stack's "
        "DataSync endpoint (`pulumi stack output onprem --json`: endpoint_id, subnet_arns, "
        "security_group_arn; runbook, on-premises checklist), then:"
    ]
    for name in missing:
        lines.append(
            f"  pulumi config set --path '{DATASYNC_AGENT_ARNS_KEY}.{name}' <agent ARN> -s {stack}"
        )
    lines.append(f"  pulumi up -s {stack}")
    return "\n".join(lines)


@dataclass(frozen=True)
class OnPremLinkEndArgs:
    region: pulumi.Input[str]
    system: str
    site: str
    cidr: str  # the DR VPC's, advertised to the on-premises router
    vpc_id: pulumi.Input[str]
    subnet_ids: pulumi.Input[Sequence[str]]
    transit_gateway_id: pulumi.Input[str]
    source: OnPremSource
    link: LinkConfig  # kind wan: the path's capacity, which the pack judges
    tags: dict[str, str]


class OnPremLinkEnd(pulumi.ComponentResource):
    """The DR site's end of the on-premises link: over Direct Connect, the ports the plan names
    at its location (a LAG when there are several), a Direct Connect gateway associated with
    the site's transit gateway and the transit virtual interface on your VLAN with your
    router's ASN; over a VPN, your router as a customer gateway and the VPN connections on the
    transit gateway. Then the DataSync interface endpoint the agents reach over it, open to
    the on-premises prefix on DataSync's ports only."""

    endpoint_id: pulumi.Output[str]
    subnet_arns: pulumi.Output[list[str]]
    security_group_arn: pulumi.Output[str]
    link_ids: pulumi.Output[list[str]]  # the transit virtual interface, or the VPN connections
    amazon_address: pulumi.Output[str]  # Direct Connect: the BGP peer addresses ("" for a VPN)
    customer_address: pulumi.Output[str]

    def __init__(
        self, name: str, args: OnPremLinkEndArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:OnPremLinkEnd", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        src = args.source
        if src.link_kind == "direct-connect":
            vif = self._direct_connect(name, args, child)
            self.link_ids = pulumi.Output.all(vif.id)
            self.amazon_address = vif.amazon_address
            self.customer_address = vif.customer_address
        elif src.link_kind == "vpn":
            connections = self._vpn(name, args, child)
            self.link_ids = pulumi.Output.all(*[c.id for c in connections])
            self.amazon_address = pulumi.Output.from_input("")
            self.customer_address = pulumi.Output.from_input("")
        else:
            raise ValueError(
                f"{name}: an on-premises link into AWS is direct-connect or vpn, not "
                f"{src.link_kind}; regenerate the stack"
            )
        group = aws.ec2.SecurityGroup(
            f"{name}-endpoint-sg",
            description="gpudr: DataSync agents on premises to the DataSync endpoint",
            vpc_id=args.vpc_id,
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp",
                    from_port=low,
                    to_port=high,
                    cidr_blocks=[src.cidr],
                    description=f"DataSync agents at {src.site}",
                )
                for low, high in DATASYNC_ENDPOINT_PORTS
            ],
            region=args.region,
            tags=args.tags,
            opts=child,
        )
        endpoint = aws.ec2.VpcEndpoint(
            f"{name}-datasync",
            vpc_id=args.vpc_id,
            service_name=pulumi.Output.from_input(args.region).apply(
                lambda r: f"com.amazonaws.{r}.datasync"
            ),
            vpc_endpoint_type="Interface",
            subnet_ids=args.subnet_ids,
            security_group_ids=[group.id],
            private_dns_enabled=False,  # agents name the endpoint at activation
            region=args.region,
            tags=args.tags,
            opts=child,
        )
        self.endpoint_id = endpoint.id
        # What `aws datasync create-agent` takes with the endpoint: one subnet for the tasks'
        # network interfaces (any of the endpoint's) and the endpoint's security group, as
        # ARNs. The subnets' ARNs share the group's partition, region and account.
        self.security_group_arn = group.arn
        self.subnet_arns = pulumi.Output.all(group.arn, args.subnet_ids).apply(
            lambda x: [f"{x[0].rsplit(':', 1)[0]}:subnet/{s}" for s in x[1]]
        )
        self.register_outputs(
            {
                "endpoint_id": self.endpoint_id,
                "subnet_arns": self.subnet_arns,
                "security_group_arn": self.security_group_arn,
                "link_ids": self.link_ids,
                "amazon_address": self.amazon_address,
                "customer_address": self.customer_address,
            }
        )

    @staticmethod
    def _direct_connect(
        name: str, args: OnPremLinkEndArgs, child: pulumi.ResourceOptions
    ) -> aws.directconnect.TransitVirtualInterface:
        """Your ports at the location (a LAG when several), the gateway on the site's transit
        gateway, and the transit virtual interface on your VLAN with your ASN."""
        src = args.source
        if not src.vlan or not src.link_location or src.link_gbps <= 0:
            raise ValueError(
                f"{name}: a direct-connect link needs a location, a VLAN and its capacity "
                "(link_gbps); regenerate the stack"
            )
        dx = DirectConnectLink(
            f"{name}-dx",
            DirectConnectLinkArgs(
                region=args.region,
                system=args.system,
                site=args.site,
                cidr=args.cidr,
                transit_gateway_id=args.transit_gateway_id,
                link=LinkConfig(
                    kind="direct-connect",
                    peer_site=src.site,
                    capacity_gbps=src.link_gbps,
                    required_gbps=args.link.required_gbps,
                    headroom=args.link.headroom,
                    location=src.link_location,
                    port_gbps=int(src.port_gbps),
                    ports=src.ports,
                ),
                tags=args.tags,
            ),
            opts=child,
        )
        return aws.directconnect.TransitVirtualInterface(
            f"{name}-vif",
            name=f"gpudr-{args.system}-{args.site}-{src.site}",
            connection_id=dx.interconnect_ids.apply(lambda ids: ids[0]),
            dx_gateway_id=dx.gateway_id,
            vlan=src.vlan,
            bgp_asn=src.bgp_asn if src.bgp_asn <= VIF_BGP_ASN_MAX else None,
            bgp_asn_long=None if src.bgp_asn <= VIF_BGP_ASN_MAX else str(src.bgp_asn),
            address_family="ipv4",
            region=args.region,
            tags={**args.tags, "gpudr:wan-gbps": f"{args.link.capacity_gbps:g}"},
            opts=child,
        )

    @staticmethod
    def _vpn(
        name: str, args: OnPremLinkEndArgs, child: pulumi.ResourceOptions
    ) -> list[aws.ec2.VpnConnection]:
        """Your router as a customer gateway, and Site-to-Site VPN connections (two tunnels
        each, BGP, IKEv2) on the site's transit gateway: with ECMP every tunnel carries."""
        src = args.source
        if not src.router_address or src.vpn_connections < 1:
            raise ValueError(
                f"{name}: a vpn link needs the router's public address and its connection "
                "count (vpn_connections); regenerate the stack"
            )
        asn = str(src.bgp_asn)
        gateway = aws.ec2.CustomerGateway(
            f"{name}-cgw",
            # Strings in this provider, both of them.
            bgp_asn=asn if src.bgp_asn <= CUSTOMER_GATEWAY_BGP_ASN_MAX else None,
            bgp_asn_extended=None if src.bgp_asn <= CUSTOMER_GATEWAY_BGP_ASN_MAX else asn,
            ip_address=src.router_address,
            type="ipsec.1",
            region=args.region,
            tags=args.tags,
            opts=child,
        )
        return [
            aws.ec2.VpnConnection(
                f"{name}-vpn-{i}",
                customer_gateway_id=gateway.id,
                transit_gateway_id=args.transit_gateway_id,
                type="ipsec.1",
                static_routes_only=False,
                tunnel1_ike_versions=["ikev2"],
                tunnel2_ike_versions=["ikev2"],
                region=args.region,
                tags={**args.tags, "gpudr:wan-gbps": f"{args.link.capacity_gbps:g}"},
                opts=child,
            )
            for i in range(src.vpn_connections)
        ]


@dataclass(frozen=True)
class OnPremPullArgs:
    region: pulumi.Input[str]
    account_id: pulumi.Input[str]
    role_name: str
    sink_bucket_arn: pulumi.Input[str]
    key_arn: pulumi.Input[str]
    transfers: Sequence[InboundTransfer]
    source: OnPremSource
    agent_arns: Sequence[str]
    log_group_arn: pulumi.Input[str]  # the site's DataSync log group, in either mode
    task_name: str
    tags: dict[str, str]
    # An S3-compatible store: the read-only key its agents sign in with (a secret Output).
    access_key: str | None = None
    secret_key: pulumi.Output[str] | None = None
    # In failover mode: leave the schedules as the operator set them (the runbook pauses the
    # pulls from on premises, whose source is gone and whose return must not overwrite or,
    # for checkpoints, delete what the DR site now writes). A `pulumi up` during the failover
    # then never resumes them; the failback's up in standby, with --refresh, does.
    hold_schedules: bool = False


class OnPremPull(pulumi.ComponentResource):
    """One replica bucket's pull from on premises: the role DataSync writes with, the bucket as
    a location, and per transfer the on-premises location (the class's directory of the
    export, read by every agent) and a scheduled task in the store's task mode."""

    task_arns: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: OnPremPullArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:OnPremPull", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        check_inbound(args.transfers, args.source)
        if not args.agent_arns:
            raise ValueError(f"{name}: a pull from on premises needs its agents' ARNs")
        sink, _ = s3_sink(
            self,
            name,
            SinkArgs(
                args.role_name, args.region, args.account_id, args.sink_bucket_arn, args.key_arn
            ),
            "the pulls from on premises",
            args.tags,
        )
        tasks = []
        for t in args.transfers:
            source = _source_location(f"{name}-from-{t.source_site}-source", args, t, child)
            object_store = args.source.storage_kind in OBJECT_STORAGE_KINDS
            tasks.append(
                aws.datasync.Task(
                    f"{name}-from-{t.source_site}",
                    name=datasync_task_name(args.task_name, t.source_site),
                    task_mode=args.source.task_mode,
                    source_location_arn=source.arn,
                    destination_location_arn=sink.arn,
                    schedule=aws.datasync.TaskScheduleArgs(
                        schedule_expression=schedule_expression(t), status="ENABLED"
                    ),
                    cloudwatch_log_group_arn=args.log_group_arn,
                    options=_basic_options(t, args.source) if object_store else _onprem_options(t),
                    region=args.region,
                    tags={**args.tags, "gpudr:schedule-s": str(t.schedule_s)},
                    opts=pulumi.ResourceOptions(
                        parent=self, ignore_changes=["schedule"] if args.hold_schedules else []
                    ),
                )
            )
        self.task_arns = pulumi.Output.all(*[task.arn for task in tasks])
        self.register_outputs({"task_arns": self.task_arns})


def _source_location(
    name: str, args: OnPremPullArgs, t: InboundTransfer, child: pulumi.ResourceOptions
) -> aws.datasync.NfsLocation | aws.datasync.LocationObjectStorage:
    """The class's directory of the export, or its prefix of the bucket, read by every agent."""
    src = args.source
    if src.storage_kind in NFS_STORAGE_KINDS:
        return aws.datasync.NfsLocation(
            name,
            server_hostname=src.storage_host,
            subdirectory=t.source_bucket,
            on_prem_config=aws.datasync.NfsLocationOnPremConfigArgs(
                agent_arns=list(args.agent_arns)
            ),
            region=args.region,
            tags=args.tags,
            opts=child,
        )
    # The key's secret comes from secret config, as an Output; marked secret again whatever its
    # origin, so that it is encrypted in the state and masked in every diff.
    if args.access_key is None or not isinstance(args.secret_key, pulumi.Output):
        raise TypeError(
            f"{name}: an S3-compatible store is read with an access key and a secret Output "
            "(config.get_secret), not a plain value"
        )
    secret_key: pulumi.Output[str] = pulumi.Output.secret(args.secret_key)
    return aws.datasync.LocationObjectStorage(
        name,
        server_hostname=src.storage_host,
        server_port=src.storage_port or 443,
        server_protocol="HTTPS",
        bucket_name=src.storage_path,
        subdirectory=t.source_bucket,
        agent_arns=list(args.agent_arns),
        access_key=args.access_key,
        secret_key=secret_key,
        region=args.region,
        tags=args.tags,
        opts=child,
    )


def _onprem_options(t: InboundTransfer) -> aws.datasync.TaskOptionsArgs:
    """As from another cloud (`datasync._options`), but a file system has POSIX metadata to
    keep and no object tags: copy ownership, permissions and times as the agent reads them."""
    base = _options(t)
    return aws.datasync.TaskOptionsArgs(
        verify_mode=base.verify_mode,
        transfer_mode=base.transfer_mode,
        overwrite_mode=base.overwrite_mode,
        preserve_deleted_files=base.preserve_deleted_files,
        object_tags="NONE",
        log_level=base.log_level,
        posix_permissions="PRESERVE",
        uid="INT_VALUE",
        gid="INT_VALUE",
        mtime="PRESERVE",
        atime="BEST_EFFORT",
    )


def _basic_options(t: InboundTransfer, src: OnPremSource) -> aws.datasync.TaskOptionsArgs:
    """A Basic-mode task (an object store) is held to the WAN bandwidth committed to DR: one
    task runs at a time on the agents (each runs one task, and every task uses every agent), so
    the task's limit is the whole commitment, and DR copies never take the link from production.
    Enhanced-mode tasks take no bandwidth limit: the runbook has the router police the agents'
    traffic to the same rate."""
    base = _options(t)
    limit = int(src.committed_gbps * 1e9 / 8)
    if limit <= 0:
        raise ValueError(
            f"link from {src.site}: no committed WAN bandwidth (committed_gbps) in the stack "
            "config to hold the tasks to; regenerate the stack"
        )
    return aws.datasync.TaskOptionsArgs(
        verify_mode=base.verify_mode,
        transfer_mode=base.transfer_mode,
        overwrite_mode=base.overwrite_mode,
        preserve_deleted_files=base.preserve_deleted_files,
        object_tags=base.object_tags,
        log_level=base.log_level,
        bytes_per_second=limit,
    )
