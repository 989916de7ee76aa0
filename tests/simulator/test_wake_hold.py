"""The hold that covers a wake (issue #49): a model at zero holds the requests that arrive while it wakes, sized
for the model's expected rate at zero x the from-zero hold (plan/gateway.py `at_zero`), not for overload
shedding at full size (maxPendingPerReplica x maxReplicas); preflight warns where the picker's byte bound
cannot hold that many; the day simulator shows the failed share on a held-out quiet day."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace
from typing import cast

import pytest

from llm_platform.config.loader import parse
from llm_platform.plan import resolve
from llm_platform.plan.gateway import EPP_REPLICAS, WAKE_HOLD_MARGIN
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.search.stacks import stack_run
from llm_platform.simulator.serving.overload import OPENAI_SDK, VLLM_BENCH
from llm_platform.tools.preflight import zero as preflight_zero
from llm_platform.tools.preflight.view import RenderView
from tests.conftest import fixture_stack, stack_values
from tests.plans import model_plan
from tests.simulator.quiet_day import quiet_day


def _zero_model(**autoscaling):
    values = stack_values("zero")
    chat = next(m for m in values["models"] if m["name"] == "chat-7b")
    chat["autoscaling"].update(autoscaling)
    return next(m for m in resolve(parse(values)).models if m.name == "chat-7b")


def test_a_model_at_zero_holds_a_wake_of_its_expected_rate() -> None:
    """The zero fixture's chat-7b: its clients admit 700 requests/min together (11.7/s), its hold is 240 s, so
    its pickers hold 1.5 x 11.7 x 240 = 4,200 (2,100 each), not 8 x 6 = 48. A declared expected rate sizes it
    instead; the overload bound stays the floor; a model that keeps a replica keeps the overload bound."""
    queue = model_plan("zero", "chat-7b").flow_control
    assert queue is not None and queue.from_zero_hold_s == 240.0
    assert queue.wake_requests_per_second == pytest.approx(700 / 60)
    assert queue.wake_arrivals == math.ceil(WAKE_HOLD_MARGIN * 700 / 60 * 240) == 4200
    assert queue.held_per_picker == 4200 // EPP_REPLICAS and queue.held_requests == 4200
    declared = _zero_model(wakeRequestsPerSecond=2).flow_control
    assert declared is not None and declared.held_requests == math.ceil(1.5 * 2 * 240) == 720
    tiny = _zero_model(wakeRequestsPerSecond=0.01).flow_control
    assert tiny is not None and tiny.held_requests == 8 * 6  # maxPendingPerReplica x maxReplicas
    kept = model_plan("zero", "code-1b").flow_control
    assert kept is not None and kept.wake_arrivals is None and kept.held_requests == 8 * 3


def test_preflight_warns_when_the_byte_bound_cannot_hold_a_wake() -> None:
    """100 requests/s at zero x 240 s x 1.5 = 36,000 held, 18,000 per picker; at maxModelLen 8192 (~32 KiB a
    body) that is 562 MiB, over the picker's 512Mi: a warning with the numbers. The fixture's own rate fits."""
    loud = _zero_model(wakeRequestsPerSecond=100)
    fits = model_plan("zero", "chat-7b")

    def view(*models) -> RenderView:
        queues = {m.name: (m.flow_control, m.model.max_model_len) for m in models}
        return cast(RenderView, SimpleNamespace(zero_queues=queues, from_zero_wakes={}))

    assert preflight_zero.zero(view(fits)) == []
    (finding,) = preflight_zero.zero(view(loud))
    print(finding.message)
    assert finding.severity == "warning" and finding.field == "autoscaling.wakeRequestsPerSecond"
    for figure in (
        "100 requests/s",
        "240 s",
        "36000 requests",
        "18000 per picker",
        "562 MiB",
        "512Mi",
        "16384",
    ):
        assert figure in finding.message, figure


@pytest.mark.parametrize("client", [OPENAI_SDK, VLLM_BENCH], ids=["openai", "vllm-bench"])
def test_the_quiet_day_loses_no_request_once_the_hold_covers_a_wake(client) -> None:
    """The held-out quiet day (tests/simulator/quiet_day.py) on the zero fixture's chat-7b, with the picker's
    bound as it was (48: maxPendingPerReplica x maxReplicas) and as planned now (a wake's arrivals): the
    08:00 and 13:00 wakes overflowed the old bound, and their overflow failed on every attempt (the OpenAI
    SDK's three, 30 s apart; vllm-bench's one); now every request is served, the held ones after the wake."""
    traffic = quiet_day(1)
    run = stack_run(fixture_stack("zero"), "chat-7b", traffic)
    own = next(s for s in run.strategies if s.name == "stack-config")
    queue = run.setup.config.flow_control
    assert queue is not None and queue.held_requests == 4200
    before = replace(run.setup.config, client=client, flow_control=replace(queue, held_per_picker=24))
    now = replace(run.setup.config, client=client)
    old, new = (simulate(traffic, run.setup.table, own, cfg) for cfg in (before, now))
    print(
        f"{client.max_attempts}-attempt client, {old.requests} requests: failed {100 * old.failed / old.requests:.1f} %"
        f" with the old bound (48), {100 * new.failed / new.requests:.1f} % now ({queue.held_requests}); "
        f"${old.gpu_cost_usd_per_day:.2f} -> ${new.gpu_cost_usd_per_day:.2f}"
    )
    assert old.failed > 0.05 * old.requests
    assert new.failed == 0 and new.served == new.requests
