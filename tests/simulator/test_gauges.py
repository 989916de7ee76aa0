"""controllers/gauges.py: the queue and KV triggers' average over time, as Prometheus evaluates the rendered
query (checked with promtool on the same scrapes) and with the window and step the plan renders."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from llm_platform.plan import promql
from llm_platform.plan.model import SCRAPE_INTERVAL_SECONDS
from llm_platform.plan.scaling import Smoothing
from llm_platform.simulator.controllers.gauges import SmoothedGauge
from llm_platform.simulator.controllers.keda import PrometheusTrigger
from llm_platform.simulator.controllers.strategies import from_plan
from tests.components import promtool
from tests.plans import model_plan

NS, LABELS = "model-mistral-7b", 'namespace="model-mistral-7b",model_name="mistral-7b"'
AVAILABLE = f'kube_deployment_status_replicas_available{{namespace="{NS}",deployment="mistral-7b"}}'
# not on a step: Prometheus 2 (the Debian promtool) closes a range at both ends, Prometheus 3 (the pinned
# server) leaves it open at the start; off the step grid both hold the same 12 steps, 80 s to 135 s
EVAL_S = 137
SCRAPES = 40  # 0 s to 195 s, every 5 s

Pods = dict[str, list[float | None]]  # a pod's queue at each scrape; None: no sample (not yet, or gone)


def _series(values: list[float | None]) -> str:
    """promtool's notation: `_` before the pod's first sample, `stale` once it is gone (its target vanished)."""
    out, seen, gone = [], False, False
    for v in values:
        if v is None:
            out.append("stale" if seen and not gone else "_")
            gone = seen
        else:
            out.append(f"{v:g}")
            seen, gone = True, False
    return " ".join(out)


def _simulated(pods: Pods, smoothing: Smoothing, at: float) -> float | None:
    """The engine's mirror: the sum over the pods at each scrape, None when no pod exported a sample."""
    gauge = SmoothedGauge("waiting_sum", smoothing)
    for i in range(SCRAPES):
        present = [v for p in pods.values() if (v := p[i]) is not None]
        if i * SCRAPE_INTERVAL_SECONDS <= at:
            gauge.observe(float(i * SCRAPE_INTERVAL_SECONDS), sum(present) if present else None)
    return gauge.value(at)


def _at(step: int, value: float, pods_before: float = 0.0) -> list[float | None]:
    return [value if i == step else pods_before for i in range(SCRAPES)]


CASES: dict[str, tuple[int, Pods, float]] = {
    # (available replicas, the pods' queues, the trigger's value at EVAL_S)
    "steady: the sum": (2, {"p0": [3.0] * SCRAPES, "p1": [4.0] * SCRAPES}, 7.0),
    # one scrape of 24 waiting (at 100 s) in a minute of none: a twelfth of it, not the cap
    "a burst at one scrape": (1, {"p0": _at(20, 24.0)}, 2.0),
    # p1 starts at 110 s: it counts for the 6 steps it served (3 then 7), not for the whole window
    "a replica joins mid-window": (2, {"p0": [3.0] * SCRAPES, "p1": [None] * 22 + [4.0] * 18}, 5.0),
    # p1 went away at 110 s (its series went stale): 7, then 3
    "a replica leaves mid-window": (1, {"p0": [3.0] * SCRAPES, "p1": [4.0] * 22 + [None] * 18}, 5.0),
    # the last pod left at 110 s: the steps it served still count, so the value decays rather than drops
    "the last replica leaves": (0, {"p0": [6.0] * 22 + [None] * 18}, 6.0),
    # first rollout: nothing exported yet, none available: 0 (until_a_replica_serves), not an error
    "no replica yet": (0, {"p0": [None] * SCRAPES}, 0.0),
}


@pytest.mark.parametrize("case", CASES)
def test_the_rendered_average_is_what_the_simulator_reads(case: str, tmp_path: Path) -> None:
    model = model_plan("prod", "mistral-7b")
    (queue,) = [t for t in model.scaling.triggers if t.metric == promql.QUEUE]
    assert queue.smoothing is not None
    available, pods, expected = CASES[case]
    series = [
        {"series": AVAILABLE, "values": f"{available}x{SCRAPES - 1}"},
        *(
            {"series": f'{promql.QUEUE}{{{LABELS},pod="{pod}"}}', "values": _series(values)}
            for pod, values in pods.items()
            if any(v is not None for v in values)
        ),
    ]
    test = promtool.expression_case(
        queue.query, series, expected, eval_time=f"{EVAL_S}s", interval=f"{SCRAPE_INTERVAL_SECONDS}s"
    )
    promtool.unit_test_rules({"groups": []}, [test], tmp_path)
    assert (_simulated(pods, queue.smoothing, EVAL_S) or 0.0) == pytest.approx(expected)


def test_the_gauge_triggers_average_a_minute_of_scrapes() -> None:
    """The queue and the KV fill (instants) are averaged over four HPA syncs at one point per scrape; the rates
    are averages already, and the wake trigger must read a held request at once."""
    for model in (model_plan("prod", "mistral-7b"), model_plan("zero", "chat-7b")):  # chat-7b: min 0
        by_metric = {t.metric: t for t in model.scaling.triggers}
        assert model.name != "chat-7b" or "wake" in {t.name for t in model.scaling.triggers}
        for metric in (promql.QUEUE, promql.KV_CACHE):
            smoothing = by_metric[metric].smoothing
            assert smoothing is not None and smoothing == Smoothing(60, model.scaling.scrape_interval_s)
            assert f"[{smoothing.window_s}s:{smoothing.step_s}s]" in by_metric[metric].query
        others = [t for t in model.scaling.triggers if t.metric not in (promql.QUEUE, promql.KV_CACHE)]
        assert others and all(t.smoothing is None for t in others)


def test_the_simulator_reads_the_window_from_the_plan() -> None:
    """A plan with another window and step: the simulated triggers carry them, and a burst at one scrape reads
    the share of the plan's window it held."""
    model = model_plan("prod", "mistral-7b")
    other = Smoothing(120, 10)
    triggers = tuple(replace(t, smoothing=other) if t.smoothing else t for t in model.scaling.triggers)
    strategy = from_plan("other", replace(model.scaling, triggers=triggers))
    assert strategy.scaled_object is not None
    smoothed = {
        t.name: t.smoothing
        for t in strategy.scaled_object.triggers
        if isinstance(t, PrometheusTrigger) and t.smoothing is not None
    }
    assert smoothed == {"queue-depth": other, "kv-cache-usage": other}
    gauge = SmoothedGauge("waiting_sum", other)
    read = {}
    for t in range(0, 330, 5):  # scraped every 5 s, one scrape of 24 at 200 s; KEDA queries after each
        gauge.observe(float(t), 24.0 if t == 200 else 0.0)
        read[t] = gauge.value(t + 2.0)
    assert read[250] == pytest.approx(24.0 / 12)  # 12 steps of 10 s, one of them on the burst
    assert (
        read[205] == read[315] == pytest.approx(24.0 / 12)
    )  # from the step at 200 s to the last that holds it
    assert read[195] == read[320] == 0.0  # before it, and once it is out of the window


@pytest.mark.parametrize("smoothing", [Smoothing(60, 5), Smoothing(62, 5)])
def test_a_gauge_asked_again_within_a_step_answers_as_if_asked_afresh(smoothing: Smoothing) -> None:
    """KEDA's poll and the HPA's sync ask at several moments of one step; the remembered answer is the one a
    gauge that never answered before gives, whether scrapes came in between or not (a window of whole steps
    or not)."""
    import random

    rng = random.Random(7)
    asked = SmoothedGauge("waiting_sum", smoothing)
    scrapes: list[tuple[float, float | None]] = []
    for t in range(600):
        if t % 7 == 3:  # scrapes off the subquery's step grid: a new one can come within a step
            value = None if rng.random() < 0.1 else rng.uniform(0, 20)
            asked.observe(float(t), value)
            scrapes.append((float(t), value))
        if rng.random() < 0.4:
            fresh = SmoothedGauge("waiting_sum", smoothing)
            for s in scrapes:
                fresh.observe(*s)
            assert asked.value(float(t)) == fresh.value(float(t)), t
