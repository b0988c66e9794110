"""Cron schedules as Kubernetes CronJobs read them (five fields, `@hourly`-style macros), parsed
only far enough to know the shortest time between two runs: the audit's `activeDeadlineSeconds`
must stay below it, or a slow run would overlap the next one (which `concurrencyPolicy: Forbid`
would then skip)."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))
NAMES = {3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
         4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]}


def _field(text: str, index: int) -> tuple[set[int], bool]:
    """The values of one field and whether it is restricted (not `*`)."""
    label, low, high = FIELDS[index]
    names = NAMES.get(index, [])
    first = 1 if index == 3 else 0

    def number(token: str) -> int:
        if token.lower() in names:
            return names.index(token.lower()) + first
        if not (token.isascii() and token.isdigit()) or not low <= int(token) <= high:
            raise ValueError(f"{label}: {token!r} is not in {low}-{high}")
        return int(token)

    values: set[int] = set()
    for item in text.split(","):
        rng, _, step_text = item.partition("/")
        step = 1
        if step_text:
            if not (step_text.isascii() and step_text.isdigit()) or int(step_text) < 1:
                raise ValueError(f"{label}: step {step_text!r} is not a positive number")
            step = int(step_text)
        if rng in ("*", "?"):
            start, end = low, high
        elif "-" in rng:
            a, b = rng.split("-", 1)
            start, end = number(a), number(b)
            if start > end:
                raise ValueError(f"{label}: range {rng!r} runs backwards")
        else:
            start = number(rng)
            end = high if step_text else start
        values.update(range(start, end + 1, step))
    if index == 4 and 7 in values:  # 7 is Sunday too
        values = (values - {7}) | {0}
    return values, not text.startswith(("*", "?"))


def parse(schedule: str) -> tuple[set[int], set[int], set[int], set[int], set[int], bool]:
    """(minutes, hours, days of month, months, days of week, whether a day matches either day
    field); raises ValueError with a message naming the field at fault."""
    text = MACROS.get(schedule.strip(), schedule.strip())
    parts = text.split()
    if len(parts) != 5:
        raise ValueError("a schedule has five fields (minute hour day-of-month month day-of-week) or is one of "
                         + ", ".join(sorted(MACROS)))
    fields = [_field(p, i) for i, p in enumerate(parts)]
    (minutes, _), (hours, _), (dom, dom_set), (months, _), (dow, dow_set) = fields
    return minutes, hours, dom, months, dow, dom_set and dow_set


@lru_cache(maxsize=64)
def shortest_period_seconds(schedule: str) -> int:
    """The shortest interval between two consecutive runs over four years (every calendar case)."""
    return _periods(schedule)[0]


@lru_cache(maxsize=64)
def longest_period_seconds(schedule: str) -> int:
    """The longest interval between two consecutive runs over four years: how long a healthy
    CronJob may go without a run."""
    return _periods(schedule)[1]


def _periods(schedule: str) -> tuple[int, int]:
    minutes, hours, dom, months, dow, either = parse(schedule)
    times = sorted(h * 60 + m for h in hours for m in minutes)
    day = dt.date(2024, 1, 1)  # a leap year first
    previous: int | None = None
    shortest: int | None = None
    longest = 0
    for _ in range(4 * 366 + 7):
        # Cron's rule: when both day fields are restricted, a day matches either of them.
        by_dom, by_dow = day.day in dom, day.isoweekday() % 7 in dow
        if day.month in months and ((by_dom or by_dow) if either else (by_dom and by_dow)):
            base = day.toordinal() * 1440
            for t in times:
                if previous is not None:
                    gap = base + t - previous
                    shortest = gap if shortest is None else min(shortest, gap)
                    longest = max(longest, gap)
                previous = base + t
        day += dt.timedelta(days=1)
    if shortest is None:
        raise ValueError("the schedule fires less than twice in four years")
    return shortest * 60, longest * 60
