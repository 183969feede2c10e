"""`gpudr plan` at the edges of the DR math (issue 16): an RPO equal to the checkpoint interval, a
need beyond the largest Direct Connect plan, non-finite and ambiguous numbers. Each gives a
verdict or one error line (exit 2), never a traceback, and the JSON is strict JSON."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudr.app.cli import main
from gpudr.build.stackconfig import stack_config_values
from gpudr.contract.site import SiteConfig
from gpudr.contract.stack import SITE_KEY
from gpudr.contract.tags import bucket_tags
from gpudr.core.design import design
from gpudr.core.spec import PlanError, parse_plan
from gpudr.core.units import parse_duration
from gpudr.docs.report import build_report, render_text, to_json, workload_cells
from tests.conftest import ROOT

EXAMPLES = ROOT / "examples"


def _example(name: str) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    return raw


def _strict(text: str) -> dict[str, Any]:
    """JSON as every parser reads it: `NaN`, `Infinity` and `-Infinity` are not JSON."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON output")

    report: dict[str, Any] = json.loads(text, parse_constant=refuse)
    return report


def _plan(tmp_path: Path, raw: dict[str, Any], *args: str) -> tuple[int, str]:
    file = tmp_path / "plan.yaml"
    file.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(main, ["plan", str(file), *args], catch_exceptions=False)
    return result.exit_code, result.output


def _dx(raw: dict[str, Any]) -> None:
    raw["sites"]["usw2"]["link"] = {
        "kind": "direct-connect",
        "location": "EqDC2",
        "secondary_location": "EqSE2",
    }


def _checkpoints(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        raw["data"]["checkpoints"].update(fields)

    return change


# (example, changes, exit code, checkpoints met, checkpoints' need in Gbps or None if unbounded).
RPO_EQUALS_INTERVAL = {
    # Asynchronous copies start once the checkpoint is written: 0 s left, no bandwidth meets it.
    # Before: exit 3, TypeError 'NoneType' * 'int' from the tag writer.
    "rtc": ("aws-two-region", [_checkpoints(rpo="45m")], 1, False, None),
    "sts": ("aws-to-gcp", [_checkpoints(rpo="45m")], 1, False, None),
    # A dual-written checkpoint is at the DR site when its write ends: RPO = interval holds.
    # 1 TB x 0.5 / 2 in 1 h = 0.556 Gbps. Before: exit 3, the same TypeError.
    "azure-dual-write": ("azure-two-region", [_checkpoints(rpo="1h")], 0, True, 0.555556),
    # Before: OverflowError from the Direct Connect sizing, and no report.
    "direct-connect-dual-write": (
        "aws-two-region",
        [_dx, _checkpoints(rpo="45m", replication="dual-write")],
        0,
        True,
        0.790123,
    ),
}


@pytest.mark.parametrize(
    ("example", "changes", "code", "met", "need"),
    RPO_EQUALS_INTERVAL.values(),
    ids=RPO_EQUALS_INTERVAL.keys(),
)
def test_an_rpo_equal_to_the_interval_is_a_verdict(
    tmp_path: Path,
    example: str,
    changes: list[Callable[[dict[str, Any]], None]],
    code: int,
    met: bool,
    need: float | None,
) -> None:
    raw = _example(example)
    for change in changes:
        change(raw)
    exit_code, output = _plan(tmp_path, raw, "--format", "json", "--no-policy")
    assert exit_code == code, output
    report = _strict(output)
    assert report["stacks"], "the report lists the stacks"
    ckpt = next(w for w in report["workloads"] if w["name"] == "checkpoints")
    assert ckpt["meets"] is met
    # The classes sharing its path keep their own verdict: the path carries the unbounded
    # flow's steady rate, not an infinite need (before the fix, a crash; an infinite sum would
    # have failed every class on the path).
    assert all(w["meets"] for w in report["workloads"] if w["name"] != "checkpoints")
    if need is None:
        assert ckpt["required_gbps"] is None
        assert ckpt["unbounded"]["required_gbps"].startswith("no bandwidth meets the RPO")
        assert any(
            n.startswith("no bandwidth can meet this: the checkpoint interval")
            for n in ckpt["notes"]
        )
    else:
        assert ckpt["required_gbps"] == pytest.approx(need, rel=1e-5)
        assert "required_gbps" not in ckpt["unbounded"]
        # Synchronous: the loss is the interval, which is the RPO.
        interval = parse_duration(raw["data"]["checkpoints"]["interval"])
        assert ckpt["estimated_rpo_s"] == ckpt["rpo_s"] == interval


def test_an_unbounded_need_still_goes_through_the_program_and_the_pack(tmp_path: Path) -> None:
    """The stacks are built (the tag writer marks the need `unbounded`) and judged by the pack:
    a report and exit 1, as for any unmet target."""
    raw = _example("aws-two-region")
    raw["data"]["checkpoints"]["rpo"] = "45m"
    exit_code, output = _plan(tmp_path, raw, "--format", "json")
    assert exit_code == 1, output
    report = _strict(output)
    assert report["policy_ok"] is False
    refused = {
        (v["policy"], v["urn"].rsplit("::", 1)[-1])
        for s in report["stacks"]
        for v in s.get("policy", {}).get("violations", ())
        if v["level"] == "mandatory"
    }
    # As the planner says: the checkpoints miss their RPO; the datasets beside them on the
    # S3 RTC quota do not (the pack sums the same path load).
    assert refused == {("replication-meets-rpo", "use1-checkpoints-bucket")}
    tags = [
        r["inputs"].get("tags") or {}
        for s in report["stacks"]
        for r in s["resources"]
        if r["type"] == "aws:s3/bucket:Bucket"
    ]
    checkpoint_tags = [t for t in tags if t.get("gpudr:data-class") == "checkpoints"]
    assert checkpoint_tags and all(t["gpudr:required-mbps"] == "unbounded" for t in checkpoint_tags)


def test_a_need_beyond_the_largest_direct_connect_plan_is_a_verdict(tmp_path: Path) -> None:
    """1 PB of weights dual-written in 1 h: 2,222 Gbps, 2,778 with headroom; the largest plan is
    2 x 400 Gbps ports per location (before: ValueError traceback)."""
    raw = _example("aws-two-region")
    _dx(raw)
    raw["data"]["weights"]["size"] = "1PB"
    exit_code, output = _plan(tmp_path, raw, "--format", "json", "--no-policy")
    assert exit_code == 1, output
    report = _strict(output)
    weights = next(w for w in report["workloads"] if w["name"] == "weights")
    assert not weights["meets"]
    path = next(p for p in report["paths"] if p["kind"] == "direct-connect")
    assert path["ports"] == {"port_gbps": 400, "ports": 4}
    assert path["needed_gbps"] == pytest.approx(2777.78, rel=1e-4)
    assert not path["ok"]
    short = path["needed_gbps"] - path["provisioned_gbps"]
    assert any(
        "needs 2,777.78 Gbps with headroom but the largest Direct Connect plan gpudr deploys has "
        f"{path['provisioned_gbps']:,.6g} Gbps ("
        in n
        and n.endswith(f"{short:,.2f} Gbps short")
        for n in weights["notes"]
    ), weights["notes"]


@pytest.mark.parametrize(
    ("field", "value", "line"),
    [
        (("headroom",), math.nan, "gpudr: headroom: nan is not a finite number"),
        (
            ("data", "checkpoints", "compression_ratio"),
            math.inf,
            "gpudr: data.checkpoints.compression_ratio: inf is not a finite number",
        ),
        (
            ("data", "weights", "publishes_per_month"),
            math.inf,
            "gpudr: data.weights.publishes_per_month: inf is not a finite number",
        ),
        (("quotas", "s3_rtc_gbps"), "5gbps", 'gpudr: quotas.s3_rtc_gbps: "5gbps" is not a'),
        (("data", "checkpoints", "size"), "2Tb", 'gpudr: data.checkpoints.size: "2Tb" is not a'),
    ],
)
def test_non_finite_and_ambiguous_numbers_exit_2_naming_the_field(
    tmp_path: Path, field: tuple[str, ...], value: Any, line: str
) -> None:
    raw = _example("aws-two-region")
    node = raw
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    file = tmp_path / "plan.yaml"
    file.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(main, ["plan", str(file), "--format", "json"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert line in result.output
    assert "Traceback" not in result.output


# --- "unbounded" is not "no guarantee" -------------------------------------------------------


def _cells(raw: dict[str, Any], name: str) -> list[str]:
    report = build_report(design(parse_plan(raw)), [])
    row = next(w for w in report["workloads"] if w["name"] == name)
    return workload_cells(row)


@pytest.mark.parametrize(
    ("change", "required", "estimate"),
    [
        # S3 CRR without RTC has no replication-time guarantee: no estimate, a finite need.
        (_checkpoints(replication="crr"), "790 Mbps", "no guarantee"),
        # No time to replicate: the need is unbounded (before: shown as "-").
        (_checkpoints(replication="crr", rpo="45m"), "unbounded", "no guarantee"),
        # The path cannot carry the steady rate: the estimate is unbounded (before: "no
        # guarantee", the words of a mechanism without SLA).
        (lambda raw: raw["quotas"].update(s3_rtc_gbps=0.1), "790 Mbps", "unbounded"),
    ],
    ids=["no-sla", "no-time", "backlog"],
)
def test_unbounded_and_no_guarantee_are_told_apart(
    change: Callable[[dict[str, Any]], None], required: str, estimate: str
) -> None:
    raw = _example("aws-two-region")
    change(raw)
    cells = _cells(raw, "checkpoints")
    assert (cells[6], cells[8]) == (required, estimate)


# --- any value in any numeric field: exit 2 with its path, or a strict report -----------------

NUMERIC_PATHS = [
    ("headroom",),
    ("sites", "usw2", "warm_fraction"),
    ("clusters", "train", "nodes"),
    ("services", "chat", "nodes"),
    ("services", "chat", "rpo"),
    ("services", "chat", "rto"),
    ("data", "checkpoints", "size"),
    ("data", "checkpoints", "interval"),
    ("data", "checkpoints", "keep"),
    ("data", "checkpoints", "dedup_ratio"),
    ("data", "checkpoints", "compression_ratio"),
    ("data", "checkpoints", "rpo"),
    ("data", "weights", "size"),
    ("data", "weights", "retention"),
    ("data", "weights", "publish_window"),
    ("data", "weights", "publishes_per_month"),
    ("data", "datasets", "size"),
    ("data", "datasets", "daily_change"),
    ("data", "datasets", "rpo"),
    ("recovery", "detection"),
    ("recovery", "read_gbps_per_node"),
    ("quotas", "s3_rtc_gbps"),
    ("quotas", "tgw_peering_gbps"),
    ("drill", "verify"),
    ("logging", "flow_logs"),
]
_UNITS = [
    "",
    "s",
    "m",
    "h",
    "d",
    "M",
    "B",
    "kB",
    "GB",
    "TB",
    "PB",
    "Tb",
    "gb",
    "GiB",
    "Gbps",
    "gbps",
    "GBps",
    "GB/s",
    "Mbps",
]
VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([math.nan, math.inf, -math.inf, 0, 1e308, 5e-324, 10**400]),
    st.builds(
        lambda n, u: f"{n}{u}",
        st.one_of(
            st.decimals(min_value=0, max_value=10**25, allow_nan=False, allow_infinity=False),
            st.sampled_from(["9" * 400, "0", "0.000000001", "1e3", "-1", "nan", "inf"]),
        ),
        st.sampled_from(_UNITS),
    ),
    st.text(max_size=20),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
BASES = {name: _example(name) for name in ("aws-two-region", "aws-to-gcp", "azure-two-region")}


def _check_output(raw: dict[str, Any]) -> None:
    """A plan: strict JSON, a text report, stack configs the program reads back and tags it
    writes. Bad input: one line per problem, each naming its field."""
    try:
        plan = parse_plan(raw)
    except PlanError as exc:
        assert exc.errors
        for error in exc.errors:
            assert error.path and "\n" not in str(error), str(error)
        return
    d = design(plan)
    report = build_report(d, [])
    _strict(to_json(report))
    render_text(report)
    for site in plan.sites.values():
        values = stack_config_values(d, site)
        json.dumps(values, allow_nan=False)
        config = SiteConfig.from_dict(values[SITE_KEY])
        for bucket in config.buckets:
            bucket_tags(config, bucket)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.sampled_from(sorted(BASES)),
    st.lists(st.tuples(st.sampled_from(NUMERIC_PATHS), VALUES), min_size=1, max_size=3),
)
def test_any_value_gives_a_field_error_or_a_strict_report(
    base: str, changes: list[tuple[tuple[str, ...], Any]]
) -> None:
    raw = copy.deepcopy(BASES[base])
    for path, value in changes:
        node = raw
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node[path[-1]] = value
    _check_output(raw)
