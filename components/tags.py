"""DR role tags on every taggable resource: for audit, and for the policy pack, which recomputes
each data class's bandwidth need from them rather than trusting the planner's answer."""

from __future__ import annotations

from collections.abc import Iterable

from gpudr.drill import DrillConfig, ttl_tags
from gpudr.stackconfig import BucketConfig, PoolConfig, SiteConfig

PREFIX = "gpudr:"


def _seconds(value: float | None) -> str:
    return "none" if value is None else str(int(value))


def site_tags(site: SiteConfig, dr_role: str, **extra: str) -> dict[str, str]:
    tags = {
        f"{PREFIX}system": site.system,
        f"{PREFIX}site": site.site,
        f"{PREFIX}site-role": site.role,
        f"{PREFIX}dr-role": dr_role,
    }
    tags.update({f"{PREFIX}{k.replace('_', '-')}": v for k, v in extra.items()})
    return tags


def bucket_tags(site: SiteConfig, bucket: BucketConfig) -> dict[str, str]:
    """The data class's recovery target and the raw sizing inputs (burst, steady rate, interval,
    publish window, asserted quota), so that the policy pack recomputes the bandwidth need.
    `required-mbps` is the planner's answer, kept for audit; the pack does not read it."""
    extra = {
        "data_class": bucket.data_class,
        "rpo_s": _seconds(bucket.rpo_s),
        "rto_s": _seconds(bucket.rto_s),
        "mechanism": bucket.mechanism,
        "burst_bytes": str(int(bucket.burst_bytes)),
        "steady_mbps": f"{bucket.steady_gbps * 1000:.3f}",
        # Integer too: GCP label values cannot hold a decimal point.
        "steady_kbps": str(round(bucket.steady_gbps * 1e6)),
        "required_mbps": f"{bucket.required_gbps * 1000:.3f}",
        "interval_s": _seconds(bucket.interval_s),
    }
    if bucket.publish_window_s is not None:
        extra["publish_window_s"] = _seconds(bucket.publish_window_s)
    if bucket.quota_gbps is not None:
        extra["quota_mbps"] = f"{bucket.quota_gbps * 1000:.0f}"
    return site_tags(site, f"data-{bucket.role}", **extra)


def pool_tags(site: SiteConfig, pool: str, pattern: str, rto_s: float | None) -> dict[str, str]:
    """The pool's pattern and the primary capacity it must reach (`nodes`); a warm standby's
    stated floor fraction. The pack checks the registered scaling bounds against them."""
    extra = {"pool": pool, "pattern": pattern, "rto_s": _seconds(rto_s)}
    config = next((p for c in site.clusters for p in c.pools if p.name == pool), None)
    if config is not None:
        extra["nodes"] = str(config.nodes)
        if config.warm_fraction is not None:
            extra["warm_fraction"] = f"{config.warm_fraction:g}"
    return site_tags(site, "gpu-pool", **extra)


def gcp_labels(tags: dict[str, str]) -> dict[str, str]:
    """GCP labels from gpudr tags: keys and values lowercase, only letters, digits, `_` and
    `-`, at most 63 characters (`gpudr:rpo-s` becomes `gpudr-rpo-s`)."""

    def clean(text: str) -> str:
        out = "".join(c if c.isalnum() or c in "_-" else "-" for c in text.lower())
        return out[:63]

    return {clean(k): clean(v) for k, v in tags.items()}


def drill_tags(site: SiteConfig, drill: DrillConfig, dr_role: str, **extra: str) -> dict[str, str]:
    """A drill resource's tags: the site's, with its role in the drill, and the drill id and
    expiry that `gpudr drill cleanup` (and anyone auditing the bill) finds it by."""
    return {**site_tags(site, f"drill-{dr_role}", **extra), **ttl_tags(drill)}


def drill_pool_tags(
    site: SiteConfig, drill: DrillConfig, pools: Iterable[PoolConfig]
) -> dict[str, dict[str, str]]:
    """Per drill pool: its pool tags (what gpu-standby-sizing reads) and the drill's TTL tags."""
    return {
        p.name: {**pool_tags(site, p.name, p.pattern, p.rto_s), **ttl_tags(drill)} for p in pools
    }
