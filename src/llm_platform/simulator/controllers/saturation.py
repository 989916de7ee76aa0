"""The saturation hold as Prometheus evaluates it (plan/promql.py `saturation_hold`): the requests completed per
second now over what one replica completed per second at the latest subquery step, within the memory window,
at which the pool asked to grow (at least the queue target waiting per available replica, or the KV fill per
available replica past its target x (1 + the HPA's tolerance)); 0 when there was none.

Prometheus evaluates the subquery's inner expression at every `step_s`-aligned instant from the latest scrape;
`last_over_time` keeps the newest sample inside the window. The engine calls `observe` after every scrape and
reads `value` into the scraped metrics, so the trigger reads it as it reads the others (the latest scrape).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_platform.plan.scaling import SaturationMemory


@dataclass
class SaturationHold:
    memory: SaturationMemory
    last: tuple[float, float] | None = None  # (time, requests/s per available replica) of the newest sample
    next_step: float = 0.0

    def observe(
        self, now: float, waiting: float, kv: float, served_rate: float, available: int, serving: float
    ) -> None:
        """The subquery steps up to `now`, each on the latest scrape (this one); `serving` is the replicas
        available on average over the window `served_rate` is rated over."""
        if now < self.next_step:
            return
        self.next_step = (now // self.memory.step_s + 1) * self.memory.step_s
        per_replica = served_rate / serving if serving > 0 else 0.0
        m = self.memory
        saturated = waiting >= m.queue_per_replica * available
        kv_past = kv > m.kv_per_replica * (1 + m.tolerance) * available
        if available and per_replica > 0 and (saturated or kv_past):
            self.last = (now, per_replica)

    def value(self, now: float, served_rate: float) -> float:
        """served / the remembered per-replica rate, or 0 (`or on() vector(0)`) once the memory is empty."""
        if self.last is None or self.last[0] <= now - self.memory.window_s:
            return 0.0
        return served_rate / self.last[1]
