"""One simulated day: traffic -> replicas (serving model) -> Prometheus -> KEDA/HPA -> pods/nodes -> cost.

The loop runs at 1 s. Serving is fluid at that scale: the Ready replicas admit up to N x capacity requests/s
(vLLM's work-conserving batching, load spread over Ready pods), the excess waits FIFO in
`num_requests_waiting`. Below saturation each replica is at the steady state of its per-replica rate
(simulator/serving/replica.py); the replica's internal dynamics (sub-second) are much faster than traffic and
control (15 s and up). Per-request TTFT = fluid queue wait + sampled in-replica TTFT; ITL = the steady
ITL of the second it was admitted; a request misses the SLO if either exceeds the model's SLO.
Controllers run at their own clocks: Prometheus scrapes every `scrape_interval` (vLLM's metrics of Ready pods
only; the gateway's pickers' whether a pod exists or not), KEDA's executor every pollingInterval, the HPA every
15 s with a random phase.

Behind the gateway (`SimConfig.flow_control`, the plan's figures) the queue is bounded as the endpoint
picker bounds it: vLLM's own waiting stays at most Q per Ready pod (what the queue trigger reads), the picker
holds the rest up to its bound, and a request that would be held longer than the TTL is shed on arrival (429,
a miss; in the picker it is shed after the TTL, when it has missed any TTFT objective already). With no Ready
pod the picker holds requests up to its bound (llm-d router v0.10.0: an empty pool is saturated, its queue a
scale-from-zero waiting room) and they are served when a pod is Ready; what is still in the picker at its TTL
gets a 503, and what arrives past the bound a 503 at once (day/clients.py). The gateway counts arrivals as
dispatched (entering service) plus shed and evicted.

Streams cut (`Result.streams_cut`): when the ReplicaSet deletes a Ready pod (a scale-down) the pod holds its
share (1 / Ready pods) of the streams in flight that second; one of them is cut if it would still be generating
`SimConfig.drain_grace_seconds` later (the pods' terminationGracePeriodSeconds, plan/drain.py), when the kubelet
kills vLLM. `SimConfig.rollouts` adds rollouts: at each of those seconds every Ready pod is replaced once.

Clients (`SimConfig.client`, the OpenAI SDK's by default: day/clients.py) give up on a request still queued at
their timeout and send a timed-out or shed attempt again after their backoff: the retries are arrivals too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from llm_platform.config.schema import Slo
from llm_platform.plan.gateway import FlowControlPlan
from llm_platform.plan.promql import THROUGHPUT_WINDOW_SECONDS
from llm_platform.simulator.controllers.cron import active_minutes, placeholder_targets
from llm_platform.simulator.controllers.flap import FLAP_WINDOW_MINUTES, flap_count
from llm_platform.simulator.controllers.gauges import SmoothedGauge
from llm_platform.simulator.controllers.hpa import HPA, SYNC_PERIOD_SECONDS, pods_average_value_replicas
from llm_platform.simulator.controllers.keda import CronTrigger, Keda, PrometheusTrigger
from llm_platform.simulator.controllers.saturation import SaturationHold
from llm_platform.simulator.controllers.strategies import Strategy
from llm_platform.simulator.day.clients import Retries, Seconds, fates
from llm_platform.simulator.day.result import Result
from llm_platform.simulator.serving.capacity import Cluster
from llm_platform.simulator.serving.capacity_config import CapacityConfig
from llm_platform.simulator.serving.overload import OPENAI_SDK, Client
from llm_platform.simulator.serving.replica import ReplicaTable
from llm_platform.simulator.serving.replica_config import KV_BLOCK_TOKENS
from llm_platform.simulator.traffic.traffic import Traffic

# pending pods are tried again this often (Karpenter's batching window, the scheduler's backoff)
RETRY_SECONDS = 10


@dataclass(frozen=True)
class SimConfig:
    capacity: CapacityConfig
    slo: Slo
    scrape_interval: int = 15
    day_start_utc: datetime = datetime(2026, 9, 15, tzinfo=UTC)  # a Tuesday: weekday cron windows apply
    prometheus_outages: tuple[tuple[float, float], ...] = ()  # [start, end) seconds: queries fail
    seed: int = 0
    # fewest replicas the stack may run (config.schema.replica_floor): the oracle bound never goes below it
    replica_floor: int = 1
    flow_control: FlowControlPlan | None = None  # the gateway's bounded queue in front of the model
    client: Client = OPENAI_SDK  # each request's timeout and retries (day/clients.py)
    # the vLLM pods' terminationGracePeriodSeconds (plan/drain.py): a stream longer than this past its pod's
    # deletion is cut; None: not known (no figure reported)
    drain_grace_seconds: float | None = None
    rollouts: tuple[float, ...] = ()  # seconds at which a rollout replaces every Ready pod
    # what-if (search/node_loss.py): seconds at which the GPU node serving the most replicas fails, and warm
    # placeholders kept on top of the headroom plan's
    node_failures: tuple[float, ...] = ()
    extra_placeholders: int = 0


@dataclass
class _Autoscalers:
    """The strategy's controllers, as `simulate` runs them: the HPA alone, or KEDA (its HPA inside)."""

    hpa: HPA | None = None
    keda: Keda | None = None
    hold: SaturationHold | None = None  # the saturation hold trigger's memory (controllers/saturation.py)
    smoothed: dict[str, SmoothedGauge] = field(default_factory=dict)  # gauge triggers' averages over time
    poll_every: int = 0  # KEDA's pollingInterval


def _autoscalers(strategy: Strategy, start_utc: datetime, seconds: int) -> _Autoscalers:
    """The HPA of an `hpa-memory` strategy; KEDA of a `keda` one, its cron triggers' active minutes over the
    day from `start_utc`, its saturation hold and smoothed gauges (controllers/gauges.py)."""
    if strategy.kind == "hpa-memory":
        return _Autoscalers(hpa=HPA(strategy.min_replicas, strategy.max_replicas, strategy.behavior))
    if strategy.kind != "keda":
        return _Autoscalers()
    assert strategy.scaled_object is not None
    so = strategy.scaled_object
    crons = {
        t.name: active_minutes(t.start, t.end, t.timezone, start_utc, seconds // 60 + 1)
        for t in so.triggers
        if isinstance(t, CronTrigger)
    }

    def cron_active(trigger: CronTrigger, now: float) -> bool:
        minutes = crons[trigger.name]
        return minutes[min(int(now // 60), len(minutes) - 1)]

    memory = [t.saturation for t in so.triggers if isinstance(t, PrometheusTrigger) and t.saturation]
    return _Autoscalers(
        keda=Keda(so, created_at=-1e9, cron_active=cron_active),
        hold=SaturationHold(memory[0]) if memory else None,
        smoothed={
            t.series: SmoothedGauge(t.metric, t.smoothing)
            for t in so.triggers
            if isinstance(t, PrometheusTrigger) and t.smoothing is not None
        },
        poll_every=so.polling_interval,
    )


def simulate(
    traffic: Traffic,
    table: ReplicaTable,
    strategy: Strategy,
    cfg: SimConfig,
    progress: Callable[[int], None] | None = None,
) -> Result:
    """One day of `traffic` under `strategy`, second by second (module doc).

    why long: one pass of the loop is one simulated second, its steps in the order the controllers act
    (scrape, KEDA, HPA, headroom, scheduling, serving) on a dozen running totals they share; split into
    functions they would be threaded through every call."""
    rng = np.random.default_rng(cfg.seed)
    T = traffic.duration
    arrivals_per_s = traffic.per_second().tolist()
    mu = table.capacity_rps
    kv_per_seq = (table.stats.mean_decode_context + KV_BLOCK_TOKENS / 2) / table.model.kv_capacity_tokens
    fb = table.model.framebuffer_used_fraction

    placeholders = placeholder_targets(cfg.capacity.headroom, cfg.day_start_utc, T) + cfg.extra_placeholders
    cluster = Cluster(cfg.capacity, rng, strategy.replicas, int(placeholders[0]))
    spec = strategy.replicas
    scalers = _autoscalers(strategy, traffic.start_utc or cfg.day_start_utc, T)
    hpa, keda, hold, smoothed, poll_every = (
        scalers.hpa,
        scalers.keda,
        scalers.hold,
        scalers.smoothed,
        scalers.poll_every,
    )
    hpa_phase = float(rng.uniform(0, SYNC_PERIOD_SECONDS))
    next_hpa = hpa_phase

    # Prometheus: the latest scrape; queries read it.
    idle = {
        "waiting_sum": 0.0, "running_sum": 0.0, "kv_sum": 0.0, "kv_max": 0.0, "served_rate": 0.0,
        "arrival_rate": 0.0, "saturation_hold": 0.0, "wake": 0.0,
    }  # fmt: skip
    scraped: dict[str, float] = dict(idle)
    scraped_fb: list[float] = []
    outages = cfg.prometheus_outages

    def query(metric: str, now: float) -> float | None:
        for start, end in outages:
            if start <= now < end:
                return None
        if metric in smoothed:  # empty with no Ready pod in the window: `until_a_replica_serves` reads 0
            return smoothed[metric].value(now) or 0.0
        return scraped[metric]

    ready_s = np.zeros(T, dtype=np.int32)
    desired_s = np.zeros(T, dtype=np.int32)
    queue_start = np.zeros(T)
    capacity_s = np.zeros(T)
    lam_s = np.zeros(T)
    served_s = np.zeros(T)  # requests completed each second (vLLM's success counter, fluid)
    admitted_s = np.zeros(T)  # requests let into the queue each second (all of them without the gateway)
    shed_s = np.zeros(T)  # requests the gateway answered 429/503 each second
    room_s = np.full(T, np.inf)  # requests the gateway would let in each second
    dispatched_s = np.zeros(T)  # the queue's head past the picker (vLLM's Q per Ready pod): never evicted
    fc = cfg.flow_control
    clients = Retries(cfg.client, arrivals_per_s, fc)

    q = 0.0
    lam_eff = 0.0
    ready = cluster.ready
    removals: list[tuple[float, int, int]] = []  # (second, Ready pods deleted, Ready pods before)
    rollout_at = {int(r): True for r in cfg.rollouts}
    failures = {int(f): True for f in cfg.node_failures}
    report_every = max(1, T // 100)
    for t in range(T):
        now = float(t)
        if cluster.next_event() <= now:
            cluster.advance(now)
            ready = cluster.ready
        # Prometheus scrape of the Ready pods
        if t % cfg.scrape_interval == 0:
            window = slice(max(0, t - THROUGHPUT_WINDOW_SECONDS), t)
            # the picker's dispatched + shed counters (plan.promql.gateway_arrivals) and the requests it holds
            # beyond vLLM's Q per pod (flow control's queue size): its series exist with no vLLM pod
            completed = served_s[window].sum()
            arrivals = float(completed + shed_s[window].sum()) / THROUGHPUT_WINDOW_SECONDS
            held = 0.0 if fc is None else max(0.0, q - fc.saturation_queue_depth * ready)
            gateway = {"arrival_rate": arrivals, "wake": held + arrivals}  # promql.wake_signal
            if ready:
                if q > 0:
                    running = np.full(ready, table.max_running)
                else:
                    per = float(np.interp(lam_eff, table.lam, table.running))
                    running = rng.poisson(per, ready).astype(np.float64)
                kv = np.minimum(running * kv_per_seq, 1.0)
                scraped = {
                    "waiting_sum": q if fc is None else min(q, fc.saturation_queue_depth * ready),
                    "running_sum": float(running.sum()),
                    "kv_sum": float(kv.sum()),
                    "kv_max": float(kv.max()),
                    # sum(rate(vllm:request_success_total[THROUGHPUT_WINDOW])): completions over the window
                    "served_rate": float(completed) / THROUGHPUT_WINDOW_SECONDS,
                    **gateway,
                }
                if hold is not None:
                    serving = float(ready_s[window].mean()) if t else float(ready)
                    sc = scraped
                    hold.observe(now, sc["waiting_sum"], sc["kv_sum"], sc["served_rate"], ready, serving)
                    scraped["saturation_hold"] = hold.value(now, scraped["served_rate"])
                scraped_fb = [fb] * ready
            else:
                # no Ready replica, no vLLM series: the queries on them read 0 (plan/promql.py
                # `until_a_replica_serves`); the pickers' still count the requests, which wakes a model at zero
                scraped = {**idle, **gateway}
                scraped_fb = []
            for gauge in smoothed.values():
                gauge.observe(now, scraped[gauge.metric] if ready else None)
        # KEDA executor
        if keda is not None and t % poll_every == 0:
            spec = keda.poll(now, spec, lambda m, _now=now: query(m, _now))
        # HPA sync
        if now >= next_hpa:
            next_hpa += SYNC_PERIOD_SECONDS
            if keda is not None:
                spec = keda.sync_hpa(now, spec, cluster.status_replicas, lambda m, _now=now: query(m, _now))
            elif hpa is not None:
                if query("waiting_sum", now) is None or not scraped_fb:
                    proposals: list[int | None] = [None]
                else:
                    proposals = [
                        pods_average_value_replicas(
                            scraped_fb, cluster.unready, 0, strategy.memory_target, spec, hpa.tolerance
                        )
                    ]
                spec = hpa.reconcile_proposals(now, spec, proposals)
        if t % 60 == 0 and len(cluster.placeholders) != placeholders[t // 60]:
            cluster.set_placeholders(now, int(placeholders[t // 60]))  # the headroom's KEDA cron
        if t % RETRY_SECONDS == 0 and cluster.pending:
            cluster.reschedule_pending(now)
        if failures.get(t):
            cluster.fail_node(now)
            ready = cluster.ready
        if len(cluster.pods) != spec:
            before = ready
            cluster.set_replicas(now, spec)
            ready = cluster.ready
            if ready < before:  # Ready pods deleted: their streams drain within the grace period
                removals.append((now, before - ready, before))
        if rollout_at.get(t) and ready:
            removals.append((now, ready, ready))
        # serving (fluid, 1 s)
        if fc is not None and q > 0:  # the picker answers what it held past its TTL
            dispatched_s[t] = fc.saturation_queue_depth * ready
            shed_s[t] = evicted = clients.evict(t, q, float(dispatched_s[t]))
            q -= evicted
        if q > 0:
            q -= clients.time_out(t, q)
        a = arrivals_per_s[t] + clients.resent[t]
        cap = ready * mu
        if fc is not None:  # what this second serves, then vLLM's Q per pod and the picker's hold may wait
            # with a Ready pod, the picker holds what it serves within the TTL; with none, up to its bound
            held = min(fc.held_requests, fc.ttl_seconds * cap) if ready else fc.held_requests
            room_s[t] = room = max(0.0, cap + fc.saturation_queue_depth * ready + held - q)
            rejected = a - min(a, room)
            if rejected > 0:
                clients.shed(t, float(rejected), not ready)
            shed_s[t] += rejected
            a -= rejected
        admitted_s[t] = a
        clients.enter(a)
        queue_start[t] = q
        capacity_s[t] = cap
        served = min(q + a, cap)
        q = q + a - served
        served_s[t] = served
        lam_eff = served / ready if ready else 0.0
        lam_s[t] = lam_eff
        ready_s[t] = ready
        desired_s[t] = spec
        if progress is not None and t % report_every == 0:
            progress(report_every)

    sec = clients.seconds(queue_start, capacity_s, admitted_s, room_s, ready_s, dispatched_s)
    result = _summarise(traffic, table, strategy, cfg, rng, cluster, ready_s, desired_s, lam_s, sec, clients)
    if cfg.drain_grace_seconds is not None:
        result.streams_cut = streams_cut(result.stream_spans, removals, cfg.drain_grace_seconds)
    return result


def streams_cut(
    spans: tuple[np.ndarray, np.ndarray], removals: list[tuple[float, int, int]], grace: float
) -> int:
    """Streams cut by pod deletions: at each deletion of `k` of `n` Ready pods, k/n of the streams generating
    then that would still be generating `grace` seconds later (module doc), rounded to whole streams."""
    start, end = spans
    cut = 0.0
    for at, k, n in removals:
        live = (start <= at) & (end > at + grace)
        cut += float(live.sum()) * k / n
    return round(cut)


def _per_minute(
    bounds: np.ndarray, violated: np.ndarray, failed: np.ndarray, ttft_s: np.ndarray, itl: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each minute's p95 TTFT and ITL (ms, over the requests that got tokens) and its SLO misses (%), the
    requests of minute m being those from `bounds[m]` to `bounds[m + 1]`."""
    minutes = len(bounds) - 1
    minute_p95 = np.zeros(minutes)
    minute_itl = np.zeros(minutes)
    minute_violation = np.zeros(minutes)
    for m in range(minutes):
        lo, hi = bounds[m], bounds[m + 1]
        if hi > lo:
            minute_violation[m] = violated[lo:hi].mean() * 100
        if (~failed[lo:hi]).any():
            minute_p95[m] = np.nanpercentile(np.minimum(ttft_s[lo:hi], 1e3), 95) * 1000
            minute_itl[m] = np.nanpercentile(itl[lo:hi], 95) * 1000
    return minute_p95, minute_itl, minute_violation


def _per_day(
    bounds: np.ndarray, violated: np.ndarray, minute_cost: np.ndarray, days: float
) -> list[dict[str, float]]:
    """Each day's requests, SLO misses (%) and GPU cost (the cost curve's rise over its 1440 minutes)."""
    minutes = len(bounds) - 1
    per_day: list[dict[str, float]] = []
    for d in range(max(1, int(np.ceil(days - 1e-9)))):
        lo, hi = bounds[min(d * 1440, minutes)], bounds[min((d + 1) * 1440, minutes)]
        start_cost = minute_cost[d * 1440 - 1] if d > 0 else 0.0
        end_cost = minute_cost[min((d + 1) * 1440, minutes) - 1]
        per_day.append({
            "day": d, "requests": int(hi - lo),
            "slo_violation_pct": float(violated[lo:hi].mean() * 100) if hi > lo else 0.0,
            "gpu_cost_usd": float(end_cost - start_cost),
        })  # fmt: skip
    return per_day


def _summarise(
    traffic: Traffic,
    table: ReplicaTable,
    strategy: Strategy,
    cfg: SimConfig,
    rng: np.random.Generator,
    cluster: Cluster,
    ready_s: np.ndarray,
    desired_s: np.ndarray,
    lam_s: np.ndarray,
    sec: Seconds,
    clients: Retries,
) -> Result:
    T = traffic.duration
    t_arr = traffic.arrivals
    # the client's own jitter draws from a stream of its own: the replica's draws stay those of a day without
    fate = fates(t_arr, sec, clients, np.random.default_rng([cfg.seed, 24]))
    failed = fate.failed  # no token: counted as misses and out of the latency percentiles
    never = fate.never  # not admitted before the day ends: censored at the end of the day
    admit = np.minimum((t_arr + fate.wait).astype(np.int64), T - 1)
    state = table.at(lam_s)
    admitted = {name: values[admit] for name, values in state.items()}
    ttft_s = fate.wait + table.ttft_seconds(traffic.input_tokens.astype(np.float64), admitted, rng)
    if table.model.lora is not None:  # adapter loads at first use and swaps (simulator/serving/lora.py)
        ttft_s = ttft_s + table.model.lora.request_delays(t_arr, ready_s, rng)
    itl = state["itl"][admit]
    # each stream's generation, first token to last (the replica's steady ITL of its admission second)
    first = t_arr + ttft_s
    last = first + traffic.output_tokens * itl
    served_ok = ~failed & ~never
    spans = (first[served_ok], last[served_ok])
    violated = (ttft_s > cfg.slo.ttft_seconds) | (itl > cfg.slo.itl_seconds) | never | failed
    n = len(t_arr)
    ttft_s = np.where(failed, np.nan, ttft_s)  # latency percentiles are over the requests that got tokens
    itl = np.where(failed, np.nan, itl)
    p95 = float(np.nanpercentile(ttft_s, 95)) * 1000 if (~failed).any() else 0.0
    p95_itl = float(np.nanpercentile(itl, 95)) * 1000 if (~failed).any() else 0.0

    minutes = T // 60
    bounds = np.searchsorted(t_arr, np.arange(minutes + 1) * 60.0)
    minute_rate = np.diff(bounds) / 60.0
    minute_p95, minute_itl, minute_violation = _per_minute(bounds, violated, failed, ttft_s, itl)
    by_minute = lambda x: x[: minutes * 60].reshape(minutes, 60).mean(axis=1)  # noqa: E731
    minute_queue = by_minute(sec.queue_start)
    minute_kv = by_minute(np.where(sec.queue_start > 0, 1.0, state["kv_usage"]) * (ready_s > 0))
    minute_cost = cluster.nodepool.cost_curve(np.arange(1, minutes + 1) * 60.0)
    days = T / 86_400
    per_day = _per_day(bounds, violated, minute_cost, days)
    minute_ready = ready_s[: minutes * 60].reshape(minutes, 60).mean(axis=1)
    minute_desired = desired_s[: minutes * 60].reshape(minutes, 60).max(axis=1)
    quiet = minute_rate <= np.quantile(minute_rate, 0.25)
    offpeak = int(np.rint(np.median(minute_ready[quiet]))) if quiet.any() else int(ready_s.min())
    return Result(
        strategy.name,
        strategy.description,
        int(ready_s.max()),
        offpeak,
        p95,
        float(violated.mean() * 100) if n else 0.0,
        cluster.nodepool.cost(T) / days,
        n,
        cluster.nodepool.node_seconds(T) / 3600,
        minute_rate,
        minute_ready,
        minute_desired,
        minute_p95,
        minute_violation,
        p95_itl,
        float(fate.shed.mean() * 100) if n else 0.0,
        strategy.max_replicas,
        days,
        minute_queue,
        minute_kv,
        minute_itl,
        minute_cost,
        per_day,
        minute_ready_max=ready_s[: minutes * 60].reshape(minutes, 60).max(axis=1),
        flaps=flap_count(desired_s, FLAP_WINDOW_MINUTES * 60),
        served=int((~failed & ~never).sum()),
        failed=int(failed.sum()),
        timeouts=fate.timeouts,
        retries=fate.retries,
        stream_spans=spans,
    )
