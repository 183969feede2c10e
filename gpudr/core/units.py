"""Durations, sizes and rates: parsing from the plan spec and formatting for people.

Sizes are decimal (1 TB = 10**12 bytes), as cloud vendors bill and quote them; binary units
(GiB, TiB) are accepted too. Rates are bits per second (1 Gbps = 10**9 bit/s), as links are sold.

Units are matched exactly as written: `B` is a byte and `b` a bit, so `2Tb` (0.25 TB) and `5gB`
are refused rather than read as `2TB` or `5Gbps`, an 8x error. A rate in bytes per second
(`5GB/s`, `5GBps`) is accepted and converted (x8). Every value is finite and within a bound far
beyond any real plan (`MAX_DURATION_S`, `MAX_SIZE_B`), so the arithmetic downstream (bytes per
month, dollars) cannot overflow to infinity.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from gpudr.core.enums import UNBOUNDED

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# ASCII classes: `\d` would admit Arabic-Indic digits, which float() then reads as numbers.
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.ASCII)
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])", re.ASCII)
# A century: longer than any retention a cloud enforces (S3 Object Lock allows up to 100
# years) and any recovery target; beyond it a duration is a typo.
MAX_DURATION_S = 100 * 365 * 86400

_SIZE_UNITS = {
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "PiB": 2**50,
}
SIZE_SPELLINGS = ", ".join(_SIZE_UNITS)
# A zettabyte: more than any storage system holds; beyond it a size is a typo.
MAX_SIZE_B = 10**21

# Bits per second as links are sold, and bytes per second (x8) as storage throughput is quoted.
_RATE_UNITS = {
    "Mbps": 1e6,
    "Gbps": 1e9,
    "Tbps": 1e12,
    "Mbit/s": 1e6,
    "Gbit/s": 1e9,
    "MB/s": 8e6,
    "GB/s": 8e9,
    "MBps": 8e6,
    "GBps": 8e9,
}
RATE_SPELLINGS = "Mbps, Gbps, Tbps (bits); MB/s, GB/s, MBps, GBps (bytes, x8)"
_QUANTITY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z/]+)\s*$", re.ASCII)


class UnitError(ValueError):
    """A value that is not a duration, size or rate; the message says what is allowed."""


def show(value: object) -> str:
    """A value as an error message quotes it: on one line, at most 40 characters."""
    if isinstance(value, str):
        text = '"' + "".join(c if c.isprintable() else repr(c)[1:-1] for c in value) + '"'
    else:
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + '..."'


def _case_of(unit: str, known: Iterable[str]) -> bool:
    """Whether `unit` is one of `known` spelt with other capitals (`tb` for `TB`)."""
    return unit.lower() in {k.lower() for k in known}


def _bounded(value: object, number: float, limit: float, what: str) -> float:
    """`number`, refused when not finite or above `limit` (a float of 400 digits is inf)."""
    if not math.isfinite(number) or number > limit:
        raise UnitError(f"{show(value)} is too large; {what}")
    return number


def parse_duration(value: object) -> float:
    """Seconds from `45m`, `4h`, `1h30m`, `7d`, or `0`. Bare numbers other than 0 are refused:
    `4` could mean hours or minutes, and a DR target must not be ambiguous. Upper case reads as
    lower case (`4H` is 4h), except `M`: a month may be meant where it would read as minutes."""
    if isinstance(value, bool):
        raise UnitError(f"{show(value)} is not a duration; use e.g. 45m, 4h, 7d or 0")
    if isinstance(value, int | float) and value == 0:
        return 0.0
    seconds: float | None = None
    # Upper case is read as lower case, except M: minutes or months?
    if isinstance(value, str) and "M" not in value:
        text = value.strip().lower()
        single = _DURATION_RE.match(text)
        compact = text.replace(" ", "")
        parts = _DURATION_PART_RE.findall(compact)
        if text == "0":
            seconds = 0.0
        elif single:
            seconds = float(single.group(1)) * _DURATION_UNITS[single.group(2)]
        elif parts and "".join(n + u for n, u in parts) == compact:
            seconds = float(sum(float(n) * _DURATION_UNITS[u] for n, u in parts))
    if seconds is None:
        month = isinstance(value, str) and "M" in value
        hint = " (M is ambiguous: write m for minutes, or days, e.g. 30d)" if month else ""
        raise UnitError(f"{show(value)} is not a duration{hint}; use e.g. 45m, 4h, 1h30m, 7d or 0")
    return _bounded(value, seconds, MAX_DURATION_S, "durations are at most 100 years (36500d)")


def parse_size(value: object) -> float:
    """Bytes from `150GB`, `2TB`, `512GiB`: the unit exactly as listed in `SIZE_SPELLINGS`."""
    match = _QUANTITY_RE.match(value) if isinstance(value, str) else None
    if match and match.group(2) in _SIZE_UNITS:
        size = float(match.group(1)) * _SIZE_UNITS[match.group(2)]
        return _bounded(value, size, MAX_SIZE_B, "sizes are at most 1000000PB (a zettabyte)")
    unit = match.group(2) if match else ""
    hint = ""
    if _case_of(unit, _SIZE_UNITS) and unit.endswith("b"):
        hint = " (a lower-case b is a bit: sizes are in bytes, B)"
    elif _case_of(unit, _SIZE_UNITS):
        hint = " (units are matched exactly as written)"
    raise UnitError(
        f"{show(value)} is not a size{hint}; use e.g. 150GB, 2TB or 512GiB, with one of "
        f"{SIZE_SPELLINGS}"
    )


def parse_rate_gbps(value: object) -> float:
    """Gbps from `10Gbps`, `500Mbps`, `5GB/s` (40 Gbps), or a plain number of Gbps."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        # float() of an integer of more than 308 digits overflows: as inf, refused.
        number = float(value) if abs(value) < 2**1023 else math.inf
        if not math.isfinite(number) or number < 0:
            raise UnitError(f"{show(value)} is not a bandwidth; use a finite number of Gbps >= 0")
        return number
    match = _QUANTITY_RE.match(value) if isinstance(value, str) else None
    if match and match.group(2) in _RATE_UNITS:
        gbps = float(match.group(1)) * _RATE_UNITS[match.group(2)] / 1e9
        if math.isfinite(gbps):
            return gbps
        raise UnitError(f"{show(value)} is too large; use a finite bandwidth")
    known = match is not None and _case_of(match.group(2), _RATE_UNITS)
    hint = " (units are matched exactly as written: B is a byte, b a bit)" if known else ""
    raise UnitError(
        f"{show(value)} is not a bandwidth{hint}; use e.g. 10Gbps or 500Mbps, with one of "
        f"{RATE_SPELLINGS}"
    )


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
    """`1h30m`, `45m`, `90s`, `0`; `-` for none, `unbounded` for an infinite time."""
    if seconds is None:
        return "-"
    if math.isinf(seconds):
        return UNBOUNDED
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
        return UNBOUNDED
    if gbps < 1:
        return f"{gbps * 1000:.0f} Mbps"
    if gbps >= 1000:
        return f"{gbps:,.0f} Gbps"
    return f"{gbps:.3g} Gbps"


def fmt_usd(amount: float) -> str:
    return f"${amount:,.0f}"
