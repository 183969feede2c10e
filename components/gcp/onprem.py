"""The cloud end of an on-premises site's replication into a GCP DR site, owned by the DR stack:
the Storage Transfer agent pool the on-premises agents join (its bandwidth limit held to the
WAN bandwidth committed to DR), the service account those agents run as, and the link's GCP
side (a Cloud Router, the Dedicated Interconnect circuits with a VLAN attachment and a BGP
session, or the Partner Interconnect VLAN attachments whose pairing keys go to the provider).
The transfer jobs themselves are components/gcp/transfer.py's, reading through the pool.

Nothing here runs on premises or reads anything there: the agents are containers the operator
runs on the hosts the plan names (`gcloud transfer agents install --pool=...`, the runbook's
checklist), signed in as the service account this stack creates. No key of it is made here and
none reaches Pulumi config: the operator creates one on the agent hosts, or signs them in with
their own gcloud login (the runbook says how).

Sources: agent pools and their bandwidth limit (MB/s, shared by every agent in the pool),
shared/reference/dr-facts-2.md 3 and https://cloud.google.com/storage-transfer/docs/on-prem-agent-pools;
the agents' and the service agent's roles, https://cloud.google.com/storage-transfer/docs/on-prem-set-up;
Interconnect, https://cloud.google.com/network-connectivity/docs/interconnect (defaults.yaml
links.onprem names the pages).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.gcp.bucket import grant_bucket_roles
from gpudr.contract.naming import sts_agent_account_id, sts_agent_pool_name, sts_pool_limit_mbps
from gpudr.contract.onprem import NFS_STORAGE_KINDS, OBJECT_STORAGE_KINDS, PRIVATE_GOOGLE_APIS
from gpudr.contract.site import InboundTransfer, OnPremSource

# What the agents' service account needs: to run as a Storage Transfer agent in the project
# (project-wide: the role cannot be held on a pool), and to write the replica buckets (each
# bucket only, granted by the site beside the bucket).
AGENT_PROJECT_ROLE = "roles/storagetransfer.transferAgent"
AGENT_BUCKET_ROLES = {"agent-object-admin": "roles/storage.objectAdmin"}
# Agent-based transfers coordinate the agents through Pub/Sub, which the project's transfer
# service agent manages.
SERVICE_AGENT_PROJECT_ROLE = "roles/pubsub.editor"
LINK_KINDS = ("interconnect-dedicated", "interconnect-partner")
# Dedicated circuits by speed (Compute API link types).
LINK_TYPES = {10: "LINK_TYPE_ETHERNET_10G_LR", 100: "LINK_TYPE_ETHERNET_100G_LR"}


def attachment_bandwidth(gbps: float) -> str:
    """A VLAN attachment's capacity as the Compute API names it (BPS_50M .. BPS_100G)."""
    return f"BPS_{gbps:g}G" if gbps >= 1 else f"BPS_{round(gbps * 1000)}M"


def check_inbound(transfers: list[InboundTransfer], source: OnPremSource | None) -> None:
    """What a GCP site pulls from on premises: sts-agent from the site the config names, from a
    store the pool's agents read. Raises before anything is declared."""
    for t in transfers:
        if t.source_cloud != "onprem":
            continue
        if source is None or t.source_site != source.site or t.service != "sts-agent":
            raise ValueError(
                f"inbound transfer from {t.source_site}: no on-premises source of that name in "
                "gpudr:site, or not sts-agent; regenerate the stack with `gpudr generate`"
            )
        if source.storage_kind not in (*NFS_STORAGE_KINDS, *OBJECT_STORAGE_KINDS):
            raise ValueError(
                f"inbound transfer from {t.source_site}: a {source.storage_kind} store is not "
                "read into Cloud Storage yet (docs/onprem.md, Not done); serve it over NFS or S3"
            )


def job_source(
    t: InboundTransfer, source: OnPremSource, pool: pulumi.Input[str]
) -> dict[str, object]:
    """The transfer spec's source fields for one class: the class's directory as the agents
    mount it (POSIX), or its prefix of the on-premises bucket (S3-compatible), read through the
    pool. The agents hold the store's key, not the job (`gcloud transfer agents install`)."""
    spec: dict[str, object] = {"source_agent_pool_name": pool}
    if source.storage_kind in NFS_STORAGE_KINDS:
        spec["posix_data_source"] = gcp.storage.TransferJobTransferSpecPosixDataSourceArgs(
            root_directory=t.source_bucket
        )
    else:
        port = f":{source.storage_port}" if source.storage_port not in (None, 443) else ""
        spec["aws_s3_compatible_data_source"] = (
            gcp.storage.TransferJobTransferSpecAwsS3CompatibleDataSourceArgs(
                bucket_name=source.storage_path,
                endpoint=f"{source.storage_host}{port}",
                path=t.source_bucket.strip("/") + "/",
            )
        )
    return spec


@dataclass(frozen=True)
class OnPremAgentsArgs:
    project: str
    system: str
    site: str
    source: OnPremSource
    transfer_agent: pulumi.Input[str]  # `serviceAccount:<the project's transfer service agent>`


class OnPremAgents(pulumi.ComponentResource):
    """The pool the on-premises agents join, capped at the committed WAN bandwidth, and the
    service account they run as with its project role; the service agent's Pub/Sub role."""

    pool_name: pulumi.Output[str]
    account_email: pulumi.Output[str]
    member: pulumi.Output[str]

    def __init__(
        self, name: str, args: OnPremAgentsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:storage:OnPremAgents", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        src = args.source
        pool = gcp.storage.TransferAgentPool(
            f"{name}-pool",
            project=args.project,
            name=sts_agent_pool_name(args.system, args.site, src.site),
            display_name=f"{src.site} ({src.location}) agents for {args.system}-{args.site}",
            bandwidth_limit=gcp.storage.TransferAgentPoolBandwidthLimitArgs(
                limit_mbps=str(sts_pool_limit_mbps(src.committed_gbps))
            ),
            opts=child,
        )
        account = gcp.serviceaccount.Account(
            f"{name}-account",
            project=args.project,
            account_id=sts_agent_account_id(src.site),
            display_name=f"Storage Transfer agents on premises at {src.site}",
            opts=child,
        )
        self.member = account.email.apply(lambda e: f"serviceAccount:{e}")
        grants = [
            gcp.projects.IAMMember(
                f"{name}-agent-role",
                project=args.project,
                role=AGENT_PROJECT_ROLE,
                member=self.member,
                opts=child,
            ),
            gcp.projects.IAMMember(
                f"{name}-service-agent-pubsub",
                project=args.project,
                role=SERVICE_AGENT_PROJECT_ROLE,
                member=args.transfer_agent,
                opts=child,
            ),
        ]
        self.grants = grants
        self.pool_name = pool.name
        self.account_email = account.email
        self.register_outputs({"pool_name": self.pool_name, "account_email": self.account_email})

    def grant_sink(self, name: str, bucket: pulumi.Input[str]) -> list[pulumi.Resource]:
        """The agents write a replica bucket (only that one)."""
        return list(
            grant_bucket_roles(
                name,
                bucket=bucket,
                roles=AGENT_BUCKET_ROLES,
                member=self.member,
                opts=pulumi.ResourceOptions(parent=self),
            )
        )


@dataclass(frozen=True)
class OnPremLinkEndArgs:
    project: str
    region: str
    network_id: pulumi.Input[str]
    name: str  # the Cloud Router's and attachments' name prefix (the network's)
    cidr: str  # the DR VPC's, advertised to the on-premises router
    source: OnPremSource
    labels: dict[str, str]


class OnPremLinkEnd(pulumi.ComponentResource):
    """The DR site's end of the on-premises link: a Cloud Router advertising the DR VPC and
    private.googleapis.com; over Dedicated Interconnect, the circuits at the plan's location
    (one bundle of `ports` circuits), a VLAN attachment on the plan's VLAN and the BGP session
    to your router's ASN; over Partner Interconnect, one attachment per edge availability
    domain, whose pairing keys you give the provider."""

    attachment_names: pulumi.Output[list[str]]
    cloud_router_ip: pulumi.Output[str]  # Dedicated: the BGP addresses ("" for Partner)
    customer_router_ip: pulumi.Output[str]
    # Partner: one per attachment, secret (whoever holds one can connect to the attachment).
    pairing_keys: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: OnPremLinkEndArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:OnPremLinkEnd", name, None, opts)
        src = args.source
        if src.link_kind not in LINK_KINDS or not src.cloud_router_asn:
            raise ValueError(
                f"link to {src.site}: {src.link_kind} (Cloud Router ASN "
                f"{src.cloud_router_asn}) does not reach GCP here; use "
                + " or ".join(LINK_KINDS)
                + " and regenerate the stack with `gpudr generate`"
            )
        child = pulumi.ResourceOptions(parent=self)
        router = gcp.compute.Router(
            f"{name}-router",
            project=args.project,
            region=args.region,
            name=f"{args.name}-onprem",
            network=args.network_id,
            bgp=gcp.compute.RouterBgpArgs(
                asn=src.cloud_router_asn,
                advertise_mode="CUSTOM",
                advertised_ip_ranges=[
                    gcp.compute.RouterBgpAdvertisedIpRangeArgs(range=args.cidr),
                    gcp.compute.RouterBgpAdvertisedIpRangeArgs(range=PRIVATE_GOOGLE_APIS),
                ],
            ),
            opts=child,
        )
        # The VPC sends private.googleapis.com to Google's front ends, not to the internet.
        gcp.compute.Route(
            f"{name}-private-apis",
            project=args.project,
            name=f"{args.name}-private-apis",
            network=args.network_id,
            dest_range=PRIVATE_GOOGLE_APIS,
            next_hop_gateway="default-internet-gateway",
            opts=child,
        )
        if src.link_kind == "interconnect-dedicated":
            self._dedicated(name, args, router, child)
        else:
            self._partner(name, args, router, child)
        self.register_outputs(
            {
                "attachment_names": self.attachment_names,
                "cloud_router_ip": self.cloud_router_ip,
                "customer_router_ip": self.customer_router_ip,
                "pairing_keys": self.pairing_keys,
            }
        )

    def _dedicated(
        self,
        name: str,
        args: OnPremLinkEndArgs,
        router: gcp.compute.Router,
        child: pulumi.ResourceOptions,
    ) -> None:
        src = args.source
        speed = int(src.port_gbps)
        if (
            speed not in LINK_TYPES
            or not src.link_location
            or src.vlan is None
            or src.link_gbps <= 0
            or not src.customer
            or not src.noc_email
        ):
            raise ValueError(
                f"link to {src.site}: a Dedicated Interconnect needs a 10 or 100 Gbps circuit, "
                "its location, a VLAN, the circuits' capacity (link_gbps), the customer and NOC "
                "email of the LOA-CFAs; regenerate the stack with `gpudr generate`"
            )
        circuits = gcp.compute.Interconnect(
            f"{name}-interconnect",
            project=args.project,
            name=f"{args.name}-onprem",
            interconnect_type="DEDICATED",
            link_type=LINK_TYPES[speed],
            requested_link_count=src.ports,
            location=f"https://www.googleapis.com/compute/v1/projects/{args.project}/global/"
            f"interconnectLocations/{src.link_location}",
            # The LOA-CFAs name the customer allowed to order the cross-connects; Google sends
            # them, and the circuits' maintenance notices, to the NOC address.
            customer_name=src.customer,
            noc_contact_email=src.noc_email,
            admin_enabled=True,
            labels=args.labels,
            opts=child,
        )
        attachment = gcp.compute.InterconnectAttachment(
            f"{name}-attachment",
            project=args.project,
            region=args.region,
            name=f"{args.name}-onprem-vlan{src.vlan}",
            type="DEDICATED",
            # (an Interconnect exports no self link; its id is the path the URL ends in)
            interconnect=circuits.id.apply(lambda i: f"https://www.googleapis.com/compute/v1/{i}"),
            router=router.id,
            vlan_tag8021q=src.vlan,
            bandwidth=attachment_bandwidth(src.link_gbps),
            admin_enabled=True,
            labels=args.labels,
            opts=child,
        )
        interface = gcp.compute.RouterInterface(
            f"{name}-bgp-interface",
            project=args.project,
            region=args.region,
            router=router.name,
            name=f"{args.name}-onprem-if",
            ip_range=attachment.cloud_router_ip_address,
            interconnect_attachment=attachment.name,
            opts=child,
        )
        gcp.compute.RouterPeer(
            f"{name}-bgp-peer",
            project=args.project,
            region=args.region,
            router=router.name,
            name=f"{args.name}-onprem-peer",
            interface=interface.name,
            peer_asn=src.bgp_asn,
            # The attachment allocates both /29 addresses; the peer is the other one.
            peer_ip_address=attachment.customer_router_ip_address.apply(
                lambda cidr: cidr.split("/")[0]
            ),
            opts=child,
        )
        self.attachment_names = pulumi.Output.all(attachment.name)
        self.cloud_router_ip = attachment.cloud_router_ip_address
        self.customer_router_ip = attachment.customer_router_ip_address
        self.pairing_keys = pulumi.Output.from_input([])

    def _partner(
        self,
        name: str,
        args: OnPremLinkEndArgs,
        router: gcp.compute.Router,
        child: pulumi.ResourceOptions,
    ) -> None:
        """The provider sets the capacity and, for Layer 3, the BGP session; the attachments
        alternate edge availability domains so one domain's maintenance leaves the others."""
        src = args.source
        attachments = [
            gcp.compute.InterconnectAttachment(
                f"{name}-attachment-{i}",
                project=args.project,
                region=args.region,
                name=f"{args.name}-onprem-{i}",
                type="PARTNER",
                router=router.id,
                edge_availability_domain=f"AVAILABILITY_DOMAIN_{1 + (i - 1) % 2}",
                admin_enabled=True,
                labels=args.labels,
                opts=child,
            )
            for i in range(1, src.ports + 1)
        ]
        self.attachment_names = pulumi.Output.all(*[a.name for a in attachments])
        self.cloud_router_ip = pulumi.Output.from_input("")
        self.customer_router_ip = pulumi.Output.from_input("")
        self.pairing_keys = pulumi.Output.secret(
            pulumi.Output.all(*[a.pairing_key for a in attachments])
        )
