"""The drill contract: stack names and the refusal regex, times, the drill config the program
reads, and the clusters a drill declares."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpudr.contract import drill as cd
from tests.gpudr.drills import NOW, setup


def test_stack_name_is_site_and_utc_time() -> None:
    assert cd.stack_name("usw2", NOW) == "drill-usw2-20250131T031200Z"
    later = datetime(2025, 1, 31, 4, 12, tzinfo=UTC) + timedelta(hours=0)
    assert cd.stack_name("usw2", later.astimezone(tz=None)) == "drill-usw2-20250131T041200Z"


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("drill-usw2-20250131T031200Z", True),
        ("drill-gcp-east4-20250131T031200Z", True),
        ("llm-training-usw2", False),  # the real DR stack
        ("drill-usw2", False),
        ("drill-usw2-20250131T031200", False),
        ("drill-usw2-2025-01-31T03:12:00Z", False),
        ("drill-USW2-20250131T031200Z", False),
        ("xdrill-usw2-20250131T031200Z", False),
        ("drill-usw2-20250131T031200Z-extra", False),
    ],
)
def test_only_drill_stack_names_pass(name: str, ok: bool) -> None:
    assert cd.is_drill_stack(name) is ok
    if ok:
        assert cd.check_stack_name(name)[1] == NOW
    else:
        with pytest.raises(cd.DrillNameError, match="is not a drill stack"):
            cd.check_stack_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "drill-aa-99999999T999999Z",
        "drill-usw2-20250230T031200Z",
        "drill-aa-20250131T246000Z",
        "drill-aa-99991231T235959Z",  # a real time, but no expiry a day later exists
    ],
)
def test_a_drill_shaped_name_with_an_impossible_time_is_refused_alike(name: str) -> None:
    # is_drill_stack and check_stack_name agree; cleanup still sees its shape, to report it.
    assert cd.looks_like_drill_stack(name) and not cd.is_drill_stack(name)
    with pytest.raises(cd.DrillNameError, match="is not a real UTC time"):
        cd.check_stack_name(name)


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("drill-usw2-20250131T031200Z", False),  # now
        ("drill-usw2-20250131T041159Z", False),  # within the clock skew another host may have
        ("drill-usw2-20250131T041201Z", True),
        ("drill-usw2-20990101T000000Z", True),  # its expiry would be 2099
    ],
)
def test_a_drill_dated_later_than_now_is_refused(name: str, refused: bool) -> None:
    if refused:
        with pytest.raises(cd.DrillNameError, match="later than now"):
            cd.check_not_future(name, NOW)
    else:
        cd.check_not_future(name, NOW)


@pytest.mark.parametrize("text", ["20250131T031200Z", "2025-01-31T03:12:00Z", "20250131t031200z"])
def test_times_read_back_in_every_form_written(text: str) -> None:
    assert cd.parse_ts(text) == NOW


def test_names_fit_every_cloud_and_never_the_dr_stacks() -> None:
    long_site = "a" + "b" * 22 + "c"  # the longest site name a plan allows
    drill_id = cd.stack_name(long_site, NOW).lower()
    assert len(cd.cluster_name(drill_id, "train", "gcp")) <= 40
    assert len(cd.cluster_name(drill_id, "train", "azure")) <= 63
    assert len(cd.reader_name(drill_id, "aws")) <= 64
    sa = cd.reader_name(drill_id, "gcp")
    assert 6 <= len(sa) <= 30 and sa[0].isalpha() and sa == sa.lower()
    region = "northamerica-northeast1"
    assert len(f"{cd.network_name(drill_id, region)}-{region}") <= 63
    # Two long names that share their head stay distinct.
    assert cd.fit("x" * 50 + "1", 40) != cd.fit("x" * 50 + "2", 40)
    s = setup()
    dr_names = {c.eks_name for c in s.site.clusters} | {s.site.network_name}
    assert not dr_names & {p.cluster_name for p in s.pools}


def test_drill_config_round_trips_and_is_validated() -> None:
    cfg = setup().phase("capacity")
    assert cd.DrillConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert cfg.id == "drill-usw2-20250131t031200z"
    assert cfg.expires == NOW + timedelta(hours=4)
    assert cfg.failover and not setup().drill.failover
    bad: list[tuple[dict[str, Any], str]] = [
        ({**cfg.to_dict(), "stack": "llm-training-usw2"}, "not a drill stack"),
        ({**cfg.to_dict(), "phase": "failover"}, "phase"),
        ({**cfg.to_dict(), "nodes": {"train": 0}}, "nodes"),
        ({k: v for k, v in cfg.to_dict().items() if k != "expires_at"}, "missing expires_at"),
        ({**cfg.to_dict(), "expires_at": "9999-12-31T23:59:59Z"}, "at most 24 h later"),
        ({**cfg.to_dict(), "expires_at": "2025-02-01T03:12:01Z"}, "at most 24 h later"),
        ({**cfg.to_dict(), "expires_at": "2025-01-31T03:12:00Z"}, "not after the stack's"),
        ({**cfg.to_dict(), "operator": "arn:aws:iam::123456789012:root"}, "neither an AWS"),
        ({**cfg.to_dict(), "operator": "drill@example.com"}, "neither an AWS"),
    ]
    for raw, message in bad:
        with pytest.raises(ValueError, match=message):
            cd.DrillConfig.from_dict(raw)


def test_drill_clusters_stand_at_test_size_on_demand() -> None:
    s = setup()
    (cluster,) = cd.drill_clusters(s.site, s.drill)
    assert cluster.standby_control_plane
    assert cluster.eks_name == "drill-usw2-20250131t031200z-train"
    for p in cluster.pools:
        assert (p.pattern, p.nodes, p.standby_nodes, p.reserved) == ("drill", 1, 0, False)


def test_the_longest_ttl_is_accepted() -> None:
    raw = {**setup().drill.to_dict(), "expires_at": "2025-02-01T03:12:00Z"}
    assert cd.DrillConfig.from_dict(raw).expires == NOW + timedelta(days=1)


@pytest.mark.parametrize(
    ("operator", "cloud"),
    [
        ("arn:aws:iam::123456789012:user/ops/alice", "aws"),
        ("arn:aws:iam::123456789012:role/drill-runner", "aws"),
        ("arn:aws:sts::123456789012:assumed-role/Admin/alice@example.com", "aws"),
        ("arn:aws-us-gov:sts::123456789012:assumed-role/Admin/s", "aws"),
        ("user:alice@example.com", "gcp"),
        ("serviceAccount:ci@p.iam.gserviceaccount.com", "gcp"),
        ("arn:aws:iam::123456789012:root", None),  # the root user cannot assume a role
        ("arn:aws:sts::123456789012:assumed-role/Admin", None),  # no session
        ("arn:aws:iam::123456789012:assumed-role/Admin/s", None),  # sessions are sts
        ("arn:aws:sts::123456789012:federated-user/bob", None),
        ("arn:aws:iam::12345:user/alice", None),
    ],
)
def test_operator_forms(operator: str, cloud: str | None) -> None:
    assert cd.operator_cloud(operator) == cloud


def test_a_role_session_is_trusted_as_its_role_at_any_path_and_a_user_exactly() -> None:
    root = "arn:aws:iam::123456789012:root"
    assert cd.aws_trusted("arn:aws:sts::123456789012:assumed-role/Admin/alice") == (
        root,
        ("arn:aws:iam::123456789012:role/Admin", "arn:aws:iam::123456789012:role/*/Admin"),
    )
    user = "arn:aws:iam::123456789012:user/ops/alice"
    assert cd.aws_trusted(user) == (root, (user,))
    with pytest.raises(ValueError, match="not an AWS principal"):
        cd.aws_trusted("user:alice@example.com")


@pytest.mark.parametrize(("ttl_s", "before_s"), [(4 * 3600, 2700), (3600, 1800), (1800, 900)])
def test_a_drill_stops_in_time_for_its_destroy(ttl_s: int, before_s: int) -> None:
    drill = replace(setup().drill, ttl_s=ttl_s)
    assert (drill.expires - drill.stop_at).total_seconds() == before_s
