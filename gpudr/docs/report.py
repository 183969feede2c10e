"""The plan report: a JSON-able document (the stable contract) and its text and markdown forms.

`build_report` takes the design and what each stack's program registered offline (plain
dicts, so this module stays free of Pulumi) and assembles the document; the renderers only
read that document, so the three formats cannot disagree.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpudr.build.irreversible import irreversible_settings
from gpudr.core.design import Design, Pool, Workload
from gpudr.core.design import Path as ReplicationPath
from gpudr.core.enums import UNBOUNDED
from gpudr.core.units import fmt_duration, fmt_gbps, fmt_usd

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

SCHEMA_VERSION = 1
PRICES_FILE = "gpudr/core/data/prices.yaml"


def _num(value: float | None) -> float | None:
    """A number as JSON holds it: no infinity or NaN (not JSON), which are null; an infinite
    value says why in its record's `unbounded` (`_unbounded`)."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 6)


# Why a number of a workload or a path is infinite, by field: JSON carries it as null and the
# record's `unbounded` maps the field to this reason. An infinite need or estimate (no bandwidth
# meets it) is not the absent estimate of a mechanism without a replication-time guarantee.
_NO_LIMIT_WHY = "no provisioned capacity limit (see the path's capacity_source)"
WORKLOAD_UNBOUNDED = {
    "required_gbps": "no bandwidth meets the RPO: it leaves no time to replicate (see the notes)",
    "provisioned_gbps": _NO_LIMIT_WHY,
    "estimated_rpo_s": "the path has no capacity left for this flow: its backlog grows without "
    "bound",
    "estimated_rto_s": "no capacity to read the data at the DR site",
}
# A path sums what its flows ask of it (`sizing.path_load_gbps`): finite, even beside a flow
# whose own need is unbounded.
PATH_UNBOUNDED = {"provisioned_gbps": _NO_LIMIT_WHY}


def _unbounded(why: Mapping[str, str], **values: float | None) -> dict[str, str]:
    """The fields among `values` that are infinite, each with its reason from `why`."""
    return {k: why.get(k, "infinite") for k, v in values.items() if v is not None and math.isinf(v)}


def _policy_ok(stacks: Sequence[Mapping[str, Any]]) -> bool | None:
    if not any("policy" in s for s in stacks):
        return None
    return not any(
        v["level"] == "mandatory" for s in stacks for v in s.get("policy", {}).get("violations", ())
    )


def build_report(design: Design, stacks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`stacks`: one mapping per stack with name, site, cloud, region, role and `resources`
    (each with type, name, urn, id, inputs, and the engine's parent/dependency fields)."""
    plan = design.plan
    return {
        "schema": SCHEMA_VERSION,
        "plan": {"name": plan.name, "source": plan.source},
        "meets": design.meets,
        # False when the policy pack reported a mandatory violation in any stack; None when
        # the pack was not run.
        "policy_ok": _policy_ok(stacks),
        "stacks": [dict(s) for s in stacks],
        "workloads": [_workload(w) for w in design.workloads],
        "paths": [_path(p) for p in design.paths.values()],
        "pools": [_pool(p) for p in design.pools],
        "cost": _cost(design),
        # What a `pulumi up` of these stacks cannot undo: what, where, how long, and the trial.
        "irreversible": [x.to_dict() for x in irreversible_settings(design)],
    }


def _workload(w: Workload) -> dict[str, Any]:
    """A workload's targets, how it is protected and what the plan estimates."""
    return {
        "name": w.name,
        "kind": w.kind,
        "pair": w.pair,
        "rpo_s": _num(w.rpo_s),
        "rto_s": _num(w.rto_s),
        "pattern": w.pattern,
        "mechanism": w.mechanism,
        "required_gbps": _num(w.required_gbps),
        "provisioned_gbps": _num(w.provisioned_gbps),
        "estimated_rpo_s": _num(w.estimated_rpo_s),
        "estimated_rto_s": _num(w.estimated_rto_s),
        "meets": w.meets,
        # met | not met | met only if on-demand capacity is found (GPUs neither standing nor
        # reserved: `guaranteed` False; the notes offer what makes them certain).
        "verdict": w.verdict,
        "guaranteed": w.guaranteed,
        "notes": list(w.notes),
        "unbounded": _unbounded(
            WORKLOAD_UNBOUNDED,
            required_gbps=w.required_gbps,
            provisioned_gbps=w.provisioned_gbps,
            estimated_rpo_s=w.estimated_rpo_s,
            estimated_rto_s=w.estimated_rto_s,
        ),
    }


def _path(p: ReplicationPath) -> dict[str, Any]:
    """A replication path: what it carries, what it needs and what it is given."""
    return {
        "key": p.key,
        "kind": p.kind,
        "pair": f"{p.primary}->{p.dr}",
        "flows": list(p.flows),
        "required_gbps": _num(p.required_gbps),
        "headroom": p.headroom,
        "needed_gbps": _num(p.needed_gbps),
        "provisioned_gbps": _num(p.capacity_gbps),
        "capacity_source": p.capacity_source,
        "ok": p.ok,
        "ports": None
        if p.ports is None
        else {"port_gbps": p.ports.port_gbps, "ports": p.ports.ports},
        "unbounded": _unbounded(
            PATH_UNBOUNDED,
            required_gbps=p.required_gbps,
            needed_gbps=p.needed_gbps,
            provisioned_gbps=p.capacity_gbps,
        ),
    }


def _pool(p: Pool) -> dict[str, Any]:
    """A GPU pool: its standby pattern, and every pattern it could have had."""
    return {
        "name": p.name,
        "kind": p.kind,
        "cluster": p.cluster,
        "pair": f"{p.primary}->{p.dr}",
        "instance_type": p.instance_type,
        "nodes": p.nodes,
        "pattern": p.pattern,
        "standby_nodes": p.standing,
        "rto_stages_s": {k: _num(v) for k, v in p.chosen.stages.items()},
        "capacity_guaranteed": p.guaranteed,
        # What makes its GPUs certain when they are not, with its price (None when they are).
        "capacity_offer": None
        if p.offer is None
        else {
            "how": p.offer.how,
            "what": p.offer.what,
            "nodes": p.offer.nodes,
            "monthly_usd": round(p.offer.monthly_usd, 2),
            "estimated_rto_s": _num(p.offer.estimated_rto_s),
            "meets": p.offer.meets,
        },
        "options": [
            {
                "pattern": o.pattern,
                "estimated_rto_s": _num(o.estimated_rto_s),
                "monthly_usd": round(o.monthly_usd, 2),
                "meets": o.meets,
                "capacity_guaranteed": o.guaranteed,
            }
            for o in p.options
        ],
    }


def _cost(design: Design) -> dict[str, Any]:
    """Monthly cost: DR posture and totals, by site and category, and every line."""
    c = design.cost
    return {
        "monthly_usd": round(c.total(dr_only=True), 2),
        "primary_monthly_usd": round(c.total() - c.total(dr_only=True), 2),
        "total_monthly_usd": round(c.total(), 2),
        "by_site": {k: {kk: round(vv, 2) for kk, vv in v.items()} for k, v in c.by_site().items()},
        "by_category": {k: round(v, 2) for k, v in c.by_category().items()},
        # Items the totals leave out because prices.yaml has no price for them.
        "unpriced": list(c.unpriced),
        "alternatives": {
            k: {"monthly_usd": round(v[0], 2), "meets_rto": v[1]}
            for k, v in design.alternatives.items()
        },
        "lines": [
            {
                "site": x.site,
                "category": x.category,
                "item": x.item,
                "quantity": round(x.quantity, 4),
                "unit": x.unit,
                "unit_usd": x.unit_usd,
                "monthly_usd": round(x.monthly_usd, 2),
                "dr": x.dr,
                "source": x.source,
                # Set when the price has volume tiers: the bands and the volume billed.
                "tiers": x.tiers,
            }
            for x in c.lines
        ],
    }


def to_json(report: Mapping[str, Any]) -> str:
    """Strict JSON: a NaN or infinity that reached the report is a bug, refused here rather than
    written as `NaN`/`Infinity`, which no JSON parser accepts."""
    return plan_json(report) + "\n"


def plan_json(report: Mapping[str, Any]) -> str:
    """One plan's report as `gpudr plan --format json` writes it (without the final newline),
    and as the plan cache stores it: a portfolio of stored plans is then written by
    `portfolio_json` without encoding any of them again."""
    return json.dumps(report, indent=2, sort_keys=False, allow_nan=False)


# A top-level key of `plan_json`'s text: the only lines indented by exactly two spaces (nested
# keys have four or more; a string holds no raw newline, JSON escapes it).
_MEETS = re.compile(r'^  "meets": (true|false),?$', re.MULTILINE)
_POLICY_OK = re.compile(r'^  "policy_ok": (true|false|null),?$', re.MULTILINE)
_JSON_VALUES = {"true": True, "false": False, "null": None}


def plan_verdict(text: str) -> tuple[bool, bool | None]:
    """(`meets`, `policy_ok`) of a plan's `plan_json` text, read without decoding the rest."""
    meets, policy = _MEETS.search(text), _POLICY_OK.search(text)
    if meets is None or policy is None:
        raise ValueError("not a plan report: no top-level meets and policy_ok")
    return meets.group(1) == "true", _JSON_VALUES[policy.group(1)]


def _portfolio_head(verdicts: Sequence[tuple[bool, bool | None]]) -> dict[str, Any]:
    """The portfolio's `meets` (every plan meets every target) and `policy_ok` (False when the
    pack refuses any stack of any plan, None when it was not run)."""
    policies = [p for _, p in verdicts]
    return {
        "schema": SCHEMA_VERSION,
        "meets": all(m for m, _ in verdicts),
        "policy_ok": None if None in policies else all(policies),
    }


def portfolio_json(texts: Sequence[str]) -> str:
    """`to_json(build_portfolio(reports))` from each plan's `plan_json(report)`, by nesting the
    texts as `json.dumps(..., indent=2)` nests a list of objects two levels down."""
    head = json.dumps(_portfolio_head([plan_verdict(t) for t in texts]), indent=2)
    plans = ",\n".join("    " + text.replace("\n", "\n    ") for text in texts)
    return f'{head.removesuffix(chr(10) + "}")},\n  "plans": [\n{plans}\n  ]\n}}\n'


# --- key settings -----------------------------------------------------------------------------


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _replication(i: dict[str, Any]) -> str:
    parts = []
    for rule in i.get("rules") or []:
        dest = rule.get("destination") or {}
        rtc = "RTC 15m" if _get(dest, "replicationTime", "status") == "Enabled" else "no RTC"
        bucket = str(dest.get("bucket", "")).removeprefix("arn:aws:s3:::")
        parts.append(f"{rule.get('id')} -> {bucket} ({rtc}, {dest.get('storageClass')})")
    return "; ".join(parts)


def _node_group(i: dict[str, Any]) -> str:
    sc = i.get("scalingConfig") or {}
    taints = ",".join(
        f"{t.get('key')}={t.get('value')}:{t.get('effect')}" for t in i.get("taints") or []
    )
    return (
        f"{','.join(i.get('instanceTypes') or [])} min/desired/max "
        f"{sc.get('minSize', 0):.0f}/{sc.get('desiredSize', 0):.0f}/{sc.get('maxSize', 0):.0f} "
        f"{i.get('amiType')} taint {taints}"
    )


def _launch_template(i: dict[str, Any]) -> str:
    nics = i.get("networkInterfaces") or []
    efa = sum(1 for n in nics if n.get("interfaceType") == "efa")
    group = _get(i, "placement", "groupName")
    cr = _get(i, "capacityReservationSpecification", "capacityReservationTarget")
    return (
        f"EFA x{efa}, placement {group or '-'}, IMDSv2 {_get(i, 'metadataOptions', 'httpTokens')}"
        + (", capacity reservation" if cr else "")
    )


def _lifecycle(i: dict[str, Any]) -> str:
    out = []
    for r in i.get("rules") or []:
        if r.get("transitions"):
            t = r["transitions"][0]
            out.append(f"{t.get('storageClass')} after {t.get('days', 0):.0f}d")
        if r.get("noncurrentVersionExpiration"):
            n = r["noncurrentVersionExpiration"]
            out.append(f"keep {n.get('newerNoncurrentVersions', 0):.0f} versions")
    return ", ".join(out)


def _bucket(i: dict[str, Any]) -> str:
    lock = bool(i.get("objectLockEnabled"))
    return f"{i.get('bucket')} objectLock={lock} forceDestroy={bool(i.get('forceDestroy'))}"


def _sse(i: dict[str, Any]) -> str:
    return "; ".join(
        f"{_get(r, 'applyServerSideEncryptionByDefault', 'sseAlgorithm')} "
        f"bucketKey={r.get('bucketKeyEnabled')}"
        for r in i.get("rules") or []
    )


def _public_block(i: dict[str, Any]) -> str:
    keys = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    return "all blocked" if all(i.get(k) for k in keys) else "NOT fully blocked"


def _object_lock(i: dict[str, Any]) -> str:
    retention = _get(i, "rule", "defaultRetention") or {}
    return f"{retention.get('mode')} {retention.get('days') or 0:.0f}d"


def _eks(i: dict[str, Any]) -> str:
    public = _get(i, "vpcConfig", "endpointPublicAccess")
    return f"{i.get('name')} v{i.get('version')} secrets encrypted, public API={public}"


def _peering(i: dict[str, Any]) -> str:
    return f"to {i.get('peerRegion')} ({_get(i, 'tags', 'gpudr:capacity-gbps')} Gbps planned)"


def _reservation(i: dict[str, Any]) -> str:
    return (
        f"{i.get('instanceCount', 0):.0f} x {i.get('instanceType')} in {i.get('availabilityZone')}"
    )


def _alarm(i: dict[str, Any]) -> str:
    return f"{i.get('metricName')} {i.get('statistic')} > {i.get('threshold', 0):g}"


_SETTINGS: dict[str, Callable[[dict[str, Any]], str]] = {
    "aws:s3/bucket:Bucket": _bucket,
    "aws:s3/bucketVersioning:BucketVersioning": lambda i: str(
        _get(i, "versioningConfiguration", "status")
    ),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": _sse,
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": _public_block,
    "aws:s3/bucketReplicationConfig:BucketReplicationConfig": _replication,
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": _lifecycle,
    "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration": _object_lock,
    "aws:kms/key:Key": lambda i: (
        f"rotation={i.get('enableKeyRotation')} every {i.get('rotationPeriodInDays', 0):.0f}d"
    ),
    "aws:kms/alias:Alias": lambda i: str(i.get("name")),
    "aws:eks/cluster:Cluster": _eks,
    "aws:eks/nodeGroup:NodeGroup": _node_group,
    "aws:ec2/launchTemplate:LaunchTemplate": _launch_template,
    "aws:ec2/placementGroup:PlacementGroup": lambda i: f"strategy {i.get('strategy')}",
    "aws:ec2/capacityReservation:CapacityReservation": _reservation,
    "aws:cloudwatch/metricAlarm:MetricAlarm": _alarm,
    "aws:directconnect/connection:Connection": lambda i: (
        f"{i.get('bandwidth')} at {i.get('location')}"
    ),
    "aws:directconnect/linkAggregationGroup:LinkAggregationGroup": lambda i: (
        f"{i.get('connectionsBandwidth')} ports at {i.get('location')}"
    ),
    "aws:ec2transitgateway/peeringAttachment:PeeringAttachment": _peering,
    "aws:ec2/vpc:Vpc": lambda i: str(i.get("cidrBlock")),
    "aws:ec2/subnet:Subnet": lambda i: f"{i.get('cidrBlock')} {i.get('availabilityZone')}",
    "aws:iam/role:Role": lambda i: str(i.get("name") or ""),
}


def key_settings(resource_type: str, inputs: dict[str, Any]) -> str:
    fn = _SETTINGS.get(resource_type)
    if fn is None:
        return ""
    try:
        return fn(inputs)
    except (TypeError, ValueError, AttributeError):
        return ""


def short_type(resource_type: str) -> str:
    """`aws:s3/bucket:Bucket` -> `s3.Bucket`."""
    parts = resource_type.split(":")
    if len(parts) == 3:
        module = parts[1].split("/")[0]
        return f"{module}.{parts[2]}"
    return resource_type


# --- text and markdown ------------------------------------------------------------------------


# How the tables show a need no bandwidth meets, an estimate that never converges, and a
# capacity without a limit; "no guarantee" is an estimate the mechanism does not give.
NO_LIMIT = "no limit"
NO_GUARANTEE = "no guarantee"


def _shown(record: Mapping[str, Any], key: str, fmt: Callable[[Any], str]) -> str:
    """A number of a workload or path as shown: `unbounded` (`no limit` for a capacity) when
    the report lists it as unbounded, else `fmt` of it."""
    if key in (record.get("unbounded") or {}):
        return NO_LIMIT if key == "provisioned_gbps" else UNBOUNDED
    return fmt(record.get(key))


def _provisioned(w: Mapping[str, Any]) -> str:
    if w.get("provisioned_gbps") is not None:
        return fmt_gbps(w["provisioned_gbps"])
    # No capacity figure: a pool (no path), or a path with no provisioned limit.
    return "-" if w.get("mechanism") is None else NO_LIMIT


# The recovery-targets and replication-paths tables: column names and one row's cells. The plan
# report shows them; `gpudr diff` compares them, so both show a value the same way.
WORKLOAD_COLUMNS = (
    "workload",
    "pair",
    "RPO",
    "RTO",
    "pattern",
    "mechanism",
    "required",
    "provisioned",
    "est. RPO",
    "est. RTO",
    "meets",
)
PATH_COLUMNS = ("path", "kind", "carries", "required", "x headroom", "provisioned", "ok")


def workload_cells(w: Mapping[str, Any]) -> list[str]:
    """A workload of the report as shown, one cell per `WORKLOAD_COLUMNS`."""
    mechanism = w.get("mechanism")
    no_sla = (
        w.get("estimated_rpo_s") is None
        and "estimated_rpo_s" not in (w.get("unbounded") or {})
        and mechanism is not None
        and w.get("rpo_s") is not None
    )
    return [
        str(w.get("name")),
        str(w.get("pair")),
        fmt_duration(w.get("rpo_s")),
        fmt_duration(w.get("rto_s")),
        w.get("pattern") or "-",
        mechanism or "-",
        _shown(w, "required_gbps", fmt_gbps),
        _provisioned(w),
        NO_GUARANTEE if no_sla else _shown(w, "estimated_rpo_s", fmt_duration),
        _shown(w, "estimated_rto_s", fmt_duration),
        _met(w),
    ]


def _met(w: Mapping[str, Any]) -> str:
    """The meets cell: yes, NO, or yes only with GPUs nobody secured."""
    if not w.get("meets"):
        return "NO"
    return "yes" if w.get("guaranteed", True) else "if GPUs found"


def path_cells(p: Mapping[str, Any]) -> list[str]:
    """A replication path of the report as shown, one cell per `PATH_COLUMNS`."""
    ports = p.get("ports")
    provisioned = p.get("provisioned_gbps")
    return [
        str(p.get("pair")),
        str(p.get("kind")) + (f" ({ports['ports']} x {ports['port_gbps']} Gbps)" if ports else ""),
        ", ".join(p.get("flows") or ()) or "control traffic",
        _shown(p, "required_gbps", fmt_gbps),
        _shown(p, "needed_gbps", fmt_gbps),
        fmt_gbps(provisioned) if provisioned is not None else NO_LIMIT,
        "yes" if p.get("ok") else "NO",
    ]


def _rows_workloads(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    return list(WORKLOAD_COLUMNS), [workload_cells(w) for w in report["workloads"]]


def _rows_paths(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    return list(PATH_COLUMNS), [path_cells(p) for p in report["paths"]]


def _rows_cost(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["site", "DR posture / month", "primary capacity / month"]
    rows = [
        [site, fmt_usd(v["dr"]), fmt_usd(v["primary"])]
        for site, v in report["cost"]["by_site"].items()
    ]
    c = report["cost"]
    rows.append(["total", fmt_usd(c["monthly_usd"]), fmt_usd(c["primary_monthly_usd"])])
    return head, rows


def _rows_alternatives(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["every DR pool as", "GPU + control plane / month", "meets every RTO"]
    rows = [
        [k, fmt_usd(v["monthly_usd"]), "yes" if v["meets_rto"] else "no"]
        for k, v in report["cost"]["alternatives"].items()
    ]
    chosen = ", ".join(f"{p['name']}: {p['pattern']}" for p in report["pools"])
    gpu = sum(
        x["monthly_usd"]
        for x in report["cost"]["lines"]
        if x["dr"] and x["category"] in ("gpu", "control-plane")
    )
    rows.append(
        [
            f"chosen ({chosen})",
            fmt_usd(gpu),
            "yes" if all(w["meets"] for w in report["workloads"] if w["kind"] != "data") else "no",
        ]
    )
    return head, rows


IRREVERSIBLE_TITLE = "Irreversible settings (what `pulumi up` cannot undo)"


def _rows_irreversible(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["stack", "setting", "where", "how long", "in a trial"]
    rows = [
        [x["stack"], x["what"], x["where"], x["lasts"], x["trial"]]
        for x in report.get("irreversible", ())
    ]
    return head, rows


def custom_resources(stack: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A stack's custom resources: what the clouds hold (components only group them)."""
    return [r for r in stack.get("resources", ()) if r.get("custom", True)]


def _rows_resources(stack: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["type", "name", "key settings"]
    rows = [
        [
            short_type(r["type"]),
            r["name"] + (" (protected)" if r.get("protect") else ""),
            key_settings(r["type"], r["inputs"]),
        ]
        for r in custom_resources(stack)
    ]
    return head, rows


def md_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A markdown table's lines, the cells as given: escaping them is the caller's business."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    return "\n".join(md_table(head, ([c.replace("|", "\\|") for c in row] for row in rows)))


def _stack_title(s: Mapping[str, Any]) -> str:
    count = len(custom_resources(s))
    return f"{s['name']} ({s['cloud']} {s['region']}, {s['role']}): {count} resources"


def _verdict(report: Mapping[str, Any]) -> str:
    failing = [w["name"] for w in report["workloads"] if not w["meets"]]
    verdict = (
        "Every recovery target is met."
        if not failing
        else f"NOT MET: {', '.join(failing)} (see the notes)"
    )
    conditional = [
        w["name"] for w in report["workloads"] if w["meets"] and not w.get("guaranteed", True)
    ]
    if conditional:
        verdict += (
            f" Not guaranteed: {', '.join(conditional)} met only if on-demand GPU capacity is "
            "found at failover (the notes price what makes it certain)."
        )
    if report.get("policy_ok") is False:
        verdict += " The policy pack refuses the deployment (mandatory violations above)."
    elif report.get("policy_ok"):
        verdict += " The policy pack refuses nothing."
    elif report.get("policy_ok") is None:
        verdict += " The policy pack was not run."
    return verdict


def _rows_policy(stack: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    rows = [
        [v["level"], v["policy"], v["urn"].rsplit("::", 1)[-1], v["message"]]
        for v in stack.get("policy", {}).get("violations", ())
    ]
    return ["level", "policy", "resource", "message"], rows


def _notes(report: Mapping[str, Any]) -> list[str]:
    out = []
    for w in report["workloads"]:
        for n in w["notes"]:
            out.append(f"{w['name']} ({w['pair']}): {n}")
    for item in report["cost"]["unpriced"]:
        out.append(f"not in the cost totals, no price: {item}")
    return out


def to_markdown(report: Mapping[str, Any], resources: bool = True) -> str:
    parts = [f"# gpudr plan: {report['plan']['name']}", "", _verdict(report), ""]
    parts += ["## Recovery targets", "", _md_table(*_rows_workloads(report)), ""]
    parts += ["## Replication paths", "", _md_table(*_rows_paths(report)), ""]
    parts += ["## Monthly cost (USD, list prices)", "", _md_table(*_rows_cost(report)), ""]
    parts += [_md_table(*_rows_alternatives(report)), ""]
    head, rows = _rows_irreversible(report)
    if rows:
        parts += [f"## {IRREVERSIBLE_TITLE}", "", _md_table(head, rows), ""]
    notes = _notes(report)
    if notes:
        parts += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    for s in report["stacks"]:
        parts += [f"## Stack {_stack_title(s)}", ""]
        if "policy" in s:
            head, rows = _rows_policy(s)
            parts += (
                ["Policy violations:", "", _md_table(head, rows), ""]
                if rows
                else ["Policy pack: no violations.", ""]
            )
        if resources:
            type_counts = Counter(short_type(r["type"]) for r in custom_resources(s))
            parts += [
                "<details><summary>"
                + ", ".join(f"{n} {t}" for t, n in sorted(type_counts.items()))
                + "</summary>",
                "",
                _md_table(*_rows_resources(s)),
                "",
                "</details>",
                "",
            ]
    return "\n".join(parts)


def _console(width: int | None) -> Console:
    """A console that records plain text (no colour codes) for `export_text`."""
    from rich.console import Console

    return Console(width=width or 160, record=True, file=io.StringIO(), force_terminal=False)


def _rich_table(title: str, head: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_lines=False)
    for h in head:
        t.add_column(h, overflow="fold")
    for row in rows:
        t.add_row(*row)
    return t


def render_text(report: Mapping[str, Any], width: int | None = None) -> str:
    """Rich tables rendered to plain text (no colour codes when not on a terminal)."""
    console = _console(width)
    console.print(f"gpudr plan: {report['plan']['name']} ({report['plan']['source']})")
    for s in report["stacks"]:
        console.print(_rich_table(f"Stack {_stack_title(s)}", *_rows_resources(s)))
        if "policy" in s:
            head, rows = _rows_policy(s)
            if rows:
                console.print(_rich_table(f"Policy violations: {s['name']}", head, rows))
            else:
                console.print(f"Policy pack: no violations in {s['name']}.")
    console.print(_rich_table("Recovery targets", *_rows_workloads(report)))
    console.print(
        _rich_table(
            "Replication paths (summed need x headroom vs provisioned)", *_rows_paths(report)
        )
    )
    console.print(
        _rich_table(f"Monthly cost, USD list prices ({PRICES_FILE})", *_rows_cost(report))
    )
    console.print(_rich_table("DR pattern alternatives", *_rows_alternatives(report)))
    head, rows = _rows_irreversible(report)
    if rows:
        console.print(_rich_table(IRREVERSIBLE_TITLE, head, rows))
    for n in _notes(report):
        console.print(f"- {n}")
    console.print(_verdict(report))
    return console.export_text()


# --- portfolio: `gpudr plan A.yaml B.yaml ...` --------------------------------------------------


def build_portfolio(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several plans' reports, in the order the plans were given, with the portfolio verdict:
    `meets` when every plan meets every target; `policy_ok` False when the pack refuses any
    stack of any plan, None when it was not run."""
    verdict = _portfolio_head([(r["meets"], r["policy_ok"]) for r in reports])
    return {**verdict, "plans": [dict(r) for r in reports]}


def _rows_portfolio(portfolio: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["plan", "file", "stacks", "resources", "targets", "policy", "DR posture / month"]
    rows = []
    for r in portfolio["plans"]:
        failing = [w["name"] for w in r["workloads"] if not w["meets"]]
        levels = [
            v["level"] for s in r["stacks"] for v in s.get("policy", {}).get("violations", ())
        ]
        if r["policy_ok"] is None:
            policy = "not run"
        elif not levels:
            policy = "no violations"
        else:
            policy = f"{levels.count('mandatory')} mandatory, {levels.count('advisory')} advisory"
        rows.append(
            [
                r["plan"]["name"],
                r["plan"]["source"],
                str(len(r["stacks"])),
                str(sum(len(custom_resources(s)) for s in r["stacks"])),
                "met" if not failing else f"NOT MET: {', '.join(failing)}",
                policy,
                fmt_usd(r["cost"]["monthly_usd"]),
            ]
        )
    total = sum(r["cost"]["monthly_usd"] for r in portfolio["plans"])
    rows.append(["total", "", "", "", "", "", fmt_usd(total)])
    return head, rows


def _portfolio_verdict(portfolio: Mapping[str, Any]) -> str:
    plans = portfolio["plans"]
    short = [r["plan"]["name"] for r in plans if not r["meets"]]
    refused = [r["plan"]["name"] for r in plans if r["policy_ok"] is False]
    parts = [f"{len(plans)} plans:"]
    parts.append(
        "every recovery target is met." if not short else f"targets NOT MET in {', '.join(short)}."
    )
    found = [
        r["plan"]["name"]
        for r in plans
        if any(w["meets"] and not w.get("guaranteed", True) for w in r["workloads"])
    ]
    if found:
        parts.append(f"Met only if on-demand GPU capacity is found in {', '.join(found)}.")
    if refused:
        parts.append(f"The policy pack refuses {', '.join(refused)}.")
    elif portfolio["policy_ok"]:
        parts.append("The policy pack refuses nothing.")
    else:
        parts.append("The policy pack was not run.")
    return " ".join(parts)


def portfolio_text(portfolio: Mapping[str, Any], width: int | None = None) -> str:
    """Each plan's text report, then the portfolio table and verdict (last, where a terminal
    or a CI log ends)."""
    parts = [render_text(r, width) for r in portfolio["plans"]]
    console = _console(width)
    console.print(_rich_table("Portfolio", *_rows_portfolio(portfolio)))
    console.print(_portfolio_verdict(portfolio))
    return "\n".join(parts) + "\n" + console.export_text()


def portfolio_markdown(portfolio: Mapping[str, Any]) -> str:
    """The portfolio table and verdict first (what a pull request reader needs), then each
    plan's markdown report."""
    parts = ["# gpudr plan: portfolio", "", _portfolio_verdict(portfolio), ""]
    parts += [_md_table(*_rows_portfolio(portfolio)), ""]
    return "\n".join(parts) + "\n" + "\n".join(to_markdown(r) for r in portfolio["plans"])
