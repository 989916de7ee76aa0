"""A model's cold-start budget as the plan carries it: pod-needs-a-GPU to pod-Ready on a new node and on a
warm one, and the startup probe sized from it. `plan/model.py` resolves it (`cold_start_budget`) from the facts
(facts/cold_start.py); the from-zero hold (plan/zero.py), the renderers and the simulator read it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_platform.facts.cold_start import ColdStart

# the startup probe's period; it allows three times the expected warm-node start before a restart
STARTUP_PROBE_PERIOD_SECONDS = 10
# a model the profile catalog does not know: assume a 70B-class start (weights, engine warm-up) on a warm node
UNKNOWN_MODEL_START_SECONDS = 600.0


@dataclass(frozen=True)
class ColdStartBudget:
    """Pod-needs-a-GPU to pod-Ready, on a new node and on a warm one (facts/cold_start.py's phases)."""

    new_node: ColdStart | None  # None when the model's geometry is unknown
    warm_node: ColdStart | None
    weights_gb: float | None

    @property
    def warm_node_seconds(self) -> float:
        return self.warm_node.total if self.warm_node is not None else UNKNOWN_MODEL_START_SECONDS

    @property
    def startup_failure_threshold(self) -> int:
        """Allow three times the expected warm-node start (weights, engine warm-up) before restarting."""
        return max(30, math.ceil(3 * self.warm_node_seconds / STARTUP_PROBE_PERIOD_SECONDS))

    @property
    def startup_probe_seconds(self) -> int:
        return self.startup_failure_threshold * STARTUP_PROBE_PERIOD_SECONDS
