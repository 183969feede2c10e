"""A site's network on GCP: a custom-mode VPC, one subnetwork in the site's region with the GKE
secondary ranges, Private Google Access and flow logs, a Cloud Router (the BGP speaker DR links
attach to) with Cloud NAT for private nodes' egress, and the network's firewall rules declared
explicitly (see `SiteNetwork._firewall`).

Address plan, carved from the site's CIDR (a /16 shown; other prefixes scale the same way):

    10.x.0.0/20      nodes: the subnetwork's primary range (first /20)
    10.x.16.0/20     Services: one equal slice per cluster (second /20)
    10.x.32.0/20 .. 10.x.127.0/20   free
    10.x.127.240/28  GKE control planes: cluster i takes the i-th /28 from the end of the
                     first half, so it is unique per site (sites' CIDRs never overlap)
    10.x.128.0/17    Pods: one equal slice per cluster (second half)

Ranges are declared for every cluster in the plan, standing or not, so a failover that
declares a backup/restore cluster does not change the subnetwork.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from gpudr.contract.drill import fit

# GCP's implied rules (deny all ingress, allow all egress) sit at 65535 and cannot be removed;
# a rule at a lower number wins over them. The explicit deny-alls take the lowest priority that
# still overrides the implied ones, so that any allow, GKE's own (1000) included, wins over them.
DENY_ALL_PRIORITY = 65534
ALLOW_PRIORITY = 1000
# Google APIs through Private Google Access (their default domains resolve to Google's public
# addresses) and registries outside Google through Cloud NAT: both over HTTPS.
HTTPS_PORTS = ("443",)
# Subnet flow logs (CIS GCP Foundations 3.8), billed per GiB and priced in the plan's cost lines
# at this aggregation. Ten-minute aggregation folds a long-lived flow (a checkpoint upload, NCCL
# between nodes) into few records instead of one per 5 seconds (the default); half the records
# are kept, enough to see who talks to whom (a single short connection may be missed). All
# metadata, so a record names the VMs, GKE Pods and networks at both ends: what an investigation
# reads. The records land in the project's Cloud Logging (`vpc_flows`), from where the site's
# sink (components/gcp/logs.py) routes them to the site's log bucket.
FLOW_LOGS = gcp.compute.SubnetworkLogConfigArgs(
    aggregation_interval="INTERVAL_10_MIN",
    flow_sampling=0.5,
    metadata="INCLUDE_ALL_METADATA",
)


@dataclass(frozen=True)
class ClusterRanges:
    pods_range: str  # secondary range names, as the cluster's ip_allocation_policy names them
    pods_cidr: str
    services_range: str
    services_cidr: str
    master_cidr: str  # the private control plane's /28


@dataclass(frozen=True)
class AddressPlan:
    nodes_cidr: str
    clusters: dict[str, ClusterRanges]


def address_plan(cidr: str, clusters: Sequence[str]) -> AddressPlan:
    """The carve documented above. Needs a /20 or larger: pods get half of it."""
    net = ipaddress.ip_network(cidr)
    if not isinstance(net, ipaddress.IPv4Network) or net.prefixlen > 20:
        raise ValueError(f"site cidr {cidr}: GCP sites need an IPv4 /20 or larger (a /16 is usual)")
    first_half, pods_half = net.subnets(prefixlen_diff=1)
    blocks = list(net.subnets(prefixlen_diff=4))
    nodes, services = blocks[0], blocks[1]
    slices = 2 ** math.ceil(math.log2(max(len(clusters), 1)))
    masters = list(first_half.subnets(new_prefix=28))
    if services.prefixlen + int(math.log2(slices)) > 28:
        raise ValueError(f"site cidr {cidr}: too small for {len(clusters)} GKE clusters")
    pods = list(pods_half.subnets(prefixlen_diff=int(math.log2(slices))))
    svcs = list(services.subnets(prefixlen_diff=int(math.log2(slices))))
    return AddressPlan(
        nodes_cidr=str(nodes),
        clusters={
            c: ClusterRanges(
                pods_range=f"{c}-pods",
                pods_cidr=str(pods[i]),
                services_range=f"{c}-services",
                services_cidr=str(svcs[i]),
                master_cidr=str(masters[-1 - i]),
            )
            for i, c in enumerate(clusters)
        },
    )


@dataclass(frozen=True)
class SiteNetworkArgs:
    project: str
    region: str
    cidr: str
    network_name: str
    router_asn: int  # the site's unique private ASN (transit_gateway_asn in the site config)
    clusters: Sequence[str]  # every cluster of the site, standing or not
    # The CIDRs of the peers this site has a DR link to: allowed both ways. Empty for a drill's
    # isolated network.
    peer_cidrs: Sequence[str] = ()


class SiteNetwork(pulumi.ComponentResource):
    network_id: pulumi.Output[str]
    network_self_link: pulumi.Output[str]
    subnetwork_self_link: pulumi.Output[str]
    router_name: pulumi.Output[str]
    plan: AddressPlan

    def __init__(
        self, name: str, args: SiteNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:network:SiteNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        plan = address_plan(args.cidr, args.clusters)

        # Custom mode: no auto subnets in every region (they would overlap peers' ranges).
        # Global routing: routes the Cloud Router learns over a DR link reach every region.
        network = gcp.compute.Network(
            f"{name}-vpc",
            name=args.network_name,
            project=args.project,
            auto_create_subnetworks=False,
            routing_mode="GLOBAL",
            description="gpudr site network",
            opts=child,
        )
        subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            name=subnetwork_name(args.network_name, args.region),
            project=args.project,
            region=args.region,
            network=network.id,
            ip_cidr_range=plan.nodes_cidr,
            secondary_ip_ranges=[
                gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=name_, ip_cidr_range=block)
                for r in plan.clusters.values()
                for name_, block in (
                    (r.pods_range, r.pods_cidr),
                    (r.services_range, r.services_cidr),
                )
            ],
            # Private nodes reach Cloud Storage and the other Google APIs without the NAT.
            private_ip_google_access=True,
            # In place on a deployed subnetwork, no replacement (as `gcloud compute networks
            # subnets update --enable-flow-logs` does it).
            log_config=FLOW_LOGS,
            opts=child,
        )
        # Deterministic name: the primary's stack attaches its HA VPN tunnels' BGP sessions to
        # this router by name, without this stack's state.
        router = gcp.compute.Router(
            f"{name}-router",
            name=f"{args.network_name}-router",
            project=args.project,
            region=args.region,
            network=network.id,
            bgp=gcp.compute.RouterBgpArgs(asn=args.router_asn),
            opts=child,
        )
        # Private GKE nodes have no external address: image pulls from outside Google and
        # other egress leave through Cloud NAT.
        gcp.compute.RouterNat(
            f"{name}-nat",
            name=f"{args.network_name}-nat",
            project=args.project,
            region=args.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=child,
        )
        self._firewall(name, args, network.id)
        self.network_id = network.id
        self.network_self_link = network.self_link
        self.subnetwork_self_link = subnet.self_link
        self.router_name = router.name
        self.plan = plan
        self.register_outputs(
            {
                "network_id": self.network_id,
                "network_self_link": self.network_self_link,
                "subnetwork_self_link": self.subnetwork_self_link,
                "router_name": self.router_name,
            }
        )

    def _firewall(self, name: str, args: SiteNetworkArgs, network: pulumi.Input[str]) -> None:
        """The network's firewall, declared rather than left to GCP's implied rules (CIS GCP
        3.x): allow what the site needs, deny the rest at the lowest priority, both ways.

        Ingress: the DR peers' CIDRs (over the peering or VPN); nothing else from outside.
        GKE creates and keeps its own rules for each cluster at priority 1000 (control plane to
        nodes, node to node, pod ranges, and the health-check ranges of any load balancer a
        Service asks for), so they are not repeated here; gpudr itself declares no load
        balancer. Egress: the site's own CIDR (nodes, Pods, Services and the GKE control
        planes' /28s are all carved from it), the peers' CIDRs, and HTTPS anywhere (Google
        APIs by Private Google Access, images through Cloud NAT); everything else is denied.
        The metadata server (DNS, NTP, node credentials) is always reachable: firewall rules
        never apply to it.

        No rule sets `log_config`: firewall rules logging is billed as Cloud Logging ingestion,
        so it stays off until the plan prices it (an exception docs/security.md lists)."""
        peers, anywhere = tuple(args.peer_cidrs), ("0.0.0.0/0",)
        rules: list[_Rule] = []
        if peers:
            rules += [
                _Rule("in-peers", "INGRESS", peers, "ingress from the DR peers over the DR link"),
                _Rule("out-peers", "EGRESS", peers, "egress to the DR peers over the DR link"),
            ]
        rules += [
            _Rule(
                "out-site",
                "EGRESS",
                (args.cidr,),
                "egress within the site: nodes, Pods, Services, GKE control planes",
            ),
            _Rule(
                "out-https",
                "EGRESS",
                anywhere,
                "HTTPS egress: Google APIs (Private Google Access), images via Cloud NAT",
                ports=HTTPS_PORTS,
            ),
            _Rule("in-deny-all", "INGRESS", anywhere, "deny any other ingress", deny=True),
            _Rule("out-deny-all", "EGRESS", anywhere, "deny any other egress", deny=True),
        ]
        for r in rules:
            ingress = r.direction == "INGRESS"
            gcp.compute.Firewall(
                f"{name}-fw-{r.suffix}",
                name=rule_name(args.network_name, r.suffix),
                project=args.project,
                network=network,
                description=f"gpudr: {r.description}",
                direction=r.direction,
                # The deny-alls at the lowest priority: any allow, GKE's own included, wins.
                priority=DENY_ALL_PRIORITY if r.deny else ALLOW_PRIORITY,
                source_ranges=list(r.ranges) if ingress else None,
                destination_ranges=None if ingress else list(r.ranges),
                allows=None
                if r.deny
                else [
                    gcp.compute.FirewallAllowArgs(
                        protocol="tcp" if r.ports else "all", ports=list(r.ports) or None
                    )
                ],
                denies=[gcp.compute.FirewallDenyArgs(protocol="all")] if r.deny else None,
                opts=pulumi.ResourceOptions(parent=self),
            )


@dataclass(frozen=True)
class _Rule:
    suffix: str
    direction: str  # INGRESS | EGRESS
    ranges: tuple[str, ...]  # sources (ingress) or destinations (egress)
    description: str
    ports: tuple[str, ...] = ()  # TCP ports; none: every protocol
    deny: bool = False


def subnetwork_name(network_name: str, region: str) -> str:
    """The site's (or a drill's) one subnetwork: the site's log sink names it in its filter."""
    return f"{network_name}-{region}"


def rule_name(network_name: str, suffix: str) -> str:
    """`<network>-<suffix>`, within GCP's 63 characters (a long network name is cut and
    digested, so two stay distinct)."""
    return f"{fit(network_name, 62 - len(suffix))}-{suffix}"
