"""Spec validation, table-driven: each bad input names its field, the bad value and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from gpudr.core.spec import PlanError, load_plan, parse_plan
from tests.conftest import EXAMPLE


def _set(raw: dict[str, Any], path: str, value: Any) -> None:
    node = raw
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    if value is _DELETE:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value


_DELETE = object()


def test_example_loads_with_defaults() -> None:
    plan = load_plan(EXAMPLE)
    assert plan.name == "llm-training"
    assert [s.name for s in plan.primaries()] == ["use1"]
    assert plan.clusters["train"].instance_type == "p5.48xlarge"
    assert plan.clusters["train"].efa_interfaces == 32
    assert plan.services["chat"].cluster == "train"
    assert plan.checkpoints is not None and plan.checkpoints.interval_s == 2700
    assert plan.weights is not None and plan.weights.rpo_s == 0
    # Datasets RTO is not in the example: the brief sets none.
    assert plan.datasets is not None and plan.datasets.rto_s is None
    assert plan.quotas.s3_rtc_gbps == 5 and "s3_rtc_gbps" in plan.quotas.overridden
    assert plan.headroom == 1.25


def test_defaults_come_from_the_brief(example_raw: dict[str, Any]) -> None:
    for key in ("rpo", "rto"):
        example_raw["data"]["checkpoints"].pop(key)
    example_raw["services"]["chat"].pop("rpo")
    plan = parse_plan(example_raw)
    assert plan.checkpoints is not None
    assert plan.checkpoints.rpo_s == 4 * 3600  # brief: 2-4 h, upper bound
    assert plan.checkpoints.rto_s == 8 * 3600
    assert plan.services["chat"].rpo_s == 300


BAD = [
    (
        "data.checkpoints.rpo",
        "4 hours",
        'data.checkpoints.rpo: "4 hours" is not a duration; use e.g. 45m',
    ),
    (
        "data.checkpoints.rpo",
        "30m",
        "data.checkpoints.rpo: 30m is shorter than the checkpoint interval 45m",
    ),
    ("data.checkpoints.size", "2 terabytes", 'data.checkpoints.size: "2 terabytes" is not a size'),
    ("data.checkpoints.dedup_ratio", 1.2, "data.checkpoints.dedup_ratio: 1.2 is out of range"),
    (
        "data.checkpoints.compression_ratio",
        0.5,
        "data.checkpoints.compression_ratio: 0.5 is not a number of at least 1",
    ),
    (
        "data.weights.replication",
        "crr-rtc",
        "data.weights.rpo: 0 needs synchronous replication, but replication: crr-rtc is",
    ),
    ("data.datasets.rpo", "0", "data.datasets.rpo: 0 on datasets needs synchronous dual-write"),
    ("sites.usw2.region", "us-west-9", 'sites.usw2.region: "us-west-9" is not a known aws region'),
    (
        "sites.usw2.region",
        "us-east-1",
        'sites.usw2.region: "us-east-1" is the region of the site it protects',
    ),
    (
        "sites.usw2.region",
        "eu-south-1",
        'clusters.train.gpu: "h100" (p5.48xlarge) is not offered in eu-south-1 (site usw2)',
    ),
    ("sites.usw2.protects", "nowhere", 'sites.usw2.protects: "nowhere" is not a site in this plan'),
    (
        "data.datasets.replication",
        "gcs-turbo",
        'data.datasets.replication: "gcs-turbo" cannot replicate aws to aws (site usw2)',
    ),
    ("sites.usw2.cloud", "oracle", 'sites.usw2.cloud: "oracle" is not allowed; use one of aws'),
    ("sites.usw2.cidr", "10.10.0.0/16", 'sites.usw2.cidr: "10.10.0.0/16" overlaps sites.use1.cidr'),
    (
        "sites.usw2.pattern",
        "hot",
        'sites.usw2.pattern: "hot" is not allowed; use one of auto, backup-restore',
    ),
    ("clusters.train.gpu", "tpu", 'clusters.train.gpu: "tpu" is not a GPU type gpudr knows on aws'),
    (
        "clusters.train.gpus_per_node",
        4,
        "clusters.train.gpus_per_node: 4 does not match p5.48xlarge, which has 8",
    ),
    ("clusters.train.nodes", 0, "clusters.train.nodes: 0 is not a whole number of at least 1"),
    ("clusters.train.nodes", _DELETE, "clusters.train.nodes: is required"),
    (
        "services.chat.cluster",
        "serve",
        'services.chat.cluster: "serve" is not a cluster on the service\'s site',
    ),
    (
        "data.checkpoints.intervall",
        "45m",
        "data.checkpoints.intervall: unknown field; allowed: site, size, interval",
    ),
    (
        "quotas.s3_rtc_gbps",
        "lots",
        'quotas.s3_rtc_gbps: "lots" is not a bandwidth; use e.g. 10Gbps',
    ),
    ("recovery.detection", "soon", 'recovery.detection: "soon" is not a duration'),
    ("headroom", 0.9, "headroom: 0.9 is not a number of at least 1"),
    ("name", "LLM Training", 'name: "LLM Training" is not a valid name'),
    ("logging.retention", "7d", "logging.retention: 7d is not whole days within 30d..730d"),
    ("logging.retention", "1000d", "logging.retention: 1000d is not whole days within 30d..730d"),
    ("logging.retention", "36h", "logging.retention: 1d12h is not whole days within 30d..730d"),
    ("logging.flow_logs", "0GB", 'logging.flow_logs: "0GB" must be larger than 0'),
    ("logging.cluster_logs", "lots", 'logging.cluster_logs: "lots" is not a size'),
    ("logging.access", "1GB", "logging.access: unknown field; allowed: retention, access_logs"),
]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    BAD,
    ids=[f"{p}=" + ("(deleted)" if v is _DELETE else repr(v)) for p, v, _ in BAD],
)
def test_bad_input_names_field_value_and_fix(
    example_raw: dict[str, Any], path: str, value: Any, message: str
) -> None:
    _set(example_raw, path, value)
    with pytest.raises(PlanError) as caught:
        parse_plan(example_raw)
    lines = [str(e) for e in caught.value.errors]
    assert any(line.startswith(message) for line in lines), lines


def test_every_problem_is_reported_at_once(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["checkpoints"]["rpo"] = "4 hours"
    example_raw["clusters"]["train"]["nodes"] = -1
    example_raw["sites"]["usw2"]["region"] = "mars-1"
    with pytest.raises(PlanError) as caught:
        parse_plan(example_raw)
    paths = {e.path for e in caught.value.errors}
    # one line per problem: the unknown region does not also fail its AZs and GPU offers
    assert paths == {"data.checkpoints.rpo", "clusters.train.nodes", "sites.usw2.region"}


def test_unreadable_and_invalid_yaml(tmp_path: Any) -> None:
    with pytest.raises(PlanError, match="cannot read the plan"):
        load_plan(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(PlanError, match="is not valid YAML at line"):
        load_plan(broken)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(PlanError, match="is empty"):
        load_plan(empty)


def test_rpo_zero_on_checkpoints_is_shorter_than_interval(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["checkpoints"]["rpo"] = 0
    with pytest.raises(PlanError, match="shorter than the checkpoint interval"):
        parse_plan(example_raw)


def test_dual_write_accepted_when_explicit(example_raw: dict[str, Any]) -> None:
    example_raw["data"]["datasets"].update(rpo=0, replication="dual-write")
    plan = parse_plan(example_raw)
    assert plan.datasets is not None and plan.datasets.replication == "dual-write"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("data.weights.publish_window", "data.weights.publish_window: must be longer than 0"),
        ("data.checkpoints.archive_after", "data.checkpoints.archive_after: must be at least 1d"),
    ],
)
def test_zero_is_refused_not_replaced(example_raw: dict[str, Any], path: str, message: str) -> None:
    _set(example_raw, path, "0")
    with pytest.raises(PlanError) as caught:
        parse_plan(example_raw)
    assert any(str(e).startswith(message) for e in caught.value.errors)


def test_spec_defaults_have_sources() -> None:
    from gpudr.core import reference

    for name, entry in reference.defaults()["spec"].items():
        assert entry["source"] in reference.defaults()["sources"], name


def test_unsupported_cross_cloud_pair(example_raw: dict[str, Any]) -> None:
    example_raw["sites"]["usw2"].update(cloud="azure", region="westus", azs=["1", "2"])
    with pytest.raises(PlanError) as caught:
        parse_plan(example_raw)
    lines = [str(e) for e in caught.value.errors]
    assert any(
        line.startswith("sites.usw2.protects: protecting an aws site from azure is not supported")
        for line in lines
    ), lines


def test_gcp_site_needs_project_and_zones(example_raw: dict[str, Any]) -> None:
    example_raw["sites"]["usw2"].update(cloud="gcp", region="us-east4", azs=["us-east4a", "x"])
    with pytest.raises(PlanError) as caught:
        parse_plan(example_raw)
    lines = [str(e) for e in caught.value.errors]
    assert "sites.usw2.project: is required on a gcp site; name the GCP project id" in lines
    assert 'sites.usw2.azs[0]: "us-east4a" is not a zone of gcp region us-east4' in lines


def test_gcs_dual_region_needs_one_continent() -> None:
    from gpudr.core.spec import gcs_dual_region

    assert gcs_dual_region("us-central1", "us-east4") == "US"
    assert gcs_dual_region("northamerica-northeast1", "us-east4") == "US"
    assert gcs_dual_region("us-central1", "europe-west4") is None


def test_logging_defaults_and_overrides(example_raw: dict[str, Any]) -> None:
    """Every site keeps its logs a year unless the plan says otherwise; the volumes feed only
    the cost lines."""
    plan = parse_plan(example_raw)
    assert (plan.logging.retention_days, plan.logging.overridden) == (365, frozenset())
    _set(example_raw, "logging.retention", "90d")
    _set(example_raw, "logging.flow_logs", "5TB")
    plan = parse_plan(example_raw)
    assert plan.logging.retention_days == 90 and plan.logging.flow_b_month == 5e12
    assert plan.logging.overridden == {"retention_s", "flow_b_month"}
