"""What a simulated day gives (day/engine.py): the strategy's figures, one row of the table and JSON, and the
per-minute timeline."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Result:
    strategy: str
    description: str
    peak_replicas: int
    offpeak_replicas: int
    p95_ttft_ms: float
    slo_violation_pct: float
    gpu_cost_usd_per_day: float  # averaged over the simulated days
    requests: int
    node_hours: float
    minute_rate: np.ndarray = field(repr=False)
    minute_ready: np.ndarray = field(repr=False)
    minute_desired: np.ndarray = field(repr=False)
    minute_p95_ttft_ms: np.ndarray = field(repr=False)
    minute_violation_pct: np.ndarray = field(repr=False)
    p95_itl_ms: float = 0.0
    shed_pct: float = 0.0  # requests the gateway answered 429/503 at least once
    max_replicas: int = 0
    days: float = 1.0
    minute_queue: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    minute_kv_usage: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    minute_p95_itl_ms: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    minute_cost_usd: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)  # cumulative
    per_day: list[dict[str, float]] = field(default_factory=list, repr=False)
    oracle: dict[str, float] = field(default_factory=dict, repr=False)
    minute_ready_max: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)  # most serving
    # scale-direction reversals within 15 minutes of the previous step, per second (controllers/flap.py)
    flaps: int = 0
    served: int = 0  # requests answered with a first token, on any attempt
    failed: int = 0  # requests whose last attempt was shed or timed out (misses)
    timeouts: int = 0  # attempts the client gave up at its timeout
    retries: int = 0  # attempts after the first
    # streams cut by scale-down and rollouts (day/engine.py streams_cut); None without a known grace period
    streams_cut: int | None = None
    # each served stream's (first token, last token) seconds, for the cut count
    stream_spans: tuple[np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.zeros(0), np.zeros(0)), repr=False
    )

    @property
    def cost_vs_oracle(self) -> float | None:
        bound = self.oracle.get("whole_nodes_usd_per_day")
        return self.gpu_cost_usd_per_day / bound if bound else None

    @property
    def client_pct(self) -> dict[str, float]:
        """Attempts timed out, retries and failed requests, per 100 requests offered."""
        counts = {"timeout_pct": self.timeouts, "retry_pct": self.retries, "failed_pct": self.failed}
        return {k: count / self.requests * 100 if self.requests else 0.0 for k, count in counts.items()}

    def row(self) -> dict[str, float | int | str | None]:
        vs = self.cost_vs_oracle
        return {
            "strategy": self.strategy,
            "peak_replicas": self.peak_replicas,
            "offpeak_replicas": self.offpeak_replicas,
            "p95_ttft_ms": round(self.p95_ttft_ms, 1),
            "p95_itl_ms": round(self.p95_itl_ms, 2),
            "slo_violation_pct": round(self.slo_violation_pct, 3),
            "shed_pct": round(self.shed_pct, 3),
            **{k: round(v, 3) for k, v in self.client_pct.items()},
            "flaps": self.flaps,
            "streams_cut": self.streams_cut,
            "gpu_cost_usd_per_day": round(self.gpu_cost_usd_per_day, 2),
            "oracle_usd_per_day": round(self.oracle["whole_nodes_usd_per_day"], 2) if self.oracle else None,
            "oracle_per_second_usd_per_day": (
                round(self.oracle["per_second_usd_per_day"], 2) if self.oracle else None
            ),
            "cost_vs_oracle": None if vs is None else round(vs, 3),
        }

    def timeline(self) -> list[dict[str, float]]:
        """Per-minute series (the JSON timeline and the plot)."""
        keys = (
            ("rate_rps", self.minute_rate), ("desired_replicas", self.minute_desired),
            ("ready_replicas", self.minute_ready), ("queue_depth", self.minute_queue),
            ("kv_cache_usage", self.minute_kv_usage), ("p95_ttft_ms", self.minute_p95_ttft_ms),
            ("p95_itl_ms", self.minute_p95_itl_ms), ("slo_violation_pct", self.minute_violation_pct),
            ("cumulative_cost_usd", self.minute_cost_usd),
        )  # fmt: skip
        n = len(self.minute_rate)
        return [{"minute": m, **{k: round(float(v[m]), 4) for k, v in keys if len(v) == n}} for m in range(n)]
