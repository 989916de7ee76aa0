"""`simulator capacity`: token distributions, arrivals, and a model given by geometry (config.json)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from llm_platform.facts import geometry
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.model_profiles import PROFILES
from llm_platform.simulator.commands import capacity_cmd
from llm_platform.simulator.commands.token_dist import token_dist
from llm_platform.simulator.serving.benchmark import arrival_state
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats


def _config(p) -> dict[str, object]:
    """The config.json fields of a known profile (as Hugging Face publishes them)."""
    return {
        "hidden_size": p.hidden_size,
        "num_hidden_layers": p.layers,
        "num_attention_heads": p.hidden_size // p.head_dim,
        "num_key_value_heads": p.kv_heads,
        "head_dim": p.head_dim,
        "vocab_size": p.vocab_size,
        "tie_word_embeddings": p.tied_embeddings,
        "torch_dtype": "bfloat16",
    }


@pytest.mark.parametrize("model_id", [m for m, p in PROFILES.items() if p.weight_bits == 16])
def test_geometry_gives_the_known_profiles_figures(model_id: str) -> None:
    known = PROFILES[model_id]
    derived = geometry.from_config(_config(known), model_id, params=known.parameters)
    assert derived == known
    gpu = GPU_INSTANCES["p5.48xlarge"].gpu
    stats = TokenStats.fixed(1000, 200)
    tp = 4 if known.parameters > 30e9 else 1
    a, b = ReplicaModel(known, gpu, tp).table(stats), ReplicaModel(derived, gpu, tp).table(stats)
    assert a.capacity_rps == b.capacity_rps
    assert np.array_equal(a.at(np.array([1.0]))["itl"], b.at(np.array([1.0]))["itl"])


GEOMETRY = [
    "--hidden-size",
    "4096",
    "--num-layers",
    "32",
    "--num-attention-heads",
    "32",
    "--num-kv-heads",
    "8",
]
GEOMETRY += ["--vocab-size", "128256"]


def test_cli_geometry_flags_file_and_model_print_the_same(tmp_path, capsys) -> None:
    known = PROFILES["meta-llama/Llama-3.1-8B-Instruct"]
    common = [
        "--instance",
        "p5.48xlarge",
        "--input-tokens",
        "1000",
        "--output-tokens",
        "200",
        "--rate",
        "4",
        "--json",
    ]
    outs = []
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(_config(known)))
    for model_args in (
        ["--model", known.hugging_face_id],
        ["--geometry", str(cfg), "--params", str(known.parameters)],
        [*GEOMETRY, "--params", str(known.parameters)],
    ):
        assert capacity_cmd.run(model_args + common) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]["sustainable"] is True and outs[0]["ttft_ms_p90"] >= outs[0]["ttft_ms_median"]


def test_counted_parameters_match_the_model_card() -> None:
    # Llama-3.1-8B config.json (intermediate_size 14336): 8.03e9 parameters on its model card.
    cfg = {**_config(PROFILES["meta-llama/Llama-3.1-8B-Instruct"]), "intermediate_size": 14336}
    assert geometry.from_config(cfg, "x").parameters == pytest.approx(8.03e9, rel=0.002)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("num_key_value_heads", 5, "divisor"),
        ("torch_dtype", "float32", "bfloat16"),
        ("hidden_size", 0, ">= 1"),
    ],
)
def test_bad_geometry_names_the_field(field: str, value: object, needle: str) -> None:
    cfg = {**_config(PROFILES["meta-llama/Llama-3.1-8B-Instruct"]), field: value}
    with pytest.raises(geometry.GeometryError, match=field) as err:
        geometry.from_config(cfg, "x", source="cfg.json", params=1e9)
    assert needle in str(err.value) and "cfg.json" in str(err.value)


@pytest.mark.parametrize("field", geometry.EXPERT_FIELDS)
def test_a_mixture_of_experts_is_refused_not_read_as_dense(field: str) -> None:
    """Mixtral-8x7B's config.json has a 7B dense geometry plus `num_local_experts: 8`: read as dense it would be
    a 7.2B model whose step reads a sixth of its 46.7B weights."""
    mixtral = {
        "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 32000, "num_experts_per_tok": 2, field: 8,
    }  # fmt: skip
    with pytest.raises(geometry.GeometryError, match=f"{field} = 8") as err:
        geometry.from_config(mixtral, "x", source="mixtral.json", params=46.7e9)
    assert "mixtral.json" in str(err.value) and "mixture-of-experts" in str(err.value)
    dense = geometry.from_config({**mixtral, field: 1}, "x")
    assert dense.parameters == pytest.approx(7.24e9, rel=0.01)


MISTRAL_7B = {
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 32000, "torch_dtype": "float16",
}  # fmt: skip


@pytest.mark.parametrize(
    "quantization",
    [
        # TheBloke/Mistral-7B-Instruct-v0.2-GPTQ config.json (main branch)
        {"bits": 4, "group_size": 128, "damp_percent": 0.1, "desc_act": True, "quant_method": "gptq"},
        # an AutoAWQ checkpoint's (GEMM kernels)
        {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    ],
)
def test_a_4_bit_checkpoint_reads_its_quantized_weights(quantization: dict[str, object]) -> None:
    """The GPTQ/AWQ config.json keeps torch_dtype float16: read as 16-bit it would be 14.5 GB of weights
    where the checkpoint's model.safetensors is 4.16 GB (the catalog's GPTQ profile)."""
    cfg = {**MISTRAL_7B, "quantization_config": quantization}
    quantized = geometry.from_config(cfg, "x", params=7.24e9)
    seed = PROFILES["TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"]
    assert quantized.weight_bits == 4 and quantized.weight_bytes == pytest.approx(seed.weight_bytes, rel=0.01)
    assert geometry.from_config(MISTRAL_7B, "x", params=7.24e9).weight_bytes > 3 * quantized.weight_bytes


@pytest.mark.parametrize(
    ("quantization", "needle"),
    [
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "quant_method = 'fp8'"),
        ({"quant_method": "compressed-tensors", "format": "float-quantized"}, "allowed: gptq, awq"),
        ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "bits = 3; allowed: 4, 8"),
        ({"quant_method": "awq", "bits": 4, "group_size": 0}, "group_size = 0"),
    ],
)
def test_an_unknown_quantization_is_refused_not_read_as_16_bit(quantization: dict[str, object], needle: str):
    with pytest.raises(geometry.GeometryError, match="quantization_config") as err:
        geometry.from_config({**MISTRAL_7B, "quantization_config": quantization}, "x", source="q.json")
    assert needle in str(err.value) and "q.json" in str(err.value)


def test_model_choice_errors() -> None:
    base = ["--instance", "p5.48xlarge", "--input-tokens", "10", "--output-tokens", "10", "--rate", "1"]
    with pytest.raises(ValueError, match="exactly one"):
        capacity_cmd.run(["--model", "meta-llama/Llama-3.1-8B-Instruct", "--hidden-size", "4096", *base])
    with pytest.raises(ValueError, match="exactly one"):
        capacity_cmd.run(base)
    with pytest.raises(ValueError, match="--num-layers"):
        capacity_cmd.run(["--hidden-size", "4096", "--num-attention-heads", "32", "--vocab-size", "9", *base])
    args = [a for a in base if a not in ("--rate", "1")]
    with pytest.raises(ValueError, match="--arrivals constant without --rate"):
        capacity_cmd.run(
            [
                "--model",
                "meta-llama/Llama-3.1-8B-Instruct",
                *args,
                "--concurrency",
                "2",
                "--arrivals",
                "constant",
            ]
        )


@pytest.mark.parametrize(
    ("spec", "mean"),
    [("300", 300.0), ("uniform:100:300", 200.0), ("normal:500:50", 500.0), ("lognormal:400:0", 400.0)],
)
def test_token_distributions(spec: str, mean: float) -> None:
    samples = token_dist(spec).sample(20_000, np.random.default_rng(0))
    assert samples.min() >= 1 and samples.mean() == pytest.approx(mean, rel=0.02)


@pytest.mark.parametrize("spec", ["0", "x", "uniform:3:1", "normal:5", "gamma:1:2", "lognormal:-1:1"])
def test_bad_token_distribution_names_value_and_grammar(spec: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as err:
        token_dist(spec)
    assert repr(spec) in str(err.value) and "uniform:A:B" in str(err.value)


def test_constant_arrivals_queue_less_than_poisson() -> None:
    model = ReplicaModel(PROFILES["meta-llama/Llama-3.1-8B-Instruct"], GPU_INSTANCES["p5.48xlarge"].gpu)
    inputs = token_dist("uniform:500:3000").sample(20_000, np.random.default_rng(1))
    outputs = np.full(20_000, 200.0)
    table = model.table(TokenStats.from_arrays(inputs, outputs))
    rate = table.capacity_rps * 0.8
    ttft = {
        a: table.ttft_seconds(inputs, arrival_state(table, rate, a, inputs), np.random.default_rng(0))
        for a in ("poisson", "constant")
    }
    assert ttft["constant"].mean() < ttft["poisson"].mean()
    fixed = np.full(20_000, 1000.0)
    const = arrival_state(model.table(TokenStats.fixed(1000, 200)), rate, "constant", fixed)
    assert float(const["rho_prefill"].max()) == 0.0  # D/D/1: nothing ahead


def test_geometry_file_errors(tmp_path) -> None:
    bad = tmp_path / "c.json"
    bad.write_text("[1]")
    with pytest.raises(geometry.GeometryError, match="not a JSON object"):
        geometry.from_file(str(bad))
    with pytest.raises(geometry.GeometryError, match="readable"):
        geometry.from_file(str(tmp_path / "missing.json"))
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({**_config(PROFILES["Qwen/Qwen2.5-1.5B-Instruct"]), "intermediate_size": 8960}))
    assert (
        replace(geometry.from_file(str(ok)), parameters=1.54e9, hugging_face_id="Qwen/Qwen2.5-1.5B-Instruct")
        == (PROFILES["Qwen/Qwen2.5-1.5B-Instruct"])
    )


LLAMA70B_H100 = ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--instance", "p5.48xlarge", "--tp", "4"]
LLAMA70B_H100 += ["--input-tokens", "1024", "--output-tokens", "512"]


def _json(capsys, argv: list[str]) -> dict[str, Any]:
    assert capacity_cmd.run([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_rate_prints_the_run_failures_and_whether_it_is_sustainable(capsys) -> None:
    """`--rate R --num-prompts N` is a finite benchmark run; without --num-prompts, ten minutes at R."""
    run = _json(capsys, [*LLAMA70B_H100, "--rate", "20", "--num-prompts", "300"])
    assert run["run_requests"] == run["run_succeeded"] == 300 and run["run_failed"] == 0
    assert run["overloaded"] is False and run["sustainable"] is True  # served, as vLLM served it
    assert run["run_ttft_ms_p90"] > run["ttft_ms_p90"]  # above saturation: the run's prompts queued
    endless = _json(capsys, [*LLAMA70B_H100, "--rate", "20", "--client", "openai"])
    assert endless["run_requests"] == 20 * 600
    assert endless["overloaded"] is True and endless["sustainable"] is False
    assert endless["run_failed"] > 0 and endless["run_timeouts"] > 0 and endless["run_retries"] > 0
    assert endless["run_goodput_requests_per_s"] < endless["saturation_requests_per_s"]
    light = _json(capsys, [*LLAMA70B_H100, "--rate", "1"])
    assert light["sustainable"] is True and light["run_failed"] == 0
    limited = _json(capsys, [*LLAMA70B_H100, "--rate", "8", "--num-prompts", "400", "--rate-limit", "4"])
    assert limited["run_rate_limited_429"] > 0 and limited["run_failed"] == limited["run_rate_limited_429"]
    capped = _json(
        capsys, [*LLAMA70B_H100, "--rate", "inf", "--num-prompts", "500", "--max-in-flight", "100"]
    )
    assert capped["run_overflowed_503"] == 400 and capped["overloaded"] is True
    assert capacity_cmd.run([*LLAMA70B_H100, "--rate", "20", "--num-prompts", "2000", "--timeout", "60"]) == 0
    text = capsys.readouterr().out
    assert "run_failed: " in text and "(overloaded: " in text and "requests failed" in text


def test_overload_flag_errors() -> None:
    with pytest.raises(ValueError, match="--timeout without --rate"):
        capacity_cmd.run([*LLAMA70B_H100, "--concurrency", "4", "--timeout", "30"])
    with pytest.raises(ValueError, match="--rate inf without --num-prompts"):
        capacity_cmd.run([*LLAMA70B_H100, "--rate", "inf"])


def test_llmperf_prints_what_llmperf_reports_and_the_calibration_rows(capsys) -> None:
    """`--concurrency C --llmperf N`: whole waves, llmperf's ITL (first token included), and with the A10G row's
    engine and true token counts the calibration table's A10G figures."""
    from llm_platform.simulator.serving.calibration import POINTS, predict

    a10g = ["--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--instance", "g5.2xlarge"]
    lengths = ["--input-tokens", "466", "--output-tokens", "150", "--no-chunked-prefill"]
    runs = {}
    for c in (8, 32):
        run = runs[c] = _json(capsys, [*a10g, *lengths, "--concurrency", str(c), "--llmperf", "100"])
        assert run["requests"] == {8: 104, 32: 128}[c]
        row = predict(next(p for p in POINTS if p.id == f"A10G-llmperf-C{c}"))
        assert isinstance(row["ttft"], float) and isinstance(row["tok_s"], float)
        assert run["ttft_ms_mean"] == pytest.approx(row["ttft"], rel=0.02)  # 466 vs 466.1 prompt tokens
        assert run["output_tokens_per_s"] == pytest.approx(row["tok_s"] * 150 / 177, rel=0.02)  # true tokens
    slow = _json(
        capsys, [*a10g, *lengths, "--concurrency", "8", "--llmperf", "100", "--llmperf-spacing", "0.3"]
    )
    assert slow["ttft_ms_mean"] < runs[8]["ttft_ms_mean"]  # prompts further apart queue less


def test_llmperf_flag_errors() -> None:
    a10g = ["--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--instance", "g5.2xlarge"]
    lengths = ["--input-tokens", "466", "--output-tokens", "150"]
    with pytest.raises(ValueError, match="--llmperf without --concurrency"):
        capacity_cmd.run([*a10g, *lengths, "--rate", "2", "--llmperf", "100"])
    with pytest.raises(ValueError, match="--llmperf-spacing without --llmperf"):
        capacity_cmd.run([*a10g, *lengths, "--concurrency", "2", "--llmperf-spacing", "0.1"])
