"""From the design to each site's stack configuration (`gpudr.contract.site.SiteConfig`): what
`gpudr generate` writes into `stacks/Pulumi.<stack>.yaml` and the Pulumi program reads back.

Every name comes from `gpudr.contract.naming`, every config key from `gpudr.contract.stack`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpudr.contract import naming
from gpudr.contract.site import (
    AzcopyReader,
    AzureStsReader,
    BucketConfig,
    ClusterConfig,
    DataSyncReader,
    InboundTransfer,
    Lifecycle,
    LinkConfig,
    LogsConfig,
    OnPremSource,
    PeerConfig,
    PoolConfig,
    ReplicationTarget,
    SiteConfig,
    StsReader,
    SystemPool,
    mirrors_deletes,
)
from gpudr.contract.stack import (
    AZCOPY_CREDENTIALS,
    AZURE_STS_CREDENTIALS,
    DATASYNC_CREDENTIALS,
    DEFAULT_MODE,
    MODE_KEY,
    SITE_KEY,
    copy_credential_command,
    key,
)
from gpudr.core import reference, sizing
from gpudr.core.design import (
    DataFlow,
    Design,
    Pool,
    datasync_mode,
    expressroute_gateway_sku,
    pull_rate_cap,
    vpn_connections,
)
from gpudr.core.enums import (
    DUAL_REGION,
    PULLED,
    PUSHED,
    BucketRole,
    Cloud,
    DataClass,
    LinkKind,
    Mechanism,
    OnPremLinkKind,
    Pattern,
    PoolKind,
    SiteRole,
    StorageKind,
    WeightsLock,
)
from gpudr.core.spec import (
    Cluster,
    LinkSpec,
    OnPremSite,
    Plan,
    Service,
    Site,
    gcs_dual_region,
    parse_endpoint,
)

KUBERNETES_VERSION = "1.33"


def stack_name(plan: Plan, site: Site) -> str:
    return naming.stack_name(plan.name, site.name)


def bucket_name(plan: Plan, site: Site, data_class: str) -> str:
    return naming.bucket_name(plan.name, site.name, site.region, data_class)


def storage_account_name(plan: Plan, site: Site, data_class: str) -> str:
    return naming.storage_account_name(plan.name, site.name, site.region, data_class)


def resource_group_name(plan: Plan, site: Site) -> str | None:
    return naming.resource_group_name(plan.name, site.name) if site.cloud == Cloud.AZURE else None


def _lifecycle(plan: Plan, data_class: str, cloud: str) -> Lifecycle:
    if data_class == DataClass.CHECKPOINTS and plan.checkpoints:
        c = plan.checkpoints
        # Current checkpoints are never expired by age: a stalled job must not lose its last
        # good state. The training job deletes beyond N after validating checksums; the bucket
        # keeps the newest N noncurrent versions as the safety net.
        return Lifecycle(
            archive_after_days=max(1, math.ceil(c.archive_after_s / 86400)),
            archive_class=str(reference.defaults()["storage"]["archive_class"][cloud]),
            noncurrent_keep=c.keep,
            noncurrent_days=7,
            abort_multipart_days=2,
        )
    if data_class == DataClass.WEIGHTS:
        return Lifecycle(None, None, noncurrent_keep=10, noncurrent_days=30, abort_multipart_days=2)
    return Lifecycle(
        archive_after_days=None,
        archive_class=None,
        noncurrent_keep=3,
        noncurrent_days=30,
        abort_multipart_days=7,
    )


def _quota(plan: Plan, mechanism: str) -> float | None:
    """The rate quota bounding a quota-bound mechanism, as the plan states or defaults it."""
    key = sizing.QUOTA_KEYS.get(mechanism)
    return None if key is None else float(getattr(plan.quotas, key))


def build_site_configs(design: Design) -> dict[str, SiteConfig]:
    """One SiteConfig per site, keyed by site name."""
    plan = design.plan
    out: dict[str, SiteConfig] = {}
    for site in plan.sites.values():
        out[site.name] = _site_config(design, site)
    return out


def _container_or_bucket(plan: Plan, site: Site, data_class: str) -> str:
    # Azure: the container inside the class's own storage account carries the class name.
    return data_class if site.cloud == Cloud.AZURE else bucket_name(plan, site, data_class)


def _bucket_fields(
    plan: Plan, cls: DataClass, role: BucketRole, f: DataFlow | None, owner: Site
) -> dict[str, Any]:
    """What every data bucket's config says, on whichever side and cloud it is."""
    spec = plan.data_spec(cls)
    assert spec is not None
    weights_lock = (
        max(1, math.ceil(plan.weights.retention_s / 86400)) if plan.weights is not None else None
    )
    azure = owner.cloud == Cloud.AZURE
    gcp = owner.cloud == Cloud.GCP
    dual_write = f is not None and f.mechanism == Mechanism.DUAL_WRITE
    skus = reference.defaults()["storage"]["azure_sku"]
    c = plan.checkpoints
    return {
        "data_class": cls,
        "name": _container_or_bucket(plan, owner, cls),
        "role": role,
        "rpo_s": spec.rpo_s,
        "rto_s": spec.rto_s,
        "mechanism": f.mechanism if f else Mechanism.NONE,
        "object_lock_days": weights_lock if cls == DataClass.WEIGHTS else None,
        "lifecycle": _lifecycle(plan, cls, owner.cloud),
        "burst_bytes": f.flow.burst_bytes if f else 0.0,
        "steady_gbps": f.flow.steady_gbps if f else 0.0,
        "required_gbps": f.flow.required_gbps if f else 0.0,
        "location": owner.region.upper() if gcp else None,
        "kms_location": owner.region if gcp else None,
        "storage_account": storage_account_name(plan, owner, cls) if azure else None,
        "sku": skus["primary" if role == BucketRole.SOURCE else "replica"] if azure else None,
        # The burst's period: the checkpoint interval, or a dataset's refresh period.
        "interval_s": f.flow.burst_period_s
        if f
        else (c.interval_s if cls == DataClass.CHECKPOINTS and c else 0.0),
        "publish_window_s": plan.weights.publish_window_s
        if cls == DataClass.WEIGHTS and plan.weights and dual_write
        else None,
        "quota_gbps": _quota(plan, f.mechanism) if f else None,
        "object_lock_mode": plan.weights.lock
        if cls == DataClass.WEIGHTS and plan.weights
        else WeightsLock.COMPLIANCE,
    }


def _replication_target(plan: Plan, f: DataFlow) -> ReplicationTarget:
    """A push from the source bucket (S3 replication, Azure object replication) to one DR site."""
    dr, cls = plan.sites[f.dr], f.data_class
    return ReplicationTarget(
        site=dr.name,
        region=dr.region,
        account=dr.account,
        bucket=_container_or_bucket(plan, dr, cls),
        kms_alias=naming.kms_alias(plan.name, dr.name),
        mechanism=f.mechanism,
        storage_class=f.replica_class,
        rule_id=naming.replication_rule_id(cls, dr.name),
        latency_alarm_s=900 if f.mechanism == Mechanism.CRR_RTC else 3600,
        resource_group=resource_group_name(plan, dr),
        storage_account=storage_account_name(plan, dr, cls) if dr.cloud == Cloud.AZURE else None,
    )


def _source_buckets(design: Design, site: Site) -> list[BucketConfig]:
    """A primary's data buckets: each class's copy, with the pushes it owns and the DR copies
    its writers must also write (dual write). Scheduled pulls are the DR site's."""
    plan = design.plan
    out = []
    for cls in (DataClass.CHECKPOINTS, DataClass.WEIGHTS, DataClass.DATASETS):
        spec = plan.data_spec(cls)
        if spec is None or spec.site != site.name:
            continue
        flows = [f for f in design.flows if f.primary == site.name and f.data_class == cls]
        if flows and all(f.mechanism in DUAL_REGION for f in flows):
            continue  # one dual-region bucket, owned by the DR site's stack
        targets = [_replication_target(plan, f) for f in flows if f.mechanism in PUSHED]
        dual = [
            _container_or_bucket(plan, plan.sites[f.dr], cls)
            for f in flows
            if f.mechanism == Mechanism.DUAL_WRITE
        ]
        fields = _bucket_fields(plan, cls, BucketRole.SOURCE, flows[0] if flows else None, site)
        out.append(
            BucketConfig(**fields, replication=tuple(targets), dual_write_buckets=tuple(dual))
        )
    return out


def _inbound(plan: Plan, f: DataFlow, site: Site, primary: Site) -> tuple[InboundTransfer, ...]:
    """A scheduled pull the DR site runs into its replica (Storage Transfer, DataSync)."""
    if f.mechanism not in PULLED or f.schedule is None:
        return ()
    sts_from_s3 = f.mechanism == Mechanism.STS and primary.cloud == Cloud.AWS
    role = ""
    if sts_from_s3:
        role = naming.sts_reader_role_name(plan.name, site.name)
    elif f.mechanism == Mechanism.AZCOPY:
        role = naming.azcopy_reader_role_name(plan.name, site.name)
    transfer = InboundTransfer(
        service=f.mechanism,
        source_cloud=primary.cloud,
        source_site=primary.name,
        source_region=primary.region,
        source_bucket=_container_or_bucket(plan, primary, f.data_class),
        source_account=primary.account,
        source_project=primary.project,
        schedule_s=f.schedule.interval_s,
        # Only STS and AzCopy from S3 assume a role; other sources sign in otherwise.
        role_name=role,
        mirror_deletes=mirrors_deletes(f.data_class),
        source_storage_account=storage_account_name(plan, primary, f.data_class)
        if primary.cloud == Cloud.AZURE
        else None,
    )
    return (transfer,)


def _onprem_source(design: Design, site: Site) -> OnPremSource | None:
    """What a DR site's DataSync tasks read on premises, and the link they come over."""
    onprem = design.plan.onprem.get(site.protects or "")
    if onprem is None:
        return None
    endpoint = parse_endpoint(onprem.storage.kind, onprem.storage.endpoint)
    link = onprem.link
    limits = reference.defaults()["links"]["onprem"].get(link.kind, {})
    return OnPremSource(
        site=onprem.name,
        location=onprem.location,
        cidr=onprem.cidr,
        storage_kind=onprem.storage.kind,
        storage_host=endpoint.host,
        storage_port=endpoint.port,
        storage_path=endpoint.path,
        agents=tuple(a.name for a in onprem.agents),
        # DataSync's TaskMode; Storage Mover has none
        task_mode=datasync_mode(onprem.storage.kind).upper() if site.cloud == Cloud.AWS else "",
        link_kind=link.kind,
        port_gbps=link.port_gbps,
        ports=link.ports,
        link_gbps=link.capacity_gbps,
        vpn_connections=vpn_connections(link.ports) if link.kind == OnPremLinkKind.VPN else 0,
        link_location=link.location,
        bgp_asn=link.bgp_asn or 0,
        vlan=link.vlan,
        committed_gbps=onprem.wan_committed_gbps,
        router_address=link.address,
        cloud_router_asn=int(limits.get("cloud_router_asn", 0)),
        provider=link.provider,
        peer_prefixes=link.peering_subnets,
        customer=link.customer,
        noc_email=link.noc_email,
    )


def onprem_class_path(onprem: OnPremSite, data_class: str) -> str:
    """Where a class lives in the on-premises store: a directory of the export (file systems,
    HDFS) or a prefix of the bucket (object stores), named after the class."""
    endpoint = parse_endpoint(onprem.storage.kind, onprem.storage.endpoint)
    if onprem.storage.kind == StorageKind.S3_COMPATIBLE:
        return f"/{data_class}/"
    return f"{endpoint.path.rstrip('/')}/{data_class}"


def _onprem_inbound(plan: Plan, f: DataFlow, onprem: OnPremSite) -> tuple[InboundTransfer, ...]:
    if f.schedule is None:
        return ()
    return (
        InboundTransfer(
            service=f.mechanism,
            source_cloud="onprem",
            source_site=onprem.name,
            source_region=onprem.location,
            source_bucket=onprem_class_path(onprem, f.data_class),
            source_account=None,
            source_project=None,
            schedule_s=f.schedule.interval_s,
            role_name="",
            mirror_deletes=mirrors_deletes(f.data_class),
        ),
    )


def _onprem_replica_buckets(design: Design, site: Site, onprem: OnPremSite) -> list[BucketConfig]:
    plan = design.plan
    out = []
    for f in design.flows:
        if f.dr != site.name:
            continue
        fields = _bucket_fields(plan, f.data_class, BucketRole.REPLICA, f, site)
        # The rate the pull asserts is the WAN path's, which the pack judges the need against;
        # and, where a job runs on one agent, that agent's rate, which bounds each run.
        fields["quota_gbps"] = design.paths[f.path].capacity_gbps
        fields["agent_gbps"] = pull_rate_cap(design.plan, onprem, f.mechanism)
        out.append(BucketConfig(**fields, inbound=_onprem_inbound(plan, f, onprem)))
    return out


def _replica_buckets(design: Design, site: Site) -> list[BucketConfig]:
    """A DR site's copies: replicas (and the dual-region buckets it owns), with the pulls it
    runs into them and who may replicate into them."""
    plan = design.plan
    if site.protects in plan.onprem:
        return _onprem_replica_buckets(design, site, plan.onprem[site.protects or ""])
    primary = plan.sites[site.protects or ""]
    out = []
    for f in design.flows:
        if f.dr != site.name:
            continue
        fields = _bucket_fields(plan, f.data_class, BucketRole.REPLICA, f, site)
        if f.mechanism in DUAL_REGION:
            continent = gcs_dual_region(primary.region, site.region) or ""
            fields.update(
                role=BucketRole.DUAL_REGION,
                location=continent,
                data_locations=(primary.region.upper(), site.region.upper()),
                turbo=f.mechanism == Mechanism.GCS_TURBO,
                kms_location=continent.lower(),
            )
        dual = f.mechanism == Mechanism.DUAL_WRITE
        out.append(
            BucketConfig(
                **fields,
                dual_write_buckets=(_container_or_bucket(plan, primary, f.data_class),)
                if dual
                else (),
                source_account=primary.account,
                source_role=naming.replication_role_name(plan.name, primary.name),
                inbound=_inbound(plan, f, site, primary),
            )
        )
    return out


def _site_config(design: Design, site: Site) -> SiteConfig:
    plan = design.plan
    buckets = (
        _source_buckets(design, site)
        if site.role == SiteRole.PRIMARY
        else _replica_buckets(design, site)
    )
    clusters = _clusters(design, site)
    peers, links = _peers_and_links(design, site)
    return SiteConfig(
        system=plan.name,
        site=site.name,
        cloud=site.cloud,
        region=site.region,
        role=site.role,
        account=site.account,
        cidr=site.cidr,
        azs=site.azs,
        api_public_cidrs=site.api_public_cidrs,
        kms_alias=naming.kms_alias(plan.name, site.name),
        replication_role=naming.replication_role_name(plan.name, site.name),
        transit_gateway_name=naming.transit_gateway_name(plan.name, site.name),
        transit_gateway_asn=naming.transit_gateway_asn(list(plan.sites).index(site.name)),
        dual_write_endpoint=site.cloud == Cloud.AWS
        and any(
            b.role == BucketRole.REPLICA and b.mechanism == Mechanism.DUAL_WRITE for b in buckets
        ),
        buckets=tuple(buckets),
        clusters=clusters,
        peers=peers,
        links=links,
        network_name=naming.network_name(plan.name, site.name),
        project=site.project,
        resource_group=resource_group_name(plan, site),
        key_ring=naming.key_ring_name(plan.name, site.name) if site.cloud == Cloud.GCP else None,
        key_vault=naming.key_vault_name(plan.name, site.name, site.region)
        if site.cloud == Cloud.AZURE
        else None,
        sts_readers=_sts_readers(design, site),
        datasync_readers=_datasync_readers(design, site),
        azure_sts_readers=_azure_sts_readers(design, site),
        azcopy_readers=_azcopy_readers(design, site),
        logs=LogsConfig(
            sink=naming.log_sink_name(site.cloud, plan.name, site.name, site.region),
            retention_days=plan.logging.retention_days,
        ),
        onprem=_onprem_source(design, site),
    )


def _pulled_by_dr(design: Design, site: Site, mechanism: Mechanism) -> dict[str, list[str]]:
    """On a primary: for each DR site pulling from it with `mechanism`, the data classes it
    pulls, in the design's order (every cross-cloud reader grants its DR site these)."""
    out: dict[str, list[str]] = {}
    for f in design.flows:
        if f.primary == site.name and f.mechanism == mechanism:
            out.setdefault(f.dr, []).append(f.data_class)
    return out


def _sts_readers(design: Design, site: Site) -> tuple[StsReader, ...]:
    """On an AWS primary: the roles Storage Transfer Service jobs at GCP DR sites assume."""
    plan = design.plan
    if site.cloud != Cloud.AWS:
        return ()
    return tuple(
        StsReader(
            role_name=naming.sts_reader_role_name(plan.name, dr),
            gcp_project=plan.sites[dr].project or "",
            buckets=tuple(bucket_name(plan, site, c) for c in classes),
        )
        for dr, classes in _pulled_by_dr(design, site, Mechanism.STS).items()
    )


def _datasync_readers(design: Design, site: Site) -> tuple[DataSyncReader, ...]:
    """On a GCP primary: one HMAC-keyed reader per AWS DR site pulling with DataSync."""
    plan = design.plan
    return tuple(
        DataSyncReader(
            account_id=naming.datasync_reader_id(plan.name, dr),
            dr_site=dr,
            buckets=tuple(bucket_name(plan, site, c) for c in classes),
        )
        for dr, classes in _pulled_by_dr(design, site, Mechanism.DATASYNC).items()
    )


def _azure_sts_readers(design: Design, site: Site) -> tuple[AzureStsReader, ...]:
    """On an Azure primary: one federated reader identity per GCP DR site."""
    plan = design.plan
    if site.cloud != Cloud.AZURE:
        return ()
    return tuple(
        AzureStsReader(
            identity_name=naming.azure_sts_identity_name(plan.name, dr),
            dr_site=dr,
            gcp_project=plan.sites[dr].project or "",
            storage_accounts=tuple(storage_account_name(plan, site, c) for c in classes),
        )
        for dr, classes in _pulled_by_dr(design, site, Mechanism.STS).items()
    )


def _azcopy_readers(design: Design, site: Site) -> tuple[AzcopyReader, ...]:
    """On an AWS primary: one read role and identity per Azure DR site copying with AzCopy."""
    plan = design.plan
    return tuple(
        AzcopyReader(
            role_name=naming.azcopy_reader_role_name(plan.name, dr),
            dr_site=dr,
            dr_region=plan.sites[dr].region,
            identity_name=naming.azcopy_identity_name(plan.name, dr),
            resource_group=naming.azcopy_identity_group(plan.name, dr),
            buckets=tuple(bucket_name(plan, site, c) for c in classes),
        )
        for dr, classes in _pulled_by_dr(design, site, Mechanism.AZCOPY).items()
    )


def _accelerator(cloud: str, gpu: str) -> str | None:
    offer = reference.gpu_offer(cloud, gpu)
    return offer.accelerator if offer else None


def _pool_config(p: Pool, cloud: str, warm_fraction: float) -> PoolConfig:
    return PoolConfig(
        accelerator=_accelerator(cloud, p.gpu),
        name=p.name,
        kind=p.kind,
        gpu=p.gpu,
        instance_type=p.instance_type,
        gpus_per_node=p.gpus_per_node,
        efa_interfaces=p.efa_interfaces,
        placement=p.kind == PoolKind.TRAINING,
        pattern=p.pattern,
        nodes=p.nodes,
        standby_nodes=p.standing,
        reserved=p.reserved,
        rto_s=p.rto_s,
        warm_fraction=warm_fraction if p.pattern == Pattern.WARM_STANDBY else None,
    )


def _primary_pool(w: Cluster | Service, cloud: str) -> PoolConfig:
    """A primary's pool runs at full size; training pools get EFA and cluster placement."""
    training = isinstance(w, Cluster)
    return PoolConfig(
        accelerator=_accelerator(cloud, w.gpu),
        name=w.pool_name,
        kind=PoolKind.TRAINING if training else PoolKind.SERVICE,
        gpu=w.gpu,
        instance_type=w.instance_type,
        gpus_per_node=w.gpus_per_node,
        efa_interfaces=w.efa_interfaces if isinstance(w, Cluster) else 0,
        placement=training,
        pattern=Pattern.PRIMARY,
        nodes=w.nodes,
        standby_nodes=w.nodes,
        reserved=False,
        rto_s=w.rto_s,
    )


def _system_pool(site: Site) -> SystemPool | None:
    """The AKS system pool every Azure cluster runs (reference data; the cost engine prices the
    same one)."""
    if site.cloud != Cloud.AZURE:
        return None
    vm_size, nodes = reference.aks_system_pool()
    return SystemPool(vm_size=vm_size, nodes=nodes)


def _clusters(design: Design, site: Site) -> tuple[ClusterConfig, ...]:
    plan = design.plan
    out: list[ClusterConfig] = []
    if site.role == SiteRole.PRIMARY:
        for cl in plan.clusters.values():
            if cl.site != site.name:
                continue
            members: list[Cluster | Service] = [cl]
            members += [s for s in plan.services.values() if s.cluster == cl.name]
            pools = tuple(_primary_pool(w, site.cloud) for w in members)
            eks_name = naming.cluster_name(plan.name, site.name, cl.name)
            out.append(
                ClusterConfig(
                    cl.name, eks_name, KUBERNETES_VERSION, pools, True, _system_pool(site)
                )
            )
        return tuple(out)
    by_cluster: dict[str, list[Pool]] = {}
    for p in design.pools:
        if p.dr == site.name:
            by_cluster.setdefault(p.cluster, []).append(p)
    for name, pools_ in by_cluster.items():
        out.append(
            ClusterConfig(
                name=name,
                eks_name=naming.cluster_name(plan.name, site.name, name),
                kubernetes_version=KUBERNETES_VERSION,
                pools=tuple(_pool_config(p, site.cloud, site.warm_fraction) for p in pools_),
                standby_control_plane=name in design.standing_clusters(site.name),
                system_pool=_system_pool(site),
            )
        )
    return tuple(out)


def _peers_and_links(
    design: Design, site: Site
) -> tuple[tuple[PeerConfig, ...], tuple[LinkConfig, ...]]:
    plan = design.plan
    peers: list[PeerConfig] = []
    links: list[LinkConfig] = []
    if site.protects in plan.onprem:
        return (), tuple(_wan_links(design, site))
    others = (
        [plan.sites[site.protects]]
        if site.role == SiteRole.DR and site.protects
        else plan.dr_sites_for(site.name)
    )
    for other in others:
        peers.append(
            PeerConfig(
                site=other.name,
                region=other.region,
                role=other.role,
                cidr=other.cidr,
                account=other.account,
                transit_gateway_name=naming.transit_gateway_name(plan.name, other.name),
                cloud=other.cloud,
                project=other.project,
                resource_group=resource_group_name(plan, other),
                network_name=naming.network_name(plan.name, other.name),
                asn=naming.transit_gateway_asn(list(plan.sites).index(other.name)),
            )
        )
        primary, dr = (site, other) if site.role == SiteRole.PRIMARY else (other, site)
        for path in design.paths.values():
            if path.primary != primary.name or path.dr != dr.name:
                continue
            if path.kind not in tuple(LinkKind):
                continue
            link = dr.link
            links.append(
                LinkConfig(
                    kind=path.kind,
                    peer_site=other.name,
                    capacity_gbps=path.capacity_gbps,
                    required_gbps=path.required_gbps,
                    headroom=path.headroom,
                    location=link.location if link else None,
                    secondary_location=link.secondary_location if link else None,
                    port_gbps=path.ports.port_gbps if path.ports else None,
                    ports=path.ports.ports if path.ports else None,
                    tunnels=path.tunnels,
                    gateway_sku=path.gateway_sku,
                    **_cci_fields(path.kind, link),
                )
            )
    return tuple(peers), tuple(links)


def _cci_fields(kind: str, link: LinkSpec | None) -> dict[str, Any]:
    """A Cross-Cloud Interconnect's remote location, Direct Connect location and VLAN."""
    if kind != LinkKind.CROSS_CLOUD_INTERCONNECT or link is None:
        return {}
    cci = reference.defaults()["links"][LinkKind.CROSS_CLOUD_INTERCONNECT]
    return {
        "remote_location": link.remote_location,
        "aws_location": link.aws_location,
        "vlan": int(cci["vlan"]),
    }


def _wan_links(design: Design, site: Site) -> list[LinkConfig]:
    """A DR site's end of an on-premises site's link: its capacity is the WAN path's (the
    least of the committed bandwidth, the ports and the agents), what the pack judges."""
    onprem = design.plan.onprem[site.protects or ""]
    out = []
    for path in design.paths.values():
        if path.dr != site.name or path.kind != LinkKind.WAN:
            continue
        link = onprem.link
        vpn = link.kind == OnPremLinkKind.VPN
        out.append(
            LinkConfig(
                kind=path.kind,
                peer_site=onprem.name,
                capacity_gbps=path.capacity_gbps,
                required_gbps=path.required_gbps,
                headroom=path.headroom,
                location=link.location,
                port_gbps=None if vpn else int(link.port_gbps),
                ports=None if vpn else link.ports,
                tunnels=link.ports if vpn else None,
                gateway_sku=expressroute_gateway_sku(path.capacity_gbps)
                if link.kind == OnPremLinkKind.EXPRESSROUTE
                else None,
            )
        )
    return out


def stack_config_values(design: Design, site: Site) -> dict[str, Any]:
    """The `config:` mapping of `stacks/Pulumi.<stack>.yaml` for one site."""
    cfg = build_site_configs(design)[site.name]
    # The provider's own defaults; every resource also names its region/location itself.
    providers: dict[str, dict[str, Any]] = {
        Cloud.AWS: {"aws:region": site.region},
        Cloud.GCP: {"gcp:project": site.project, "gcp:region": site.region},
        Cloud.AZURE: {"azure-native:location": site.region},
    }
    values: dict[str, Any] = {**providers[site.cloud], SITE_KEY: cfg.to_dict()}
    if site.role == SiteRole.DR:
        values[MODE_KEY] = DEFAULT_MODE.value
    return values


# --- keys an operator sets on a deployed stack -------------------------------------------------


@dataclass(frozen=True)
class CredentialKey:
    """A value a DR stack needs from its primary's `transfer_credentials` output."""

    key: str  # full config key, e.g. gpudr:gcs_hmac_secret
    secret: bool
    primary_stack: str
    dr_site: str

    def command(self, dr_stack: str) -> str:
        """The exact command that copies it; the value never passes through a file."""
        short = self.key.split(":", 1)[1]
        return copy_credential_command(
            self.primary_stack, self.dr_site, short, self.secret, dr_stack
        )


def transfer_credential_keys(design: Design, site: Site) -> tuple[CredentialKey, ...]:
    """What `site` (a DR site) must copy from its primary's outputs before its pulls can sign
    in: the HMAC key a GCP primary creates for DataSync, the federated identity an Azure primary
    creates for Storage Transfer Service, the identity an AWS primary creates for AzCopy jobs.
    Empty for every other site."""
    plan = design.plan
    primary = plan.sites.get(site.protects or "")
    if site.role != SiteRole.DR or primary is None:
        return ()
    src = build_site_configs(design)[primary.name]
    keys: list[tuple[str, bool]] = []
    if any(r.dr_site == site.name for r in src.datasync_readers):
        keys += DATASYNC_CREDENTIALS
    if any(r.dr_site == site.name for r in src.azure_sts_readers):
        keys += AZURE_STS_CREDENTIALS
    if any(r.dr_site == site.name for r in src.azcopy_readers):
        keys += AZCOPY_CREDENTIALS
    return tuple(
        CredentialKey(key(k), secret, stack_name(plan, primary), site.name) for k, secret in keys
    )


def stack_clouds(plan: Plan, site: Site) -> tuple[str, ...]:
    """The clouds whose APIs a site's stack calls, its own first: a primary also declares its
    half of the link and the read-only reader in each cross-cloud DR site's cloud."""
    clouds = [site.cloud]
    if site.role == SiteRole.PRIMARY:
        for dr in plan.dr_sites_for(site.name):
            if dr.cloud not in clouds:
                clouds.append(dr.cloud)
    return tuple(clouds)
