"""`gpudr.docs.diff`: two plan reports compared as PR-comment markdown, on small synthetic
reports."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from typing import Any

import pytest

from gpudr.docs.diff import (
    COMMENT_LIMIT,
    DEFAULT_LIMIT,
    MASK,
    SECRET_SIG,
    diff_reports,
    flatten,
    is_secret_key,
    percent,
    setting_changes,
    shorten,
    signed_usd,
)
from gpudr.docs.report import PATH_COLUMNS, WORKLOAD_COLUMNS, path_cells, workload_cells
from tests.conftest import ROOT

BUCKET = "aws:s3/bucket:Bucket"
VERSIONING = "aws:s3/bucketVersioning:BucketVersioning"


def resource(
    stack: str, name: str, typ: str = BUCKET, parent: str = "gpudr:data:DataClass", **inputs: Any
) -> dict[str, Any]:
    return {
        "type": typ,
        "name": name,
        "urn": f"urn:pulumi:{stack}::gpudr::{parent}${typ}::{name}",
        "id": f"{name}-id",
        "custom": True,
        "parent": "",
        "protect": False,
        "retain_on_delete": False,
        "dependencies": [],
        "property_dependencies": {},
        "inputs": inputs,
    }


def workload(name: str, **values: Any) -> dict[str, Any]:
    w = {
        "name": name,
        "kind": "data",
        "pair": "use1->usw2",
        "rpo_s": 14400.0,
        "rto_s": 14400.0,
        "pattern": None,
        "mechanism": "crr-rtc",
        "required_gbps": 0.790123,
        "provisioned_gbps": 5.0,
        "estimated_rpo_s": 3600.0,
        "estimated_rto_s": 833.333333,
        "meets": True,
        "notes": [],
    }
    w.update(values)
    return w


def report(
    resources: dict[str, list[dict[str, Any]]] | None = None,
    *,
    violations: dict[str, list[dict[str, Any]]] | None = None,
    workloads: list[dict[str, Any]] | None = None,
    dr_usd: float = 1000.0,
    total_usd: float = 5000.0,
    lines: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A report shaped as `gpudr.docs.report.build_report` makes it."""
    resources = resources if resources is not None else {"sys-use1": [], "sys-usw2": []}
    violations = violations or {}
    stacks = [
        {
            "name": name,
            "site": name.rsplit("-", 1)[-1],
            "cloud": "aws",
            "region": "us-east-1",
            "role": "primary" if i == 0 else "dr",
            "mode": "n/a",
            "resources": rs,
            "policy": {"violations": violations.get(name, [])},
        }
        for i, (name, rs) in enumerate(resources.items())
    ]
    mandatory = any(v["level"] == "mandatory" for vs in violations.values() for v in vs)
    wl = workloads if workloads is not None else [workload("checkpoints")]
    return {
        "schema": 1,
        "plan": {"name": "sys", "source": "plan.yaml"},
        "meets": all(w["meets"] for w in wl),
        "policy_ok": not mandatory,
        "stacks": stacks,
        "workloads": wl,
        "paths": [
            {
                "key": "use1->usw2:s3-rtc",
                "kind": "s3-rtc",
                "pair": "use1->usw2",
                "flows": ["checkpoints"],
                "required_gbps": sum(w["required_gbps"] or 0 for w in wl),
                "headroom": 1.25,
                "needed_gbps": 1.25 * sum(w["required_gbps"] or 0 for w in wl),
                "provisioned_gbps": 5.0,
                "capacity_source": "quotas.s3_rtc_gbps (spec)",
                "ok": True,
                "ports": None,
            }
        ],
        "pools": [],
        "cost": {
            "monthly_usd": dr_usd,
            "primary_monthly_usd": total_usd - dr_usd,
            "total_monthly_usd": total_usd,
            "by_site": {},
            "by_category": {"storage": dr_usd},
            "unpriced": [],
            "alternatives": {},
            "lines": lines
            if lines is not None
            else [
                {
                    "site": "usw2",
                    "category": "storage",
                    "item": "checkpoints replica (STANDARD)",
                    "quantity": 1,
                    "unit": "GB-month",
                    "unit_usd": dr_usd,
                    "monthly_usd": dr_usd,
                    "dr": True,
                    "source": "test",
                }
            ],
        },
    }


def render(base: dict[str, Any] | None, head: dict[str, Any], **kw: Any) -> str:
    return diff_reports(base, head, base_label="`main` (abc1234)", head_label="head", **kw)


def row(text: str, *starts: str) -> str:
    """The one table row whose first cells are `starts`."""
    prefix = "| " + " | ".join(starts) + " |"
    found = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(found) == 1, (prefix, found)
    return found[0]


def assert_tables_whole(text: str) -> None:
    """Every table row has as many cells as its header: nothing was cut mid-row."""

    def cells(line: str) -> int:
        return len(re.findall(r"(?<!\\)\|", line)) - 1

    header = None
    for line in text.splitlines():
        if line.startswith("|"):
            if header is None:
                header = cells(line)
            assert cells(line) == header, line
            assert line.endswith("|"), line
        else:
            header = None


# --- resources --------------------------------------------------------------------------------


def test_resources_added_changed_removed_by_urn() -> None:
    base = report(
        {
            "sys-use1": [
                resource("sys-use1", "old-bucket", bucket="old"),
                resource(
                    "sys-use1",
                    "ckpt-versioning",
                    VERSIONING,
                    versioningConfiguration={"status": "Suspended"},
                    bucket="ckpt",
                ),
                resource("sys-use1", "same", bucket="same"),
            ]
        }
    )
    head = report(
        {
            "sys-use1": [
                resource(
                    "sys-use1",
                    "ckpt-versioning",
                    VERSIONING,
                    versioningConfiguration={"status": "Enabled"},
                    bucket="ckpt",
                ),
                resource("sys-use1", "same", bucket="same"),
                resource("sys-use1", "new-bucket", bucket="new", forceDestroy=False),
            ]
        }
    )
    text = render(base, head)
    assert row(text, "resources", "3", "3").endswith("| +1 ~1 -1 |")
    assert "#### Stack `sys-use1` (aws us-east-1, primary): +1 ~1 -1" in text
    changed = row(text, "~", "s3.BucketVersioning", "`ckpt-versioning`")
    assert "`versioningConfiguration.status`: `Suspended` -> `Enabled`" in changed
    assert "bucket" not in changed.split("|")[4]  # unchanged settings are not listed
    assert "new objectLock=False forceDestroy=False" in row(text, "+", "s3.Bucket", "`new-bucket`")
    row(text, "-", "s3.Bucket", "`old-bucket`")
    assert "`same`" not in text
    # Removals first: they are what a reviewer must not miss.
    kinds = [line.split("|")[1].strip() for line in text.splitlines() if "| s3." in line]
    assert kinds == ["-", "~", "+"]
    assert_tables_whole(text)


def test_stacks_new_removed_or_moved_at_head() -> None:
    base = report(
        {
            "sys-use1": [resource("sys-use1", "a")],
            "sys-old": [resource("sys-old", "b")],
        }
    )
    head = report(
        {
            "sys-use1": [resource("sys-use1", "a", region="us-east-2")],
            "sys-new": [resource("sys-new", "c")],
        }
    )
    head["stacks"][0]["region"] = "us-east-2"
    text = render(base, head)
    assert "#### Stack `sys-use1` (aws us-east-1 -> us-east-2, primary): +0 ~1 -0" in text
    assert "#### Stack `sys-new` (new stack) (aws us-east-1, dr): +1 ~0 -0" in text
    assert "#### Stack `sys-old` (removed stack) (aws us-east-1, dr): +0 ~0 -1" in text
    assert row(text, "resources", "2", "2").endswith("| +1 ~1 -1 |")


def test_dependency_order_alone_is_no_change() -> None:
    """The program registers in event-loop order: dependency lists differ run to run."""
    a = resource("sys-use1", "b", bucket="b")
    b = copy.deepcopy(a)
    a["dependencies"], b["dependencies"] = ["urn:x", "urn:y"], ["urn:y", "urn:x"]
    text = render(report({"sys-use1": [a]}), report({"sys-use1": [b]}))
    assert "No changes" in text


def test_removed_protected_resource_says_so() -> None:
    gone = resource("sys-use1", "weights", bucket="weights")
    gone["protect"], gone["retain_on_delete"] = True, True
    text = render(report({"sys-use1": [gone]}), report({"sys-use1": []}))
    line = row(text, "-", "s3.Bucket", "`weights`")
    assert "protected: `pulumi up` refuses to delete it" in line
    assert "retainOnDelete" in line


def test_protect_option_change_is_a_change() -> None:
    a = resource("sys-use1", "key", bucket="k")
    b = copy.deepcopy(a)
    b["protect"] = True
    text = render(report({"sys-use1": [a]}), report({"sys-use1": [b]}))
    assert "`(protect)`: `false` -> `true`" in row(text, "~", "s3.Bucket", "`key`")


def test_new_parent_is_a_urn_change_not_an_add_and_a_remove() -> None:
    a = resource("sys-use1", "ckpt", parent="gpudr:data:Old", bucket="ckpt")
    a["protect"] = True
    b = resource("sys-use1", "ckpt", parent="gpudr:data:New", bucket="ckpt")
    text = render(report({"sys-use1": [a]}), report({"sys-use1": [b]}))
    line = row(text, "moved", "s3.Bucket", "`ckpt`")
    assert "`(urn)`" in line and "replaced (deleted, then created) unless aliased" in line
    assert "protected" in line
    assert "+0 ~0 -0, 1 URN changed" in text


@pytest.mark.parametrize(
    ("old", "new", "shown"),
    [
        ({"a": {"b": [1.0, 2.0]}}, {"a": {"b": [1.0, 3.0]}}, "`a.b.1`: `2` -> `3`"),
        ({"x": "s"}, {}, "`x`: `s` -> `(none)`"),
        ({}, {"x": True}, "`x`: `(none)` -> `true`"),
        ({"x": 0.5}, {"x": None}, "`x`: `0.5` -> `null`"),
        ({"l": [1.0]}, {"l": []}, "`l`: `(none)` -> `[]`"),
        (
            {"policy": '{"Statement": [{"Effect": "Allow"}]}'},
            {"policy": '{"Statement": [{"Effect": "Deny"}]}'},
            "`policy.Statement.0.Effect`: `Allow` -> `Deny`",
        ),
    ],
)
def test_changed_settings_are_dotted_paths(
    old: dict[str, Any], new: dict[str, Any], shown: str
) -> None:
    a = resource("sys-use1", "r", **old)
    b = resource("sys-use1", "r", **new)
    text = render(report({"sys-use1": [a]}), report({"sys-use1": [b]}))
    assert shown in text


def test_long_values_are_shortened_both_ends_kept() -> None:
    old = "arn:aws:kms:us-east-1:123456789012:key/" + "a" * 200 + "-end-old"
    new = old.replace("-end-old", "-end-new")
    (change,) = setting_changes({"kmsKeyId": old}, {"kmsKeyId": new})
    assert len(change.old) <= 60 and change.old.startswith("arn:aws:kms")
    assert change.old.endswith("-end-old") and change.new.endswith("-end-new")
    assert shorten("x" * 10) == "x" * 10


def test_cells_are_escaped() -> None:
    a = resource("sys-use1", "a|b<script>", description="x|y")
    b = resource("sys-use1", "a|b<script>", description="x|z")
    v = violation("no-public-access", "a")
    v["message"] = "public | <img src=x> reachable"
    text = render(
        report({"sys-use1": [a]}), report({"sys-use1": [b]}, violations={"sys-use1": [v]})
    )
    # In a code span HTML is literal; in plain text it is escaped.
    assert "`a\\|b<script>`" in text
    assert "public \\| &lt;img src=x> reachable" in text
    assert "`x\\|y` -> `x\\|z`" in text
    assert_tables_whole(text)


# --- secrets ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "sharedKey",
        "sharedSecret",
        "tunnels.0.psk",
        "password",
        "adminPassword",
        "privateKey",
        "sshKey.private_key",
        "clientSecret",
        "awsAccessKey.secretAccessKey",
        "connectionString",
        "tags.api-key",
    ],
)
def test_secret_keys_are_masked(path: str) -> None:
    assert is_secret_key(path)
    inputs_a: dict[str, Any] = {}
    inputs_b: dict[str, Any] = {}
    a, b = inputs_a, inputs_b
    *parents, leaf = path.split(".")
    for p in parents:
        a = a.setdefault(p, {})
        b = b.setdefault(p, {})
    a[leaf], b[leaf] = "hunter2-old", "hunter2-new"
    base = report({"sys-use1": [resource("sys-use1", "vpn", **inputs_a)]})
    head = report(
        {
            "sys-use1": [
                resource("sys-use1", "vpn", **inputs_b),
                resource("sys-use1", "vpn2", **inputs_b),
            ]
        }
    )
    text = render(base, head)
    assert "hunter2" not in text
    assert f"`{MASK}` -> `{MASK}, changed`" in text


@pytest.mark.parametrize("path", ["keyName", "kmsKeyId", "httpTokens", "tags.gpudr:steady-kbps"])
def test_settings_are_not_secrets(path: str) -> None:
    assert not is_secret_key(path)


def test_a_boolean_under_a_secret_looking_key_is_a_setting() -> None:
    (change,) = setting_changes({"allowSharedKeyAccess": False}, {"allowSharedKeyAccess": True})
    assert (change.old, change.new) == ("false", "true")


def test_values_pulumi_marked_secret_are_masked_whatever_the_key() -> None:
    def secret(value: str) -> dict[str, str]:
        return {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "value": value}

    assert flatten({"k": secret("x")})["k"] != "x"
    changes = setting_changes({"k": secret("offline-1")}, {"k": secret("offline-2")})
    assert [(c.path, c.old, c.new) for c in changes] == [("k", MASK, f"{MASK}, changed")]
    assert setting_changes({"k": secret("same")}, {"k": secret("same")}) == []
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIB...\n-----END RSA PRIVATE KEY-----"
    (change,) = setting_changes({"material": "none"}, {"material": pem})
    assert change.new == MASK


# --- policy, targets, cost ---------------------------------------------------------------------


def violation(policy: str, name: str, level: str = "mandatory") -> dict[str, Any]:
    return {
        "policy": policy,
        "level": level,
        "urn": f"urn:pulumi:sys-use1::gpudr::gpudr:data:DataClass${BUCKET}::{name}",
        "message": f"{policy} refuses {name}",
    }


def test_policy_verdicts_that_changed() -> None:
    base = report(
        violations={
            "sys-use1": [
                violation("encryption-at-rest", "a"),
                violation("kms-key-rotation", "k", "advisory"),
                violation("no-public-access", "same"),
            ]
        }
    )
    head = report(
        violations={
            "sys-use1": [
                violation("replication-meets-rpo", "ckpt"),
                violation("kms-key-rotation", "k", "mandatory"),
                violation("no-public-access", "same"),
            ]
        }
    )
    text = render(base, head)
    assert "replication-meets-rpo refuses ckpt" in row(text, "**new**", "mandatory")
    assert "`a`" in row(text, "resolved", "mandatory", "encryption-at-rest")
    row(text, "level changed", "advisory -> mandatory", "kms-key-rotation")
    assert "no-public-access" not in text  # the same verdict at both ends
    assert row(text, "policy pack").endswith("| 1 new, 1 resolved violation(s) |")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"meets": False}, "| 13m53s | yes -> **NO** |"),
        ({"required_gbps": 2.37037}, "790 Mbps -> **2.37 Gbps**"),
        ({"provisioned_gbps": 1.0}, "5 Gbps -> **1 Gbps**"),
        ({"estimated_rpo_s": 4004.15}, "1h -> **1h6m**"),
        ({"estimated_rto_s": 1900.0}, "13m53s -> **31m40s**"),
        ({"rpo_s": 3600.0}, "| 4h -> **1h** | 4h |"),
        # As the plan report shows it: a mechanism that gives no RPO figure.
        ({"estimated_rpo_s": None}, "1h -> **no guarantee**"),
    ],
)
def test_workload_compliance_and_sizing_rows(changes: dict[str, Any], expected: str) -> None:
    head_w = workload("checkpoints", **changes)
    if changes.get("meets") is False:
        head_w["notes"] = ["a burst takes longer than the RPO at this capacity"]
    text = render(
        report(workloads=[workload("checkpoints"), workload("weights")]),
        report(workloads=[head_w, workload("weights")]),
    )
    assert expected in row(text, "checkpoints", "use1->usw2")
    assert "| weights |" not in text  # unchanged workloads are not listed
    if changes.get("meets") is False:
        assert "- checkpoints: a burst takes longer than the RPO" in text
        assert row(text, "every target met").startswith("| every target met | yes | NO |")


def test_rows_show_the_plan_reports_columns_and_cells() -> None:
    """A workload and a path are shown as `gpudr plan` shows them, under its column names."""
    base = report(workloads=[workload("checkpoints")])
    head = report(workloads=[workload("checkpoints", estimated_rpo_s=None)])
    head["paths"][0].update(provisioned_gbps=None, ok=False)
    text = render(base, head)
    lines = text.splitlines()
    for columns in (WORKLOAD_COLUMNS, PATH_COLUMNS):
        assert "| " + " | ".join(columns) + " |" in lines
    w = workload_cells(head["workloads"][0])
    assert w[8] == "no guarantee"
    assert row(text, *w[:2]).endswith(f"| 1h -> **{w[8]}** | {w[9]} | {w[10]} |")
    p = path_cells(head["paths"][0])
    assert row(text, *p[:2]).endswith(f"| 5 Gbps -> **{p[5]}** | yes -> **{p[6]}** |")


def test_replication_path_row_when_the_need_rises() -> None:
    text = render(
        report(workloads=[workload("checkpoints")]),
        report(workloads=[workload("checkpoints", required_gbps=2.37037)]),
    )
    line = row(text, "use1->usw2", "s3-rtc")
    assert "790 Mbps -> **2.37 Gbps**" in line and "988 Mbps -> **2.96 Gbps**" in line


@pytest.mark.parametrize(
    ("base_usd", "head_usd", "delta", "pct"),
    [
        (1000.0, 1500.0, "+$500", "+50.0%"),
        (1500.0, 1000.0, "-$500", "-33.3%"),
        (1000.0, 1000.4, "+$0.40", "+<0.1%"),
        (1000.0, 1000.0, "$0", "0%"),
        (0.0, 250.0, "+$250", "new"),
    ],
)
def test_cost_delta_sign_and_percent(
    base_usd: float, head_usd: float, delta: str, pct: str
) -> None:
    assert signed_usd(head_usd - base_usd) == delta
    assert percent(base_usd, head_usd) == pct
    text = render(report(dr_usd=base_usd), report(dr_usd=head_usd))
    assert row(text, "DR cost / month").endswith(f"| **{delta}** ({pct}) |")


def test_cost_lines_largest_change_first() -> None:
    def line(item: str, usd: float, dr: bool = True) -> dict[str, Any]:
        return {
            "site": "usw2",
            "category": "replication",
            "item": item,
            "monthly_usd": usd,
            "dr": dr,
        }

    base = report(lines=[line("small", 10), line("big", 100), line("same", 5), line("gone", 7)])
    head = report(lines=[line("small", 12), line("big", 300), line("same", 5), line("new", 1)])
    text = render(base, head)
    items = [r.split("|")[3].strip() for r in text.splitlines() if r.startswith("| usw2 |")]
    assert items == ["big", "gone", "small", "new"]
    assert row(text, "usw2", "replication", "gone").endswith("| $7.00 | - | -$7.00 |")


# --- whole documents --------------------------------------------------------------------------


def test_header_marker_and_summary() -> None:
    text = render(report(), report(dr_usd=1200.0), plan_path="plans/sys.yaml")
    first, title = text.splitlines()[:2]
    assert first == "<!-- gpudr-diff: sys -->"
    assert title == "### gpudr diff: `sys` (`plans/sys.yaml`)"
    assert "base `main` (abc1234) -> head head" in text
    assert row(text, "DR cost / month") == (
        "| DR cost / month | $1,000 | $1,200 | **+$200** (+20.0%) |"
    )


def test_new_plan_shows_everything_added() -> None:
    head = report({"sys-use1": [resource("sys-use1", "a"), resource("sys-use1", "b")]})
    text = render(None, head)
    assert "the plan is new: everything is added" in text
    assert row(text, "resources") == "| resources | - | 2 | +2 ~0 -0 |"
    assert row(text, "DR cost / month").endswith("| **+$1,000** (new) |")
    assert row(text, "checkpoints (new)", "use1->usw2").endswith(
        "| 4h | 4h | - | crr-rtc | 790 Mbps | 5 Gbps | 1h | 13m53s | yes |"
    )
    row(text, "+", "s3.Bucket", "`a`")


def test_same_reports_say_no_changes() -> None:
    r = report({"sys-use1": [resource("sys-use1", "a", bucket="a")]})
    text = render(r, copy.deepcopy(r))
    assert "No changes: the same resources, verdicts, sizing and cost." in text
    assert row(text, "resources") == "| resources | 1 | 1 | +0 ~0 -0 |"


def huge_pair(stacks: int = 10, per_stack: int = 600) -> tuple[dict[str, Any], dict[str, Any]]:
    """Thousands of resources with big inputs: a quarter removed, a quarter added, the rest
    changed in many settings; violations and workloads by the hundred."""
    blob = "x" * 400

    def inputs(i: int, version: str) -> dict[str, Any]:
        return {
            "tags": {f"tag-{k}": f"{version}-{blob}-{k}" for k in range(30)},
            "rules": [{"id": f"rule-{k}", "days": float(k), "note": version} for k in range(10)],
            "sharedKey": f"{version}-secret-{i}",
        }

    base_res: dict[str, list[dict[str, Any]]] = {}
    head_res: dict[str, list[dict[str, Any]]] = {}
    base_v: dict[str, list[dict[str, Any]]] = {}
    head_v: dict[str, list[dict[str, Any]]] = {}
    for s in range(stacks):
        name = f"huge-system-site{s:02d}"
        base_res[name] = [
            resource(name, f"r{i:05d}", **inputs(i, "old")) for i in range(per_stack) if i % 4 != 0
        ]
        head_res[name] = [
            resource(name, f"r{i:05d}", **inputs(i, "new")) for i in range(per_stack) if i % 4 != 1
        ]
        base_v[name] = [violation("encryption-at-rest", f"r{i:05d}") for i in range(0, 100, 2)]
        head_v[name] = [violation("encryption-at-rest", f"r{i:05d}") for i in range(1, 100, 2)]
    base_w = [workload(f"w{i}") for i in range(300)]
    head_w = [workload(f"w{i}", required_gbps=1.5, meets=i % 2 == 0) for i in range(300)]
    return (
        report(base_res, violations=base_v, workloads=base_w),
        report(head_res, violations=head_v, workloads=head_w, dr_usd=2000.0),
    )


@pytest.fixture(scope="module")
def huge() -> tuple[dict[str, Any], dict[str, Any]]:
    return huge_pair()


@pytest.mark.parametrize("limit", [DEFAULT_LIMIT, 20_000, 4_000])
def test_huge_diff_fits_and_still_counts(
    huge: tuple[dict[str, Any], dict[str, Any]], limit: int
) -> None:
    base, head = huge
    text = render(base, head, limit=limit)
    assert len(text) <= limit < COMMENT_LIMIT
    assert text.startswith("<!-- gpudr-diff: sys -->\n")
    # 10 stacks x 600: 150 removed, 150 added, 300 changed each.
    assert row(text, "resources") == "| resources | 4500 | 4500 | +1500 ~3000 -1500 |"
    assert row(text, "policy pack").endswith("| 500 new, 500 resolved violation(s) |")
    assert "Summarised to fit a PR comment" in text
    assert "secret-" not in text
    assert_tables_whole(text)


def test_huge_diff_summarises_progressively(huge: tuple[dict[str, Any], dict[str, Any]]) -> None:
    base, head = huge
    roomy = render(base, head)
    assert "... and " in roomy and "more" in roomy
    tight = render(base, head, limit=12_000)
    # Counts per resource type per stack once rows no longer fit.
    assert "| type | + | ~ | - | URN changed |" in tight
    assert "| s3.Bucket | 150 | 300 | 150 | 0 |" in tight


def test_no_limit_shows_everything() -> None:
    base, head = huge_pair(stacks=1, per_stack=40)
    text = render(base, head, limit=0)
    assert "Summarised" not in text
    assert sum(1 for line in text.splitlines() if "| s3.Bucket |" in line) == 40


def test_a_limit_below_the_summary_cuts_whole_lines_only() -> None:
    text = render(report(), report(dr_usd=5.0), limit=200)
    assert len(text) <= 200 and text.endswith("\n")
    assert_tables_whole(text)


def test_diff_and_its_git_driver_import_no_pulumi() -> None:
    code = (
        "import sys, gpudr.docs.diff, gpudr.app.prdiff\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert proc.stdout.strip() == "[]"
