"""The plan spec: one YAML file describing one protected system, parsed and validated.

`load_plan(path)` returns a frozen `Plan` or raises `PlanError` carrying one `FieldError` per
problem found, each naming the field path, the bad value and what is allowed. Validation does not
stop at the first problem: a user fixes a spec in one pass.

Defaults for RPO/RTO by class come from `gpudr/core/data/defaults.yaml` (the product brief).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml

from gpudr.core import reference, yamlsafe
from gpudr.core.cost import SECONDS_PER_MONTH
from gpudr.core.cron import parse_schedule
from gpudr.core.enums import (
    AZURE_RESERVED_ASNS,
    DR_PATTERNS,
    DRILL_MAX_TTL_S,
    DUAL_REGION,
    DX_GATEWAY_ASN,
    MICROSOFT_ASN,
    NFS_STORAGE_KINDS,
    ONE_AGENT_PER_JOB,
    ONPREM,
    Cloud,
    DataClass,
    GpuInterconnect,
    LinkKind,
    Mechanism,
    OnPremLinkKind,
    Pattern,
    SiteRole,
    StorageKind,
    WeightsLock,
    transit_gateway_asn,
)
from gpudr.core.units import (
    UnitError,
    fmt_duration,
    parse_duration,
    parse_rate_gbps,
    parse_size,
    show,
)

# `auto` in the spec: the planner chooses (a pattern, a mechanism); parsed to None.
AUTO = "auto"
SUPPORTED_CLOUDS = tuple(Cloud)
SITE_KINDS = (*SUPPORTED_CLOUDS, ONPREM)  # what a site's `cloud:` may say
REPLICATION_CHOICES = (AUTO, *(m for m in Mechanism if m is not Mechanism.NONE))
PATTERN_CHOICES = (AUTO, *DR_PATTERNS)
# (primary cloud, DR cloud) -> the managed mechanisms that can replicate between them, and the
# links that can join them; the first link is the default. Pairs not listed are refused.
PAIRS: dict[tuple[Cloud, Cloud], tuple[tuple[Mechanism, ...], tuple[LinkKind, ...]]] = {
    (Cloud.AWS, Cloud.AWS): (
        (Mechanism.CRR_RTC, Mechanism.CRR),
        (LinkKind.TGW_PEERING, LinkKind.DIRECT_CONNECT),
    ),
    (Cloud.GCP, Cloud.GCP): (
        (Mechanism.GCS_TURBO, Mechanism.GCS_DUAL_REGION, Mechanism.STS),
        (LinkKind.VPC_PEERING,),
    ),
    (Cloud.AZURE, Cloud.AZURE): ((Mechanism.AZURE_OR,), (LinkKind.VNET_PEERING,)),
    (Cloud.AWS, Cloud.GCP): (
        (Mechanism.STS,),
        (LinkKind.HA_VPN, LinkKind.CROSS_CLOUD_INTERCONNECT),
    ),
    (Cloud.GCP, Cloud.AWS): (
        (Mechanism.DATASYNC,),
        (LinkKind.HA_VPN, LinkKind.CROSS_CLOUD_INTERCONNECT),
    ),
    (Cloud.AZURE, Cloud.GCP): ((Mechanism.STS,), (LinkKind.VPN,)),
    (Cloud.AWS, Cloud.AZURE): ((Mechanism.AZCOPY,), (LinkKind.VPN,)),
}
# The pairs whose default link has a dedicated alternative: a DR site naming no link kind gets
# the default while it carries the link's need with headroom, else this (design.link_kind).
DEDICATED_LINKS: dict[tuple[Cloud, Cloud], LinkKind] = {
    (Cloud.AWS, Cloud.GCP): LinkKind.CROSS_CLOUD_INTERCONNECT,
    (Cloud.GCP, Cloud.AWS): LinkKind.CROSS_CLOUD_INTERCONNECT,
}
# Pairs refused for a reason more specific than "no managed service pulls that way".
REFUSED_PAIRS = {
    (Cloud.AZURE, Cloud.AWS): (
        "DataSync reads Azure Blob only with a SAS token: an account SAS needs shared-key "
        "access, which gpudr's storage accounts disable, and a user-delegation SAS expires "
        "within 7 days, so replication would silently stop; protect this azure site from gcp "
        "(Storage Transfer Service with a federated identity, no secret) instead"
    ),
    (Cloud.GCP, Cloud.AZURE): (
        "nothing that copies into Blob storage reads Cloud Storage without a long-lived Google "
        "key: AzCopy presigns each Cloud Storage URL with a service account's private key (its "
        "GOOGLE_APPLICATION_CREDENTIALS must be a key file), Azure Data Factory reads Cloud "
        "Storage with an HMAC key, and Storage Mover's cloud-to-cloud copy reads only Amazon S3; "
        "protect this gcp site from another gcp region or from aws instead"
    ),
}
# Continents for GCS custom dual-regions: both regions must be on the same one.
GCS_CONTINENT = {"us": "US", "northamerica": "US", "europe": "EU", "asia": "ASIA"}
# Identifiers go into resource names, ARNs and file names: matched whole (`fullmatch`, so no
# trailing newline slips past `$`) with ASCII classes (`\d` would admit Arabic-Indic digits).
NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,22}[a-z0-9]")
ACCOUNT_RE = re.compile(r"[0-9]{12}")
PROJECT_RE = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
# A Direct Connect location code as AWS lists them (EqDC2, CSOF, TCSH, EIsevernaya): letters and
# digits, nothing a shell or a template could read as syntax.
LOCATION_RE = re.compile(r"[A-Za-z0-9]{2,32}")
# Upper bounds of open-ended numbers, with the reason shown when one is exceeded: far beyond any
# real plan, they keep every product (bytes a month, dollars) finite.
HEADROOM_MAX = (10.0, "a factor above 10 is over-provisioning, not headroom")
PUBLISHES_MAX = (SECONDS_PER_MONTH, "one publish a second")


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class PlanError(Exception):
    """The spec has problems; `errors` lists every one found."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


@dataclass(frozen=True)
class LinkSpec:
    kind: LinkKind | None  # None: the pair's default link
    # direct-connect: Direct Connect location codes; cross-cloud-interconnect: Google's two
    # Interconnect locations, one per edge availability domain of one metro
    location: str | None = None
    secondary_location: str | None = None
    # cross-cloud-interconnect: the remote location Google lists for AWS there, and the Direct
    # Connect location where AWS's LAGs are ordered and Google cross-connects to them
    remote_location: str | None = None
    aws_location: str | None = None


@dataclass(frozen=True)
class Site:
    name: str
    cloud: Cloud
    region: str
    role: SiteRole
    protects: str | None
    pattern: Pattern | None  # None: auto, the planner chooses per pool
    warm_fraction: float
    reserve_capacity: bool
    account: str | None
    cidr: str
    azs: tuple[str, ...]
    link: LinkSpec | None
    api_public_cidrs: tuple[str, ...]
    project: str | None = None


@dataclass(frozen=True)
class GpuInventory:
    """`gpus:` of an on-premises site: what the cluster runs on, as it is."""

    model: str  # a model of gpudr/core/data/hardware.yaml (h100-sxm, a100-sxm-80gb, ...)
    nodes: int
    gpus_per_node: int
    bare_metal: bool
    interconnect: GpuInterconnect


@dataclass(frozen=True)
class OnPremStorage:
    kind: StorageKind
    endpoint: str  # nfs: host:/export; s3-compatible: https URL; hdfs: host:port


@dataclass(frozen=True)
class Agent:
    """A host on premises that will run a transfer agent (a VM the operator deploys)."""

    name: str
    address: str | None  # None: not given yet (`agents: N`); the checklist asks for it


@dataclass(frozen=True)
class OnPremLink:
    kind: OnPremLinkKind
    port_gbps: float  # per port (per tunnel for a VPN)
    ports: int
    location: str | None  # the provider's location code (Direct Connect: EqFA5)
    bgp_asn: int | None  # your router's ASN
    vlan: int | None  # the 802.1Q tag of the virtual interface
    address: str | None = None  # vpn: your router's public IPv4 address
    provider: str | None = None  # expressroute: the connectivity provider (e.g. Equinix)
    # expressroute: your two /30s for the private peering's primary and secondary BGP sessions
    peering_subnets: tuple[str, ...] = ()
    # interconnect-dedicated: who Google's letters of authorization (LOA-CFAs) name as allowed
    # to order the cross-connects, and where Google sends them and the circuits' notices.
    customer: str | None = None
    noc_email: str | None = None

    @property
    def capacity_gbps(self) -> float:
        return self.port_gbps * self.ports


@dataclass(frozen=True)
class OnPremSite:
    """A primary site in your own data centre (`cloud: onprem`). gpudr deploys nothing there:
    it has no stack; its side of replication and of the link is the runbook's checklist."""

    name: str
    location: str
    gpus: GpuInventory
    storage: OnPremStorage
    agents: tuple[Agent, ...]
    link: OnPremLink
    wan_committed_gbps: float
    cidr: str
    role: SiteRole = SiteRole.PRIMARY

    @property
    def region(self) -> str:
        """Where it is, as notes about "the failed region" name it."""
        return self.location


@dataclass(frozen=True)
class Cluster:
    name: str
    site: str
    gpu: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    efa_interfaces: int
    rto_s: float | None
    pattern: Pattern | None  # None: the DR site's pattern, else auto

    @property
    def pool_name(self) -> str:
        """Its training pool's name, at the primary and at every DR site: the cluster's."""
        return self.name


@dataclass(frozen=True)
class Service:
    name: str
    site: str
    cluster: str
    gpu: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    rpo_s: float | None
    rto_s: float | None
    pattern: Pattern | None  # None: the DR site's pattern, else auto

    @property
    def pool_name(self) -> str:
        """Its GPU pool's name, at the primary and at every DR site: `svc-<name>`."""
        return f"svc-{self.name}"


@dataclass(frozen=True)
class Checkpoints:
    site: str
    size_b: float
    interval_s: float
    keep: int
    dedup_ratio: float
    compression_ratio: float
    archive_after_s: float
    rpo_s: float | None
    rto_s: float | None
    replication: Mechanism | None  # None: auto, the pair's best mechanism
    # The share of training time dual writes cost (defaults.yaml: spec.dual_write_slowdown).
    dual_write_slowdown: float = 0.0


@dataclass(frozen=True)
class Weights:
    site: str
    size_b: float
    retention_s: float
    publish_window_s: float
    publishes_per_month: float
    rpo_s: float | None
    rto_s: float | None
    replication: Mechanism | None  # None: auto, the pair's best mechanism
    # compliance (production) or governance (a trial whose buckets its owner can delete).
    lock: WeightsLock = WeightsLock.COMPLIANCE


@dataclass(frozen=True)
class Refresh:
    """`data.datasets.refresh`: a bulk rewrite that arrives at once (a re-tokenised corpus, a new
    snapshot) and must reach the DR site within the datasets' RPO."""

    size_b: float
    every_s: float


@dataclass(frozen=True)
class Datasets:
    site: str
    size_b: float
    daily_change_b: float  # changes spread over the day, beside any refresh
    rpo_s: float | None
    rto_s: float | None
    replication: Mechanism | None  # None: auto, the pair's best mechanism
    refresh: Refresh | None = None


@dataclass(frozen=True)
class Recovery:
    """RTO model parameters, seconds or Gbps; see gpudr/core/data/defaults.yaml for sources."""

    detection_s: float
    traffic_shift_s: float
    infra_create_s: float
    gpu_node_boot_s: float
    gpu_capacity_wait_s: float
    restart_training_s: float
    restart_service_s: float
    read_gbps_per_node: float
    # The DR storage's read ceiling for every DR site; None: each DR cloud's own
    # (`sizing.default_storage_read_gbps`).
    storage_read_gbps: float | None = None
    overridden: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Quotas:
    s3_rtc_gbps: float
    tgw_peering_gbps: float
    sts_gbps: float
    datasync_gbps: float
    gcs_turbo_gbps: float
    gcs_dual_region_gbps: float
    overridden: frozenset[str] = frozenset()
    datasync_agent_gbps: float = 10.0  # per agent on premises (reference data quotas:)
    sts_agent_gbps: float = 10.0  # per Storage Transfer agent on premises (the same)
    storage_mover_agent_gbps: float = 1.0  # per Azure Storage Mover agent (an assumption)
    azcopy_gbps: float = 10.0  # AzCopy from S3 into an Azure DR site (an assumption)


@dataclass(frozen=True)
class DrillSpec:
    """`drill:` of the plan: how `gpudr drill` sizes a disposable test of a DR site."""

    nodes: int  # GPU nodes per DR pool during a drill
    pools: dict[str, int]  # per-pool override, keyed by DR pool name (`train`, `svc-chat`)
    ttl_s: float  # the drill stack is destroyed by `gpudr drill cleanup` after this
    verify_b: float  # bytes of the latest checkpoint streamed and re-hashed
    # When the generated drills workflow drills each DR site: 5-field cron, UTC (core/cron.py).
    schedule: str
    cidr: str | None = None  # the drill network's range; default: the DR site's own

    def pool_nodes(self, pool: str) -> int:
        return self.pools.get(pool, self.nodes)


@dataclass(frozen=True)
class Logging:
    """`logging:` of the plan: how long every site keeps its access, flow and control-plane
    logs, and the monthly volumes its cost lines assume."""

    retention_s: float
    access_b_month: float  # per site: the data buckets' access logs
    flow_b_month: float  # per site: the network's flow logs
    cluster_b_month: float  # per standing cluster: control-plane logs
    overridden: frozenset[str] = frozenset()

    @property
    def retention_days(self) -> int:
        return int(self.retention_s // 86400)


_LOGGING_KEYS = {
    "retention": "retention_s",
    "access_logs": "access_b_month",
    "flow_logs": "flow_b_month",
    "cluster_logs": "cluster_b_month",
}


def logging_default(name: str) -> float:
    value = reference.defaults()["logging"][name]["value"]
    return parse_size(value) if str(value)[-1] == "B" else parse_duration(value)


def default_logging() -> Logging:
    return Logging(
        retention_s=logging_default("retention"),
        access_b_month=logging_default("access_logs"),
        flow_b_month=logging_default("flow_logs"),
        cluster_b_month=logging_default("cluster_logs"),
    )


def default_drill() -> DrillSpec:
    return DrillSpec(
        nodes=int(drill_default("nodes")),
        pools={},
        ttl_s=drill_default("ttl"),
        verify_b=drill_default("verify"),
        schedule=drill_schedule("schedule"),
    )


def drill_schedule(name: str) -> str:
    """A cron schedule of defaults.yaml's `drill:` (`schedule`, `cleanup_schedule`)."""
    return str(reference.defaults()["drill"][name]["value"])


def drill_default(name: str) -> float:
    value = reference.defaults()["drill"][name]["value"]
    if isinstance(value, str):
        return parse_size(value) if value[-1] == "B" else parse_duration(value)
    return float(value)


@dataclass(frozen=True)
class Plan:
    name: str
    sites: dict[str, Site]
    clusters: dict[str, Cluster]
    services: dict[str, Service]
    checkpoints: Checkpoints | None
    weights: Weights | None
    datasets: Datasets | None
    recovery: Recovery
    quotas: Quotas
    headroom: float
    source: str = ""
    data_site_names: tuple[str, ...] = field(default=())
    drill: DrillSpec = field(default_factory=default_drill)
    logging: Logging = field(default_factory=default_logging)
    # Primary sites on premises; never in `sites` (they have no stack, no cloud, no list price).
    onprem: dict[str, OnPremSite] = field(default_factory=dict)

    def primaries(self) -> list[Site]:
        return [s for s in self.sites.values() if s.role == SiteRole.PRIMARY]

    def dr_sites_for(self, primary: str) -> list[Site]:
        return [s for s in self.sites.values() if s.role == SiteRole.DR and s.protects == primary]

    def data_spec(self, data_class: str) -> Checkpoints | Weights | Datasets | None:
        """The plan's spec of one data class, or None when it does not protect that class."""
        return {
            DataClass.CHECKPOINTS: self.checkpoints,
            DataClass.WEIGHTS: self.weights,
            DataClass.DATASETS: self.datasets,
        }[DataClass(data_class)]

    def pairs(self) -> list[tuple[Site, Site]]:
        """(primary, dr) for every DR site protecting a cloud site, in spec order."""
        return [
            (self.sites[s.protects], s)
            for s in self.sites.values()
            if s.role == SiteRole.DR and s.protects in self.sites
        ]

    def onprem_pairs(self) -> list[tuple[OnPremSite, Site]]:
        """(on-premises primary, dr) for every DR site protecting an on-premises site."""
        return [
            (self.onprem[s.protects], s)
            for s in self.sites.values()
            if s.role == SiteRole.DR and s.protects in self.onprem
        ]

    def primary_of(self, name: str) -> Site | OnPremSite:
        """A primary site by name, in the cloud or on premises."""
        return self.onprem.get(name) or self.sites[name]


T = TypeVar("T")
C = TypeVar("C", bound=str)

_RECOVERY_KEYS = {
    "detection": "detection_s",
    "traffic_shift": "traffic_shift_s",
    "infra_create": "infra_create_s",
    "gpu_node_boot": "gpu_node_boot_s",
    "gpu_capacity_wait": "gpu_capacity_wait_s",
    "restart_training": "restart_training_s",
    "restart_service": "restart_service_s",
    "read_gbps_per_node": "read_gbps_per_node",
    "storage_read_gbps": "storage_read_gbps",
}
# Rates, not durations; the storage read ceiling has a default per DR cloud, not one.
_RECOVERY_RATES = ("read_gbps_per_node", "storage_read_gbps")


class _Reader:
    """Walks the raw YAML, converting values and collecting errors with their field paths."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        # On-premises primaries, once parsed: workloads and DR sites may name them.
        self.onprem: dict[str, OnPremSite] = {}

    def error(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path.lstrip("."), message))

    def mapping(self, value: Any, path: str, allowed: Iterable[str]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.error(path, f"{_show(value)} is not a mapping")
            return {}
        allowed_set = list(allowed)
        for key in value:
            if key not in allowed_set:
                self.error(
                    f"{path}.{_key(key)}" if path else _key(key),
                    f"unknown field; allowed: {', '.join(allowed_set)}",
                )
        return value

    def convert(
        self,
        raw: dict[str, Any],
        key: str,
        path: str,
        fn: Callable[[Any], T],
        default: T | None = None,
        *,
        required: bool = False,
    ) -> T | None:
        if key not in raw or raw[key] is None:
            if required:
                self.error(f"{path}.{key}", "is required")
            return default
        try:
            return fn(raw[key])
        except (UnitError, ValueError, TypeError) as exc:
            self.error(f"{path}.{key}", str(exc))
            return default

    def target(
        self, raw: dict[str, Any], key: str, path: str, default: float | None
    ) -> float | None:
        """A recovery target: a duration, or `none` for no target; absent means `default`."""
        if key not in raw or raw[key] is None:
            return default
        try:
            return _target(raw[key])
        except UnitError as exc:
            self.error(f"{path}.{key}", str(exc))
            return default

    def choice(
        self, raw: dict[str, Any], key: str, path: str, choices: Sequence[C], default: C
    ) -> C:
        """One of `choices` (the member itself, for an Enum's), compared as written."""
        value = raw.get(key, default)
        found = next((c for c in choices if c == value), None)
        if found is None:
            self.error(
                f"{path}.{key}",
                f"{_show(value)} is not allowed; use one of {', '.join(map(str, choices))}",
            )
            return default
        return found

    def request(
        self, raw: dict[str, Any], key: str, path: str, choices: Sequence[str]
    ) -> str | None:
        """`auto` (None: the planner chooses) or one of `choices`."""
        found = self.choice(raw, key, path, (AUTO, *choices), AUTO)
        return None if found == AUTO else found


def _show(value: Any) -> str:
    return show(value)


def _key(key: Any) -> str:
    """A mapping key as a field path shows it: on one line, at most 40 characters."""
    text = show(key)[1:-1] if isinstance(key, str) else show(key)
    return text if len(text) <= 40 else text[:37] + "..."


def _target(value: Any) -> float | None:
    """A recovery target: a duration, or `none` for no target."""
    if isinstance(value, str) and value.strip().lower() == "none":
        return None
    return parse_duration(value)


# The most of anything counted in a plan (nodes, checkpoints kept): far beyond any GPU fleet, and
# small enough that counts times prices and sizes stay finite.
MAX_COUNT = 1_000_000


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{_show(value)} is not a whole number of at least 1")
    if value > MAX_COUNT:
        raise ValueError(
            f"{_show(value)} is too large; use a whole number of at most {MAX_COUNT:,}"
        )
    return value


def _finite(value: Any) -> float:
    """A YAML number (`.nan`, `.inf` and `-.inf` refused), else ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{_show(value)} is not a number")
    try:
        number = float(value)
    except OverflowError:  # an integer of more than 308 digits
        raise ValueError(f"{_show(value)} is too large") from None
    if not math.isfinite(number):
        raise ValueError(f"{_show(value)} is not a finite number")
    return number


def _ratio(lo: float, hi: float, hi_open: bool) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        number = _finite(value)
        upper_ok = number < hi if hi_open else number <= hi
        if not (lo <= number and upper_ok):
            bracket = ")" if hi_open else "]"
            raise ValueError(
                f"{_show(value)} is out of range; use a number in [{lo}, {hi}{bracket}"
            )
        return number

    return check


def _at_least(lo: float, hi: float = math.inf, why: str = "") -> Callable[[Any], float]:
    """A finite number in [lo, hi]; `why` says where the upper bound comes from."""

    def check(value: Any) -> float:
        number = _finite(value)
        if number < lo:
            raise ValueError(f"{_show(value)} is not a number of at least {lo:g}")
        if number > hi:
            raise ValueError(f"{_show(value)} is too large; use at most {hi:,.0f} ({why})")
        return number

    return check


def _size(value: Any) -> float:
    size = parse_size(value)
    if size <= 0:
        raise ValueError(f"{_show(value)} must be larger than 0")
    return size


def _name(value: Any) -> str:
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise ValueError(
            f"{_show(value)} is not a valid name; use 2-24 lowercase letters, digits and '-', "
            "starting with a letter"
        )
    return value


def _cidr(value: Any) -> str:
    try:
        net = ipaddress.ip_network(str(value), strict=True)
    except ValueError as exc:
        raise ValueError(f"{_show(value)} is not a CIDR block; use e.g. 10.20.0.0/16") from exc
    if net.version != 4 or not net.is_private or net.prefixlen > 20:
        raise ValueError(f"{_show(value)} must be a private IPv4 block of /20 or larger")
    return str(net)


def _str_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{_show(value)} is not a list of strings")
    return tuple(value)


def parse_plan(raw: Any, source: str = "") -> Plan:
    """Validate a parsed YAML document into a Plan; raise PlanError listing every problem."""
    r = _Reader()
    top = r.mapping(
        raw,
        "",
        [
            "name",
            "sites",
            "clusters",
            "services",
            "data",
            "recovery",
            "quotas",
            "headroom",
            "drill",
            "logging",
        ],
    )
    if raw is not None and not isinstance(raw, dict):
        raise PlanError(r.errors)
    name = r.convert(top, "name", "", _name, required=True) or "invalid"
    name_path = "name"
    if name != "invalid" and len(name) > 20:
        r.error(name_path, f'"{name}" is too long for bucket names; use at most 20 characters')

    sites = _parse_sites(r, top.get("sites"))
    clusters = _parse_clusters(r, top.get("clusters"), sites)
    services = _parse_services(r, top.get("services"), sites, clusters)
    data = r.mapping(top.get("data"), "data", ["checkpoints", "weights", "datasets"])
    checkpoints = _parse_checkpoints(r, data.get("checkpoints"), sites)
    weights = _parse_weights(r, data.get("weights"), sites)
    datasets = _parse_datasets(r, data.get("datasets"), sites)
    services = _services_rpo(r, top.get("services"), services, weights)
    recovery = _parse_recovery(r, top.get("recovery"))
    quotas = _parse_quotas(r, top.get("quotas"))
    headroom = r.convert(top, "headroom", "", _at_least(1.0, *HEADROOM_MAX), None)
    if headroom is None:
        headroom = float(reference.defaults()["headroom"]["factor"])
    drill = _parse_drill(r, top.get("drill"), clusters, services)
    logging = _parse_logging(r, top.get("logging"))

    _check_onprem_data(r, (checkpoints, weights, datasets))
    _check_one_agent_per_job(r, sites, (checkpoints, weights, datasets))
    _check_mechanisms(
        r,
        sites,
        {
            DataClass.CHECKPOINTS: checkpoints,
            DataClass.WEIGHTS: weights,
            DataClass.DATASETS: datasets,
        },
    )
    if not checkpoints and not weights and not datasets and not clusters and not services:
        r.error("data", "the plan protects nothing; declare data classes, clusters or services")

    if r.errors:
        raise PlanError(r.errors)
    data_sites = tuple(sorted({d.site for d in (checkpoints, weights, datasets) if d is not None}))
    return Plan(
        name=name,
        sites=sites,
        clusters=clusters,
        services=services,
        checkpoints=checkpoints,
        weights=weights,
        datasets=datasets,
        recovery=recovery,
        quotas=quotas,
        headroom=headroom,
        source=source,
        data_site_names=data_sites,
        drill=drill,
        logging=logging,
        onprem=dict(r.onprem),
    )


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file."""
    file = Path(path)
    try:
        with file.open("rb") as stream:
            # One byte over the bound is enough to refuse; never read a huge file whole.
            data = stream.read(yamlsafe.MAX_BYTES + 1)
    except OSError as exc:
        raise PlanError([FieldError(str(file), f"cannot read the plan: {exc.strerror}")]) from exc
    except ValueError:  # a NUL byte in the path: no file can have that name
        where = _key(str(file))
        raise PlanError(
            [FieldError(where, "cannot read the plan: the path holds a NUL byte")]
        ) from None
    return parse_plan_bytes(data, str(file))


def parse_plan_bytes(data: bytes, source: str) -> Plan:
    """Validate a plan from its file's bytes (as `load_plan` read them): what the plan cache
    keys is exactly what is validated and run."""
    file = Path(source)
    try:
        raw = yamlsafe.load(yamlsafe.decode(data))
    except yamlsafe.YamlRefused as exc:
        where = f"line {exc.line}: " if exc.line else ""
        raise PlanError([FieldError(str(file), f"{where}{exc}")]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise PlanError([FieldError(str(file), f"is not valid YAML{where}: {problem}")]) from exc
    if raw is None:
        raise PlanError([FieldError(str(file), "is empty; see examples/ for a plan to start from")])
    return parse_plan(raw, source=str(file))


# --- sections -------------------------------------------------------------------------------


_SITE_FIELDS = (
    "cloud",
    "region",
    "role",
    "protects",
    "pattern",
    "warm_fraction",
    "reserve_capacity",
    "account",
    "project",
    "cidr",
    "azs",
    "link",
    "api_public_cidrs",
)


def _parse_sites(r: _Reader, raw: Any) -> dict[str, Site]:
    if raw is None:
        r.error("sites", "is required; declare at least one primary and one dr site")
        return {}
    if not isinstance(raw, dict) or not raw:
        r.error("sites", f"{_show(raw)} is not a mapping of site name to site")
        return {}
    sites: dict[str, Site] = {}
    used_cidrs: list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]] = []
    for index, (site_name, site_raw) in enumerate(raw.items()):
        try:
            _name(site_name)
        except ValueError as exc:
            r.error(f"sites.{_key(site_name)}", str(exc))
            continue
        if isinstance(site_raw, dict) and site_raw.get("cloud") == ONPREM:
            r.onprem[site_name] = _parse_onprem(r, site_name, site_raw)
            continue
        site = _parse_site(r, site_name, site_raw, index)
        _check_cidr(r, site, used_cidrs)
        sites[site_name] = site
    for site in list(sites.values()):
        if site.role == SiteRole.DR and site.protects in r.onprem:
            _check_onprem_pair(r, r.onprem[site.protects], site)
            _check_onprem_asn(r, r.onprem[site.protects], list(sites).index(site.name))
        elif site.role == SiteRole.DR and site.protects is not None:
            _check_pair(r, sites, site)
    for onprem in r.onprem.values():
        _check_onprem_cidr(r, onprem, sites)
    has_primary = any(s.role == SiteRole.PRIMARY for s in sites.values()) or r.onprem
    if sites and not has_primary:
        r.error("sites", "has no primary site; mark the site you protect with role: primary")
    if sites and not any(s.role == SiteRole.DR for s in sites.values()):
        r.error("sites", "has no dr site; add one with role: dr and protects: <primary>")
    return sites


def _parse_site(r: _Reader, site_name: str, site_raw: Any, index: int) -> Site:
    """One site's own fields; what depends on the other sites is checked afterwards."""
    path = f"sites.{site_name}"
    s = r.mapping(site_raw, path, _SITE_FIELDS)
    # (`onprem` never reaches here: _parse_sites hands those sites to _parse_onprem)
    cloud = Cloud(r.choice(s, "cloud", path, SITE_KINDS, Cloud.AWS))
    region = _region(r, s, path, cloud)
    role = r.choice(s, "role", path, tuple(SiteRole), SiteRole.PRIMARY)
    if "role" not in s:
        r.error(f"{path}.role", "is required; use primary or dr")
    protects = r.convert(s, "protects", path, str)
    if role == SiteRole.DR and protects is None:
        r.error(f"{path}.protects", "is required on a dr site; name the primary site it protects")
    if role == SiteRole.PRIMARY and protects is not None:
        r.error(
            f"{path}.protects", "only a dr site protects another site; remove it or set role: dr"
        )
    pattern = r.request(s, "pattern", path, DR_PATTERNS)
    warm = r.convert(
        s, "warm_fraction", path, _ratio(0.01, 1.0, False), _spec_default("warm_fraction")
    )
    account, project = _cloud_ids(r, s, path, cloud)
    default_cidr = f"10.{(10 + index * 16) % 256}.0.0/16"
    known = reference.regions(cloud)
    region_known = bool(region) and (not known or region in known)
    azs = r.convert(s, "azs", path, _str_list) or _default_zones(cloud, region)
    for i, az in enumerate(azs):
        # An unknown region is reported once; its zones are not judged against it.
        if region_known and not _zone_ok(cloud, region, az):
            r.error(f"{path}.azs[{i}]", f"{_show(az)} is not a zone of {cloud} region {region}")
    if len(azs) < 2:
        r.error(f"{path}.azs", "needs at least two zones (the cluster spreads over two)")
    link = _parse_link(r, s.get("link"), f"{path}.link") if "link" in s else None
    if link is not None and role != SiteRole.DR:
        r.error(f"{path}.link", "a DR link is declared on the dr site that uses it")
    public = r.convert(s, "api_public_cidrs", path, _str_list) or ()
    for i, c in enumerate(public):
        try:
            ipaddress.ip_network(c, strict=True)
        except ValueError:
            r.error(f"{path}.api_public_cidrs[{i}]", f"{_show(c)} is not a CIDR block")
    return Site(
        name=site_name,
        cloud=cloud,
        region=region,
        role=role,
        protects=protects,
        pattern=None if pattern is None else Pattern(pattern),
        warm_fraction=_spec_default("warm_fraction") if warm is None else warm,
        reserve_capacity=r.convert(s, "reserve_capacity", path, _bool, False) or False,
        account=account,
        project=project,
        cidr=r.convert(s, "cidr", path, _cidr, default_cidr) or default_cidr,
        azs=tuple(azs),
        link=link,
        api_public_cidrs=tuple(public),
    )


# --- on-premises sites ------------------------------------------------------------------------

# DR cloud -> what replicates from on premises into it, and the links that reach it. Clouds not
# listed cannot protect an on-premises site yet (docs/onprem.md, "Extension points").
ONPREM_PAIRS: dict[Cloud, tuple[tuple[Mechanism, ...], tuple[OnPremLinkKind, ...]]] = {
    Cloud.AWS: ((Mechanism.DATASYNC_AGENT,), (OnPremLinkKind.DIRECT_CONNECT, OnPremLinkKind.VPN)),
    # (HA VPN from on premises is not declared yet: an external VPN gateway with the router's
    # interfaces and four tunnels' shared secrets; docs/onprem.md, Not done yet)
    Cloud.GCP: (
        (Mechanism.STS_AGENT,),
        (OnPremLinkKind.INTERCONNECT_DEDICATED, OnPremLinkKind.INTERCONNECT_PARTNER),
    ),
    # Over ExpressRoute only: a VPN into Azure would need a VPN gateway and local network
    # gateway the Azure DR stack does not declare for an on-premises peer (docs/onprem.md).
    Cloud.AZURE: ((Mechanism.STORAGE_MOVER,), (OnPremLinkKind.EXPRESSROUTE,)),
}
# The on-premises stores each DR cloud's stack reads today (docs/onprem.md, "Not done yet":
# HDFS needs its user or Kerberos principal).
ONPREM_STORAGE: dict[Cloud, tuple[StorageKind, ...]] = {
    Cloud.AWS: (StorageKind.NFS, StorageKind.LUSTRE, StorageKind.S3_COMPATIBLE),
    # POSIX (an NFS mount on the agent hosts) and S3-compatible sources, both through the pool
    Cloud.GCP: (StorageKind.NFS, StorageKind.LUSTRE, StorageKind.S3_COMPATIBLE),
    # Storage Mover reads NFS (and SMB) shares, not object stores or HDFS (dr-facts-2.md 3).
    Cloud.AZURE: (StorageKind.NFS, StorageKind.LUSTRE),
}
# The smallest Azure DR range that holds the AKS nodes' /20 and, outside it, the ExpressRoute
# GatewaySubnet and the uploads' subnets.
AZURE_ONPREM_PREFIX = 19
# Why a DR cloud refuses a store or a link it does not take (the fix is the list it does take).
ONPREM_REFUSALS: dict[tuple[Cloud, str], str] = {
    (Cloud.AZURE, StorageKind.S3_COMPATIBLE): "Azure Storage Mover reads NFS and SMB shares, "
    "not object stores",
    (Cloud.AZURE, StorageKind.HDFS): "Azure Storage Mover reads NFS and SMB shares, not HDFS",
    (Cloud.AZURE, OnPremLinkKind.VPN): "the Azure DR stack declares no VPN gateway for an "
    "on-premises router yet",
}
_ONPREM_FIELDS = (
    "cloud",
    "role",
    "location",
    "gpus",
    "storage",
    "agents",
    "link",
    "wan_committed_gbps",
    "cidr",
)
# Free text that reaches runbooks and tags: letters, digits, spaces and plain punctuation.
PLACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ,.()-]{0,63}")
HOST_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
EXPORT_RE = re.compile(r"/(?!/)[A-Za-z0-9._/-]{0,1023}")
BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
ENDPOINT_HINT = {
    StorageKind.NFS: "host:/export (e.g. 10.20.0.5:/exports/ml)",
    StorageKind.LUSTRE: "the NFS export of the file system, host:/export (e.g. 10.20.0.6:/lustre)",
    StorageKind.S3_COMPATIBLE: "https://host[:port]/bucket (e.g. https://minio.dc1.lan:9000/ml-data)",
    StorageKind.HDFS: "hdfs://namenode:port/path (e.g. hdfs://nn1.dc1.lan:8020/ml)",
}


@dataclass(frozen=True)
class Endpoint:
    """An on-premises store's endpoint, split as DataSync's locations take it."""

    host: str
    port: int | None
    path: str  # the export, the bucket, or the HDFS directory


def parse_endpoint(kind: StorageKind, value: str) -> Endpoint:
    """Split and check an endpoint; ValueError naming the form expected."""
    text = value if isinstance(value, str) else ""
    bad = ValueError(f"{_show(value)} is not a {kind} endpoint; use {ENDPOINT_HINT[kind]}")
    if kind in NFS_STORAGE_KINDS:
        host, _, export = text.partition(":")
        if not HOST_RE.fullmatch(host) or not EXPORT_RE.fullmatch(export):
            raise bad
        return Endpoint(host, None, export)
    scheme = "https://" if kind == StorageKind.S3_COMPATIBLE else "hdfs://"
    if not text.startswith(scheme):
        raise bad
    authority, _, rest = text[len(scheme) :].partition("/")
    host, _, port_text = authority.partition(":")
    port = int(port_text) if port_text.isascii() and port_text.isdigit() else None
    if not HOST_RE.fullmatch(host) or (port_text and not (port and 0 < port < 65536)):
        raise bad
    if kind == StorageKind.S3_COMPATIBLE:
        if not BUCKET_RE.fullmatch(rest):
            raise bad
        return Endpoint(host, port or 443, rest)
    if not EXPORT_RE.fullmatch("/" + rest):
        raise bad
    return Endpoint(host, port or 8020, "/" + rest)


EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")


def _email(value: Any) -> str:
    if not isinstance(value, str) or not EMAIL_RE.fullmatch(value) or len(value) > 254:
        raise ValueError(f"{_show(value)} is not an email address (e.g. noc@example.com)")
    return value


def _free_text(what: str, example: str) -> Callable[[Any], str]:
    """A converter for free text that reaches runbooks and tags (PLACE_RE), whose error names
    what the field is and gives an example."""

    def convert(value: Any) -> str:
        if not isinstance(value, str) or not PLACE_RE.fullmatch(value):
            raise ValueError(
                f"{_show(value)} is not {what}; at most 64 letters, digits, spaces and "
                f", . ( ) - (e.g. {example})"
            )
        return value

    return convert


_place = _free_text("a location: name the data centre", "Frankfurt DC1")
_peering_location = _free_text("an ExpressRoute peering location", "Washington DC")
_provider = _free_text("a connectivity provider", "Equinix")
_customer = _free_text("a company name for the LOA-CFAs", "Example AI GmbH")


def _parse_onprem(r: _Reader, name: str, raw: dict[str, Any]) -> OnPremSite:
    path = f"sites.{name}"
    s = r.mapping(raw, path, _ONPREM_FIELDS)
    if s.get("role", SiteRole.PRIMARY) != SiteRole.PRIMARY:
        r.error(
            f"{path}.role",
            "an on-premises site is a primary only; protect it from a cloud site with role: dr",
        )
    location = r.convert(s, "location", path, _place, required=True) or ""
    cidr = r.convert(s, "cidr", path, _cidr, required=True) or ""
    link = _parse_onprem_link(r, s.get("link"), f"{path}.link")
    wan = r.convert(s, "wan_committed_gbps", path, _positive_rate, required=True) or 0.0
    if link is not None and wan > link.capacity_gbps:
        r.error(
            f"{path}.wan_committed_gbps",
            f"{wan:g} Gbps is more than the link carries ({link.ports} x {link.port_gbps:g} "
            f"Gbps); commit at most {link.capacity_gbps:g} Gbps or add ports",
        )
    agents = _parse_agents(r, s.get("agents"), f"{path}.agents", cidr)
    return OnPremSite(
        name=name,
        location=location,
        gpus=_parse_inventory(r, s.get("gpus"), f"{path}.gpus"),
        storage=_parse_storage(r, s.get("storage"), f"{path}.storage"),
        agents=agents,
        link=link or OnPremLink(OnPremLinkKind.VPN, 0.0, 1, None, None, None),
        wan_committed_gbps=wan,
        cidr=cidr,
    )


def _parse_inventory(r: _Reader, raw: Any, path: str) -> GpuInventory:
    if raw is None:
        r.error(
            path, "is required; describe the cluster: {model, nodes, gpus_per_node, bare_metal}"
        )
    s = r.mapping(raw, path, ["model", "nodes", "gpus_per_node", "bare_metal", "interconnect"])
    models = reference.gpu_models()
    model = r.choice(s, "model", path, models, models[0]) if "model" in s else ""
    if raw is not None and "model" not in s:
        r.error(f"{path}.model", f"is required; use one of {', '.join(models)}")
    bare = r.convert(s, "bare_metal", path, _bool, required=raw is not None)
    return GpuInventory(
        model=model,
        nodes=r.convert(s, "nodes", path, _positive_int, required=raw is not None) or 1,
        gpus_per_node=r.convert(s, "gpus_per_node", path, _positive_int, 8) or 8,
        bare_metal=True if bare is None else bare,
        interconnect=r.choice(
            s, "interconnect", path, tuple(GpuInterconnect), GpuInterconnect.INFINIBAND
        ),
    )


def _parse_storage(r: _Reader, raw: Any, path: str) -> OnPremStorage:
    if raw is None:
        r.error(path, "is required; e.g. {kind: nfs, endpoint: 10.20.0.5:/exports/ml}")
    s = r.mapping(raw, path, ["kind", "endpoint"])
    kind = r.choice(s, "kind", path, tuple(StorageKind), StorageKind.NFS)
    if raw is not None and "kind" not in s:
        r.error(f"{path}.kind", f"is required; use one of {', '.join(StorageKind)}")
    endpoint = r.convert(s, "endpoint", path, str, required=raw is not None) or ""
    if endpoint:
        try:
            parse_endpoint(kind, endpoint)
        except ValueError as exc:
            r.error(f"{path}.endpoint", str(exc))
    return OnPremStorage(kind, endpoint)


def _parse_agents(r: _Reader, raw: Any, path: str, cidr: str) -> tuple[Agent, ...]:
    """`agents: N` (named agent-1..N, addresses to be given) or a list of {name, address}."""
    most = int(reference.defaults()["links"]["onprem"]["max_agents"]["value"])
    hint = f"a count (1 to {most}) or a list of {{name, address}}"
    if raw is None:
        r.error(path, f"is required; the hosts that run the transfer agents: {hint}")
        return ()
    if isinstance(raw, int) and not isinstance(raw, bool):
        if not 1 <= raw <= most:
            r.error(path, f"{raw} is not 1 to {most}: gpudr plans at most {most} agents a site")
            return ()
        return tuple(Agent(f"agent-{i}", None) for i in range(1, raw + 1))
    if not isinstance(raw, list) or not 1 <= len(raw) <= most:
        r.error(path, f"{_show(raw)} is not {hint}")
        return ()
    agents: list[Agent] = []
    net = ipaddress.ip_network(cidr) if cidr else None  # (a missing cidr is reported once)
    for i, item in enumerate(raw):
        at = f"{path}[{i}]"
        a = r.mapping(item, at, ["name", "address"])
        agent_name = r.convert(a, "name", at, _name, required=True) or f"agent-{i + 1}"
        address = r.convert(a, "address", at, _ip)
        if address is not None and net is not None and ipaddress.ip_address(address) not in net:
            r.error(f"{at}.address", f'"{address}" is outside the site\'s cidr {cidr}')
        if any(x.name == agent_name for x in agents):
            r.error(f"{at}.name", f'"{agent_name}" is used twice; name each agent once')
        agents.append(Agent(agent_name, address))
    return tuple(agents)


def _ip(value: Any) -> str:
    try:
        return str(ipaddress.ip_address(value if isinstance(value, str) else ""))
    except ValueError:
        raise ValueError(f"{_show(value)} is not an IP address") from None


def _parse_onprem_link(r: _Reader, raw: Any, path: str) -> OnPremLink | None:
    if raw is None:
        r.error(path, f"is required; kind is one of {', '.join(OnPremLinkKind)}")
        return None
    s = r.mapping(
        raw,
        path,
        [
            "kind",
            "port_gbps",
            "ports",
            "location",
            "bgp_asn",
            "vlan",
            "address",
            "provider",
            "peering_subnets",
            "customer",
            "noc_email",
        ],
    )
    if "kind" not in s:
        r.error(f"{path}.kind", f"is required; use one of {', '.join(OnPremLinkKind)}")
        return None
    kind = r.choice(s, "kind", path, tuple(OnPremLinkKind), OnPremLinkKind.VPN)
    limits = reference.defaults()["links"]["onprem"]
    ports = r.convert(s, "ports", path, _positive_int, 2 if kind == OnPremLinkKind.VPN else 1)
    asn = r.convert(s, "bgp_asn", path, _asn, required=True)
    tagged = kind in (
        OnPremLinkKind.DIRECT_CONNECT,
        OnPremLinkKind.INTERCONNECT_DEDICATED,
        OnPremLinkKind.EXPRESSROUTE,
    )
    vlan = r.convert(s, "vlan", path, _vlan, required=tagged)
    if kind == OnPremLinkKind.EXPRESSROUTE:
        return _expressroute(r, s, path, asn, vlan, ports)
    location = r.convert(s, "location", path, _location) if kind not in INTERCONNECTS else None
    speed = r.convert(s, "port_gbps", path, _positive_rate)
    if kind == OnPremLinkKind.DIRECT_CONNECT:
        speeds = [float(x) for x in limits["direct-connect"]["port_gbps"]]
        if location is None and "location" not in s:
            r.error(f"{path}.location", "is required for direct-connect (e.g. EqFA5)")
        if speed is None and "port_gbps" not in s:
            r.error(f"{path}.port_gbps", f"is required; a dedicated port is {speeds} Gbps")
        elif speed is not None and speed not in speeds:
            r.error(f"{path}.port_gbps", f"{speed:g} is not a dedicated port speed; use {speeds}")
    if kind in INTERCONNECTS:
        location, speed = _interconnect_fields(
            r, s, path, OnPremLinkKind(kind), location, speed, ports
        )
    address = r.convert(s, "address", path, _public_ipv4, required=kind == OnPremLinkKind.VPN)
    if kind == OnPremLinkKind.VPN:
        tunnel = float(limits["vpn"]["tunnel_gbps"])
        if speed is not None and speed > tunnel:
            r.error(f"{path}.port_gbps", f"{speed:g} is above a VPN tunnel's {tunnel:g} Gbps")
        speed = tunnel if speed is None else speed
        if ports is not None and ports % 2:
            r.error(
                f"{path}.ports",
                f"{ports} tunnels: a Site-to-Site VPN connection has two; use an even number",
            )
    dedicated = kind == OnPremLinkKind.INTERCONNECT_DEDICATED
    for key in ("customer", "noc_email"):
        if key in s and not dedicated:
            r.error(f"{path}.{key}", "is for interconnect-dedicated only (the LOA-CFAs); remove it")
    customer = r.convert(s, "customer", path, _customer, required=dedicated) if dedicated else None
    noc = r.convert(s, "noc_email", path, _email, required=dedicated) if dedicated else None
    return OnPremLink(
        OnPremLinkKind(kind),
        speed or 0.0,
        ports or 1,
        location,
        asn,
        vlan,
        address,
        customer=customer,
        noc_email=noc,
    )


INTERCONNECTS = (OnPremLinkKind.INTERCONNECT_DEDICATED, OnPremLinkKind.INTERCONNECT_PARTNER)
GCP_LOCATION_RE = re.compile(r"[a-z]{3}-zone[12]-[0-9]{1,6}")


def _interconnect_fields(
    r: _Reader,
    s: dict[str, Any],
    path: str,
    kind: OnPremLinkKind,
    location: str | None,
    speed: float | None,
    ports: int | None,
) -> tuple[str | None, float | None]:
    """Dedicated: the colocation facility's Interconnect location and the circuit speed
    (`ports` circuits, whose total one VLAN attachment must carry at a capacity the API
    takes); Partner: the VLAN attachment's capacity (`ports` attachments, one per edge
    availability domain), the location being the provider's."""
    limits = reference.defaults()["links"]["onprem"][kind]
    speeds = [float(x) for x in limits["port_gbps"]]
    what = (
        "circuit speed"
        if kind == OnPremLinkKind.INTERCONNECT_DEDICATED
        else "VLAN attachment capacity"
    )
    if kind == OnPremLinkKind.INTERCONNECT_DEDICATED:
        location = r.convert(s, "location", path, _gcp_location, required=True)
    elif "location" in s:
        r.error(f"{path}.location", "is the provider's for a Partner Interconnect; remove it")
    if speed is None and "port_gbps" not in s:
        r.error(f"{path}.port_gbps", f"is required; a {what} is one of {speeds} Gbps")
    elif speed is not None and speed not in speeds:
        r.error(f"{path}.port_gbps", f"{speed:g} is not a {what}; use one of {speeds}")
    elif kind == OnPremLinkKind.INTERCONNECT_DEDICATED and ports is not None and speed:
        totals = [float(x) for x in limits["attachment_gbps"] if float(x) % speed == 0]
        if ports * speed not in totals:
            r.error(
                f"{path}.ports",
                f"{ports} x {speed:g} Gbps is {ports * speed:g} Gbps, not a VLAN attachment "
                f"capacity; bundle circuits to one of {', '.join(f'{t:g}' for t in totals)} Gbps",
            )
    return location, speed


def _gcp_location(value: Any) -> str:
    if not isinstance(value, str) or not GCP_LOCATION_RE.fullmatch(value):
        raise ValueError(
            f"{_show(value)} is not an Interconnect location; use the name Google lists for the "
            "colocation facility (e.g. fra-zone1-4)"
        )
    return value


def _expressroute(
    r: _Reader, s: dict[str, Any], path: str, asn: int | None, vlan: int | None, ports: int | None
) -> OnPremLink:
    """An ExpressRoute provider circuit: its peering location, provider and bandwidth, and the
    private peering's VLAN, your ASN and your two /30s."""
    limits = reference.defaults()["links"]["onprem"]
    speeds = [float(x) for x in limits["expressroute"]["port_gbps"]]
    location = r.convert(s, "location", path, _peering_location, required=True)
    provider = r.convert(s, "provider", path, _provider, required=True)
    speed = r.convert(s, "port_gbps", path, _positive_rate, required=True)
    # The DR stack's gateway carries the circuit: none larger than the largest SKU is built.
    sku, most = list(limits["expressroute_gateways"]["gbps"].items())[-1]
    if speed is not None and speed not in speeds:
        r.error(f"{path}.port_gbps", f"{speed:g} is not a circuit bandwidth; use {speeds}")
    elif speed is not None and speed > float(most):
        r.error(
            f"{path}.port_gbps",
            f"{speed:g} Gbps is more than the largest ExpressRoute gateway ({sku}) carries, "
            f"{float(most):g} Gbps; use a circuit of at most that",
        )
    if ports not in (None, 1):
        r.error(f"{path}.ports", f"{ports}: one circuit (its two links are one); use 1")
    subnets = r.convert(s, "peering_subnets", path, _peering_subnets, required=True)
    return OnPremLink(
        OnPremLinkKind.EXPRESSROUTE,
        speed or 0.0,
        1,
        location,
        asn,
        vlan,
        provider=provider,
        peering_subnets=subnets or (),
    )


def _peering_subnets(value: Any) -> tuple[str, ...]:
    hint = "two /30s of your own for the primary and secondary BGP sessions"
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"{_show(value)} is not {hint} (e.g. [192.168.40.0/30, 192.168.40.4/30])")
    out = []
    for item in value:
        try:
            net = ipaddress.ip_network(item if isinstance(item, str) else "")
        except ValueError:
            raise ValueError(f"{_show(item)} is not a /30 ({hint})") from None
        if net.version != 4 or net.prefixlen != 30:
            raise ValueError(f"{_show(item)} is not an IPv4 /30 ({hint})")
        out.append(str(net))
    if out[0] == out[1]:
        raise ValueError(f"{out[0]} is given twice; {hint}")
    return tuple(out)


def _public_ipv4(value: Any) -> str:
    """A router's address on the internet, where the VPN tunnels end on premises."""
    text = _ip(value)
    ip = ipaddress.ip_address(text)
    if ip.version != 4 or not ip.is_global:
        raise ValueError(f"{_show(value)} is not a public IPv4 address (the router's, for IPsec)")
    return text


def _asn(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 4294967294:
        raise ValueError(
            f"{_show(value)} is not a BGP ASN (1 to 4294967294; private 64512-65534 or "
            "4200000000-4294967294)"
        )
    return value


def _vlan(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 4094:
        raise ValueError(f"{_show(value)} is not a VLAN id (1 to 4094)")
    return value


def _check_onprem_pair(r: _Reader, onprem: OnPremSite, dr: Site) -> None:
    """A DR site protecting an on-premises site: a cloud that can pull from there, over the
    link the on-premises site names (the link is declared there, not on the DR site)."""
    if dr.link is not None:
        r.error(
            f"sites.{dr.name}.link",
            "the link to an on-premises site is declared on it: move it to "
            f"sites.{onprem.name}.link",
        )
    if dr.cloud not in ONPREM_PAIRS:
        clouds = ", ".join(ONPREM_PAIRS)
        r.error(
            f"sites.{dr.name}.cloud",
            f"{dr.cloud} cannot protect an on-premises site yet; use {clouds}",
        )
        return
    stores = ONPREM_STORAGE[dr.cloud]
    if onprem.storage.endpoint and onprem.storage.kind not in stores:
        r.error(
            f"sites.{onprem.name}.storage.kind",
            f'"{onprem.storage.kind}" is not read into {dr.cloud} yet'
            + _because(dr.cloud, onprem.storage.kind)
            + f"; serve the data over {' or '.join(stores)} (docs/onprem.md, Not done yet)",
        )
    if dr.cloud == Cloud.AZURE and ipaddress.ip_network(dr.cidr).prefixlen > AZURE_ONPREM_PREFIX:
        # The AKS nodes take the range's first /20; the GatewaySubnet, the private endpoints'
        # and the resolver's subnets its last /26, /27 and /28 (components/azure/network.py,
        # gpudr/contract/azure_onprem.py): a /20 or smaller leaves no room outside the nodes.
        r.error(
            f"sites.{dr.name}.cidr",
            f"{dr.cidr} is too small to protect an on-premises site over ExpressRoute: the AKS "
            f"nodes take a /20 and the link's subnets sit outside it; use a "
            f"/{AZURE_ONPREM_PREFIX} or larger (a /16 is usual)",
        )
    links = ONPREM_PAIRS[dr.cloud][1]
    if onprem.link.port_gbps and onprem.link.kind not in links:
        r.error(
            f"sites.{onprem.name}.link.kind",
            f'"{onprem.link.kind}" does not reach {dr.cloud} (site {dr.name})'
            + _because(dr.cloud, onprem.link.kind)
            + "; use "
            + " or ".join(links),
        )


def _because(cloud: Cloud, what: str) -> str:
    reason = ONPREM_REFUSALS.get((cloud, what))
    return f": {reason}" if reason else ""


def _check_onprem_asn(r: _Reader, onprem: OnPremSite, dr_index: int) -> None:
    """The router peers with the Direct Connect gateway (or the DR site's transit gateway over
    a VPN): with the same ASN on both ends, BGP drops the routes as its own."""
    ours = {
        DX_GATEWAY_ASN: "the Direct Connect gateway's",
        transit_gateway_asn(dr_index): "the DR site's transit gateway's",
    }
    if onprem.link.kind in INTERCONNECTS:
        # Into GCP the router peers with the link's own Cloud Router (defaults.yaml).
        limits = reference.defaults()["links"]["onprem"][onprem.link.kind]
        ours = {int(limits["cloud_router_asn"]): "the Cloud Router's"}
    elif onprem.link.kind == OnPremLinkKind.EXPRESSROUTE:
        ours = {MICROSOFT_ASN: "Microsoft's"} | {
            n: "an Azure-reserved" for n in AZURE_RESERVED_ASNS
        }
    asn = onprem.link.bgp_asn
    if asn in ours:
        r.error(
            f"sites.{onprem.name}.link.bgp_asn",
            f"{asn} is {ours[asn]} ASN; use another private ASN (64512-65534 or "
            "4200000000-4294967294)",
        )


def _check_onprem_cidr(r: _Reader, onprem: OnPremSite, sites: dict[str, Site]) -> None:
    """Routed over the link, the on-premises prefix must not overlap a cloud site's."""
    if not onprem.cidr:
        return
    net = ipaddress.ip_network(onprem.cidr)
    for other in sites.values():
        if net.overlaps(ipaddress.ip_network(other.cidr)):
            r.error(
                f"sites.{onprem.name}.cidr",
                f'"{onprem.cidr}" overlaps sites.{other.name}.cidr ({other.cidr}); routed '
                "sites need distinct address space",
            )


def _region(r: _Reader, s: dict[str, Any], path: str, cloud: Cloud) -> str:
    region = r.convert(s, "region", path, str, required=True) or ""
    known = reference.regions(cloud)
    if region and known and region not in known:
        near = [k for k in sorted(known) if k.split("-")[0] == region.split("-")[0]][:6]
        hint = f"; {cloud} regions like it: {', '.join(near)}" if near else ""
        r.error(f"{path}.region", f"{_show(region)} is not a known {cloud} region{hint}")
    return region


def _cloud_ids(
    r: _Reader, s: dict[str, Any], path: str, cloud: Cloud
) -> tuple[str | None, str | None]:
    """(AWS account, GCP project): each only on its own cloud, the project required there."""
    account = r.convert(s, "account", path, _account) if cloud == Cloud.AWS else None
    if cloud != Cloud.AWS and "account" in s:
        r.error(f"{path}.account", f"is an AWS account id; a {cloud} site does not take one")
    project = r.convert(s, "project", path, _project) if cloud == Cloud.GCP else None
    if cloud == Cloud.GCP and project is None and "project" not in s:
        r.error(f"{path}.project", "is required on a gcp site; name the GCP project id")
    if cloud != Cloud.GCP and "project" in s:
        r.error(f"{path}.project", f"is a GCP project id; a {cloud} site does not take one")
    return account, project


def _check_cidr(
    r: _Reader, site: Site, used: list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]]
) -> None:
    """Peered sites need distinct address space."""
    net = ipaddress.ip_network(site.cidr)
    for other_name, other in used:
        if net.overlaps(other):
            r.error(
                f"sites.{site.name}.cidr",
                f'"{site.cidr}" overlaps sites.{other_name}.cidr ({other}); peered sites need '
                "distinct address space",
            )
    used.append((site.name, net))


def _check_pair(r: _Reader, sites: dict[str, Site], site: Site) -> None:
    """A DR site against the primary it protects: a primary of this plan, in another region,
    on a cloud pair gpudr deploys, with a link that can join them (the pair's default if the
    site names none)."""
    path = f"sites.{site.name}.protects"
    primary = sites.get(site.protects or "")
    pair = (primary.cloud, site.cloud) if primary else None
    if primary is None:
        r.error(path, f"{_show(site.protects)} is not a site in this plan")
    elif primary.role != SiteRole.PRIMARY:
        r.error(path, f'"{site.protects}" is a dr site; a dr site protects a primary site')
    elif primary.cloud == site.cloud and primary.region == site.region:
        r.error(
            f"sites.{site.name}.region",
            f'"{site.region}" is the region of the site it protects; a regional disaster '
            "takes both down, choose another region",
        )
    elif pair in REFUSED_PAIRS:
        r.error(
            path,
            f"protecting {_article(primary.cloud)} {primary.cloud} site from {site.cloud} is "
            f"not supported: {REFUSED_PAIRS[pair]}",
        )
    else:
        pair = (primary.cloud, site.cloud)
        if pair == (Cloud.AWS, Cloud.GCP) and primary.account is None:
            r.error(
                f"sites.{primary.name}.account",
                "is required when a gcp site protects this aws site: Storage Transfer "
                "Service assumes a role in this account by its ARN",
            )
        if pair == (Cloud.AWS, Cloud.AZURE) and primary.account is None:
            r.error(
                f"sites.{primary.name}.account",
                "is required when an azure site protects this aws site: its AzCopy jobs "
                "assume a role in this account by its ARN",
            )
        _, links = PAIRS[pair]
        # Without a kind, a pair with a dedicated alternative is left to the design (the need
        # chooses); any other gets its default.
        if site.link is not None and site.link.kind is None and pair not in DEDICATED_LINKS:
            site = sites[site.name] = replace(site, link=replace(site.link, kind=links[0]))
        if site.link is not None and site.link.kind is not None and site.link.kind not in links:
            r.error(
                f"sites.{site.name}.link.kind",
                f'"{site.link.kind}" cannot join {primary.cloud} and {site.cloud}; use '
                + " or ".join(links),
            )


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def gcs_dual_region(a: str, b: str) -> str | None:
    """The multi-region code of a custom dual-region of GCP regions a and b, if one exists."""
    ca, cb = GCS_CONTINENT.get(a.split("-")[0]), GCS_CONTINENT.get(b.split("-")[0])
    return ca if ca is not None and ca == cb else None


def _check_mechanisms(
    r: _Reader, sites: dict[str, Site], classes: dict[str, Checkpoints | Weights | Datasets | None]
) -> None:
    """A mechanism named in the spec must be one the site pair can run."""
    for cls, spec in classes.items():
        if spec is None or spec.replication in (None, Mechanism.DUAL_WRITE):
            continue
        if spec.site in r.onprem:
            _check_onprem_mechanism(r, sites, cls, spec.site, spec.replication)
            continue
        primary = sites.get(spec.site)
        if primary is None:
            continue
        for dr in sites.values():
            pair = (primary.cloud, dr.cloud)
            if dr.protects != primary.name or pair not in PAIRS:
                continue
            allowed = PAIRS[pair][0]
            path = f"data.{cls}.replication"
            if spec.replication not in allowed:
                r.error(
                    path,
                    f'"{spec.replication}" cannot replicate {primary.cloud} to {dr.cloud} '
                    f"(site {dr.name}); use {', '.join((*allowed, Mechanism.DUAL_WRITE, AUTO))}",
                )
            elif spec.replication in DUAL_REGION and not gcs_dual_region(primary.region, dr.region):
                r.error(
                    path,
                    f"{spec.replication} needs a dual-region bucket, and {primary.region} and "
                    f"{dr.region} are not on one continent; use sts, or a DR region on the same "
                    "continent",
                )


def _check_onprem_mechanism(
    r: _Reader, sites: dict[str, Site], cls: str, onprem: str, mechanism: Mechanism | None
) -> None:
    for dr in sites.values():
        if dr.protects != onprem or dr.cloud not in ONPREM_PAIRS:
            continue
        allowed = ONPREM_PAIRS[dr.cloud][0]
        if mechanism not in allowed:
            r.error(
                f"data.{cls}.replication",
                f'"{mechanism}" cannot replicate on premises to {dr.cloud} (site {dr.name}); '
                f"use {', '.join((*allowed, AUTO))}",
            )


def _default_zones(cloud: Cloud, region: str) -> tuple[str, ...]:
    if cloud == Cloud.AZURE:
        return ("1", "2")
    if cloud == Cloud.GCP:
        return (f"{region}-a", f"{region}-b")
    return (f"{region}a", f"{region}b")


def _zone_ok(cloud: Cloud, region: str, zone: str) -> bool:
    """Azure zones 1-3; GCP `<region>-a`; AWS `<region>a`: one ASCII letter, nothing after it."""
    if cloud == Cloud.AZURE:
        return zone in ("1", "2", "3")
    sep = "-" if cloud == Cloud.GCP else ""
    return re.fullmatch(re.escape(f"{region}{sep}") + "[a-z]", zone) is not None


def _project(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    if not PROJECT_RE.fullmatch(text):
        raise ValueError(
            f"{_show(value)} is not a GCP project id (6-30 lowercase letters, digits, -)"
        )
    return text


CCI_FIELDS = ("remote_location", "aws_location")
# A Google resource name (a Cross-Cloud Interconnect remote location is one).
GCP_NAME_RE = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")


def _parse_link(r: _Reader, raw: Any, path: str) -> LinkSpec | None:
    s = r.mapping(raw, path, ["kind", "location", "secondary_location", *CCI_FIELDS])
    # Without a kind, the pair's default link is filled in once both sites are known.
    kind = r.choice(s, "kind", path, ("", *LinkKind), "")
    # Cross-Cloud Interconnect's locations are Google's; the other links' are Direct Connect's.
    if kind == LinkKind.CROSS_CLOUD_INTERCONNECT or (not kind and any(k in s for k in CCI_FIELDS)):
        return _cross_cloud_interconnect(r, s, path, LinkKind(kind) if kind else None)
    for key in CCI_FIELDS:
        if key in s:
            r.error(f"{path}.{key}", "is for cross-cloud-interconnect only; remove it")
    location = r.convert(s, "location", path, _location)
    secondary = r.convert(s, "secondary_location", path, _location)
    if kind == LinkKind.DIRECT_CONNECT and s.get("location") is None:
        r.error(
            f"{path}.location",
            "is required for direct-connect; name the Direct Connect location code (e.g. EqDC2)",
        )
    return LinkSpec(LinkKind(kind) if kind else None, location, secondary)


def _cross_cloud_interconnect(
    r: _Reader, s: dict[str, Any], path: str, kind: LinkKind | None
) -> LinkSpec:
    """Google's two Interconnect locations, one in each edge availability domain of one metro
    (Google never maintains both domains at once, so one connection per domain survives the
    other's loss), the remote location Google lists for AWS there, and the Direct Connect
    location where the AWS LAGs are ordered."""
    examples = {
        "location": "an Interconnect location in one edge availability domain (e.g. iad-zone1-1)",
        "secondary_location": "one in the metro's other edge availability domain "
        "(e.g. iad-zone2-1)",
        "remote_location": "the remote location Google lists for AWS there "
        "(gcloud compute interconnects remote-locations list)",
        "aws_location": "the Direct Connect location code where the LAGs are ordered (e.g. EqDC2)",
    }
    for key, what in examples.items():
        if s.get(key) is None:
            r.error(f"{path}.{key}", f"is required for cross-cloud-interconnect; name {what}")
    first = r.convert(s, "location", path, _gcp_location)
    second = r.convert(s, "secondary_location", path, _gcp_location)
    remote = r.convert(s, "remote_location", path, _remote_location)
    aws = r.convert(s, "aws_location", path, _location)
    if first and second:
        (metro, domain), (metro2, domain2) = first.split("-")[:2], second.split("-")[:2]
        if metro2 != metro:
            r.error(
                f"{path}.secondary_location",
                f'"{second}" is not in the metro of location ({metro}); the two edge '
                f"availability domains pair within one metro: use a {metro}-zone location",
            )
        elif domain2 == domain:
            other = "zone2" if domain == "zone1" else "zone1"
            r.error(
                f"{path}.secondary_location",
                f'"{second}" is in the edge availability domain of location ({domain}); one '
                f"maintenance window would take both: use a {metro}-{other} location",
            )
    return LinkSpec(kind, first, second, remote, aws)


def _remote_location(value: Any) -> str:
    if not isinstance(value, str) or not GCP_NAME_RE.fullmatch(value):
        raise ValueError(
            f"{_show(value)} is not a Cross-Cloud Interconnect remote location; use the name "
            "Google lists for AWS (gcloud compute interconnects remote-locations list)"
        )
    return value


def _location(value: Any) -> str:
    if not isinstance(value, str) or not LOCATION_RE.fullmatch(value):
        raise ValueError(
            f"{_show(value)} is not a Direct Connect location code; use the code AWS lists, "
            "letters and digits only (e.g. EqDC2)"
        )
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{_show(value)} is not true or false")
    return value


def _account(value: Any) -> str:
    # An unquoted id reads as an integer: accepted when its digits are still all there.
    whole = isinstance(value, int) and not isinstance(value, bool)
    text = str(value) if whole else value if isinstance(value, str) else ""
    if not ACCOUNT_RE.fullmatch(text):
        raise ValueError(
            f"{_show(value)} is not a 12-digit AWS account id (digits 0-9); quote it in YAML"
        )
    return text


def _gpu_fields(
    r: _Reader,
    s: dict[str, Any],
    path: str,
    site: Site | OnPremSite | None,
    dr_sites: list[Site],
) -> tuple[str, str, int, int]:
    """Check the GPU type against the catalog in the site and every DR site protecting it."""
    gpu = r.convert(s, "gpu", path, str, required=True) or ""
    gpus_per_node = r.convert(s, "gpus_per_node", path, _positive_int)
    if isinstance(site, OnPremSite):
        return _onprem_gpu_fields(r, s, path, site, dr_sites, gpu)
    if site is None or not gpu:
        return gpu, "", gpus_per_node or 8, 0
    offer = reference.gpu_offer(site.cloud, gpu)
    if offer is None:
        r.error(
            f"{path}.gpu",
            f"{_show(gpu)} is not a GPU type gpudr knows on {site.cloud}; use one of "
            f"{', '.join(reference.gpu_types(site.cloud))}",
        )
        return gpu, "", gpus_per_node or 8, 0
    for where in [site, *dr_sites]:
        # Each site runs the GPU as its own cloud sells it.
        here = reference.gpu_offer(where.cloud, gpu)
        if here is None:
            r.error(
                f"{path}.gpu",
                f"{_show(gpu)} is not a GPU type gpudr knows on {where.cloud} "
                f"(site {where.name}); "
                f"use one of {', '.join(reference.gpu_types(where.cloud))}",
            )
            continue
        if where.region not in reference.regions(where.cloud):
            continue  # already reported as an unknown region
        if here.regions and where.region not in here.regions:
            r.error(
                f"{path}.gpu",
                f'"{gpu}" ({here.instance_type}) is not offered in {where.region} '
                f"(site {where.name}) as far as gpudr's catalog knows; regions that offer it: "
                f"{', '.join(sorted(here.regions))}. If your account has it there, add the "
                "region to gpudr/core/data/catalog.yaml with its source",
            )
            continue
        if where.cloud == Cloud.GCP:
            zone = where.azs[0] if where.azs else ""
            if here.zones and zone not in here.zones:
                in_region = sorted(z for z in here.zones if z.startswith(f"{where.region}-"))
                r.error(
                    f"sites.{where.name}.azs[0]",
                    f"{_show(zone)} has no {here.instance_type} as far as gpudr's catalog knows; "
                    f"GPU pools go in the first zone; zones with it in {where.region}: "
                    f"{', '.join(in_region) or 'none listed'}",
                )
    if gpus_per_node is not None and gpus_per_node != offer.gpus_per_node:
        r.error(
            f"{path}.gpus_per_node",
            f"{gpus_per_node} does not match {offer.instance_type}, which has "
            f"{offer.gpus_per_node} GPUs; remove the field or set {offer.gpus_per_node}",
        )
    return gpu, offer.instance_type, offer.gpus_per_node, offer.efa_interfaces


def _onprem_gpu_fields(
    r: _Reader,
    s: dict[str, Any],
    path: str,
    site: OnPremSite,
    dr_sites: list[Site],
    gpu: str,
) -> tuple[str, str, int, int]:
    """A workload on premises: `gpu` is what its DR sites run it on (a catalog GPU, which may
    differ from the site's own model: the plan reports the difference); its nodes come from
    the site's inventory. No instance type: the primary runs on your own machines."""
    inv = site.gpus
    if "gpus_per_node" in s and s["gpus_per_node"] != inv.gpus_per_node:
        r.error(
            f"{path}.gpus_per_node",
            f"{_show(s['gpus_per_node'])} is not the {inv.gpus_per_node} of "
            f"sites.{site.name}.gpus; remove the field",
        )
    nodes = s.get("nodes")
    if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > inv.nodes:
        r.error(
            f"{path}.nodes",
            f"{nodes} is more than sites.{site.name}.gpus has ({inv.nodes}); use at most that",
        )
    for dr in dr_sites:
        offer = reference.gpu_offer(dr.cloud, gpu)
        if gpu and offer is None:
            r.error(
                f"{path}.gpu",
                f"{_show(gpu)} is not a GPU type gpudr knows on {dr.cloud} (site {dr.name}), "
                f"where it runs at failover; use one of {', '.join(reference.gpu_types(dr.cloud))}",
            )
        elif offer is not None and offer.regions and dr.region not in offer.regions:
            r.error(
                f"{path}.gpu",
                f'"{gpu}" ({offer.instance_type}) is not offered in {dr.region} (site {dr.name}) '
                f"as far as gpudr's catalog knows; regions that offer it: "
                f"{', '.join(sorted(offer.regions))}",
            )
    return gpu, "", inv.gpus_per_node, 0


def _check_onprem_data(
    r: _Reader, specs: Iterable[Checkpoints | Weights | Datasets | None]
) -> None:
    """From on premises, only the DR cloud's scheduled pull replicates: gpudr deploys no writer
    there, so an RPO of 0 (dual write) cannot be met and is refused with the fix."""
    for spec in specs:
        if spec is None or spec.site not in r.onprem:
            continue
        cls = {Checkpoints: "checkpoints", Weights: "weights", Datasets: "datasets"}[type(spec)]
        if spec.rpo_s == 0 or spec.replication == Mechanism.DUAL_WRITE:
            r.error(
                f"data.{cls}.rpo",
                f"0 needs dual write, which gpudr cannot deploy on premises (site {spec.site}); "
                "the DR cloud's scheduled pulls run at most hourly: set rpo to 2h or more",
            )


def _check_one_agent_per_job(
    r: _Reader, sites: dict[str, Site], specs: Iterable[Checkpoints | Weights | Datasets | None]
) -> None:
    """The plan sizes each class's run at one agent's rate where a job runs on one agent
    (enums.ONE_AGENT_PER_JOB), which holds only if no two classes share an agent."""
    for onprem in r.onprem.values():
        classes = sum(1 for spec in specs if spec is not None and spec.site == onprem.name)
        dr = next((d for d in sites.values() if d.protects == onprem.name), None)
        pulls = ONPREM_PAIRS[dr.cloud][0] if dr is not None and dr.cloud in ONPREM_PAIRS else ()
        if dr is None or not set(pulls) & set(ONE_AGENT_PER_JOB) or len(onprem.agents) >= classes:
            continue
        r.error(
            f"sites.{onprem.name}.agents",
            f"{len(onprem.agents)} for {classes} data classes: {dr.cloud} (site {dr.name}) runs "
            f"each class's job on one agent of its own; give at least {classes} agents",
        )


def _primary_site(
    r: _Reader, s: dict[str, Any], path: str, sites: dict[str, Site]
) -> Site | OnPremSite | None:
    primaries: list[Site | OnPremSite] = [x for x in sites.values() if x.role == SiteRole.PRIMARY]
    primaries += r.onprem.values()
    name = s.get("site")
    if name is None:
        if len(primaries) == 1:
            return primaries[0]
        if primaries:
            r.error(f"{path}.site", "is required when the plan has several primary sites")
        return None
    if str(name) in r.onprem:
        return r.onprem[str(name)]
    site = sites.get(str(name))
    if site is None:
        r.error(f"{path}.site", f"{_show(name)} is not a site in this plan")
        return None
    if site.role != SiteRole.PRIMARY:
        r.error(
            f"{path}.site",
            f"{_show(name)} is a dr site; declare workloads on the primary site, gpudr derives the "
            "DR side",
        )
        return None
    return site


def _parse_clusters(r: _Reader, raw: Any, sites: dict[str, Site]) -> dict[str, Cluster]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        r.error("clusters", f"{_show(raw)} is not a mapping of cluster name to cluster")
        return {}
    clusters: dict[str, Cluster] = {}
    for cname, craw in raw.items():
        path = f"clusters.{_key(cname)}"
        try:
            _name(cname)
        except ValueError as exc:
            r.error(path, str(exc))
            continue
        s = r.mapping(craw, path, ["site", "gpu", "nodes", "gpus_per_node", "rto", "pattern"])
        site = _primary_site(r, s, path, sites)
        drs = [x for x in sites.values() if site and x.protects == site.name]
        gpu, itype, gpn, efa = _gpu_fields(r, s, path, site, drs)
        nodes = r.convert(s, "nodes", path, _positive_int, required=True) or 1
        rto = r.target(s, "rto", path, _default_target("clusters", "rto"))
        pattern = r.request(s, "pattern", path, DR_PATTERNS)
        clusters[cname] = Cluster(
            name=cname,
            site=site.name if site else "",
            gpu=gpu,
            instance_type=itype,
            nodes=nodes,
            gpus_per_node=gpn,
            efa_interfaces=efa,
            rto_s=rto,
            pattern=None if pattern is None else Pattern(pattern),
        )
    return clusters


def _parse_services(
    r: _Reader, raw: Any, sites: dict[str, Site], clusters: dict[str, Cluster]
) -> dict[str, Service]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        r.error("services", f"{_show(raw)} is not a mapping of service name to service")
        return {}
    services: dict[str, Service] = {}
    for sname, sraw in raw.items():
        path = f"services.{_key(sname)}"
        try:
            _name(sname)
        except ValueError as exc:
            r.error(path, str(exc))
            continue
        s = r.mapping(
            sraw,
            path,
            ["site", "cluster", "gpu", "nodes", "gpus_per_node", "rpo", "rto", "pattern"],
        )
        site = _primary_site(r, s, path, sites)
        drs = [x for x in sites.values() if site and x.protects == site.name]
        gpu, itype, gpn, _ = _gpu_fields(r, s, path, site, drs)
        nodes = r.convert(s, "nodes", path, _positive_int, required=True) or 1
        host = s.get("cluster")
        on_site = [c for c in clusters.values() if site and c.site == site.name]
        if host is None:
            if len(on_site) == 1:
                host = on_site[0].name
            else:
                r.error(
                    f"{path}.cluster",
                    "is required; name the cluster (EKS control plane) the service runs in"
                    + (f": one of {', '.join(c.name for c in on_site)}" if on_site else ""),
                )
        elif (
            not isinstance(host, str)
            or host not in clusters
            or (site and clusters[host].site != site.name)
        ):
            r.error(f"{path}.cluster", f"{_show(host)} is not a cluster on the service's site")
        rpo = r.target(s, "rpo", path, _default_target("services", "rpo"))
        rto = r.target(s, "rto", path, _default_target("services", "rto"))
        pattern = r.request(s, "pattern", path, DR_PATTERNS)
        services[sname] = Service(
            name=sname,
            site=site.name if site else "",
            cluster=str(host or ""),
            gpu=gpu,
            instance_type=itype,
            nodes=nodes,
            gpus_per_node=gpn,
            rpo_s=rpo,
            rto_s=rto,
            pattern=None if pattern is None else Pattern(pattern),
        )
    return services


def _services_rpo(
    r: _Reader, raw: Any, services: dict[str, Service], weights: Weights | None
) -> dict[str, Service]:
    """A service's RPO is the age of the model it serves at the DR site: the RPO of the weights
    replicated from its site. Without weights there gpudr replicates nothing for the service,
    so no estimate can ever meet an RPO: one stated in the spec is refused with the fix, the
    default one is dropped (not applicable; the design says why)."""
    out: dict[str, Service] = {}
    for name, svc in services.items():
        # (weights whose site is in error are reported there, not again here)
        if svc.rpo_s is None or (weights is not None and weights.site in ("", svc.site)):
            out[name] = svc
            continue
        stated = (
            isinstance(raw, dict)
            and isinstance(raw.get(name), dict)
            and raw[name].get("rpo") is not None
        )
        if stated:
            r.error(
                f"services.{name}.rpo",
                f"{fmt_duration(svc.rpo_s)} cannot be judged: a service's RPO is the age of the "
                f"model weights it serves at the DR site, and the plan replicates no weights from "
                f"site {svc.site}; declare data.weights there, or set rpo: none if the model "
                "reaches the DR site another way (e.g. in the service's container image)",
            )
        out[name] = replace(svc, rpo_s=None)
    return out


def _spec_default(name: str) -> float:
    """A plan field's default from gpudr/core/data/defaults.yaml (`spec:`), where its source is."""
    value = reference.defaults()["spec"][name]["value"]
    return parse_duration(value) if isinstance(value, str) else float(value)


def _default_target(kind: str, which: str) -> float | None:
    value = reference.defaults()["targets"][kind][which]
    return None if value is None else parse_duration(value)


def _replication(
    r: _Reader, s: dict[str, Any], path: str, rpo: float | None, cls: DataClass
) -> Mechanism | None:
    """The class's `replication:`; None for auto."""
    choice = r.request(s, "replication", path, REPLICATION_CHOICES[1:])
    mechanism = None if choice is None else Mechanism(choice)
    if rpo == 0 and mechanism not in (None, Mechanism.DUAL_WRITE):
        r.error(
            f"{path}.rpo",
            f"0 needs synchronous replication, but replication: {mechanism} is asynchronous "
            "(the best managed bound is 15m); set replication: dual-write, or rpo: 15m or more",
        )
    if rpo == 0 and mechanism is None and cls != DataClass.WEIGHTS:
        r.error(
            f"{path}.rpo",
            f"0 on {cls} needs synchronous dual-write, which slows every write (the brief quotes "
            "15-20% on training); set replication: dual-write to accept that, or rpo: 15m or more",
        )
    return mechanism


def _parse_checkpoints(r: _Reader, raw: Any, sites: dict[str, Site]) -> Checkpoints | None:
    if raw is None:
        return None
    path = "data.checkpoints"
    s = r.mapping(
        raw,
        path,
        [
            "site",
            "size",
            "interval",
            "keep",
            "dedup_ratio",
            "compression_ratio",
            "archive_after",
            "rpo",
            "rto",
            "replication",
            "dual_write_slowdown",
        ],
    )
    site = _primary_site(r, s, path, sites)
    size = r.convert(s, "size", path, _size, required=True) or 0.0
    interval = r.convert(s, "interval", path, parse_duration, required=True)
    slowdown = r.convert(
        s, "dual_write_slowdown", path, _ratio(0.0, 1.0, True), _spec_default("dual_write_slowdown")
    )
    keep = r.convert(s, "keep", path, _positive_int, int(_spec_default("keep"))) or 1
    dedup = r.convert(s, "dedup_ratio", path, _ratio(0.0, 1.0, True), _spec_default("dedup_ratio"))
    comp = r.convert(
        s, "compression_ratio", path, _at_least(1.0), _spec_default("compression_ratio")
    )
    archive = r.convert(s, "archive_after", path, parse_duration, _spec_default("archive_after"))
    archive = _spec_default("archive_after") if archive is None else archive
    rpo = r.target(s, "rpo", path, _default_target("checkpoints", "rpo"))
    rto = r.target(s, "rto", path, _default_target("checkpoints", "rto"))
    if interval is not None and interval <= 0:
        r.error(f"{path}.interval", "must be longer than 0; use e.g. 45m")
        interval = None
    if interval is not None and rpo is not None and rpo < interval:
        r.error(
            f"{path}.rpo",
            f"{fmt_duration(rpo)} is shorter than the checkpoint interval "
            f"{fmt_duration(interval)}: "
            "work since the last checkpoint is always lost; checkpoint more often or set rpo to "
            f"at least {fmt_duration(interval)} plus the replication lag",
        )
    replication = None
    if rpo != 0:
        replication = _replication(r, s, path, rpo, DataClass.CHECKPOINTS)
    if archive < 86400:
        r.error(f"{path}.archive_after", "must be at least 1d (S3 lifecycle counts whole days)")
    return Checkpoints(
        site=site.name if site else "",
        size_b=size,
        interval_s=interval or 0.0,
        keep=keep,
        dedup_ratio=_spec_default("dedup_ratio") if dedup is None else dedup,
        compression_ratio=_spec_default("compression_ratio") if comp is None else comp,
        archive_after_s=archive,
        rpo_s=rpo,
        rto_s=rto,
        replication=replication,
        dual_write_slowdown=_spec_default("dual_write_slowdown") if slowdown is None else slowdown,
    )


def _parse_weights(r: _Reader, raw: Any, sites: dict[str, Site]) -> Weights | None:
    if raw is None:
        return None
    path = "data.weights"
    s = r.mapping(
        raw,
        path,
        [
            "site",
            "size",
            "retention",
            "publish_window",
            "publishes_per_month",
            "rpo",
            "rto",
            "replication",
            "lock",
        ],
    )
    site = _primary_site(r, s, path, sites)
    size = r.convert(s, "size", path, _size, required=True) or 0.0
    retention = r.convert(s, "retention", path, parse_duration, _spec_default("retention")) or 0.0
    if retention < 86400:
        r.error(
            f"{path}.retention",
            "must be at least 1d: every weights version is write-once for it (S3 Object Lock, "
            "GCS retention, Azure immutability)",
        )
    lock = r.choice(s, "lock", path, tuple(WeightsLock), default_weights_lock())
    window = r.convert(s, "publish_window", path, parse_duration, _spec_default("publish_window"))
    if window is None or window <= 0:
        r.error(f"{path}.publish_window", "must be longer than 0; use e.g. 1h")
        window = _spec_default("publish_window")
    publishes = r.convert(
        s,
        "publishes_per_month",
        path,
        _at_least(0.0, *PUBLISHES_MAX),
        _spec_default("publishes_per_month"),
    )
    rpo = r.target(s, "rpo", path, _default_target("weights", "rpo"))
    rto = r.target(s, "rto", path, _default_target("weights", "rto"))
    replication = _replication(r, s, path, rpo, DataClass.WEIGHTS)
    return Weights(
        site=site.name if site else "",
        size_b=size,
        retention_s=retention,
        publish_window_s=window,
        publishes_per_month=_spec_default("publishes_per_month")
        if publishes is None
        else publishes,
        rpo_s=rpo,
        rto_s=rto,
        replication=replication,
        lock=WeightsLock(lock),
    )


def default_weights_lock() -> WeightsLock:
    """The weights lock a plan gets when it states none (reference data, with its reason)."""
    return WeightsLock(reference.defaults()["spec"]["lock"]["value"])


def _parse_datasets(r: _Reader, raw: Any, sites: dict[str, Site]) -> Datasets | None:
    if raw is None:
        return None
    path = "data.datasets"
    s = r.mapping(
        raw, path, ["site", "size", "daily_change", "refresh", "rpo", "rto", "replication"]
    )
    site = _primary_site(r, s, path, sites)
    size = r.convert(s, "size", path, _size, required=True) or 0.0
    change = r.convert(s, "daily_change", path, parse_size, 0.0) or 0.0
    if size and change > size:
        r.error(f"{path}.daily_change", "is larger than the dataset; check the units")
    rpo = r.target(s, "rpo", path, _default_target("datasets", "rpo"))
    rto = r.target(s, "rto", path, _default_target("datasets", "rto"))
    replication = _replication(r, s, path, rpo, DataClass.DATASETS)
    return Datasets(
        site=site.name if site else "",
        size_b=size,
        daily_change_b=change,
        rpo_s=rpo,
        rto_s=rto,
        replication=replication,
        refresh=_parse_refresh(r, s.get("refresh"), f"{path}.refresh", size, rpo),
    )


def _parse_refresh(
    r: _Reader, raw: Any, path: str, dataset_b: float, rpo_s: float | None
) -> Refresh | None:
    """`refresh: {size: 100TB, every: 7d}`: `size` bytes rewritten at once every `every`, which
    must reach the DR site within the RPO (sized as size x 8 / RPO beside the daily change)."""
    if raw is None:
        return None
    s = r.mapping(raw, path, ["size", "every"])
    if not isinstance(raw, dict):
        return None
    size = r.convert(s, "size", path, _size, required=True)
    every = r.convert(s, "every", path, parse_duration, required=True)
    if size is not None and dataset_b and size > dataset_b:
        r.error(f"{path}.size", "is larger than the dataset; check the units")
    if every is not None and every <= 0:
        r.error(f"{path}.every", "must be longer than 0; use e.g. 7d")
        every = None
    if rpo_s == 0:
        r.error(
            f"{path}",
            "a dual-written refresh (rpo 0) reaches the DR site as fast as its job writes it, "
            "which the plan cannot size; set data.datasets.rpo to the time a refresh may take "
            "to reach the DR site (e.g. 6h)",
        )
    if size is None or every is None:
        return None
    return Refresh(size_b=size, every_s=every)


def _parse_drill(
    r: _Reader, raw: Any, clusters: dict[str, Cluster], services: dict[str, Service]
) -> DrillSpec:
    """`drill: {nodes: 1, pools: {train: 2}, ttl: 4h, verify: 2GB, cidr: 10.99.0.0/16,
    schedule: "17 3 * * 1"}`: every field optional. A pool is named as in the plan (a cluster or a
    service); its test size may not exceed its full size (a drill larger than the failover proves
    nothing more). The schedule runs at most daily (core/cron.py) and is not the daily cleanup's:
    the workflow tells the two apart by their cron."""
    path = "drill"
    base = default_drill()
    s = r.mapping(raw, path, ["nodes", "pools", "ttl", "verify", "cidr", "schedule"])
    full = {c.name: (c.pool_name, c.nodes) for c in clusters.values()}
    full.update({v.name: (v.pool_name, v.nodes) for v in services.values()})
    nodes = r.convert(s, "nodes", path, _positive_int, base.nodes) or base.nodes
    for name, (_, size) in full.items():
        if "nodes" in s and nodes > size:
            r.error(
                f"{path}.nodes",
                f"{nodes} is more than {name}'s {size} node(s); a drill runs each pool at most "
                f"at its full size: set drill.pools.{name}: {size} or lower drill.nodes",
            )
    pools: dict[str, int] = {}
    raw_pools = s.get("pools")
    if raw_pools is not None and not isinstance(raw_pools, dict):
        r.error(f"{path}.pools", f"{_show(raw_pools)} is not a mapping of pool name to nodes")
        raw_pools = {}
    for name, value in (raw_pools or {}).items():
        where = f"{path}.pools.{_key(name)}"
        if name not in full:
            r.error(
                where,
                "is not a cluster or service of this plan; use one of "
                + ", ".join(sorted(full) or ["(none)"]),
            )
            continue
        pool, size = full[name]
        try:
            count = _positive_int(value)
        except ValueError as exc:
            r.error(where, str(exc))
            continue
        if count > size:
            r.error(where, f"{count} is more than {name}'s {size} node(s); use at most {size}")
            continue
        pools[pool] = count
    ttl = r.convert(s, "ttl", path, parse_duration, base.ttl_s)
    ttl = base.ttl_s if ttl is None else ttl
    low, high = drill_default("min_ttl"), DRILL_MAX_TTL_S
    if not low <= ttl <= high:
        r.error(
            f"{path}.ttl",
            f"{fmt_duration(ttl)} is outside {fmt_duration(low)}..{fmt_duration(high)}; a drill "
            "needs time to create its control plane and must not outlive a day",
        )
        ttl = base.ttl_s
    verify = r.convert(s, "verify", path, _size, base.verify_b)
    # The drill network is isolated: it may reuse any range, the DR site's own included.
    cidr = r.convert(s, "cidr", path, _cidr)
    schedule = r.convert(s, "schedule", path, parse_schedule, base.schedule) or base.schedule
    cleanup = drill_schedule("cleanup_schedule")
    if schedule == cleanup:
        r.error(
            f"{path}.schedule",
            f'"{schedule}" is the daily cleanup\'s schedule (the workflow tells a drill from a '
            'cleanup by it); use another minute, e.g. "17 3 * * 1"',
        )
        schedule = base.schedule
    return DrillSpec(
        nodes=nodes,
        pools=pools,
        ttl_s=ttl,
        verify_b=base.verify_b if verify is None else verify,
        cidr=cidr,
        schedule=schedule,
    )


def _parse_logging(r: _Reader, raw: Any) -> Logging:
    """`logging: {retention: 365d, access_logs: 20GB, flow_logs: 50GB, cluster_logs: 30GB}`:
    every field optional. Retention is whole days within what every cloud's sink can hold."""
    path = "logging"
    base = default_logging()
    s = r.mapping(raw, path, list(_LOGGING_KEYS))
    values = asdict(base)
    del values["overridden"]
    for key, attr in _LOGGING_KEYS.items():
        convert = parse_duration if key == "retention" else _size
        value = r.convert(s, key, path, convert, None)
        if value is not None:
            values[attr] = value
    retention = values["retention_s"]
    low, high = logging_default("min_retention"), logging_default("max_retention")
    if not low <= retention <= high or retention % 86400:
        r.error(
            f"{path}.retention",
            f"{fmt_duration(retention)} is not whole days within {fmt_duration(low)}.."
            f"{fmt_duration(high)}; a Log Analytics workspace keeps logs interactively for at "
            "most 730 days, and a shorter trail proves nothing in an audit",
        )
        values["retention_s"] = base.retention_s
    overridden = frozenset(attr for key, attr in _LOGGING_KEYS.items() if key in s)
    return Logging(**values, overridden=overridden)


def _parse_recovery(r: _Reader, raw: Any) -> Recovery:
    s = r.mapping(raw, "recovery", list(_RECOVERY_KEYS))
    values: dict[str, float] = {}
    overridden = frozenset(attr for key, attr in _RECOVERY_KEYS.items() if key in s)
    ceiling = r.convert(s, "storage_read_gbps", "recovery", _positive_rate, None)
    for key, attr in _RECOVERY_KEYS.items():
        if key == "storage_read_gbps":
            continue
        default = reference.recovery_default(attr)
        if key in _RECOVERY_RATES:
            value = r.convert(s, key, "recovery", _positive_rate, default)
        else:
            value = r.convert(s, key, "recovery", parse_duration, default)
        values[attr] = default if value is None else value
    return Recovery(**values, storage_read_gbps=ceiling, overridden=overridden)


def _positive_rate(value: Any) -> float:
    rate = parse_rate_gbps(value)
    if rate <= 0 or math.isinf(rate):
        raise ValueError(f"{_show(value)} must be a bandwidth above 0")
    return rate


def _parse_quotas(r: _Reader, raw: Any) -> Quotas:
    keys = (
        "s3_rtc_gbps",
        "tgw_peering_gbps",
        "sts_gbps",
        "datasync_gbps",
        "gcs_turbo_gbps",
        "gcs_dual_region_gbps",
        "datasync_agent_gbps",
        "sts_agent_gbps",
        "storage_mover_agent_gbps",
        "azcopy_gbps",
    )
    s = r.mapping(raw, "quotas", keys)
    values: dict[str, float] = {}
    for key in keys:
        value = r.convert(s, key, "quotas", _positive_rate, None)
        values[key] = value if value is not None else reference.quota_default(key)
    return Quotas(**values, overridden=frozenset(k for k in keys if k in s))
