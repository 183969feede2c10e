"""The drills' schedule: a 5-field cron expression as GitHub Actions reads it, in UTC.

`parse_schedule` accepts what GitHub's `on.schedule` accepts (`*`, numbers, `a-b` ranges,
`/step` and `,` lists in each field) with two bounds of gpudr's own:

- at most one run a day: the minute and the hour are each one number. A drill costs up to its
  TTL at list price (examples/aws-two-region.yaml: $110/h, up to 4 h), and a drill that starts
  before the previous one ends only waits for it;
- it runs at all: "17 3 31 2 *" (31 February) is refused rather than never drilling.

Month and weekday names (`MON`, `JAN`) and a 7 for Sunday are refused: GitHub documents numbers
only. Every refusal is one line with the field at fault and an example. Any schedule rarer than
daily is accepted (a quarterly drill is a policy decision, not a typo); the default is weekly.
"""

from __future__ import annotations

import re

from gpudr.core.units import show

EXAMPLE = '"17 3 * * 1"'
FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
# The longest day of each month (29 February: a leap year runs it).
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_ELEMENT = re.compile(r"(\*|\d{1,2}(?:-\d{1,2})?)(?:/(\d{1,2}))?")


def parse_schedule(value: object) -> str:
    """`value` as a schedule (its fields joined by one space), or ValueError saying why not."""
    if not isinstance(value, str):
        raise ValueError(
            f"{show(value)} is not a cron schedule; use 5 fields in quotes, in UTC, e.g. {EXAMPLE}"
        )
    fields = value.split()
    if len(fields) != len(FIELDS):
        raise ValueError(
            f"{show(value)} has {len(fields)} field(s); use 5 (minute hour day-of-month month "
            f"day-of-week, in UTC), e.g. {EXAMPLE}"
        )
    sets = [_field(text, i) for i, text in enumerate(fields)]
    if len(sets[0]) != 1 or len(sets[1]) != 1:
        raise ValueError(
            f"{show(value)} runs more than once a day; give the minute and the hour one number "
            f"each (a drill costs up to its TTL at list price), e.g. {EXAMPLE}"
        )
    days, months = sets[2], sets[3]
    # cron runs a day that matches day-of-month OR day-of-week when both are restricted: only a
    # schedule whose weekday is `*` can name days that never come.
    if fields[4] == "*" and not any(d <= _MONTH_DAYS[m - 1] for d in days for m in months):
        raise ValueError(
            f"{show(value)} never runs (no month it names has such a day); e.g. {EXAMPLE}"
        )
    return " ".join(fields)


def _field(text: str, index: int) -> set[int]:
    """The values field `index` matches, or ValueError naming the field."""
    name = FIELDS[index]
    low, high = _RANGES[index]
    values: set[int] = set()
    for element in text.split(","):
        match = _ELEMENT.fullmatch(element)
        if match is None:
            raise ValueError(
                f"{name} {show(element)} is not `*`, a number, a range a-b or a step /n "
                f"(numbers only, {low}-{high}); e.g. {EXAMPLE}"
            )
        span, step = match[1], int(match[2]) if match[2] else None
        if step is not None and "-" not in span and span != "*":
            # Some crons read "5/15" as 5-59/15, others refuse it: never guess how often it runs.
            raise ValueError(
                f"{name} {show(element)} steps from one number; write the range, "
                f"e.g. {span}-{high}/{step}"
            )
        if step == 0:
            raise ValueError(f"{name} step /0 is not at least 1; e.g. {EXAMPLE}")
        first, last = low, high
        if span != "*":
            start, _, end = span.partition("-")
            first, last = int(start), int(end or start)
            for n in (first, last):
                if not low <= n <= high:
                    raise ValueError(
                        f"{name} {n} is outside {low}-{high}"
                        + (" (0 is Sunday)" if name == "day-of-week" else "")
                        + f"; e.g. {EXAMPLE}"
                    )
            if last < first:
                raise ValueError(f"{name} range {span} runs backwards; e.g. {EXAMPLE}")
        values.update(range(first, last + 1, step or 1))
    return values
