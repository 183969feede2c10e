"""The site configuration schema: what `gpudr generate` writes into a stack's `gpudr:site` and
the Pulumi program reads back (`SiteConfig.from_dict`).

This is the contract between the planner and the program: the planner builds it
(`gpudr.build.stackconfig`), the components read it, and nothing here knows how it was computed.
Standard library only, so that `pulumi up` never loads the planner.

Values that cross stacks (the DR bucket a primary replicates into, the key alias it encrypts
replicas with, the replication role a DR bucket trusts) are carried as deterministic names
(`gpudr.contract.naming`), never read from another stack's state: the DR stack must preview and
update while the primary region and the primary stack's state are gone.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

from gpudr.core.enums import DataClass, Pattern, WeightsLock

# An Azure site's Key Vault keeps a deleted vault or key this long, unpurgeable (purge
# protection): the plan names it among the settings a deployment cannot undo.
KEY_VAULT_SOFT_DELETE_DAYS = 90


def mirrors_deletes(data_class: str) -> bool:
    """Whether a class's scheduled pull deletes at the replica what the source deleted:
    checkpoints only (the source keeps the last N; a replica of every checkpoint would grow
    without bound). Datasets and weights keep what the source lost. The stack config sets each
    pull by it and the policy pack checks each registered pull against it."""
    return data_class == DataClass.CHECKPOINTS


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

    # sts (into GCS) | datasync (into S3) | datasync-agent (into S3, on premises) | azcopy (into
    # Blob, from S3)
    service: str
    source_cloud: str  # aws | gcp | azure | onprem
    source_site: str
    source_region: str
    source_bucket: str  # S3/GCS bucket, the Azure container, or the on-premises class path
    source_account: str | None  # AWS account owning the source bucket (sts from S3)
    source_project: str | None  # GCP project owning the source bucket (datasync from GCS)
    schedule_s: int  # repeat interval the RPO implies (whole hours, at least 1 h)
    # sts and azcopy from S3: the AWS IAM role it assumes (federated from Google or Entra ID);
    # else ""
    role_name: str
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
    # the checkpoint interval (loss replication cannot remove) or a dataset's refresh period
    # (how often its burst comes), the window a dual-written publish has, and the rate quota
    # the user asserts for a quota-bounded mechanism.
    interval_s: float = 0.0
    publish_window_s: float | None = None
    quota_gbps: float | None = None
    # What one run may use whatever the path carries, when a job runs on one agent of its own
    # (Storage Mover from on premises): the per-agent rate the plan sized the class with.
    agent_gbps: float | None = None
    # With object_lock_days: how the copy is write-once (`WeightsLock`). compliance: S3 Object
    # Lock COMPLIANCE, a locked GCS retention policy, Azure immutability that gpudr:lock_weights
    # may lock; governance (a trial): S3 GOVERNANCE, the GCS policy unlocked, Azure never locked.
    object_lock_mode: str = WeightsLock.COMPLIANCE.value

    @property
    def trial_lock(self) -> bool:
        """A trial's lock: its owner can undo it (data.weights.lock: governance)."""
        return self.object_lock_days is not None and self.object_lock_mode == WeightsLock.GOVERNANCE


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
class SystemPool:
    """The node pool a cluster runs for its add-ons, apart from the GPU pools (AKS requires
    one); the planner sizes and prices it from its reference data."""

    vm_size: str
    nodes: int


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    eks_name: str
    kubernetes_version: str
    pools: tuple[PoolConfig, ...]
    standby_control_plane: bool  # False: backup/restore, created only at failover
    system_pool: SystemPool | None = None  # Azure: the AKS system pool


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
    # tgw-peering | direct-connect | vpc-peering | vnet-peering | ha-vpn | vpn |
    # cross-cloud-interconnect | wan
    kind: str
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
    # cross-cloud-interconnect: `location`, `secondary_location` are Google's Interconnect
    # locations (one per edge availability domain), `ports` x `port_gbps` its connections
    # alternating them; then the remote location Google lists for AWS, the Direct Connect
    # location of the LAGs, and the 802.1Q tag of every VLAN attachment and virtual interface
    remote_location: str | None = None
    aws_location: str | None = None
    vlan: int | None = None


# LinkConfig's fields only a Cross-Cloud Interconnect has (left out of other links' config).
CCI_LINK_FIELDS = ("remote_location", "aws_location", "vlan")


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
class AzcopyReader:
    """On an AWS primary: what an Azure DR site's AzCopy jobs sign in as. A user-assigned
    identity in the DR region (in a resource group of its own, owned by this stack) whose Entra
    token AWS STS exchanges for a session of a read-only role on these buckets: web identity
    federation, no access key anywhere. The identity's ids leave as `transfer_credentials`."""

    role_name: str
    dr_site: str
    dr_region: str  # where the identity and its group are created
    identity_name: str
    resource_group: str  # the identity's own group (naming.azcopy_identity_group)
    buckets: tuple[str, ...]


@dataclass(frozen=True)
class OnPremSource:
    """On a DR site protecting an on-premises site: what its scheduled pulls read there and the
    link they come over, whichever the DR cloud: AWS DataSync tasks over Direct Connect or a
    Site-to-Site VPN, GCP Storage Transfer jobs through an agent pool over Dedicated or Partner
    Interconnect, Azure Storage Mover job definitions over ExpressRoute. Nothing is deployed on
    premises: the agents are VMs or containers the operator runs and activates or registers
    (what the stack needs of them reaches it as config: `gpudr:datasync_agent_arns`, the
    registered `gpudr:storage_mover_agents`; GCP's need nothing there: they join its agent
    pool), and the router and firewall settings are the runbook's checklist."""

    site: str
    location: str
    cidr: str  # the on-premises prefix the link routes to the DR site
    storage_kind: str  # nfs | lustre | s3-compatible | hdfs
    storage_host: str
    storage_port: int | None  # s3-compatible, hdfs
    storage_path: str  # the export, the bucket, or the HDFS directory
    agents: tuple[str, ...]  # agent names, as the operator's config maps them (ARNs, Arc ids)
    task_mode: str  # ENHANCED | BASIC (DataSync's TaskMode; AWS only)
    # direct-connect | vpn (AWS), interconnect-dedicated | interconnect-partner (GCP),
    # expressroute (Azure)
    link_kind: str
    port_gbps: float  # per port, circuit or attachment (per tunnel for a VPN)
    # Direct Connect ports, VPN tunnels (two per connection), Dedicated Interconnect circuits,
    # Partner Interconnect attachments; 1 for an ExpressRoute circuit
    ports: int
    # The Direct Connect location, the Interconnect location (Dedicated), or the ExpressRoute
    # peering location; None where the provider's (Partner) or none (VPN)
    link_location: str | None
    bgp_asn: int
    vlan: int | None
    committed_gbps: float
    # The planner's, computed once: the link's capacity with every port (tunnel) up, port_gbps
    # x ports, before the committed WAN and the agents bound it; and over a vpn, the AWS
    # Site-to-Site VPN connections that carry its tunnels (two each). 0: not given (a stack file
    # older than them; regenerate it).
    link_gbps: float = 0.0
    vpn_connections: int = 0
    router_address: str | None = None  # vpn: the on-premises router's public IPv4 address
    cloud_router_asn: int = 0  # interconnect-*: the GCP Cloud Router's (defaults.yaml)
    provider: str | None = None  # expressroute: the connectivity provider
    peer_prefixes: tuple[str, ...] = ()  # expressroute: the private peering's two /30s
    # interconnect-dedicated: the company the LOA-CFAs name, and where Google sends them
    customer: str | None = None
    noc_email: str | None = None


@dataclass(frozen=True)
class LogsConfig:
    """Where a site's access, flow and control-plane logs go, and for how long (the plan's
    `logging.retention`). One sink per site, owned by the site's stack, encrypted with the
    site's key where the cloud allows it, named deterministically (`naming.log_sink_name`)
    so that a drill of the site sends its logs there too and they outlive the drill."""

    sink: str  # AWS: the S3 log bucket; GCP: the Cloud Logging bucket id; Azure: the workspace
    retention_days: int


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
    azcopy_readers: tuple[AzcopyReader, ...] = ()
    # None only in a config built by hand; `from_dict` requires it, and every site component
    # refuses to build without it (`require_logs`): a site never deploys unlogged.
    logs: LogsConfig | None = None
    onprem: OnPremSource | None = None  # a DR site protecting an on-premises site

    def to_dict(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = _clean(asdict(self))
        for cluster in cleaned["clusters"]:
            if cluster["system_pool"] is None:  # only AKS clusters have one
                del cluster["system_pool"]
        if cleaned["onprem"] is None:  # only a DR site protecting an on-premises one has it
            del cleaned["onprem"]
        for link in cleaned["links"]:
            for key in CCI_LINK_FIELDS:  # only a Cross-Cloud Interconnect has them
                if link[key] is None:
                    del link[key]
        if not cleaned["azcopy_readers"]:  # only an AWS primary protected by Azure has them
            del cleaned["azcopy_readers"]
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
                    "system_pool": SystemPool(**_ints(c["system_pool"], ("nodes",)))
                    if c.get("system_pool")
                    else None,
                }
            )
            for c in d.get("clusters", ())
        )
        d["peers"] = tuple(PeerConfig(**p) for p in d.get("peers", ()))
        d["links"] = tuple(
            LinkConfig(**_ints(x, ("port_gbps", "ports", "tunnels", "vlan")))
            for x in d.get("links", ())
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
        d["azcopy_readers"] = tuple(
            AzcopyReader(**{**x, "buckets": tuple(x["buckets"])})
            for x in d.get("azcopy_readers", ())
        )
        if d.get("onprem") is not None:
            src = _ints(
                d["onprem"], ("storage_port", "ports", "bgp_asn", "vlan", "vpn_connections")
            )
            d["onprem"] = OnPremSource(
                **{
                    **src,
                    "agents": tuple(src["agents"]),
                    "peer_prefixes": tuple(src.get("peer_prefixes", ())),
                }
            )
        if "logs" not in d:
            raise KeyError("logs (the site's log sink; regenerate the stack files)")
        d["logs"] = LogsConfig(**_ints(d["logs"], ("retention_days",)))
        return SiteConfig(**d)

    def require_logs(self) -> LogsConfig:
        """The site's log sink; a config without one is refused, never deployed unlogged."""
        if self.logs is None:
            raise ValueError(
                f"site {self.site} has no log sink (`logs` in gpudr:site): regenerate its "
                "stack file with `gpudr generate`"
            )
        return self.logs


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
    """JSON- and YAML-friendly: tuples to lists, infinities to None, Enum members to their
    values (PyYAML's safe dumper refuses subclasses of str)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


# --- how many GPU nodes a pool runs: one rule for every cloud, the runbook and the drill -------


@dataclass(frozen=True)
class PoolSize:
    min_size: int
    desired_size: int
    max_size: int


def pool_size(pool: PoolConfig, failover: bool) -> PoolSize:
    """Node counts for a pool: the primary runs full; a DR pool holds its pattern's standby size
    (0 for pilot light, the warm fraction, all for active-active) with the ceiling at the
    primary's size, and runs full once the DR stack is switched to failover."""
    if pool.pattern in (Pattern.PRIMARY, Pattern.ACTIVE_ACTIVE) or failover:
        return PoolSize(pool.nodes, pool.nodes, pool.nodes)
    return PoolSize(pool.standby_nodes, pool.standby_nodes, max(pool.nodes, 1))
