"""An SLO one replica misses even at low load is answered with what would meet it, and every option it names,
applied, does meet it (the numbers come from the same replica model)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from llm_platform.config.schema import Slo
from llm_platform.facts.catalog import instance
from llm_platform.facts.model_profiles import profile
from llm_platform.simulator.search.scenarios import recommend
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from llm_platform.simulator.serving.replica_config import EngineConfig
from llm_platform.simulator.serving.unmet import _prompts, low_load, what_would_meet  # pyright: ignore[reportPrivateUsage]
from llm_platform.simulator.traffic.traffic import TokenMix, load

SLO = Slo(ttft_seconds=0.25, itl_seconds=0.05)  # staging's


@pytest.fixture(scope="module")
def long_prompts():
    """The docs' staging example: Mistral-7B GPTQ on one A10G, llmperf's 550/150 token mix."""
    traffic = load("builtin:seed-day", 0, TokenMix(input_median=550, output_median=150), 0.02)
    model = ReplicaModel(
        profile("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"), instance("g5.2xlarge").gpu, 1, EngineConfig()
    )
    table = model.table(TokenStats.from_arrays(traffic.input_tokens, traffic.output_tokens))
    return traffic, table


def test_the_message_says_what_would_meet_the_slo_with_numbers(long_prompts) -> None:
    traffic, table = long_prompts
    with pytest.raises(ValueError, match="cannot be met") as info:
        recommend(table, traffic, SLO, 300.0, 4)
    message = str(info.value)
    assert "what would meet it: a looser objective, slo {ttftSeconds: 0.5}" in message
    assert re.search(r"shorter prompts: a median of at most [\d,]+ uncached tokens \(now 5\d\d;", message)
    assert "tensorParallelSize 2 on A10G (g5.12xlarge: P95 TTFT" in message
    assert "a faster GPU, cheapest first: L40S (g6e.xlarge" in message


def test_every_option_named_meets_the_slo(long_prompts) -> None:
    traffic, table = long_prompts
    message = what_would_meet(table, traffic, SLO)
    prompts = _prompts(traffic)
    now = low_load(table, prompts)
    assert not now.meets(SLO) and f"P95 TTFT {now.p95_ttft_s * 1000:,.0f} ms" in message
    looser = float(re.search(r"slo \{ttftSeconds: ([\d.]+)\}", message).group(1))  # pyright: ignore[reportOptionalMemberAccess]
    assert now.meets(Slo(ttft_seconds=looser, itl_seconds=SLO.itl_seconds))
    prompt = re.search(r"at most ([\d,]+) uncached tokens \(now ([\d,]+)", message)
    assert prompt is not None
    median, was = (float(x.replace(",", "")) for x in prompt.groups())
    assert low_load(table, prompts, median / was * 0.99).meets(SLO)
    assert not low_load(table, prompts, median / was * 1.05).meets(SLO)
    model = table.model
    tp2 = replace(model, tensor_parallel=2).table(table.stats, 64)
    assert low_load(tp2, prompts).meets(SLO)
    l40s = replace(model, gpu=instance("g6e.xlarge").gpu, calibration=None).table(table.stats, 64)
    assert low_load(l40s, prompts).meets(SLO)


def test_a_met_slo_needs_no_advice(long_prompts) -> None:
    traffic, table = long_prompts
    assert (
        recommend(table, traffic, Slo(ttft_seconds=0.5, itl_seconds=SLO.itl_seconds), 300.0, 4).max_replicas
        == 4
    )
