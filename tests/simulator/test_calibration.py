"""The replica model against published vLLM measurements (simulator/serving/calibration.py, docs/simulator/calibration.md).

Only the documented tolerance is asserted: every cell is within 20 % or carries an explanation, and
explanations that make a checkable claim are checked; TPOT is within 20 % on every non-overloaded point of at
least three GPU types and two TP sizes; overload is detected where published runs failed. The figures
themselves are printed (`calibrate`), and the doc must carry exactly what the command prints.
"""

from __future__ import annotations

import math
from collections import defaultdict
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from llm_platform.config.loader import ROOT
from llm_platform.facts.catalog import H100
from llm_platform.facts.model_profiles import profile
from llm_platform.simulator.serving import calibration, steps
from llm_platform.simulator.serving.benchmark import burst, cached_tokens
from llm_platform.simulator.serving.calibration import (
    BEGIN,
    COMMAND,
    END,
    POINTS,
    TOLERANCE,
    bandwidth_floor_ms,
    overload_agrees,
    ttft_gap_in_tpot_shortfalls,
    with_table,
    within_tolerance,
)
from llm_platform.simulator.serving.calibration_points import (
    A100_SERVERS,
    LITTLE,
    LLMPERF_OUTPUT,
    METRICS,
    cached_prompts,
    llmperf_spacing_s,
)
from llm_platform.simulator.serving.calibration_rates import (
    INFERENCE_PERF,
    PUBLISHED_TPOT,
    RATE_POINTS,
    hit_rate,
)
from llm_platform.simulator.serving.calibration_runs import RUN_METRICS, published_tpot_rps
from llm_platform.simulator.serving.overload import VLLM_BENCH, simulate
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from llm_platform.simulator.serving.replica_config import (
    CALIBRATION,
    REQUEST_OVERHEAD_SECONDS,
    EngineConfig,
)


@cache
def rows() -> dict[str, dict[str, object]]:
    """calibrate's rows by point id, computed when a test first reads them (seconds: not at collection, which
    every xdist worker does)."""
    return {str(r["id"]): r for r in calibration.rows()}


SIMULATOR_MD = ROOT / "docs" / "simulator" / "calibration.md"


def _calm(row: dict[str, object]) -> bool:
    """Not overloaded, by the published run or by the model."""
    return not row["overloaded_published"] and not row["overloaded_model"]


def test_the_doc_carries_the_table_the_command_prints() -> None:
    doc = SIMULATOR_MD.read_text()
    table = calibration.markdown_table(list(rows().values()))
    assert with_table(doc, table) == doc, (
        f"docs/simulator/calibration.md's calibration table is stale: run `{COMMAND}`"
    )


@pytest.mark.parametrize("point", POINTS, ids=[p.id for p in POINTS])
def test_point_within_tolerance_or_explained(point):
    row = rows()[point.id]
    explained = row["explained"]
    assert isinstance(explained, dict)
    for metric in METRICS:
        assert within_tolerance(row, metric) or metric in explained, (
            point.id,
            metric,
            row[f"{metric}_error"],
        )


def test_tpot_within_tolerance_on_three_gpu_types_and_two_tp_sizes():
    """The issue's target for TPOT: every non-overloaded point of a (GPU, TP) group within 20 %, unexplained."""
    groups: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for row in rows().values():
        if row["tpot_published"] is not None and _calm(row):
            groups[(str(row["gpu"]), int(str(row["tp"])))].append(within_tolerance(row, "tpot"))
    passing = [key for key, ok in groups.items() if all(ok)]
    assert len({gpu.split("-")[0] for gpu, _ in passing}) >= 3, passing
    assert len({tp for _, tp in passing}) >= 2, passing


def test_overload_detected_where_published_runs_failed():
    """The model calls a rate overloaded exactly where the published run had requests fail (the issue's target),
    including the CodeLlama-34B TP2 reasoning run, which only 4 of 4,800 timeouts mark."""
    rated = [r for r in rows().values() if r["overloaded_published"] is not None]
    assert any(r["overloaded_published"] for r in rated) and any(not r["overloaded_published"] for r in rated)
    disagreements = {
        str(r["id"]): (r["failed_published"], r["overloaded_model"]) for r in rated if not overload_agrees(r)
    }
    assert not disagreements, disagreements


def test_calibration_covers_a10g_l4_a100_and_h100_from_low_load_to_saturation():
    gpus = {p.gpu.name for p in POINTS}
    assert {"A10G", "L4", "H100"} <= gpus and gpus & {"A100-40GB", "A100-80GB"}
    for gpu in ("A10G", "L4", "A100-80GB"):
        loads = [p.load for p in POINTS if p.gpu.name == gpu]
        assert min(loads) <= 10 and max(loads) >= 32
    assert {p.tp for p in RATE_POINTS} == {1, 2, 4}


def test_unexplained_points_are_the_majority_of_tpot():
    """TPOT is the quantity the platform's SLO bounds: it must be predicted, not explained away."""
    tpot = [r for r in rows().values() if r["tpot_published"] is not None]
    assert sum(within_tolerance(r, "tpot") for r in tpot) >= 0.85 * len(tpot)


def test_a10g_low_concurrency_points_within_tolerance():
    """llmperf's waves of up to 4 prompts, paced by the driver's C = 1 time per prompt: within 20 %, C <= 2
    within 10 % (at C = 4 the pacing is close to a prompt's prefill, where TTFT is most sensitive to it)."""
    for c in (1, 2, 4):
        row = rows()[f"A10G-llmperf-C{c}"]
        for metric in ("ttft", "tpot", "tok_s"):
            err = row[f"{metric}_error"]
            assert isinstance(err, float) and abs(err) <= (0.10 if c <= 2 else TOLERANCE), (c, metric, err)


def test_llmperf_ran_whole_waves():
    """The footnote's protocol, from the CSV itself: each row's mean output length is a whole number of tokens
    over ceil(100 / C) x C requests (104 at C = 8, 112 at 16, 128 at 32 and 64), not over 100: the driver
    collected every request of a wave before the next (llmperf@e22c830), and stopped after the wave that
    took it past 100."""
    for c, out in LLMPERF_OUTPUT.items():
        n = math.ceil(100 / c) * c
        assert out * n == pytest.approx(round(out * n), abs=1e-6), (c, out * n)
        if n != 100:
            assert abs(out * 100 - round(out * 100)) > 1e-3, (c, out * 100)


def test_llmperf_driver_pacing_slows_with_concurrency():
    """The footnote's figures: the driver's time per prompt that each row's wave duration implies."""
    spacing = {c: llmperf_spacing_s(c) for c in LLMPERF_OUTPUT}
    assert spacing[1] == pytest.approx(0.120, abs=0.001)
    assert all(0.09 <= spacing[c] <= 0.14 for c in (1, 2, 4, 8, 16)), spacing
    assert spacing[32] == pytest.approx(0.21, abs=0.005) and spacing[64] == pytest.approx(0.41, abs=0.01)


def test_a100_burst_cache_hits_are_the_ones_vllm_logged():
    """The bursts' cached prompts, replayed in each server's run order (a test run of prompt 0, then the burst,
    whose first `cached_prompts` hit), give the cumulative prefix-cache hit rate vLLM logged after every run."""
    prompt = 1024
    for runs in A100_SERVERS.values():
        hits = queries = 0.0
        before: tuple[int, ...] = ()
        for n, logged in runs:
            hits += (
                cached_tokens(prompt) if before else 0.0
            )  # the test run's prompt 0, cached by an earlier run
            hits += cached_prompts(n, before) * cached_tokens(prompt)
            queries += (1 + n) * prompt
            assert 100 * hits / queries == pytest.approx(logged, abs=0.15), (n, before, logged)
            before += (n,)


def test_a_burst_prefills_only_what_the_cache_misses():
    from llm_platform.facts.catalog import A100_80

    model = ReplicaModel(profile("Qwen/Qwen2-7B-Instruct"), A100_80, 1, EngineConfig(max_model_len=4096))
    table = model.table(TokenStats.fixed(1024, 256))
    cold, half, warm = burst(table, 20), burst(table, 20, cached=10), burst(table, 20, cached=20)
    assert warm.ttft_s < cold.ttft_s / 10
    assert warm.ttft_s < half.ttft_s < cold.ttft_s
    assert half.ttft_median_s is not None and cold.ttft_median_s is not None
    assert half.ttft_median_s < cold.ttft_median_s / 2  # the cached half's first tokens come first


def test_rate_point_tail_is_not_the_arrivals():
    """[11]'s check: the 70B TP4 point at 20 req/s run request by request on the engine's step loop gives
    no tail under the run's constant arrivals, nor under Poisson ones, and agrees with the steady-state
    table the calibration reads (TTFT and TPOT within 10 %)."""
    point = next(p for p in RATE_POINTS if p.id == "H100-llama2-70b-tp4-general-R20")
    model = ReplicaModel(point.profile, point.gpu, point.tp, engine=point.engine)
    n = int(point.load * 40)
    gaps = np.random.default_rng(1).exponential(1 / point.load, n)
    for sent in (np.arange(n) / point.load, np.cumsum(gaps)):
        trace = steps.run(model, sent, np.full(n, point.input_tokens), np.full(n, int(point.output_tokens)))
        settled = slice(n // 3, None)  # after the running set has filled
        ttft = trace.ttft[settled]
        assert ttft.mean() == pytest.approx(np.median(ttft), rel=0.05)
        row = rows()[point.id]
        assert ttft.mean() * 1000 == pytest.approx(row["ttft_model"], rel=0.10)
        tpot = (trace.latency - trace.ttft)[settled] / (point.output_tokens - 1)
        assert tpot.mean() * 1000 == pytest.approx(row["tpot_model"], rel=0.10)


def test_little_explanations_hold():
    """Where tok/s is explained by the published row contradicting Little's law, the model matches Little."""
    for row in rows().values():
        explained = row["explained"]
        assert isinstance(explained, dict)
        if explained.get("tok_s") == LITTLE:
            little, model = row["tok_s_little"], row["tok_s_model"]
            assert isinstance(little, float) and isinstance(model, float)
            assert model == pytest.approx(little, rel=TOLERANCE), row["id"]
            published = row["tok_s_published"]
            assert isinstance(published, (int, float)) and published < (1 - TOLERANCE / 2) * little


def test_inference_perf_tpot_is_below_the_bandwidth_floor_and_the_latency_tpot_above_it():
    """The doc's claim: the load generator's own TPOT is faster than an H100 can read the bytes of a step."""
    for p in RATE_POINTS:
        if rows()[p.id]["overloaded_published"]:
            continue
        assert isinstance(p.tpot_ms, float)
        assert PUBLISHED_TPOT[p.id] < bandwidth_floor_ms(p) < p.tpot_ms, p.id
        assert PUBLISHED_TPOT[p.id] == pytest.approx(p.tpot_ms / 2, rel=0.02), p.id  # two events a token


def test_request_overhead_is_h25_less_one_weight_read():
    """docs/simulator/calibration.md "Host overhead": H25's C = 1 TTFT p50 (13.98 ms) less the least time its prefill step
    can take, one read of Llama-3.1-8B's weights at the H100's calibrated bandwidth."""
    read = profile("meta-llama/Llama-3.1-8B-Instruct").weight_bytes / (
        H100.hbm_bandwidth_gbps * 1e9 * CALIBRATION["H100"].bandwidth_efficiency
    )
    assert pytest.approx(0.01398 - read, abs=5e-5) == REQUEST_OVERHEAD_SECONDS


def test_what_the_host_model_leaves_on_the_rate_points():
    """docs/simulator/calibration.md "Host overhead": with the API-server constant and the async-scheduling step, the
    held-out rate points up to 10 req/s have TTFT mean and median within tolerance; what is left at TP4 is
    2-3 steps of the model's TPOT shortfall (the waits and the prefill are counted in steps), and at TP1 less
    than that (the constant is an upper bound; TP2's CodeLlama rows, 1.8-3.3 steps, are not part of that
    claim); the 20 req/s TP4 mean is the tail footnote's."""
    for p in RATE_POINTS:
        row = rows()[p.id]
        if not _calm(row) or p.load > 10:
            continue
        for metric in ("ttft", "ttft_median"):
            error = row[f"{metric}_error"]
            assert isinstance(error, float) and abs(error) <= TOLERANCE, (p.id, metric, error)
        gap = ttft_gap_in_tpot_shortfalls(row)
        if p.tp in (1, 4):
            assert (2.0 <= gap <= 3.0) if p.tp == 4 else (0.0 <= gap < 2.0), (p.id, gap)
    tail = rows()["H100-llama2-70b-tp4-general-R20"]
    assert isinstance(tail["ttft_median_error"], float) and abs(tail["ttft_median_error"]) <= TOLERANCE


def test_the_published_overloaded_runs_are_replayed_with_their_client():
    """Every rate run that had requests fail is replayed request by request with inference-perf's one 300 s
    attempt. A figure off by more than the tolerance carries why_off, whose claim holds: the published TPOT's
    running cap serves less than the model's saturation rate, which is below the offered rate. The KV-bound
    Llama-2-7b run (32 KV heads: its cache, not max_num_seqs, limits the running set) agrees on every figure."""
    runs = {p.id: (p, rows()[p.id]["run"]) for p in RATE_POINTS if p.failed}
    assert len(runs) == 3
    for point_id, (point, run) in runs.items():
        assert isinstance(run, dict)
        errors = [run[f"{m}_error"] for m in RUN_METRICS]
        off = any(abs(e) > TOLERANCE for e in errors)
        assert bool(run["why_off"]) == off, point_id
        if off:
            assert published_tpot_rps(point) < run["saturation_rps"] < point.load, point_id
    seven = runs["H100-llama2-7b-tp1-reasoning-R4"][1]
    assert isinstance(seven, dict) and seven["succeeded_model"] < 0.2 * seven["requests"]
    assert all(abs(seven[f"{m}_error"]) <= TOLERANCE for m in RUN_METRICS)


def test_the_clients_timeout_is_what_fails_an_overloaded_run():
    """The same 7B run with `vllm bench serve`'s 6 h timeout fails nothing: its requests wait instead."""
    point = next(p for p in RATE_POINTS if p.id == "H100-llama2-7b-tp1-reasoning-R4")
    assert point.requests is not None
    arrivals = np.arange(point.requests) / point.load
    patient = simulate(calibration._table(point), arrivals, np.array([point.output_tokens]), VLLM_BENCH)
    assert patient.failed == 0 and patient.ttft_s.max() > INFERENCE_PERF.timeout_s


def test_prefix_hits_are_whole_blocks_below_the_prompt():
    assert hit_rate(575.5, 1, 12000) == pytest.approx(560 / 575.5)
    assert hit_rate(575.5, 0, 4800) == pytest.approx((1 - 100 / 4800) * 560 / 575.5)
    assert hit_rate(577, 1, 1) == pytest.approx(576 / 577)  # 577 - 1 = 576 = 36 whole blocks


def test_markdown_table_lists_every_point_and_its_sources():
    text = calibration.markdown_table(list(rows().values()))
    for p in POINTS:
        assert f"| {p.id} |" in text
    assert "ray-project/llmperf" in text and "dennislee22/vLLM-benchmarking" in text
    assert "inference-sim/training" in text


def test_write_docs_replaces_only_the_marked_block(tmp_path: Path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{BEGIN}\nold\n{END}\nafter\n")
    assert calibration.write_docs(doc, "new table")
    assert doc.read_text() == f"before\n{BEGIN}\nnew table\n{END}\nafter\n"
    assert not calibration.write_docs(doc, "new table")
    with pytest.raises(ValueError, match="calibrate:begin"):
        with_table("no markers", "table")


def test_a_burst_beyond_the_running_cap_waits_for_the_waves_before_it():
    from llm_platform.facts.catalog import A100_80
    from llm_platform.facts.model_profiles import profile
    from llm_platform.simulator.serving.benchmark import burst
    from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
    from llm_platform.simulator.serving.replica_config import EngineConfig

    engine = EngineConfig(max_num_seqs=50, max_model_len=4096)
    table = ReplicaModel(profile("Qwen/Qwen2-7B-Instruct"), A100_80, 1, engine).table(
        TokenStats.fixed(512, 256)
    )
    one, three = burst(table, 50), burst(table, 150)
    wave = 150 * 256 / three.output_tokens_per_s / 3
    assert one.ttft_median_s == pytest.approx(one.ttft_s, rel=0.05)  # one wave: an even drain
    assert three.ttft_s == pytest.approx(one.ttft_s + wave, rel=0.05)  # waits 0, 1 or 2 waves
    assert three.ttft_median_s == pytest.approx(one.ttft_s + wave, rel=0.05)
    assert three.output_tokens_per_s == pytest.approx(one.output_tokens_per_s, rel=0.05)
