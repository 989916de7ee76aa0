"""Overload as it happens: one replica behind the gateway, request by request, when arrivals outrun it.

The steady-state replica model (serving/replica.py) says what a replica does at a rate it can serve. Past its
saturation rate mu, what clients get depends on what the engine, the gateway and the clients do with the queue:

- The engine. vLLM queues every request it is sent (the scheduler's `waiting` queue has no bound) and admits
  them FCFS as running slots free. Here a replica has c = mu x S(mu) slots, S(lam) = TTFT + (o - 1) x ITL the
  engine time of a request at rate lam (the table's), so a full replica completes mu requests/s and, below
  that, a request's engine time is the table's at the rate the occupancy it finds implies.
- KV preemption with recompute. When a running request cannot get a KV block, vLLM V1 preempts the newest
  running request (`preempted_req = self.running.pop()` under FCFS), frees its blocks and resets it for
  recompute (`_preempt_request`: `num_computed_tokens = 0`, back to the head of `waiting`), and admits no
  waiting request in a step that preempted (vllm-project/vllm@00024d3:vllm/v1/core/sched/scheduler.py,
  `schedule()`). With a queue, the scheduler fills the p + o tokens a completion frees with new prompts of p
  tokens, then decode growth evicts the newest again: ~o/p preemptions per completion, each recomputing about
  a prompt, so every request served by a full cache pays ~o recomputed tokens (ReplicaTable.recompute_tokens),
  which is what lowers a KV-bound replica's mu. Counted here for each request admitted while the replica is full.
- The client's timeout, per attempt. `total` is aiohttp's ClientTimeout(total=...): to the last token
  (`vllm bench serve`: 6 h, benchmarks' backend_request_func AIOHTTP_TIMEOUT). `first-token` is an httpx read
  timeout of a streaming client: no byte before the first token (the OpenAI SDK: 600 s). A request still queued
  at its deadline leaves; one running is aborted when its client disconnects (vLLM's `with_cancellation`,
  vllm/entrypoints/utils.py) and the engine time it used is lost.
- The gateway. Envoy's local rate limit is a token bucket of `requests` tokens refilled every `unit` (here one
  second; BackendTrafficPolicy.rateLimit.local, /work/shared/reference/GATEWAY.md): beyond it a 429 at once.
  Envoy's circuit breaker bounds the requests in flight to the backend (max_connections + max_pending_requests,
  1024 each by default, envoy.config.cluster.v3.CircuitBreakers.Thresholds): beyond it a 503 at once.
- Retries. A failed attempt (timeout, 429, 503) is sent again after min(backoff x 2^k, max_backoff) x
  (1 - 0.25 u), u uniform, up to `max_attempts` (openai/openai-python src/openai/_constants.py:
  INITIAL_RETRY_DELAY 0.5, MAX_RETRY_DELAY 8.0, DEFAULT_MAX_RETRIES 2; `_base_client` retries 408/409/429/5xx
  and timeouts). A request fails when its last attempt does.

Goodput counts successful requests only: requests/s and output tokens/s over the run's duration (first arrival
to the last answer, as `vllm bench serve` reports them).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from llm_platform.plan.zero import RETRY_ATTEMPTS
from llm_platform.simulator.serving.replica import ReplicaTable

BENCH_TIMEOUT_S = 6 * 60 * 60  # vllm benchmarks/backend_request_func.py AIOHTTP_TIMEOUT
OPENAI_TIMEOUT_S = 600.0  # openai-python DEFAULT_TIMEOUT (httpx read timeout)
ENVOY_MAX_IN_FLIGHT = 2048  # Envoy circuit breaker defaults: max_connections 1024 + max_pending_requests 1024
JITTER = 0.25  # openai-python `_calculate_retry_timeout`: the backoff times 1 - 0.25 x random()


@dataclass(frozen=True)
class Client:
    timeout_s: float = BENCH_TIMEOUT_S
    timeout_on: Literal["total", "first-token"] = "total"
    max_attempts: int = 1
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.max_attempts < 1 or self.backoff_s < 0:
            raise ValueError(
                f"client timeout {self.timeout_s}, attempts {self.max_attempts}, backoff {self.backoff_s}; "
                "allowed: timeout > 0, attempts >= 1, backoff >= 0"
            )

    def backoff(self, k: int) -> float:
        """The sleep after failed attempt k (0 the first send), before its jitter."""
        return min(self.backoff_s * 2**k, self.max_backoff_s)


VLLM_BENCH = Client()  # `vllm bench serve`: one attempt, 6 h total timeout
OPENAI_SDK = Client(OPENAI_TIMEOUT_S, "first-token", RETRY_ATTEMPTS)  # streaming openai-python defaults


@dataclass(frozen=True)
class Gateway:
    rate_limit_rps: int | None = None  # Envoy local rate limit (requests per second): 429 beyond it
    max_in_flight: int | None = None  # Envoy circuit breaker on requests in flight to the replica: 503


DIRECT = Gateway()  # a benchmark client talking to vLLM itself


@dataclass(frozen=True)
class Outcome:
    requests: int
    succeeded: int
    timed_out: int  # attempts that hit the client's timeout (queued or running)
    aborted_running: int  # of those, aborted after admission: their engine time was lost
    rate_limited: int  # 429 answers
    overflowed: int  # 503 answers
    attempts: int
    duration_s: float
    output_tokens: float  # of successful requests
    ttft_s: np.ndarray  # of successful requests, queue wait included
    peak_waiting: int
    preemptions: float
    recompute_tokens: float
    saturation_rps: float

    @property
    def failed(self) -> int:
        return self.requests - self.succeeded

    @property
    def retries(self) -> int:
        return self.attempts - self.requests

    @property
    def goodput_rps(self) -> float:
        return self.succeeded / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def overloaded(self) -> bool:
        """Requests failed: what a benchmark reports as failed requests, a user as errors."""
        return self.failed > 0


def arrival_times(requests: int, rate: float, process: str, rng: np.random.Generator) -> np.ndarray:
    """`vllm bench serve --request-rate`: inf sends all at once; poisson draws exponential gaps; constant
    spaces them 1/rate apart (the first request at 0)."""
    if math.isinf(rate):
        return np.zeros(requests)
    if process == "constant":
        return np.arange(requests) / rate
    gaps = rng.exponential(1 / rate, max(requests - 1, 0))
    return np.concatenate([[0.0], np.cumsum(gaps)])


@dataclass(frozen=True)
class _Engine:
    """The table's engine as a function of occupancy (module doc): a request holds a running slot from the
    start of its prefill to its last token; prompts are prefilled one after another (chunked prefill takes the
    waiting prompts FCFS into each step's token budget), each taking its own prefill time at that load."""

    lam: np.ndarray
    fixed: np.ndarray  # API-server overhead + the residual of the step in flight
    prefill: np.ndarray  # own prefill of the mean prompt, sharing steps with the decoders
    batched: np.ndarray  # its share of a step when a backlog fills every step's budget with prompt chunks
    itl: np.ndarray
    occupancy: np.ndarray  # requests holding a slot at each rate: lam x (prefill + (o - 1) x ITL)
    slots: int

    @classmethod
    def of(cls, table: ReplicaTable) -> _Engine:
        lam = np.linspace(0.0, table.capacity_rps, 65)
        s = table.at(lam)
        fixed = table.host_wait_seconds(s)
        prefill = table.prefill_seconds(np.full(len(lam), table.stats.mean_input), s)
        m = table.model
        p = table.stats.mean_input * (1 - m.engine.prefix_hit_rate)
        step = s["fixed"] + m.linear_seconds(s["chunk"] + s["decoders"])
        batched = np.minimum(prefill, p / s["chunk"] * step) if m.engine.chunked_prefill else prefill
        occupancy = lam * (prefill + (table.stats.mean_output - 1) * s["itl"])
        slots = max(1, round(float(occupancy[-1])))
        return cls(lam, fixed, prefill, batched, s["itl"], occupancy, slots)

    def at(self, in_engine: int, busy: bool) -> tuple[float, float, float]:
        """(fixed, prefill, ITL) for a request starting with `in_engine` requests holding slots (itself too);
        `busy`: the slots are full or prompts are backed up, so the engine runs as at saturation."""
        if busy:
            return float(self.fixed[-1]), float(self.batched[-1]), float(self.itl[-1])
        lam = float(np.interp(in_engine, self.occupancy, self.lam))
        fixed, prefill, itl = (
            float(np.interp(lam, self.lam, y)) for y in (self.fixed, self.prefill, self.itl)
        )
        return fixed, prefill, itl


def simulate(
    table: ReplicaTable,
    arrivals: np.ndarray,
    output_tokens: np.ndarray,
    client: Client = VLLM_BENCH,
    gateway: Gateway = DIRECT,
    seed: int = 0,
) -> Outcome:
    """Run the requests arriving at `arrivals` (seconds) through the gateway and one replica (module doc).

    why long: one discrete-event loop; every branch of an attempt (rate-limited, over the in-flight cap,
    timed out in the queue, aborted, served) reads and updates the same heaps and counters, which split
    into functions would pass a dozen values in and out of each."""
    engine = _Engine.of(table)
    rng = np.random.default_rng(seed)
    outputs = np.resize(np.asarray(output_tokens, dtype=np.float64), len(arrivals))
    pending: list[tuple[float, int, int]] = [(float(t), i, 0) for i, t in enumerate(arrivals)]
    heapq.heapify(pending)
    slots = [0.0] * engine.slots  # when each running slot frees (FCFS: the earliest goes to the next request)
    in_flight: list[float] = []  # when each accepted attempt leaves the replica (answered or given up)
    queued: list[float] = []  # when each queued attempt leaves the queue (admitted or given up)
    window, tokens, prefilling = -1, 0, 0.0  # prefilling: when the prefill of the last prompt started ends
    succeeded = timed_out = aborted = limited = overflowed = attempts = peak = 0
    produced = preemptions = recompute = 0.0
    first_tokens: list[float] = []
    end = float(arrivals.min()) if len(arrivals) else 0.0
    start = end
    while pending:
        t, i, k = heapq.heappop(pending)
        attempts += 1
        failed_at: float | None = None
        while in_flight and in_flight[0] <= t:
            heapq.heappop(in_flight)
        while queued and queued[0] <= t:
            heapq.heappop(queued)
        if gateway.rate_limit_rps is not None and math.floor(t) != window:
            window, tokens = math.floor(t), gateway.rate_limit_rps  # the bucket refills every second
        if gateway.rate_limit_rps is not None and tokens <= 0:
            limited += 1
            failed_at = t
        elif gateway.max_in_flight is not None and len(in_flight) >= gateway.max_in_flight:
            overflowed += 1
            failed_at = t
        else:
            tokens -= 1
            deadline = t + client.timeout_s
            admit = max(t, slots[0], prefilling)
            full = slots[0] > t
            busy = full or prefilling > t + float(engine.prefill[-1])  # a backlog of prompts
            if admit >= deadline:  # still queued when the client gives up
                timed_out += 1
                failed_at = deadline
                heapq.heappush(queued, deadline)
                heapq.heappush(in_flight, deadline)
            else:
                fixed, prefill, itl = engine.at(len(in_flight) - len(queued) + 1, busy)
                prefilling = admit + prefill
                ttft = fixed + prefill
                done = admit + ttft + (outputs[i] - 1) * itl
                reached = admit + ttft if client.timeout_on == "first-token" else done
                if full and table.kv_bound:
                    preemptions += table.preemptions_per_request
                    recompute += table.recompute_tokens
                if reached > deadline:  # aborted on disconnect: the slot is held until then, the work lost
                    timed_out += 1
                    aborted += 1
                    failed_at = done = deadline
                    prefilling = min(prefilling, deadline)
                else:
                    succeeded += 1
                    produced += outputs[i]
                    first_tokens.append(admit + ttft - t)
                heapq.heapreplace(slots, done)
                heapq.heappush(in_flight, done)
                if admit > t:  # waited for a running slot or for the prompts ahead to be prefilled
                    heapq.heappush(queued, admit)
                end = max(end, done)
            peak = max(peak, len(queued))
        if failed_at is not None:
            end = max(end, failed_at)
            if k + 1 < client.max_attempts:
                delay = client.backoff(k) * (1 - JITTER * rng.random())
                heapq.heappush(pending, (failed_at + delay, i, k + 1))
    return Outcome(
        len(arrivals), succeeded, timed_out, aborted, limited, overflowed, attempts, end - start, produced,
        np.array(first_tokens), peak, preemptions, recompute, table.capacity_rps,
    )  # fmt: skip
