"""The published vLLM measurements of the calibration table (simulator/serving/calibration.py), cited per point.

Units: the llmperf A10G run counted tokens with the Llama-2 tokenizer while the server ran Llama-3 (its CSV
reports 177 output tokens per request for max_tokens 150): the model runs the true Llama-3 lengths
(550 x 150/177 = 466 prompt tokens, 150 output) and converts ITL and tok/s back to the published units.
Its rows are run as llmperf ran them (serving/benchmark.py `llmperf_waves`): waves of C, each prompt handed to
a client LLMPERF_SPACING_S after the one before, the driver's time per request outside the request, which the
C = 1 row gives: its seconds per request (output / tok/s) less the request's own (ITL x output; llmperf's ITL
is the request's latency over its output tokens).
The H100 request-rate points are in serving/calibration_rates.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from llm_platform.facts.catalog import A10G, A100_40, A100_80, H100, L4, GpuModel
from llm_platform.facts.model_profiles import ModelProfile, profile
from llm_platform.simulator.serving.replica_config import EngineConfig

TOLERANCE = 0.20
LLMPERF_A10G = (
    "ray-project/llmperf@e22c830:benchmarks/results/a10g/vllm-meta-llama_Meta-Llama-3-8B-Instruct.csv"
)
LLMPERF_TOKENS = 150 / 177  # Llama-3 tokens per Llama-2 token (the CSV's mean_output_token_length 177)
L4_SWEEP = "https://ai.wmx.dev/benchmarks (vllm_capacity_points.md L02-L07)"
A100_BURSTS = "dennislee22/vLLM-benchmarking@b474d1e:README.md (vllm_capacity_points.md A01-A08)"
A100_SWEEP = "https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on (vllm_capacity_points.md A25)"
H100_FIT = (
    "vllm-project/vllm-project.github.io@c3a01c4:_posts/2026-04-22-fp8-kvcache.md L128-129 "
    "(vllm_capacity_points.md H03)"
)
H100_LONG = (
    "vllm-project/vllm-project.github.io@c3a01c4:_posts/2026-04-22-fp8-kvcache.md L136, L140-143 "
    "(vllm_capacity_points.md H01-H02)"
)
H100_QWEN3 = (
    "gpustack/gpustack@47277d7:docs/performance-lab/qwen3-8b/h100-latency.md (vllm_capacity_points.md H04)"
)
A100_TP2 = "dennislee22/vLLM-benchmarking@b474d1e:README.md L2421-2485 (vllm_capacity_points.md A15-A16)"

Metric = Literal["ttft", "ttft_median", "tpot", "tok_s"]
METRICS: tuple[Metric, ...] = ("ttft", "ttft_median", "tpot", "tok_s")


@dataclass(frozen=True)
class Point:
    """One published measurement. `load` is the concurrency (closed loop), the burst size, or the request rate.

    `tpot_ms` is the per-token decode time the source gives (TPOT, or mean ITL where that is all it gives);
    `failed` the fraction of requests that failed (rate points: inference-perf counts them), None if unknown.
    `explained` maps a metric to why it is outside the tolerance; "ttft" also covers "ttft_median".
    """

    id: str
    gpu: GpuModel
    model: str
    engine: EngineConfig
    input_tokens: float  # true tokens of the served model
    output_tokens: float
    load: float
    kind: Literal["concurrency", "burst", "rate", "llmperf"]
    ttft_ms: float | None
    tpot_ms: float | None
    tok_s: float | None
    source: str
    unit_tokens: float = 1.0  # published tokens per true token (llmperf's tokenizer)
    explained: dict[str, str] = field(default_factory=dict)
    tp: int = 1
    ttft_median_ms: float | None = None
    failed: float | None = None
    geometry: ModelProfile | None = None  # a model given by its config.json fields (not in model_profiles.py)
    cached_prompts: int = 0  # bursts: prompts in the prefix cache when the burst starts (`cached_prompts`)
    requests: int | None = None  # rate points: the requests the run sent (successes and failures)

    @property
    def profile(self) -> ModelProfile:
        return self.geometry or profile(self.model)

    def explanation(self, metric: Metric) -> str | None:
        if metric == "ttft_median" and metric not in self.explained:
            return self.explained.get("ttft")
        return self.explained.get(metric)


V0_A10G = EngineConfig(chunked_prefill=False)  # vllm-openai:v0.4.3 defaults (V0: no chunked prefill)
LLMPERF_REQUESTS = 100  # scripts/benchmark.py num_requests (--max-num-completed-requests)
LLMPERF_HOST = (
    "the host is shared: C Ray client processes, the driver and vLLM 0.4.3 (API server and engine in one "
    "process) on a g5.2xlarge's 8 vCPUs. The row's own figures give the driver's time per prompt, (wave - "
    "mean request latency) / C with wave = C x output / tok/s: 0.09-0.14 s up to C = 16, 0.21 s at 32, 0.41 s "
    "at 64 (calibration_points.llmperf_spacing_s); the model keeps C = 1's 0.12 s, so its waves are shorter "
    "(tok/s high). At that pacing a prompt arrives as the one before it ends its 0.126 s prefill, so TTFT turns "
    "on a few ms of it; the model's API server is the 8.6 ms of an idle H100 host (Unverified: the same "
    "contention slowing vLLM's per-request work is what its TTFTs lack)"
)
LITTLE = (
    "the published tok/s is below what the same row's TTFT and ITL give by Little's law "
    "(C x output / (TTFT + output x ITL)); the model is within 20% of that value (calibration.little_tok_s)"
)
HOST_BOUND = (
    "a 0.5B model's GPU step is ~5 ms: the API server's per-request and per-token host work (HTTP, tokenization, "
    "streaming 2,300-3,800 tokens/s through one Python process on a g2-standard-4's 4 vCPUs) dominates TTFT and "
    "grows ITL from 5.1 to 7.1 ms while the GPU step grows to 5.8 ms; the model carries 8.6 ms of host work per "
    'request (H25, docs "Host overhead"; 7-8B models are GPU-bound) and none per streamed token. Searched, none '
    "usable: no source gives the V1 API server's CPU time per streamed token or per request on such a host; the "
    "nearest are one part of it (vllm#52875: 7.5 us to render an SSE frame, 3 % of a core at 3,800 tokens/s) "
    'and relative gains (vllm#27869: --stream-interval 10, +57 % at C = 1,024 on B200) (docs "Host overhead")'
)
BURST_HOST = (
    "the burst's prompts were in the prefix cache (all of them at 20 and 30, the first 100 at 200: "
    "calibration_points.cached_prompts, whose hit rates are the ones vLLM logged after each run), so a first "
    "token is one or two engine steps. The published 195-242 ms, and the 1.2 s median at "
    "200, is what the API server takes to accept that many 1,024-token prompts at once: 8-10 ms each, one after "
    "another (195 ms / 20, 242 ms / 30), where the model charges H25's 8.6 ms per request (C = 1, short prompts) "
    "to every request in parallel. Unverified: no source times vLLM's preprocessing of simultaneous prompts"
)
TP2_PREFIX = (
    "the prompt was in the prefix cache, put there by the benchmark's own test run of it (vLLM logged a hit "
    "rate of 49.2 % = 1,008 of the test run's and the request's 2,048 prompt tokens), and the model serves it so; "
    "its first token is then one engine step, slower in the run than in the model as its decode is (this row's "
    "TPOT note)"
)
TP2_BURST_TTFT = (
    "nine uncached 1,024-token prompts of a 72.7B model (prompt 0 is the test run's) take 9 x 149 TFLOP / 624 "
    "TFLOPS peak >= 2.1 s to prefill on two A100s; the run's 3.8 s mean is slower than that drain at the A100's "
    "calibrated 55 % MFU, as its decode is slower than the model's (this row's TPOT note)"
)
CHAT_HOST = (
    "the GPU work of this TTFT is ~20 ms (a 233-token prefill of 8.2B parameters is 3.8 TFLOP, 8 ms at 50 % "
    "MFU, plus a residual step); the rest is API-server work on the chat endpoint (chat template, "
    "tokenization, streaming), which this row measures and H25 on /v1/completions (Llama-3.1-8B, H100, C=1, "
    "TTFT p50 14 ms, from which the model's 8.6 ms per request comes) does not. Searched, none usable: the one "
    "chat-vs-completions figure found (vllm#54628: Qwen2.5-0.5B, laptop RTX 4070 under WSL2, C = 8, server "
    "TTFT +11.7 and +16.0 ms on /v1/chat/completions) is another host, model and template; carried, it would "
    'give 35 of the 64 ms (docs "Host overhead")'
)
TP2_UNKNOWN = (
    "the run's launch arguments and precision are not published (vllm_capacity_points.md A15): 58 ms per "
    "token for 145 GB of BF16 weights on two A100s is 1.25 TB/s per GPU, 61 % of the SXM part's 2,039 GB/s "
    "while the same sweep's TP1 rows reach 84 %; with NVLink all-reduces costing ~1 ms per step "
    "(serving/physics.py) the gap is not the interconnect. A PCIe A100 without NVLink or a non-default "
    "setting (eager mode: no CUDA graphs) fits it; the model takes the catalog's p4de part"
)
_A10G_ROWS = (  # concurrency, TTFT ms, ITL ms/token, tok/s, mean output tokens (published, Llama-2 tokens)
    (1, 137.29, 30.65, 31.92, 177.43),
    (2, 150.65, 32.75, 59.17, 176.69),
    (4, 171.40, 33.89, 110.95, 177.03),
    (8, 249.27, 36.70, 191.84, 176.42307692307693),
    (16, 302.75, 42.67, 289.87, 177.09821428571428),
    (32, 319.68, 50.15, 363.99, 177.3046875),
    (64, 1080.42, 61.73, 301.19, 176.0234375),
)
LLMPERF_OUTPUT = {row[0]: row[4] for row in _A10G_ROWS}  # the CSV's mean_output_token_length per C
_A100_ROWS = (  # burst size, TTFT mean and median ms, TPOT ms, output tok/s (A02-A08; A01: a prefix-cache hit)
    (10, 488.52, 511.95, 13.47, 715.92),
    (20, 195.24, 199.99, 14.12, 1387.31),
    (30, 241.74, 240.32, 14.93, 1967.90),
    (50, 2580.51, 2490.45, 18.47, 2356.12),
    (75, 2598.85, 2543.58, 22.21, 2991.02),
    (100, 3983.10, 3896.62, 25.26, 3352.15),
    (200, 3158.70, 1179.16, 40.34, 4442.73),
)
_L4_ROWS = (  # concurrency, TTFT p50 ms, ITL p50 ms, output tok/s (the sweep gives medians, no means)
    (1, 27.0, 5.1, 168),
    (2, 37.8, 5.2, 367),
    (4, 50.1, 5.3, 698),
    (8, 60.9, 5.5, 1312),
    (16, 103.8, 6.0, 2277),
    (32, 135.3, 7.1, 3773),
)


def _a10g(c: int, ttft: float, itl: float, tok: float, _: float) -> Point:
    return Point(
        f"A10G-llmperf-C{c}", A10G, "meta-llama/Meta-Llama-3-8B-Instruct", V0_A10G, 550 * LLMPERF_TOKENS, 150,
        c, "llmperf", ttft, itl, tok, LLMPERF_A10G, LLMPERF_TOKENS, {"ttft": LLMPERF_HOST, "tok_s": LLMPERF_HOST},
    )  # fmt: skip


def llmperf_spacing_s(c: int) -> float:
    """The driver's seconds per prompt outside the requests in the published row at concurrency C: its wave
    (C x output / tok/s) less the mean request latency (llmperf's ITL x output), over C (module doc)."""
    _, _, itl, tok, out = next(row for row in _A10G_ROWS if row[0] == c)
    return (c * out / tok - itl / 1000 * out) / c


LLMPERF_SPACING_S = llmperf_spacing_s(1)  # 0.120 s, what the model runs every C with


# The A100 bursts' runs in the order each vLLM server ran them (the README prints each run's log lines with the
# API server's pid and time), each with the cumulative "Prefix cache hit rate" vLLM logged after it (%).
A100_SERVERS: dict[int, tuple[tuple[int, float], ...]] = {
    136: ((50, 1.9), (30, 38.5), (20, 50.7)),  # 09-09 01:31, 01:36, 01:38
    2739: ((100, 1.0), (200, 33.3)),  # 09-04 01:33, 01:34
    118: ((10, 8.9), (75, 13.6)),  # 09-09 02:24, 02:26
}


def cached_prompts(n: int, before: tuple[int, ...]) -> int:
    """Prompts of a `vllm bench serve` random-dataset burst of n already in the prefix cache when it starts, after
    runs of `before` prompts on the same server. The dataset gives prompt i the same tokens in every run (the
    benchmark seeds numpy with 0 and draws the prompts' offsets in order: benchmarks/benchmark_dataset.py
    RandomDataset.sample), the benchmark first sends prompt 0 alone as its test run (benchmark_serving.py
    "Starting initial single prompt test run"), and each earlier run sent prompts 0 .. size - 1."""
    return min(n, max([1, *before]))


def _a100(n: int, ttft: float, median: float, itl: float, tok: float) -> Point:
    engine = EngineConfig(
        gpu_memory_utilization=0.5, max_model_len=16384, async_scheduling=False
    )  # v0.10.1.1
    runs = next(runs for runs in A100_SERVERS.values() if n in [size for size, _ in runs])
    before = tuple(size for size, _ in runs[: [size for size, _ in runs].index(n)])
    return Point(
        f"A100-80GB-burst{n}", A100_80, "Qwen/Qwen2-7B-Instruct", engine, 1024, 1024, n, "burst",
        ttft, itl, tok, A100_BURSTS, explained={"ttft": BURST_HOST}, ttft_median_ms=median,
        cached_prompts=cached_prompts(n, before),
    )  # fmt: skip


def _l4(c: int, ttft: float, itl: float, tok: float) -> Point:
    engine = EngineConfig(gpu_memory_utilization=0.6, max_model_len=8192)
    return Point(
        f"L4-qwen0.5b-C{c}", L4, "Qwen/Qwen2.5-0.5B-Instruct", engine, 256, 128, c, "concurrency",
        None, itl, tok, L4_SWEEP, explained={"ttft": HOST_BOUND, "tpot": HOST_BOUND, "tok_s": HOST_BOUND},
        ttft_median_ms=ttft,
    )  # fmt: skip


def _h100_fit(context: int) -> Point:
    """A point on vLLM's published batch-1 ITL-vs-context line (6.44 ms + 4.37e-5 ms x context tokens)."""
    return Point(
        f"H100-llama8b-C1-ctx{context // 1000}k", H100, "meta-llama/Llama-3.1-8B-Instruct", EngineConfig(
            max_model_len=131072), context, 128, 1, "concurrency", None, 6.44 + 4.37e-5 * (context + 64), None,
        H100_FIT,
    )  # fmt: skip


SWEEP_POINTS: tuple[Point, ...] = (  # concurrency and burst sweeps; the rate points: calibration_rates.py
    *(_a10g(*row) for row in _A10G_ROWS),
    *(_l4(*row) for row in _L4_ROWS),
    Point(
        "A100-40GB-llama8b-C1",
        A100_40,
        "meta-llama/Llama-3.1-8B-Instruct",
        EngineConfig(),
        1024,
        128,
        1,
        "concurrency",
        None,
        1000 / 75,
        75,
        A100_SWEEP,
    ),
    *(_a100(*row) for row in _A100_ROWS),
    *(_h100_fit(c) for c in (1000, 16000, 64000, 120000)),
    *(  # C = 8, ~20k prompt / ~2k output tokens (+-15 %), TTFT and ITL medians; BF16 then FP8 KV cache
        Point(
            f"H100-llama8b-C8-20k-{kv}kv", H100, "meta-llama/Llama-3.1-8B-Instruct",
            EngineConfig(max_model_len=131072), 20000, 2000, 8, "concurrency", None, itl, tok, H100_LONG,
            ttft_median_ms=median, geometry=replace(profile("meta-llama/Llama-3.1-8B-Instruct"), kv_cache_bytes=b),
            explained={"tok_s": LITTLE},
        )
        for kv, b, median, itl, tok in (("bf16", 2, 763.6, 15.18, 450.3), ("fp8", 1, 742.8, 12.93, 517.5))
    ),
    Point(
        "H100-qwen3-8b-C4", H100, "Qwen/Qwen3-8B", EngineConfig(async_scheduling=False), 232.6, 220.6, 4, "concurrency", 64.00, 7.38,
        496.88, H100_QWEN3, explained={"ttft": CHAT_HOST, "tok_s": CHAT_HOST}, ttft_median_ms=60.26,
    ),
    *(
        Point(
            f"A100-80GB-tp2-qwen72b-burst{n}", A100_80, "Qwen/Qwen2-72B", EngineConfig(
                gpu_memory_utilization=0.95, max_model_len=16384), 1024, 1024, n, "burst", ttft, itl, tok,
            A100_TP2, explained={"ttft": TP2_PREFIX if n == 1 else TP2_BURST_TTFT, "tpot": TP2_UNKNOWN,
                                 "tok_s": TP2_UNKNOWN}, tp=2, ttft_median_ms=median, cached_prompts=1,
        )
        for n, ttft, median, itl, tok in ((1, 93.18, 93.18, 58.00, 17.23), (10, 3842.51, 3959.71, 73.04, 130.06))
    ),
)  # fmt: skip
