"""One gpudr site on GCP: keys, network, data buckets, scheduled transfers, GKE GPU clusters, DR
links, and the site's log sink (its buckets' data access, its network's flows and its clusters'
control planes, into a log bucket encrypted with the site's key).

Every regional resource is placed with an explicit `region=`/`location=`/`zone=` and every
resource names its `project=`: a DR stack registers nothing in its primary's region (a
dual-region bucket and its `us`/`eu`/`asia` key ring span regions by design), so it previews
and updates while that region is down. Nothing is read from another stack's state: the peer's
network is named by its deterministic path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.config import TransferCredentials
from components.gcp.bucket import DataBucket, DataBucketArgs, grant_bucket_roles
from components.gcp.cross_cloud import GcsHmacReader, GcsHmacReaderArgs
from components.gcp.gpu_cluster import GpuCluster, GpuClusterArgs
from components.gcp.kms import DataKey, DataKeyArgs
from components.gcp.links import HaVpnAnchor, HaVpnAnchorArgs, VpcPeering, VpcPeeringArgs
from components.gcp.logs import SiteLogs, SiteLogsArgs
from components.gcp.network import SiteNetwork, SiteNetworkArgs
from components.gcp.onprem import (
    OnPremAgents,
    OnPremAgentsArgs,
    OnPremLinkEnd,
    OnPremLinkEndArgs,
)
from components.gcp.onprem import check_inbound as check_onprem_inbound
from components.gcp.transfer import SOURCE_ROLES, ScheduledTransfer, ScheduledTransferArgs
from components.gcp.writer import DualWriterArgs, dual_writer
from gpudr.contract.grants import needs_write_grant
from gpudr.contract.naming import cci_gateway_name, cci_name, writer_account_id
from gpudr.contract.site import BucketConfig, LinkConfig, PeerConfig, SiteConfig
from gpudr.contract.stack import GCS_HMAC_ACCESS_ID, GCS_HMAC_SECRET
from gpudr.contract.tags import bucket_tags, gcp_labels, pool_tags, site_tags

LINK_KINDS = ("vpc-peering", "ha-vpn", "vpn", "cross-cloud-interconnect")


@dataclass(frozen=True)
class GcpSiteArgs:
    config: SiteConfig
    failover: bool
    # Sign-ins for scheduled pulls from another cloud (see components/config.py).
    credentials: TransferCredentials = field(default_factory=TransferCredentials)


def bucket_location(cfg: SiteConfig, b: BucketConfig) -> str:
    """As GCS reports it: upper case (`US`, `US-EAST4`); the site's region by default."""
    return (b.location or cfg.region).upper()


def key_location(cfg: SiteConfig, b: BucketConfig) -> str:
    """A CMEK key must be in the bucket's location: `us` for a US dual-region."""
    return (b.kms_location or bucket_location(cfg, b)).lower()


@dataclass(frozen=True)
class _Agents:
    """The service agent members (`serviceAccount:...`) a site's keys are granted to."""

    storage: pulumi.Output[str]
    logging: pulumi.Output[str]  # encrypts the site's log bucket
    transfer: pulumi.Output[str] | None  # only with scheduled pulls into this site
    gke: pulumi.Output[str] | None  # only with clusters


class GcpSite(pulumi.ComponentResource):
    buckets: pulumi.Output[dict[str, str]]
    clusters: pulumi.Output[dict[str, str]]
    key_id: pulumi.Output[str]
    dual_write_endpoint: pulumi.Output[str | None]
    # {dr site: {config key: value}}: what each DR site on another cloud needs in its own config
    # to pull from this one (the HMAC key AWS DataSync reads with; its secret stays secret).
    transfer_credentials: pulumi.Output[dict[str, dict[str, str]]]
    # A DR site protecting an on-premises site: the link's values the runbook's checklist asks
    # for (attachments, BGP addresses, Partner pairing keys). Over Partner Interconnect it is
    # secret as a whole, the pairing keys being secrets (`--show-secrets` prints them).
    onprem: pulumi.Output[dict[str, object]] | None = None

    def __init__(
        self, name: str, args: GcpSiteArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:site:GcpSite", name, None, opts)
        cfg = args.config
        cfg.require_logs()  # before anything is declared: a site never deploys unlogged
        self._name, self._cfg = name, cfg
        self._failover = args.failover
        self._child = pulumi.ResourceOptions(parent=self)
        self._cci_provisioned = args.credentials.cci_provisioned
        self._project, key_ring = _required(cfg)
        for b in cfg.buckets:
            if b.replication:
                raise ValueError(
                    f"bucket {b.name}: push replication ({b.replication[0].mechanism}) does not "
                    "exist on Cloud Storage; use a dual-region bucket or an inbound transfer"
                )
        inbound = [b for b in cfg.buckets if b.inbound]
        agents = self._agents(inbound=bool(inbound))
        keys = self._keys(key_ring, agents, inbound)
        buckets = self._buckets(keys)
        self._writers(buckets)
        self._sts_readers(buckets)
        onprem = self._onprem_agents(agents, inbound)
        for b in inbound:
            assert agents.transfer is not None
            key = keys[key_location(cfg, b)]
            self._transfer(b, buckets[b.data_class], key, agents.transfer, args.credentials, onprem)
        network = SiteNetwork(
            f"{name}-net",
            SiteNetworkArgs(
                project=self._project,
                region=cfg.region,
                cidr=cfg.cidr,
                network_name=cfg.network_name,
                router_asn=cfg.transit_gateway_asn,
                clusters=[c.name for c in cfg.clusters],
                # Allowed through the firewall: the peers a DR link joins this site to.
                peer_cidrs=linked_peer_cidrs(cfg),
            ),
            opts=self._child,
        )
        clusters = self._clusters(network, keys[cfg.region.lower()], args.failover)
        self._logs(keys[cfg.region.lower()])
        self._links(network)
        credentials = self._hmac_readers(buckets)

        # Output.all() of nothing is a list; a site with no bucket or cluster exports {}.
        self.buckets = (
            pulumi.Output.all(**{k: v.bucket_name for k, v in buckets.items()})
            if buckets
            else pulumi.Output.from_input({})
        )
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        self.key_id = keys[cfg.region.lower()].key_id
        # Dual writes reach GCS through its global endpoint: there is no endpoint to export.
        self.dual_write_endpoint = pulumi.Output.from_input(None)
        # Output.all() of nothing is a list: no reader exports {}.
        self.transfer_credentials = (
            pulumi.Output.all(**{dr: pulumi.Output.all(**keys) for dr, keys in credentials.items()})
            if credentials
            else pulumi.Output.from_input({})
        )
        self.register_outputs(
            {
                "buckets": self.buckets,
                "clusters": self.clusters,
                "key_id": self.key_id,
                "dual_write_endpoint": self.dual_write_endpoint,
                "transfer_credentials": self.transfer_credentials,
            }
        )

    def _agents(self, *, inbound: bool) -> _Agents:
        """The service agents the keys must let encrypt. Looked up, not spelled out, for Cloud
        Storage, Cloud Logging and Storage Transfer: the lookup also makes sure the agent
        exists before it is granted anything. GKE's agent has no lookup; its address is fixed
        by the project number."""
        project, invoke = self._project, pulumi.InvokeOutputOptions(parent=self)
        storage = gcp.storage.get_project_service_account_output(
            project=project, opts=invoke
        ).email_address.apply(lambda e: f"serviceAccount:{e}")
        # The account Cloud Logging encrypts a project's CMEK log buckets as.
        logging = gcp.logging.get_project_cmek_settings_output(
            project=project, opts=invoke
        ).service_account_id.apply(lambda e: f"serviceAccount:{e}")
        transfer = (
            gcp.storage.get_transfer_project_service_account_output(
                project=project, opts=invoke
            ).email.apply(lambda e: f"serviceAccount:{e}")
            if inbound
            else None
        )
        gke = (
            gcp.organizations.get_project_output(project_id=project, opts=invoke).number.apply(
                lambda n: (
                    f"serviceAccount:service-{n}@container-engine-robot.iam.gserviceaccount.com"
                )
            )
            if self._cfg.clusters
            else None
        )
        return _Agents(storage, logging, transfer, gke)

    def _keys(
        self, key_ring: str, agents: _Agents, inbound: list[BucketConfig]
    ) -> dict[str, DataKey]:
        """One key per location: the region (GKE secrets, regional buckets, the log bucket) and
        each bucket's, each granted to the agents that encrypt with it there."""
        cfg, region = self._cfg, self._cfg.region.lower()
        locations = list(dict.fromkeys([region] + [key_location(cfg, b) for b in cfg.buckets]))
        keys: dict[str, DataKey] = {}
        for loc in locations:
            encrypters: dict[str, pulumi.Input[str]] = {}
            if any(key_location(cfg, b) == loc for b in cfg.buckets):
                encrypters["storage"] = agents.storage
            if agents.transfer is not None and any(key_location(cfg, b) == loc for b in inbound):
                encrypters["transfer"] = agents.transfer
            if agents.gke is not None and loc == region:
                encrypters["gke"] = agents.gke
            if loc == region:
                encrypters["logging"] = agents.logging
            keys[loc] = DataKey(
                f"{self._name}-key-{loc}",
                DataKeyArgs(
                    project=self._project,
                    location=loc,
                    key_ring=key_ring,
                    labels=gcp_labels(site_tags(cfg, "data-key")),
                    encrypters=encrypters,
                ),
                opts=self._child,
            )
        return keys

    def _buckets(self, keys: dict[str, DataKey]) -> dict[str, DataBucket]:
        """A bucket per data class, encrypted with the key of its location."""
        cfg, out = self._cfg, {}
        for b in cfg.buckets:
            key = keys[key_location(cfg, b)]
            out[b.data_class] = DataBucket(
                f"{self._name}-{b.data_class}",
                DataBucketArgs(
                    config=b,
                    project=self._project,
                    location=bucket_location(cfg, b),
                    key_id=key.key_id,
                    key_grant=key.grants["storage"],
                    labels=gcp_labels(bucket_tags(cfg, b)),
                ),
                opts=self._child,
            )
        return out

    def _sts_readers(self, buckets: dict[str, DataBucket]) -> None:
        """A GCP DR site's Storage Transfer jobs read this site's copies of the classes they
        pull: its project's transfer service agent gets read on each, granted by this stack
        (the source's owner), so the DR stack never writes to the primary's project. Without
        it the first scheduled run fails on permissions."""
        cfg = self._cfg
        pulled = [b for b in cfg.buckets if b.role == "source" and b.mechanism == "sts"]
        readers = [p for p in cfg.peers if p.role == "dr" and p.cloud == "gcp" and p.project]
        invoke = pulumi.InvokeOutputOptions(parent=self)
        for peer in readers if pulled else []:
            agent = gcp.storage.get_transfer_project_service_account_output(
                project=peer.project, opts=invoke
            ).email.apply(lambda e: f"serviceAccount:{e}")
            for b in pulled:
                grant_bucket_roles(
                    f"{self._name}-{b.data_class}-{peer.site}-sts-reader",
                    bucket=buckets[b.data_class].bucket_name,
                    roles=SOURCE_ROLES,
                    member=agent,
                    opts=self._child,
                )

    def _writers(self, buckets: dict[str, DataBucket]) -> None:
        """Each dual-written class's writer at this site, with its grant on this copy."""
        cfg = self._cfg
        for b in cfg.buckets:
            if needs_write_grant(b.mechanism):
                dual_writer(
                    self,
                    f"{self._name}-{b.data_class}-writer",
                    DualWriterArgs(
                        project=self._project,
                        site=cfg.site,
                        account_id=writer_account_id(cfg.system, cfg.site, b.data_class),
                        config=b,
                        bucket=buckets[b.data_class].bucket_name,
                    ),
                )

    def _onprem_agents(self, agents: _Agents, inbound: list[BucketConfig]) -> OnPremAgents | None:
        """The pool and account of the agents on premises, when a class is pulled from there
        (components/gcp/onprem.py)."""
        cfg = self._cfg
        pulled = [t for b in inbound for t in b.inbound if t.source_cloud == "onprem"]
        if not pulled:
            return None
        check_onprem_inbound(pulled, cfg.onprem)
        assert cfg.onprem is not None and agents.transfer is not None
        return OnPremAgents(
            f"{self._name}-onprem-agents",
            OnPremAgentsArgs(
                project=self._project,
                system=cfg.system,
                site=cfg.site,
                source=cfg.onprem,
                transfer_agent=agents.transfer,
            ),
            opts=self._child,
        )

    def _transfer(
        self,
        b: BucketConfig,
        bucket: DataBucket,
        key: DataKey,
        agent: pulumi.Input[str],
        credentials: TransferCredentials,
        onprem: OnPremAgents | None,
    ) -> None:
        """The scheduled pulls into one replica bucket, held by this (DR) stack."""
        from_onprem = onprem is not None and any(t.source_cloud == "onprem" for t in b.inbound)
        agent_grants = (
            [*onprem.grants, *onprem.grant_sink(f"{self._name}-{b.data_class}", bucket.bucket_name)]
            if onprem is not None and from_onprem
            else []
        )
        ScheduledTransfer(
            f"{self._name}-{b.data_class}-transfer",
            ScheduledTransferArgs(
                project=self._project,
                sink_bucket=bucket.bucket_name,
                transfers=b.inbound,
                agent_member=agent,
                key_grant=key.grants["transfer"],
                credentials=credentials,
                system=self._cfg.system,
                site=self._cfg.site,
                onprem=self._cfg.onprem if from_onprem else None,
                agent_pool=onprem.pool_name if onprem is not None and from_onprem else None,
                agent_grants=agent_grants,
                hold_schedules=from_onprem and self._failover,
            ),
            opts=self._child,
        )

    def _clusters(
        self, network: SiteNetwork, key: DataKey, failover: bool
    ) -> dict[str, pulumi.Output[str]]:
        """The GKE GPU clusters; a backup/restore cluster keeps nothing standing, so it is
        declared only on failover."""
        cfg, out = self._cfg, {}
        for c in cfg.clusters:
            if not (c.standby_control_plane or failover):
                continue
            ranges = network.plan.clusters[c.name]
            cluster = GpuCluster(
                f"{self._name}-{c.name}",
                GpuClusterArgs(
                    config=c,
                    project=self._project,
                    region=cfg.region,
                    gpu_zone=cfg.azs[0],
                    network=network.network_self_link,
                    subnetwork=network.subnetwork_self_link,
                    pods_range=ranges.pods_range,
                    services_range=ranges.services_range,
                    master_cidr=ranges.master_cidr,
                    key_id=key.key_id,
                    key_grant=key.grants["gke"],
                    api_public_cidrs=cfg.api_public_cidrs,
                    failover=failover,
                    labels=gcp_labels(site_tags(cfg, "gpu-cluster", cluster=c.name)),
                    pool_labels={
                        p.name: gcp_labels(pool_tags(cfg, p.name, p.pattern, p.rto_s))
                        for p in c.pools
                    },
                ),
                opts=self._child,
            )
            out[c.name] = cluster.cluster_name
        return out

    def _logs(self, key: DataKey) -> None:
        """The site's log sink, in the site's region. Its key is the site's regional key,
        always regional (a multi-region `us` key exists only for dual-region buckets): Cloud
        Logging requires a log bucket's key to be in the bucket's location."""
        SiteLogs(
            f"{self._name}-logs",
            SiteLogsArgs(
                config=self._cfg,
                project=self._project,
                key_id=key.key_id,
                key_grant=key.grants["logging"],
            ),
            opts=self._child,
        )

    def _links(self, network: SiteNetwork) -> None:
        """The DR links: each side's half of a VPC peering; on a DR site the HA VPN anchors the
        primary's tunnels end on; on a primary, the tunnels to each AWS DR site."""
        cfg, name = self._cfg, self._name
        anchor: HaVpnAnchor | None = None  # a primary's own HA VPN gateway, once
        for link in cfg.links:
            if link.kind == "wan":
                self._onprem_link(network)
                continue
            if link.kind not in LINK_KINDS:
                raise ValueError(
                    f"link to {link.peer_site}: kind {link.kind} does not exist on GCP; "
                    f"use one of {', '.join(LINK_KINDS)}"
                )
            peer = next(p for p in cfg.peers if p.site == link.peer_site)
            if link.kind == "vpc-peering":
                # Each side declares its own half: this stack never touches the peer's network.
                VpcPeering(
                    f"{name}-to-{peer.site}",
                    VpcPeeringArgs(
                        network_name=cfg.network_name, network_id=network.network_id, peer=peer
                    ),
                    opts=self._child,
                )
            elif link.kind == "cross-cloud-interconnect":
                # A DR site's anchor is its Cloud Router (network.py); a primary owns the link.
                if cfg.role == "primary":
                    self._cci_to_aws(link=link, peer=peer, network=network)
            elif cfg.role == "dr":
                # The DR side's anchors only; the tunnels belong to the primary's stack.
                self._anchor(network, site_tags(cfg, "dr-link", peer=peer.site, link=link.kind))
            elif link.kind == "ha-vpn" and peer.cloud == "aws":
                # One gateway for every AWS DR site: each link adds its own tunnels.
                if anchor is None:
                    anchor = self._anchor(network, site_tags(cfg, "dr-link", link=link.kind))
                self._vpn_to_aws(link=link, peer=peer, network=network, anchor=anchor)
            else:
                # Between GCP sites the planner peers the networks; tunnels from a GCP primary
                # exist only towards AWS. Said, not hidden, and nothing half-built.
                pulumi.log.warn(
                    f"{link.kind} to {peer.site} ({peer.cloud}): gpudr builds the tunnels from a "
                    "GCP primary only to an AWS DR site; this link is left to you (the DR "
                    f"stack declares {peer.network_name}-havpn and {peer.network_name}-router)",
                    resource=self,
                )

    def _onprem_link(self, network: SiteNetwork) -> None:
        """The DR site's end of an on-premises site's link (components/gcp/onprem.py)."""
        cfg = self._cfg
        if cfg.onprem is None:
            raise ValueError(f"{self._name}: a wan link needs gpudr:site onprem; regenerate")
        link = OnPremLinkEnd(
            f"{self._name}-onprem",
            OnPremLinkEndArgs(
                project=self._project,
                region=cfg.region,
                network_id=network.network_id,
                name=cfg.network_name or self._name,
                cidr=cfg.cidr,
                source=cfg.onprem,
                labels=gcp_labels(
                    site_tags(cfg, "dr-link", peer=cfg.onprem.site, link=cfg.onprem.link_kind)
                ),
            ),
            opts=self._child,
        )
        self.onprem = pulumi.Output.all(
            attachments=link.attachment_names,
            cloud_router_ip=link.cloud_router_ip,
            customer_router_ip=link.customer_router_ip,
            pairing_keys=link.pairing_keys,
        )

    def _anchor(self, network: SiteNetwork, tags: dict[str, str]) -> HaVpnAnchor:
        """This site's HA VPN gateway, on its network."""
        return HaVpnAnchor(
            f"{self._name}-havpn",
            HaVpnAnchorArgs(
                project=self._project,
                region=self._cfg.region,
                network_name=self._cfg.network_name,
                network_id=network.network_id,
                labels=gcp_labels(tags),
            ),
            opts=self._child,
        )

    def _hmac_readers(
        self, buckets: dict[str, DataBucket]
    ) -> dict[str, dict[str, pulumi.Output[str]]]:
        """For each AWS DR site pulling with DataSync, a read-only service account and its HMAC
        key; its id and secret (secret) leave as `transfer_credentials`, keyed by the DR
        stack's config keys (components/config.py)."""
        cfg = self._cfg
        credentials: dict[str, dict[str, pulumi.Output[str]]] = {}
        by_name = {b.name: (b.data_class, buckets[b.data_class]) for b in cfg.buckets}
        for reader in cfg.datasync_readers:
            hmac = GcsHmacReader(
                f"{self._name}-{reader.dr_site}-reader",
                GcsHmacReaderArgs(
                    project=self._project,
                    reader=reader,
                    buckets={
                        by_name[n][0]: by_name[n][1].bucket_name
                        for n in reader.buckets
                        if n in by_name
                    },
                ),
                opts=self._child,
            )
            credentials[reader.dr_site] = {
                GCS_HMAC_ACCESS_ID: hmac.access_id,
                GCS_HMAC_SECRET: pulumi.Output.secret(hmac.secret),
            }
        return credentials

    def _vpn_to_aws(
        self, *, link: LinkConfig, peer: PeerConfig, network: SiteNetwork, anchor: HaVpnAnchor
    ) -> None:
        """HA VPN to an AWS DR site, owned by this (primary) stack as the AWS primary owns it
        the other way: this site's HA VPN gateway on the site's Cloud Router, and the AWS VPN
        connections on the DR site's transit gateway, found by its Name tag in the DR region.
        The DR stack declares nothing for it and never needs this stack."""
        # Imported here: only a site joined to AWS loads the AWS SDK.
        from components.xcloud.aws_gcp import GcpHaVpn, GcpHaVpnArgs, peer_transit_gateway

        cfg = self._cfg
        GcpHaVpn(
            f"{self._name}-to-{peer.site}",
            GcpHaVpnArgs(
                aws_region=peer.region,
                transit_gateway_id=peer_transit_gateway(peer, parent=self),
                aws_asn=peer.asn,
                gcp_project=self._project,
                gcp_region=cfg.region,
                gcp_name=f"{cfg.network_name}-to-{peer.site}",
                gcp_router=network.router_name,
                gcp_gateway=anchor.self_link,
                gcp_gateway_ips=anchor.interface_ips,
                gcp_asn=cfg.transit_gateway_asn,
                link=link,
                tags=site_tags(cfg, "dr-link", peer=peer.site, link=link.kind),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _cci_to_aws(self, *, link: LinkConfig, peer: PeerConfig, network: SiteNetwork) -> None:
        """The Cross-Cloud Interconnect to an AWS DR site, owned by this (primary) stack: the
        connections, attachments and BGP sessions on this site's Cloud Router, and the LAGs
        and Direct Connect gateway on the DR site's transit gateway, found by its Name tag in
        the DR region. The DR stack declares nothing for it and never needs this stack."""
        # Imported here: only a site joined to AWS loads the AWS SDK.
        from components.xcloud.aws_gcp import peer_transit_gateway
        from components.xcloud.cci import CrossCloudInterconnect, CrossCloudInterconnectArgs

        cfg = self._cfg
        CrossCloudInterconnect(
            f"{self._name}-cci-{peer.site}",
            CrossCloudInterconnectArgs(
                aws_region=peer.region,
                aws_cidr=peer.cidr,
                transit_gateway_id=peer_transit_gateway(peer, parent=self),
                dx_gateway_name=cci_gateway_name(cfg.system, peer.site, cfg.site),
                gcp_project=self._project,
                gcp_region=cfg.region,
                gcp_name=cci_name(cfg.network_name, peer.site),
                gcp_router=f"{cfg.network_name}-router",
                gcp_asn=cfg.transit_gateway_asn,
                link=link,
                provisioned=self._cci_provisioned,
                tags=site_tags(cfg, "dr-link", peer=peer.site, link=link.kind),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )


def linked_peer_cidrs(cfg: SiteConfig) -> list[str]:
    """The CIDRs of the peers a DR link joins this site to, each once, in peer order."""
    linked = {link.peer_site for link in cfg.links}
    return list(dict.fromkeys(p.cidr for p in cfg.peers if p.site in linked))


def _required(cfg: SiteConfig) -> tuple[str, str]:
    """The project, key ring and network names GCP resources cannot do without."""
    project = cfg.project or gcp.config.project
    missing = [
        field
        for field, value in (
            ("project", project),
            ("key_ring", cfg.key_ring),
            ("network_name", cfg.network_name),
        )
        if not value
    ]
    if missing or not cfg.azs:
        raise ValueError(
            f"gpudr:site {cfg.site} (gcp): {', '.join(missing) or 'azs'} not set; "
            "regenerate the stack with `gpudr generate`"
        )
    assert project is not None and cfg.key_ring is not None
    return project, cfg.key_ring
