"""Per model, in the model's namespace: an InferencePool selecting its vLLM pods and the llm-d router endpoint
picker (EPP) that chooses a pod per request (llm-d-router-gateway v0.10.0 chart), routes to it by the OpenAI
`model` field (AIGatewayRoute) and by `/<model>/v1/` (HTTPRoute), vLLM's key injected on both, a PDB and
NetworkPolicies for the picker. Facts and sources: ../shared/reference/GATEWAY.md.

Routing: the picker scores each ready vLLM pod by queue depth (2), KV-cache use (2) and prefix-cache
affinity (3), the chart's weights. Prefix affinity is estimated from the prompts the picker has routed
(approximate, no vLLM change) unless `precisePrefixRouting` is on: then vLLM publishes its KV-cache events
over ZMQ and a tokenizer sidecar in the picker pod turns prompts into the same block keys.

Bounded queue: the picker's flow control (feature gate `flowControl`), its figures resolved in
plan/gateway.py (the simulator serves behind the same ones). A pool is saturated when its pods' mean of
max(vLLM waiting / Q, KV use / K) reaches 1 (utilization detector); past that, requests wait in the picker,
at most `maxPendingPerReplica x maxReplicas` of them (a model at zero: at least a wake's expected arrivals,
plan/gateway.py `at_zero`) and no longer than the model's TTFT objective each,
then get 429 (503 when the pool has no endpoint at all). vLLM's own queue per pod stays near Q instead of
growing without bound. Q sits above the autoscaler's queue target, so KEDA still sees the queue it scales on.

Failure: AI Gateway v1.1.0 hard-codes `failure_mode_allow: false` on the picker's ext_proc, so a pool whose
pickers are all down answers 5xx whatever `failureMode` says (envoyproxy/ai-gateway#2502); the pool states
FailClose, two pickers run active-active spread over nodes and zones, and an alert fires when none is
available. The chart hard-codes `strategy: Recreate`: a picker upgrade is a short outage of that model.
"""

from __future__ import annotations

from typing import Any

import yaml

from llm_platform.components.specs import gateway as gw
from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION, secret
from llm_platform.components.specs.disaggregation import pd_picker_config
from llm_platform.components.specs.kv_offload import tier_scoring
from llm_platform.components.specs.serving import KV_EVENTS_PORT, PORT
from llm_platform.facts.versions import (
    LLM_D_EPP_IMAGE_REGISTRY,
    LLM_D_EPP_IMAGE_REPOSITORY,
    LLM_D_ROUTER_VERSION,
    VLLM_RENDER_IMAGE_REPOSITORY,
    VLLM_RENDER_IMAGE_TAG,
)
from llm_platform.plan import ModelPlan
from llm_platform.plan.addon_pods import EPP_MEMORY, epp_cpu_millicores
from llm_platform.plan.gateway import EPP_REPLICAS
from llm_platform.plan.naming import GATEWAY_NAMESPACE, HF_TOKEN_SECRET, model_selector

EXT_PROC_PORT = 9002  # gRPC ext_proc (TLS, self-signed; AI Gateway does not verify it)
METRICS_PORT = 9090  # /metrics, token-authenticated; the chart's ServiceMonitor sends the token
TOKENIZER_PORT = 8000  # the render sidecar, loopback inside the picker pod
PLUGINS_FILE = "llm-platform.yaml"
CREDENTIAL_SECRET = "vllm-credential"  # key `credential` = "Bearer <vLLM key>" (HTTPRouteFilter contract)
# AI Gateway v1.1.0 references this HTTPRouteFilter from every rule of the HTTPRoute it generates and creates
# it only when missing (internal/controller/ai_gateway_route.go): registering it first, with vLLM's key added
# to AI Gateway's own host rewrite, injects the key on the model-field route without a plaintext header.
AI_GATEWAY_HOST_REWRITE_FILTER = "ai-eg-host-rewrite"
# the lora-affinity-scorer's weight beside queue 2 / kv-cache 2 / prefix 3: a replica without the adapter pays a
# load (disk or host copy, simulator/serving/lora.py) on the request's TTFT, worth about one prefix hit
LORA_AFFINITY_WEIGHT = 3
MODEL_HEADER = "x-ai-eg-model"  # AI Gateway copies the request's `model` field here

QUEUE_MAX_MIB = 512  # request bodies held in the picker's memory, under its memory limit
QUEUE_MAX_BYTES = f"{QUEUE_MAX_MIB}Mi"
# a held body's bytes per prompt token: OpenAI JSON of English text runs ~4 characters a token
HELD_BYTES_PER_TOKEN = 4
# sizing: idle CPU grows with the pods scraped every 50 ms (~0.075 core per pod, docs/operations.md), and
# short chat prompts cost far less than the 100k-token agentic runs measured there
EPP_MEMORY_LIMIT = "2Gi"  # QUEUE_MAX_BYTES of held bodies plus in-flight state
TOKENIZER_CPU = "1"
TOKENIZER_MEMORY = "2Gi"


def release_name(model: ModelPlan) -> str:
    """The chart release, and so the InferencePool's name; the picker is `<release>-epp`."""
    return model.name


def epp_name(model: ModelPlan) -> str:
    return f"{release_name(model)}-epp"


def epp_labels(model: ModelPlan) -> dict[str, str]:
    """The chart's selector labels of the picker pods (routerlib _helpers.tpl)."""
    return {"llm-d-router-gateway": epp_name(model)}


def _precise_prefix_plugins(model: ModelPlan) -> list[dict[str, Any]]:
    """Precise prefix routing's plugins: the tokenizer sidecar, the vLLM pods' KV events and the KV block
    index they feed (with the KV tiers' scoring), and the prefix scorer reading that index."""
    return [
        {
            "type": "token-producer",
            "parameters": {
                "modelName": model.model.hugging_face_id,
                "vllm": {"url": f"http://localhost:{TOKENIZER_PORT}"},
            },
        },
        {"type": "endpoint-notification-source"},
        {
            "type": "precise-prefix-cache-producer",
            "parameters": {
                "tokenProcessorConfig": {"blockSize": 64},
                "kvEventsConfig": {
                    "discoverPods": True,
                    "podDiscoveryConfig": {"socketPort": KV_EVENTS_PORT},
                },
                "indexerConfig": {
                    "kvBlockIndexConfig": {"enableMetrics": True},
                    **tier_scoring(model.kv_offload),
                },
            },
        },
        {
            "type": "prefix-cache-scorer",
            "parameters": {"prefixMatchInfoProducerName": "precise-prefix-cache-producer"},
        },
    ]


def endpoint_picker_config(model: ModelPlan) -> dict[str, Any]:
    """The EPP's EndpointPickerConfig (llm-d.ai/v1alpha1; flow control: apix/config/v1alpha1,
    saturationdetector/utilization), its queue as the plan resolved it for the stack's gateway."""
    queue = model.flow_control
    if queue is None:
        raise ValueError(f"model {model.name}: its stack's gateway is off, so it has no endpoint picker")
    plugins: list[dict[str, Any]] = [
        {"type": "queue-scorer"},
        {"type": "kv-cache-utilization-scorer"},
        {
            "type": "metrics-data-source",
            "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
        },
        {"type": "core-metrics-extractor"},
        {
            "type": "utilization-detector",
            "parameters": {
                "queueDepthThreshold": queue.saturation_queue_depth,
                "kvCacheUtilThreshold": queue.saturation_kv_cache,
            },
        },
    ]
    sources: list[dict[str, Any]] = [
        {"pluginRef": "metrics-data-source", "extractors": [{"pluginRef": "core-metrics-extractor"}]}
    ]
    if model.model.precise_prefix_routing:
        plugins += _precise_prefix_plugins(model)
        sources.append(
            {
                "pluginRef": "endpoint-notification-source",
                "extractors": [{"pluginRef": "precise-prefix-cache-producer"}],
            }
        )
    else:
        plugins.append({"type": "prefix-cache-scorer"})
    # LoRA: prefer a replica that holds the request's adapter, or has a free slot to load it (llm-d-router
    # v0.10.0 scheduling/scorer/loraaffinity: 1.0 active, 0.8 free slot, 0.6 waiting, 0 full), read from vLLM's
    # `vllm:lora_requests_info{running_lora_adapters,waiting_lora_adapters,max_lora}` by core-metrics-extractor
    lora_profile: list[dict[str, Any]] = []
    if model.lora is not None:
        plugins.append({"type": "lora-affinity-scorer"})
        lora_profile.append({"pluginRef": "lora-affinity-scorer", "weight": LORA_AFFINITY_WEIGHT})
    config = {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "featureGates": ["flowControl"],
        "plugins": plugins,
        "dataLayer": {"sources": sources},
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                    *lora_profile,
                ],
            }
        ],
        "flowControl": {
            "maxRequests": str(queue.held_per_picker),
            "maxBytes": QUEUE_MAX_BYTES,
            "defaultRequestTTL": queue.ttl,
            "saturationDetector": {"pluginRef": "utilization-detector"},
        },
    }
    return config if model.disaggregation is None else pd_picker_config(config)


def _affinity(model: ModelPlan) -> dict[str, Any]:
    """Add-on nodes; never two pickers of a model on one node, spread over zones when possible."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": k, "operator": "In", "values": [v]} for k, v in ADDON_NODE_LABEL.items()
                        ]
                    }
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": epp_labels(model)}, "topologyKey": "kubernetes.io/hostname"}
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": epp_labels(model)},
                        "topologyKey": "topology.kubernetes.io/zone",
                    },
                }
            ],
        },
    }


def helm_values(model: ModelPlan) -> dict[str, Any]:
    """llm-d-router-gateway values: the InferencePool over the model's vLLM pods and its picker."""
    config = endpoint_picker_config(model)
    epp: dict[str, Any] = {
        "replicas": EPP_REPLICAS,
        "image": {
            "registry": LLM_D_EPP_IMAGE_REGISTRY,
            "repository": LLM_D_EPP_IMAGE_REPOSITORY,
            "tag": LLM_D_ROUTER_VERSION,
            "pullPolicy": "IfNotPresent",
        },
        # active-active: every replica is Ready and serves (so the PDB can let one go and a lost node costs
        # nothing); the chart adds --ha-enable-leader-election for replicas > 1 and this later flag wins
        "flags": {"ha-enable-leader-election": "false"},
        "resources": {
            "requests": {"cpu": f"{epp_cpu_millicores(model)}m", "memory": EPP_MEMORY},
            "limits": {"memory": EPP_MEMORY_LIMIT},
        },
        "affinity": _affinity(model),
        "tolerations": [ADDON_TOLERATION],
        "pluginsConfigFile": PLUGINS_FILE,
        "pluginsCustomConfig": {PLUGINS_FILE: yaml.safe_dump(config, sort_keys=False)},
    }
    router: dict[str, Any] = {
        "modelServers": {
            "type": "vllm",
            "protocol": "http",
            "targetPorts": [{"number": PORT}],
            "matchLabels": model_selector(model.name),
        },
        # what actually happens when no picker answers (AI Gateway v1.1.0 ignores FailOpen)
        "inferencePool": {"create": True, "failureMode": "FailClose"},
        "epp": epp,
        # scraped as often as vLLM, so the arrival-rate trigger's window holds four samples of each
        "monitoring": {"interval": f"{model.scaling.scrape_interval_s}s", "prometheus": {"enabled": True}},
    }
    if model.model.precise_prefix_routing:
        router["tokenizer"] = {
            "enabled": True,
            "modelName": model.model.hugging_face_id,
            "image": {
                "registry": "docker.io",
                "repository": VLLM_RENDER_IMAGE_REPOSITORY,
                "tag": VLLM_RENDER_IMAGE_TAG,
            },
            "port": TOKENIZER_PORT,
            # the tokenizer files come from the Hub; gated models need the stack's token (optional otherwise)
            "env": [
                {
                    "name": "HF_TOKEN",
                    "valueFrom": {
                        "secretKeyRef": {
                            "name": HF_TOKEN_SECRET,
                            "key": "token",
                            "optional": not model.model.needs_hf_token,
                        }
                    },
                }
            ],
            # the chart's values carry requests only for the sidecar
            "resources": {"requests": {"cpu": TOKENIZER_CPU, "memory": TOKENIZER_MEMORY}},
        }
    return {"router": router}


def vllm_ports_for_picker(model: ModelPlan) -> list[int]:
    """What the picker reaches on vLLM pods: /metrics, and the KV-event publisher in precise mode."""
    return [PORT, KV_EVENTS_PORT] if model.model.precise_prefix_routing else [PORT]


# ------------------------------------------------------------------------------------------------ routes


def _gateway_parent() -> list[dict[str, Any]]:
    return [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": gw.GATEWAY,
            "namespace": GATEWAY_NAMESPACE,
        }
    ]


def _pool_ref(model: ModelPlan) -> dict[str, Any]:
    return {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": release_name(model)}


def bearer(vllm_api_key: str) -> str:
    return f"Bearer {vllm_api_key}"


def credential_secret(model: ModelPlan, credential: Any) -> dict[str, Any]:
    """vLLM's key as Envoy Gateway's credential injection reads it: `credential` is `bearer(key)` as a
    Pulumi secret in the component (masked in state and renders)."""
    return secret(CREDENTIAL_SECRET, model.names.namespace, {"credential": credential})


def _credential_injection() -> dict[str, Any]:
    return {
        "header": "Authorization",
        "overwrite": True,
        "credential": {"valueRef": {"group": "", "kind": "Secret", "name": CREDENTIAL_SECRET}},
    }


def credential_filter(model: ModelPlan) -> dict[str, Any]:
    """vLLM's key on every request of the path route (the client's key was removed by the API key filter)."""
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "HTTPRouteFilter",
        "metadata": {"name": f"{model.name}-vllm-key", "namespace": model.names.namespace},
        "spec": {"credentialInjection": _credential_injection()},
    }


def model_route_filter(model: ModelPlan) -> dict[str, Any]:
    """AI Gateway's own host-rewrite filter of the model-field route, with vLLM's key added (see
    AI_GATEWAY_HOST_REWRITE_FILTER); registered before the AIGatewayRoute."""
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "HTTPRouteFilter",
        "metadata": {
            "name": f"{AI_GATEWAY_HOST_REWRITE_FILTER}-{model.name}",
            "namespace": model.names.namespace,
        },
        "spec": {
            "urlRewrite": {"hostname": {"type": "Backend"}},
            "credentialInjection": _credential_injection(),
        },
    }


def model_field_route(
    model: ModelPlan, llm_request_costs: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """Clients call `/v1/...` with `model: <name>`: AI Gateway reads the field and this rule picks the pool.
    AI Gateway generates an HTTPRoute of the same name from it. `llm_request_costs`: the token counts AI
    Gateway stores in dynamic metadata for the clients' token budgets (specs.quota)."""
    route: dict[str, Any] = {
        "apiVersion": "aigateway.envoyproxy.io/v1beta1",
        "kind": "AIGatewayRoute",
        "metadata": {"name": model.name, "namespace": model.names.namespace},
        "spec": {
            "parentRefs": _gateway_parent(),
            "rules": [
                {
                    "name": "by-model-field",
                    # the base model and each of its LoRA adapters (vLLM serves them by name): one pool
                    "matches": [
                        {"headers": [{"type": "Exact", "name": MODEL_HEADER, "value": name}]}
                        for name in routed_model_names(model)
                    ],
                    "backendRefs": [_pool_ref(model)],
                    "timeouts": {"request": route_timeout(model)},
                }
            ],
        },
    }
    if llm_request_costs:
        route["spec"]["llmRequestCosts"] = llm_request_costs
    return route


def route_timeout(model: ModelPlan) -> str:
    """Both routes' `timeouts.request`: the model's serving budget, plus its hold at zero (plan/gateway.py)."""
    if model.flow_control is None:
        raise ValueError(f"models ({model.name}): routes exist only behind the gateway")
    return model.flow_control.route_timeout


def routed_model_names(model: ModelPlan) -> list[str]:
    """The `model` values the gateway sends to this model's pool: its own and its adapters' (plan/lora.py)."""
    return [model.model.served_model_name, *(model.lora.names if model.lora is not None else ())]


def path_prefix(model: ModelPlan) -> str:
    """`/<model>/v1`; a team's model on a shared gateway, `/<prefix>-<model>/v1`."""
    return f"/{model.names.path_name}/v1"


def path_route_name(model: ModelPlan) -> str:
    return f"{model.name}-by-path"


def path_route(model: ModelPlan) -> dict[str, Any]:
    """Compatibility with today's base URLs: `/<model>/v1/...` -> `/v1/...` on the same pool. Only the
    OpenAI API under /v1 is reachable; vLLM's /metrics and /health stay private."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": path_route_name(model), "namespace": model.names.namespace},
        "spec": {
            "parentRefs": _gateway_parent(),
            "rules": [
                {
                    "name": "by-path",
                    "matches": [{"path": {"type": "PathPrefix", "value": path_prefix(model)}}],
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {
                                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/v1"}
                            },
                        },
                        {
                            "type": "ExtensionRef",
                            "extensionRef": {
                                "group": "gateway.envoyproxy.io",
                                "kind": "HTTPRouteFilter",
                                "name": f"{model.name}-vllm-key",
                            },
                        },
                    ],
                    "backendRefs": [_pool_ref(model)],
                    "timeouts": {"request": route_timeout(model)},
                }
            ],
        },
    }


# ------------------------------------------------------------------------------- availability and network


def epp_pod_disruption_budget(model: ModelPlan) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": epp_name(model), "namespace": model.names.namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": epp_labels(model)}},
    }


def epp_network_policy(model: ModelPlan) -> dict[str, Any]:
    """Envoy's ext_proc calls from the gateway's proxies and the metrics scrape from Prometheus, nothing
    else. Kubelet's gRPC health probes (port 9003) need no rule: "traffic to and from the node where a
    Pod is running is always allowed" (kubernetes.io, concepts/services-networking/network-policies)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{epp_name(model)}-ingress", "namespace": model.names.namespace},
        "spec": {
            "podSelector": {"matchLabels": epp_labels(model)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [gw.proxy_peer()], "ports": [{"port": EXT_PROC_PORT, "protocol": "TCP"}]},
                {"from": [gw.prometheus_peer()], "ports": [{"port": METRICS_PORT, "protocol": "TCP"}]},
            ],
        },
    }


def vllm_from_picker_network_policy(model: ModelPlan) -> dict[str, Any]:
    """The picker scrapes each vLLM pod's /metrics every 50 ms (and, in precise mode, subscribes to its
    KV-event publisher): admitted next to the serving policy's gateway and Prometheus peers."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{model.name}-from-epp", "namespace": model.names.namespace},
        "spec": {
            "podSelector": {"matchLabels": model_selector(model.name)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": epp_labels(model)}}],
                    "ports": [{"port": p, "protocol": "TCP"} for p in vllm_ports_for_picker(model)],
                }
            ],
        },
    }
