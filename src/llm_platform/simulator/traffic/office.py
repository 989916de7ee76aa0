"""Office-hours days for dev and staging: idle nights and weekends, business-hours traffic, a lone 03:00 request.

Deterministic for a seed; arrivals in seconds from midnight (Poisson at `rate_per_s` between 09:00 and 18:00 on
a weekday, nothing else but the optional lone request). The days scale-to-zero is meant for (issue #25).
"""

from __future__ import annotations

import numpy as np

DAY_SECONDS = 86_400
OFFICE_KINDS = ("weekday", "weekday-0300", "weekend", "weekend-0300")
BUSINESS_HOURS = (9 * 3600, 18 * 3600)
LONE_REQUEST_S = 3 * 3600.0  # 03:00


def office_day(kind: str, rate_per_s: float = 0.05, seed: int = 0) -> np.ndarray:
    """Sorted arrival times (s) for one office day of `kind` (one of OFFICE_KINDS)."""
    if kind not in OFFICE_KINDS:
        raise ValueError(f"unknown office day {kind!r}; allowed: {', '.join(OFFICE_KINDS)}")
    rng = np.random.default_rng(seed)
    parts: list[np.ndarray] = []
    if kind.startswith("weekday"):
        start, end = BUSINESS_HOURS
        count = int(rng.poisson(rate_per_s * (end - start)))
        parts.append(rng.uniform(start, end, count))
    if kind.endswith("0300"):
        parts.append(np.array([LONE_REQUEST_S]))
    return np.sort(np.concatenate(parts)) if parts else np.zeros(0)
