"""vLLM serving: arguments, probes, /dev/shm, GPUs, scheduling, secrets, and a full set per model."""

from __future__ import annotations

import pytest

from llm_platform.components.specs import compile_cache, model_cache, serving
from llm_platform.config.loader import parse
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.plan.model import resolve_model
from tests.conftest import load_fixture, stack_values
from tests.plans import model_plan as _model

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _deployment(stack: str, name: str, cache_bucket: str = "models-bucket") -> dict:
    model = _model(stack, name)
    wiring = model_cache.cache_wiring(model, bucket=cache_bucket)
    return serving.deployment(
        model, environment=stack, wiring=wiring, mounts_hf_token=model.serving_uses_hf_token
    )


def _container(deployment: dict) -> dict:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_arguments_come_from_config() -> None:
    container = _container(_deployment("prod", "llama-70b"))
    args = container["args"]
    # `vllm serve <model>`: the positional model, not the deprecated `--model`
    assert container["command"] == ["vllm", "serve"] and "--model" not in args
    assert args[0] == "/models/meta-llama/Llama-3.1-70B-Instruct"
    assert _flag(args, "--served-model-name") == "llama-70b"
    assert _flag(args, "--tensor-parallel-size") == "8"
    assert _flag(args, "--max-model-len") == "16384"
    assert _flag(args, "--gpu-memory-utilization") == "0.9"
    assert _flag(args, "--port") == "8000"
    assert not any("api-key" in a or "VLLM_API_KEY" in a for a in args), "vLLM reads VLLM_API_KEY itself"
    assert (
        int(_flag(args, "--shutdown-timeout")) == _model("prod", "llama-70b").drain.shutdown_timeout_seconds
    )
    assert "--disable-log-requests" not in args, "removed from current vLLM; passing it fails"


def test_api_key_and_token_come_from_secrets() -> None:
    env = {e["name"]: e for e in _container(_deployment("prod", "llama-70b"))["env"]}
    assert env["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "vllm-api-key", "key": "api-key"}
    assert "HF_TOKEN" not in env, "an offline (FSx) model never talks to the Hub"
    assert env["HF_HUB_OFFLINE"]["value"] == "1", "cached modes never reach the Hub at scale-out"
    assert all("value" not in e or "KEY" not in e["name"] for e in env.values())


@pytest.mark.parametrize(("stack", "name", "gpus"), [("prod", "llama-70b", "8"), ("prod", "mistral-7b", "1")])
def test_gpu_count_equals_tensor_parallel_size(stack: str, name: str, gpus: str) -> None:
    resources = _container(_deployment(stack, name))["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == resources["requests"]["nvidia.com/gpu"] == gpus


def test_requests_fit_the_smallest_instance_of_the_pool() -> None:
    resources = _container(_deployment("prod", "mistral-7b"))["resources"]
    smallest = GPU_INSTANCES["g5.2xlarge"]
    assert int(resources["requests"]["cpu"]) < smallest.vcpus
    assert int(resources["limits"]["memory"].removesuffix("Gi")) < smallest.memory_gib


def test_shm_is_a_sized_memory_volume() -> None:
    spec = _deployment("prod", "llama-70b")["spec"]["template"]["spec"]
    shm = next(v for v in spec["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert shm["emptyDir"]["sizeLimit"] == "16Gi"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in _container(_deployment("prod", "llama-70b"))[
        "volumeMounts"
    ]
    assert serving.shm_size_gib(_model("prod", "mistral-7b")) == 4


def test_probes_allow_for_weight_loading() -> None:
    container = _container(_deployment("prod", "llama-70b"))
    startup = container["startupProbe"]
    # /health, then the compile cache's completion marker (its compile cache is persisted)
    assert "http://127.0.0.1:8000/health" in startup["exec"]["command"][-1]
    budget = startup["failureThreshold"] * startup["periodSeconds"]
    plan = _model("prod", "llama-70b")
    assert plan.instance is GPU_INSTANCES["p4d.24xlarge"]
    assert budget >= 3 * plan.cold_start.warm_node_seconds
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"


def test_graceful_drain_fits_the_grace_period() -> None:
    deployment = _deployment("dev", "qwen-1-5b")
    pod = deployment["spec"]["template"]["spec"]
    sleep = _container(deployment)["lifecycle"]["preStop"]["sleep"]["seconds"]
    drain = int(_flag(_container(deployment)["args"], "--shutdown-timeout"))
    assert pod["terminationGracePeriodSeconds"] > sleep + drain


@pytest.mark.parametrize(
    ("stack", "name"), [("dev", "qwen-1-5b"), ("prod", "llama-70b"), ("lora", "llama-8b")]
)
def test_the_grace_period_covers_the_longest_generation(stack: str, name: str) -> None:
    """The engine drains for at least the model's longest generation (max_model_len tokens at the replica
    model's slowest decode step), and the pod is killed only after the preStop sleep and that drain."""
    plan = _model(stack, name)
    container = _container(_deployment(stack, name))
    drain = int(_flag(container["args"], "--shutdown-timeout"))
    sleep = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = _deployment(stack, name)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert drain >= plan.drain.longest_generation_seconds > 60, "a fixed 45 s drain cuts long generations"
    assert grace >= sleep + drain


def test_scheduling_on_the_model_pool_across_zones() -> None:
    deployment = _deployment("prod", "mistral-7b")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"llm-platform/gpu-pool": "g5"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    keys = {c["topologyKey"] for c in pod["topologySpreadConstraints"]}
    assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["karpenter.sh/do-not-disrupt"] == "true"
    assert "replicas" not in deployment["spec"], "KEDA owns the replica count"


def test_vllm_runs_unprivileged() -> None:
    deployment = _deployment("prod", "mistral-7b")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] >= 10000
    assert pod["automountServiceAccountToken"] is False
    container = _container(deployment)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert {serving.HOME, "/tmp", compile_cache.COMPILE_CACHE_MOUNT, "/dev/shm"} <= writable


# the pod labels the gateway namespace holds (Envoy Gateway v1.8.3): a proxy pod of the platform's Gateway
# (proxy/resource.go EnvoyAppLabel, gatewayapi/helpers.go owning-gateway labels) and the controller pod
# (charts/gateway-helm templates/envoy-gateway-deployment.yaml, control-plane + eg.selectorLabels)
ENVOY_PROXY_POD = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
    "gateway.envoyproxy.io/owning-gateway-name": "llm-gateway",
    "gateway.envoyproxy.io/owning-gateway-namespace": "llm-gateway",
}
ENVOY_GATEWAY_CONTROLLER_POD = {
    "control-plane": "envoy-gateway",
    "app.kubernetes.io/name": "gateway-helm",
    "app.kubernetes.io/instance": "envoy-gateway",
}


def _admits(peer: dict, namespace: str, pod_labels: dict[str, str]) -> bool:
    """Whether a NetworkPolicy peer (namespaceSelector and podSelector, matchLabels only) selects the pod."""
    ns_labels = {"kubernetes.io/metadata.name": namespace}
    ns_match = peer.get("namespaceSelector", {}).get("matchLabels", {})
    pod_match = peer.get("podSelector", {}).get("matchLabels", {})
    return ns_match.items() <= ns_labels.items() and pod_match.items() <= pod_labels.items()


def test_network_policy_admits_only_the_envoy_proxies_and_prometheus() -> None:
    policy = serving.network_policy(_model("prod", "mistral-7b"))
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 8000, "protocol": "TCP"}]
    admitted = [
        (ns, pod)
        for ns, pod in (
            ("llm-gateway", ENVOY_PROXY_POD),
            ("llm-gateway", ENVOY_GATEWAY_CONTROLLER_POD),
            ("llm-gateway", {"app": "anything-else"}),
            ("monitoring", {"app.kubernetes.io/name": "prometheus"}),
            ("monitoring", {"app.kubernetes.io/name": "grafana"}),
            ("model-other", ENVOY_PROXY_POD),
        )
        if any(_admits(peer, ns, pod) for peer in rule["from"])
    ]
    assert admitted == [
        ("llm-gateway", ENVOY_PROXY_POD),
        ("monitoring", {"app.kubernetes.io/name": "prometheus"}),
    ]
    deny = serving.default_deny_ingress(_model("prod", "mistral-7b"))
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}


def test_pod_monitor_scrapes_metrics_every_few_seconds() -> None:
    monitor = serving.pod_monitor(_model("prod", "mistral-7b"))
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics" and endpoint["port"] == "http"
    assert int(endpoint["interval"].removesuffix("s")) <= 10


def test_namespace_pod_security_follows_the_cache_mode() -> None:
    staging = _model("staging", "mistral-7b")  # nvme: reads the node's instance store through hostPath
    assert (
        serving.namespace(staging, "staging")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        == "privileged"
    )
    prod = _model("prod", "mistral-7b")
    assert (
        serving.namespace(prod, "prod")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        == "baseline"
    )


def _kinds(m, namespace: str) -> set[str]:
    kinds = set()
    for r in m.created:
        if not r.typ.startswith("kubernetes:") or r.typ.startswith(("kubernetes:helm", "pulumi:")):
            continue
        metadata = r.inputs.get("metadata") or {}
        if metadata.get("namespace") == namespace or metadata.get("name") == namespace:
            kinds.add(r.typ.split(":")[-1])
    return kinds


EXPECTED_PER_MODEL = {
    "Namespace",
    "Secret",
    "ServiceAccount",
    "Deployment",
    "Service",
    "PodDisruptionBudget",
    "PodMonitor",
    "NetworkPolicy",
    "ScaledObject",
    "PrometheusRule",
}


def test_a_second_model_gets_its_own_complete_set(run_program) -> None:
    values = stack_values("dev")
    second = values["models"][0] | {
        "name": "qwen-7b",
        "huggingFaceId": "Qwen/Qwen2.5-7B-Instruct",
        "cache": "hub",
        # not in the built-in profile table: described from its config.json
        "geometry": {"parameters": 7.62e9, "layers": 28, "kvHeads": 4, "headDim": 128},
    }
    m = run_program("dev", {"models": [*values["models"], second]})
    assert _kinds(m, "model-qwen-1-5b") >= EXPECTED_PER_MODEL
    assert _kinds(m, "model-qwen-7b") >= EXPECTED_PER_MODEL
    deployments = {r.inputs["metadata"]["namespace"]: r for r in m.by_type(DEPLOYMENT)}
    assert set(deployments) == {"model-qwen-1-5b", "model-qwen-7b"}
    hub = _container(deployments["model-qwen-7b"].inputs)
    assert hub["args"][0] == "Qwen/Qwen2.5-7B-Instruct", "hub mode downloads at start (dev)"


def test_secrets_are_secret_in_the_program(run_program) -> None:
    from pulumi.runtime import rpc

    m = run_program("prod")
    for secret in m.by_type("kubernetes:core/v1:Secret"):
        assert rpc.is_rpc_secret(secret.inputs["stringData"]), secret.name


def test_missing_api_key_stops_the_program_before_any_resource(run_program) -> None:
    with pytest.raises(Exception, match="apiKey"):
        run_program("dev", drop_secrets=["apiKey"])
    assert run_program.last.created == []


def test_gated_model_needs_the_hugging_face_token() -> None:
    values = stack_values("prod")
    assert parse(values).models[1].needs_hf_token


def _rendered(m, kind: str, name: str) -> dict:
    return next(
        r.inputs for r in m.created if r.typ.endswith(f":{kind}") and r.inputs["metadata"]["name"] == name
    )


def test_api_key_never_reaches_argv_and_offline_models_get_no_hub_token(run_program) -> None:
    """prod's llama-70b is gated (needsHfToken) and served from FSx: only its loader Job gets the token."""
    m = run_program("prod")
    deployment = _rendered(m, "Deployment", "llama-70b")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert not any("api-key" in a or "VLLM_API_KEY" in a for a in container["command"] + container["args"])
    env = {e["name"] for e in container["env"]}
    assert "VLLM_API_KEY" in env and "HF_TOKEN" not in env
    job = _rendered(m, "Job", "llama-70b-load-weights")
    (loader,) = job["spec"]["template"]["spec"]["containers"]
    assert "HF_TOKEN" in {e["name"] for e in loader["env"]}


def test_rollout_surges_only_into_gpu_headroom() -> None:
    """A surge replica needs the pool's GPU limit to have room with every model at maxReplicas, else
    Karpenter never launches it and the rollout hangs: replace in place instead."""
    cfg = load_fixture("prod")
    llama = _model("prod", "llama-70b")
    assert llama.pool_headroom_gpus >= llama.gpus, "prod's p4d limit leaves room for one more 8-GPU node"
    surge = serving.rollout_strategy(llama)["rollingUpdate"]
    assert surge == {"maxSurge": 1, "maxUnavailable": 0}
    tight = llama.pool.model_copy(update={"gpu_limit": 16})  # the old prod limit: 2 x 8 GPUs and no room
    tight_llama = resolve_model(llama.model, tight, cfg.models)
    assert tight_llama.pool_headroom_gpus == 0
    in_place = serving.rollout_strategy(tight_llama)
    assert in_place["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
