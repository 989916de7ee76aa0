"""Held-out H100 SXM points at fixed request rates (calibration table, simulator/serving/calibration.py).

Source: inference-sim/training@ed5c1d2 `default_args/<run>/` (DESIGN.md "Dataset": inference-perf against vLLM
on H100 SXM; Llama-2-7b at TP1, CodeLlama-34b-Instruct at TP2, Llama-2-70b at TP4; not its Mixtral-8x7B TP2 runs:
the replica model reads and computes a dense model, docs/simulator/calibration.md). Read in each run's directory:
- `exp-config.yaml`: max_model_len 4096, max_num_batched_tokens 2048, max_num_seqs 128, TP 1, 2 or 4; the rest
  vLLM's defaults (prefix caching on, chunked prefill).
- `results/config.yaml` (the load generator's expanded config): constant arrivals in stages (rate, duration),
  streaming /v1/completions, `ignore_eos` (every request generates `output_len` tokens), `shared_prefix` data
  with num_groups 10 x num_prompts_per_group 10 = 100 distinct prompts of system_prompt_len + question_len
  tokens, reused for the whole run; `request_timeout: null`.
- `results/stage_<n>_lifecycle_metrics.json`: per stage, the successes' TTFT mean and median, request latency,
  prompt_len and requests/s, and the failures (the reasoning runs' failures all end at 300.0-301.0 s: the
  client's timeout; CodeLlama's 4 of 4,800 at 300.1-300.5 s).

Derived (each formula is in the code below):
- Prefix-cache hits: the 100 prompts are cached after their first use (100 x ~600 tokens fit beside the
  running set in the KV cache), and vLLM serves a hit in whole 16-token blocks up to prompt - 1 tokens
  (vllm/v1/core/kv_cache_manager.py `get_computed_blocks`: max_cache_hit_length = request.num_tokens - 1):
  hit = (1 - cold / requests) x floor((p - 1) / 16) x 16 / p, cold = 100 in a run's first stage, 0 after.
- TPOT = (mean request latency - mean TTFT) / (output_len - 1), the per-token decode time. inference-perf's own
  `time_per_output_token` is about half of it on every point (PUBLISHED_TPOT) and below what an H100 can do
  (calibration.bandwidth_floor_ms): half its inter-token gaps are microseconds (7B at 8 req/s: ITL p25 6 us,
  median 31 us, p75 8.17 ms), i.e. two stream events per generated token, and it divides by both.
- Output tok/s = requests/s x output_len: the load generator counts output by re-tokenizing the streamed text
  (`output_len` mean 210 for 248 generated at 7B: under ignore_eos the base model emits EOS tokens, which
  detokenize to nothing), so its `output_tokens_per_sec` undercounts.
"""

from __future__ import annotations

from llm_platform.facts import geometry
from llm_platform.facts.catalog import H100
from llm_platform.simulator.serving.benchmark import cached_tokens
from llm_platform.simulator.serving.calibration_points import Point
from llm_platform.simulator.serving.overload import Client
from llm_platform.simulator.serving.replica_config import EngineConfig

SOURCE = "inference-sim/training@ed5c1d2:default_args/*/results (inference-perf, vLLM, H100 SXM)"
# The runs' client: with `request_timeout: null` inference-perf's aiohttp session keeps aiohttp's DEFAULT_TIMEOUT,
# ClientTimeout(total=5 * 60) (kubernetes-sigs/inference-perf inference_perf/client/modelserver/openai_client.py:
# `aiohttp.helpers.sentinel` when no timeout; aio-libs/aiohttp aiohttp/client.py), one attempt, no retry; the
# runs' failures end at 300.0-301.0 s. 224 workers x 100 concurrent requests bound nothing at these rates.
INFERENCE_PERF = Client(timeout_s=300.0)
DISTINCT_PROMPTS = 100  # num_groups x num_prompts_per_group (results/config.yaml)
_LLAMA2 = {"vocab_size": 32000, "tie_word_embeddings": False, "torch_dtype": "float16"}
# model_configs/<name>/config.json in the same repository (the Hugging Face model's)
LLAMA2_7B = geometry.from_config(
    {**_LLAMA2, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
     "num_key_value_heads": 32, "intermediate_size": 11008},
    "meta-llama/Llama-2-7b-hf", source="inference-sim/training model_configs/Llama-2-7b-hf/config.json",
)  # fmt: skip
LLAMA2_70B = geometry.from_config(
    {**_LLAMA2, "hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
     "num_key_value_heads": 8, "intermediate_size": 28672},
    "meta-llama/Llama-2-70b-hf", source="inference-sim/training model_configs/Llama-2-70b-hf/config.json",
)  # fmt: skip
CODELLAMA_34B = geometry.from_config(
    {**_LLAMA2, "torch_dtype": "bfloat16", "hidden_size": 8192, "num_hidden_layers": 48,
     "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 22016},
    "codellama/CodeLlama-34b-Instruct-hf",
    source="inference-sim/training model_configs/CodeLlama-34b-Instruct-hf/config.json",
)  # fmt: skip
# run name in default_args/ -> (the point id's model part, its profile); exp-config.yaml's model
MODELS = {"llama-2-7b": ("llama2-7b", LLAMA2_7B), "codellama-34b": ("codellama-34b", CODELLAMA_34B),
          "llama-2-70b": ("llama2-70b", LLAMA2_70B)}  # fmt: skip
# profile: (system_prompt_len + question_len, output_len, stage duration s) from results/config.yaml
PROFILES = {
    "general": (100 + 447, 248, 600),
    "codegen": (100 + 466, 247, 600),
    "roleplay": (150 + 600, 251, 1200),
    "reasoning": (100 + 934, 1448, 1200),
}
# (model, TP, profile, stage, rate, prompt_len mean, TTFT mean ms, TTFT median ms, request latency mean ms,
#  requests/s, successes, failures, inference-perf time_per_output_token mean ms)
_RUNS = (
    ("llama-2-7b", 1, "general", 0, 8, 575.5, 27.1, 26.8, 2058, 7.978, 4800, 0, 4.08),
    ("llama-2-7b", 1, "general", 1, 20, 575.5, 51.9, 51.1, 4158, 19.919, 12000, 0, 8.26),
    ("llama-2-7b", 1, "codegen", 0, 5, 591.6, 25.0, 24.3, 1810, 4.987, 3000, 0, 3.60),
    ("llama-2-7b", 1, "codegen", 1, 10, 591.6, 29.5, 28.9, 2216, 9.974, 6000, 0, 4.41),
    ("llama-2-7b", 1, "roleplay", 0, 6, 785.8, 27.1, 26.8, 2071, 5.992, 7200, 0, 4.06),
    ("llama-2-7b", 1, "reasoning", 0, 4, 1082.2, 106644.7, 91288.5, 160063, 0.488, 732, 4068, 18.44),
    ("llama-2-70b", 4, "general", 0, 8, 574.9, 57.4, 55.2, 4678, 7.945, 4800, 0, 9.29),
    ("llama-2-70b", 4, "general", 1, 20, 574.9, 121.3, 68.3, 5577, 19.843, 12000, 0, 10.97),
    ("llama-2-70b", 4, "codegen", 0, 5, 593.5, 53.4, 51.2, 4333, 4.972, 3000, 0, 8.64),
    ("llama-2-70b", 4, "codegen", 1, 10, 593.5, 56.7, 56.6, 4742, 9.927, 6000, 0, 9.46),
    ("llama-2-70b", 4, "roleplay", 0, 6, 787.4, 54.8, 53.5, 4562, 5.979, 7200, 0, 8.96),
    ("llama-2-70b", 4, "reasoning", 0, 4, 1082.9, 118995.8, 109885.9, 161730, 2.133, 3200, 1600, 14.76),
    ("codellama-34b", 2, "general", 0, 8, 574.2, 46.0, 45.3, 3694, 7.953, 4800, 0, 7.34),
    ("codellama-34b", 2, "general", 1, 20, 574.2, 53.8, 53.5, 4252, 19.880, 12000, 0, 8.44),
    ("codellama-34b", 2, "codegen", 0, 5, 593.4, 44.5, 43.7, 3610, 4.972, 3000, 0, 7.20),
    ("codellama-34b", 2, "codegen", 1, 10, 593.4, 46.1, 46.2, 3779, 9.941, 6000, 0, 7.54),
    ("codellama-34b", 2, "roleplay", 0, 6, 786.7, 45.7, 44.8, 3670, 5.983, 7200, 0, 7.20),
    ("codellama-34b", 2, "reasoning", 0, 4, 1081.0, 120170.9, 112410.6, 158991, 3.222, 4796, 4, 13.40),
)
OVERLOADED = (
    "the published run is overloaded: requests failed at the client's 300 s timeout, and its TTFT, TPOT and "
    "tok/s are those of the requests that succeeded; the model's are the saturated replica's (its saturation "
    "rate is below the offered rate, `sustainable: false`), so they are not compared"
)
TTFT_TAIL = (
    "the published mean is 1.8x the published median (121.3 vs 68.3 ms; p90 250 ms, p99 987 ms; the model's "
    "median is within 20 %). Not the arrivals: inference-perf sent them at a constant rate (`load.type: "
    "constant`, schedule delay p99.9 2.5 ms), and the engine run request by request on those arrivals "
    "(serving/steps.py) gives a mean within 5 % of its median, as it does with Poisson arrivals: the run held "
    "20 x 5.58 s = 112 requests in flight, under max_num_seqs 128, so arrivals do not wait for a running slot. "
    "Unverified: what delays one first token in ten by 0.2-1.4 s"
)


def hit_rate(prompt: float, stage: int, requests: float) -> float:
    """Prefix-cache hit fraction of a stage's prompt tokens (module doc)."""
    cold = DISTINCT_PROMPTS if stage == 0 else 0
    return (1 - cold / requests) * cached_tokens(prompt) / prompt


def tpot_ms(latency_ms: float, ttft_ms: float, output: float) -> float:
    """Per-token decode time from the request latency (module doc)."""
    return (latency_ms - ttft_ms) / (output - 1)


def _point(run: tuple[str, int, str, int, int, float, float, float, float, float, int, int, float]) -> Point:
    model, tp, name, stage, rate, prompt, ttft, median, latency, rps, ok, failed, _ = run
    label, geometry_ = MODELS[model]
    _, output, duration = PROFILES[name]
    engine = EngineConfig(
        max_num_seqs=128,
        max_num_batched_tokens=2048,
        max_model_len=4096,
        prefix_hit_rate=hit_rate(prompt, stage, rate * duration),
    )
    overloaded = failed > 0
    explained: dict[str, str] = {"ttft": TTFT_TAIL} if median < ttft / 1.5 else {}
    point_id = f"H100-{label}-tp{tp}-{name}-R{rate}"
    if overloaded:
        explained = dict.fromkeys(("ttft", "tpot", "tok_s"), OVERLOADED)
    return Point(
        point_id, H100, geometry_.hugging_face_id, engine, prompt, output, rate,
        "rate", ttft, tpot_ms(latency, ttft, output), rps * output, SOURCE, explained=explained, tp=tp,
        ttft_median_ms=median, failed=failed / (ok + failed), geometry=geometry_, requests=ok + failed,
    )  # fmt: skip


RATE_POINTS: tuple[Point, ...] = tuple(_point(run) for run in _RUNS)
# inference-perf's time_per_output_token per rate point (module doc: not the decode time)
PUBLISHED_TPOT: dict[str, float] = {p.id: run[-1] for p, run in zip(RATE_POINTS, _RUNS, strict=True)}
