"""Flap count: how often the autoscaler reverses direction soon after a scale step.

A config at its replica cap near saturation can oscillate between N and N-1 when freshly started (unloaded)
pods read near zero and pull the per-pod average under the target. Defined on the per-minute desired replica
series: each minute where desired changes is a step with a direction (+1 up, -1 down); a flap is a step whose
direction is opposite to the previous step's and which comes at most `window_minutes` after it. A steady
diurnal ramp (up all morning, down all evening) counts at most one reversal per turn of the day when the turn
is sharp, none otherwise.
"""

from __future__ import annotations

import numpy as np

FLAP_WINDOW_MINUTES = 15


def flap_count(desired: np.ndarray, window_minutes: int = FLAP_WINDOW_MINUTES) -> int:
    """Scale-direction reversals within `window_minutes` of the previous step, on a per-minute series."""
    if len(desired) < 2:
        return 0
    diff = np.diff(np.asarray(desired, dtype=np.float64))
    minutes = np.flatnonzero(diff)
    if len(minutes) < 2:
        return 0
    signs = np.sign(diff[minutes])
    reversed_ = signs[1:] != signs[:-1]
    soon = np.diff(minutes) <= window_minutes
    return int(np.count_nonzero(reversed_ & soon))
