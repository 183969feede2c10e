"""The tag schema: what the writer puts on a bucket, the reader gets back, on every cloud."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gpudr.build.stackconfig import build_site_configs
from gpudr.contract import tags
from gpudr.contract.site import BucketConfig, SiteConfig
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT


def _site_and_bucket(example: str, site: str, data_class: str) -> tuple[SiteConfig, BucketConfig]:
    cfg = build_site_configs(design(load_plan(ROOT / "examples" / f"{example}.yaml")))[site]
    return cfg, next(b for b in cfg.buckets if b.data_class == data_class)


def _as_written(cloud: str, written: dict[str, str]) -> dict[str, Any]:
    """Tags as the cloud stores them: GCP keeps labels only."""
    return tags.gcp_labels(written) if cloud == "gcp" else written


@pytest.mark.parametrize(
    ("example", "site", "data_class"),
    [
        ("aws-two-region", "use1", "checkpoints"),
        ("aws-two-region", "usw2", "weights"),
        ("gcp-to-aws", "use1", "datasets"),
        ("aws-to-gcp", "gcpe4", "checkpoints"),
        ("azure-two-region", "eus", "checkpoints"),
        ("azure-to-gcp", "gcpe4", "datasets"),
    ],
)
def test_what_the_writer_puts_the_reader_gets_back(
    example: str, site: str, data_class: str
) -> None:
    cfg, bucket = _site_and_bucket(example, site, data_class)
    found = _as_written(cfg.cloud, tags.bucket_tags(cfg, bucket))
    assert tags.missing_bucket_tags(cfg.cloud, found) == []
    facts = tags.read_bucket_tags(cfg.cloud, found)
    assert facts.data_class == bucket.data_class
    assert facts.role == f"data-{bucket.role}"
    assert facts.mechanism == bucket.mechanism
    assert facts.rpo_s == bucket.rpo_s
    assert facts.interval_s == bucket.interval_s
    assert facts.burst_bytes == bucket.burst_bytes  # whole bytes, as the planner sizes them
    assert facts.steady_mbps == pytest.approx(bucket.steady_gbps * 1000, abs=1e-9)
    assert facts.publish_window_s == bucket.publish_window_s
    assert facts.quota_mbps == (None if bucket.quota_gbps is None else bucket.quota_gbps * 1000)


@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
@pytest.mark.parametrize(
    ("field", "value"),
    [("rpo_s", 3600.25), ("interval_s", 2700.5), ("quota_gbps", 1.2345), ("rpo_s", None)],
)
def test_fractional_and_absent_numbers_survive_every_cloud(
    cloud: str, field: str, value: float | None
) -> None:
    """A fractional RPO or quota keeps three decimals (a GCP label writes the point as `-`);
    truncating them would let the pack judge another number than the planner did."""
    cfg, bucket = _site_and_bucket("aws-two-region", "use1", "checkpoints")
    facts = tags.read_bucket_tags(
        cloud, _as_written(cloud, tags.bucket_tags(cfg, replace(bucket, **{field: value})))
    )
    read = {"rpo_s": facts.rpo_s, "interval_s": facts.interval_s, "quota_gbps": facts.quota_mbps}
    expected = value * 1000 if field == "quota_gbps" and value is not None else value
    assert read[field] == pytest.approx(expected) if expected is not None else read[field] is None


def test_a_bucket_missing_sizing_tags_is_named() -> None:
    cfg, bucket = _site_and_bucket("aws-two-region", "use1", "checkpoints")
    written = tags.bucket_tags(cfg, bucket)
    del written["gpudr:burst-bytes"], written["gpudr:rpo-s"]
    assert tags.missing_bucket_tags("aws", written) == ["gpudr:rpo-s", "gpudr:burst-bytes"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7200", 7200.0),
        ("790.123", 790.123),
        ("790-123", 790.123),  # a GCP label's decimal point
        (3.0, 3.0),
        ("none", None),
        (True, None),
        ("inf", None),
        (float("nan"), None),
        ("1-2-3", None),
    ],
)
def test_number(value: Any, expected: float | None) -> None:
    assert tags.number(value) == expected


def test_every_tag_the_writer_uses_is_in_the_schema() -> None:
    """`site_tags` refuses a name the schema does not list: a tag cannot be spelt two ways."""
    cfg, _ = _site_and_bucket("aws-two-region", "use1", "checkpoints")
    with pytest.raises(ValueError):
        tags.site_tags(cfg, tags.DrRole.NETWORK, owner="sre")
