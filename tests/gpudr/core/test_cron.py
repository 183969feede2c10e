"""`drill.schedule`: a 5-field cron in UTC, at most daily, that runs at all; weekly by default.
Every refusal is one line naming the field and giving an example."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudr.core import reference
from gpudr.core.cron import FIELDS, parse_schedule
from gpudr.core.spec import PlanError, drill_schedule, parse_plan

EXAMPLE = '"17 3 * * 1"'


def test_the_default_is_weekly_off_the_hour() -> None:
    """One home: defaults.yaml; a plan without `drill.schedule` gets it."""
    default = reference.defaults()["drill"]["schedule"]["value"]
    assert drill_schedule("schedule") == default == "17 3 * * 1"
    minute, _, day, month, weekday = default.split()
    assert minute != "0" and (day, month) == ("*", "*") and weekday.isdigit()  # once a week
    cleanup = drill_schedule("cleanup_schedule").split()
    assert cleanup[0] != "0" and cleanup[2:] == ["*", "*", "*"]  # daily, off the hour


def test_a_plan_without_a_schedule_drills_weekly(example_raw: dict[str, Any]) -> None:
    example_raw.pop("drill", None)
    assert parse_plan(example_raw).drill.schedule == "17 3 * * 1"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("17 3 * * 1", "17 3 * * 1"),
        ("  5  22 * * 0 ", "5 22 * * 0"),  # spaces collapsed: the workflow writes it as given
        ("17 3 * * 1-5", "17 3 * * 1-5"),  # weekdays
        ("17 3 1,15 * *", "17 3 1,15 * *"),
        ("17 3 1-31/7 * *", "17 3 1-31/7 * *"),
        ("17 3 29 2 *", "17 3 29 2 *"),  # leap years
        ("17 3 31 2 1", "17 3 31 2 1"),  # day-of-month OR day-of-week: Mondays in February
        ("59 23 31 12 6", "59 23 31 12 6"),
        ("17 3 1 */3 *", "17 3 1 */3 *"),  # quarterly: rarer than daily is allowed
    ],
)
def test_valid_schedules(value: str, expected: str) -> None:
    assert parse_schedule(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0 17 3 * * 1", '"0 17 3 * * 1" has 6 field(s); use 5 (minute hour day-of-month month'),
        ("17 3 * *", '"17 3 * *" has 4 field(s)'),
        ("", '"" has 0 field(s)'),
        (3, "3 is not a cron schedule; use 5 fields in quotes"),
        ("60 3 * * 1", "minute 60 is outside 0-59"),
        ("17 24 * * 1", "hour 24 is outside 0-23"),
        ("17 3 0 * *", "day-of-month 0 is outside 1-31"),
        ("17 3 32 * *", "day-of-month 32 is outside 1-31"),
        ("17 3 * 13 *", "month 13 is outside 1-12"),
        ("17 3 * * 7", "day-of-week 7 is outside 0-6 (0 is Sunday)"),
        ("17 3 * * MON", 'day-of-week "MON" is not `*`, a number, a range a-b or a step /n'),
        ("17 3 * JAN *", 'month "JAN" is not `*`'),
        ("17 3 1,,2 * *", 'day-of-month "" is not `*`'),
        ("17 3 * * 5-1", "day-of-week range 5-1 runs backwards"),
        ("17 3 */0 * *", "day-of-month step /0 is not at least 1"),
        ("5/15 3 * * *", 'minute "5/15" steps from one number; write the range, e.g. 5-59/15'),
        ("* 3 * * 1", '"* 3 * * 1" runs more than once a day'),
        ("*/5 3 * * 1", '"*/5 3 * * 1" runs more than once a day'),
        ("17,47 3 * * 1", '"17,47 3 * * 1" runs more than once a day'),
        ("17 * * * 1", '"17 * * * 1" runs more than once a day'),
        ("17 3-4 * * 1", '"17 3-4 * * 1" runs more than once a day'),
        ("17 3 31 2 *", '"17 3 31 2 *" never runs (no month it names has such a day)'),
        ("17 3 31 4,6,9,11 *", '"17 3 31 4,6,9,11 *" never runs'),
    ],
)
def test_bad_schedules_are_refused_on_one_line_with_an_example(
    example_raw: dict[str, Any], value: object, message: str
) -> None:
    example_raw["drill"] = {"schedule": value}
    with pytest.raises(PlanError) as caught:
        parse_plan(example_raw)
    (error,) = caught.value.errors
    line = str(error)
    assert line.startswith(f"drill.schedule: {message}"), line
    assert "\n" not in line and (EXAMPLE in line or "e.g. 5-59/15" in line), line


def test_the_daily_cleanups_schedule_is_refused(example_raw: dict[str, Any]) -> None:
    """The workflow tells a cleanup-only run from a drill by `github.event.schedule`."""
    cleanup = drill_schedule("cleanup_schedule")
    example_raw["drill"] = {"schedule": cleanup}
    with pytest.raises(PlanError) as caught:
        parse_plan(example_raw)
    assert [str(e) for e in caught.value.errors] == [
        f'drill.schedule: "{cleanup}" is the daily cleanup\'s schedule (the workflow tells a '
        'drill from a cleanup by it); use another minute, e.g. "17 3 * * 1"'
    ]


def _number(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(str)


# Fields GitHub reads, drawn widely (out of range, names, steps, lists) to meet every branch.
_element = st.one_of(
    st.just("*"),
    _number(0, 99),
    st.tuples(_number(0, 40), _number(0, 40)).map("-".join),
    st.tuples(st.sampled_from(["*", "1-20", "0-6", "5"]), _number(0, 12)).map("/".join),
    st.sampled_from(["MON", "JAN", "", "?", "L", "-1"]),
)
_field = st.lists(_element, min_size=1, max_size=3).map(",".join)


@given(st.lists(_field, min_size=4, max_size=6).map(" ".join))
def test_any_schedule_parses_at_most_daily_or_is_refused_on_one_line(text: str) -> None:
    """Accepted: 5 fields whose minute and hour are single numbers in range (one run a day at
    most). Refused: one line naming a field or the whole value, with an example."""
    try:
        parsed = parse_schedule(text)
    except ValueError as exc:
        line = str(exc)
        assert "\n" not in line and "e.g." in line and len(line) < 300, line
        assert any(line.startswith(name + " ") for name in FIELDS) or line.startswith('"'), line
        return
    minute, hour, *_ = parsed.split()
    assert len(parsed.split()) == 5
    assert minute.isdigit() and 0 <= int(minute) <= 59
    assert hour.isdigit() and 0 <= int(hour) <= 23
    assert parse_schedule(parsed) == parsed
