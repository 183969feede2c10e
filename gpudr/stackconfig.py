"""The per-site stack configuration: everything one Pulumi stack needs, computed from the design.

Values that cross stacks (the DR bucket a primary replicates into, the key alias it encrypts
replicas with, the replication role a DR bucket trusts) are derived from the plan with
deterministic names, never read from another stack's state: the DR stack must preview and
update while the primary region and the primary stack's state are gone.

`SiteConfig.from_dict` is what the Pulumi program reads back from `gpudr:site`.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from typing import Any

from gpudr import reference
from gpudr.design import DataFlow, Design, Pool
from gpudr.spec import Cluster, Plan, Service, Site, gcs_dual_region

CONFIG_NAMESPACE = "gpudr"
# `drill` is set only by `gpudr drill`, on a disposable drill stack configured from a DR site.
MODES = ("standby", "failover", "drill")
KUBERNETES_VERSION = "1.33"
# Private ASNs: transit gateways from 64600 up, one per site; Direct Connect gateways use 64512.
TGW_ASN_BASE = 64600
DX_GATEWAY_ASN = 64512


def stack_name(plan: Plan, site: Site) -> str:
    return f"{plan.name}-{site.name}"


def bucket_name(plan: Plan, site: Site, data_class: str) -> str:
    """Globally unique and stable: the hash binds the name to system, site and region."""
    digest = hashlib.sha256(f"{plan.name}/{site.name}/{site.region}/{data_class}".encode())
    return f"{plan.name}-{site.name}-{data_class}-{digest.hexdigest()[:6]}"


def kms_alias(plan: Plan, site: Site) -> str:
    return f"alias/gpudr/{plan.name}/{site.name}"


def replication_role_name(plan: Plan, site: Site) -> str:
    return f"gpudr-{plan.name}-{site.name}-replication"[:64]


def transit_gateway_name(plan: Plan, site: Site) -> str:
    return f"gpudr-{plan.name}-{site.name}"


# --- rules the components apply and the runbooks and drills name --------------------------------

# Every GPU node carries the pool label (a pool's node selector) and the GPU taint (everything
# without a matching toleration stays off): components/*/gpu_cluster.py.
POOL_LABEL = "gpudr/pool"
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_VALUE = "present"
GPU_TAINT = f"{GPU_TAINT_KEY}={GPU_TAINT_VALUE}:NoSchedule"  # as kubectl and AKS write it
# The system pool every AKS cluster also runs (components/azure/gpu_cluster.py).
AKS_SYSTEM_VM_SIZE = "Standard_D4s_v5"
AKS_SYSTEM_NODE_COUNT = 2


def agent_pool_name(pool: str) -> str:
    """AKS Linux node pool names are 1-12 lowercase letters and digits, starting with a letter.
    gpudr lowercases the pool name, drops every other character, prefixes "p" if it would not
    start with a letter, and keeps the first 12: "svc-chat" -> "svcchat", "train" -> "train",
    "Train_H100-large" -> "trainh100lar", "8x-h100" -> "p8xh100"."""
    cleaned = "".join(c for c in pool.lower() if c.isascii() and c.isalnum())
    if not cleaned or not cleaned[0].isalpha():
        cleaned = f"p{cleaned}"
    return cleaned[:12]


def datasync_schedule(schedule_s: int) -> str:
    """A DataSync task's schedule expression for an interval of whole hours (the caller checks
    that it is one). Rate expressions want the singular for a value of 1."""
    hours = schedule_s // 3600
    return "rate(1 hour)" if hours == 1 else f"rate({hours} hours)"


def datasync_task_prefix(system: str, site: str, data_class: str) -> str:
    """What the names of one replica bucket's DataSync tasks start with."""
    return f"gpudr-{system}-{site}-{data_class}"


def datasync_task_name(prefix: str, source_site: str) -> str:
    """A DataSync task's name: its bucket's `datasync_task_prefix` and the site it pulls from."""
    return f"{prefix}-from-{source_site}"


def copy_credential_command(
    primary_stack: str, dr_site: str, key: str, secret: bool, dr_stack: str
) -> str:
    """The command that copies one value of the primary stack's `transfer_credentials` output
    (`{dr site: {key: value}}`) into the DR stack's config key `gpudr:<key>`. The value goes
    through a pipe, never a file, an argument or the shell history; `jq -j` adds no trailing
    newline, which would become part of the value."""
    flag = " --secret" if secret else ""
    return (
        f"pulumi stack output transfer_credentials --show-secrets --json -s {primary_stack} "
        f'| jq -j \'.["{dr_site}"]["{key}"]\' '
        f"| pulumi config set{flag} {CONFIG_NAMESPACE}:{key} -s {dr_stack}"
    )


@dataclass(frozen=True)
class Lifecycle:
    archive_after_days: int | None  # current versions move to the archive class
    archive_class: str | None
    noncurrent_keep: int  # newest noncurrent versions kept (the "last N")
    noncurrent_days: int
    abort_multipart_days: int
    # Any noncurrent version goes after this many days, however few newer versions it has:
    # a checkpoint written under a unique name and later deleted never gets newer versions, so
    # "keep the last N" alone would keep it forever. Until then it stays recoverable.
    noncurrent_max_days: int = 30


@dataclass(frozen=True)
class ReplicationTarget:
    """A push from this (source) bucket, owned by the source's stack."""

    site: str
    region: str
    account: str | None  # AWS account of the destination
    bucket: str  # S3 bucket, or Azure container
    kms_alias: str
    mechanism: str  # crr-rtc | crr | azure-or
    storage_class: str
    rule_id: str
    latency_alarm_s: int
    resource_group: str | None = None  # Azure: the destination's resource group
    storage_account: str | None = None  # Azure: the destination storage account


@dataclass(frozen=True)
class InboundTransfer:
    """A scheduled pull into this (replica) bucket, owned by the DR stack: the DR site holds
    the job and the identity it uses, so it can run and change them with the primary gone."""

    service: str  # sts (into GCS) | datasync (into S3)
    source_cloud: str  # aws | gcp | azure
    source_site: str
    source_region: str
    source_bucket: str  # S3/GCS bucket, or the Azure container
    source_account: str | None  # AWS account owning the source bucket (sts from S3)
    source_project: str | None  # GCP project owning the source bucket (datasync from GCS)
    schedule_s: int  # repeat interval the RPO implies (whole hours, at least 1 h)
    role_name: str  # sts from S3: the AWS IAM role it assumes (federated from Google); else ""
    # Checkpoints: the source keeps the last N and deletes older ones; the sink mirrors those
    # deletes, or copies pile up forever. The sink is versioned, so a mirrored delete leaves a
    # noncurrent version that its lifecycle keeps. Other classes never delete at the sink.
    mirror_deletes: bool = False
    source_storage_account: str | None = None  # Azure: the account holding source_bucket


@dataclass(frozen=True)
class BucketConfig:
    data_class: str
    name: str
    role: str  # source | replica
    rpo_s: float | None
    rto_s: float | None
    mechanism: str
    object_lock_days: int | None
    lifecycle: Lifecycle
    burst_bytes: float  # sizing inputs carried as tags, so policies can recompute the need
    steady_gbps: float
    required_gbps: float
    replication: tuple[ReplicationTarget, ...] = ()
    dual_write_buckets: tuple[str, ...] = ()  # the other copies a dual writer must write
    source_account: str | None = None  # replica side: who replicates into this bucket
    source_role: str | None = None
    # GCS: `location` is the region, or the multi-region code of a custom dual-region whose
    # two regions are `data_locations`; `turbo` sets rpo=ASYNC_TURBO; the CMEK key must live
    # in `kms_location` (the bucket's location, lower case).
    location: str | None = None
    data_locations: tuple[str, ...] = ()
    turbo: bool = False
    kms_location: str | None = None
    # Azure: the storage account holding this class's container, and its redundancy SKU.
    storage_account: str | None = None
    sku: str | None = None
    inbound: tuple[InboundTransfer, ...] = ()
    # Raw facts the policy pack recomputes the bandwidth need from (never the answer itself):
    # the checkpoint interval (loss replication cannot remove), the window a dual-written
    # publish has, and the rate quota the user asserts for a quota-bounded mechanism.
    interval_s: float = 0.0
    publish_window_s: float | None = None
    quota_gbps: float | None = None


@dataclass(frozen=True)
class PoolConfig:
    name: str
    kind: str  # training | service
    gpu: str
    instance_type: str
    gpus_per_node: int
    efa_interfaces: int
    placement: bool
    pattern: str  # primary | backup-restore | pilot-light | warm-standby | active-active
    nodes: int  # full capacity
    standby_nodes: int  # nodes kept at the DR site before failover
    reserved: bool
    rto_s: float | None
    accelerator: str | None = None  # GCP accelerator type, e.g. nvidia-h100-80gb
    warm_fraction: float | None = None  # warm standby: the floor the plan states


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    eks_name: str
    kubernetes_version: str
    pools: tuple[PoolConfig, ...]
    standby_control_plane: bool  # False: backup/restore, created only at failover


@dataclass(frozen=True)
class PeerConfig:
    site: str
    region: str
    role: str
    cidr: str
    account: str | None
    transit_gateway_name: str
    cloud: str = "aws"
    project: str | None = None
    resource_group: str | None = None
    network_name: str | None = None
    asn: int = 0  # the peer's transit gateway / Cloud Router ASN


@dataclass(frozen=True)
class LinkConfig:
    kind: str  # tgw-peering | direct-connect | vpc-peering | vnet-peering | ha-vpn
    peer_site: str
    capacity_gbps: float
    required_gbps: float
    headroom: float
    location: str | None = None
    secondary_location: str | None = None
    port_gbps: int | None = None
    ports: int | None = None
    tunnels: int | None = None  # ha-vpn | vpn
    gateway_sku: str | None = None  # vpn: the Azure VPN gateway SKU


@dataclass(frozen=True)
class StsReader:
    """An AWS role that Storage Transfer Service (a GCP DR site's jobs) assumes through web
    identity federation to read these buckets: no access keys anywhere."""

    role_name: str
    gcp_project: str  # the project whose transfer service agent may assume the role
    buckets: tuple[str, ...]


@dataclass(frozen=True)
class DataSyncReader:
    """On a GCP primary: the service account whose HMAC key an AWS DR site's DataSync tasks
    use to read these buckets (DataSync reads other clouds' object storage only with an access
    key pair). The key's secret leaves this stack as a secret output and reaches the DR stack
    through `pulumi config set --secret`, never through a file."""

    account_id: str  # GCP service account id (6-30 characters)
    dr_site: str
    buckets: tuple[str, ...]


@dataclass(frozen=True)
class AzureStsReader:
    """On an Azure primary: a user-assigned identity that Storage Transfer Service (a GCP DR
    site's jobs) signs in as by workload identity federation, with read-only data access to
    these storage accounts. No SAS token or account key exists."""

    identity_name: str
    dr_site: str
    gcp_project: str  # the project whose transfer service agent the credential trusts
    storage_accounts: tuple[str, ...]


@dataclass(frozen=True)
class SiteConfig:
    system: str
    site: str
    cloud: str
    region: str
    role: str  # primary | dr
    account: str | None
    cidr: str
    azs: tuple[str, ...]
    api_public_cidrs: tuple[str, ...]
    kms_alias: str
    replication_role: str
    transit_gateway_name: str
    transit_gateway_asn: int  # unique per site: also the BGP ASN of GCP Cloud Routers
    dual_write_endpoint: bool  # an S3 interface endpoint receives dual writes over the DR link
    buckets: tuple[BucketConfig, ...]
    clusters: tuple[ClusterConfig, ...]
    peers: tuple[PeerConfig, ...]
    links: tuple[LinkConfig, ...]
    network_name: str = ""  # GCP VPC network / Azure virtual network name
    project: str | None = None  # GCP project
    resource_group: str | None = None  # Azure resource group, created by this stack
    key_ring: str | None = None  # GCP Cloud KMS key ring name (one per location)
    key_vault: str | None = None  # Azure Key Vault name
    sts_readers: tuple[StsReader, ...] = ()
    datasync_readers: tuple[DataSyncReader, ...] = ()
    azure_sts_readers: tuple[AzureStsReader, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = _clean(asdict(self))
        return cleaned

    @staticmethod
    def from_dict(data: dict[str, Any]) -> SiteConfig:
        """Rebuild from `gpudr:site`; a KeyError or TypeError names what is missing."""
        d = dict(data)
        d["azs"] = tuple(d["azs"])
        d["api_public_cidrs"] = tuple(d.get("api_public_cidrs", ()))
        d["buckets"] = tuple(_bucket(b) for b in d.get("buckets", ()))
        d["clusters"] = tuple(
            ClusterConfig(
                **{
                    **c,
                    "pools": tuple(
                        PoolConfig(
                            **_ints(
                                p, ("gpus_per_node", "efa_interfaces", "nodes", "standby_nodes")
                            )
                        )
                        for p in c["pools"]
                    ),
                }
            )
            for c in d.get("clusters", ())
        )
        d["peers"] = tuple(PeerConfig(**p) for p in d.get("peers", ()))
        d["links"] = tuple(
            LinkConfig(**_ints(x, ("port_gbps", "ports", "tunnels"))) for x in d.get("links", ())
        )
        d["sts_readers"] = tuple(
            StsReader(**{**x, "buckets": tuple(x["buckets"])}) for x in d.get("sts_readers", ())
        )
        d["datasync_readers"] = tuple(
            DataSyncReader(**{**x, "buckets": tuple(x["buckets"])})
            for x in d.get("datasync_readers", ())
        )
        d["azure_sts_readers"] = tuple(
            AzureStsReader(**{**x, "storage_accounts": tuple(x["storage_accounts"])})
            for x in d.get("azure_sts_readers", ())
        )
        return SiteConfig(**d)


def _ints(d: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Pulumi config round-trips numbers as floats; restore the integers."""
    out = dict(d)
    for k in keys:
        if out.get(k) is not None:
            out[k] = int(out[k])
    return out


def _bucket(b: dict[str, Any]) -> BucketConfig:
    d = _ints(b, ("object_lock_days",))
    d["lifecycle"] = Lifecycle(
        **_ints(
            b["lifecycle"],
            (
                "archive_after_days",
                "noncurrent_keep",
                "noncurrent_days",
                "abort_multipart_days",
                "noncurrent_max_days",
            ),
        )
    )
    d["replication"] = tuple(
        ReplicationTarget(**_ints(t, ("latency_alarm_s",))) for t in b.get("replication", ())
    )
    d["dual_write_buckets"] = tuple(b.get("dual_write_buckets", ()))
    d["data_locations"] = tuple(b.get("data_locations", ()))
    d["inbound"] = tuple(InboundTransfer(**_ints(t, ("schedule_s",))) for t in b.get("inbound", ()))
    return BucketConfig(**d)


def _clean(value: Any) -> Any:
    """JSON-friendly: tuples to lists, infinities to None."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


# --- building the configs -------------------------------------------------------------------


def _lifecycle(plan: Plan, data_class: str, cloud: str = "aws") -> Lifecycle:
    if data_class == "checkpoints" and plan.checkpoints:
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
    if data_class == "weights":
        return Lifecycle(None, None, noncurrent_keep=10, noncurrent_days=30, abort_multipart_days=2)
    return Lifecycle(
        archive_after_days=None,
        archive_class=None,
        noncurrent_keep=3,
        noncurrent_days=30,
        abort_multipart_days=7,
    )


def _quota(plan: Plan, mechanism: str) -> float | None:
    """The rate quota bounding a mechanism, as the plan states or defaults it."""
    return {
        "crr-rtc": plan.quotas.s3_rtc_gbps,
        "sts": plan.quotas.sts_gbps,
        "datasync": plan.quotas.datasync_gbps,
    }.get(mechanism)


def build_site_configs(design: Design) -> dict[str, SiteConfig]:
    """One SiteConfig per site, keyed by site name."""
    plan = design.plan
    out: dict[str, SiteConfig] = {}
    for site in plan.sites.values():
        out[site.name] = _site_config(design, site)
    return out


def storage_account_name(plan: Plan, site: Site, data_class: str) -> str:
    """Azure storage accounts: 3-24 lowercase letters and digits, globally unique."""
    digest = hashlib.sha256(f"{plan.name}/{site.name}/{site.region}/{data_class}".encode())
    return f"gpudr{digest.hexdigest()[:19]}"


def key_vault_name(plan: Plan, site: Site) -> str:
    """Azure Key Vault names: 3-24 letters, digits and hyphens, globally unique."""
    digest = hashlib.sha256(f"{plan.name}/{site.name}/{site.region}/vault".encode())
    return f"gpudr-{digest.hexdigest()[:18]}"


def network_name(plan: Plan, site: Site) -> str:
    return f"gpudr-{plan.name}-{site.name}"


def resource_group_name(plan: Plan, site: Site) -> str | None:
    return f"gpudr-{plan.name}-{site.name}" if site.cloud == "azure" else None


def sts_reader_role_name(plan: Plan, dr: Site) -> str:
    """The AWS role Storage Transfer Service assumes (by federation) to read the primary."""
    return f"gpudr-{plan.name}-{dr.name}-sts-reader"[:64]


def datasync_reader_id(plan: Plan, dr: Site) -> str:
    """GCP service account ids are 6-30 characters: a digest keeps them unique per plan."""
    digest = hashlib.sha256(f"{plan.name}/{dr.name}/datasync".encode()).hexdigest()
    return f"gpudr-ds-{digest[:12]}"


def azure_sts_identity_name(plan: Plan, dr: Site) -> str:
    return f"gpudr-{plan.name}-{dr.name}-sts-reader"[:128]


def _container_or_bucket(plan: Plan, site: Site, data_class: str) -> str:
    # Azure: the container inside the class's own storage account carries the class name.
    return data_class if site.cloud == "azure" else bucket_name(plan, site, data_class)


def _site_config(design: Design, site: Site) -> SiteConfig:
    plan = design.plan
    buckets: list[BucketConfig] = []
    weights_lock = (
        max(1, math.ceil(plan.weights.retention_s / 86400)) if plan.weights is not None else None
    )
    skus = reference.defaults()["storage"]["azure_sku"]

    def base(cls: str, role: str, f: DataFlow | None, owner: Site) -> dict[str, Any]:
        spec = getattr(plan, cls)
        return {
            "data_class": cls,
            "name": _container_or_bucket(plan, owner, cls),
            "role": role,
            "rpo_s": spec.rpo_s,
            "rto_s": spec.rto_s,
            "mechanism": f.mechanism if f else "none",
            "object_lock_days": weights_lock if cls == "weights" else None,
            "lifecycle": _lifecycle(plan, cls, owner.cloud),
            "burst_bytes": f.flow.burst_bytes if f else 0.0,
            "steady_gbps": f.flow.steady_gbps if f else 0.0,
            "required_gbps": f.flow.required_gbps if f else 0.0,
            "location": owner.region.upper() if owner.cloud == "gcp" else None,
            "kms_location": owner.region if owner.cloud == "gcp" else None,
            "storage_account": storage_account_name(plan, owner, cls)
            if owner.cloud == "azure"
            else None,
            "sku": skus["primary" if role == "source" else "replica"]
            if owner.cloud == "azure"
            else None,
            "interval_s": plan.checkpoints.interval_s
            if cls == "checkpoints" and plan.checkpoints
            else 0.0,
            "publish_window_s": plan.weights.publish_window_s
            if cls == "weights" and plan.weights and f and f.mechanism == "dual-write"
            else None,
            "quota_gbps": _quota(plan, f.mechanism) if f else None,
        }

    if site.role == "primary":
        for cls in ("checkpoints", "weights", "datasets"):
            spec = getattr(plan, cls)
            if spec is None or spec.site != site.name:
                continue
            flows = [f for f in design.flows if f.primary == site.name and f.data_class == cls]
            if flows and all(f.mechanism.startswith("gcs-") for f in flows):
                continue  # one dual-region bucket, owned by the DR site's stack
            targets = []
            dual = []
            for f in flows:
                dr = plan.sites[f.dr]
                if f.mechanism == "dual-write":
                    dual.append(_container_or_bucket(plan, dr, cls))
                    continue
                if f.mechanism not in ("crr-rtc", "crr", "azure-or"):
                    continue  # pulled by the DR site (scheduled transfers)
                targets.append(
                    ReplicationTarget(
                        site=dr.name,
                        region=dr.region,
                        account=dr.account,
                        bucket=_container_or_bucket(plan, dr, cls),
                        kms_alias=kms_alias(plan, dr),
                        mechanism=f.mechanism,
                        storage_class=f.replica_class,
                        rule_id=f"{cls}-to-{dr.name}",
                        latency_alarm_s=900 if f.mechanism == "crr-rtc" else 3600,
                        resource_group=resource_group_name(plan, dr),
                        storage_account=storage_account_name(plan, dr, cls)
                        if dr.cloud == "azure"
                        else None,
                    )
                )
            fields = base(cls, "source", flows[0] if flows else None, site)
            buckets.append(
                BucketConfig(**fields, replication=tuple(targets), dual_write_buckets=tuple(dual))
            )
    else:
        primary = plan.sites[site.protects or ""]
        for f in design.flows:
            if f.dr != site.name:
                continue
            fields = base(f.data_class, "replica", f, site)
            inbound: tuple[InboundTransfer, ...] = ()
            if f.mechanism.startswith("gcs-"):
                continent = gcs_dual_region(primary.region, site.region) or ""
                fields.update(
                    role="dual-region",
                    location=continent,
                    data_locations=(primary.region.upper(), site.region.upper()),
                    turbo=f.mechanism == "gcs-turbo",
                    kms_location=continent.lower(),
                )
            if f.mechanism in ("sts", "datasync") and f.schedule is not None:
                inbound = (
                    InboundTransfer(
                        service=f.mechanism,
                        source_cloud=primary.cloud,
                        source_site=primary.name,
                        source_region=primary.region,
                        source_bucket=_container_or_bucket(plan, primary, f.data_class),
                        source_account=primary.account,
                        source_project=primary.project,
                        schedule_s=f.schedule.interval_s,
                        # Only STS from S3 assumes a role; other sources sign in otherwise.
                        role_name=sts_reader_role_name(plan, site)
                        if f.mechanism == "sts" and primary.cloud == "aws"
                        else "",
                        mirror_deletes=f.data_class == "checkpoints",
                        source_storage_account=storage_account_name(plan, primary, f.data_class)
                        if primary.cloud == "azure"
                        else None,
                    ),
                )
            buckets.append(
                BucketConfig(
                    **fields,
                    dual_write_buckets=(_container_or_bucket(plan, primary, f.data_class),)
                    if f.mechanism == "dual-write"
                    else (),
                    source_account=primary.account,
                    source_role=replication_role_name(plan, primary),
                    inbound=inbound,
                )
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
        kms_alias=kms_alias(plan, site),
        replication_role=replication_role_name(plan, site),
        transit_gateway_name=transit_gateway_name(plan, site),
        transit_gateway_asn=TGW_ASN_BASE + list(plan.sites).index(site.name),
        dual_write_endpoint=site.cloud == "aws"
        and any(b.role == "replica" and b.mechanism == "dual-write" for b in buckets),
        buckets=tuple(buckets),
        clusters=clusters,
        peers=peers,
        links=links,
        network_name=network_name(plan, site),
        project=site.project,
        resource_group=resource_group_name(plan, site),
        key_ring=f"gpudr-{plan.name}-{site.name}" if site.cloud == "gcp" else None,
        key_vault=key_vault_name(plan, site) if site.cloud == "azure" else None,
        sts_readers=_sts_readers(design, site),
        datasync_readers=_datasync_readers(design, site),
        azure_sts_readers=_azure_sts_readers(design, site),
    )


def _sts_readers(design: Design, site: Site) -> tuple[StsReader, ...]:
    """On an AWS primary: the roles Storage Transfer Service jobs at GCP DR sites assume."""
    plan = design.plan
    out: dict[str, StsReader] = {}
    for f in design.flows:
        if f.primary != site.name or f.mechanism != "sts" or site.cloud != "aws":
            continue
        dr = plan.sites[f.dr]
        bucket = bucket_name(plan, site, f.data_class)
        role = sts_reader_role_name(plan, dr)
        previous = out.get(role)
        buckets = (*previous.buckets, bucket) if previous else (bucket,)
        out[role] = StsReader(role_name=role, gcp_project=dr.project or "", buckets=buckets)
    return tuple(out.values())


def _datasync_readers(design: Design, site: Site) -> tuple[DataSyncReader, ...]:
    """On a GCP primary: one HMAC-keyed reader per AWS DR site pulling with DataSync."""
    plan = design.plan
    out: dict[str, DataSyncReader] = {}
    for f in design.flows:
        if f.primary != site.name or f.mechanism != "datasync":
            continue
        dr = plan.sites[f.dr]
        previous = out.get(dr.name)
        bucket = bucket_name(plan, site, f.data_class)
        out[dr.name] = DataSyncReader(
            account_id=datasync_reader_id(plan, dr),
            dr_site=dr.name,
            buckets=(*previous.buckets, bucket) if previous else (bucket,),
        )
    return tuple(out.values())


def _azure_sts_readers(design: Design, site: Site) -> tuple[AzureStsReader, ...]:
    """On an Azure primary: one federated reader identity per GCP DR site."""
    plan = design.plan
    out: dict[str, AzureStsReader] = {}
    for f in design.flows:
        if f.primary != site.name or f.mechanism != "sts" or site.cloud != "azure":
            continue
        dr = plan.sites[f.dr]
        previous = out.get(dr.name)
        account = storage_account_name(plan, site, f.data_class)
        out[dr.name] = AzureStsReader(
            identity_name=azure_sts_identity_name(plan, dr),
            dr_site=dr.name,
            gcp_project=dr.project or "",
            storage_accounts=(*previous.storage_accounts, account) if previous else (account,),
        )
    return tuple(out.values())


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
        placement=p.kind == "training",
        pattern=p.pattern,
        nodes=p.nodes,
        standby_nodes=p.standing,
        reserved=p.reserved,
        rto_s=p.rto_s,
        warm_fraction=warm_fraction if p.pattern == "warm-standby" else None,
    )


def _primary_pool(w: Cluster | Service, cloud: str) -> PoolConfig:
    """A primary's pool runs at full size; training pools get EFA and cluster placement."""
    training = isinstance(w, Cluster)
    return PoolConfig(
        accelerator=_accelerator(cloud, w.gpu),
        name=w.pool_name,
        kind="training" if training else "service",
        gpu=w.gpu,
        instance_type=w.instance_type,
        gpus_per_node=w.gpus_per_node,
        efa_interfaces=w.efa_interfaces if isinstance(w, Cluster) else 0,
        placement=training,
        pattern="primary",
        nodes=w.nodes,
        standby_nodes=w.nodes,
        reserved=False,
        rto_s=w.rto_s,
    )


def _clusters(design: Design, site: Site) -> tuple[ClusterConfig, ...]:
    plan = design.plan
    out: list[ClusterConfig] = []
    if site.role == "primary":
        for cl in plan.clusters.values():
            if cl.site != site.name:
                continue
            members: list[Cluster | Service] = [cl]
            members += [s for s in plan.services.values() if s.cluster == cl.name]
            pools = tuple(_primary_pool(w, site.cloud) for w in members)
            eks_name = f"{plan.name}-{site.name}-{cl.name}"
            out.append(ClusterConfig(cl.name, eks_name, KUBERNETES_VERSION, pools, True))
    else:
        by_cluster: dict[str, list[Pool]] = {}
        for p in design.pools:
            if p.dr == site.name:
                by_cluster.setdefault(p.cluster, []).append(p)
        for name, pools_ in by_cluster.items():
            standing = any(p.pattern != "backup-restore" for p in pools_)
            out.append(
                ClusterConfig(
                    name,
                    f"{plan.name}-{site.name}-{name}",
                    KUBERNETES_VERSION,
                    tuple(_pool_config(p, site.cloud, site.warm_fraction) for p in pools_),
                    standing,
                )
            )
    return tuple(out)


def _peers_and_links(
    design: Design, site: Site
) -> tuple[tuple[PeerConfig, ...], tuple[LinkConfig, ...]]:
    plan = design.plan
    peers: list[PeerConfig] = []
    links: list[LinkConfig] = []
    others = (
        [plan.sites[site.protects]]
        if site.role == "dr" and site.protects
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
                transit_gateway_name=transit_gateway_name(plan, other),
                cloud=other.cloud,
                project=other.project,
                resource_group=resource_group_name(plan, other),
                network_name=network_name(plan, other),
                asn=TGW_ASN_BASE + list(plan.sites).index(other.name),
            )
        )
        primary, dr = (site, other) if site.role == "primary" else (other, site)
        for path in design.paths.values():
            if path.primary != primary.name or path.dr != dr.name:
                continue
            if path.kind not in (
                "tgw-peering",
                "direct-connect",
                "vpc-peering",
                "vnet-peering",
                "ha-vpn",
                "vpn",
            ):
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
                    tunnels=int(reference.defaults()["links"][path.kind]["tunnels"])
                    if path.kind in ("ha-vpn", "vpn")
                    else None,
                    gateway_sku=path.gateway_sku,
                )
            )
    return tuple(peers), tuple(links)


def stack_config_values(design: Design, site: Site) -> dict[str, Any]:
    """The `config:` mapping of `stacks/Pulumi.<stack>.yaml` for one site."""
    cfg = build_site_configs(design)[site.name]
    # The provider's own defaults; every resource also names its region/location itself.
    providers: dict[str, dict[str, Any]] = {
        "aws": {"aws:region": site.region},
        "gcp": {"gcp:project": site.project, "gcp:region": site.region},
        "azure": {"azure-native:location": site.region},
    }
    values: dict[str, Any] = {**providers[site.cloud], f"{CONFIG_NAMESPACE}:site": cfg.to_dict()}
    if site.role == "dr":
        values[f"{CONFIG_NAMESPACE}:mode"] = "standby"
    return values


# --- keys an operator sets on a deployed stack -------------------------------------------------

# `pulumi config set` writes these into the generated stack file. `gpudr generate` keeps their
# values when it rewrites the file and `--check` does not count them as drift: regenerating during
# a failover must not switch the DR stack back to standby, and a credential copied from the
# primary's outputs (a secret, encrypted by the stack's secrets provider) must survive.
OPERATOR_KEYS = (
    f"{CONFIG_NAMESPACE}:mode",
    f"{CONFIG_NAMESPACE}:lock_weights",
    f"{CONFIG_NAMESPACE}:gcs_hmac_access_id",
    f"{CONFIG_NAMESPACE}:gcs_hmac_secret",
    f"{CONFIG_NAMESPACE}:azure_sts_client_id",
    f"{CONFIG_NAMESPACE}:azure_tenant_id",
)
# Top-level keys the Pulumi CLI writes for the stack's secrets provider (`pulumi stack init`).
SECRETS_PROVIDER_KEYS = ("secretsprovider", "encryptedkey", "encryptionsalt")


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
    creates for Storage Transfer Service. Empty for every other site."""
    plan = design.plan
    primary = plan.sites.get(site.protects or "")
    if site.role != "dr" or primary is None:
        return ()
    src = build_site_configs(design)[primary.name]
    keys: list[tuple[str, bool]] = []
    if any(r.dr_site == site.name for r in src.datasync_readers):
        keys += [("gcs_hmac_access_id", False), ("gcs_hmac_secret", True)]
    if any(r.dr_site == site.name for r in src.azure_sts_readers):
        keys += [("azure_sts_client_id", False), ("azure_tenant_id", False)]
    return tuple(
        CredentialKey(f"{CONFIG_NAMESPACE}:{k}", secret, stack_name(plan, primary), site.name)
        for k, secret in keys
    )


def stack_clouds(plan: Plan, site: Site) -> tuple[str, ...]:
    """The clouds whose APIs a site's stack calls, its own first: a primary also declares its
    half of the link and the read-only reader in each cross-cloud DR site's cloud."""
    clouds = [site.cloud]
    if site.role == "primary":
        for dr in plan.dr_sites_for(site.name):
            if dr.cloud not in clouds:
                clouds.append(dr.cloud)
    return tuple(clouds)
