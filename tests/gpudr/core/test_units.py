from __future__ import annotations

import math

import pytest

from gpudr.core.units import (
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


@pytest.mark.parametrize("bad", ["4 hours", "4", 4, "h", "-1h", True, None, "4hh"])
def test_parse_duration_refuses(bad: object) -> None:
    with pytest.raises(UnitError, match=r"is not a duration; use e\.g\. 45m"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("150GB", 150e9),
        ("2TB", 2e12),
        ("512GiB", 512 * 2**30),
        ("1.5tb", 1.5e12),
        ("100 TB", 100e12),
    ],
)
def test_parse_size(text: str, size: float) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("bad", ["2 terabytes", 2000, "TB", "2XB"])
def test_parse_size_refuses(bad: object) -> None:
    with pytest.raises(UnitError, match="is not a size"):
        parse_size(bad)


def test_rates_and_transfer() -> None:
    assert parse_rate_gbps("500Mbps") == 0.5
    assert parse_rate_gbps(5) == 5.0
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
        (math.inf, "inf"),
    ],
)
def test_fmt_duration(seconds: float | None, text: str) -> None:
    assert fmt_duration(seconds) == text


def test_fmt_gbps() -> None:
    assert fmt_gbps(0.79) == "790 Mbps"
    assert fmt_gbps(5) == "5 Gbps"
