"""The day's clients (simulator/day/clients.py): timeouts per attempt and retries of what timed out or was shed,
on short generated days."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from llm_platform.config.schema import Autoscaling, PrewarmWindow
from llm_platform.plan.gateway import FlowControlPlan
from llm_platform.simulator.commands.cli import main
from llm_platform.simulator.controllers.strategies import keda, static
from llm_platform.simulator.day import engine
from llm_platform.simulator.day.clients import _EVICTED, Retries, Seconds, _resend, fates
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.day.result import Result
from llm_platform.simulator.serving.overload import OPENAI_SDK, VLLM_BENCH, Client
from tests.simulator.test_engine import setup

SDK_120 = replace(OPENAI_SDK, timeout_s=120.0)
HOLD_S = 60.0  # the picker's hold of a model at zero in these days (plan/zero.py caps it at 270 s)


def overload_day() -> np.ndarray:
    """Half an hour at 4 req/s, an hour at 40 (about twice what two replicas serve), then quiet to drain."""
    rate = np.full(3 * 3600, 4.0)
    rate[1800 : 1800 + 3600] = 40.0
    return rate


def answered(r: Result) -> None:
    """The queue drains before the day ends: every request offered is served or failed."""
    assert r.served + r.failed == r.requests


def test_a_sustained_overload_behind_a_120_s_timeout_times_out_retries_and_fails():
    traffic, table, cfg = setup(overload_day())
    patient = simulate(traffic, table, static(2), replace(cfg, client=VLLM_BENCH))
    r = simulate(traffic, table, static(2), replace(cfg, client=SDK_120))
    assert patient.timeouts == patient.retries == patient.failed == 0
    assert r.timeouts > 0 and r.retries > 0 and r.failed > 0
    answered(r)
    answered(patient)
    assert r.timeouts >= 3 * r.failed, (
        "nothing is shed here: a failed request timed out on each of its 3 attempts"
    )
    # what waits longer than the timeout leaves: the backlog stays a fraction of the patient clients'
    assert r.minute_queue.max() < 0.5 * patient.minute_queue.max()
    assert r.p95_ttft_ms > 120_000, (
        "the served include requests that timed out once and were served on a retry"
    )


def from_zero(flow_control: FlowControlPlan):
    """A model at zero until a cron window wakes it at 00:10: no Ready pod for its first ~15 minutes."""
    traffic, table, cfg = setup(np.full(3600, 0.5), flow_control=flow_control)
    window = PrewarmWindow(name="w", start="10 0 * * *", end="0 2 * * *", timezone="UTC", replicas=1)
    strategy = keda("zero", Autoscaling(min_replicas=0, max_replicas=2, prewarm=[window]), kv=None)
    return traffic, table, strategy, cfg


def test_a_model_at_zero_holds_up_to_the_bound_and_503s_past_it_and_its_ttl():
    """With no Ready pod the picker holds up to its bound (16 here) for its TTL (60 s) and they are served once
    a replica is Ready; what arrives past the bound gets a 503 at once, what is held past the TTL a 503 then,
    with Retry-After on a model at zero's routes: the SDK sends it again 30 s later. The requests held at
    Ready are served with waits under the hold, none a retry; one-attempt clients fail every 503'd one."""
    at_zero = FlowControlPlan(5, 0.95, 8, HOLD_S, from_zero_hold_s=HOLD_S)
    traffic, table, strategy, cfg = from_zero(at_zero)
    once = simulate(traffic, table, strategy, replace(cfg, client=VLLM_BENCH))
    sdk = simulate(traffic, table, strategy, cfg)
    ready_at = int(np.argmax(sdk.minute_ready > 0))
    assert 10 <= ready_at == int(np.argmax(once.minute_ready > 0))
    assert once.shed_pct > 0 and sdk.shed_pct > 0
    assert once.failed == round(once.shed_pct / 100 * once.requests) and once.retries == 0
    assert sdk.retries > 0 and sdk.failed > 0
    answered(sdk)
    answered(once)
    late = ready_at - 1  # the minute before Ready: those held are served at Ready and the queue it leaves
    print(
        f"p95 TTFT the minute before Ready: >= {HOLD_S + 30:.0f} s -> {sdk.minute_p95_ttft_ms[late] / 1000:.0f} s"
    )
    assert 0 < once.minute_p95_ttft_ms[late] < (HOLD_S + 30) * 1000
    assert sdk.minute_p95_ttft_ms[late] < (HOLD_S + 30) * 1000


def test_without_overload_the_clients_change_nothing():
    """Nothing shed and no wait near a timeout: the day is the same whatever the client."""
    gateway = FlowControlPlan(5, 0.95, 8, 0.2)
    for flow_control in (None, gateway):
        traffic, table, cfg = setup(np.full(3600, 6.0), flow_control=flow_control)
        days = [
            simulate(traffic, table, static(3), replace(cfg, client=c))
            for c in (OPENAI_SDK, VLLM_BENCH, SDK_120)
        ]
        assert days[0].retries == days[0].timeouts == days[0].failed == 0
        for other in days[1:]:
            assert other.row() == days[0].row()
            assert other.timeline() == days[0].timeline() and other.per_day == days[0].per_day


def test_retries_never_exceed_the_attempts_left_after_each_first_send():
    """At most attempts - 1 retries per request: all of them when every attempt is shed (a model at zero all
    day, bar the retries due after the day ends), fewer when some are served."""
    never_ready = FlowControlPlan(5, 0.95, 8, 0.2)
    traffic, table, _, cfg = from_zero(never_ready)
    nothing = simulate(
        traffic, table, keda("zero", Autoscaling(min_replicas=0, max_replicas=2), kv=None), cfg
    )
    assert nothing.peak_replicas == 0 and nothing.served == 0
    assert nothing.failed >= nothing.requests - 10  # bar those still held or due when the day ends
    assert 2 * nothing.requests - 20 <= nothing.retries <= 2 * nothing.requests
    traffic, table, cfg = setup(overload_day(), flow_control=FlowControlPlan(5, 0.95, 8, 0.2))
    for attempts in (1, 2, 4):
        client = Client(120.0, "first-token", attempts)
        r = simulate(traffic, table, static(2), replace(cfg, client=client))
        assert r.shed_pct > 0
        assert (r.retries > 0) == (attempts > 1)
        assert r.retries <= (attempts - 1) * r.requests
        answered(r)


def test_the_loop_carries_the_retries_the_requests_make(monkeypatch):
    """The fluid loop re-sends what the requests' own attempts re-send: its re-arrivals, timeouts and
    admissions add up to the requests' retries, timeouts and served requests (within 2 %)."""
    seen: list[Seconds] = []

    def spy(t_arr, sec, retries, rng):
        seen.append(sec)
        return fates(t_arr, sec, retries, rng)

    monkeypatch.setattr(engine, "fates", spy)
    for flow_control in (None, FlowControlPlan(5, 0.95, 8, 0.2)):
        traffic, table, cfg = setup(overload_day(), flow_control=flow_control)
        r = simulate(traffic, table, static(2), replace(cfg, client=SDK_120))
        sec = seen[-1]
        assert r.retries > 0 and sec.resent.sum() == pytest.approx(r.retries, rel=0.02)
        assert sec.timed_out.sum() == pytest.approx(r.timeouts, rel=0.02, abs=1)
        assert (sec.admitted - sec.timed_out).sum() == pytest.approx(r.served, rel=0.02)
    # a model at zero: held, evicted at the TTL, 503'd past the bound, re-sent after Retry-After
    at_zero = FlowControlPlan(5, 0.95, 8, HOLD_S, from_zero_hold_s=HOLD_S)
    traffic, table, strategy, cfg = from_zero(at_zero)
    r = simulate(traffic, table, strategy, cfg)
    sec = seen[-1]
    assert sec.evicted.sum() > 0
    assert sec.resent.sum() == pytest.approx(r.retries, rel=0.02)
    assert (sec.admitted - sec.evicted).sum() == pytest.approx(r.served, rel=0.02)


def test_the_day_command_runs_the_sdk_unless_told_otherwise(tmp_path, capsys):
    """`--client vllm-bench` is the one-attempt, 6 h client: a backlog of over ten minutes times out only
    under the default (the OpenAI SDK's 600 s). Twenty minutes at 200 req/s build that backlog in a 40-minute
    day; its waits past 600 s are what either client meets, so the day need not drain."""
    day = tmp_path / "day.csv"
    day.write_text(
        "minute,requests_per_second\n" + "".join(f"{m},{200 if 10 <= m < 30 else 2}\n" for m in range(40))
    )
    rows = {}
    for flags in ([], ["--client", "vllm-bench"]):
        assert main(["--scenario", "seed-benchmark", "--traffic", str(day), "--json", *flags]) == 0
        rows[tuple(flags)] = json.loads(capsys.readouterr().out)
    sdk, bench = rows[()], rows[("--client", "vllm-bench")]
    assert any(r["timeout_pct"] > 0 and r["retry_pct"] > 0 for r in sdk)
    assert all(r["timeout_pct"] == r["retry_pct"] == r["failed_pct"] == 0 for r in bench)
    assert any(r["p95_ttft_ms"] > 600_000 for r in bench), "the backlog outlasts the SDK's timeout"


def flat_day(minutes: int, rps: float) -> str:
    return "minute,requests_per_second\n" + "".join(f"{m},{rps}\n" for m in range(minutes))


def growth_day(minutes: int, low: float, high: float) -> str:
    step = (high - low) / (minutes - 1)
    return "minute,requests_per_second\n" + "".join(f"{m},{low + step * m:.3f}\n" for m in range(minutes))


@pytest.mark.parametrize(
    ("name", "csv"), [("flat-33", flat_day(30, 33.0)), ("growth-15-45", growth_day(45, 15.0, 45.0))]
)
def test_the_day_command_on_prod_with_heavy_resends_prints_every_row(tmp_path, capsys, name, csv):
    """Days the prod stack's mistral-7b sheds on under its slower strategies (a flat 33 req/s, a 15 -> 45 req/s
    growth; shortened from whole days), with the default client (the OpenAI SDK): attempts evicted near the
    day's end look up the day's last second, not a second clamped by how many attempts failed (an
    IndexError before). Every strategy prints its row, with retries where it shed."""
    day = tmp_path / f"{name}.csv"
    day.write_text(csv)
    assert main(["--stack", "prod", "--traffic", str(day), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    print({r["strategy"]: (r["retry_pct"], r["failed_pct"]) for r in rows})
    assert {r["strategy"] for r in rows} >= {"stack-config", "hpa-gpu-memory", "keda-queue"}
    shedding = [r for r in rows if r["shed_pct"] > 0]
    assert shedding and all(r["retry_pct"] > r["failed_pct"] > 0 for r in shedding)


def test_an_attempt_evicted_at_the_ttl_reads_its_own_second():
    """Whether an evicted attempt's 503 says "no Ready pod" (then Retry-After) is read at its eviction second,
    whatever the number of attempts that failed: one attempt entered at second 5 and evicted at 5 + 61, when the
    picker dispatches again, is re-sent after the SDK's backoff (under a second), not the 30 s Retry-After
    (before: it read second 0, clamped by the one failed attempt)."""
    at_zero = FlowControlPlan(5, 0.95, 8, HOLD_S, from_zero_hold_s=HOLD_S)
    retries = Retries(OPENAI_SDK, [0.0] * 100, at_zero)
    zeros = np.zeros(100)
    dispatched = zeros.copy()
    assert retries.ttl_deadline is not None
    dispatched[5 + retries.ttl_deadline :] = 3.0
    sec = Seconds(zeros, zeros, zeros, zeros, zeros, zeros, zeros, zeros, zeros, dispatched)
    r = _resend(np.array([_EVICTED]), np.array([5.2]), np.array([5]), sec, retries, np.array([0.5]))
    assert r.tolist() == [5 + retries.ttl_deadline + 0.5]
    dispatched[:] = 0.0  # no pod then: the 503's Retry-After
    r = _resend(np.array([_EVICTED]), np.array([5.2]), np.array([5]), sec, retries, np.array([0.5]))
    assert r.tolist() == [5 + retries.ttl_deadline + 30.0]


def test_explain_prints_the_client_the_day_runs(capsys):
    for flags, attempts in (([], OPENAI_SDK.max_attempts), (["--client", "vllm-bench"], 1)):
        assert main(["--stack", "prod", "--model", "mistral-7b", "--explain", "--json", *flags]) == 0
        assert json.loads(capsys.readouterr().out)["client"]["max_attempts"] == attempts
