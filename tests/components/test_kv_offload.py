"""The CPU KV tier in the vLLM pod (components/specs/kv_offload.py, fixture stack kvtier): vLLM's own offload
flags with prefix caching on, LMCache's per-rank size, memory request and limit and the memory-backed
/dev/shm grown by the tier x 1.2, the picker's weights for a CPU-tier hit, and warm headroom the size of a
grown replica. A model without the block renders exactly as before."""

from __future__ import annotations

import json
from typing import Any

from llm_platform.components.specs import headroom, inference_pool, model_cache, serving
from llm_platform.components.specs.kv_offload import TIER_WEIGHTS, grown_resources, offload_args
from llm_platform.config.loader import parse
from llm_platform.plan import ModelPlan
from llm_platform.plan.kv_offload import KvOffloadPlan
from tests.conftest import stack_values
from tests.plans import model_plan, stack_plan


def _deployment(m: ModelPlan) -> dict[str, Any]:
    wiring = model_cache.cache_wiring(m, bucket="models-bucket")
    return serving.deployment(m, environment="dev", wiring=wiring, mounts_hf_token=False)


def _container(d: dict[str, Any]) -> dict[str, Any]:
    (container,) = d["spec"]["template"]["spec"]["containers"]
    return container


def _shm(d: dict[str, Any]) -> dict[str, Any]:
    return next(v for v in d["spec"]["template"]["spec"]["volumes"] if v["name"] == "dshm")


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def _gib(quantity: str) -> int:
    assert quantity.endswith("Gi"), quantity
    return int(quantity[:-2])


def test_plan_resolves_the_tier_once() -> None:
    tier = model_plan("kvtier", "chat-tier").kv_offload
    assert tier is not None
    assert (tier.backend, tier.cpu_gib, tier.ranks, tier.growth_gib) == (
        "native",
        12,
        1,
        15,
    )  # ceil(12 x 1.2)
    assert 9.0 < tier.hbm_kv_gib < 9.2  # 24 GB x 0.5 less Qwen2.5-1.5B's 2.9 GiB of weights
    assert model_plan("dev", "qwen-1-5b").kv_offload is None


def test_native_tier_uses_vllms_own_flags_with_prefix_caching() -> None:
    args = _container(_deployment(model_plan("kvtier", "chat-tier")))["args"]
    assert "--enable-prefix-caching" in args
    assert _flag(args, "--kv-offloading-backend") == "native"
    assert _flag(args, "--kv-offloading-size") == "12"
    assert "--kv-transfer-config" not in args
    # the model's own extraArgs come after the platform's flags, so a tuning flag still wins
    assert args.index("--kv-offloading-size") < args.index("--max-num-batched-tokens")


def test_lmcache_tier_runs_in_process_with_each_ranks_share() -> None:
    container = _container(_deployment(model_plan("kvtier", "docs-tier")))
    args = container["args"]
    assert json.loads(_flag(args, "--kv-transfer-config")) == {
        "kv_connector": "LMCacheConnectorV1",
        "kv_role": "kv_both",
    }
    assert "--enable-prefix-caching" in args and "--kv-offloading-backend" not in args
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["LMCACHE_LOCAL_CPU"] == "True" and env["LMCACHE_MAX_LOCAL_CPU_SIZE"] == "10"


def test_lmcache_size_is_per_tensor_parallel_rank() -> None:
    tier = KvOffloadPlan(backend="lmcache", cpu_gib=40, ranks=4, growth_gib=48, hbm_kv_gib=30)
    assert tier.gib_per_rank == 10
    assert offload_args(None) == []


def test_memory_and_shm_grow_by_the_tier_times_1_2() -> None:
    """Against the same model without the tier: request, limit and /dev/shm each 15 GiB (ceil 12 x 1.2) more."""
    m = model_plan("kvtier", "chat-tier")
    values = stack_values("kvtier")
    del values["models"][0]["kvCacheOffload"]
    bare = stack_plan(parse(values)).model("chat-tier")
    with_tier, without = _deployment(m), _deployment(bare)
    grown, base = _container(with_tier)["resources"], _container(without)["resources"]
    for part in ("requests", "limits"):
        assert _gib(grown[part]["memory"]) - _gib(base[part]["memory"]) == 15
        assert grown[part]["nvidia.com/gpu"] == base[part]["nvidia.com/gpu"]
    assert _shm(with_tier)["emptyDir"]["medium"] == "Memory"
    assert _gib(_shm(with_tier)["emptyDir"]["sizeLimit"]) - _gib(_shm(without)["emptyDir"]["sizeLimit"]) == 15
    assert _gib(_shm(with_tier)["emptyDir"]["sizeLimit"]) >= 12 * 1.2


def test_growth_keeps_the_unit_of_a_sidecar_sum() -> None:
    tier = KvOffloadPlan(backend="native", cpu_gib=20, ranks=1, growth_gib=24, hbm_kv_gib=10)
    resources = {"requests": {"memory": "9472Mi"}, "limits": {"memory": "13568Mi"}}
    assert grown_resources(resources, tier) == {
        "requests": {"memory": f"{9472 + 24 * 1024}Mi"},
        "limits": {"memory": f"{13568 + 24 * 1024}Mi"},
    }


def test_a_model_without_the_tier_renders_as_before() -> None:
    m = model_plan("dev", "qwen-1-5b")
    d = _deployment(m)
    args = _container(d)["args"]
    assert not {"--enable-prefix-caching", "--kv-offloading-size", "--kv-transfer-config"} & set(args)
    assert _container(d)["resources"] == serving.pod_resources(m.gpus, m.instance)
    assert _shm(d)["emptyDir"]["sizeLimit"] == f"{min(16, 2 + 2 * m.gpus)}Gi"
    assert not any(e["name"].startswith("LMCACHE_") for e in _container(d)["env"])


def test_picker_scores_a_cpu_tier_hit_below_a_gpu_hit() -> None:
    """llm-d-router v0.10.0 pkg/kvcache: gpu 1.0, cpu 0.8, read from the producer's indexerConfig."""
    config = inference_pool.endpoint_picker_config(model_plan("kvtier", "chat-tier"))
    producer = next(p for p in config["plugins"] if p["type"] == "precise-prefix-cache-producer")
    indexer = producer["parameters"]["indexerConfig"]
    assert indexer["kvCacheBackendConfigs"] == [
        {"name": "gpu", "weight": 1.0},
        {"name": "cpu", "weight": 0.8},
    ]
    assert [dict(w) for w in TIER_WEIGHTS] == indexer["kvCacheBackendConfigs"]
    # approximate mode cannot see the tier: no producer to configure
    approximate = inference_pool.endpoint_picker_config(model_plan("kvtier", "docs-tier"))
    assert not any(p["type"] == "precise-prefix-cache-producer" for p in approximate["plugins"])


def test_warm_headroom_holds_a_grown_replica() -> None:
    values = stack_values("kvtier")
    values["gpuNodePools"][0]["headroom"] = {"gpus": 1}
    plan = stack_plan(parse(values))
    placeholder = headroom.placeholder_resources(plan.pool("gpu-tier"))
    chat = _container(_deployment(plan.model("chat-tier")))["resources"]
    # the larger tier of the pool's one-GPU models (chat-tier's 12 GiB, grown by 15 GiB) sizes the placeholder
    assert _gib(placeholder["requests"]["memory"]) == _gib(chat["requests"]["memory"])
