"""dr-tags-verified: sizing tags are verified, quotas bounded by the pack config, RPO floors,
and every bucket of a gpudr stack carries its dr-role."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpudr.contract import naming
from policies.dr_tags_verified import dr_tags_verified
from tests.policies.builders import CHECKPOINTS, WEIGHTS, azure, s3, tags
from tests.policies.harness import Res, Violations, check, run_stack

APPROVED = {
    "mechanism": "crr-rtc",
    "mbps": 5000,
    "reason": "AWS support case 123: RTC raised to 5 Gbps",
}


def judged(
    facts: dict[str, str], config: dict[str, Any] | None = None, **changes: str | None
) -> tuple[Violations, Res]:
    r = s3("checkpoints", facts)
    r["bucket"].inputs["tags"] = tags(facts, **changes)
    return run_stack(dr_tags_verified, list(r.values()), config), r["bucket"]


OK_CONFIG = {"approved_quotas": [APPROVED]}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({}, None, id="as-generated"),
        pytest.param(
            {"burst_bytes": "0", "steady_kbps": "0", "steady_mbps": "0"},
            "move no data",
            id="zeroed",
        ),
        pytest.param({"burst_bytes": "-1"}, "negative", id="negative"),
        pytest.param({"steady_kbps": "nan"}, "not a finite number", id="nan"),
        pytest.param({"rpo_s": "inf"}, "not a finite number", id="infinite"),
        pytest.param({"interval_s": "soon"}, "not a finite number", id="garbage"),
        pytest.param({"steady_mbps": "1"}, "disagrees", id="kbps-and-mbps-disagree"),
        pytest.param({"interval_s": "0"}, "no interval-s", id="burst-without-interval"),
        pytest.param({"rpo_s": "0"}, "only a dual write", id="rpo-zero-replicated"),
        pytest.param({"quota_mbps": "0"}, "a quota of nothing", id="zero-quota"),
        pytest.param({"quota_mbps": "1e12"}, "approved_quotas", id="quota-inflated"),
        pytest.param({"quota_mbps": "5001"}, "5.00 Gbps", id="quota-just-above-approval"),
        pytest.param({"mechanism": "teleport"}, "no mechanism gpudr knows", id="unknown-mechanism"),
        pytest.param({"data_class": "secrets"}, "no data class", id="unknown-class"),
    ],
)
def test_sizing_tags(changes: dict[str, str], expected: str | None) -> None:
    found, bucket = judged(CHECKPOINTS, OK_CONFIG, **changes)
    check(found, bucket, expected)


def test_dual_write_weights_as_generated_pass() -> None:
    found, bucket = judged(WEIGHTS, OK_CONFIG)
    check(found, bucket, None)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param({}, "vendor's default is 1.00 Gbps", id="no-approval"),
        pytest.param(APPROVED, None, id="approved"),
        pytest.param({**APPROVED, "stacks": ["te*"]}, None, id="stack-glob-matches"),
        pytest.param({**APPROVED, "stacks": ["prod-*"]}, "vendor's default", id="other-stacks"),
        pytest.param({**APPROVED, "regions": ["us-east-1"]}, None, id="region-matches"),
        pytest.param({**APPROVED, "regions": ["eu-west-1"]}, "vendor's default", id="other-region"),
        pytest.param({**APPROVED, "reason": "ok"}, "vendor's default", id="no-real-reason"),
        pytest.param({**APPROVED, "mechanism": "sts"}, "vendor's default", id="other-mechanism"),
    ],
)
def test_asserted_quota_is_bounded_by_the_pack_config(
    entry: dict[str, Any], expected: str | None
) -> None:
    config = {"approved_quotas": [entry] if entry else []}
    found, bucket = judged(CHECKPOINTS, config)
    check(found, bucket, expected)


@pytest.mark.parametrize(
    ("floors", "changes", "expected"),
    [
        pytest.param({"checkpoints": 14400}, {}, None, id="at-the-floor"),
        pytest.param({"checkpoints": 7200}, {}, "floor of 2h", id="weaker"),
        pytest.param({"checkpoints": 14400}, {"rpo_s": "none"}, "no RPO", id="none"),
        pytest.param({"weights": 0}, {}, None, id="another-class"),
    ],
)
def test_rpo_floors(
    floors: dict[str, float], changes: dict[str, str], expected: str | None
) -> None:
    found, bucket = judged(CHECKPOINTS, {**OK_CONFIG, "max_rpo_s": floors}, **changes)
    check(found, bucket, expected)


def test_a_bucket_without_dr_role_in_a_gpudr_stack_is_refused() -> None:
    r = s3("checkpoints", CHECKPOINTS)
    r["bucket"].inputs["tags"] = {"gpudr:system": "llm-training"}  # dr-role stripped
    check(run_stack(dr_tags_verified, list(r.values()), OK_CONFIG), r["bucket"], "dr-role")


@pytest.mark.parametrize("build", [s3, azure], ids=["s3-bucket", "azure-account"])
def test_a_data_bucket_components_bucket_must_carry_a_data_role(
    build: Callable[[str, dict[str, str]], dict[str, Res]],
) -> None:
    r = build("checkpoints", CHECKPOINTS)
    target = r.get("bucket") or r["account"]
    token = naming.AZURE_DATA_BUCKET_COMPONENT if "account" in r else naming.DATA_BUCKET_COMPONENT
    component = Res(token, "checkpoints", {})
    target.parent = component.urn
    target.inputs["tags"] = tags(CHECKPOINTS, dr_role="transfer-logs")
    found = run_stack(dr_tags_verified, [component, *r.values()], OK_CONFIG)
    check(found, target, "no replication check judges it")


@pytest.mark.parametrize(
    ("dr_stacks", "expected"), [([], None), (["te*"], "dr-role"), (["prod-*"], None)]
)
def test_dr_stacks_in_the_pack_config_need_tags_on_every_bucket(
    dr_stacks: list[str], expected: str | None
) -> None:
    bucket = Res("aws:s3/bucket:Bucket", "plain", {"bucket": "plain", "tags": {"team": "ml"}})
    found = run_stack(dr_tags_verified, [bucket], {"dr_stacks": dr_stacks})
    check(found, bucket, expected)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({"mechanism": "sts", "dr_role": "data-replica"}, "cannot hold", id="sts-s3"),
        pytest.param(
            {"mechanism": "gcs-turbo", "dr_role": "data-dual-region"}, "cannot hold", id="turbo-s3"
        ),
        pytest.param({"mechanism": "azure-or"}, "cannot hold", id="azure-or-s3"),
        pytest.param(
            {"mechanism": "datasync", "dr_role": "data-replica", "site_role": "dr"},
            None,
            id="datasync-s3",
        ),
        pytest.param({"mechanism": "sts", "dr_role": "data-source"}, None, id="sts-source-s3"),
    ],
)
def test_the_mechanism_must_fit_the_copy(changes: dict[str, str], expected: str | None) -> None:
    """A claim no bucket of this type can hold would send the replication checks elsewhere."""
    found, bucket = judged(CHECKPOINTS, OK_CONFIG, quota_mbps="none", **changes)
    check(found, bucket, expected)


@pytest.mark.parametrize(
    ("changes", "site_roles", "expected"),
    [
        pytest.param({}, {}, None, id="source-at-primary"),
        pytest.param({"dr_role": "data-replica"}, {}, "cannot live at a primary", id="relabelled"),
        pytest.param(
            {"dr_role": "data-replica", "site_role": "dr"},
            {"te*": "primary"},
            "site_roles say primary",
            id="every-tag-relabelled-but-the-org-knows",
        ),
        pytest.param({}, {"te*": "dr"}, "site_roles say dr", id="config-contradicts-tags"),
    ],
)
def test_a_copys_role_must_fit_its_site(
    changes: dict[str, str], site_roles: dict[str, str], expected: str | None
) -> None:
    """A source relabelled as a replica would skip the push-replication check, which runs on
    the source: the copy's role must match its site's, and the organisation can pin the
    site's role by stack name."""
    found, bucket = judged(CHECKPOINTS, {**OK_CONFIG, "site_roles": site_roles}, **changes)
    check(found, bucket, expected)


def test_one_stack_names_one_site_role() -> None:
    r = s3("checkpoints", CHECKPOINTS)
    other = Res("aws:ec2/vpc:Vpc", "net", {"tags": {"gpudr:site-role": "dr"}})
    found = run_stack(dr_tags_verified, [*r.values(), other], OK_CONFIG)
    check(found, r["bucket"], "2 site roles")


@pytest.mark.parametrize(
    ("rpo", "config", "expected"),
    [
        pytest.param("604800", {}, None, id="a-week"),
        pytest.param("63072000", {}, "longer than any DR copy", id="two-years"),
        pytest.param("63072000", {"default_max_rpo_s": 1e8}, None, id="ceiling-raised"),
        pytest.param("none", {}, None, id="no-rpo-is-not-a-stated-one"),
    ],
)
def test_a_stated_rpo_has_a_ceiling(rpo: str, config: dict[str, Any], expected: str | None) -> None:
    found, bucket = judged(CHECKPOINTS, {**OK_CONFIG, **config}, rpo_s=rpo)
    check(found, bucket, expected)


def test_require_site_roles_refuses_a_stack_the_organisation_did_not_name() -> None:
    strict = {**OK_CONFIG, "require_site_roles": True}
    found, bucket = judged(CHECKPOINTS, strict)
    check(found, bucket, "no site_roles entry")
    found, bucket = judged(CHECKPOINTS, {**strict, "site_roles": {"test": "primary"}})
    check(found, bucket, None)


# A replica pulled from on premises asserts the WAN bandwidth committed to DR: nothing but the
# pack config's approval bounds it (no vendor publishes it, nothing registered shows it).
WAN_APPROVED = {
    "mechanism": "datasync-agent",
    "mbps": 8000,
    "reason": "8 Gbps of the DC1 Direct Connect ports committed to DR by the network team",
}
ONPREM_REPLICA = {
    **CHECKPOINTS,
    "site-role": "dr",
    "dr-role": "data-replica",
    "mechanism": "datasync-agent",
}


@pytest.mark.parametrize(
    ("config", "changes", "expected"),
    [
        pytest.param({"approved_quotas": [WAN_APPROVED]}, {"quota_mbps": "8000"}, None, id="ok"),
        pytest.param(
            {"approved_quotas": [WAN_APPROVED]},
            {"quota_mbps": "9000"},
            "asserts 9.00 Gbps of WAN bandwidth committed to DR, but the pack config's "
            "approved_quotas approves 8.00 Gbps",
            id="above-the-approval",
        ),
        pytest.param(
            {"approved_quotas": []},
            {"quota_mbps": "8000"},
            "approves none for mechanism datasync-agent",
            id="no-approval",
        ),
        pytest.param(
            {"approved_quotas": [WAN_APPROVED]},
            {"quota_mbps": None},
            "states no WAN rate",
            id="no-rate",
        ),
    ],
)
def test_an_onprem_wan_rate_is_bounded_by_the_pack_config(
    config: dict[str, Any], changes: dict[str, str | None], expected: str | None
) -> None:
    found, bucket = judged(ONPREM_REPLICA, config, **changes)
    check(found, bucket, expected)
