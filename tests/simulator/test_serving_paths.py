"""The serving-paths what-if (simulator/search/serving_paths*.py, serving/kv_paths*.py): when prefill/decode
disaggregation and a CPU KV tier pay, what moving KV costs, the recommendation, and the published comparison."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from llm_platform.config.schema import Slo
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.model_profiles import profile
from llm_platform.simulator.commands import cli
from llm_platform.simulator.search.serving_paths import Inputs, build, role_tensor_parallel
from llm_platform.simulator.search.serving_paths_day import PathDay, best_shapes, recommend, simulate_day
from llm_platform.simulator.search.serving_paths_stack import PathsRun, paths_run
from llm_platform.simulator.serving.kv_paths import (
    PrefixCache,
    kv_transfer_seconds,
    replica_network_bytes_per_second,
)
from llm_platform.simulator.serving.kv_paths_points import compare_all, held_out
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from llm_platform.simulator.traffic.traffic import TokenMix, load

LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"


@pytest.fixture(scope="module")
def long_prompt_70b_day() -> list[PathDay]:
    """Llama-3.1-70B on p5.48xlarge (TP 8), 8k-token prompts and 1k-token answers at the seed day's rate,
    SLO TTFT 2 s / ITL 50 ms: llm-d's 'large model, long input' case for P/D."""
    instance = GPU_INSTANCES["p5.48xlarge"]
    traffic = load(
        "builtin:seed-day", 0, TokenMix(input_median=8000, output_median=1000, max_input=16384), 1.0
    )
    model = ReplicaModel(profile(LLAMA_70B), instance.gpu, 8)
    stats = TokenStats.from_arrays(traffic.input_tokens, traffic.output_tokens)
    slo = Slo(ttft_seconds=2.0, itl_seconds=0.05)
    inputs = Inputs(model, instance, stats, traffic.input_tokens, slo, PrefixCache(0.0, 64.0), 1024.0)
    usd_per_gpu = instance.on_demand_usd_per_hour("us-east-1") / instance.gpus
    return best_shapes([simulate_day(p, traffic, slo, usd_per_gpu, 1) for p in build(inputs)])


@pytest.fixture(scope="module")
def short_chat_small_model() -> PathsRun:
    """prod's Mistral-7B GPTQ on g5.2xlarge on the seed day's short chat turns (128-token prompts, 96 out)."""
    return paths_run("prod", "mistral-7b", load("builtin:seed-day", 0), 0.0, 64.0)


def _by_name(days: list[PathDay]) -> dict[str, PathDay]:
    return {d.name: d for d in days}


def test_pd_pays_for_a_long_prompt_70b_day(long_prompt_70b_day: list[PathDay]) -> None:
    days = _by_name(long_prompt_70b_day)
    assert days["pd"].meets_slo and days["aggregated"].meets_slo
    assert days["pd"].usd_per_day < days["aggregated"].usd_per_day
    assert recommend(long_prompt_70b_day) is days["pd"]
    # decode replicas carry no prompt chunk: their token gaps are not stalled by 8k-token prefills
    decode = days["pd"].path.roles[1].table
    assert decode.stats.mean_input == 1.0
    assert days["pd"].path.transfer_s > 0


def test_pd_does_not_pay_for_short_chat_on_a_small_model(short_chat_small_model: PathsRun) -> None:
    days = _by_name(short_chat_small_model.days)
    assert days["pd"].usd_per_day > days["aggregated"].usd_per_day
    assert short_chat_small_model.best is days["aggregated"]
    assert short_chat_small_model.block() == {}


def _cpu_tier_run(working_set_gib: float, reuse: float) -> PathsRun:
    traffic = load("builtin:seed-day", 0, TokenMix(input_median=800, output_median=150), 0.2)
    return paths_run("prod", "mistral-7b", traffic, reuse, working_set_gib)


def test_cpu_tier_pays_when_the_shared_prefixes_outgrow_hbm_and_reuse_is_high() -> None:
    big = _cpu_tier_run(40.0, 0.8)  # g5.2xlarge holds ~12 GiB of free KV; the CPU tier adds 16 GiB
    days = _by_name(big.days)
    assert days["cpu-tier"].path.cpu_hit > 0.25
    assert days["cpu-tier"].meets_slo and not days["aggregated"].meets_slo
    assert big.best is days["cpu-tier"]
    assert big.block() == {"kvCacheOffload": {"backend": "native", "cpuGiBPerReplica": 16}}
    fits = _cpu_tier_run(8.0, 0.8)  # the working set fits in HBM: the tier finds nothing HBM does not
    small = _by_name(fits.days)
    assert small["cpu-tier"].path.cpu_hit == 0.0
    assert small["cpu-tier"].usd_per_day == small["aggregated"].usd_per_day
    assert fits.best is small["aggregated"]


def test_prefix_hits_of_a_cache_larger_than_hbm() -> None:
    cache = PrefixCache(reuse=0.9, working_set_gib=100.0)
    assert cache.hit_rates(hbm_gib=10.0) == (pytest.approx(0.09), 0.0)
    hbm, cpu = cache.hit_rates(hbm_gib=10.0, cpu_gib=90.0)
    assert (hbm, cpu) == (pytest.approx(0.09), pytest.approx(0.81))
    assert PrefixCache(0.0, 100.0).hit_rates(10.0, 90.0) == (0.0, 0.0)
    with pytest.raises(ValueError, match=r"--prefix-reuse 1.0: allowed a fraction in \[0, 1\)"):
        PrefixCache(1.0, 10.0)


def test_transfer_time_scales_with_kv_bytes_per_token_and_bandwidth() -> None:
    llama8, llama70 = profile("meta-llama/Llama-3.1-8B-Instruct"), profile(LLAMA_70B)
    assert (
        llama70.kv_bytes_per_token == 80 / 32 * llama8.kv_bytes_per_token
    )  # 80 layers vs 32, 8 KV heads each
    link = 50e9
    t8 = kv_transfer_seconds(llama8, 4000, link, link)
    assert t8 == pytest.approx(4000 * 131072 / 50e9)
    assert kv_transfer_seconds(llama70, 4000, link, link) == pytest.approx(2.5 * t8)
    assert kv_transfer_seconds(llama8, 8000, link, link) == pytest.approx(2 * t8)
    assert kv_transfer_seconds(llama8, 4000, 2 * link, 2 * link) == pytest.approx(t8 / 2)
    assert kv_transfer_seconds(llama8, 4000, 2 * link, link) == pytest.approx(t8)  # the slower link bounds it
    p5 = GPU_INSTANCES["p5.48xlarge"]  # 3200 Gbit/s of EFA over 8 GPUs
    assert replica_network_bytes_per_second(p5, 8) == pytest.approx(400e9)
    assert replica_network_bytes_per_second(p5, 4) == pytest.approx(200e9)


def test_the_recommendation_is_the_cheapest_path_meeting_the_slo(long_prompt_70b_day: list[PathDay]) -> None:
    best = recommend(long_prompt_70b_day)
    assert best is not None and best.meets_slo
    assert all(best.usd_per_day <= d.usd_per_day for d in long_prompt_70b_day if d.meets_slo)
    cheap_but_missing = replace(long_prompt_70b_day[0], usd_per_day=1.0, miss_pct=50.0)
    assert recommend([cheap_but_missing, *long_prompt_70b_day[1:]]) is best
    assert recommend([cheap_but_missing]) is None


def test_published_comparison_keeps_one_source_held_out() -> None:
    comparisons = compare_all()
    roles = {c.point.role for c in comparisons}
    assert roles == {"calibration", "checked", "held out"}
    (out,) = held_out()
    calibration_sources = {c.point.source for c in comparisons if c.point.role == "calibration"}
    assert out.point.source not in calibration_sources
    assert all(abs(c.error) < 1e-9 for c in comparisons if c.point.role == "calibration")


def test_the_command_prints_the_paths_recommendation_and_held_out_error(capsys) -> None:
    argv = ["serving-paths", "prod", "--model", "mistral-7b", "--prefix-reuse", "0.8", "--working-set-gib", "40",
            "--input-tokens", "800", "--output-tokens", "150", "--scale", "0.2"]  # fmt: skip
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    for path in ("aggregated", "pd", "cpu-tier", "pd+cpu-tier"):
        assert f"\n{path} " in text
    assert "recommended: cpu-tier; set under models[0] (mistral-7b)" in text
    assert "kvCacheOffload:" in text and "cpuGiBPerReplica: 16" in text
    assert "pd-nvlink-7500 [held out] KV transfer ms: published 8, model" in text and "error" in text
    assert cli.main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["path"] for p in data["paths"]] == ["aggregated", "pd", "cpu-tier", "pd+cpu-tier"]
    assert data["recommended"] == "cpu-tier"
    assert data["stack_file"]["block"] == {"kvCacheOffload": {"backend": "native", "cpuGiBPerReplica": 16}}
    assert [p["role"] for p in data["published"]] == [
        "calibration",
        "checked",
        "calibration",
        "checked",
        "held out",
    ]


def test_a_cpu_tier_larger_than_the_hosts_memory_is_refused(capsys) -> None:
    assert cli.main(["serving-paths", "prod", "--model", "mistral-7b", "--cpu-gib", "64"]) != 0
    err = capsys.readouterr().err
    assert "--cpu-gib 64" in err and "g5.2xlarge has 32 GiB of host memory" in err and "allowed" in err


def test_pd_roles_try_every_tensor_parallelism_that_holds_the_model() -> None:
    """A P/D role may run on fewer GPUs than the deployed replica, down to the smallest that holds the weights
    and one request's KV: 70B on H100 (80 GB) down to TP 2, on A100-40GB to TP 4; a multi-node replica keeps its shape."""

    def shapes(instance_type: str, tp: int) -> list[int]:
        instance = GPU_INSTANCES[instance_type]
        model = ReplicaModel(profile(LLAMA_70B), instance.gpu, tp)
        inputs = Inputs(model, instance, TokenStats.fixed(8000, 1000), np.full(4, 8000.0), Slo(ttft_seconds=2.0, itl_seconds=0.05), PrefixCache(0.0, 1.0), 1.0)  # fmt: skip
        return role_tensor_parallel(inputs)

    assert shapes("p5.48xlarge", 8) == [8, 4, 2]
    assert shapes("p4d.24xlarge", 8) == [8, 4]
    assert shapes("p5.48xlarge", 16) == [16]
