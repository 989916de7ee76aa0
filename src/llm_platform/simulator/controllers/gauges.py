"""A gauge trigger's average as Prometheus evaluates it (plan/promql.py `smoothed`):
`avg_over_time((sum(gauge))[window:step])` from the engine's scrapes, with the window and step of the plan's
`Smoothing`, so the simulator averages what the rendered trigger averages.

Prometheus evaluates the subquery's inner `sum` at every instant that is a multiple of `step_s` inside
(now - window_s, now]; each reads the newest scrape at or before it, or nothing once the pods that exported it
are gone (a scrape with no Ready pod: their series went stale). `avg_over_time` averages the instants that read
something; none at all is an empty result, which the trigger's `until_a_replica_serves` turns into 0 (no
replica is available then). The value is computed when KEDA queries, at the query's own instant.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from llm_platform.plan.scaling import Smoothing


def key(metric: str, smoothing: Smoothing) -> str:
    """The name the engine serves the smoothed value of scraped `metric` under."""
    return f"avg_over_time({metric}[{smoothing.window_s}s:{smoothing.step_s}s])"


@dataclass
class SmoothedGauge:
    metric: str  # the engine's scraped sum it averages ("waiting_sum", "kv_sum")
    smoothing: Smoothing
    # (scrape time, the sum it read, or None with no Ready pod), oldest first
    scrapes: deque[tuple[float, float | None]] = field(default_factory=deque)
    # the last answer and the subquery's newest instant it was for: with a window of whole steps the instants
    # averaged are the newest one's and the ones before it, so the answer changes only with the newest instant
    # or a new scrape (KEDA's poll and the HPA's sync ask at several moments of one step)
    _answer: tuple[float, float | None] | None = field(default=None, repr=False)

    def observe(self, now: float, value: float | None) -> None:
        self.scrapes.append((now, value))
        self._answer = None
        # keep the newest scrape at or before the window's first instant: it is what that instant reads
        start = now - self.smoothing.window_s
        while len(self.scrapes) > 1 and self.scrapes[1][0] <= start:
            self.scrapes.popleft()

    def value(self, now: float) -> float | None:
        """The average over the window's instants that read a series; None when none did."""
        step, window = self.smoothing.step_s, self.smoothing.window_s
        instant = math.floor(now / step) * step
        whole_steps = window % step == 0
        if whole_steps and self._answer is not None and self._answer[0] == instant:
            return self._answer[1]
        answer = self._average(instant, now)
        self._answer = (instant, answer) if whole_steps else None
        return answer

    def _average(self, instant: float, now: float) -> float | None:
        step, window = self.smoothing.step_s, self.smoothing.window_s
        read: list[float] = []
        newest = len(self.scrapes) - 1
        while instant > now - window:
            while newest >= 0 and self.scrapes[newest][0] > instant:
                newest -= 1
            if newest < 0:
                break
            value = self.scrapes[newest][1]
            if value is not None:
                read.append(value)
            instant -= step
        return sum(read) / len(read) if read else None
