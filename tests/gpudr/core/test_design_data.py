"""Issue 16, data: the datasets' need honours their RPO (a bulk refresh must reach the DR site
within it), and the weights' lock is a plan setting whose irreversible form is named.

Before: the datasets' need was the daily change / 86,400 s at any RPO (9.26 Gbps for 100 TB/day
at both 24 h and 1 h) with no way to state a refresh; weights always deployed a 365-day
compliance lock, which the plan did not mention.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpudr.build.irreversible import irreversible_settings
from gpudr.build.stackconfig import build_site_configs
from gpudr.contract.tags import Tag, bucket_tags
from gpudr.core.cost import SECONDS_PER_MONTH
from gpudr.core.design import DataFlow, Design, design
from gpudr.core.spec import load_plan, parse_plan
from tests.conftest import ROOT

TB = 1e12
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.yaml"))


def _flow(d: Design, cls: str) -> DataFlow:
    return next(f for f in d.flows if f.data_class == cls)


@pytest.mark.parametrize(
    ("rpo", "refresh", "need_gbps"),
    [
        # The case: 100 TB/day, 9.26 Gbps at either RPO (the change spread over the day).
        pytest.param("24h", None, 9.259259, id="spread-24h"),
        pytest.param("1h", None, 9.259259, id="spread-1h"),
        # 1 TB/day beside a weekly 100 TB refresh: 222.2 Gbps within 1 h, 9.26 within 24 h.
        pytest.param("1h", {"size": "100TB", "every": "7d"}, 222.222222 + 0.092593, id="1h"),
        pytest.param("24h", {"size": "100TB", "every": "7d"}, 9.259259 + 0.092593, id="24h"),
    ],
)
def test_dataset_need_follows_the_refresh_and_its_rpo(
    example_raw: dict[str, Any], rpo: str, refresh: dict[str, str] | None, need_gbps: float
) -> None:
    datasets = example_raw["data"]["datasets"]
    datasets.update(rpo=rpo, daily_change="100TB" if refresh is None else "1TB")
    if refresh is not None:
        datasets["refresh"] = refresh
    d = design(parse_plan(example_raw))
    row = next(w for w in d.workloads if w.name == "datasets")
    assert row.required_gbps == pytest.approx(need_gbps, rel=1e-5)
    note = "refresh every 7d must reach the DR site within the" if refresh else "spread evenly"
    assert any(note in n for n in row.notes), row.notes


def test_the_assumption_is_stated_without_a_refresh() -> None:
    d = design(load_plan(ROOT / "examples/aws-two-region.yaml"))
    row = next(w for w in d.workloads if w.name == "datasets")
    assert any(
        "the need assumes the daily change spread evenly over the day (1TB/day: 93 Mbps)" in n
        and "data.datasets.refresh" in n
        for n in row.notes
    ), row.notes


def test_a_refresh_is_replicated_and_carried_as_the_pack_reads_it(
    example_raw: dict[str, Any],
) -> None:
    example_raw["data"]["datasets"].update(rpo="24h", refresh={"size": "10TB", "every": "7d"})
    d = design(parse_plan(example_raw))
    f = _flow(d, "datasets")
    # The month's transfer: the daily change and every refresh.
    assert f.monthly_bytes == pytest.approx(
        1 * TB * 30.4167 + 10 * TB * SECONDS_PER_MONTH / 604800, rel=1e-3
    )
    source = next(b for b in build_site_configs(d)["use1"].buckets if b.data_class == "datasets")
    assert (source.burst_bytes, source.interval_s) == (10 * TB, 604800.0)
    assert f.flow.base_rpo_s == 0.0  # a refresh period is not data loss


@pytest.mark.parametrize(("lock", "mode"), [(None, "compliance"), ("governance", "governance")])
def test_weights_lock_reaches_the_bucket_config_and_its_tag(
    example_raw: dict[str, Any], lock: str | None, mode: str
) -> None:
    if lock is not None:
        example_raw["data"]["weights"]["lock"] = lock
    configs = build_site_configs(design(parse_plan(example_raw)))
    for cfg in configs.values():
        for b in cfg.buckets:
            tag = bucket_tags(cfg, b).get(Tag.LOCK.key)
            if b.data_class == "weights":
                assert (b.object_lock_mode, tag, b.trial_lock) == (mode, mode, lock is not None)
            else:
                assert tag is None and not b.trial_lock


# --- irreversible settings ----------------------------------------------------------------------

# What each example's stacks make irreversible, by its first words (every site holds weights).
KINDS = {
    "aws-two-region": ["S3 Object Lock, COMPLIANCE"] * 2,
    "onprem-to-aws": ["S3 Object Lock, COMPLIANCE"],  # the DR copy: nothing is deployed on premises
    "onprem-to-gcp": ["Bucket Lock", "Cloud KMS key rings"],  # the DR site's only
    "onprem-to-azure": ["version-level immutability", "Key Vault purge protection"],
    "gcp-two-region": ["Bucket Lock", "Cloud KMS key rings"] * 2,
    "azure-two-region": ["version-level immutability", "Key Vault purge protection"] * 2,
    "aws-to-gcp": ["S3 Object Lock, COMPLIANCE", "Bucket Lock", "Cloud KMS key rings"],
    "aws-to-gcp-dedicated": ["S3 Object Lock, COMPLIANCE", "Bucket Lock", "Cloud KMS key rings"],
    "gcp-to-aws": ["Bucket Lock", "Cloud KMS key rings", "S3 Object Lock, COMPLIANCE"],
    "azure-to-gcp": [
        "version-level immutability",
        "Key Vault purge protection",
        "Bucket Lock",
        "Cloud KMS key rings",
    ],
    "aws-to-azure": [
        "S3 Object Lock, COMPLIANCE",
        "version-level immutability",
        "Key Vault purge protection",
    ],
}


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_names_its_irreversible_settings(example: str) -> None:
    d = design(load_plan(ROOT / "examples" / f"{example}.yaml"))
    found = irreversible_settings(d)
    assert len(found) == len(KINDS[example]), [x.what for x in found]
    for x, kind in zip(found, KINDS[example], strict=True):
        assert x.what.startswith(kind), (x.what, kind)
    for x in found:
        assert x.stack.startswith(d.plan.name) and x.where and x.lasts and x.trial


@pytest.mark.parametrize("example", ["aws-two-region", "gcp-two-region", "azure-two-region"])
def test_a_trial_leaves_no_weights_lock_that_cannot_be_lifted(example: str) -> None:
    """With data.weights.lock: governance, every weights entry is the trial's own setting."""
    raw = yaml.safe_load((ROOT / "examples" / f"{example}.yaml").read_text())
    raw["data"]["weights"]["lock"] = "governance"
    found = irreversible_settings(design(parse_plan(raw)))
    weights = [x for x in found if "immutability" in x.what or "etention" in x.what]
    assert weights and all("(a trial)" in x.what for x in weights), weights
    assert all(x.trial.startswith("this is the trial setting") for x in weights)
    assert not any("COMPLIANCE" in x.what or "Bucket Lock" in x.what for x in found)
