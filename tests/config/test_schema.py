"""Every stack-config rule, good and bad: a bad value fails with its field, the value and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from llm_platform.config.loader import parse
from tests.conftest import config_error, load_fixture, stack_values


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_fixture_stacks_are_valid(stack: str) -> None:
    cfg = load_fixture(stack)
    assert cfg.environment.value == stack
    assert cfg.models, "every stack serves at least one model"


def test_camel_case_keys_map_to_the_schema() -> None:
    cfg = load_fixture("prod")
    mistral = cfg.models[0]
    assert mistral.hugging_face_id == "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"
    assert mistral.autoscaling.queue_depth_per_replica == 2
    assert mistral.autoscaling.kv_cache_usage == 0.04
    assert mistral.autoscaling.prewarm[0].replicas == 8
    assert cfg.model_cache.fsx is not None and cfg.model_cache.fsx.storage_capacity_gib == 2400
    assert cfg.pool("p4d").max_gpus_per_node == 8


def _prod() -> dict[str, Any]:
    return stack_values("prod")


def _dev() -> dict[str, Any]:
    return stack_values("dev")


def test_unknown_instance_family() -> None:
    v = _prod()
    v["gpuNodePools"][0]["instanceFamilies"] = ["g5", "x9z"]
    msg = config_error(v)
    assert "gpuNodePools[0] (g5).instanceFamilies" in msg and "'x9z'" in msg and "allowed: g5, g6, g6e" in msg


def test_every_requested_size_of_every_family_is_launched_or_refused() -> None:
    """g6e has only xlarge in the catalog: `instanceSizes: [xlarge, 2xlarge]` would give a NodePool of
    g6e.xlarge alone, the 2xlarge dropped unseen. It is refused at the size, with the sizes there are."""
    v = _dev()
    v["gpuNodePools"][0] |= {"instanceFamilies": ["g6e"], "instanceSizes": ["xlarge", "2xlarge"]}
    assert config_error(v) == (
        "gpuNodePools[0] (gpu-spot).instanceSizes[1]: '2xlarge' is not allowed: the catalog has no g6e.2xlarge, "
        "so the pool would never launch it; sizes in the catalog: g6e: xlarge"
    )
    v["gpuNodePools"][0] |= {"instanceFamilies": ["g6", "g6e"], "instanceSizes": ["2xlarge"]}
    assert "the catalog has no g6e.2xlarge" in config_error(v)
    v["gpuNodePools"][0] |= {"instanceFamilies": ["g6", "g5"], "instanceSizes": ["xlarge", "2xlarge"]}
    pool = parse(v).gpu_node_pools[0]
    launched = sorted(i.instance_type for i in pool.instances)
    assert launched == ["g5.2xlarge", "g5.xlarge", "g6.2xlarge", "g6.xlarge"]


def test_tensor_parallel_must_be_a_power_of_two() -> None:
    v = _prod()
    v["models"][1]["tensorParallelSize"] = 3
    msg = config_error(v)
    assert "models[1] (llama-70b).tensorParallelSize: 3" in msg and "3" in msg and "power of two" in msg


def test_tensor_parallel_must_fit_the_largest_instance_of_the_pool() -> None:
    v = _prod()
    v["models"][0]["tensorParallelSize"] = 8  # g5 pool allows 2xlarge (1 GPU) and 12xlarge (4 GPUs)
    msg = config_error(v)
    assert "models[0] (mistral-7b).tensorParallelSize: 8" in msg
    assert "4 GPUs" in msg and "g5.12xlarge" in msg


def test_tensor_parallel_at_the_pool_limit_is_fine() -> None:
    v = _prod()
    v["models"][0]["tensorParallelSize"] = 4
    v["gpuNodePools"][0]["gpuLimit"] = 40  # 10 replicas x 4 GPUs
    assert parse(v).models[0].tensor_parallel_size == 4


def test_model_pool_must_exist() -> None:
    v = _prod()
    v["models"][0]["nodePool"] = "h100"
    msg = config_error(v)
    assert "models[0] (mistral-7b).nodePool: 'h100' does not exist; allowed: g5, p4d" in msg


def test_min_replicas_above_max() -> None:
    v = _dev()
    v["models"][0]["autoscaling"] |= {"minReplicas": 3, "maxReplicas": 2}
    msg = config_error(v)
    assert "autoscaling.minReplicas: 3 is larger than maxReplicas 2" in msg


@pytest.mark.parametrize("field", ["queueDepthPerReplica", "kvCacheUsage"])
@pytest.mark.parametrize("value", [0, -1])
def test_thresholds_must_be_positive(field: str, value: float) -> None:
    v = _dev()
    v["models"][0]["autoscaling"][field] = value
    msg = config_error(v)
    assert (
        f"models[0] (qwen-1-5b).autoscaling.{field}: {value} is not allowed" in msg
        and "greater than 0" in msg
    )


@pytest.mark.parametrize("value", [1.01, 5])
def test_kv_cache_usage_at_most_one(value: float) -> None:
    v = _dev()
    v["models"][0]["autoscaling"]["kvCacheUsage"] = value
    msg = config_error(v)
    assert (
        f"models[0] (qwen-1-5b).autoscaling.kvCacheUsage: {value} is not allowed" in msg
        and "less than or equal to 1" in msg
    )


def test_kv_cache_usage_of_exactly_one_is_allowed() -> None:
    v = _dev()
    v["models"][0]["autoscaling"]["kvCacheUsage"] = 1
    assert parse(v).models[0].autoscaling.kv_cache_usage == 1


@pytest.mark.parametrize("value", [0, 1, 1.2])
def test_gpu_memory_utilization_open_interval(value: float) -> None:
    v = _dev()
    v["models"][0]["gpuMemoryUtilization"] = value
    msg = config_error(v)
    assert f"models[0] (qwen-1-5b).gpuMemoryUtilization: {value} is not allowed" in msg


def test_max_model_len_at_least_one() -> None:
    v = _dev()
    v["models"][0]["maxModelLen"] = 0
    msg = config_error(v)
    assert (
        "models[0] (qwen-1-5b).maxModelLen: 0 is not allowed" in msg and "greater than or equal to 1" in msg
    )


def test_duplicate_model_names() -> None:
    v = _prod()
    v["models"][1]["name"] = "mistral-7b"
    assert "models[1] (mistral-7b).name: 'mistral-7b' is used twice" in config_error(v)


def test_duplicate_pool_names() -> None:
    v = _prod()
    v["gpuNodePools"][1] |= {"name": "g5", "instanceFamilies": ["g5"]}
    assert "gpuNodePools[1] (g5).name: 'g5' is used twice" in config_error(v)


def test_prod_needs_two_replicas() -> None:
    v = _prod()
    v["models"][0]["autoscaling"]["minReplicas"] = 1
    msg = config_error(v)
    assert "models[0] (mistral-7b).autoscaling.minReplicas: 1 is not allowed in prod" in msg


def test_prod_needs_two_zones() -> None:
    v = _prod()
    v["cluster"]["availabilityZones"] = ["us-east-1a"]
    msg = config_error(v)
    assert "cluster.availabilityZones" in msg and "at least 2" in msg


def test_dev_with_one_replica_is_fine() -> None:
    assert parse(_dev()).models[0].autoscaling.min_replicas == 1


@pytest.mark.parametrize(
    ("capacity", "ok"), [(1200, True), (2400, True), (4800, True), (1000, False), (3600, False), (0, False)]
)
def test_fsx_capacity_lustre_accepts(capacity: int, ok: bool) -> None:
    v = _prod()
    v["modelCache"]["fsx"]["storageCapacityGiB"] = capacity
    if ok:
        assert parse(v).model_cache.fsx is not None
    else:
        msg = config_error(v)
        assert (
            f"modelCache.fsx.storageCapacityGiB: {capacity} is not a capacity" in msg
            and "allowed: 1200, 2400 or a multiple of 2400" in msg
        )


def test_fsx_throughput_per_deployment_type() -> None:
    v = _prod()
    v["modelCache"]["fsx"]["perUnitStorageThroughput"] = 200
    assert "allowed: 125, 250, 500, 1000" in config_error(v)


def test_hub_cache_outside_dev() -> None:
    v = _prod()
    v["models"][0]["cache"] = "hub"
    msg = config_error(v)
    assert "models[0] (mistral-7b).cache: 'hub' is allowed in dev only" in msg


def test_hub_cache_in_dev_is_fine() -> None:
    v = _dev()
    v["models"][0]["cache"] = "hub"
    assert parse(v).models[0].cache == "hub"


def test_fsx_cache_needs_fsx_settings() -> None:
    v = _prod()
    del v["modelCache"]["fsx"]
    assert "models[0] (mistral-7b).cache: 'fsx' needs modelCache.fsx settings" in config_error(v)


def test_unknown_cache_mode() -> None:
    v = _dev()
    v["models"][0]["cache"] = "efs"
    msg = config_error(v)
    assert (
        "models[0] (qwen-1-5b).cache: 'efs' is not allowed" in msg and "'nvme', 'fsx', 's3' or 'hub'" in msg
    )


def test_unknown_keys_are_refused() -> None:
    v = _dev()
    v["models"][0]["replicas"] = 3
    msg = config_error(v)
    assert "models[0] (qwen-1-5b).replicas: unknown key" in msg and "allowed: name, huggingFaceId" in msg
    assert "llm-platform:modelz: unknown config key" in config_error(_dev() | {"modelz": []})


def test_dedicated_families_get_their_own_pool() -> None:
    v = _prod()
    v["gpuNodePools"][1]["instanceFamilies"] = ["p4d", "g5"]
    assert (
        "instanceFamilies: [p4d, g5] mixes p4d with other families; allowed: p4d in a single-family pool"
        in config_error(v)
    )


def test_latest_ami_only_in_dev() -> None:
    v = _prod()
    v["cluster"]["amiVersions"]["al2023"] = "latest"
    assert "cluster.amiVersions.al2023: 'latest' is allowed in dev only" in config_error(v)


def test_unpinned_image_is_refused() -> None:
    v = _dev()
    v["models"][0]["image"] = "vllm/vllm-openai:latest"
    msg = config_error(v)
    assert "models[0] (qwen-1-5b).image" in msg and "is not pinned" in msg


def test_existing_mode_needs_a_kubeconfig() -> None:
    v = _dev()
    v["cluster"]["mode"] = "existing"
    assert "cluster.kubeconfig: is required when cluster.mode is 'existing'" in config_error(v)


def test_prewarm_replicas_within_bounds() -> None:
    v = _prod()
    v["models"][0]["autoscaling"]["prewarm"][0]["replicas"] = 50
    assert (
        "models[0] (mistral-7b).autoscaling.prewarm[0] (morning-surge).replicas: 50 must be between minReplicas 2 and maxReplicas 10"
        in config_error(v)
    )


def test_environment_must_be_known() -> None:
    msg = config_error(_dev() | {"environment": "qa"})
    assert "environment: 'qa' is not allowed" in msg and "'dev', 'staging' or 'prod'" in msg


def test_existing_clusters_serve_from_the_hub_only() -> None:
    v = _dev()
    v["cluster"] |= {"mode": "existing", "kubeconfig": "~/.kube/config"}
    msg = config_error(v)
    assert "models[0] (qwen-1-5b).cache: 's3' needs the model bucket" in msg and "allowed there: 'hub'" in msg
    v["models"][0]["cache"] = "hub"
    assert parse(v).cluster.mode == "existing"


def test_gateway_rules() -> None:
    v = _prod()
    v["gateway"]["clients"] = []
    assert "gateway.clients: [] is empty; an enabled gateway needs at least one client" in config_error(v)
    v = _prod()
    del v["gateway"]["certificateArn"]
    assert "gateway.certificateArn: is required in prod, which serves its gateway over TLS" in config_error(v)
    v = _dev() | {
        "gateway": {"enabled": True, "internal": False, "clients": [{"name": "a", "requestsPerMinute": 60}]}
    }
    assert "certificateArn: is required by an internet-facing gateway (internal: false)" in config_error(v)
    v = _prod()
    v["gateway"]["clients"].append(dict(v["gateway"]["clients"][0]))
    assert "gateway.clients[2] (chat-app).name: 'chat-app' is used twice" in config_error(v)
    v = _prod()
    v["gateway"]["clients"][0]["requestsPerMinute"] = 0
    assert "gateway.clients[0] (chat-app).requestsPerMinute: 0 is not allowed" in config_error(v)
