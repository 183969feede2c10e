"""Durations, sizes and rates: parsing from the plan spec and formatting for people.

Sizes are decimal (1 TB = 10**12 bytes), as cloud vendors bill and quote them; binary units
(GiB, TiB) are accepted too. Rates are bits per second (1 Gbps = 10**9 bit/s), as links are sold.
"""

from __future__ import annotations

import math
import re

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")

_SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
    "PIB": 2**50,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]i?B|B)\s*$", re.IGNORECASE)

_RATE_UNITS = {"MBPS": 10**6, "GBPS": 10**9}
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(Mbps|Gbps)\s*$", re.IGNORECASE)


class UnitError(ValueError):
    """A value that is not a duration, size or rate; the message says what is allowed."""


def _show(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def parse_duration(value: object) -> float:
    """Seconds from `45m`, `4h`, `1h30m`, `7d`, or `0`. Bare numbers other than 0 are refused:
    `4` could mean hours or minutes, and a DR target must not be ambiguous."""
    if isinstance(value, bool):
        raise UnitError(f"{_show(value)} is not a duration; use e.g. 45m, 4h, 7d or 0")
    if isinstance(value, int | float) and value == 0:
        return 0.0
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "0":
            return 0.0
        single = _DURATION_RE.match(text)
        if single:
            return float(single.group(1)) * _DURATION_UNITS[single.group(2)]
        compact = text.replace(" ", "")
        parts = _DURATION_PART_RE.findall(compact)
        if parts and "".join(n + u for n, u in parts) == compact:
            return float(sum(float(n) * _DURATION_UNITS[u] for n, u in parts))
    raise UnitError(f"{_show(value)} is not a duration; use e.g. 45m, 4h, 1h30m, 7d or 0")


def parse_size(value: object) -> float:
    """Bytes from `150GB`, `2TB`, `512GiB`."""
    if isinstance(value, str):
        match = _SIZE_RE.match(value)
        if match:
            return float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]
    raise UnitError(f"{_show(value)} is not a size; use e.g. 150GB, 2TB or 512GiB")


def parse_rate_gbps(value: object) -> float:
    """Gbps from `10Gbps`, `500Mbps`, or a plain number of Gbps."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str):
        match = _RATE_RE.match(value)
        if match:
            return float(match.group(1)) * _RATE_UNITS[match.group(2).upper()] / 1e9
    raise UnitError(f"{_show(value)} is not a bandwidth; use e.g. 10Gbps or 500Mbps")


def gbps_to_bytes_per_s(gbps: float) -> float:
    return gbps * 1e9 / 8


def bytes_per_s_to_gbps(bytes_per_s: float) -> float:
    return bytes_per_s * 8 / 1e9


def transfer_seconds(size_bytes: float, gbps: float) -> float:
    """Time to move `size_bytes` at `gbps`; infinite when there is no capacity."""
    if size_bytes <= 0:
        return 0.0
    if gbps <= 0:
        return math.inf
    return size_bytes / gbps_to_bytes_per_s(gbps)


def fmt_duration(seconds: float | None) -> str:
    """`1h30m`, `45m`, `90s`, `0`; `-` for none, `inf` for unbounded."""
    if seconds is None:
        return "-"
    if math.isinf(seconds):
        return "inf"
    total = round(seconds)
    if total == 0:
        return "0"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if days:
        parts.append(f"{days}d")
    if hours:
        parts.append(f"{hours}h")
    if minutes:
        parts.append(f"{minutes}m")
    if secs and not days and not hours:
        parts.append(f"{secs}s")
    return "".join(parts) or "0"


def fmt_size(size_bytes: float) -> str:
    for unit, factor in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if size_bytes >= factor:
            return f"{size_bytes / factor:.3g}{unit}"
    return f"{size_bytes:.0f}B"


def fmt_gbps(gbps: float | None) -> str:
    if gbps is None:
        return "-"
    if math.isinf(gbps):
        return "inf"
    if gbps < 1:
        return f"{gbps * 1000:.0f} Mbps"
    return f"{gbps:.3g} Gbps"


def fmt_usd(amount: float) -> str:
    return f"${amount:,.0f}"
