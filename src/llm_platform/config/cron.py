"""Five-field cron expressions, enough for KEDA's cron scaler (minute hour day-of-month month day-of-week).

Used by the stack schema (a malformed or out-of-range field is refused) and the simulator (when a window is active).

Supports `*`, lists, ranges and steps (robfig/cron standard parser, which KEDA uses). Day-of-month and
day-of-week combine as in Vixie cron: if both are restricted, either may match.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def _field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if body == "*":
            start, end = low, high
        elif "-" in body:
            a, b = body.split("-", 1)
            start, end = int(a), int(b)
        else:
            start = int(body)
            end = high if step_text else start
        if not (low <= start <= high and low <= end <= high) or step < 1:
            raise ValueError(f"cron field {text!r} is out of range {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday (7 folded into 0)
    day_restricted: bool
    weekday_restricted: bool

    @classmethod
    def parse(cls, expression: str) -> Cron:
        parts = expression.split()
        if len(parts) != 5:
            raise ValueError(f"{expression!r} is not a 5-field cron expression")
        fields = [_field(p, lo, hi) for p, (lo, hi) in zip(parts, _RANGES, strict=True)]
        weekdays = frozenset(d % 7 for d in fields[4])
        return cls(fields[0], fields[1], fields[2], fields[3], weekdays, parts[2] != "*", parts[4] != "*")

    def matches(self, t: datetime) -> bool:
        if t.minute not in self.minutes or t.hour not in self.hours or t.month not in self.months:
            return False
        day_ok = t.day in self.days
        weekday_ok = (t.isoweekday() % 7) in self.weekdays
        if self.day_restricted and self.weekday_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok

    def next_after(self, t: datetime) -> datetime:
        """The first matching minute strictly after t (robfig cron's Schedule.Next)."""
        candidate = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
        for _ in range(366 * 24 * 60):
            if self.matches(candidate):
                return candidate
            candidate += timedelta(minutes=1)
        raise ValueError("cron expression never matches within a year")
