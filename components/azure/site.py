"""One gpudr site on Azure: resource group, Key Vault key, log workspace, network, data accounts,
object replication and GPU clusters.

Every resource that has a location is placed with an explicit `location=cfg.region`: a DR stack
registers nothing in its primary's region, so it previews and updates while that region is
down. The exceptions are by design and live in the primary's stack: object replication
policies are written on the DR account too (see replication.py), and a VPN link to a GCP DR
site declares the GCP side of its tunnels too (see cross_cloud.py), so the DR stack never needs
the primary's state.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, resources

from components.azure.bucket import AzureDataBucket, AzureDataBucketArgs
from components.azure.gpu_cluster import AzureGpuCluster, AzureGpuClusterArgs
from components.azure.key_vault import AzureDataKey, AzureDataKeyArgs
from components.azure.logs import SiteLogs, SiteLogsArgs
from components.azure.network import AzureSiteNetwork, AzureSiteNetworkArgs, VnetPeer
from components.azure.onprem import (
    ExpressRouteEnd,
    ExpressRouteEndArgs,
    ReplicaTarget,
    StorageMoverPull,
    StorageMoverPullArgs,
)
from components.azure.private_blob import PrivateBlobPath, PrivateBlobPathArgs
from components.azure.replication import (
    AzureSiteReplication,
    AzureSiteReplicationArgs,
    ReplicationSource,
)
from components.azure.writer import DualWriterArgs, dual_writer
from components.config import TransferCredentials
from gpudr.contract.grants import needs_write_grant
from gpudr.contract.naming import stack_name, storage_mover_name, writer_name
from gpudr.contract.site import LinkConfig, SiteConfig
from gpudr.contract.stack import (
    AZCOPY_CREDENTIALS,
    AZCOPY_IMAGE_KEY,
    AZCOPY_TENANT_ID,
    AZURE_STS_CLIENT_ID,
    AZURE_TENANT_ID,
    copy_credential_command,
    key,
)
from gpudr.contract.tags import DrRole, bucket_tags, pool_tags, site_tags

LINK_KINDS = ("vnet-peering", "vpn")


@dataclass(frozen=True)
class AzureSiteArgs:
    config: SiteConfig
    failover: bool
    # The weights accounts' immutability policy. Azure creates an account-level policy only
    # "Unlocked" (or "Disabled"); only an unlocked policy can be locked, and a locked one never
    # unlocks. A real first deployment of a new weights account therefore runs with "Unlocked"
    # and locks on the next update; the offline run shows the steady state.
    immutability_state: str = "Unlocked"
    # A DR site protecting an on-premises site: the registered Storage Mover agents and whether
    # the ExpressRoute circuit is provisioned (operator config, components/config.py).
    credentials: TransferCredentials | None = None


def _require(cfg: SiteConfig) -> tuple[str, str]:
    cfg.require_logs()  # refused before any resource is declared: never deployed unlogged
    missing = [
        field
        for field, value in (("resource_group", cfg.resource_group), ("key_vault", cfg.key_vault))
        if not value
    ]
    if not cfg.network_name:
        missing.append("network_name")
    if missing:
        raise ValueError(
            f"site {cfg.site}: an Azure site needs {', '.join(missing)} in gpudr:site; "
            "regenerate the stack with `gpudr generate`"
        )
    return cfg.resource_group or "", cfg.key_vault or ""


class AzureSite(pulumi.ComponentResource):
    buckets: pulumi.Output[dict[str, str]]
    clusters: pulumi.Output[dict[str, str]]
    key_id: pulumi.Output[str]
    dual_write_endpoint: pulumi.Output[str | None]
    # {dr site: {config key: value}}: what each GCP DR site's transfer jobs sign in with, for
    # its stack's own config (`pulumi config set gpudr:<key> ... -s <dr stack>`).
    transfer_credentials: pulumi.Output[dict[str, dict[str, str]]]
    # A DR site protecting an on-premises site: the circuit's service key for the provider,
    # the storage mover the agents register with, and the job definitions declared. Secret as
    # a whole, the service key being one (`pulumi stack output onprem --show-secrets`).
    onprem: pulumi.Output[dict[str, object]] | None = None

    def __init__(
        self, name: str, args: AzureSiteArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:site:AzureSite", name, None, opts)
        cfg = args.config
        self._name, self._cfg = name, cfg
        self._child = pulumi.ResourceOptions(parent=self)
        resource_group, vault_name = _require(cfg)
        client = authorization.get_client_config_output(
            opts=pulumi.InvokeOutputOptions(parent=self)
        )
        self._subscription_id = client.subscription_id
        self._tenant_id = client.tenant_id
        peers = _peers(cfg)
        vpn_links = _vpn_links(cfg)

        group = self._group_and_logs(resource_group)
        key = AzureDataKey(
            f"{name}-data",
            AzureDataKeyArgs(
                resource_group_name=group.name,
                location=cfg.region,
                vault_name=vault_name,
                identity_name=f"{vault_name}-storage",
                tenant_id=client.tenant_id,
                subscription_id=self._subscription_id,
                tags=site_tags(cfg, "data-key"),
            ),
            opts=self._child,
        )
        network = AzureSiteNetwork(
            f"{name}-net",
            AzureSiteNetworkArgs(
                resource_group_name=group.name,
                location=cfg.region,
                network_name=cfg.network_name,
                cidr=cfg.cidr,
                subscription_id=self._subscription_id,
                peers=peers,
                tags=site_tags(cfg, "network"),
                link_peers=_link_peers(cfg),
            ),
            opts=self._child,
        )
        buckets = self._buckets(key, args.immutability_state)
        self._replication(buckets)
        self._writers(buckets)
        clusters = self._clusters(network, client.tenant_id, args.failover)
        for link in vpn_links:
            self._vpn(link, network)
        if cfg.onprem is not None:
            self._onprem(buckets, network, args.credentials or TransferCredentials(), args.failover)
        else:
            self._azcopy(buckets, args.credentials or TransferCredentials(), args.failover)
        credentials = self._sts_readers(buckets)

        paths = {k: v.path for k, v in buckets.items()}
        # Output.all() of nothing is a list; a site with nothing to export exports {}.
        self.buckets = pulumi.Output.all(**paths) if paths else pulumi.Output.from_input({})
        self.clusters = pulumi.Output.all(**clusters) if clusters else pulumi.Output.from_input({})
        # The versionless key identifier: it names the current version after every rotation.
        self.key_id = key.key_uri
        # Dual writes reach Azure Storage over its regional endpoint with Entra ID auth; there
        # is no site-side endpoint resource to export (AWS exports its S3 interface endpoint).
        self.dual_write_endpoint = pulumi.Output.from_input(None)
        self.transfer_credentials = (
            pulumi.Output.all(**credentials) if credentials else pulumi.Output.from_input({})
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

    def _group_and_logs(self, resource_group: str) -> resources.ResourceGroup:
        """The site's resource group and, in it, its log sink."""
        cfg = self._cfg
        # Holds the data accounts and the vault: protected, and kept if removed from the program.
        group = resources.ResourceGroup(
            f"{self._name}-rg",
            resource_group_name=resource_group,
            location=cfg.region,
            tags=site_tags(cfg, "resource-group"),
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        self._group = group.name
        # Blob access logs, Container Insights and control-plane logs all go to this workspace.
        logs = SiteLogs(
            f"{self._name}-logs",
            SiteLogsArgs(config=cfg, resource_group_name=group.name),
            opts=self._child,
        )
        self._log_workspace_id = logs.workspace_id
        return group

    def _buckets(self, key: AzureDataKey, immutability_state: str) -> dict[str, AzureDataBucket]:
        """A storage account and container per data class, encrypted with the site's key
        (bucket.py says why its firewall admits every network for now)."""
        cfg, out = self._cfg, {}
        for b in cfg.buckets:
            out[b.data_class] = AzureDataBucket(
                f"{self._name}-{b.data_class}",
                AzureDataBucketArgs(
                    config=b,
                    resource_group_name=self._group,
                    location=cfg.region,
                    identity_id=key.identity_id,
                    key_name=key.key_name,
                    vault_uri=key.vault_uri,
                    key_access=key.storage_access,
                    tags=bucket_tags(cfg, b),
                    log_workspace_id=self._log_workspace_id,
                    immutability_state=immutability_state,
                ),
                opts=self._child,
            )
        return out

    def _replication(self, buckets: dict[str, AzureDataBucket]) -> None:
        """The primary's object replication policies. A DR site's accounts are destinations:
        their policies are written by the primary. Dual-written classes need no policy: the
        writer's own identity writes both copies."""
        cfg = self._cfg
        sources = [
            ReplicationSource(
                b,
                buckets[b.data_class].account_name,
                buckets[b.data_class].account_id,
                [buckets[b.data_class].blob_service],
            )
            for b in cfg.buckets
            if cfg.role == "primary" and b.role == "source" and b.replication
        ]
        if sources:
            AzureSiteReplication(
                f"{self._name}-replication",
                AzureSiteReplicationArgs(
                    resource_group_name=self._group,
                    subscription_id=self._subscription_id,
                    sources=sources,
                ),
                opts=self._child,
            )

    def _writers(self, buckets: dict[str, AzureDataBucket]) -> None:
        """Each dual-written class's writer at this site, with its grant on this copy."""
        cfg = self._cfg
        for b in cfg.buckets:
            if needs_write_grant(b.mechanism):
                dual_writer(
                    self,
                    f"{self._name}-{b.data_class}-writer",
                    DualWriterArgs(
                        config=b,
                        identity_name=writer_name(cfg.system, cfg.site, b.data_class),
                        resource_group_name=self._group,
                        location=cfg.region,
                        subscription_id=self._subscription_id,
                        account_id=buckets[b.data_class].account_id,
                        tags=site_tags(cfg, DrRole.WRITER, data_class=b.data_class),
                    ),
                )

    def _clusters(
        self,
        network: AzureSiteNetwork,
        tenant_id: pulumi.Input[str],
        failover: bool,
    ) -> dict[str, pulumi.Output[str]]:
        """The AKS GPU clusters; a backup/restore cluster keeps nothing standing, so it is
        declared only on failover."""
        cfg, out = self._cfg, {}
        for c in cfg.clusters:
            if not (c.standby_control_plane or failover):
                continue
            cluster = AzureGpuCluster(
                f"{self._name}-{c.name}",
                AzureGpuClusterArgs(
                    config=c,
                    resource_group_name=self._group,
                    location=cfg.region,
                    subscription_id=self._subscription_id,
                    tenant_id=tenant_id,
                    nodes_subnet_id=network.nodes_subnet_id,
                    zones=cfg.azs,
                    gpu_zone=cfg.azs[0],
                    api_public_cidrs=cfg.api_public_cidrs,
                    networks=[cfg.cidr, *(p.cidr for p in cfg.peers)],
                    failover=failover,
                    tags=site_tags(cfg, "gpu-cluster", cluster=c.name),
                    pool_tags={p.name: pool_tags(cfg, p.name, p.pattern, p.rto_s) for p in c.pools},
                    log_workspace_id=self._log_workspace_id,
                ),
                opts=self._child,
            )
            out[c.name] = cluster.cluster_name
        return out

    def _onprem(
        self,
        buckets: dict[str, AzureDataBucket],
        network: AzureSiteNetwork,
        creds: TransferCredentials,
        failover: bool,
    ) -> None:
        """The DR site's end of an on-premises site's replication (components/azure/onprem.py):
        Storage Mover into the replica containers, and the ExpressRoute link it comes over."""
        cfg, name = self._cfg, self._name
        source = cfg.onprem
        assert source is not None
        wan = [x for x in cfg.links if x.kind == "wan"]
        if len(wan) != 1:
            raise ValueError(f"{name}: an on-premises source needs one wan link; regenerate")
        mover = storage_mover_name(cfg.system, cfg.site)
        pull = StorageMoverPull(
            f"{name}-onprem",
            StorageMoverPullArgs(
                resource_group_name=self._group,
                location=cfg.region,
                subscription_id=self._subscription_id,
                mover_name=mover,
                source=source,
                targets=[
                    ReplicaTarget(
                        b.data_class,
                        buckets[b.data_class].account_id,
                        b.name,
                        mirror_deletes=any(t.mirror_deletes for t in b.inbound),
                        every_s=min(t.schedule_s for t in b.inbound),
                    )
                    for b in cfg.buckets
                    if b.inbound
                ],
                agents=creds.storage_mover_agents,
                tags=site_tags(cfg, "transfer"),
                hold_schedules=failover,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(buckets.values())),
        )
        end = ExpressRouteEnd(
            f"{name}-er",
            ExpressRouteEndArgs(
                resource_group_name=self._group,
                location=cfg.region,
                network_name=cfg.network_name,
                network=network,
                cidr=cfg.cidr,
                source=source,
                site=cfg.site,
                provider=source.provider or "",
                link=wan[0],
                peer_prefixes=(source.peer_prefixes[0], source.peer_prefixes[1]),
                circuit_provisioned=creds.expressroute_provisioned,
                tags=site_tags(cfg, "dr-link", peer=source.site, link="expressroute"),
            ),
            opts=self._child,
        )
        path = self._upload_path(buckets, network, end)
        self.onprem = pulumi.Output.all(
            service_key=end.service_key,
            storage_mover=mover,
            jobs=pull.job_names,
            dns_forwarder=path.inbound_address,
            private_endpoints=path.endpoints,
        )

    def _azcopy(
        self,
        buckets: dict[str, AzureDataBucket],
        creds: TransferCredentials,
        failover: bool,
    ) -> None:
        """AzCopy jobs copying an AWS primary's buckets into the replica containers
        (components/azure/azcopy.py). Without the identity the primary's stack created, or
        without the image, nothing is declared: a job cannot run without either."""
        cfg = self._cfg
        inbound = [b for b in cfg.buckets if any(t.service == "azcopy" for t in b.inbound)]
        if not inbound:
            return
        missing = [key(n) for n, _ in AZCOPY_CREDENTIALS if not creds.azcopy_identity.get(n)] + (
            [AZCOPY_IMAGE_KEY] if creds.azcopy_image is None else []
        )
        if missing:
            primaries = sorted({t.source_site for b in inbound for t in b.inbound})
            pulumi.log.warn(_missing_azcopy(cfg, primaries, missing), resource=self)
            return
        from components.azure.azcopy import AzcopyPull, AzcopyPullArgs, AzcopyTarget

        assert creds.azcopy_image is not None  # in `missing` otherwise
        # The identity must be of this subscription's tenant: the primary's stack created it
        # with its own Azure provider, and a job cannot run as another tenant's identity.
        copied = creds.azcopy_identity[AZCOPY_TENANT_ID]
        self._tenant_id.apply(lambda tenant: _same_tenant(cfg, tenant, copied))
        AzcopyPull(
            f"{self._name}-azcopy",
            AzcopyPullArgs(
                system=cfg.system,
                site=cfg.site,
                resource_group_name=self._group,
                location=cfg.region,
                subscription_id=self._subscription_id,
                log_workspace_id=self._log_workspace_id,
                identity=creds.azcopy_identity,
                image=creds.azcopy_image,
                targets=[
                    AzcopyTarget(
                        data_class=b.data_class,
                        account_name=buckets[b.data_class].account_name,
                        account_id=buckets[b.data_class].account_id,
                        container=b.name,
                        transfer=t,
                        tags=site_tags(cfg, "transfer", data_class=b.data_class),
                    )
                    for b in inbound
                    for t in b.inbound
                ],
                tags=site_tags(cfg, "transfer"),
                hold_schedules=failover,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(buckets.values())),
        )

    def _upload_path(
        self,
        buckets: dict[str, AzureDataBucket],
        network: AzureSiteNetwork,
        end: ExpressRouteEnd,
    ) -> PrivateBlobPath:
        """The uploads' private path: without it they would leave by the internet, not the
        circuit the plan sized (components/azure/private_blob.py)."""
        cfg = self._cfg
        source = cfg.onprem
        assert source is not None
        return PrivateBlobPath(
            f"{self._name}-uploads",
            PrivateBlobPathArgs(
                resource_group_name=self._group,
                location=cfg.region,
                network_name=cfg.network_name,
                network_id=network.network_id,
                network=network,
                cidr=cfg.cidr,
                onprem_cidr=source.cidr,
                accounts={
                    b.data_class: buckets[b.data_class].account_id for b in cfg.buckets if b.inbound
                },
                tags=site_tags(cfg, "dr-link", peer=source.site, link="private-endpoints"),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[end]),
        )

    def _vpn(self, link: LinkConfig, network: AzureSiteNetwork) -> None:
        """This site's VPN gateway for a vpn link (`_vpn_links` admits only these two): on a
        primary, the gateway and the tunnels to a GCP DR site, both halves owned by this stack;
        on a DR site, the gateway an AWS primary's VPN joins (the AWS stack declares the rest)."""
        # Imported here: only a site with a VPN loads them (GcpVpn loads the GCP SDK).
        from components.azure.cross_cloud import GcpVpn
        from components.azure.vpn import AwsVpnAnchor, AzureVpnArgs

        cfg = self._cfg
        peer = next(p for p in cfg.peers if p.site == link.peer_site)
        component, joins = (AwsVpnAnchor, "from") if cfg.role == "dr" else (GcpVpn, "to")
        component(
            f"{self._name}-{joins}-{peer.site}",
            AzureVpnArgs(
                resource_group_name=self._group,
                location=cfg.region,
                subscription_id=self._subscription_id,
                cidr=cfg.cidr,
                network_name=cfg.network_name,
                network=network,
                asn=cfg.transit_gateway_asn,
                peer=peer,
                link=link,
                tags=site_tags(cfg, "dr-link", peer=peer.site, link=link.kind),
            ),
            opts=self._child,
        )

    def _sts_readers(
        self, buckets: dict[str, AzureDataBucket]
    ) -> dict[str, pulumi.Output[dict[str, str]]]:
        """For each GCP DR site, the identity its transfer jobs sign in as by federation; its
        client and tenant ids leave as `transfer_credentials`, keyed by the DR stack's config
        keys (components/config.py)."""
        cfg = self._cfg
        credentials: dict[str, pulumi.Output[dict[str, str]]] = {}
        if not cfg.azure_sts_readers:
            return credentials
        from components.azure.cross_cloud import StsFederatedReader, StsFederatedReaderArgs

        account_ids = {
            b.storage_account: buckets[b.data_class].account_id
            for b in cfg.buckets
            if b.storage_account
        }
        for reader in cfg.azure_sts_readers:
            federated = StsFederatedReader(
                f"{self._name}-{reader.dr_site}-reader",
                StsFederatedReaderArgs(
                    reader=reader,
                    resource_group_name=self._group,
                    location=cfg.region,
                    subscription_id=self._subscription_id,
                    account_ids=account_ids,
                    tags=site_tags(cfg, "transfer-reader", dr_site=reader.dr_site),
                ),
                opts=self._child,
            )
            credentials[reader.dr_site] = pulumi.Output.all(
                **{AZURE_STS_CLIENT_ID: federated.client_id, AZURE_TENANT_ID: federated.tenant_id}
            )
        return credentials


def _same_tenant(cfg: SiteConfig, tenant: str, copied: str) -> str:
    if tenant and copied.lower() != tenant.lower():
        raise ValueError(
            f"site {cfg.site}: gpudr:{AZCOPY_TENANT_ID} is {copied}, but this stack's Azure "
            f"tenant is {tenant}; deploy the primary's stack against this site's tenant and copy "
            "its transfer_credentials again"
        )
    return tenant


def _missing_azcopy(cfg: SiteConfig, primaries: list[str], missing: list[str]) -> str:
    """The commands that give this stack the identity the primary's stack created and the
    jobs' image, then deploy (first deployment: this stack, the primary's, this one again)."""
    stack = pulumi.get_stack()
    lines = [
        f"AzCopy jobs into {cfg.site} are not declared: {', '.join(missing)} not set. The "
        "primary's stack creates the identity; once it is deployed, copy its ids, push the "
        "image (docker/azcopy/Dockerfile) and run this stack again:"
    ]
    for primary in primaries:
        source = stack_name(cfg.system, primary)
        for name, secret in AZCOPY_CREDENTIALS:
            lines.append(f"  {copy_credential_command(source, cfg.site, name, secret, stack)}")
    lines.append(
        f"  pulumi config set {AZCOPY_IMAGE_KEY} <registry>/<repository>@sha256:<digest> -s {stack}"
    )
    lines.append(f"  pulumi up -s {stack}")
    return "\n".join(lines)


def _peers(cfg: SiteConfig) -> list[VnetPeer]:
    """This site's half of each VNet peering (VPN links are built by the site itself)."""
    for link in cfg.links:
        # An on-premises site's WAN (ExpressRoute) is built by the site itself (_onprem).
        if link.kind == "wan" and cfg.onprem is not None:
            continue
        if link.kind not in LINK_KINDS:
            raise ValueError(
                f'site {cfg.site}: link kind "{link.kind}" to {link.peer_site} is not supported '
                f"on an Azure site; Azure sites link by {' or '.join(LINK_KINDS)}"
            )
    return [_vnet_peer(cfg, x.peer_site) for x in cfg.links if x.kind == "vnet-peering"]


def _link_peers(cfg: SiteConfig) -> list[tuple[str, str]]:
    """(site, CIDR) of each peer this site has a DR link to, whatever the link's kind."""
    linked = {x.peer_site for x in cfg.links}
    return [(p.site, p.cidr) for p in cfg.peers if p.site in linked]


def _vpn_links(cfg: SiteConfig) -> list[LinkConfig]:
    """VPN links: from an Azure primary to a GCP DR site, both halves owned by this stack like
    the AWS primary's HA VPN; into an Azure DR site from an AWS primary, only the gateway (the
    anchor the AWS primary's stack joins)."""
    links = [x for x in cfg.links if x.kind == "vpn"]
    supported = {"primary": "gcp", "dr": "aws"}
    for link in links:
        peer = next((p for p in cfg.peers if p.site == link.peer_site), None)
        if peer is None or supported.get(cfg.role) != peer.cloud:
            raise ValueError(
                f"site {cfg.site}: the vpn link to {link.peer_site} is supported only from an "
                "Azure primary to a GCP DR site (its HA VPN gateway) or into an Azure DR site "
                "from an AWS primary (its transit gateway); regenerate the stack with "
                "`gpudr generate`"
            )
    return links


def _vnet_peer(cfg: SiteConfig, peer_site: str) -> VnetPeer:
    peer = next((p for p in cfg.peers if p.site == peer_site), None)
    if peer is None or not peer.resource_group or not peer.network_name:
        raise ValueError(
            f"site {cfg.site}: the vnet-peering link to {peer_site} needs the peer's "
            "resource_group and network_name in gpudr:site peers; regenerate the stack"
        )
    return VnetPeer(peer.site, peer.resource_group, peer.network_name)
