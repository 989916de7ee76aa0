"""KEDA cron windows over a simulated day, on the parser the stack schema validates with (config/cron.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from llm_platform.config.cron import Cron
from llm_platform.plan import HeadroomPlan

__all__ = ["Cron", "active_minutes", "placeholder_targets", "window_active"]


def window_active(start: Cron, end: Cron, when: datetime) -> bool:
    """KEDA cron scaler: inside [start, end) exactly when the next end comes before the next start."""
    return end.next_after(when) < start.next_after(when)


def active_minutes(start: str, end: str, timezone: str, day_start_utc: datetime, minutes: int) -> list[bool]:
    """Whether a cron window is active at each minute of a simulated span (precomputed once per run)."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"pre-warm timezone {timezone!r} does not exist; use an IANA name such as Europe/Paris"
        ) from None
    s, e = Cron.parse(start), Cron.parse(end)
    out: list[bool] = []
    next_s = s.next_after(day_start_utc.astimezone(zone) - timedelta(minutes=1))
    next_e = e.next_after(day_start_utc.astimezone(zone) - timedelta(minutes=1))
    for m in range(minutes):
        now = (day_start_utc + timedelta(minutes=m)).astimezone(zone)
        if next_s <= now:
            next_s = s.next_after(now)
        if next_e <= now:
            next_e = e.next_after(now)
        out.append(next_e < next_s)
    return out


def placeholder_targets(headroom: HeadroomPlan | None, day_start: datetime, seconds: int) -> np.ndarray:
    """Placeholders wanted at each minute, as the plan renders them: the Deployment's count outside every
    window, a cron window's count inside (KEDA takes the largest active trigger)."""
    minutes = seconds // 60 + 1
    if headroom is None:
        return np.zeros(minutes, dtype=np.int64)
    target = np.full(minutes, headroom.placeholders, dtype=np.int64)
    for w in headroom.windows:
        active = np.array(active_minutes(w.start, w.end, w.timezone, day_start, minutes))
        target = np.where(active, np.maximum(target, w.placeholders), target)
    return target
