"""The closed sets gpudr plans with: clouds, site roles, replication mechanisms, recovery
patterns, data classes, pool and workload kinds, paths and links, stack modes.

Each is a `StrEnum`: a member is equal to its value (`Cloud.AWS == "aws"`), hashes like it, and
is written as it (`f"{Cloud.AWS}"`, JSON), so the plan spec, the stack config, the tags and the
reports carry the same words users write. Convert to plain `str` before YAML (PyYAML's safe
dumper refuses subclasses of `str`).

Standard library only: the contract, and so the Pulumi program, read this module.
"""

from __future__ import annotations

from enum import StrEnum


class Cloud(StrEnum):
    AWS = "aws"
    GCP = "gcp"
    AZURE = "azure"


# `cloud: onprem` in the plan spec: a primary site in your own data centre. Not a `Cloud` (a
# provider, keying every price, catalog and SDK table): on-prem sites are held apart
# (spec.Plan.onprem), get no stack and no list prices, and their side is a checklist.
ONPREM = "onprem"


class SiteRole(StrEnum):
    PRIMARY = "primary"
    DR = "dr"


class Mechanism(StrEnum):
    """How a data class reaches a DR site (gpudr/core/data/defaults.yaml `mechanisms` says what
    each guarantees, with sources)."""

    CRR_RTC = "crr-rtc"  # S3 cross-region replication with Replication Time Control
    CRR = "crr"  # S3 cross-region replication, no time guarantee
    GCS_TURBO = "gcs-turbo"  # one GCS dual-region bucket with turbo replication
    GCS_DUAL_REGION = "gcs-dual-region"  # the same, default replication
    STS = "sts"  # Storage Transfer Service jobs pulling into GCS on a schedule
    AZURE_OR = "azure-or"  # Azure object replication (standard mode)
    DATASYNC = "datasync"  # DataSync tasks pulling into S3 on a schedule
    # DataSync tasks at the AWS DR site reading an on-premises store through agents there
    DATASYNC_AGENT = "datasync-agent"
    # Storage Transfer Service jobs at the GCP DR site reading an on-premises store through an
    # agent pool there
    STS_AGENT = "sts-agent"
    # Azure Storage Mover job definitions at the Azure DR site reading an on-premises NFS
    # export through its Arc-registered agents there
    STORAGE_MOVER = "storage-mover"
    AZCOPY = "azcopy"  # Container Apps jobs at the Azure DR site copying from S3 with AzCopy
    DUAL_WRITE = "dual-write"  # the writer writes every copy before it reports success
    NONE = "none"  # a class no DR site receives


# Mechanisms the DR site runs on a schedule: its stack holds the job (sizing.scheduled_transfer).
PULLED = (
    Mechanism.STS,
    Mechanism.DATASYNC,
    Mechanism.DATASYNC_AGENT,
    Mechanism.STS_AGENT,
    Mechanism.STORAGE_MOVER,
    Mechanism.AZCOPY,
)
# Pulls from an on-premises site through agents there, bound by the WAN bandwidth committed to DR
# (and the agents' own limits), not a vendor quota.
FROM_ONPREM = (Mechanism.DATASYNC_AGENT, Mechanism.STS_AGENT, Mechanism.STORAGE_MOVER)
# How their agents run the classes' jobs, which bounds each run beyond the path. A Storage Mover
# job definition names one agent: a run gets one agent's rate, and no two classes may share one.
# A DataSync agent runs one task at a time and every class's task uses every agent: a run may
# queue behind every other class's run. (Storage Transfer agents take work from every job of
# their pool: neither.)
ONE_AGENT_PER_JOB = (Mechanism.STORAGE_MOVER,)
ONE_TASK_PER_AGENT = (Mechanism.DATASYNC_AGENT,)
# Mechanisms the source's stack pushes with (a replication rule or policy on the source).
PUSHED = (Mechanism.CRR_RTC, Mechanism.CRR, Mechanism.AZURE_OR)
# One dual-region bucket, owned by the DR site's stack.
DUAL_REGION = (Mechanism.GCS_TURBO, Mechanism.GCS_DUAL_REGION)


class Pattern(StrEnum):
    """How a GPU pool stands at its DR site. `PRIMARY` is a primary site's own pool and `DRILL`
    a drill's test pool: pool states, not DR patterns a plan chooses among."""

    BACKUP_RESTORE = "backup-restore"
    PILOT_LIGHT = "pilot-light"
    WARM_STANDBY = "warm-standby"
    ACTIVE_ACTIVE = "active-active"
    PRIMARY = "primary"
    DRILL = "drill"


# The DR patterns, from the least to the most standing capacity (and cost).
DR_PATTERNS = (
    Pattern.BACKUP_RESTORE,
    Pattern.PILOT_LIGHT,
    Pattern.WARM_STANDBY,
    Pattern.ACTIVE_ACTIVE,
)


class DataClass(StrEnum):
    CHECKPOINTS = "checkpoints"
    WEIGHTS = "weights"
    DATASETS = "datasets"


# The order reports, runbooks and drills list data classes in.
DATA_CLASSES = (DataClass.CHECKPOINTS, DataClass.DATASETS, DataClass.WEIGHTS)


class PoolKind(StrEnum):
    TRAINING = "training"
    SERVICE = "service"


class WorkloadKind(StrEnum):
    """A row of the verdict table."""

    DATA = "data"
    CLUSTER = "cluster"
    SERVICE = "service"


class WeightsLock(StrEnum):
    """`data.weights.lock`: how the weights copies are made write-once (gpudr:lock on them)."""

    # Production: S3 Object Lock COMPLIANCE, a locked GCS retention policy (Bucket Lock), Azure
    # immutability locked with gpudr:lock_weights. Nobody can delete a version before its
    # retention ends, nor the bucket while it holds one.
    COMPLIANCE = "compliance"
    # A trial: the same retention, undoable by its owner (S3 GOVERNANCE mode, an unlocked GCS
    # retention policy, Azure immutability left unlocked). The policy pack accepts it only on
    # stacks its config approves as trials.
    GOVERNANCE = "governance"


class BucketRole(StrEnum):
    """A data bucket's place in its class's replication."""

    SOURCE = "source"
    REPLICA = "replica"
    DUAL_REGION = "dual-region"


class LinkKind(StrEnum):
    """The network link between two sites."""

    TGW_PEERING = "tgw-peering"
    DIRECT_CONNECT = "direct-connect"
    VPC_PEERING = "vpc-peering"
    VNET_PEERING = "vnet-peering"
    HA_VPN = "ha-vpn"  # GCP HA VPN to AWS VPN connections
    VPN = "vpn"  # Azure VPN gateway to GCP HA VPN
    # GCP Cross-Cloud Interconnect: dedicated ports Google cross-connects to AWS Direct Connect
    # LAGs, one per connection, split over the two edge availability domains of a metro
    CROSS_CLOUD_INTERCONNECT = "cross-cloud-interconnect"
    # An on-premises site's WAN into its DR cloud: the bandwidth committed to DR over its link
    WAN = "wan"


class OnPremLinkKind(StrEnum):
    """How an on-premises site reaches its DR cloud (`sites.<onprem>.link.kind`)."""

    DIRECT_CONNECT = "direct-connect"  # AWS Direct Connect dedicated connections
    INTERCONNECT_DEDICATED = "interconnect-dedicated"  # GCP Dedicated Interconnect
    INTERCONNECT_PARTNER = "interconnect-partner"  # GCP Partner Interconnect VLAN attachments
    EXPRESSROUTE = "expressroute"  # Azure ExpressRoute circuit
    VPN = "vpn"  # a site-to-site IPsec VPN over the internet


class StorageKind(StrEnum):
    """What an on-premises site keeps its data in (`sites.<onprem>.storage.kind`)."""

    S3_COMPATIBLE = "s3-compatible"  # MinIO, Ceph RGW, ...
    NFS = "nfs"
    LUSTRE = "lustre"  # read through an NFS export of the file system
    HDFS = "hdfs"


# The stores read over NFS (a Lustre file system through an NFS export of it, docs/onprem.md),
# and those read over an S3 API. The contract re-exports both (`gpudr.contract.onprem`).
NFS_STORAGE_KINDS: tuple[StorageKind, ...] = (StorageKind.NFS, StorageKind.LUSTRE)
OBJECT_STORAGE_KINDS: tuple[StorageKind, ...] = (StorageKind.S3_COMPATIBLE,)


class GpuInterconnect(StrEnum):
    """The fabric between an on-premises cluster's GPU nodes."""

    INFINIBAND = "infiniband"
    ROCE = "roce"
    ETHERNET = "ethernet"


class ServicePath(StrEnum):
    """A managed mechanism's own path, whose capacity is its service's (not a link's)."""

    S3_RTC = "s3-rtc"
    S3_CRR = "s3-crr"
    GCS_TURBO = "gcs-turbo"
    GCS_DUAL_REGION = "gcs-dual-region"
    STS = "sts"
    DATASYNC = "datasync"
    AZURE_OR = "azure-or"
    AZCOPY = "azcopy"


class Mode(StrEnum):
    """`gpudr:mode` of a stack."""

    STANDBY = "standby"
    FAILOVER = "failover"
    DRILL = "drill"


class DrillPhase(StrEnum):
    INFRASTRUCTURE = "infrastructure"  # pools at 0
    CAPACITY = "capacity"  # pools at their test size


# The longest a drill stack may live: a drill that outlives a day is an environment, not a drill.
# A plan's drill.ttl and --ttl are refused above it, the program refuses a `gpudr:drill` expiry
# beyond it, and cleanup caps every stack's expiry at its name's time plus this, whatever its
# tag says. Here, not in defaults.yaml, because the contract (and so the program) reads it.
DRILL_MAX_TTL_S = 24 * 3600
# What a drill keeps of its TTL for its destroy (GPU pools, a control plane, a NAT): gpudr
# stops a drill that much before its TTL, and a CI job's timeout allows that much after it.
DRILL_DESTROY_MARGIN_S = 2700


# The retention periods CloudWatch Logs accepts (PutRetentionPolicy `retentionInDays`): a closed
# set of vendor values, here so that the log group (components) and its cost line agree.
CLOUDWATCH_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
    3288, 3653,
)  # fmt: skip


def cloudwatch_retention_days(days: int) -> int:
    """The plan's retention rounded up to a period CloudWatch Logs accepts: logs are kept at
    least as long as the plan says, never less."""
    for allowed in CLOUDWATCH_RETENTION_DAYS:
        if allowed >= days:
            return allowed
    raise ValueError(
        f"log retention of {days} days is longer than CloudWatch Logs keeps logs "
        f"({CLOUDWATCH_RETENTION_DAYS[-1]} days at most); shorten the plan's logging.retention"
    )


# The longest an AWS role session lasts (IAM's upper bound on a role's MaxSessionDuration,
# which AssumeRoleWithWebIdentity's DurationSeconds cannot exceed). AzCopy presigns each S3
# object's URL with the session's credentials, so the URLs die with the session: one AzCopy run
# must finish within it. The AWS primary's read role declares it, the planner refuses a run
# longer than it, and the pack checks the registered job's timeout against it.
AWS_MAX_SESSION_S = 43200
# What one AzCopy job replica is allocated (a Container Apps Consumption profile pairs 0.5 GiB
# with each 0.25 vCPU, up to 4 vCPU): the service-to-service copy moves no data through the
# replica, which only lists and schedules blocks. The job declares it and the plan bills it.
AZCOPY_JOB_VCPU = 1.0
AZCOPY_JOB_MEMORY_GIB = 2.0
# The repeat intervals (hours) a 5-field cron expression keeps exactly, day after day: the
# divisors of 24 ("0 */h * * *"), and daily. "0 */5 * * *" fires at 0, 5, ..., 20 and again at
# 0: a 4 h gap, not 5. A job scheduled by cron (AzCopy's Container Apps jobs) runs at one of
# these, which the planner sizes and the pack reads back.
CRON_INTERVAL_HOURS = (1, 2, 3, 4, 6, 8, 12, 24)


# Private ASNs on gpudr's side of BGP: transit gateways from 64600 up, one per site (its
# position in the plan); Direct Connect gateways use 64512. Here, not in the contract, because
# the spec refuses an on-premises router ASN equal to either (the session would not come up).
TGW_ASN_BASE = 64600
DX_GATEWAY_ASN = 64512
# Microsoft's end of an ExpressRoute private peering; the private ASNs Azure reserves
# (65515-65520) are refused on the router too.
MICROSOFT_ASN = 12076
AZURE_RESERVED_ASNS = range(65515, 65521)


def transit_gateway_asn(site_index: int) -> int:
    """Unique per site (its position in the plan): also the BGP ASN of GCP Cloud Routers."""
    return TGW_ASN_BASE + site_index


# How an infinite time or rate is shown, in reports and in `gpudr:required-mbps`: no finite
# value exists (no bandwidth moves a checkpoint in zero seconds), which is not the same as "no
# guarantee" (a mechanism without SLA).
UNBOUNDED = "unbounded"
