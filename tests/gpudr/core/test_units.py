from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudr.core.units import (
    MAX_DURATION_S,
    MAX_SIZE_B,
    UnitError,
    fmt_duration,
    fmt_gbps,
    parse_duration,
    parse_rate_gbps,
    parse_size,
    transfer_seconds,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("45m", 2700),
        ("4h", 14400),
        ("1h30m", 5400),
        ("7d", 604800),
        ("0", 0),
        (0, 0),
        ("90s", 90),
        ("1.5h", 5400),
    ],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "bad", ["4 hours", "4", 4, "h", "-1h", True, None, "4hh", math.nan, math.inf, -math.inf]
)
def test_parse_duration_refuses(bad: object) -> None:
    with pytest.raises(UnitError, match=r"is not a duration; use e\.g\. 45m"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        # M: minutes or months? Refused rather than read as minutes.
        ("1M", r"is not a duration \(M is ambiguous: write m for minutes, or days"),
        ("1h30M", r"M is ambiguous"),
        ("36501d", r"is too large; durations are at most 100 years"),
        ("9" * 400 + "h", r"is too large"),  # float() of it is inf
    ],
)
def test_parse_duration_refuses_ambiguous_or_huge(bad: str, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        parse_duration(bad)


def test_upper_case_durations_other_than_m_read_as_lower_case() -> None:
    assert parse_duration("4H") == parse_duration("4h") == 14400
    assert parse_duration("36500d") == 100 * 365 * 86400


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("150GB", 150e9),
        ("2TB", 2e12),
        ("512GiB", 512 * 2**30),
        ("1.5TB", 1.5e12),
        ("100 TB", 100e12),
        ("20kB", 20e3),
        ("20KB", 20e3),
        ("1000000PB", 1e21),  # a zettabyte: the largest size accepted
    ],
)
def test_parse_size(text: str, size: float) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("2 terabytes", "is not a size; use e.g. 150GB"),
        (2000, "is not a size; use e.g. 150GB"),
        ("TB", "is not a size; use e.g. 150GB"),
        ("2XB", r"is not a size; use e\.g\. 150GB"),
        # Bits, not bytes: before, matched case-insensitively as 2 TB (8x too much).
        ("2Tb", r"\(a lower-case b is a bit: sizes are in bytes, B\)"),
        ("1.5tb", r"\(a lower-case b is a bit"),
        ("150gb", r"\(a lower-case b is a bit"),
        ("5Gb", r"\(a lower-case b is a bit"),
        ("2tB", r"units are matched exactly"),
        ("512gib", r"a lower-case b is a bit"),
        ("1000001PB", r"is too large; sizes are at most 1000000PB"),
        ("9" * 400 + "GB", r"is too large"),  # float() of it is inf
        (math.inf, "is not a size"),
        (math.nan, "is not a size"),
    ],
)
def test_parse_size_refuses(bad: object, message: str) -> None:
    with pytest.raises(UnitError, match=message) as caught:
        parse_size(bad)
    assert "B, kB, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB" in str(caught.value) or (
        "too large" in str(caught.value)
    )


@pytest.mark.parametrize(
    ("text", "gbps"),
    [
        ("500Mbps", 0.5),
        ("10Gbps", 10.0),
        ("10 Gbps", 10.0),
        ("1Tbps", 1000.0),
        ("10Gbit/s", 10.0),
        # Bytes per second, converted: before, 5GBps read as 5 Gbps (an 8x error).
        ("5GBps", 40.0),
        ("5GB/s", 40.0),
        ("500MB/s", 4.0),
        ("500MBps", 4.0),
        (5, 5.0),
        (2.5, 2.5),
        (0, 0.0),
    ],
)
def test_parse_rate(text: object, gbps: float) -> None:
    assert parse_rate_gbps(text) == pytest.approx(gbps)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("5gbps", r"units are matched exactly as written: B is a byte, b a bit"),
        ("5gBps", r"units are matched exactly"),
        ("5GBPS", r"units are matched exactly"),
        ("5Gb", r"is not a bandwidth; use e\.g\. 10Gbps"),
        ("fast", r"is not a bandwidth; use e\.g\. 10Gbps"),
        (math.inf, r"use a finite number of Gbps"),
        (-math.inf, r"use a finite number of Gbps"),
        (math.nan, r"use a finite number of Gbps"),
        (-1, r"use a finite number of Gbps"),
        (True, r"is not a bandwidth"),
        ("9" * 400 + "Gbps", r"is too large"),
    ],
)
def test_parse_rate_refuses(bad: object, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        parse_rate_gbps(bad)


def test_transfer() -> None:
    # 1 TB at 8 Gbps = 1e12 * 8 / 8e9 = 1000 s
    assert transfer_seconds(1e12, 8) == pytest.approx(1000)
    assert math.isinf(transfer_seconds(1.0, 0))
    assert transfer_seconds(0, 0) == 0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (0, "0"),
        (90, "1m30s"),
        (3600, "1h"),
        (6933.3, "1h55m"),
        (86400 * 1.5, "1d12h"),
        (math.inf, "unbounded"),
    ],
)
def test_fmt_duration(seconds: float | None, text: str) -> None:
    assert fmt_duration(seconds) == text


def test_fmt_gbps() -> None:
    assert fmt_gbps(0.79) == "790 Mbps"
    assert fmt_gbps(5) == "5 Gbps"
    assert fmt_gbps(2777.78) == "2,778 Gbps"  # before: 2.78e+03 Gbps
    assert fmt_gbps(math.inf) == "unbounded"


SPELLINGS = st.text(alphabet="0123456789. kKMGTPiBbps/ite", max_size=12)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        SPELLINGS,
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(),
        st.booleans(),
        st.none(),
        st.text(max_size=30),
    )
)
def test_parsers_return_a_finite_number_or_refuse(value: object) -> None:
    """Any value: a finite, non-negative number within the bounds, or a UnitError."""
    for parse in (parse_size, parse_rate_gbps, parse_duration):
        try:
            number = parse(value)
        except UnitError as exc:
            assert "\n" not in str(exc)
            continue
        assert math.isfinite(number) and number >= 0, (parse.__name__, value, number)
        if parse is parse_size:
            assert number <= MAX_SIZE_B
        if parse is parse_duration:
            assert number <= MAX_DURATION_S


@settings(max_examples=300, deadline=None)
@given(
    st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False),
    st.sampled_from(["KB", "MB", "GB", "TB", "PB"]),
)
def test_sizes_read_bytes_and_never_bits(number: object, unit: str) -> None:
    text = f"{number}{unit}"
    assert parse_size(text) == pytest.approx(
        float(str(number)) * 1000 ** ("KMGTP".index(unit[0]) + 1)
    )
    with pytest.raises(UnitError, match="a lower-case b is a bit"):
        parse_size(text[:-1] + "b")
