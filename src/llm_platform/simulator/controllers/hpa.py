"""The Kubernetes HPA controller's replica decision, re-implemented from its source (not a model of it).

Follows kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go (reconcileAutoscaler,
computeReplicasForMetrics, normalizeDesiredReplicas[WithBehaviors], stabilizeRecommendation[WithBehaviors],
convertDesiredReplicasWithBehaviorRate, calculateScale{Up,Down}Limit*, storeScaleEvent) and
replica_calculator.go (GetExternalPerPodMetricReplicas, calcPlainMetricReplicas), as summarised in
shared/research/autoscaling_sim.md §1. Quirks kept on purpose because they change outcomes:
- the first reconcile records the current replica count as a recommendation (recordInitialRecommendation),
  so a fresh HPA will not scale down for one down-stabilization window;
- recommendations and scale events are reused in place (an outdated slot is overwritten, not appended);
- a failed metric blocks scale-down but not scale-up; at 0 replicas (min > 0) the HPA does nothing;
- External AverageValue uses the *status* replica count for the tolerance test and ignores readiness;
- quantities are milli-units (KEDA's GenerateMetricInMili truncates value*1000).
Time is seconds (float); "within the window" is strictly newer than now - window, as in Go's After().
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from llm_platform.config.schema import ScalingPolicy, ScalingRules
from llm_platform.plan.promql import HPA_SYNC_PERIOD_SECONDS

SYNC_PERIOD_SECONDS = float(HPA_SYNC_PERIOD_SECONDS)  # --horizontal-pod-autoscaler-sync-period default
DOWNSCALE_STABILIZATION_SECONDS = 300  # --horizontal-pod-autoscaler-downscale-stabilization default
SCALE_UP_LIMIT_FACTOR = 2.0  # legacy (behavior == nil) path: max(2 x current, 4)
SCALE_UP_LIMIT_MINIMUM = 4.0


@dataclass(frozen=True)
class Behavior:
    """The HPA's `behavior`: the stack schema's rules per direction; None or an unset field takes the default."""

    scale_up: ScalingRules | None = None
    scale_down: ScalingRules | None = None


def default_scale_up(rules: ScalingRules | None) -> ScalingRules:
    """GenerateHPAScaleUpRules: window 0, Max of 4 Pods / 100% per 15 s."""
    rules = rules or ScalingRules()
    return ScalingRules(
        stabilization_window_seconds=0
        if rules.stabilization_window_seconds is None
        else rules.stabilization_window_seconds,
        select_policy=rules.select_policy or "Max",
        policies=rules.policies
        if rules.policies is not None
        else [
            ScalingPolicy(type="Pods", value=4, period_seconds=15),
            ScalingPolicy(type="Percent", value=100, period_seconds=15),
        ],
    )


def default_scale_down(
    rules: ScalingRules | None, window: int = DOWNSCALE_STABILIZATION_SECONDS
) -> ScalingRules:
    """GenerateHPAScaleDownRules + maybeInitScaleDownStabilizationWindow: window 300 s, 100% per 15 s."""
    rules = rules or ScalingRules()
    return ScalingRules(
        stabilization_window_seconds=window
        if rules.stabilization_window_seconds is None
        else rules.stabilization_window_seconds,
        select_policy=rules.select_policy or "Max",
        policies=rules.policies
        if rules.policies is not None
        else [ScalingPolicy(type="Percent", value=100, period_seconds=15)],
    )


@dataclass
class ScaleEvent:
    replica_change: int
    timestamp: float
    outdated: bool = False


def milli(value: float) -> int:
    """resource.NewMilliQuantity(int64(value*1000)): KEDA and the HPA exchange milli-units, truncated."""
    return int(value * 1000)


def is_within_tolerance(ratio: float, tolerance: float) -> bool:
    return (1 - tolerance) <= ratio <= (1 + tolerance)


def external_average_value_replicas(
    status_replicas: int, value: float, target_average_value: float, tolerance: float = 0.1
) -> int:
    """GetExternalPerPodMetricReplicas: ceil(total / target) unless total/(target*status) is within tolerance."""
    usage, target = milli(value), milli(target_average_value)
    if status_replicas > 0 and is_within_tolerance(usage / (target * status_replicas), tolerance):
        return status_replicas
    return math.ceil(usage / target)


def pods_average_value_replicas(
    ready_values: Sequence[float],
    unready: int,
    missing: int,
    target_average_value: float,
    current_replicas: int,
    tolerance: float = 0.1,
) -> int:
    """calcPlainMetricReplicas for a Pods AverageValue metric (e.g. DCGM framebuffer % per pod).

    ready_values: per-pod metric of ready pods; unready: Pending pods (0 on scale-up, ignored on scale-down);
    missing: running pods without a sample (target on scale-down, 0 on scale-up).
    """
    target = milli(target_average_value)
    values = [milli(v) for v in ready_values]
    if not values:
        return current_replicas
    ratio = sum(values) / (target * len(values))
    if missing == 0 and not (unready > 0 and ratio > 1.0):
        return current_replicas if is_within_tolerance(ratio, tolerance) else math.ceil(ratio * len(values))
    n = len(values)
    total = sum(values)
    if missing:
        total += (target if ratio < 1.0 else 0) * missing
        n += missing
    if ratio > 1.0 and unready:
        n += unready
    new_ratio = total / (target * n)
    if is_within_tolerance(new_ratio, tolerance) or (ratio > 1.0) != (new_ratio > 1.0):
        return current_replicas
    desired = math.ceil(new_ratio * n)
    if (new_ratio < 1.0 and desired > current_replicas) or (new_ratio > 1.0 and desired < current_replicas):
        return current_replicas
    return desired


@dataclass
class HPA:
    """One HorizontalPodAutoscaler's controller state; `reconcile` is one sync of reconcileAutoscaler."""

    min_replicas: int
    max_replicas: int
    behavior: Behavior | None = None
    tolerance: float = 0.1
    downscale_stabilization_seconds: int = DOWNSCALE_STABILIZATION_SECONDS
    scale_up_limit_factor: float = SCALE_UP_LIMIT_FACTOR
    scale_up_limit_minimum: float = SCALE_UP_LIMIT_MINIMUM
    recommendations: list[tuple[float, int]] | None = None  # (timestamp, replicas); None = never seen
    scale_up_events: list[ScaleEvent] = field(default_factory=list)
    scale_down_events: list[ScaleEvent] = field(default_factory=list)

    @property
    def scale_up_rules(self) -> ScalingRules:
        return default_scale_up(self.behavior.scale_up if self.behavior else None)

    @property
    def scale_down_rules(self) -> ScalingRules:
        rules = self.behavior.scale_down if self.behavior else None
        return default_scale_down(rules, self.downscale_stabilization_seconds)

    def reconcile(
        self,
        now: float,
        current_replicas: int,
        metrics: Sequence[tuple[float | None, float]],
        status_replicas: int | None = None,
    ) -> int:
        """Replica count the controller sets, from External AverageValue (value, target) pairs.

        A None value is a failed metric (e.g. the Prometheus query errored and KEDA has no fallback).
        """
        status = current_replicas if status_replicas is None else status_replicas
        proposals = [
            None if value is None else external_average_value_replicas(status, value, target, self.tolerance)
            for value, target in metrics
        ]
        return self.reconcile_proposals(now, current_replicas, proposals)

    def reconcile_proposals(self, now: float, current_replicas: int, proposals: Sequence[int | None]) -> int:
        """reconcileAutoscaler from per-metric replica proposals (None = that metric failed)."""
        if self.recommendations is None:  # recordInitialRecommendation
            self.recommendations = [(now, current_replicas)]
        if current_replicas == 0 and self.min_replicas != 0:
            return 0  # ScalingDisabled
        if current_replicas > self.max_replicas:
            desired = self.max_replicas
        elif current_replicas < self.min_replicas:
            desired = self.min_replicas
        else:
            valid = [p for p in proposals if p is not None]
            invalid = len(proposals) - len(valid)
            desired = max([0, *valid])
            if invalid >= len(proposals) or (invalid > 0 and desired < current_replicas):
                return current_replicas  # computeReplicasForMetrics returns -1: no rescale
            if self.behavior is None:
                desired = self._normalize_legacy(now, current_replicas, desired)
            else:
                desired = self.normalize_with_behaviors(now, current_replicas, desired)
        if desired != current_replicas:
            self.store_scale_event(now, current_replicas, desired)
        return desired

    # --- legacy path (behavior == nil): what KEDA creates when a ScaledObject sets no behavior -------------

    def _normalize_legacy(self, now: float, current: int, desired: int) -> int:
        stabilized = self.stabilize_legacy(now, desired)
        return self.convert_with_rules(current, stabilized)

    def stabilize_legacy(self, now: float, desired: int) -> int:
        """stabilizeRecommendation: max of recommendations newer than the downscale window."""
        recs = self._recs()
        cutoff = now - self.downscale_stabilization_seconds
        best, old = desired, None
        for i, (ts, rec) in enumerate(recs):
            if ts < cutoff:
                old = i
            elif rec > best:
                best = rec
        self._record(old, now, desired)
        return best

    def convert_with_rules(self, current: int, desired: int) -> int:
        """convertDesiredReplicasWithRules: [min, min(max, max(2*current, 4))]."""
        limit = int(max(self.scale_up_limit_factor * current, self.scale_up_limit_minimum))
        maximum = min(self.max_replicas, limit)
        if desired < self.min_replicas:
            return self.min_replicas
        return min(desired, maximum)

    # --- behavior path ------------------------------------------------------------------------------------

    def normalize_with_behaviors(self, now: float, current: int, desired: int) -> int:
        stabilized = self.stabilize_with_behaviors(now, current, desired)
        return self.convert_with_behavior_rate(now, current, stabilized)

    def stabilize_with_behaviors(self, now: float, current: int, desired: int) -> int:
        """Scale-up follows the lowest recent recommendation, scale-down the highest (stabilizeRecommendationWithBehaviors)."""
        recs = self._recs()
        up_cutoff = now - (self.scale_up_rules.stabilization_window_seconds or 0)
        down_cutoff = now - (self.scale_down_rules.stabilization_window_seconds or 0)
        up, down, old = desired, desired, None
        for i, (ts, rec) in enumerate(recs):
            if ts > up_cutoff:
                up = min(rec, up)
            if ts > down_cutoff:
                down = max(rec, down)
            if ts < up_cutoff and ts < down_cutoff:
                old = i
        recommendation = max(current, up)
        recommendation = min(recommendation, down)
        self._record(old, now, desired)
        return recommendation

    def convert_with_behavior_rate(self, now: float, current: int, desired: int) -> int:
        """convertDesiredReplicasWithBehaviorRate: Pods/Percent policies per period, selectPolicy, min/max."""
        if desired > current:
            limit = max(self.scale_up_limit(now, current), current)
            return min(desired, min(self.max_replicas, limit))
        if desired < current:
            limit = min(self.scale_down_limit(now, current), current)
            return max(desired, max(self.min_replicas, limit))
        return desired

    def _period_start(self, now: float, period_seconds: int, current: int) -> int:
        """Replicas at the start of a policy's period: current minus net changes made within it."""
        return (
            current
            - _change_in_period(now, period_seconds, self.scale_up_events)
            + _change_in_period(now, period_seconds, self.scale_down_events)
        )

    def scale_up_limit(self, now: float, current: int) -> int:
        rules = self.scale_up_rules
        if rules.select_policy == "Disabled":
            return current
        pick = min if rules.select_policy == "Min" else max
        result: int | None = None
        for policy in rules.policies or ():
            start = self._period_start(now, policy.period_seconds, current)
            if policy.type == "Pods":
                proposed = start + policy.value
            else:
                proposed = math.ceil(start * (1 + policy.value / 100))
            result = proposed if result is None else pick(result, proposed)
        return current if result is None else result

    def scale_down_limit(self, now: float, current: int) -> int:
        rules = self.scale_down_rules
        if rules.select_policy == "Disabled":
            return current
        pick = max if rules.select_policy == "Min" else min
        result: int | None = None
        for policy in rules.policies or ():
            start = self._period_start(now, policy.period_seconds, current)
            if policy.type == "Pods":
                proposed = start - policy.value
            else:
                proposed = int(start * (1 - policy.value / 100))  # Go int32() truncation
            result = proposed if result is None else pick(result, proposed)
        return current if result is None else result

    def store_scale_event(self, now: float, previous: int, new: int) -> None:
        """storeScaleEvent: only with a behavior; reuse the last outdated slot of the direction's history."""
        if self.behavior is None:
            return
        up = new > previous
        rules = self.scale_up_rules if up else self.scale_down_rules
        events = self.scale_up_events if up else self.scale_down_events
        longest = max((p.period_seconds for p in rules.policies or ()), default=0)
        cutoff = now - longest
        old = None
        for i, event in enumerate(events):
            if event.timestamp < cutoff:
                event.outdated = True
            if event.outdated:
                old = i
        event = ScaleEvent(abs(new - previous), now)
        if old is None:
            events.append(event)
        else:
            events[old] = event

    def _recs(self) -> list[tuple[float, int]]:
        if self.recommendations is None:
            self.recommendations = []
        return self.recommendations

    def _record(self, old: int | None, now: float, desired: int) -> None:
        recs = self._recs()
        if old is None:
            recs.append((now, desired))
        else:
            recs[old] = (now, desired)


def _change_in_period(now: float, period_seconds: int, events: Sequence[ScaleEvent]) -> int:
    """getReplicasChangePerPeriod: replicas changed by events strictly newer than now - period."""
    cutoff = now - period_seconds
    return sum(e.replica_change for e in events if e.timestamp > cutoff)
