"""One gpudr site on AWS: key, log sink, network, data buckets, replication, GPU clusters and DR
links.

Every resource is placed with an explicit `region=`: a DR stack registers nothing in its
primary's region, so it previews and updates while that region is down.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.aws.bucket import DataBucket, DataBucketArgs
from components.aws.datasync import (
    DATASYNC_LOG_GROUP,
    DataSyncLogs,
    DataSyncLogsArgs,
    DataSyncPull,
    DataSyncPullArgs,
    check_inbound,
)
from components.aws.drill import drill_cluster_pattern
from components.aws.gpu_cluster import GpuCluster, GpuClusterArgs, control_plane_log_group
from components.aws.kms import DataKey, DataKeyArgs
from components.aws.links import (
    DirectConnectAttachment,
    DirectConnectAttachmentArgs,
    DirectConnectLink,
    DirectConnectLinkArgs,
    TgwPeering,
    TgwPeeringArgs,
)
from components.aws.logs import SiteLogs, SiteLogsArgs
from components.aws.network import SiteNetwork, SiteNetworkArgs
from components.aws.onprem import (
    OnPremLinkEnd,
    OnPremLinkEndArgs,
    OnPremPull,
    OnPremPullArgs,
    agent_arns,
    missing_agents_message,
    missing_key_message,
)
from components.aws.onprem import check_inbound as check_onprem_inbound
from components.aws.replication import (
    SiteReplication,
    SiteReplicationArgs,
    SourceBucket,
    WriterIdentity,
    writer_policy,
    writer_role,
)
from components.config import TransferCredentials
from gpudr.contract.grants import needs_write_grant
from gpudr.contract.naming import (
    cci_gateway_name,
    cci_name,
    cluster_name,
    datasync_role_name,
    datasync_task_prefix,
    stack_name,
    writer_name,
    writer_role_name,
)
from gpudr.contract.onprem import OBJECT_STORAGE_KINDS
from gpudr.contract.site import BucketConfig, LinkConfig, PeerConfig, SiteConfig
from gpudr.contract.stack import (
    AZCOPY_CLIENT_ID,
    AZCOPY_IDENTITY_ID,
    AZCOPY_PRINCIPAL_ID,
    AZCOPY_TENANT_ID,
    DATASYNC_CREDENTIALS,
    copy_credential_command,
)
from gpudr.contract.tags import DrRole, bucket_tags, pool_tags, site_tags


@dataclass(frozen=True)
class AwsSiteArgs:
    config: SiteConfig
    failover: bool
    # Sign-ins for scheduled pulls from another cloud (see components/config.py).
    credentials: TransferCredentials = field(default_factory=TransferCredentials)


def _cross_account_role(cfg: SiteConfig) -> str | None:
    """A replica bucket in another account than its source trusts the source's replication
    role by name (the role the source's stack creates); None within one account."""
    sources = {b.source_account for b in cfg.buckets if b.role == "replica"}
    source_account = next(iter(sources), None)
    if cfg.role != "dr" or not source_account or source_account == cfg.account:
        return None
    role_name = next(b.source_role for b in cfg.buckets if b.source_role)
    return f"arn:aws:iam::{source_account}:role/{role_name}"


class AwsSite(pulumi.ComponentResource):
    buckets: pulumi.Output[dict[str, str]]
    clusters: pulumi.Output[dict[str, str]]
    transit_gateway_id: pulumi.Output[str]
    key_arn: pulumi.Output[str]
    key_id: pulumi.Output[str]
    dual_write_endpoint: pulumi.Output[str | None]
    # What a DR site on another cloud needs to pull from this one ({dr site: {config key:
    # value}}). GCP reads S3 by federation with its own identity, with nothing to hand over;
    # an Azure DR site's AzCopy jobs run as the identity this stack creates for them.
    transfer_credentials: pulumi.Output[dict[str, dict[str, str]]]
    # A DR site protecting an on-premises site: its link end's ids and BGP addresses.
    onprem: pulumi.Output[dict[str, str]] | None = None
    # {data class: ARN of the role its dual writer assumes here}, for the writer's Pod Identity
    # association; empty where nothing is dual-written.
    writer_role_arns: pulumi.Output[dict[str, str]]

    def __init__(
        self, name: str, args: AwsSiteArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:site:AwsSite", name, None, opts)
        cfg = args.config
        self._name, self._cfg = name, cfg
        self._child = pulumi.ResourceOptions(parent=self)
        self._cci_provisioned = args.credentials.cci_provisioned
        inbound = [b for b in cfg.buckets if b.inbound]
        # Before anything is declared: a site never deploys unlogged, nor pulls what it cannot.
        cfg.require_logs()
        for b in inbound:
            if cfg.onprem is not None:
                check_onprem_inbound(b.inbound, cfg.onprem)
            else:
                check_inbound(b.inbound)
        account_id: pulumi.Input[str] = (
            cfg.account
            or aws.get_caller_identity_output(
                opts=pulumi.InvokeOutputOptions(parent=self)
            ).account_id
        )
        cross_account_role = _cross_account_role(cfg)
        key = self._key(args, inbound, account_id, cross_account_role)
        sink = SiteLogs(
            f"{name}-logs", SiteLogsArgs(config=cfg, account_id=account_id), opts=self._child
        )
        network = self._network(sink)
        buckets = self._buckets(key, cross_account_role, sink)
        writer_role_arns = self._replication(buckets, key, account_id)
        writer_role_arns.update(self._writers(account_id))
        clusters = self._clusters(network, key, args.failover)
        for link in cfg.links:
            self._link(link, network)
        self._sts_readers(key)
        credentials = self._azcopy_readers(key)
        if inbound and cfg.onprem is not None:
            self._onprem_pulls(args, inbound, buckets, key, account_id)
        elif inbound:
            self._pulls(args=args, inbound=inbound, buckets=buckets, key=key, account_id=account_id)
        self.buckets = pulumi.Output.all(**{k: v.bucket_name for k, v in buckets.items()})
        # Output.all() of nothing is a list; a site with no standing cluster exports {}.
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        self.transit_gateway_id = network.transit_gateway_id
        self.key_arn = key.key_arn
        self.key_id = key.key_arn
        self.dual_write_endpoint = network.s3_interface_endpoint_dns
        self.transfer_credentials = (
            pulumi.Output.all(**credentials) if credentials else pulumi.Output.from_input({})
        )
        self.writer_role_arns = (
            pulumi.Output.all(**writer_role_arns)
            if writer_role_arns
            else pulumi.Output.from_input({})
        )
        self.register_outputs(
            {
                "buckets": self.buckets,
                "clusters": self.clusters,
                "transit_gateway_id": self.transit_gateway_id,
                "key_arn": self.key_arn,
                "dual_write_endpoint": self.dual_write_endpoint,
                "transfer_credentials": self.transfer_credentials,
                "writer_role_arns": self.writer_role_arns,
            }
        )

    def _key(
        self,
        args: AwsSiteArgs,
        inbound: list[BucketConfig],
        account_id: pulumi.Input[str],
        cross_account_role: str | None,
    ) -> DataKey:
        """The site's key, and whom besides the account its policy admits: the source's
        replication role (cross-account), and CloudWatch Logs for the site's log groups and
        its drills'."""
        cfg = self._cfg
        return DataKey(
            f"{self._name}-data",
            DataKeyArgs(
                region=cfg.region,
                alias=cfg.kms_alias,
                account_id=account_id,
                tags=site_tags(cfg, "data-key"),
                replication_role_arn=cross_account_role,
                log_groups=_key_log_groups(args, inbound),
                log_group_patterns=_drill_log_groups(cfg),
            ),
            opts=self._child,
        )

    def _writer_identity(self, data_class: str) -> WriterIdentity:
        """The role a dual-written class's writer assumes at this site, from this site's own
        EKS clusters."""
        cfg = self._cfg
        return WriterIdentity(
            role_name=writer_role_name(cfg.system, cfg.site, data_class),
            clusters=cluster_name(cfg.system, cfg.site, "*"),
            tags=site_tags(cfg, DrRole.WRITER, data_class=data_class),
        )

    def _network(self, sink: SiteLogs) -> SiteNetwork:
        """The VPC, its transit gateway, the S3 interface endpoint dual writes arrive at, and
        its flow logs to the site's sink."""
        cfg = self._cfg
        return SiteNetwork(
            f"{self._name}-net",
            SiteNetworkArgs(
                region=cfg.region,
                cidr=cfg.cidr,
                azs=cfg.azs,
                transit_gateway_name=cfg.transit_gateway_name,
                transit_gateway_asn=cfg.transit_gateway_asn,
                # An on-premises source is routed over its link like a peer site.
                peer_cidrs=[p.cidr for p in cfg.peers] + ([cfg.onprem.cidr] if cfg.onprem else []),
                dual_write_endpoint=cfg.dual_write_endpoint,
                tags=site_tags(cfg, "network"),
                flow_log_bucket=cfg.require_logs().sink,
                flow_log_ready=sink.ready,
            ),
            opts=self._child,
        )

    def _buckets(
        self, key: DataKey, cross_account_role: str | None, sink: SiteLogs
    ) -> dict[str, DataBucket]:
        """A bucket per data class, encrypted with the site's key, logging every request to
        the site's sink."""
        cfg, out = self._cfg, {}
        for b in cfg.buckets:
            out[b.data_class] = DataBucket(
                f"{self._name}-{b.data_class}",
                DataBucketArgs(
                    config=b,
                    region=cfg.region,
                    key_arn=key.key_arn,
                    tags=bucket_tags(cfg, b),
                    access_logs=sink.access_logs(b.name),
                    replication_role_arn=cross_account_role,
                ),
                opts=self._child,
            )
        return out

    def _replication(
        self, buckets: dict[str, DataBucket], key: DataKey, account_id: pulumi.Input[str]
    ) -> dict[str, pulumi.Output[str]]:
        """The source buckets' pushes (S3 replication) and dual-write grants, after the buckets'
        own settings exist; returns the writers' role ARNs by data class."""
        cfg = self._cfg
        sources = [
            SourceBucket(
                b,
                buckets[b.data_class].bucket_name,
                buckets[b.data_class].bucket_arn,
                buckets[b.data_class].versioning_id,
            )
            for b in cfg.buckets
            if b.role == "source" and (b.replication or b.dual_write_buckets)
        ]
        if not sources:
            return {}
        replication = SiteReplication(
            f"{self._name}-replication",
            SiteReplicationArgs(
                region=cfg.region,
                account_id=account_id,
                role_name=cfg.replication_role,
                key_arn=key.key_arn,
                sources=sources,
                tags=site_tags(cfg, "replication"),
                writers={
                    s.config.data_class: self._writer_identity(s.config.data_class)
                    for s in sources
                    if s.config.dual_write_buckets
                },
            ),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[buckets[s.config.data_class] for s in sources]
            ),
        )
        return dict(replication.writer_role_arns)

    def _writers(self, account_id: pulumi.Input[str]) -> dict[str, pulumi.Output[str]]:
        """The write grant on each other copy of a dual-written class at this site (a DR
        copy), attached to the role this site's writer assumes after failover to keep writing
        every copy. A source copy's grant, naming every copy, is its replication's
        (SiteReplication). The other copies are named only when they are S3 buckets too.
        Returns the writers' role ARNs by data class."""
        cfg, out = self._cfg, {}
        primaries_on_s3 = all(p.cloud == "aws" for p in cfg.peers if p.role == "primary")
        for b in cfg.buckets:
            if not needs_write_grant(b.mechanism) or (b.role == "source" and b.dual_write_buckets):
                continue
            others = b.dual_write_buckets if primaries_on_s3 else ()
            writer = f"{self._name}-{b.data_class}-writer"
            policy = writer_policy(
                self,
                writer,
                cfg=b,
                buckets=[b.name, *others],
                account_id=account_id,
                tags=site_tags(cfg, DrRole.WRITER, data_class=b.data_class),
                policy_name=writer_name(cfg.system, cfg.site, b.data_class),
            )
            role = writer_role(
                self, writer, policy=policy, identity=self._writer_identity(b.data_class)
            )
            out[b.data_class] = role.arn
        return out

    def _clusters(
        self, network: SiteNetwork, key: DataKey, failover: bool
    ) -> dict[str, pulumi.Output[str]]:
        """The EKS GPU clusters; a backup/restore cluster keeps nothing standing, so it is
        declared only on failover."""
        cfg, out = self._cfg, {}
        for c in cfg.clusters:
            if not (c.standby_control_plane or failover):
                continue
            cluster = GpuCluster(
                f"{self._name}-{c.name}",
                GpuClusterArgs(
                    config=c,
                    region=cfg.region,
                    vpc_id=network.vpc_id,
                    subnet_ids=network.private_subnet_ids,
                    gpu_subnet_id=network.gpu_subnet_id,
                    gpu_az=cfg.azs[0],
                    key_arn=key.key_arn,
                    api_public_cidrs=cfg.api_public_cidrs,
                    failover=failover,
                    tags=site_tags(cfg, "gpu-cluster", cluster=c.name),
                    pool_tags={p.name: pool_tags(cfg, p.name, p.pattern, p.rto_s) for p in c.pools},
                    log_retention_days=cfg.require_logs().retention_days,
                ),
                opts=self._child,
            )
            out[c.name] = cluster.cluster_name
        return out

    def _link(self, link: LinkConfig, network: SiteNetwork) -> None:
        """This site's part of one DR link: transit gateway peering and the VPNs to GCP and to
        Azure are the primary's; Direct Connect ports are the DR site's, and the primary
        attaches to them."""
        cfg, name = self._cfg, self._name
        if link.kind == "wan":
            self._onprem_link(link, network)
            return
        peer = next(p for p in cfg.peers if p.site == link.peer_site)
        link_tags = site_tags(cfg, "dr-link", peer=peer.site, link=link.kind)
        if link.kind == "tgw-peering" and cfg.role == "primary":
            TgwPeering(
                f"{name}-to-{peer.site}",
                TgwPeeringArgs(
                    region=cfg.region,
                    cidr=cfg.cidr,
                    transit_gateway_id=network.transit_gateway_id,
                    transit_gateway_route_table_id=network.transit_gateway_route_table_id,
                    peer=peer,
                    link=link,
                    tags=link_tags,
                ),
                opts=self._child,
            )
        elif link.kind == "direct-connect" and cfg.role == "dr":
            DirectConnectLink(
                f"{name}-dx",
                DirectConnectLinkArgs(
                    region=cfg.region,
                    system=cfg.system,
                    site=cfg.site,
                    cidr=cfg.cidr,
                    transit_gateway_id=network.transit_gateway_id,
                    link=link,
                    tags=link_tags,
                ),
                opts=self._child,
            )
        elif link.kind == "ha-vpn" and cfg.role == "primary":
            self._vpn_to_gcp(link, peer, network, link_tags)
        elif link.kind == "cross-cloud-interconnect" and cfg.role == "primary":
            self._cci_to_gcp(link, peer, network, link_tags)
        elif link.kind == "vpn" and cfg.role == "primary":
            self._vpn_to_azure(link, peer, network, link_tags)
        elif link.kind == "direct-connect":
            DirectConnectAttachment(
                f"{name}-dx-{peer.site}",
                DirectConnectAttachmentArgs(
                    system=cfg.system,
                    dr_site=peer.site,
                    cidr=cfg.cidr,
                    transit_gateway_id=network.transit_gateway_id,
                ),
                opts=self._child,
            )

    def _onprem_link(self, link: LinkConfig, network: SiteNetwork) -> None:
        """The DR site's end of an on-premises site's link (components/aws/onprem.py)."""
        cfg, name = self._cfg, self._name
        if cfg.onprem is None:
            raise ValueError(f"{name}: a wan link needs gpudr:site onprem; regenerate the stack")
        end = OnPremLinkEnd(
            f"{name}-onprem",
            OnPremLinkEndArgs(
                region=cfg.region,
                system=cfg.system,
                site=cfg.site,
                cidr=cfg.cidr,
                vpc_id=network.vpc_id,
                subnet_ids=network.private_subnet_ids,
                transit_gateway_id=network.transit_gateway_id,
                source=cfg.onprem,
                link=link,
                tags=site_tags(cfg, "dr-link", peer=cfg.onprem.site, link=link.kind),
            ),
            opts=self._child,
        )
        self.onprem = pulumi.Output.all(
            endpoint_id=end.endpoint_id,
            subnet_arns=end.subnet_arns,
            security_group_arn=end.security_group_arn,
            link_ids=end.link_ids,
            amazon_address=end.amazon_address,
            customer_address=end.customer_address,
        )

    def _vpn_to_gcp(
        self, link: LinkConfig, peer: PeerConfig, network: SiteNetwork, tags: dict[str, str]
    ) -> None:
        """The HA VPN to a GCP DR site's gateway, found by its deterministic name in its
        project: no state of the DR stack is read."""
        # Imported here: only a site joined to GCP loads the GCP SDK.
        from components.xcloud.aws_gcp import GcpHaVpn, GcpHaVpnArgs, peer_ha_vpn_gateway

        gateway_self_link, gateway_ips = peer_ha_vpn_gateway(peer, parent=self)
        assert peer.project is not None and peer.network_name is not None
        GcpHaVpn(
            f"{self._name}-to-{peer.site}",
            GcpHaVpnArgs(
                aws_region=self._cfg.region,
                transit_gateway_id=network.transit_gateway_id,
                aws_asn=self._cfg.transit_gateway_asn,
                gcp_project=peer.project,
                gcp_region=peer.region,
                gcp_name=f"{peer.network_name}-aws",
                gcp_router=f"{peer.network_name}-router",
                gcp_gateway=gateway_self_link,
                gcp_gateway_ips=gateway_ips,
                gcp_asn=peer.asn,
                link=link,
                tags=tags,
            ),
            opts=self._child,
        )

    def _cci_to_gcp(
        self, link: LinkConfig, peer: PeerConfig, network: SiteNetwork, tags: dict[str, str]
    ) -> None:
        """The Cross-Cloud Interconnect to a GCP DR site, owned by this (primary) stack as the
        HA VPN is: the LAGs and the Direct Connect gateway on this transit gateway, and in the
        DR site's project the connections, attachments and BGP sessions on its Cloud Router,
        named by its deterministic name. The DR stack declares nothing for it."""
        # Imported here: only a site joined to GCP loads the GCP SDK.
        from components.xcloud.cci import CrossCloudInterconnect, CrossCloudInterconnectArgs

        cfg = self._cfg
        if not peer.project or not peer.network_name:
            raise ValueError(
                f"cross-cloud-interconnect to {peer.site}: the GCP peer needs a project and a "
                "network name; regenerate the stack with `gpudr generate`"
            )
        CrossCloudInterconnect(
            f"{self._name}-cci-{peer.site}",
            CrossCloudInterconnectArgs(
                aws_region=cfg.region,
                aws_cidr=cfg.cidr,
                transit_gateway_id=network.transit_gateway_id,
                dx_gateway_name=cci_gateway_name(cfg.system, cfg.site, peer.site),
                gcp_project=peer.project,
                gcp_region=peer.region,
                gcp_name=cci_name(peer.network_name, cfg.site),
                gcp_router=f"{peer.network_name}-router",
                gcp_asn=peer.asn,
                link=link,
                provisioned=self._cci_provisioned,
                tags=tags,
            ),
            opts=self._child,
        )

    def _vpn_to_azure(
        self, link: LinkConfig, peer: PeerConfig, network: SiteNetwork, tags: dict[str, str]
    ) -> None:
        """The BGP VPN to an Azure DR site's gateway, found by its deterministic name in the DR
        site's resource group: no state of the DR stack is read."""
        # Imported here: only a site joined to Azure loads the Azure SDK.
        from components.aws.azure_vpn import AzureVpn, AzureVpnArgs, peer_vpn_gateway

        if peer.cloud != "azure":
            raise ValueError(
                f"{self._name}: the vpn link to {peer.site} joins an Azure DR site; "
                f"{peer.site} is on {peer.cloud}; regenerate the stack with `gpudr generate`"
            )
        azure = [x for x in self._cfg.links if x.kind == "vpn"]
        if len(azure) > 1:
            # Each link's tunnels take the same inside /30s (components/azure/vpn.py), which
            # must be unique on one transit gateway.
            raise ValueError(
                f"{self._name}: VPN links to {len(azure)} Azure DR sites; one transit gateway "
                "carries the VPN to one Azure DR site"
            )
        AzureVpn(
            f"{self._name}-to-{peer.site}",
            AzureVpnArgs(
                aws_region=self._cfg.region,
                transit_gateway_id=network.transit_gateway_id,
                aws_asn=self._cfg.transit_gateway_asn,
                peer=peer,
                gateway=peer_vpn_gateway(peer, parent=self),
                link=link,
                tags=tags,
            ),
            opts=self._child,
        )

    def _onprem_pulls(
        self,
        args: AwsSiteArgs,
        inbound: list[BucketConfig],
        buckets: dict[str, DataBucket],
        key: DataKey,
        account_id: pulumi.Input[str],
    ) -> None:
        """DataSync pulls from on premises through the agents the operator activated. Until
        each has its ARN in `gpudr:datasync_agent_arns`, nothing is declared (a location
        needs its agents) and the stack says what to run."""
        cfg = args.config
        source = cfg.onprem
        assert source is not None
        creds = args.credentials
        configured = creds.datasync_agent_arns
        arns = agent_arns(source, configured)
        if arns is None:
            stack = pulumi.get_stack()
            pulumi.log.warn(missing_agents_message(source, configured, stack), resource=self)
            return
        if source.storage_kind in OBJECT_STORAGE_KINDS and not _onprem_keyed(creds):
            pulumi.log.warn(missing_key_message(source, pulumi.get_stack()), resource=self)
            return
        # Every task logs, in either mode: a failed run leaves its errors in the site's group.
        logs = DataSyncLogs(
            f"{self._name}-datasync-logs",
            DataSyncLogsArgs(
                region=cfg.region,
                key_arn=key.key_arn,
                tags=site_tags(cfg, "transfer-logs"),
                basic_mode=source.task_mode == "BASIC",
            ),
            opts=self._child,
        )
        for b in inbound:
            OnPremPull(
                f"{self._name}-{b.data_class}-onprem",
                OnPremPullArgs(
                    region=cfg.region,
                    account_id=account_id,
                    role_name=datasync_role_name(cfg.system, cfg.site, b.data_class),
                    sink_bucket_arn=buckets[b.data_class].bucket_arn,
                    key_arn=key.key_arn,
                    transfers=b.inbound,
                    source=source,
                    agent_arns=arns,
                    log_group_arn=logs.log_group_arn,
                    task_name=datasync_task_prefix(cfg.system, cfg.site, b.data_class),
                    tags=site_tags(cfg, "transfer", data_class=b.data_class),
                    access_key=creds.onprem_s3_access_key,
                    secret_key=creds.onprem_s3_secret_key,
                    hold_schedules=args.failover,
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[buckets[b.data_class]]),
            )

    def _sts_readers(self, key: DataKey) -> None:
        """The roles Storage Transfer Service at each GCP DR site assumes to read this site."""
        if not self._cfg.sts_readers:
            return
        from components.aws.cross_cloud import StsReadRole, StsReadRoleArgs

        for reader in self._cfg.sts_readers:
            StsReadRole(
                f"{self._name}-{reader.role_name.rsplit('-', 2)[-2]}-reader",
                StsReadRoleArgs(
                    reader=reader,
                    key_arn=key.key_arn,
                    tags=site_tags(self._cfg, "transfer-reader"),
                ),
                opts=self._child,
            )

    def _azcopy_readers(self, key: DataKey) -> dict[str, pulumi.Output[dict[str, str]]]:
        """For each Azure DR site copying with AzCopy: the identity its jobs run as and the
        role it may assume here (components/aws/azcopy_reader.py); the identity's ids leave as
        `transfer_credentials`, keyed by the DR stack's config keys."""
        cfg = self._cfg
        credentials: dict[str, pulumi.Output[dict[str, str]]] = {}
        if not cfg.azcopy_readers:
            return credentials
        # Imported here: only a primary protected by an Azure site loads the Azure SDK.
        from pulumi_azure_native import authorization

        from components.aws.azcopy_reader import AzcopyReadRole, AzcopyReadRoleArgs, entra_provider

        tenant = authorization.get_client_config_output(
            opts=pulumi.InvokeOutputOptions(parent=self)
        ).tenant_id
        tags = site_tags(cfg, "transfer-reader")
        provider = entra_provider(f"{self._name}-entra", tenant, tags, self)
        for reader in cfg.azcopy_readers:
            role = AzcopyReadRole(
                f"{self._name}-{reader.dr_site}-azcopy-reader",
                AzcopyReadRoleArgs(
                    reader=reader,
                    provider_arn=provider.arn,
                    tenant_id=tenant,
                    key_arn=key.key_arn,
                    tags=site_tags(cfg, "transfer-reader", dr_site=reader.dr_site),
                ),
                opts=self._child,
            )
            credentials[reader.dr_site] = pulumi.Output.all(
                **{
                    AZCOPY_IDENTITY_ID: role.identity_id,
                    AZCOPY_CLIENT_ID: role.client_id,
                    AZCOPY_PRINCIPAL_ID: role.principal_id,
                    AZCOPY_TENANT_ID: role.tenant_id,
                }
            )
        return credentials

    def _pulls(
        self,
        *,
        args: AwsSiteArgs,
        inbound: list[BucketConfig],
        buckets: dict[str, DataBucket],
        key: DataKey,
        account_id: pulumi.Input[str],
    ) -> None:
        """DataSync pulls from Cloud Storage into the replica buckets, signed in with the HMAC
        key copied from the primary's outputs into this stack's config. Without it nothing is
        declared: a task cannot exist without its source location, and that needs the key."""
        cfg = args.config
        creds = args.credentials
        if creds.gcs_hmac_access_id is None or creds.gcs_hmac_secret is None:
            primaries = sorted({t.source_site for b in inbound for t in b.inbound})
            pulumi.log.warn(_missing_credentials(cfg, primaries), resource=self)
            return
        name = self._name
        logs = DataSyncLogs(
            f"{name}-datasync-logs",
            DataSyncLogsArgs(
                region=cfg.region, key_arn=key.key_arn, tags=site_tags(cfg, "transfer-logs")
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        for b in inbound:
            DataSyncPull(
                f"{name}-{b.data_class}-datasync",
                DataSyncPullArgs(
                    region=cfg.region,
                    account_id=account_id,
                    role_name=datasync_role_name(cfg.system, cfg.site, b.data_class),
                    sink_bucket_arn=buckets[b.data_class].bucket_arn,
                    key_arn=key.key_arn,
                    transfers=b.inbound,
                    hmac_access_id=creds.gcs_hmac_access_id,
                    hmac_secret=creds.gcs_hmac_secret,
                    log_group_arn=logs.log_group_arn,
                    task_name=datasync_task_prefix(cfg.system, cfg.site, b.data_class),
                    tags=site_tags(cfg, "transfer", data_class=b.data_class),
                ),
                # The bucket's versioning and encryption exist before the first run writes.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[buckets[b.data_class]]),
            )


def _key_log_groups(args: AwsSiteArgs, inbound: list[BucketConfig]) -> tuple[str, ...]:
    """The log groups of this stack that CloudWatch Logs encrypts with the site's key: the
    DataSync log group (`_pulls`) and the control-plane log group of every cluster of the
    site, standing or declared only on failover (so that the key's policy does not change
    during a failover)."""
    cfg = args.config
    groups = [control_plane_log_group(c.eks_name) for c in cfg.clusters]
    if _pulls_declared(args, inbound):
        groups.insert(0, DATASYNC_LOG_GROUP)
    return tuple(groups)


def _drill_log_groups(cfg: SiteConfig) -> tuple[str, ...]:
    """A DR site's drills rebuild its clusters under drill names and encrypt their
    control-plane log groups with this key, which they find by alias and cannot change: the
    key admits the groups of any drill of this site. Drill names carry the site, not the
    system: a same-named site of another system in this account and region would match."""
    if cfg.role != "dr" or not cfg.clusters:
        return ()
    return (control_plane_log_group(drill_cluster_pattern(cfg)),)


def _pulls_declared(args: AwsSiteArgs, inbound: list[BucketConfig]) -> bool:
    """Whether `AwsSite._pulls` declares DataSync pulls and their log group: some bucket
    pulls, and the HMAC key they sign in with is in the stack's config (from on premises,
    `_onprem_pulls`: every agent's ARN is, and an object store's read-only key)."""
    creds = args.credentials
    source = args.config.onprem
    if source is not None:
        ready = agent_arns(source, creds.datasync_agent_arns) is not None
        keyed = source.storage_kind not in OBJECT_STORAGE_KINDS or _onprem_keyed(creds)
        return bool(inbound) and ready and keyed
    return bool(inbound) and (
        creds.gcs_hmac_access_id is not None and creds.gcs_hmac_secret is not None
    )


def _onprem_keyed(creds: TransferCredentials) -> bool:
    """Whether an S3-compatible store's read-only key is in the stack's config."""
    return creds.onprem_s3_access_key is not None and creds.onprem_s3_secret_key is not None


def _missing_credentials(cfg: SiteConfig, primaries: list[str]) -> str:
    """The commands that copy the HMAC key from the primary's stack outputs into this stack's
    config (the secret through stdin, so it never sits in a shell history), then deploy."""
    stack = pulumi.get_stack()
    lines = [
        f"DataSync pulls into {cfg.site} are not declared: gpudr:gcs_hmac_access_id and "
        "gpudr:gcs_hmac_secret (secret) are not set. The primary's stack creates the key; "
        "once it is deployed, copy it and run this stack again:"
    ]
    for primary in primaries:
        source = stack_name(cfg.system, primary)
        for key, secret in DATASYNC_CREDENTIALS:
            lines.append(f"  {copy_credential_command(source, cfg.site, key, secret, stack)}")
    lines.append(f"  pulumi up -s {stack}")
    return "\n".join(lines)
