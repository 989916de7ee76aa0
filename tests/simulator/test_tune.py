"""`simulator tune` on short generated days: meets the target on every training day, never places a day's
pre-warm windows from that same day, reports holdout days and the oracle, and prints YAML to paste."""

from __future__ import annotations

import contextlib
import io
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_platform.config.loader import ROOT
from llm_platform.simulator.commands.cli import main
from llm_platform.simulator.search.knobs import MAX_REPLICAS
from llm_platform.simulator.search.stack_rules import pool_gpu_limit, stack_accepts
from llm_platform.simulator.search.stacks import stack_run
from llm_platform.simulator.search.tune import Tuner
from llm_platform.simulator.traffic import family
from llm_platform.simulator.traffic.traffic import load

STACK = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.prod.yaml"  # only its model and pool are read


@cache
def tune_json(*argv: str) -> dict[str, Any]:
    """`simulator tune ARGV --json`, run once per test process: the tests that assert on the same command (the
    same day files) share its search (tests/conftest.py keeps them on one xdist worker)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def shared_days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the day files of the shared tune commands live (one path per day, so one command line)."""
    return tmp_path_factory.mktemp("days")


def short_day(tmp_path, name: str, surge_at: int, minutes: int = 180) -> str:
    """A 3-hour day (or `minutes`) at a prod-sized rate with a 30-minute surge that outruns a cold start."""
    rate = np.full(minutes, 4.0)
    rate[surge_at : surge_at + 30] = 40.0
    f = tmp_path / f"{name}.csv"
    f.write_text("minute,requests_per_second\n" + "".join(f"{m},{r}\n" for m, r in enumerate(rate)))
    return str(f)


def test_windows_come_from_surges_that_recur_on_other_days_never_from_the_scored_day(tmp_path):
    days = (("a", 60), ("b", 60), ("c", 60), ("once", 120))
    runs = [stack_run(STACK, None, load(short_day(tmp_path, n, at))) for n, at in days]
    tuner = Tuner(runs, 5.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1)
    own = [{w.name for w in ws} for ws in tuner.windows]
    assert own[0] == own[1] == own[2] and own[3] and own[3].isdisjoint(own[0])
    # scoring a: b's and c's surge recur (on each other), the one-off surge of `once` is noise
    assert {w.name for w in tuner.windows_for(0)} == own[0]
    assert {w.name for w in tuner.windows_for(None)} == own[0]
    # a surge seen on only one other day is not a schedule
    two = Tuner(runs[1:], 5.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1)
    assert two.windows_for(0) == []  # b scored from c (one day) and `once`: nothing recurs
    known = Tuner(runs, 5.0, surge_known=True, stack_max=runs[0].max_replicas, stack_min=1)
    assert {w.name for w in known.windows_for(3)} == own[0] | own[3]  # a known surge counts on its own day


@pytest.mark.slow
def test_tune_json_reports_every_day_with_oracle_and_yaml(tmp_path, capsys):
    a, b, c = (short_day(tmp_path, n, at) for n, at in (("a", 60), ("b", 90), ("c", 75)))
    argv = [
        "tune",
        "--stack",
        str(STACK),
        "--traffic",
        a,
        b,
        "--holdout",
        c,
        "--max-miss-pct",
        "50",
        "--passes",
        "1",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert [d["holdout"] for d in out["days"]] == [False, False, True]
    assert all(d["cost_vs_oracle"] is not None and d["cost_vs_oracle"] > 0 for d in out["days"])
    assert out["yaml"].startswith("autoscaling:") and out["path"].startswith("models[0]")
    if out["meets_target_on_every_training_day"]:
        assert all(d["slo_violation_pct"] <= 50 for d in out["days"] if not d["holdout"])


@pytest.mark.parametrize("kind", family.KINDS)
def test_family_days_are_distinct_and_positive(kind):
    day = family.day(kind, seed=1)
    assert len(day) == 1440 and day.min() > 0
    if kind != "seed":
        assert not np.allclose(day, family.day("seed"))


def test_tune_rejects_a_miss_target_over_100(tmp_path, capsys):
    assert (
        main(
            [
                "tune",
                "--stack",
                str(STACK),
                "--traffic",
                short_day(tmp_path, "a", 60),
                "--max-miss-pct",
                "150",
            ]
        )
        == 2
    )
    assert "percentage" in capsys.readouterr().err


RESERVATIONS = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.reservations.yaml"


def steady_day(tmp_path, name: str, rate: float, minutes: int = 120) -> str:
    """Two hours (or `minutes`) at a steady rate: the 70B model holds one p5 node all day."""
    f = tmp_path / f"{name}.csv"
    f.write_text("minute,requests_per_second\n" + "".join(f"{m},{rate}\n" for m in range(minutes)))
    return str(f)


def reserved_tuner(tmp_path, usd_per_hour: float, minutes: int = 120) -> Tuner:
    day = load(steady_day(tmp_path, "steady", 1.0, minutes))
    runs = [stack_run(RESERVATIONS, "llama-70b", day, reserved_usd_per_hour=usd_per_hour)]
    return Tuner(runs, 5.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1, reserved_max=2)


@pytest.mark.slow
def test_the_tuner_reserves_what_a_cheap_block_rate_pays_for(tmp_path):
    p5 = 55.04  # p5.48xlarge on-demand in us-east-1 (the fixture's region)
    tuner = reserved_tuner(tmp_path, 0.5 * p5)
    knobs = tuner.search(passes=1)
    assert knobs["reserved_instances"] == 1  # the one node the steady day keeps up
    chosen = tuner.score(knobs)[0]
    assert chosen < tuner.score({**knobs, "reserved_instances": 0})[0]  # cheaper than buying it on-demand
    assert chosen < tuner.score({**knobs, "reserved_instances": 2})[0]  # a second, idle block is waste


def test_the_progress_counts_each_candidate_simulated_within_the_bound_said_up_front(tmp_path):
    # a 10-minute day: the same 52 candidates (and the same pick) as on 30 minutes or two hours, the count is
    # the search's path, not the day's length
    tuner = reserved_tuner(tmp_path, 20.0, minutes=10)
    scored = []
    tuner.on_scored = lambda: scored.append(1)
    tuner.search(passes=1)
    assert 0 < len(scored) == len(tuner._cache) <= tuner.most_candidates(passes=1)  # pyright: ignore[reportPrivateUsage]


@pytest.mark.slow
def test_the_tuner_reserves_nothing_above_the_on_demand_rate(tmp_path):
    assert reserved_tuner(tmp_path, 1.5 * 55.04).search(passes=1)["reserved_instances"] == 0


@pytest.mark.slow
def test_tune_prints_the_reserved_count_beside_the_yaml(tmp_path, capsys):
    argv = [
        "tune", "--stack", str(RESERVATIONS), "--model", "llama-70b", "--traffic", steady_day(tmp_path, "a", 1.0),
        "--max-miss-pct", "5", "--passes", "1", "--reserved-usd-per-hour", "20",
    ]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    # how long it takes, said on stderr once the first candidate is timed (a bar too, on a terminal)
    assert re.search(
        r"^tune: candidates scored, 1 days each: \d+ candidates at about [\d.]+ s each: at most ", err, re.M
    )
    yaml_at, reserve_at = (
        out.index("autoscaling:"),
        out.index("and reserve 1 x p5.48xlarge (8 GPUs) at $20.00/h"),
    )
    assert yaml_at < reserve_at
    assert "($480.00/day, included in GPU $/day above)" in out
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""  # --json: nothing but the JSON
    assert json.loads(out)["reserved"] == {
        "instances": 1, "instance_type": "p5.48xlarge", "gpus": 8, "usd_per_hour": 20.0,
        "prepaid_usd_per_day": 480.0,
    }  # fmt: skip


@pytest.mark.slow
def test_the_tuner_searches_headroom_and_prints_the_pools_block(tmp_path, shared_days, capsys):
    """Headroom is a knob like the others: its candidates are simulated as the plan renders them, within the
    pool's gpuLimit, and the chosen block is printed beside the autoscaling YAML."""
    import yaml

    from llm_platform.config.schema import Headroom, HeadroomWindow

    runs = [stack_run(STACK, None, load(short_day(tmp_path, "a", 60)))]
    tuner = Tuner(runs, 5.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1)
    assert "headroom_placeholders" in tuner.space and "headroom_hours" in tuner.space
    base = {
        "kv_target_scale": 1.0, "queue_depth_per_replica": 2.0, "min_replicas": 1, "scale_down_window": 300,
        "prewarm": "none", "headroom_placeholders": 0, "headroom_hours": "all-day",
    }  # fmt: skip
    assert tuner.headroom(base) is None
    assert tuner.headroom({**base, "headroom_placeholders": 2}) == Headroom(gpus=2)
    assert tuner.headroom({**base, "headroom_placeholders": 2, "headroom_hours": "07-21"}) == Headroom(
        gpus=0, schedule=[HeadroomWindow(start="0 7 * * *", end="0 21 * * *", timezone="UTC", gpus=2)]
    )
    # warm GPUs are simulated (and paid): two held all day cost more than none on a quiet day
    assert tuner.score({**base, "headroom_placeholders": 2})[0] > tuner.score(base)[0]
    pool = runs[0].pool.pool
    others = sum(m.scaling.min_replicas * m.gpus for m in runs[0].pool.models if m.name != runs[0].model_name)
    capped = tuner.headroom({**base, "headroom_placeholders": 10_000})
    assert capped is not None and capped.gpus == pool.gpu_limit - others - 1, "gpuLimit less minReplicas"
    argv = ["tune", "--stack", str(STACK), "--traffic", short_day(shared_days, "b", 90), "--max-miss-pct", "50",
            "--passes", "1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        out.index("autoscaling:")
        < out.index(f"and under gpuNodePools[0] ({pool.name})")
        < out.index("headroom:")
    )
    block = yaml.safe_load(tune_json(*argv)["headroom_yaml"])
    assert (
        block is None
        or block["headroom"]["gpus"] + sum(w["gpus"] for w in block["headroom"].get("schedule", [])) > 0
    )


def test_max_replicas_is_a_knob_when_the_peak_needs_more_with_the_pool_limit_it_takes(tmp_path):
    rate = np.full(60, 4.0)
    rate[15:45] = 15.0 * 14  # half an hour that needs more replicas than the fixture's maxReplicas
    day = tmp_path / "peak.csv"
    day.write_text("minute,requests_per_second\n" + "".join(f"{m},{r}\n" for m, r in enumerate(rate)))
    (run,) = runs = [stack_run(STACK, None, load(str(day)))]
    tuner = Tuner(runs, 5.0, surge_known=False, stack_max=run.max_replicas, stack_min=1)
    candidates = tuner.space[MAX_REPLICAS]
    top = max(int(c) for c in candidates)  # pyright: ignore[reportArgumentType]
    assert run.max_replicas in candidates and top > run.max_replicas
    knobs = {"kv_target_scale": 1.0, "queue_depth_per_replica": 2.0, "min_replicas": 1,
             "scale_down_window": 300, "prewarm": "none"}  # fmt: skip
    capped = tuner.score({**knobs, MAX_REPLICAS: run.max_replicas})
    lifted = tuner.score({**knobs, MAX_REPLICAS: top})
    assert lifted[1] < capped[1]  # fewer misses on the worst day once the cap and the pool allow the peak
    assert tuner.config({**knobs, MAX_REPLICAS: top}, None).max_replicas == top
    # the pool's limit grows only by what its spare GPUs (with every model at maxReplicas) cannot hold
    room = run.plan.pool_headroom_gpus // run.plan.gpus
    assert pool_gpu_limit(run, run.max_replicas + room) is None
    beyond = pool_gpu_limit(run, run.max_replicas + room + 1)
    assert beyond == run.plan.pool.gpu_limit - run.plan.pool_headroom_gpus % run.plan.gpus + run.plan.gpus


@pytest.mark.slow
def test_the_tuner_only_proposes_what_the_stack_file_accepts(tmp_path):
    run = stack_run(STACK, None, load(short_day(tmp_path, "a", 60)))
    accepts = stack_accepts(STACK, run)
    own = run.plan.model.autoscaling
    assert accepts(own, None, None, None) is None
    # a prod model keeps two replicas: the schema's rule, applied to the candidate as `pulumi up` would
    problem = accepts(own.model_copy(update={"min_replicas": 1}), None, None, None)
    assert problem is not None and "minReplicas" in problem
    tuner = Tuner([run], 5.0, False, run.max_replicas, own.min_replicas, accepts=accepts)
    assert tuner.search(passes=1)["min_replicas"] != 1


def test_a_headroom_candidate_is_checked_by_the_stack_files_rules(tmp_path):
    """Warm GPUs beyond what gpuLimit leaves next to the models' minReplicas are refused like in the file."""
    from llm_platform.config.schema import Headroom

    run = stack_run(STACK, None, load(short_day(tmp_path, "a", 60)))
    accepts = stack_accepts(STACK, run)
    own = run.plan.model.autoscaling
    assert accepts(own, None, Headroom(gpus=2), None) is None
    problem = accepts(own, None, Headroom(gpus=run.plan.pool.gpu_limit), None)
    assert problem is not None and "headroom" in problem


@pytest.mark.slow
def test_the_pools_consolidate_after_is_a_knob_and_is_printed_for_the_pool(tmp_path, shared_days):
    """An empty GPU node kept 10 minutes after a 30-minute surge is paid for those minutes: the tuner simulates
    each consolidateAfter (the stack's own among them), checks it with the stack file's rules and prints the
    chosen one under the pool."""
    from llm_platform.simulator.search.knobs import CONSOLIDATE_AFTER

    runs = [stack_run(STACK, None, load(short_day(tmp_path, "a", 60)))]
    tuner = Tuner(runs, 50.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1)
    own = int(runs[0].setup.config.capacity.consolidate_after)
    assert own in tuner.space[CONSOLIDATE_AFTER] and 60 in tuner.space[CONSOLIDATE_AFTER]
    base = {
        "kv_target_scale": 1.0, "queue_depth_per_replica": 2.0, "min_replicas": 2, "scale_down_window": 120,
        "prewarm": "none", "headroom_placeholders": 0, "headroom_hours": "all-day", MAX_REPLICAS: 4,
    }  # fmt: skip
    quick, slow = tuner.score({**base, CONSOLIDATE_AFTER: 60}), tuner.score({**base, CONSOLIDATE_AFTER: 3600})
    assert quick[0] < slow[0], "an empty node kept an hour is paid for the hour"
    check = stack_accepts(STACK, runs[0])
    cfg = tuner.config(base, None)
    assert check(cfg, None, None, 60) is None
    argv = ["tune", "--stack", str(STACK), "--traffic", short_day(shared_days, "b", 90), "--max-miss-pct", "50",
            "--passes", "1"]  # fmt: skip
    out = tune_json(*argv)
    assert out["consolidate_after"] in {"0s", "1m", "5m", "10m", f"{own // 60}m"}
    seconds = {"0s": 0, "1m": 60, "5m": 300, "10m": 600}.get(out["consolidate_after"], own)
    assert out["knobs"][CONSOLIDATE_AFTER] == seconds


def test_how_fast_a_burst_is_walked_down_is_a_knob(tmp_path):
    """After a surge, 10 % of the replicas a minute walks them down over many minutes, each paid; 100 % drops
    to what the load asks for once the stabilization window has passed. Sized by the load, the quick drop is
    cheaper at the same misses (sized by a KV target it can cost more: a pool cut to its target refills
    its caches and asks again); the tuner searches both shares and windows down to 30 s and writes the share
    as the scale-down policy."""
    from llm_platform.config.schema import ScalingPolicy
    from llm_platform.simulator.search.knobs import SCALE_DOWN_PERCENT, SERVED_RATE_SCALE

    runs = [stack_run(STACK, None, load(short_day(tmp_path, "a", 60)))]
    tuner = Tuner(runs, 50.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1)
    assert set(tuner.space[SCALE_DOWN_PERCENT]) == {10, 100} and 30 in tuner.space["scale_down_window"]
    base = {
        "kv_target_scale": 1.0, "queue_depth_per_replica": 2.0, "min_replicas": 1, "scale_down_window": 120,
        "prewarm": "none", "headroom_placeholders": 0, "headroom_hours": "all-day", MAX_REPLICAS: 12,
        SERVED_RATE_SCALE: 0.7,
    }  # fmt: skip
    walked, dropped = ({**base, SCALE_DOWN_PERCENT: share} for share in (10, 100))
    assert tuner.config(dropped, None).scale_down.policies == [
        ScalingPolicy(type="Percent", value=100, period_seconds=60)
    ]
    (walked_cost, walked_misses, _), (dropped_cost, dropped_misses, _) = (
        tuner.score(walked),
        tuner.score(dropped),
    )
    assert dropped_cost < walked_cost, "the surge's replicas leave sooner"
    assert dropped_misses <= walked_misses + 0.5


def test_training_days_scored_in_parallel_give_the_figures_scored_one_by_one(tmp_path):
    """`search` simulates a candidate's training days one process per core: the same costs and misses."""
    days = (("a", 15), ("b", 25))  # an hour each: the figures compared are each day's, whatever its length
    runs = [stack_run(STACK, None, load(short_day(tmp_path, n, at, minutes=60))) for n, at in days]
    tuner = Tuner(runs, 50.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1)
    knobs = {**tuner.start(), "prewarm": "none"}
    one_by_one = tuner.score(knobs)
    tuner = Tuner(runs, 50.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=1)
    with tuner.parallel():
        assert tuner._pool is not None or len(runs) < 2
        in_parallel = tuner.score(knobs)
    assert [d.row() for d in in_parallel[2]] == [d.row() for d in one_by_one[2]]


def test_the_served_throughput_target_is_a_knob_that_takes_over_from_the_kv_target(tmp_path):
    """served_rate_scale x the per-replica SLO rate becomes `requestsPerSecondPerReplica`; the KV trigger then
    stays at the schema's guard near a full cache (a linear-regime KV target would still ask for maxReplicas
    in any overload), and the KV knob is not searched. 0 keeps the KV-driven config."""
    from llm_platform.config.schema import Autoscaling
    from llm_platform.simulator.search.knobs import SERVED_RATE_SCALE

    runs = [stack_run(STACK, None, load(short_day(tmp_path, "a", 60)))]
    tuner = Tuner(runs, 50.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=2)
    assert 0.0 in tuner.space[SERVED_RATE_SCALE]
    assert all(isinstance(v, float) and v < 1.0 for v in tuner.space[SERVED_RATE_SCALE])
    base = {
        "kv_target_scale": 1.0, SERVED_RATE_SCALE: 0.0, "queue_depth_per_replica": 2.0, "min_replicas": 2,
        "scale_down_window": 300, "prewarm": "none", "headroom_placeholders": 0, "headroom_hours": "all-day",
    }  # fmt: skip
    kv_driven = tuner.config(base, None)
    assert kv_driven.requests_per_second_per_replica is None
    assert kv_driven.kv_cache_usage == pytest.approx(tuner.kv_at_slo, abs=1e-4)
    served = tuner.config({**base, SERVED_RATE_SCALE: 0.7}, None)
    assert served.requests_per_second_per_replica == pytest.approx(0.7 * tuner.slo_rate, abs=0.01)
    assert served.kv_cache_usage == Autoscaling().kv_cache_usage
    # the candidate is simulated with the trigger the plan renders: a different config, a different day
    assert tuner.score({**base, SERVED_RATE_SCALE: 0.7})[2][0].cost != tuner.score(base)[2][0].cost


def test_the_search_descends_from_each_load_signal_and_keeps_the_better_end(tmp_path, monkeypatch):
    """A KV-sized start rarely crosses to a throughput-sized config one knob at a time (switching the signal
    alone misses more before the other knobs follow): the search descends from both and keeps the cheaper
    feasible end."""
    from llm_platform.simulator.search.knobs import SERVED_RATE_SCALE, SIGNAL_STARTS

    runs = [stack_run(STACK, None, load(short_day(tmp_path, "a", 60)))]
    tuner = Tuner(runs, 5.0, surge_known=False, stack_max=runs[0].max_replicas, stack_min=2)
    started: list[float] = []

    def descend(knobs, passes):
        started.append(float(knobs[SERVED_RATE_SCALE]))  # type: ignore[arg-type]
        return knobs

    costs = {0.0: (120.0, 2.0, []), 0.7: (80.0, 2.5, []), 0.8: (70.0, 6.0, [])}
    monkeypatch.setattr(tuner, "descend", descend)
    monkeypatch.setattr(tuner, "score", lambda knobs, *a, **k: costs[float(knobs[SERVED_RATE_SCALE])])
    best = tuner.search()
    assert started == [float(s[SERVED_RATE_SCALE]) for s in SIGNAL_STARTS]  # type: ignore[arg-type]
    assert best[SERVED_RATE_SCALE] == 0.7, "the cheaper end within the miss target"
