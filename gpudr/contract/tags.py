"""The tag schema: every gpudr tag, its one writer and its one reader.

The components write these tags on every taggable resource (labels on GCP) for audit, for
`gpudr drill cleanup`, and for the policy pack, which recomputes each data class's bandwidth
need and RPO from the raw sizing facts rather than trusting the planner's answer. Writer and
reader live together so that a tag cannot be spelt one way and read another.

On AWS and Azure a tag is `gpudr:<name>` with its value as written. GCP labels allow only lower
case letters, digits, `_` and `-`, so there the key is `gpudr-<name>` and the value is lowered
with every other character replaced by `-` (`790.123` becomes `790-123`); the reader undoes
that for numbers.

Standard library only: the Pulumi program and the policy pack read this module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gpudr.contract.site import BucketConfig, SiteConfig
from gpudr.core.enums import UNBOUNDED, Cloud

PREFIX = "gpudr:"
GCP_PREFIX = "gpudr-"
GCP_LABEL_MAX = 63


class Tag(StrEnum):
    """Every tag gpudr writes, by its short name (`gpudr:<name>` in full)."""

    SYSTEM = "system"
    SITE = "site"
    SITE_ROLE = "site-role"
    DR_ROLE = "dr-role"
    # data buckets: the class, its targets and the raw sizing facts
    DATA_CLASS = "data-class"
    RPO_S = "rpo-s"
    RTO_S = "rto-s"
    MECHANISM = "mechanism"
    BURST_BYTES = "burst-bytes"
    STEADY_MBPS = "steady-mbps"
    STEADY_KBPS = "steady-kbps"  # integer: GCP label values cannot hold a decimal point
    REQUIRED_MBPS = "required-mbps"  # the planner's answer, for audit; the pack never reads it
    INTERVAL_S = "interval-s"
    PUBLISH_WINDOW_S = "publish-window-s"
    QUOTA_MBPS = "quota-mbps"
    # what one run may use whatever the path carries: its job runs on one agent (Storage Mover)
    AGENT_MBPS = "agent-mbps"
    # A replica an AzCopy job copies into: the S3 bucket the job must read (the pack refuses a
    # job reading any other)
    SOURCE_BUCKET = "source-bucket"
    # a write-once (weights) copy: compliance, or governance for a trial the pack must approve
    LOCK = "lock"
    # GPU pools
    POOL = "pool"
    PATTERN = "pattern"
    NODES = "nodes"
    WARM_FRACTION = "warm-fraction"
    # other resources' context
    CLUSTER = "cluster"
    PEER = "peer"
    LINK = "link"
    # a Cross-Cloud Interconnect's AWS ports: the Google location (edge availability domain)
    # each is cross-connected to, by which the pack takes one domain down
    EDGE_DOMAIN = "edge-domain"
    DR_SITE = "dr-site"
    # drills: what `gpudr drill cleanup` finds a drill's resources and stack by
    DRILL = "drill"
    EXPIRES_AT = "expires-at"

    @property
    def key(self) -> str:
        """The full tag key on AWS and Azure: `gpudr:<name>`."""
        return PREFIX + self.value


class DrRole(StrEnum):
    """What a resource is for, in `gpudr:dr-role` (a drill's resources: `drill-<role>`)."""

    DATA_SOURCE = "data-source"
    DATA_REPLICA = "data-replica"
    DATA_DUAL_REGION = "data-dual-region"
    DATA_KEY = "data-key"
    GPU_CLUSTER = "gpu-cluster"
    GPU_POOL = "gpu-pool"
    NETWORK = "network"
    RESOURCE_GROUP = "resource-group"
    DR_LINK = "dr-link"
    REPLICATION = "replication"
    TRANSFER = "transfer"
    TRANSFER_LOGS = "transfer-logs"
    SITE_LOGS = "site-logs"  # the site's log sink: access, flow and control-plane logs
    TRANSFER_READER = "transfer-reader"
    READER = "reader"
    WRITER = "writer"  # a dual-written class's writer identity and its grant on this copy


# A data class's copies: the resources that carry its sizing tags.
DATA_ROLES = (DrRole.DATA_SOURCE, DrRole.DATA_REPLICA, DrRole.DATA_DUAL_REGION)
TAG_DRILL = Tag.DRILL.key
TAG_EXPIRES = Tag.EXPIRES_AT.key


def data_role(bucket_role: str) -> DrRole:
    """The dr-role of a data bucket whose config role is source, replica or dual-region."""
    return DrRole(f"data-{bucket_role}")


# --- the writer -------------------------------------------------------------------------------


def _number(value: float | None) -> str:
    """A number as a tag value: `none`, a whole number as an integer, else up to three decimals
    (GCP labels turn the point into `-`, which `number` reads back)."""
    if value is None:
        return "none"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _required_mbps(gbps: float | None) -> str:
    """The planner's need in Mbps; `unbounded` when no bandwidth meets the RPO (an asynchronous
    copy of a checkpoint whose interval is the whole RPO), which the stack config carries as
    null (it holds no infinities)."""
    if gbps is None or not math.isfinite(gbps):
        return UNBOUNDED
    return f"{gbps * 1000:.3f}"


def site_tags(site: SiteConfig, dr_role: str, **extra: str) -> dict[str, str]:
    """The tags every resource of a site carries, and `extra` ones (`data_class=` writes
    `gpudr:data-class`)."""
    tags = {
        Tag.SYSTEM.key: site.system,
        Tag.SITE.key: site.site,
        Tag.SITE_ROLE.key: site.role,
        Tag.DR_ROLE.key: str(dr_role),
    }
    tags.update({Tag(k.replace("_", "-")).key: v for k, v in extra.items()})
    return tags


def bucket_tags(site: SiteConfig, bucket: BucketConfig) -> dict[str, str]:
    """The data class's recovery target and the raw sizing inputs (burst, steady rate, interval,
    publish window, asserted quota), so that the policy pack recomputes the bandwidth need.
    `required-mbps` is the planner's answer, kept for audit; the pack does not read it."""
    extra = {
        "data_class": bucket.data_class,
        "rpo_s": _number(bucket.rpo_s),
        "rto_s": _number(bucket.rto_s),
        "mechanism": bucket.mechanism,
        "burst_bytes": str(int(bucket.burst_bytes)),
        "steady_mbps": f"{bucket.steady_gbps * 1000:.3f}",
        "steady_kbps": str(round(bucket.steady_gbps * 1e6)),
        "required_mbps": _required_mbps(bucket.required_gbps),
        "interval_s": _number(bucket.interval_s),
    }
    if bucket.publish_window_s is not None:
        extra["publish_window_s"] = _number(bucket.publish_window_s)
    if bucket.quota_gbps is not None:
        extra["quota_mbps"] = _number(round(bucket.quota_gbps * 1000, 3))
    if bucket.agent_gbps is not None:
        extra["agent_mbps"] = _number(round(bucket.agent_gbps * 1000, 3))
    if bucket.object_lock_days is not None:
        extra["lock"] = bucket.object_lock_mode
    azcopy = [t for t in bucket.inbound if t.service == "azcopy"]
    if azcopy:
        extra["source_bucket"] = azcopy[0].source_bucket
    return site_tags(site, data_role(bucket.role), **extra)


def pool_tags(site: SiteConfig, pool: str, pattern: str, rto_s: float | None) -> dict[str, str]:
    """The pool's pattern and the primary capacity it must reach (`nodes`); a warm standby's
    stated floor fraction. The pack checks the registered scaling bounds against them."""
    extra = {"pool": pool, "pattern": pattern, "rto_s": _number(rto_s)}
    config = next((p for c in site.clusters for p in c.pools if p.name == pool), None)
    if config is not None:
        extra["nodes"] = str(config.nodes)
        if config.warm_fraction is not None:
            extra["warm_fraction"] = f"{config.warm_fraction:g}"
    return site_tags(site, DrRole.GPU_POOL, **extra)


def gcp_label(text: str) -> str:
    """A tag key or value as a GCP label: lower case, only letters, digits, `_` and `-`, at
    most 63 characters (`gpudr:rpo-s` becomes `gpudr-rpo-s`)."""
    return "".join(c if c.isalnum() or c in "_-" else "-" for c in text.lower())[:GCP_LABEL_MAX]


def gcp_labels(tags: Mapping[str, str]) -> dict[str, str]:
    """GCP labels from gpudr tags, keys and values through `gcp_label`."""
    return {gcp_label(k): gcp_label(v) for k, v in tags.items()}


# --- the reader -------------------------------------------------------------------------------


def tag_key(cloud: str, name: str) -> str:
    """Where tag `name` is found on `cloud`: `gpudr:<name>`, or the label `gpudr-<name>`."""
    return GCP_PREFIX + gcp_label(name) if cloud == Cloud.GCP else PREFIX + name


def read_tag(cloud: str, tags: Mapping[str, Any], name: str) -> str | None:
    """The value of tag `name` in a resource's tags (labels on GCP), or None."""
    value = tags.get(tag_key(cloud, name))
    return None if value is None else str(value)


def tag_is(cloud: str, tags: Mapping[str, Any], name: str, *expected: str) -> bool:
    """Whether tag `name` holds one of `expected` (compared as GCP writes them on GCP)."""
    value = read_tag(cloud, tags, name)
    if value is None:
        return False
    return any(value == (gcp_label(e) if cloud == Cloud.GCP else e) for e in expected)


_GCP_DECIMAL = re.compile(r"^\d+-\d+$")  # "790-123": a GCP label's "790.123"


def number(value: Any) -> float | None:
    """A number from a float, an int, or a string such as `"7200"`, `"790.123"` or the GCP
    label form `"790-123"`; None for None, `"none"`, booleans, non-finite values and anything
    else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _GCP_DECIMAL.match(text):
        text = text.replace("-", ".")
    try:
        result = float(text)
    except ValueError:
        return None
    return result if math.isfinite(result) else None


@dataclass(frozen=True)
class BucketTags:
    """One data bucket's sizing tags, as numbers: what the bandwidth and RPO checks recompute
    from. `gpudr:required-mbps` (the planner's answer) is deliberately not read."""

    data_class: str
    role: str  # the dr-role: data-source | data-replica | data-dual-region
    mechanism: str
    rpo_s: float | None
    interval_s: float
    burst_bytes: float
    steady_mbps: float
    publish_window_s: float | None
    quota_mbps: float | None
    agent_mbps: float | None = None
    source_bucket: str | None = None  # azcopy replicas: the S3 bucket their jobs read


REQUIRED_BUCKET_TAGS = (Tag.DATA_CLASS, Tag.MECHANISM, Tag.RPO_S, Tag.BURST_BYTES, Tag.STEADY_KBPS)


def missing_bucket_tags(cloud: str, tags: Mapping[str, Any]) -> list[str]:
    """The full keys of the sizing tags a data bucket lacks."""
    return [n.key for n in REQUIRED_BUCKET_TAGS if read_tag(cloud, tags, n) is None]


def read_bucket_tags(cloud: str, tags: Mapping[str, Any]) -> BucketTags:
    """A data bucket's sizing facts; check `missing_bucket_tags` first."""

    def num(name: Tag) -> float | None:
        return number(read_tag(cloud, tags, name))

    return BucketTags(
        data_class=read_tag(cloud, tags, Tag.DATA_CLASS) or "",
        role=read_tag(cloud, tags, Tag.DR_ROLE) or "",
        mechanism=read_tag(cloud, tags, Tag.MECHANISM) or "",
        rpo_s=num(Tag.RPO_S),
        interval_s=num(Tag.INTERVAL_S) or 0.0,
        burst_bytes=num(Tag.BURST_BYTES) or 0.0,
        steady_mbps=(num(Tag.STEADY_KBPS) or 0.0) / 1000,
        publish_window_s=num(Tag.PUBLISH_WINDOW_S),
        quota_mbps=num(Tag.QUOTA_MBPS),
        agent_mbps=num(Tag.AGENT_MBPS),
        source_bucket=read_tag(cloud, tags, Tag.SOURCE_BUCKET),
    )
