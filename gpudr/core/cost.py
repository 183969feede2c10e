"""The cost engine: one rule per priced thing, every line quantity x unit price, every price with
its source.

Prices come from `gpudr/core/data/prices.yaml` (dated list prices in a reference region). What
is deployed, and how much of it, is the caller's: the plan prices a month of the DR posture and
of the primary's own capacity (`gpudr.core.design`), a drill prices an hour of what it runs
(`gpudr.build.drill`), both through `RULES` and `price`. A price missing from prices.yaml is
listed as unpriced, never invented.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpudr.core import reference
from gpudr.core.enums import Cloud, Mechanism, cloudwatch_retention_days

HOURS_PER_MONTH = 730.0  # the month AWS, GCP and Azure price hourly resources with
DAYS_PER_MONTH = 365.0 / 12.0
SECONDS_PER_MONTH = DAYS_PER_MONTH * 86400
GB = 1e9

ANY = "*"  # a rule's price path for every cloud


@dataclass(frozen=True)
class Rule:
    """One priced thing: its category, its billing unit, where its price is in prices.yaml per
    cloud (a path whose `{field}` slots the usage fills in), and how its cost line is named."""

    category: str  # gpu, control-plane, storage, replication, network, keys, monitoring, logging
    unit: str
    price: Mapping[str, tuple[str, ...]]  # cloud (or ANY) -> path under that cloud
    item: str  # the line's name, with `{field}` slots


RULES: dict[str, Rule] = {
    # Every site
    # A public IPv4 address billed by the hour: a NAT's (AWS Elastic IP, GCP NAT IP), a VPN's
    # tunnel endpoints (AWS) or gateway instances (Azure), an ExpressRoute gateway's (Azure).
    "public-ipv4": Rule(
        "network",
        "IP-hour",
        {
            Cloud.AWS: ("public_ipv4_hour",),
            Cloud.GCP: ("external_ip_hour",),
            Cloud.AZURE: ("public_ip_hour",),
        },
        "public IPv4 addresses ({what})",
    ),
    "data-key": Rule(
        "keys",
        "key-month",
        {
            Cloud.AWS: ("kms_key_month",),
            Cloud.GCP: ("kms_key_version_month",),
            Cloud.AZURE: ("keyvault_key_month",),
        },
        "data key",
    ),
    # One NAT per site for node egress (Azure nodes egress through the cluster's load balancer).
    "nat-gateway": Rule(
        "network",
        "gateway-hour",
        {Cloud.AWS: ("nat_gateway_hour",), Cloud.GCP: ("cloud_nat_gateway_hour",)},
        "NAT gateway",
    ),
    # GPU clusters
    "control-plane": Rule(
        "control-plane",
        "cluster-hour",
        {
            Cloud.AWS: ("eks_cluster_hour",),
            Cloud.GCP: ("gke_cluster_hour",),
            Cloud.AZURE: ("aks_cluster_hour",),
        },
        "cluster {cluster}",
    ),
    # Every AKS cluster runs a system pool for its add-ons (components/azure/gpu_cluster.py).
    "aks-system-pool": Rule(
        "control-plane",
        "node-hour",
        {Cloud.AZURE: ("instance_hour", "{vm_size}")},
        "cluster {cluster}: AKS system pool ({vm_size})",
    ),
    "gpu-nodes": Rule(
        "gpu",
        "node-hour",
        {ANY: ("instance_hour", "{instance_type}")},
        "{pool}: {instance_type} {what}",
    ),
    # Dual-written checkpoints slow the training that writes them (a step waits for the second
    # copy): that share of the primary training cluster's node-hours, at the primary's price.
    "dual-write-slowdown": Rule(
        "gpu",
        "node-hour",
        {ANY: ("instance_hour", "{instance_type}")},
        "{pool}: {instance_type} training {share} slower with dual-written checkpoints",
    ),
    # Data
    "storage": Rule(
        "storage",
        "GB-month",
        {ANY: ("storage_gb_month", "{storage_class}")},
        "{what} ({storage_class})",
    ),
    "transfer": Rule(
        "replication",
        "GB",
        {ANY: ("transfer_gb", "{route}")},
        "{data_class} transfer {src} -> {dst}",
    ),
    "dx-transfer-out": Rule(
        "replication",
        "GB",
        {Cloud.AWS: ("dx_transfer_out_gb",)},
        "{data_class} transfer out over Direct Connect",
    ),
    # Each mechanism's own per-GB fee, charged by the cloud that runs it (MECHANISM_FEE).
    "s3-rtc-fee": Rule(
        "replication", "GB", {Cloud.AWS: ("s3_rtc_gb",)}, "{data_class} crr-rtc fee"
    ),
    "turbo-replication-fee": Rule(
        "replication", "GB", {Cloud.GCP: ("turbo_replication_gb",)}, "{data_class} gcs-turbo fee"
    ),
    "dual-region-replication-fee": Rule(
        "replication",
        "GB",
        {Cloud.GCP: ("dual_region_replication_gb",)},
        "{data_class} gcs-dual-region fee",
    ),
    "storage-transfer-fee": Rule(
        "replication", "GB", {Cloud.GCP: ("storage_transfer_service_gb",)}, "{data_class} sts fee"
    ),
    "datasync-fee": Rule(
        "replication", "GB", {Cloud.AWS: ("datasync_gb", "enhanced")}, "{data_class} datasync fee"
    ),
    # From on premises through agents: Enhanced mode for NFS, Basic for object stores and HDFS
    # (design.datasync_mode).
    "datasync-agent-fee": Rule(
        "replication",
        "GB",
        {Cloud.AWS: ("datasync_gb", "{mode}")},
        "{data_class} DataSync fee ({mode} mode, agents on premises)",
    ),
    # From on premises through a Storage Transfer agent pool (agentless transfers are free).
    "sts-agent-fee": Rule(
        "replication",
        "GB",
        {Cloud.GCP: ("storage_transfer_agent_gb",)},
        "{data_class} Storage Transfer fee (agents on premises)",
    ),
    # Azure Storage Mover from on premises: free of charge (its billing page); the Blob write
    # transactions its jobs make on the replica account are not priced (prices.yaml missing).
    "storage-mover-fee": Rule(
        "replication",
        "GB",
        {Cloud.AZURE: ("storage_mover_gb",)},
        "{data_class} Storage Mover fee (agents on premises; its Blob writes not priced)",
    ),
    # AzCopy jobs at an Azure DR site: the Container Apps job's replicas bill per vCPU-second
    # and GiB-second allocated while a run lasts (Consumption plan), and every block the Blob
    # service writes from its S3 URL is a write transaction on the replica account. Neither
    # price was found in a source gpudr can cite (prices.yaml missing): listed as unpriced.
    "azcopy-job-vcpu": Rule(
        "replication",
        "vCPU-second",
        {Cloud.AZURE: ("container_apps_vcpu_second",)},
        "{data_class} AzCopy job runs, vCPU (every {every})",
    ),
    "azcopy-job-memory": Rule(
        "replication",
        "GiB-second",
        {Cloud.AZURE: ("container_apps_gib_second",)},
        "{data_class} AzCopy job runs, memory (every {every})",
    ),
    "azcopy-blob-writes": Rule(
        "replication",
        "GB",
        {Cloud.AZURE: ("blob_write_operations_gb",)},
        "{data_class} AzCopy block writes into the replica (Put Block From URL)",
    ),
    # Enhanced-mode DataSync bills every task execution.
    "datasync-executions": Rule(
        "replication",
        "execution",
        {Cloud.AWS: ("datasync_task_execution",)},
        "{data_class} DataSync executions (every {every})",
    ),
    # Each S3 replication rule publishes four CloudWatch metrics (latency, bytes and operations
    # pending, operations failed), billed as custom metrics, and gpudr alarms on two.
    "replication-metrics": Rule(
        "monitoring",
        "metric-month",
        {Cloud.AWS: ("s3_replication_metrics_month",)},
        "{data_class} replication metrics",
    ),
    "replication-alarms": Rule(
        "monitoring",
        "alarm-month",
        {Cloud.AWS: ("cloudwatch_alarm_month",)},
        "{data_class} replication alarms",
    ),
    # Dual writes into S3 across the DR link
    "endpoint-processing": Rule(
        "network",
        "GB",
        {Cloud.AWS: ("vpce_interface_processed_gb",)},
        "{data_class} dual writes through the interface endpoint",
    ),
    "tgw-processing": Rule(
        "network",
        "GB",
        {Cloud.AWS: ("tgw_processed_gb",)},
        "{data_class} dual writes through the transit gateway",
    ),
    # The receiving site's transit gateway bills what arrives from Direct Connect or a VPN.
    "tgw-processing-in": Rule(
        "network",
        "GB",
        {Cloud.AWS: ("tgw_processed_gb",)},
        "{data_class} dual writes into the transit gateway from {link}",
    ),
    "endpoint-hours": Rule(
        "network",
        "endpoint-AZ-hour",
        {Cloud.AWS: ("vpce_interface_az_hour",)},
        "S3 interface endpoint for dual writes ({azs} AZs)",
    ),
    # The DataSync interface endpoint on-premises agents reach over the private link.
    "datasync-endpoint-hours": Rule(
        "network",
        "endpoint-AZ-hour",
        {Cloud.AWS: ("vpce_interface_az_hour",)},
        "DataSync interface endpoint for the on-premises agents ({azs} AZs)",
    ),
    # The endpoint carries only the agents' control traffic: the data goes to the task's
    # network interfaces in the DR VPC (DataSync, "Network interfaces for transfers" and its
    # Direct Connect architectures), so it is billed where it enters the VPC: the transit
    # gateway the Direct Connect gateway or the VPN is attached to processes every GB.
    "tgw-processing-onprem": Rule(
        "network",
        "GB",
        {Cloud.AWS: ("tgw_processed_gb",)},
        "{data_class} from on premises into the transit gateway over {link}",
    ),
    # Links
    "tgw-attachments": Rule(
        "network",
        "attachment-hour",
        {Cloud.AWS: ("tgw_attachment_hour",)},
        "transit gateway attachments ({what})",
    ),
    "dx-ports": Rule(
        "network",
        "port-hour",
        {Cloud.AWS: ("dx_port_hour", "{port_gbps}Gbps")},
        "Direct Connect {ports} x {port_gbps} Gbps ports",
    ),
    # An on-premises site's Dedicated Interconnect circuits (the DR stack orders them) and the
    # VLAN attachments on them or on a partner's (unpriced: prices.yaml missing).
    "interconnect-circuits": Rule(
        "network",
        "circuit-hour",
        {Cloud.GCP: ("interconnect_attachment_hour", "{port_gbps}G")},
        "Dedicated Interconnect {ports} x {port_gbps} Gbps circuits",
    ),
    # Google's end of a Cross-Cloud Interconnect, per connection-hour by speed, and what
    # leaves GCP over an Interconnect (both unpriced: prices.yaml missing).
    "cci-connections": Rule(
        "network",
        "connection-hour",
        {Cloud.GCP: ("cci_port_hour", "{port_gbps}G")},
        "Cross-Cloud Interconnect {ports} x {port_gbps} Gbps connections",
    ),
    "interconnect-egress": Rule(
        "replication",
        "GB",
        {Cloud.GCP: ("interconnect_egress_gb",)},
        "{data_class} transfer out over Cross-Cloud Interconnect",
    ),
    "interconnect-vlan-attachments": Rule(
        "network",
        "attachment-hour",
        {Cloud.GCP: ("interconnect_vlan_attachment_hour",)},
        "Interconnect VLAN attachments ({attachments} x {bandwidth})",
    ),
    # An on-premises site's ExpressRoute into Azure: the metered circuit per month at its
    # bandwidth, and the gateway per hour (prices.yaml `missing` says why both are unpriced).
    "expressroute-circuit": Rule(
        "network",
        "circuit-month",
        {Cloud.AZURE: ("expressroute_circuit_month", "{mbps}Mbps")},
        "ExpressRoute circuit, {mbps} Mbps metered",
    ),
    "expressroute-gateway-hours": Rule(
        "network",
        "gateway-hour",
        {Cloud.AZURE: ("expressroute_gateway_hour", "{sku}")},
        "ExpressRoute gateway {sku}",
    ),
    # The private path of an on-premises site's uploads into Azure (components/azure/
    # private_blob.py): endpoint-hours, the GB they carry, the zone answering for them, the
    # resolver on-premises DNS asks, and the Logic Apps that start the jobs (the last three
    # unpriced: prices.yaml missing).
    "private-endpoint-hours": Rule(
        "network",
        "endpoint-hour",
        {Cloud.AZURE: ("private_endpoint_hour",)},
        "Blob private endpoints ({endpoints})",
    ),
    "private-endpoint-gb": Rule(
        "network",
        "GB",
        {Cloud.AZURE: ("private_endpoint_gb",)},
        "{data_class} uploads through its private endpoint",
    ),
    # The privatelink zone the private endpoints' records live in, per zone-month, with the
    # queries it answers (unpriced: prices.yaml missing).
    "private-dns-zone": Rule(
        "network",
        "zone-month",
        {Cloud.AZURE: ("private_dns_zone_month",)},
        "Blob private DNS zone and the queries it answers",
    ),
    "dns-resolver-inbound-hours": Rule(
        "network",
        "endpoint-hour",
        {Cloud.AZURE: ("dns_resolver_inbound_endpoint_hour",)},
        "DNS Private Resolver inbound endpoint (on-premises DNS forwards to it)",
    ),
    "mover-schedule-actions": Rule(
        "replication",
        "action",
        {Cloud.AZURE: ("logic_app_action",)},
        "{data_class} job starts (Logic App, every {every})",
    ),
    "ha-vpn-tunnels": Rule(
        "network", "tunnel-hour", {Cloud.GCP: ("ha_vpn_tunnel_hour",)}, "HA VPN tunnels ({tunnels})"
    ),
    "aws-vpn-connections": Rule(
        "network",
        "connection-hour",
        {Cloud.AWS: ("vpn_connection_hour",)},
        "AWS VPN connections ({connections})",
    ),
    "azure-vpn-gateway": Rule(
        "network",
        "gateway-hour",
        {Cloud.AZURE: ("vpn_gateway_hour", "{sku}")},
        "Azure VPN gateway {sku} (active-active)",
    ),
    # Logs every site keeps (docs/security.md): volumes are the plan's `logging:` figures.
    "log-bucket-storage": Rule(
        "logging",
        "GB-month",
        {Cloud.AWS: ("storage_gb_month", "STANDARD")},
        "access and flow logs kept {days} days in the log bucket",
    ),
    "flow-log-delivery": Rule(
        "logging", "GB", {Cloud.AWS: ("vended_logs_s3_gb",)}, "VPC flow logs delivered to S3"
    ),
    "flow-log-ingest": Rule(
        "logging", "GB", {Cloud.GCP: ("flow_logs_gb",)}, "subnet flow logs in Cloud Logging"
    ),
    # Google bills flow-log generation on top ("network telemetry"); its price has no citable
    # source yet, so the line is listed as unpriced rather than left out.
    "flow-log-generation": Rule(
        "logging", "GB", {Cloud.GCP: ("network_telemetry_gb",)}, "subnet flow logs generated"
    ),
    "cluster-log-ingest": Rule(
        "logging",
        "GB",
        {Cloud.AWS: ("cloudwatch_logs_ingest_gb",)},
        "control-plane logs of {clusters} cluster(s)",
    ),
    "cluster-log-storage": Rule(
        "logging",
        "GB-month",
        {Cloud.AWS: ("cloudwatch_logs_storage_gb_month",)},
        "control-plane logs of {clusters} cluster(s) kept {days} days",
    ),
    "log-ingest": Rule(
        "logging",
        "GB",
        {
            Cloud.GCP: ("logging_ingest_gb",),
            Cloud.AZURE: ("log_analytics_ingest_gb",),
        },
        "{what} ingested",
    ),
    "log-retention": Rule(
        "logging",
        "GB-month",
        {
            Cloud.GCP: ("logging_retention_gb_month",),
            Cloud.AZURE: ("log_analytics_retention_gb_month",),
        },
        "logs kept {days} days (beyond the {free_days} included)",
    ),
}
# Days of retention a log sink includes in its ingestion price (GCP log buckets: 30; Log
# Analytics: 31); AWS bills storage from the first day.
LOG_FREE_DAYS: dict[str, int] = {Cloud.AWS: 0, Cloud.GCP: 30, Cloud.AZURE: 31}

# Per-GB price of moving a class's bytes out of the primary's cloud, by (primary, DR) cloud.
TRANSFER_ROUTE: dict[tuple[str, str], str] = {
    (Cloud.AWS, Cloud.AWS): "inter_region",
    (Cloud.GCP, Cloud.GCP): "inter_region_same_continent",
    (Cloud.AZURE, Cloud.AZURE): "inter_region",
    (Cloud.AWS, Cloud.GCP): "internet_egress",
    (Cloud.GCP, Cloud.AWS): "internet_egress",
    (Cloud.AZURE, Cloud.GCP): "internet_egress",
    # AzCopy's service-to-service copy: the Blob service fetches each object from S3's public
    # endpoint, so the bytes leave AWS as data transfer out to the internet.
    (Cloud.AWS, Cloud.AZURE): "internet_egress",
}
# Extra per-GB fee of a mechanism: the cloud that runs it and its rule.
MECHANISM_FEE: dict[str, tuple[str, str]] = {
    Mechanism.CRR_RTC: (Cloud.AWS, "s3-rtc-fee"),
    Mechanism.GCS_TURBO: (Cloud.GCP, "turbo-replication-fee"),
    Mechanism.GCS_DUAL_REGION: (Cloud.GCP, "dual-region-replication-fee"),
    Mechanism.STS: (Cloud.GCP, "storage-transfer-fee"),
    Mechanism.DATASYNC: (Cloud.AWS, "datasync-fee"),
}


@dataclass(frozen=True)
class Usage:
    """How much of one priced thing a site uses: `quantity` billing units (per month for the
    plan, per hour for a drill), with the fields its rule's price path and name need."""

    rule: str
    cloud: str
    site: str
    quantity: float
    dr: bool  # part of the DR posture (False: the primary's own running cost)
    fields: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CostLine:
    site: str
    category: str
    item: str
    quantity: float
    unit: str
    unit_usd: float
    source: str
    dr: bool
    # A volume-tiered price: the bands and the volume they were applied to (unit_usd is then
    # the blended rate of that volume); empty for a flat price.
    tiers: str = ""

    @property
    def amount_usd(self) -> float:
        """quantity x unit price: per month for the plan's lines, per hour for a drill's."""
        return self.quantity * self.unit_usd

    @property
    def monthly_usd(self) -> float:
        return self.amount_usd


def price_path(usage: Usage) -> tuple[str, ...]:
    """Where the usage's price is in prices.yaml, under its cloud."""
    rule = RULES[usage.rule]
    template = rule.price.get(usage.cloud) or rule.price.get(ANY)
    if template is None:
        raise reference.ReferenceError(f"{usage.rule} is not priced on {usage.cloud}")
    return tuple(part.format(**usage.fields) for part in template)


def item(usage: Usage) -> str:
    return RULES[usage.rule].item.format(**usage.fields)


# Usages whose volumes share one price's tiers: a cloud bills a band per account and region (per
# site here, the high side when one account holds several sites), per priced thing.
VolumeKey = tuple[str, str, tuple[str, ...]]


def volume_key(usage: Usage) -> VolumeKey:
    return (usage.cloud, usage.site, price_path(usage))


def tiered_usd(tiers: Sequence[reference.PriceTier], quantity: float) -> float:
    """What `quantity` units cost when each band of the month's volume bills at its own rate:

    amount = sum over bands of (the part of the quantity inside the band) x (the band's rate)

    e.g. 73,000,000 GB through interface endpoints: 1,000,000 x $0.01 + 4,000,000 x $0.006 +
    68,000,000 x $0.004 = $306,000 (not 73,000,000 x $0.01 = $730,000)."""
    amount, floor = 0.0, 0.0
    for tier in tiers:
        top = quantity if tier.up_to is None else min(quantity, tier.up_to)
        amount += max(0.0, top - floor) * tier.usd
        if tier.up_to is None or quantity <= tier.up_to:
            break
        floor = tier.up_to
    return amount


def _tiered(unit_price: reference.Price, volume: float, site: str, unit: str) -> tuple[float, str]:
    """The blended rate of `volume` on a tiered price, and the line's account of it."""
    tiers = unit_price.tiers
    rate = tiered_usd(tiers, volume) / volume if volume > 0 else tiers[0].usd
    bands = ", ".join(
        f"${t.usd:.6g} above" if t.up_to is None else f"${t.usd:.6g} to {t.up_to:,.0f} {unit}"
        for t in tiers
    )
    cited = f"; bands from {unit_price.tiers_citation}" if unit_price.tiers_citation else ""
    return rate, f"volume tiers on {site}'s {volume:,.0f} {unit}: {bands}{cited}"


def price(usage: Usage, volumes: Mapping[VolumeKey, float] | None = None) -> CostLine | str:
    """The usage's cost line, or why it could not be priced (for the unpriced list). A tiered
    price bills the blended rate of the volume all of the site's usages of it add up to
    (`volumes`, from `report`), or of this usage's own quantity."""
    rule = RULES[usage.rule]
    try:
        path = price_path(usage)
        unit_price = reference.price(usage.cloud, *path)
    except reference.ReferenceError:
        where = ".".join((usage.cloud, *_safe_path(usage)))
        return f"{usage.site}: {item(usage)} ({where} is not in prices.yaml)"
    unit_usd, tiers = unit_price.usd, ""
    if unit_price.tiers:
        volume = (volumes or {}).get(volume_key(usage), usage.quantity)
        unit_usd, tiers = _tiered(unit_price, volume, usage.site, rule.unit)
    return CostLine(
        usage.site,
        rule.category,
        item(usage),
        usage.quantity,
        rule.unit,
        unit_usd,
        unit_price.citation,
        usage.dr,
        tiers,
    )


def _safe_path(usage: Usage) -> tuple[str, ...]:
    try:
        return price_path(usage)
    except reference.ReferenceError:
        return (usage.rule,)


@dataclass(frozen=True)
class CostReport:
    lines: tuple[CostLine, ...]
    unpriced: tuple[str, ...] = ()  # items whose price is missing from prices.yaml

    def total(self, dr_only: bool = False) -> float:
        return sum((x.monthly_usd for x in self.lines if x.dr or not dr_only), 0.0)

    def by_site(self) -> dict[str, dict[str, float]]:
        sites: dict[str, dict[str, float]] = defaultdict(lambda: {"dr": 0.0, "primary": 0.0})
        for x in self.lines:
            sites[x.site]["dr" if x.dr else "primary"] += x.monthly_usd
        return dict(sites)

    def by_category(self, dr_only: bool = True) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for x in self.lines:
            if x.dr or not dr_only:
                out[x.category] += x.monthly_usd
        return dict(out)


# --- what a site runs, in the quantities of `hours` hours (a month for the plan, 1 for a drill) --


def gpu_usage(
    cloud: str,
    site: str,
    *,
    pool: str,
    instance_type: str,
    nodes: float,
    what: str,
    dr: bool,
    hours: float = HOURS_PER_MONTH,
) -> Usage:
    fields = {"pool": pool, "instance_type": instance_type, "what": what}
    return Usage("gpu-nodes", cloud, site, nodes * hours, dr, fields)


def cluster_usages(
    cloud: str, site: str, cluster: str, *, dr: bool, hours: float = HOURS_PER_MONTH
) -> list[Usage]:
    """A standing cluster: its control plane, and on Azure its system pool."""
    out = [Usage("control-plane", cloud, site, hours, dr, {"cluster": cluster})]
    if cloud == Cloud.AZURE:
        size, nodes = reference.aks_system_pool()
        fields = {"cluster": cluster, "vm_size": size}
        out.append(Usage("aks-system-pool", cloud, site, nodes * hours, dr, fields))
    return out


def nat_usages(cloud: str, site: str, *, dr: bool, hours: float = HOURS_PER_MONTH) -> list[Usage]:
    """One NAT per site for node egress, with its public address (an Elastic IP on AWS; on GCP
    the one address AUTO_ONLY allocates for a few VMs, more with more). Azure nodes egress
    through the cluster's load balancer: no NAT."""
    if cloud == Cloud.AZURE:
        return []
    ip = Usage("public-ipv4", cloud, site, hours, dr, {"what": "NAT gateway"})
    return [Usage("nat-gateway", cloud, site, hours, dr), ip]


@dataclass(frozen=True)
class LogVolume:
    """A site's monthly log volume in GB (the plan's `logging:` figures) and how long it keeps
    them: a month's logs are stored for `retention_days`, so a site holds `retention_days /
    DAYS_PER_MONTH` months of them at any time."""

    access_gb: float  # the data buckets' access logs
    flow_gb: float  # the network's flow logs (none built on Azure)
    cluster_gb: float  # per standing cluster: control-plane logs
    retention_days: int


def log_usages(cloud: str, site: str, volume: LogVolume, *, clusters: int, dr: bool) -> list[Usage]:
    """What a site's logs cost a month: on AWS the log bucket (access and flow logs), flow-log
    delivery and CloudWatch for the control planes; on GCP Cloud Logging ingestion (flow logs
    at the network-telemetry rate) and retention past 30 days; on Azure Log Analytics
    ingestion and retention past 31 days (Azure flow logs are not built: docs/security.md)."""
    days = volume.retention_days
    months = days / DAYS_PER_MONTH
    cluster_gb = clusters * volume.cluster_gb
    if cloud == Cloud.AWS:
        out = [
            Usage(
                "log-bucket-storage",
                cloud,
                site,
                (volume.access_gb + volume.flow_gb) * months,
                dr,
                {"days": days},
            ),
            Usage("flow-log-delivery", cloud, site, volume.flow_gb, dr),
        ]
        if clusters:
            # CloudWatch keeps them for the next period it accepts (components/aws/gpu_cluster.py).
            kept = cloudwatch_retention_days(days)
            fields = {"clusters": clusters, "days": kept}
            out.append(Usage("cluster-log-ingest", cloud, site, cluster_gb, dr, fields))
            stored = cluster_gb * kept / DAYS_PER_MONTH
            out.append(Usage("cluster-log-storage", cloud, site, stored, dr, fields))
        return out
    flow_gb = volume.flow_gb if cloud == Cloud.GCP else 0.0
    ingested = volume.access_gb + cluster_gb
    what = "access logs" + (f" and control-plane logs of {clusters} cluster(s)" if clusters else "")
    out = [Usage("log-ingest", cloud, site, ingested, dr, {"what": what})]
    if flow_gb:
        out.append(Usage("flow-log-ingest", cloud, site, flow_gb, dr))
        out.append(Usage("flow-log-generation", cloud, site, flow_gb, dr))
    free_days = LOG_FREE_DAYS[cloud]
    kept_months = max(0.0, days - free_days) / DAYS_PER_MONTH
    if kept_months:
        fields = {"days": days, "free_days": free_days}
        out.append(
            Usage("log-retention", cloud, site, (ingested + flow_gb) * kept_months, dr, fields)
        )
    return out


def volumes(usages: Iterable[Usage]) -> dict[VolumeKey, float]:
    """Each site's total quantity of each priced thing: what its volume tiers apply to."""
    out: dict[VolumeKey, float] = defaultdict(float)
    for usage in usages:
        try:
            out[volume_key(usage)] += usage.quantity
        except (reference.ReferenceError, KeyError):
            continue  # unpriced: listed as such by `price`
    return dict(out)


def report(usages: Iterable[Usage]) -> CostReport:
    """Every usage priced: its line, or its entry in the unpriced list (each listed once)."""
    lines: list[CostLine] = []
    unpriced: list[str] = []
    listed = list(usages)
    totals = volumes(listed)
    for usage in listed:
        priced = price(usage, totals)
        if isinstance(priced, CostLine):
            lines.append(priced)
        elif priced not in unpriced:
            unpriced.append(priced)
    return CostReport(tuple(lines), tuple(unpriced))


def total(usages: Iterable[Usage]) -> float:
    """The priced usages' sum (what an alternative would cost; unpriced items add nothing)."""
    return report(usages).total()
