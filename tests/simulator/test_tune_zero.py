"""`simulator tune` searches minReplicas 0 and the idle period (cooldownPeriod) where the stack allows zero
(search/zero_tune.py `zero_step`), on short generated days with an idle night."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml

from llm_platform.config.loader import load_stack
from llm_platform.simulator.commands.cli import main
from llm_platform.simulator.search.stack_rules import stack_accepts
from llm_platform.simulator.search.stacks import stack_run
from llm_platform.simulator.search.tune import Tuner
from llm_platform.simulator.search.zero_tune import COOLDOWN_GRID_S, ZeroStep, zero_step
from llm_platform.simulator.traffic.traffic import load
from tests.conftest import fixture_stack

ZERO = fixture_stack("zero")  # staging, behind the gateway: zero allowed
PROD = fixture_stack("prod")  # prod, no allowScaleToZero: zero refused


def night_day(tmp_path: Path, idle_h: float, busy_h: float, rate: float, name: str = "night") -> str:
    """Idle for `idle_h` hours, `rate` req/s for `busy_h` hours, idle again for `idle_h` hours."""
    minutes = [0.0] * int(idle_h * 60) + [rate] * int(busy_h * 60) + [0.0] * int(idle_h * 60)
    f = tmp_path / f"{name}.csv"
    f.write_text("minute,requests_per_second\n" + "".join(f"{m},{r}\n" for m, r in enumerate(minutes)))
    return str(f)


def step(stack: Path, day: str, max_miss: float = 5.0) -> tuple[ZeroStep, Tuner]:
    """The zero step after the tuner's starting config (its descent is tested in test_tune.py)."""
    runs = [stack_run(stack, None, load(day))]
    tuner = Tuner(
        runs, max_miss, False, runs[0].max_replicas, runs[0].plan.scaling.min_replicas, None,
        stack_accepts(stack, runs[0]),
    )  # fmt: skip
    knobs = tuner.start()
    _, _, days = tuner.score(knobs)
    tuned = tuner.config(knobs, None)
    zero = zero_step(
        load_stack(stack),
        runs,
        tuned,
        [d.miss_pct for d in days],
        max_miss,
        lambda a: tuner.accepted(knobs, a),
    )
    return zero, tuner


def test_tune_picks_zero_on_an_idle_night_day_where_the_stack_allows_it(tmp_path):
    zero, tuner = step(ZERO, night_day(tmp_path, 1.5, 3, 0.1))  # idle spells longer than the longest cooldown
    assert zero.allowed and zero.at_zero
    block = zero.autoscaling
    assert block.min_replicas == 0 and block.cooldown_period in COOLDOWN_GRID_S
    assert block.cooldown_period == zero.best.cooldown_s
    assert zero.best.lost == 0 and 0 < zero.best.wait_max <= zero.hold_s
    # three idle hours of six: the floor costs less than at the tuned minReplicas 1
    assert zero.own.min_replicas == 1
    assert sum(zero.usd_per_day(zero.best)) < 0.7 * sum(zero.usd_per_day(zero.own))
    # the block printed is one the stack file accepts
    assert tuner.accepted(tuner.start(), block)


def test_held_requests_count_against_the_miss_target(tmp_path):
    """One busy hour: the wake holds ~6 % of its requests (a ~230 s wake of a 3600 s hour, fewer than the
    picker's bound), over a 5 % target."""
    zero, _ = step(ZERO, night_day(tmp_path, 1.5, 1, 0.15), max_miss=5.0)
    assert zero.allowed and not zero.at_zero
    assert zero.autoscaling.min_replicas == 1
    assert "exceed --max-miss-pct" in zero.why_not_zero()
    assert any(c.lost == 0 for c in zero.zeros)  # no 503: the share of held requests decided
    loose, _ = step(ZERO, night_day(tmp_path, 1.5, 1, 0.15), max_miss=20.0)
    assert loose.at_zero


def test_tune_never_picks_zero_where_the_stack_refuses_it(tmp_path):
    zero, tuner = step(PROD, night_day(tmp_path, 0.5, 1, 2.0))  # the stack refuses zero on any day
    assert not zero.allowed and not zero.at_zero and zero.zeros == ()
    assert zero.autoscaling.min_replicas == zero.own.min_replicas >= 1
    assert "not allowed" in zero.why_not_zero()
    # the stack file's own rules refuse the block at zero too
    at_zero = zero.autoscaling.model_copy(update={"min_replicas": 0})
    assert not tuner.accepted(tuner.start(), at_zero)


@pytest.mark.slow
def test_tune_prints_minreplicas_0_and_the_cooldown_period(tmp_path, capsys):
    day = night_day(tmp_path, 2, 3, 0.1)
    argv = ["tune", "--stack", str(ZERO), "--traffic", day, "--max-miss-pct", "5", "--passes", "1"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    result = json.loads(out.getvalue())
    block = yaml.safe_load(result["yaml"])["autoscaling"]
    assert result["scale_to_zero"]["min_replicas"] == block["minReplicas"] == 0
    assert block["cooldownPeriod"] == result["scale_to_zero"]["cooldown_period_s"]
    assert result["scale_to_zero"]["lost"] == [0]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "scale to zero: minReplicas 0, cooldownPeriod" in text and "minReplicas: 0" in text
