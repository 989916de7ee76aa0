"""HPA controller cases ported from kubernetes/kubernetes pkg/controller/podautoscaler.

Each test names the upstream test (horizontal_test.go / replica_calculator_test.go) whose case it ports;
expectations are the upstream ones. Upstream uses time.Now() - x; here now = NOW and timestamps NOW - x.
"""

from __future__ import annotations

from typing import Literal

import pytest

from llm_platform.config.schema import ScalingPolicy, ScalingRules
from llm_platform.simulator.controllers.hpa import HPA, Behavior, ScaleEvent, external_average_value_replicas

NOW = 10_000.0


def rules(
    pods=0,
    pods_period=0,
    percent=0,
    percent_period=0,
    window=0,
    select: Literal["Max", "Min", "Disabled"] = "Max",
) -> ScalingRules:
    """generateScalingRules(pods, podsPeriod, percent, percentPeriod, stabilizationWindow)."""
    policies = []
    if pods:
        policies.append(ScalingPolicy(type="Pods", value=pods, period_seconds=pods_period))
    if percent:
        policies.append(ScalingPolicy(type="Percent", value=percent, period_seconds=percent_period))
    return ScalingRules(stabilization_window_seconds=window, select_policy=select, policies=policies)


def uniform_events(changes: list[int], period: float) -> list[ScaleEvent]:
    """generateEventsUniformDistribution: events centred in equal segments of the last `period` seconds."""
    seg = period / len(changes)
    return [ScaleEvent(c, NOW - (period - seg * (i + 1) + seg / 2)) for i, c in enumerate(changes)]


# --- TestScalingWithRules (convertDesiredReplicasWithBehaviorRate) ---------------------------------------------

SCALING_WITH_RULES = [
    # name, up_events, down_events, min, max, up_rules, down_rules, current, desired, expected
    ("within range", [], [], 3, 8, None, None, 5, 7, 7),
    ("below min", [], [], 2, 8, None, None, 3, 1, 2),
    ("min 0 within range", [], [], 0, 10, None, None, 1, 0, 0),
    ("maxReplicas < scaleUpLimit", [], [], 1, 10, None, None, 20, 1000, 10),
    ("desired above max", [], [], 100, 150, None, None, 100, 1000, 150),
    ("user percent policy limit", [], [], 1, 2000, rules(percent=1, percent_period=60), None, 3, 1000, 4),
    ("user pods scale-down limit", [], [], 3, 2000, None, rules(pods=20, pods_period=60), 1000, 3, 980),
    ("scaleUp with default behavior", [], [], 1, 1000, None, None, 10, 50, 20),
    ("pods policy larger than percent", [], [], 1, 1000, rules(100, 60, 100, 60), None, 10, 500, 110),
    ("percent policy larger than pods", [], [], 1, 1000, rules(2, 60, 100, 60), None, 10, 500, 20),
    ("max limits large pod policy", [], [], 1, 1000, rules(100, 60), None, 10, 50, 50),
    ("max limits large percent policy", [], [], 1, 1000, rules(10000, 60), None, 10, 50, 50),
    ("pod policy limitation", [], [], 1, 1000, rules(30, 60), None, 10, 50, 40),
    ("percent policy limitation", [], [], 1, 1000, rules(percent=200, percent_period=60), None, 10, 50, 30),
    ("scaleDown percent larger than pod", [], [], 1, 1000, None, rules(20, 60, 1, 60, 300), 100, 2, 80),
    ("scaleDown pod larger than percent", [], [], 1, 1000, None, rules(2, 60, 1, 60, 300), 100, 2, 98),
    ("scaleDown min with large pod policy", [], [], 1, 1000, None, rules(100, 60, window=300), 10, 0, 1),
    ("scaleDown min with large percent policy", [], [], 5, 1000, None, rules(percent=100, percent_period=60, window=300), 10, 2, 5),
    ("scaleDown pod policy limitation", [], [], 1, 1000, None, rules(5, 60, window=300), 10, 2, 5),
    ("scaleDown percent policy limitation", [], [], 1, 1000, None, rules(percent=50, percent_period=60, window=300), 10, 5, 5),
    ("max with large pod policy and events", [1, 5, 9], [], 1, 200, rules(300, 60), None, 100, 500, 200),
    ("max with large percent policy and events", [1, 5, 9], [], 1, 200, rules(percent=10000, percent_period=60), None, 100, 500, 200),
    ("current limits after many scale-up events", [1, 5, 9], [], 1, 1000, rules(5, 120), None, 100, 500, 100),
    ("pod policy and previous scale-up events", [1, 5, 9], [], 1, 1000, rules(150, 120), None, 100, 500, 235),
    ("percent policy and previous scale-up events", [1, 5, 9], [], 1, 1000, rules(percent=200, percent_period=120), None, 100, 500, 255),
    ("percent policy and up and down events", [4], [2], 1, 1000, rules(percent=300, percent_period=300), None, 6, 24, 16),
    ("scaleDown default policy and events", [], [1, 5, 9], 1, 1000, None, None, 10, 5, 5),
    ("scaleDown min=nil large pod policy and events", [], [1, 5, 9], 1, 1000, None, rules(115, 120, window=300), 100, 0, 1),
    ("scaleDown min with large pod policy and events", [], [1, 5, 9], 5, 1000, None, rules(130, 120, window=300), 100, 0, 5),
    ("scaleDown min with large percent policy and events", [], [1, 5, 9], 5, 1000, None, rules(percent=100, percent_period=120, window=300), 100, 2, 5),
    ("scaleDown pod policy limitation and events", [], [1, 5, 9], 1, 1000, None, rules(5, 120, window=300), 100, 2, 100),
    ("scaleDown percent policy limitation and events", [], [2, 4, 6], 1, 1000, None, rules(percent=50, percent_period=120, window=300), 100, 0, 56),
    ("scaleDown percent and up and down events", [2], [4], 1, 1000, None, rules(percent=50, percent_period=180), 10, 1, 6),
    ("events preventing further scale down", [], [10, 10, 10], 1, 1000, None, rules(percent=10, percent_period=120, window=300), 100, 0, 100),
    ("events still allowing more scale down", [], [10, 10, 10], 1, 1000, None, rules(percent=1000, percent_period=120, window=300), 10, 5, 5),
    ("outdated flag, one up policy", [8, 12, 9, 11], [], 1, 1000, rules(1000, 60), None, 100, 200, 200),
    ("two up policies, not outdated", [8, 12, 9, 11], [], 1, 1000, rules(1000, 120, 100, 60), None, 100, 200, 200),
    ("two up policies, outdated", [8, 12, 9, 11], [], 1, 1000, rules(1000, 30, 100, 60), None, 100, 200, 200),
    ("outdated flag, one down policy", [], [8, 12, 9, 11], 1, 1000, None, rules(1000, 60, window=300), 100, 5, 5),
    ("two down policies, not outdated", [], [8, 12, 9, 11], 1, 1000, None, rules(1000, 120, 100, 60, 300), 100, 5, 5),
    ("two down policies, outdated", [], [8, 12, 9, 11], 1, 1000, None, rules(1000, 30, 100, 60, 300), 100, 5, 5),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "up_events", "down_events", "lo", "hi", "up", "down", "current", "desired", "expected"),
    SCALING_WITH_RULES,
    ids=[c[0] for c in SCALING_WITH_RULES],
)
def test_scaling_with_rules(name, up_events, down_events, lo, hi, up, down, current, desired, expected):
    """horizontal_test.go TestScalingWithRules (GenerateHPAScale{Up,Down}Rules fill the nil directions)."""
    hpa = HPA(lo, hi, Behavior(up, down))
    hpa.scale_up_events = uniform_events(up_events, 120) if up_events else []
    hpa.scale_down_events = uniform_events(down_events, 120) if down_events else []
    assert hpa.convert_with_behavior_rate(NOW, current, desired) == expected


def test_calculate_scale_up_limit_with_scaling_rules():
    """TestCalculateScaleUpLimitWithScalingRules: Min of Pods 2/60 s and 50%/60 s from 1 -> 2."""
    hpa = HPA(1, 100, Behavior(scale_up=rules(2, 60, 50, 60, 300, select="Min")))
    assert hpa.scale_up_limit(NOW, 1) == 2


def test_calculate_scale_down_limit_with_behaviors():
    """TestCalculateScaleDownLimitWithBehaviors: Min-change of Pods 2/60 s and 50%/60 s from 5 -> 3."""
    hpa = HPA(1, 100, Behavior(scale_down=rules(2, 60, 50, 60, 300, select="Min")))
    assert hpa.scale_down_limit(NOW, 5) == 3


def test_disabled_select_policy_blocks_direction():
    hpa = HPA(
        1,
        100,
        Behavior(
            scale_down=ScalingRules(
                stabilization_window_seconds=0,
                select_policy="Disabled",
                policies=[ScalingPolicy(type="Percent", value=100, period_seconds=15)],
            )
        ),
    )
    assert hpa.convert_with_behavior_rate(NOW, 10, 2) == 10


# --- TestNormalizeDesiredReplicasWithBehavior (stabilizeRecommendationWithBehaviors) -------------------------

NORMALIZE_WITH_BEHAVIOR = [
    # name, recommendations (age s, replicas), current, desired, expected, stored, up window, down window
    ("empty recommendations for scaling down", [], 100, 5, 5, [5], 0, 0),
    ("simple scale down stabilization", [(120, 4), (60, 5)], 100, 3, 5, [4, 5, 3], 0, 180),
    ("simple scale up stabilization", [(120, 4), (60, 5)], 1, 7, 4, [4, 5, 7], 300, 0),
    ("no scale down stabilization", [(120, 1), (60, 2)], 100, 3, 3, [1, 2, 3], 300, 0),
    ("no scale up stabilization", [(120, 4), (60, 5)], 1, 3, 3, [4, 5, 3], 0, 300),
    ("no scale down stabilization, reuse element", [(600, 10), (540, 9)], 100, 3, 3, [10, 3], 0, 0),
    ("no scale up stabilization, reuse element", [(600, 10), (540, 9)], 1, 100, 100, [10, 100], 0, 0),
    ("scale down stabilization, reuse obsolete element", [(600, 10), (60, 4), (120, 5), (540, 9)], 100, 3, 5, [10, 4, 5, 3], 0, 180),
    ("scale up stabilization, reuse obsolete element", [(6000, 10), (60, 6), (120, 5), (180, 9)], 1, 100, 5, [100, 6, 5, 9], 300, 0),
    ("do not scale up when prenormalized rec goes down", [(6000, 2), (180, 3)], 2, 1, 2, None, 300, 300),
    ("do not scale down when prenormalized rec goes up", [(6000, 2), (180, 1)], 2, 3, 2, None, 300, 300),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "recs", "current", "desired", "expected", "stored", "up_window", "down_window"),
    NORMALIZE_WITH_BEHAVIOR,
    ids=[c[0] for c in NORMALIZE_WITH_BEHAVIOR],
)
def test_normalize_desired_replicas_with_behavior(
    name, recs, current, desired, expected, stored, up_window, down_window
):
    hpa = HPA(
        1,
        1000,
        Behavior(
            ScalingRules(stabilization_window_seconds=up_window),
            ScalingRules(stabilization_window_seconds=down_window),
        ),
    )
    hpa.recommendations = [(NOW - age, r) for age, r in recs]
    assert hpa.stabilize_with_behaviors(NOW, current, desired) == expected
    if stored is not None:
        assert [r for _, r in hpa.recommendations] == stored


# --- legacy path (behavior == nil) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("recs", "desired", "expected", "log_length"),
    [
        ([], 5, 5, 1),  # "empty log"
        ([(120, 4), (60, 5)], 3, 5, 3),  # "stabilize"
        ([(120, 1), (60, 2)], 3, 3, 3),  # "no stabilize"
        ([(600, 10), (540, 9)], 3, 3, 2),  # "no stabilize - old recommendations"
        ([(600, 10), (60, 4), (120, 5), (540, 9)], 3, 5, 4),  # "stabilize - old recommendations"
    ],
)
def test_normalize_desired_replicas_legacy(recs, desired, expected, log_length):
    """TestNormalizeDesiredReplicas (stabilizeRecommendation, 5 min window)."""
    hpa = HPA(1, 100)
    hpa.recommendations = [(NOW - age, r) for age, r in recs]
    assert hpa.stabilize_legacy(NOW, desired) == expected
    assert len(hpa.recommendations) == log_length


@pytest.mark.parametrize(
    ("current", "desired", "lo", "hi", "expected"),
    [(5, 7, 3, 8, 7), (3, 1, 2, 8, 2), (1, 0, 0, 10, 0), (20, 1000, 1, 10, 10), (3, 1000, 1, 2000, 24)],
)
def test_convert_desired_replicas_with_rules(current, desired, lo, hi, expected):
    """TestConvertDesiredReplicasWithRules; the upstream test file sets scaleUpLimitFactor = 8 in init()."""
    assert HPA(lo, hi, scale_up_limit_factor=8).convert_with_rules(current, desired) == expected


def test_legacy_scale_up_limit_is_double_or_four():
    assert HPA(1, 100).convert_with_rules(1, 50) == 4
    assert HPA(1, 100).convert_with_rules(10, 50) == 20


# --- TestStoreScaleEvents -----------------------------------------------------------------------------------

STORE_EVENTS = [
    # name, previous (age s, change), rules, expected change in the last 60 s, stored (change, outdated)
    ("empty entries with default behavior", [], None, 0, []),
    ("empty entries with two-policy-behavior", [], rules(10, 60, 100, 60), 0, [(5, False)]),
    ("one outdated entry untouched without behavior", [(61, 7)], None, 0, [(7, False)]),
    ("one outdated entry replaced with behavior", [(61, 7)], rules(10, 60, 100, 60), 0, [(5, False)]),
    ("one actual entry not touched", [(58, 7)], rules(10, 60, 100, 60), 7, [(7, False), (5, False)]),
    ("two entries, one replaced", [(61, 7), (59, 6)], rules(10, 60), 6, [(5, False), (6, False)]),
    ("replace one entry, policies with different periods", [(29, 8), (59, 6), (61, 7), (61, 9)], rules(10, 60, 100, 30), 14,
     [(8, False), (6, False), (7, True), (5, False)]),
    ("two entries, both actual", [(58, 7), (59, 6)], rules(10, 120, 100, 30), 13, [(7, False), (6, False), (5, False)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "previous", "rule", "change", "stored"), STORE_EVENTS, ids=[c[0] for c in STORE_EVENTS]
)
@pytest.mark.parametrize("direction", ["up", "down"])
def test_store_scale_events(name, previous, rule, change, stored, direction):
    from llm_platform.simulator.controllers.hpa import _change_in_period

    behavior = (
        None
        if rule is None
        else (Behavior(scale_up=rule) if direction == "up" else Behavior(scale_down=rule))
    )
    hpa = HPA(1, 1000, behavior)
    events = [ScaleEvent(c, NOW - age) for age, c in previous]
    if direction == "up":
        hpa.scale_up_events = events
    else:
        hpa.scale_down_events = events
    assert _change_in_period(NOW, 60, events) == change
    hpa.store_scale_event(NOW, 10, 15 if direction == "up" else 5)
    got = hpa.scale_up_events if direction == "up" else hpa.scale_down_events
    assert [(e.replica_change, e.outdated) for e in got] == stored


# --- replica_calculator_test.go: External AverageValue (GetExternalPerPodMetricReplicas) ------------------


@pytest.mark.parametrize(
    ("name", "current", "value", "target", "expected"),
    [
        ("TestReplicaCalcScaleUpPerPodCMExternal", 3, 8.6, 2.15, 4),
        ("TestReplicaCalcScaleDownPerPodCMExternal", 5, 8.6, 2.867, 3),
        ("TestReplicaCalcTolerancePerPodCMExternal", 3, 8.6, 2.9, 3),
    ],
)
def test_external_per_pod_metric_replicas(name, current, value, target, expected):
    assert external_average_value_replicas(current, value, target) == expected


def test_scale_up_per_pod_cm_external():
    """horizontal_test.go TestScaleUpPerPodCMExternal: min 2 max 6, 3 replicas, 8.6 vs AverageValue 2.222 -> 4."""
    assert HPA(2, 6).reconcile(NOW, 3, [(8.6, 2.222)]) == 4


def test_keda_average_value_example():
    """KEDA docs: AverageValue, queue 20, threshold 5 -> 4 replicas whatever the current count."""
    assert external_average_value_replicas(1, 20, 5) == 4
    assert external_average_value_replicas(9, 20, 5) == 4


def test_average_value_of_a_non_additive_metric_is_capped():
    """Research §2.7 pitfall: max(kv usage) with AverageValue 0.85 never asks for more than 2 replicas."""
    assert external_average_value_replicas(8, 0.99, 0.85) == 2


def test_tolerance_uses_status_replicas():
    # 10.5 / (5 * 2) = 1.05 is within tolerance for 2 status replicas -> keep 2; 3 status replicas -> ceil(2.1)
    assert external_average_value_replicas(2, 10.5, 5) == 2
    assert external_average_value_replicas(3, 10.5, 5) == 3


# --- reconcile quirks ---------------------------------------------------------------------------------------


def test_initial_recommendation_blocks_scale_down_for_the_window():
    """recordInitialRecommendation: the first sync remembers the current count (legacy 300 s window)."""
    hpa = HPA(1, 10)
    assert hpa.reconcile(0.0, 6, [(0.0, 5)]) == 6
    assert hpa.reconcile(299.0, 6, [(0.0, 5)]) == 6
    assert hpa.reconcile(301.0, 6, [(0.0, 5)]) == 1


def test_failed_metric_blocks_scale_down_not_scale_up():
    """TestNoScaleDownOneMetricEmpty / TestScaleUpOneMetricEmpty: one metric fails."""
    assert HPA(2, 6).reconcile(NOW, 5, [(2.0, 1.0), (None, 1.0)]) == 5
    assert HPA(2, 6).reconcile(NOW, 3, [(4.0, 1.0), (None, 1.0)]) == 4
    assert HPA(2, 6).reconcile(NOW, 3, [(None, 1.0)]) == 3


def test_max_over_metrics():
    assert HPA(1, 10).reconcile(NOW, 2, [(5.0, 5.0), (30.0, 5.0)]) == 4  # legacy limit max(2*2, 4)


def test_scaling_disabled_at_zero_and_bounds_enforced():
    hpa = HPA(1, 10)
    assert hpa.reconcile(NOW, 0, [(100.0, 1.0)]) == 0
    assert HPA(2, 10).reconcile(NOW, 1, [(0.0, 1.0)]) == 2
    assert HPA(1, 4).reconcile(NOW, 6, [(100.0, 1.0)]) == 4


def test_default_scale_down_window_is_300_with_behavior():
    """A behavior without scaleDown.stabilizationWindowSeconds gets the controller's 300 s."""
    hpa = HPA(1, 10, Behavior(scale_up=ScalingRules(stabilization_window_seconds=0)))
    assert hpa.reconcile(0.0, 4, [(4.0, 1.0)]) == 4
    assert hpa.reconcile(200.0, 4, [(1.0, 1.0)]) == 4
    assert hpa.reconcile(301.0, 4, [(1.0, 1.0)]) == 1
