"""Flap count: how often the autoscaler reverses direction soon after a scale step.

A config at its replica cap near saturation can oscillate between N and N-1: once the pool is no longer
saturated vLLM's queue reads zero (an unloaded pod waits for nothing), the other triggers ask for fewer, the
HPA removes a replica after its down-stabilization window, the rest saturate and the queue asks for the cap
again. A step is a change of the desired replica count (the HPA's `spec.replicas`) with a direction (+1 up,
-1 down); a flap is a step whose direction is opposite to the previous step's and which comes at most
`FLAP_WINDOW_MINUTES` after it. Counted on the per-second series the engine keeps (`flap_count(desired,
window=FLAP_WINDOW_MINUTES * 60)`), not on the per-minute maximum: a pool that drops 10 -> 4 and is back at 10
at the HPA's next sync, 15 s later, is a flap the minute's maximum hides. A steady diurnal ramp (up all
morning, down all evening) counts at most one reversal per turn of the day when the turn is sharp, none
otherwise.
"""

from __future__ import annotations

import numpy as np

FLAP_WINDOW_MINUTES = 15


def flap_count(desired: np.ndarray, window: int = FLAP_WINDOW_MINUTES) -> int:
    """Scale-direction reversals within `window` samples of the previous step (minutes on a per-minute
    series, seconds on a per-second one)."""
    if len(desired) < 2:
        return 0
    diff = np.diff(np.asarray(desired, dtype=np.float64))
    steps = np.flatnonzero(diff)
    if len(steps) < 2:
        return 0
    signs = np.sign(diff[steps])
    reversed_ = signs[1:] != signs[:-1]
    soon = np.diff(steps) <= window
    return int(np.count_nonzero(reversed_ & soon))
