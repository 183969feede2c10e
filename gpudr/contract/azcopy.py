"""The schedule of an AzCopy job at an Azure DR site: the cron expression the job declares for
the interval the planner chose (components/azure/azcopy.py), and the interval the policy pack
reads back from a registered job's expression. What a run does is gpudr/contract/azcopy_job.py.

Standard library and core's enums only: the Pulumi program and the pack read this module.
"""

from __future__ import annotations

from itertools import pairwise

from gpudr.core.enums import CRON_INTERVAL_HOURS


def cron_expression(interval_s: int) -> str:
    """The job's schedule (5 fields, UTC) for a repeat interval the planner chose among
    enums.CRON_INTERVAL_HOURS: on the hour, every h hours from midnight."""
    hours, rest = divmod(int(interval_s), 3600)
    if rest or hours not in CRON_INTERVAL_HOURS:
        raise ValueError(
            f"a repeat interval of {interval_s} s is not one cron keeps (hours: "
            f"{', '.join(map(str, CRON_INTERVAL_HOURS))}); regenerate the stack"
        )
    if hours == 24:
        return "0 0 * * *"
    return "0 * * * *" if hours == 1 else f"0 */{hours} * * *"


def _cron_field(text: str, low: int, high: int) -> set[int] | None:
    """The values one cron field selects (`*`, `n`, `a-b`, `*/s`, `a-b/s`, lists), or None
    when it is not one of those."""
    out: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        if step_text and not step_text.isdigit():
            return None
        step = int(step_text) if step_text else 1
        if base == "*":
            first, last = low, high
        elif base.isdigit():
            first = int(base)
            last = high if step_text else first
        elif "-" in base and all(x.isdigit() for x in base.split("-", 1)):
            first, last = (int(x) for x in base.split("-", 1))
        else:
            return None
        if step < 1 or first < low or last > high or first > last:
            return None
        out.update(range(first, last + 1, step))
    return out


def cron_interval_s(expression: str) -> float | None:
    """The longest gap between two runs of a schedule that repeats every day (day of month,
    month and day of week all `*`), wrapping around midnight; None for a schedule that never
    fires, cannot be read, or is not daily (what gpudr declares is always daily, so anything
    else is not its schedule: the pack refuses it rather than guess its gaps)."""
    fields = expression.split()
    if len(fields) != 5 or fields[2:] != ["*", "*", "*"]:
        return None
    minutes = _cron_field(fields[0], 0, 59)
    hours = _cron_field(fields[1], 0, 23)
    if not minutes or not hours:
        return None
    times = sorted(h * 60 + m for h in hours for m in minutes)
    gaps = [b - a for a, b in pairwise(times)]
    gaps.append(times[0] + 1440 - times[-1])
    return float(max(gaps) * 60)
