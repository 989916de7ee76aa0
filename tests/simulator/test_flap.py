"""controllers/flap.py: scale-direction reversals within a window."""

from __future__ import annotations

import numpy as np

from llm_platform.simulator.controllers.flap import flap_count


def test_oscillating_at_the_cap_counts_each_reversal() -> None:
    # 10 -> 9 -> 10 every 5 minutes for an hour: every step after the first reverses within the window.
    desired = np.array(([10] * 5 + [9] * 5) * 6)
    assert flap_count(desired) == int(np.count_nonzero(np.diff(desired))) - 1


def test_a_ramp_up_and_down_is_not_a_flap() -> None:
    day = np.concatenate([np.arange(1, 11).repeat(30), np.full(120, 10), np.arange(10, 0, -1).repeat(30)])
    assert flap_count(day) == 0


def test_reversal_after_the_window_is_not_counted() -> None:
    desired = np.array([5] * 10 + [6] * 20 + [5] * 10)
    assert flap_count(desired, window=15) == 0
    assert flap_count(desired, window=20) == 1


def test_the_tuner_treats_a_flapping_candidate_as_infeasible() -> None:
    from llm_platform.simulator.search.tune import DayScore, Tuner

    tuner = Tuner.__new__(Tuner)  # feasibility needs only the limits, not the training days
    tuner.max_miss, tuner.max_flaps = 1.0, None
    calm = (10.0, 0.5, [DayScore("a", 10.0, 0.5, 8.0, flaps=0)])
    flapping = (9.0, 0.5, [DayScore("a", 9.0, 0.5, 8.0, flaps=12)])
    assert tuner.better(flapping, calm)  # no limit: the cheaper wins
    tuner.max_flaps = 2
    assert not tuner.feasible(flapping) and tuner.better(calm, flapping)
