"""The PromQL the platform runs against vLLM's own metrics: one place for names and label filters.

Metric names follow current vLLM (see shared/reference/README.md): `vllm:num_requests_waiting`,
`vllm:kv_cache_usage_perc` (0..1), `vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds`.
Every query is filtered to one model's namespace and `model_name` (= `--served-model-name`), and every
KEDA query is wrapped in `sum()` because KEDA's Prometheus scaler fails on more than one series.
"""

from __future__ import annotations

QUEUE = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
KV_CACHE = "vllm:kv_cache_usage_perc"
TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
E2E = "vllm:e2e_request_latency_seconds"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
PREEMPTIONS = "vllm:num_preemptions_total"


def selector(namespace: str, model_name: str) -> str:
    return f'{{namespace="{namespace}",model_name="{model_name}"}}'


def queue_depth(namespace: str, model_name: str) -> str:
    """Requests waiting across all replicas: the HPA divides by replicas (AverageValue)."""
    return f"sum({QUEUE}{selector(namespace, model_name)})"


def kv_cache_usage(namespace: str, model_name: str) -> str:
    """Sum of each replica's KV-cache fill (0..1): divided by replicas, the average fill."""
    return f"sum({KV_CACHE}{selector(namespace, model_name)})"


def latency_quantile(
    histogram: str, quantile: float, namespace: str, model_name: str, window: str = "5m"
) -> str:
    return (
        f"histogram_quantile({quantile}, sum by (le) "
        f"(rate({histogram}_bucket{selector(namespace, model_name)}[{window}])))"
    )
