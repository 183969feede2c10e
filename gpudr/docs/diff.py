"""What a change to a plan (or to the code behind it) does: two plan reports compared, as markdown
for a pull-request comment.

Pure functions over the JSON documents `gpudr plan --format json` writes (see `gpudr.docs.report`):
resources matched by URN per stack, policy verdicts by policy and URN, workloads by name and pair,
replication paths by key, cost lines by site, category and item. The markdown always fits
`limit` characters (GitHub refuses comments over 65,536): when the full detail does not fit,
lists get shorter ("... and N more"), then resources become counts per type per stack, then only
the summary is left. Values of inputs that look secret, or that Pulumi marked secret, are never
printed.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpudr.core.units import fmt_usd
from gpudr.docs.report import (
    PATH_COLUMNS,
    WORKLOAD_COLUMNS,
    custom_resources,
    key_settings,
    md_table,
    path_cells,
    short_type,
    workload_cells,
)

COMMENT_LIMIT = 65_536  # GitHub's maximum comment body, in characters
DEFAULT_LIMIT = 60_000  # room left for what CI wraps around it
MARKER = "<!-- gpudr-diff: {name} -->"
# How the SDK marks a secret in serialized properties (pulumi.runtime.rpc._special_secret_sig);
# the offline run keeps the mark in the recorded inputs, with the plain value beside it.
SECRET_SIG = "4dabf18193072939515e22adb298388d"
MASK = "(secret)"
ABSENT = "(none)"
VALUE_WIDTH = 60
# A path segment that names a secret: the value is masked whatever it is (booleans and numbers
# excepted: `allowSharedKeyAccess: false` is a setting, not a secret).
_SECRET_KEY = re.compile(
    r"secret|password|passwd|passphrase|psk|privatekey|sharedkey|presharedkey|apikey|"
    r"accesskey|authkey|connectionstring|accesstoken|authtoken|sastoken|sasurl|bearer|"
    r"certificatepem|clientcertificate|hmac"
)
_NOT_ALNUM = re.compile(r"[^a-z0-9]")
_PEM_PRIVATE = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")

ADDED, CHANGED, REMOVED, MOVED = "+", "~", "-", "moved"
# Most consequential first: what gets deleted, then replaced, then updated, then created.
_KIND_ORDER = {REMOVED: 0, MOVED: 1, CHANGED: 2, ADDED: 3}
_KIND_TEXT = {ADDED: "added", CHANGED: "changed", REMOVED: "removed", MOVED: "URN changed"}


# --- values -----------------------------------------------------------------------------------


class _Secret:
    """A leaf Pulumi marked secret; equal to another when the hidden values are equal."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Secret) and self.value == other.value

    def __hash__(self) -> int:
        return hash(json.dumps(self.value, sort_keys=True, default=str))


@functools.lru_cache(maxsize=8192)
def _secret_segment(segment: str) -> bool:
    return _SECRET_KEY.search(_NOT_ALNUM.sub("", segment.lower())) is not None


def is_secret_key(path: str) -> bool:
    """Whether a dotted input path names a secret (`sharedKey`, `tunnels.0.psk`, ...)."""
    return any(_secret_segment(segment) for segment in path.split("."))


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a JSON value by dotted path (`rules.0.destination.bucket`). A string holding a
    JSON object or array (an IAM or bucket policy) is flattened too; an empty object or array is
    a leaf; a secret Pulumi marked stays one leaf."""
    out: dict[str, Any] = {}

    def walk(v: Any, path: str) -> None:
        if isinstance(v, dict):
            if SECRET_SIG in v:
                out[path] = _Secret(v.get("value"))
                return
            if not v:
                out[path] = {}
            for k, x in v.items():
                walk(x, f"{path}.{k}" if path else str(k))
        elif isinstance(v, list):
            if not v:
                out[path] = []
            for i, x in enumerate(v):
                walk(x, f"{path}.{i}" if path else str(i))
        elif isinstance(v, str) and v[:1] in ("{", "[") and len(v) > 1:
            try:
                parsed = json.loads(v)
            except ValueError:
                out[path] = v
                return
            if isinstance(parsed, dict | list) and parsed:
                walk(parsed, path)
            else:
                out[path] = v
        else:
            out[path] = v

    walk(value, prefix)
    return out


def shorten(text: str, width: int = VALUE_WIDTH) -> str:
    """`text` in at most `width` characters, the middle elided (ARNs and URNs differ at both
    ends)."""
    if len(text) <= width:
        return text
    keep = width - 3
    return text[: (keep + 1) // 2] + "..." + text[len(text) - keep // 2 :]


def show_value(path: str, value: Any, width: int = VALUE_WIDTH) -> str:
    """A leaf as it is shown: masked if secret, JSON-like, shortened."""
    if isinstance(value, _Secret):
        return MASK
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if is_secret_key(path):
        return MASK
    if isinstance(value, str):
        if _PEM_PRIVATE.search(value):
            return MASK
        return shorten(value, width)
    return shorten(json.dumps(value, sort_keys=True, default=str), width)


_MISSING: Any = object()  # a path on one side only


@dataclass(frozen=True)
class Change:
    """One changed setting: its dotted path and its raw values (`_MISSING` on the side that
    lacks it); `old` and `new` are them as shown, masked and shortened, made only when shown."""

    path: str
    before: Any
    after: Any

    @property
    def old(self) -> str:
        return ABSENT if self.before is _MISSING else show_value(self.path, self.before)

    @property
    def new(self) -> str:
        text = ABSENT if self.after is _MISSING else show_value(self.path, self.after)
        return f"{MASK}, changed" if text == MASK and self.old == MASK else text


def setting_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """The leaves that differ between two input documents, by path."""
    if old == new:
        return []
    a, b = flatten(dict(old)), flatten(dict(new))
    out = []
    for path in sorted(a.keys() | b.keys()):
        va, vb = a.get(path, _MISSING), b.get(path, _MISSING)
        if va == vb and type(va) is type(vb):
            continue
        out.append(Change(path, va, vb))
    return out


# --- resources --------------------------------------------------------------------------------


@dataclass
class ResourceDiff:
    kind: str  # ADDED, CHANGED, REMOVED or MOVED
    type: str
    name: str
    urn: str
    changes: list[Change] = field(default_factory=list)
    settings: str = ""  # the key settings of what is created or deleted (gpudr.docs.report)
    note: str = ""  # what the reviewer must know beyond the settings (protected, retained, ...)


@dataclass
class StackDiff:
    name: str
    title: str  # cloud, region, role; "a -> b" where they changed
    status: str  # "new", "removed" or ""
    resources: list[ResourceDiff]
    violations: list[tuple[str, Mapping[str, Any]]]  # ("new"|"resolved"|"level changed", v)

    def count(self, kind: str) -> int:
        return sum(1 for r in self.resources if r.kind == kind)


def _custom(stack: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    if stack is None:
        return {}
    return {r["urn"]: r for r in custom_resources(stack)}


def _options(r: Mapping[str, Any]) -> dict[str, Any]:
    """Resource options that change what `pulumi up` may do to it."""
    return {
        "(protect)": bool(r.get("protect")),
        "(retainOnDelete)": bool(r.get("retain_on_delete")),
    }


def _key_settings(r: Mapping[str, Any]) -> str:
    return key_settings(str(r["type"]), dict(r.get("inputs") or {}))


def _removal_note(r: Mapping[str, Any]) -> str:
    notes = []
    if r.get("protect"):
        notes.append("protected: `pulumi up` refuses to delete it until it is unprotected")
    if r.get("retain_on_delete"):
        notes.append("retainOnDelete: it stays in the cloud, out of the stack")
    return "; ".join(notes)


def _resource_diffs(
    base: Mapping[str, Any] | None, head: Mapping[str, Any] | None
) -> list[ResourceDiff]:
    old, new = _custom(base), _custom(head)
    out: list[ResourceDiff] = []
    for urn in old.keys() & new.keys():
        a, b = old[urn], new[urn]
        changes = setting_changes(a.get("inputs") or {}, b.get("inputs") or {})
        changes += setting_changes(_options(a), _options(b))
        if changes:
            out.append(ResourceDiff(CHANGED, b["type"], b["name"], urn, changes))
    removed = {u: old[u] for u in old.keys() - new.keys()}
    added = {u: new[u] for u in new.keys() - old.keys()}
    # The same type and name under another URN (a new parent or component): Pulumi deletes and
    # recreates it unless the program gives it an alias.
    by_key_removed = Counter((r["type"], r["name"]) for r in removed.values())
    by_key_added = Counter((r["type"], r["name"]) for r in added.values())
    moved = {k for k, n in by_key_removed.items() if n == 1 and by_key_added.get(k) == 1}
    moved_from = {
        (r["type"], r["name"]): r for r in removed.values() if (r["type"], r["name"]) in moved
    }
    for urn, r in added.items():
        key = (r["type"], r["name"])
        if key in moved:
            a = moved_from[key]
            changes = [Change("(urn)", a["urn"], urn)]
            changes += setting_changes(a.get("inputs") or {}, r.get("inputs") or {})
            changes += setting_changes(_options(a), _options(r))
            note = "replaced (deleted, then created) unless aliased"
            if a.get("protect"):
                note += "; protected: `pulumi up` refuses until it is aliased or unprotected"
            out.append(ResourceDiff(MOVED, r["type"], r["name"], urn, changes, note))
        else:
            out.append(ResourceDiff(ADDED, r["type"], r["name"], urn, settings=_key_settings(r)))
    for urn, r in removed.items():
        if (r["type"], r["name"]) not in moved:
            out.append(
                ResourceDiff(
                    REMOVED,
                    r["type"],
                    r["name"],
                    urn,
                    settings=_key_settings(r),
                    note=_removal_note(r),
                )
            )
    out.sort(key=lambda d: (_KIND_ORDER[d.kind], short_type(d.type), d.name, d.urn))
    return out


def _violations(stack: Mapping[str, Any] | None) -> dict[tuple[str, str], Mapping[str, Any]]:
    if stack is None:
        return {}
    found = stack.get("policy", {}).get("violations", ())
    return {(v["policy"], v["urn"]): v for v in found}


def _violation_diffs(
    base: Mapping[str, Any] | None, head: Mapping[str, Any] | None
) -> list[tuple[str, Mapping[str, Any]]]:
    old, new = _violations(base), _violations(head)
    out: list[tuple[str, Mapping[str, Any]]] = []
    for key in sorted(new.keys() - old.keys()):
        out.append(("new", new[key]))
    for key in sorted(old.keys() & new.keys()):
        if old[key].get("level") != new[key].get("level"):
            v = dict(new[key])
            v["level"] = f"{old[key].get('level')} -> {new[key].get('level')}"
            out.append(("level changed", v))
    for key in sorted(old.keys() - new.keys()):
        out.append(("resolved", old[key]))
    # Mandatory first: those block the deployment.
    out.sort(key=lambda x: ("mandatory" not in str(x[1].get("level")), x[0] != "new"))
    return out


def _stack_title(base: Mapping[str, Any] | None, head: Mapping[str, Any] | None) -> str:
    def field_(key: str) -> str:
        a = None if base is None else base.get(key)
        b = None if head is None else head.get(key)
        if base is None or head is None or a == b:
            return str(b if head is not None else a)
        return f"{a} -> {b}"

    return f"{field_('cloud')} {field_('region')}, {field_('role')}"


def diff_stacks(base: Mapping[str, Any] | None, head: Mapping[str, Any]) -> list[StackDiff]:
    """Every stack of either report, head's order first, with its resource and policy changes."""
    old = {s["name"]: s for s in (base or {}).get("stacks", ())}
    new = {s["name"]: s for s in head.get("stacks", ())}
    names = list(new) + [n for n in old if n not in new]
    out = []
    for name in names:
        a, b = old.get(name), new.get(name)
        status = "new" if a is None and base is not None else "removed" if b is None else ""
        out.append(
            StackDiff(
                name, _stack_title(a, b), status, _resource_diffs(a, b), _violation_diffs(a, b)
            )
        )
    return out


# --- workloads, paths, cost -------------------------------------------------------------------


def _yes(value: Any) -> str:
    return "-" if value is None else "yes" if value else "NO"


# A workload or path row as the plan report shows it (gpudr.docs.report): the first cells name it,
# the rest are compared.
_LABEL_CELLS = 2


@dataclass
class RowDiff:
    """A workload or path whose shown values changed: (label cells, [(old, new)] per column)."""

    label: list[str]
    cells: list[tuple[str, str]]
    status: str  # "new", "removed" or ""
    compliance: bool  # whether meets / ok changed (or is false on a new row)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Rows:
    """A table of the plan report compared row by row (workloads, replication paths), and how
    the diff shows its changes."""

    report_key: str  # the report's list of rows
    columns: Sequence[str]  # as the plan report shows them: the first _LABEL_CELLS name a row
    cells: Callable[[Mapping[str, Any]], list[str]]  # a row's cells, one per column
    key: Callable[[Mapping[str, Any]], tuple[str, ...]]  # matches a row in base and head
    verdict: str  # the compliance column
    title: str  # the diff's heading for the changed rows
    noun: str  # what "... and N more" counts


_WORKLOADS = _Rows(
    "workloads",
    WORKLOAD_COLUMNS,
    workload_cells,
    lambda w: (str(w.get("name")), str(w.get("pair"))),
    "meets",
    "#### Recovery targets and sizing",
    "changed workload(s)",
)
_PATHS = _Rows(
    "paths",
    PATH_COLUMNS,
    path_cells,
    lambda p: (str(p.get("pair")), str(p.get("kind"))),
    "ok",
    "#### Replication paths",
    "changed path(s)",
)


def _row_diffs(
    rows: _Rows, base: Mapping[str, Any] | None, head: Mapping[str, Any]
) -> list[RowDiff]:
    """Rows matched by `rows.key` whose cells (as the plan report shows them) differ,
    compliance changes first."""
    v = list(rows.columns).index(rows.verdict) - _LABEL_CELLS
    a = {rows.key(x): x for x in (base or {}).get(rows.report_key, ())}
    b = {rows.key(x): x for x in head.get(rows.report_key, ())}
    out = []
    for k in list(b) + [k for k in a if k not in b]:
        x, y = a.get(k), b.get(k)
        shown_x = None if x is None else rows.cells(x)
        shown_y = None if y is None else rows.cells(y)
        if shown_x == shown_y:
            continue
        status = "new" if shown_x is None else "removed" if shown_y is None else ""
        before = shown_x or [""] * len(rows.columns)
        after = shown_y or [""] * len(rows.columns)
        # A label cell that changed (a path's ports) shows both.
        label = [
            q if not p else p if not q or p == q else f"{p} -> {q}"
            for p, q in zip(before[:_LABEL_CELLS], after[:_LABEL_CELLS], strict=True)
        ]
        pairs = list(zip(before[_LABEL_CELLS:], after[_LABEL_CELLS:], strict=True))
        compliance = pairs[v][0] != pairs[v][1] if status == "" else "NO" in pairs[v]
        notes = list(y.get("notes") or ()) if y is not None and y.get("meets") is False else []
        out.append(RowDiff(label, pairs, status, compliance, notes))
    out.sort(key=lambda r: not r.compliance)
    return out


def diff_workloads(base: Mapping[str, Any] | None, head: Mapping[str, Any]) -> list[RowDiff]:
    """Workloads whose compliance or sizing changed, matched by name and pair; compliance
    changes first."""
    return _row_diffs(_WORKLOADS, base, head)


def diff_paths(base: Mapping[str, Any] | None, head: Mapping[str, Any]) -> list[RowDiff]:
    """Replication paths whose need, capacity or verdict changed, matched by pair and kind;
    compliance changes first."""
    return _row_diffs(_PATHS, base, head)


def _usd(amount: float) -> str:
    return fmt_usd(amount) if abs(amount) >= 10 else f"${amount:,.2f}"


def signed_usd(delta: float) -> str:
    """`+$18,322`, `-$5.40`, `$0`."""
    if round(delta, 2) == 0:
        return "$0"
    return ("+" if delta > 0 else "-") + _usd(abs(delta))


def percent(base: float | None, head: float) -> str:
    """The change from `base` to `head` in percent, signed; `new` when there was nothing."""
    if not base:
        return "new" if head else "0%"
    pct = (head - base) / abs(base) * 100
    if round(pct, 1) == 0:
        return "0%" if head == base else ("+" if pct > 0 else "-") + "<0.1%"
    return f"{pct:+.1f}%"


def _cost_key(line: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(line.get("site")),
        str(line.get("category")),
        str(line.get("item")),
        "DR" if line.get("dr") else "primary",
    )


def _sum_by(lines: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str, str], float]:
    out: dict[tuple[str, str, str, str], float] = {}
    for line in lines:
        key = _cost_key(line)
        out[key] = out.get(key, 0.0) + float(line.get("monthly_usd") or 0.0)
    return out


@dataclass
class CostDiff:
    dr: tuple[float | None, float]  # (base, head) DR posture per month
    total: tuple[float | None, float]
    categories: list[tuple[str, float | None, float]]  # changed categories: (name, base, head)
    lines: list[tuple[tuple[str, str, str, str], float | None, float | None]]  # largest first

    @property
    def dr_delta(self) -> float:
        return self.dr[1] - (self.dr[0] or 0.0)


def diff_cost(base: Mapping[str, Any] | None, head: Mapping[str, Any]) -> CostDiff:
    """Monthly cost, base and head: DR posture and total, categories and lines that changed."""
    bc = None if base is None else base.get("cost", {})
    hc = head.get("cost", {})
    cats_a = {} if bc is None else dict(bc.get("by_category", {}))
    cats_b = dict(hc.get("by_category", {}))
    categories = [
        (k, cats_a.get(k) if bc is not None else None, float(cats_b.get(k, 0.0)))
        for k in list(cats_b) + [k for k in cats_a if k not in cats_b]
        if round(float(cats_a.get(k, 0.0)) - float(cats_b.get(k, 0.0)), 2) != 0
    ]
    la = _sum_by(() if bc is None else bc.get("lines", ()))
    lb = _sum_by(hc.get("lines", ()))
    lines = [
        (k, la.get(k), lb.get(k))
        for k in list(lb) + [k for k in la if k not in lb]
        if round((lb.get(k) or 0.0) - (la.get(k) or 0.0), 2) != 0
    ]
    lines.sort(key=lambda x: -abs((x[2] or 0.0) - (x[1] or 0.0)))
    return CostDiff(
        (
            None if bc is None else float(bc.get("monthly_usd", 0.0)),
            float(hc.get("monthly_usd", 0.0)),
        ),
        (
            None if bc is None else float(bc.get("total_monthly_usd", 0.0)),
            float(hc.get("total_monthly_usd", 0.0)),
        ),
        categories,
        lines,
    )


# --- markdown ---------------------------------------------------------------------------------


def cell(text: str) -> str:
    """Text safe in a table cell: no pipe, newline or HTML tag can break the row."""
    return (
        text.replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace("\r", " ")
        .replace("\n", " ")
    )


def code(text: str) -> str:
    """`text` as inline code in a table cell (pipes escaped, as GitHub tables require)."""
    text = text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _arrow(old: str, new: str) -> str:
    return cell(new) if old == new else f"{cell(old)} -> **{cell(new)}**"


def _more(shown: int, total: int, what: str) -> list[str]:
    return [] if shown >= total else ["", f"... and {total - shown} more {what}"]


@dataclass(frozen=True)
class _Level:
    """How much detail one rendering shows; None: everything."""

    items: int | None  # rows per list
    settings: int | None  # changed settings per resource
    resources: bool = True  # rows per resource, or counts per type per stack
    sections: bool = True  # anything below the summary


_LEVELS = (
    _Level(None, 20),
    _Level(200, 10),
    _Level(60, 6),
    _Level(25, 4),
    _Level(10, 2),
    _Level(25, None, resources=False),
    _Level(8, None, resources=False),
    _Level(3, None, resources=False),
    _Level(0, None, resources=False, sections=False),
)


def _take(items: Sequence[Any], n: int | None) -> Sequence[Any]:
    return items if n is None else items[:n]


@dataclass
class _Diff:
    base: Mapping[str, Any] | None
    head: Mapping[str, Any]
    stacks: list[StackDiff]
    workloads: list[RowDiff]
    paths: list[RowDiff]
    cost: CostDiff


@dataclass(frozen=True)
class _Heading:
    """What the comment says above the diff: the two sides, the plan's path, the notes."""

    base_label: str
    head_label: str
    plan_path: str | None
    notes: Sequence[str]


def _title(d: _Diff, heading: _Heading) -> list[str]:
    """The marker CI finds the comment by, the plan, and the two sides."""
    name = str(d.head.get("plan", {}).get("name", "?"))
    marker = MARKER.format(name=re.sub(r"[<>]|--", "", shorten(name, 100)))
    where = f" ({code(shorten(heading.plan_path, 120))})" if heading.plan_path else ""
    base, head = cell(shorten(heading.base_label, 120)), cell(shorten(heading.head_label, 120))
    return [
        marker,
        f"### gpudr diff: {code(shorten(name, 100))}{where}",
        "",
        f"base {base} -> head {head}"
        + (" (the plan is new: everything is added)" if d.base is None else ""),
        "",
    ]


def _summary(d: _Diff, heading: _Heading) -> list[str]:
    """The title and the table of what changed overall: resources, cost, targets, policy."""
    out = _title(d, heading)
    added = sum(s.count(ADDED) for s in d.stacks)
    changed = sum(s.count(CHANGED) for s in d.stacks)
    removed = sum(s.count(REMOVED) for s in d.stacks)
    moved = sum(s.count(MOVED) for s in d.stacks)
    counts = f"+{added} ~{changed} -{removed}" + (f", {moved} URN changed" if moved else "")
    n_base = sum(len(_custom(s)) for s in (d.base or {}).get("stacks", ()))
    n_head = sum(len(_custom(s)) for s in d.head.get("stacks", ()))
    new_v = sum(1 for s in d.stacks for k, _ in s.violations if k == "new")
    resolved_v = sum(1 for s in d.stacks for k, _ in s.violations if k == "resolved")
    c = d.cost

    def money(pair: tuple[float | None, float]) -> list[str]:
        a, b = pair
        return [
            "-" if a is None else _usd(a),
            _usd(b),
            f"**{signed_usd(b - (a or 0.0))}** ({percent(a, b)})",
        ]

    def policy(report: Mapping[str, Any] | None) -> str:
        if report is None:
            return "-"
        ok = report.get("policy_ok")
        return "not run" if ok is None else "refuses nothing" if ok else "**REFUSES**"

    rows = [
        ["resources", str(n_base) if d.base is not None else "-", str(n_head), counts],
        ["DR cost / month", *money(c.dr)],
        ["total cost / month", *money(c.total)],
        [
            "every target met",
            "-" if d.base is None else _yes(d.base.get("meets")),
            _yes(d.head.get("meets")),
            f"{len(d.workloads)} workload(s) changed; "
            f"{sum(1 for w in d.workloads if w.compliance)} verdict change(s)",
        ],
        [
            "policy pack",
            policy(d.base),
            policy(d.head),
            f"{new_v} new, {resolved_v} resolved violation(s)",
        ],
    ]
    out += md_table(["", "base", "head", "change"], rows)
    return out


def _settings_cell(r: ResourceDiff, n: int | None) -> str:
    parts = [f"{code(c.path)}: {code(c.old)} -> {code(c.new)}" for c in _take(r.changes, n)]
    if n is not None and len(r.changes) > n:
        parts.append(f"... and {len(r.changes) - n} more")
    if r.settings:
        parts.append(code(shorten(r.settings, 120)))
    if r.note:
        parts.append(cell(r.note))
    return "<br>".join(parts)


def _stack_section(s: StackDiff, level: _Level) -> list[str]:
    counts = f"+{s.count(ADDED)} ~{s.count(CHANGED)} -{s.count(REMOVED)}"
    if s.count(MOVED):
        counts += f", {s.count(MOVED)} URN changed"
    status = f" ({s.status} stack)" if s.status else ""
    out = [f"#### Stack {code(shorten(s.name, 100))}{status} ({cell(s.title)}): {counts}", ""]
    if s.violations:
        shown = _take(s.violations, level.items)
        out += md_table(
            ["policy verdict", "level", "policy", "resource", "message"],
            [
                [
                    "**new**" if k == "new" else k,
                    cell(str(v.get("level"))),
                    cell(str(v.get("policy"))),
                    code(shorten(str(v.get("urn") or "").rsplit("::", 1)[-1], 80))
                    if v.get("urn")
                    else "(stack)",
                    cell(shorten(str(v.get("message", "")), 300)),
                ]
                for k, v in shown
            ],
        )
        out += _more(len(shown), len(s.violations), "policy verdict change(s)")
        out.append("")
    if not s.resources:
        out += ["No resource changes.", ""]
        return out
    if level.resources:
        shown_r = _take(s.resources, level.items)
        out += md_table(
            ["", "type", "name", "settings: old -> new, or what is added / removed"],
            [
                [
                    r.kind,
                    cell(short_type(r.type)),
                    code(shorten(r.name, 80)),
                    _settings_cell(r, level.settings),
                ]
                for r in shown_r
            ],
        )
        out += _more(len(shown_r), len(s.resources), "resource change(s) in this stack")
    else:
        per_type: dict[str, Counter[str]] = {}
        for r in s.resources:
            per_type.setdefault(short_type(r.type), Counter())[r.kind] += 1
        types = sorted(per_type)
        shown_t = _take(types, level.items)
        out += md_table(
            ["type", "+", "~", "-", "URN changed"],
            [
                [cell(shorten(t, 80))]
                + [str(per_type[t][k]) for k in (ADDED, CHANGED, REMOVED, MOVED)]
                for t in shown_t
            ],
        )
        out += _more(len(shown_t), len(types), "resource type(s)")
    out.append("")
    return out


def _rows_section(rows: _Rows, changed: list[RowDiff], n: int | None) -> list[str]:
    """The changed rows of one table, at most `n`, with why the failing ones are not met."""
    if not changed:
        return []
    shown = _take(changed, n)
    body = []
    for r in shown:
        label = [cell(shorten(x, 60)) for x in r.label]
        if r.status:
            label[0] += f" ({r.status})"
        body.append(label + [_arrow(a, b) if not r.status else cell(a or b) for a, b in r.cells])
    out = [rows.title, "", *md_table(rows.columns, body)]
    out += _more(len(shown), len(changed), rows.noun)
    notes = [f"- {cell(r.label[0])}: {cell(shorten(n_, 300))}" for r in shown for n_ in r.notes]
    if notes:
        out += ["", "Why not met (head):", "", *_take(notes, n)]
    return [*out, ""]


def _cost_section(c: CostDiff, n: int | None) -> list[str]:
    if not c.categories and not c.lines:
        return []
    out = ["#### Monthly cost (USD, list prices)", ""]
    if c.categories:
        shown_c = _take(c.categories, n)
        out += md_table(
            ["DR category", "base", "head", "change"],
            [
                [
                    cell(k),
                    "-" if a is None else _usd(a),
                    _usd(b),
                    f"{signed_usd(b - (a or 0.0))} ({percent(a, b)})",
                ]
                for k, a, b in shown_c
            ],
        )
        out += _more(len(shown_c), len(c.categories), "categor(ies)")
        out.append("")
    if c.lines:
        shown = _take(c.lines, n)
        out += ["Cost lines that changed, largest first:", ""]
        out += md_table(
            ["site", "category", "item", "side", "base", "head", "change"],
            [
                [
                    cell(shorten(k[0], 40)),
                    cell(shorten(k[1], 40)),
                    cell(shorten(k[2], 80)),
                    k[3],
                    "-" if a is None else _usd(a),
                    "-" if b is None else _usd(b),
                    signed_usd((b or 0.0) - (a or 0.0)),
                ]
                for k, a, b in shown
            ],
        )
        out += _more(len(shown), len(c.lines), "changed cost line(s)")
        out.append("")
    return out


def _render(d: _Diff, heading: _Heading, level: _Level, *, summarised: bool) -> str:
    """The comment at one level of detail."""
    out = _summary(d, heading)
    out.append("")
    for note in heading.notes:
        out += [f"> {cell(shorten(note, 300))}", ""]
    if summarised:
        out += [
            "> Summarised to fit a PR comment"
            + (f": at most {level.items} items per list" if level.items is not None else "")
            + ("" if level.resources else ", resources counted per type")
            + ". Run `gpudr diff --limit 0` for every detail.",
            "",
        ]
    if not level.sections:
        return "\n".join(out)
    if not any(s.resources or s.violations for s in d.stacks) and not (
        d.workloads or d.paths or d.cost.categories or d.cost.lines
    ):
        return "\n".join([*out, "No changes: the same resources, verdicts, sizing and cost.", ""])
    out += _rows_section(_WORKLOADS, d.workloads, level.items)
    out += _rows_section(_PATHS, d.paths, level.items)
    out += _cost_section(d.cost, level.items)
    stacks = [s for s in d.stacks if s.resources or s.violations or s.status]
    shown = _take(stacks, None if level.items is None else max(level.items, 1))
    for s in shown:
        out += _stack_section(s, level)
    out += _more(len(shown), len(stacks), "stack(s) with changes")
    return "\n".join(out).rstrip("\n") + "\n"


def diff_reports(
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any],
    *,
    base_label: str,
    head_label: str,
    limit: int = DEFAULT_LIMIT,
    plan_path: str | None = None,
    notes: Sequence[str] = (),
) -> str:
    """Markdown for a PR comment: what changes from the `base` report to the `head` report
    (`base` None: the plan is new). At most `limit` characters (0: no limit), summarised
    progressively when the full detail does not fit; `notes` are shown under the summary."""
    d = _Diff(
        base,
        head,
        diff_stacks(base, head),
        diff_workloads(base, head),
        diff_paths(base, head),
        diff_cost(base, head),
    )
    heading = _Heading(base_label, head_label, plan_path, notes)
    text = ""
    for i, level in enumerate(_LEVELS):
        text = _render(d, heading, level, summarised=i > 0)
        if limit <= 0 or len(text) <= limit:
            return text
    # Only when `limit` is smaller than the summary itself: whole lines, never half a row.
    lines = text.splitlines(keepends=True)
    out = ""
    for line in lines:
        if len(out) + len(line) > limit:
            break
        out += line
    return out


__all__ = [
    "COMMENT_LIMIT",
    "DEFAULT_LIMIT",
    "Change",
    "CostDiff",
    "ResourceDiff",
    "RowDiff",
    "StackDiff",
    "diff_cost",
    "diff_paths",
    "diff_reports",
    "diff_stacks",
    "diff_workloads",
    "flatten",
    "is_secret_key",
    "percent",
    "setting_changes",
    "shorten",
    "show_value",
    "signed_usd",
]
