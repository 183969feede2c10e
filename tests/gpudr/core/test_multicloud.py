"""GCP, Azure and AWS->GCP plans: mechanisms, schedules, verdicts and the stack config."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpudr.build.stackconfig import build_site_configs
from gpudr.core.design import design
from gpudr.core.spec import load_plan, parse_plan
from tests.conftest import ROOT

EXAMPLES = ROOT / "examples"


def rows(d: Any) -> dict[str, Any]:
    return {w.name: w for w in d.workloads}


def raw(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return loaded


@pytest.mark.parametrize(
    "example", ["gcp-two-region.yaml", "azure-two-region.yaml", "aws-to-gcp.yaml"]
)
def test_examples_meet_their_targets(example: str) -> None:
    d = design(load_plan(EXAMPLES / example))
    assert d.meets, [(w.name, w.notes) for w in d.workloads if not w.meets]


def test_gcp_checkpoints_use_one_turbo_dual_region_bucket_owned_by_dr() -> None:
    d = design(load_plan(EXAMPLES / "gcp-two-region.yaml"))
    assert rows(d)["checkpoints"].mechanism == "gcs-turbo"
    assert rows(d)["checkpoints"].estimated_rpo_s == pytest.approx(30 * 60 + 15 * 60)
    configs = build_site_configs(d)
    assert [b.data_class for b in configs["usc1"].buckets] == ["weights"]  # the rest live at DR
    dual = next(b for b in configs["use4"].buckets if b.data_class == "checkpoints")
    assert (dual.role, dual.location, dual.data_locations, dual.turbo, dual.kms_location) == (
        "dual-region",
        "US",
        ("US-CENTRAL1", "US-EAST4"),
        True,
        "us",
    )
    assert configs["use4"].links[0].kind == "vpc-peering"
    pool = configs["use4"].clusters[0].pools[0]
    assert (pool.instance_type, pool.accelerator, pool.standby_nodes) == (
        "a3-highgpu-8g",
        "nvidia-h100-80gb",
        0,
    )


def test_gcp_regions_on_two_continents_fall_back_to_scheduled_transfer() -> None:
    plan = raw("gcp-two-region.yaml")
    plan["sites"]["use4"].update(region="europe-west4", azs=["europe-west4-b", "europe-west4-c"])
    d = design(parse_plan(plan))
    assert rows(d)["checkpoints"].mechanism == "sts"


def test_cross_cloud_transfer_schedule_follows_the_rpo() -> None:
    d = design(load_plan(EXAMPLES / "aws-to-gcp.yaml"))
    ckpt = next(f for f in d.flows if f.data_class == "checkpoints")
    assert ckpt.mechanism == "sts" and ckpt.schedule is not None
    assert ckpt.schedule.interval_s == 7200  # 3 h would leave no headroom under the 4 h RPO
    configs = build_site_configs(d)
    inbound = next(b for b in configs["gcpe4"].buckets if b.data_class == "checkpoints").inbound
    assert len(inbound) == 1
    job = inbound[0]
    assert (job.service, job.schedule_s, job.source_account) == ("sts", 7200, "111122223333")
    assert job.source_bucket.startswith("llm-xcloud-use1-checkpoints-")
    (reader,) = configs["use1"].sts_readers
    assert reader.role_name == job.role_name and reader.gcp_project == "acme-llm-dr"
    assert len(reader.buckets) == 2  # checkpoints and datasets; weights are dual-written
    # egress from AWS to the internet is the price of cross-cloud DR, in volume tiers over all
    # that leaves use1 for GCP in a month (checkpoints, datasets and weights: 290,572 GB)
    egress = [x for x in d.cost.lines if x.item.endswith("transfer aws -> gcp")]
    total = sum(x.quantity for x in egress)
    expected = 10_000 * 0.09 + 40_000 * 0.085 + 100_000 * 0.07 + (total - 150_000) * 0.05
    assert sum(x.monthly_usd for x in egress) == pytest.approx(expected)
    assert all(x.tiers.startswith("volume tiers on use1's 290,572 GB") for x in egress)
    assert configs["use1"].links[0].kind == "ha-vpn"
    assert rows(d)["weights"].provisioned_gbps == 5.0  # 4 tunnels x 1.25 Gbps (AWS end)


def test_cross_cloud_needs_the_aws_account() -> None:
    from gpudr.core.spec import PlanError

    plan = raw("aws-to-gcp.yaml")
    plan["sites"]["use1"].pop("account")
    with pytest.raises(PlanError, match=r"sites\.use1\.account: is required when a gcp site"):
        parse_plan(plan)


def test_azure_object_replication_at_4_gbps_and_rpo_5m_is_not_met() -> None:
    """The issue's example of something a cloud cannot do: an explicit not-met row with why."""
    plan = raw("azure-two-region.yaml")
    plan["data"]["checkpoints"].update(
        replication="azure-or", rpo="50m", interval="45m", size="4TB", dedup_ratio=0.0
    )
    plan["data"]["datasets"].update(rpo="5m", daily_change="43TB")  # 4 Gbps of ingress
    d = design(parse_plan(plan))
    datasets = rows(d)["datasets"]
    assert datasets.mechanism == "azure-or" and not datasets.meets
    assert datasets.required_gbps == pytest.approx(43e12 * 8 / 86400 / 1e9)  # 3.98 Gbps
    note = next(n for n in datasets.notes if n.startswith("priority replication"))
    assert "its 15m bound exceeds this RPO" in note
    assert "needs 3.98 Gbps of ingress, above the 1 Gbps where that SLA is void" in note
    assert not rows(d)["checkpoints"].meets


def test_azure_plan_lists_what_it_cannot_price() -> None:
    d = design(load_plan(EXAMPLES / "azure-two-region.yaml"))
    assert any("HOT_ZRS is not in prices.yaml" in u for u in d.cost.unpriced)
    configs = build_site_configs(d)
    eus = configs["eus"]
    assert eus.resource_group == "gpudr-speech-models-eus" and eus.key_vault
    datasets = next(b for b in eus.buckets if b.data_class == "datasets")
    (target,) = datasets.replication
    assert (target.mechanism, target.resource_group, target.bucket) == (
        "azure-or",
        "gpudr-speech-models-wus",
        "datasets",
    )
    assert target.storage_account and len(target.storage_account) <= 24
    weights = next(b for b in eus.buckets if b.data_class == "weights")
    assert weights.object_lock_days == 365 and weights.sku == "Standard_ZRS"


def test_link_without_kind_takes_the_pairs_default() -> None:
    plan = raw("gcp-two-region.yaml")
    plan["sites"]["use4"]["link"] = {}
    assert parse_plan(plan).sites["use4"].link.kind == "vpc-peering"  # type: ignore[union-attr]


def test_checkpoint_transfers_mirror_deletes_and_others_never_delete() -> None:
    configs = build_site_configs(design(load_plan(EXAMPLES / "aws-to-gcp.yaml")))
    mirror = {
        b.data_class: b.inbound[0].mirror_deletes for b in configs["gcpe4"].buckets if b.inbound
    }
    assert mirror == {"checkpoints": True, "datasets": False}


def test_gib_prices_are_converted_to_gb() -> None:
    from gpudr.core import reference

    # $0.12 per GiB of GCP internet egress is $0.1118 per decimal GB
    assert reference.price("gcp", "transfer_gb", "internet_egress").usd == pytest.approx(
        0.12 / 1.073741824
    )
