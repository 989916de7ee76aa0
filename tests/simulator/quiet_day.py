"""A held-out quiet day for a model at zero (issue #49), generated, not fitted: idle, 0.5 req/s at 08:00 for 20
minutes, a 2 req/s burst at 13:00 for 10, and trickles of 0.1-0.2 req/s for half an hour each at 10:00, 15:30
and 18:00 (each a wake on the zero fixture, whose cooldownPeriod is 1800 s)."""

from __future__ import annotations

import numpy as np

from llm_platform.simulator.traffic.traffic import TokenMix, Traffic, poisson_day

HOUR = 3600
# (start hour, minutes, requests/s)
SPANS = ((8.0, 20, 0.5), (10.0, 30, 0.1), (13.0, 10, 2.0), (15.5, 30, 0.2), (18.0, 30, 0.15))


def quiet_rate() -> np.ndarray:
    rate = np.zeros(24 * HOUR)
    for start, minutes, rps in SPANS:
        at = int(start * HOUR)
        rate[at : at + 60 * minutes] = rps
    return rate


def quiet_day(seed: int) -> Traffic:
    return poisson_day(quiet_rate(), TokenMix(), np.random.default_rng(seed), "quiet-day")
