"""A disaggregated model (config/schema/disaggregation.py) as llm-d's P/D path runs it, one Deployment per role:

- vLLM on both roles with NixlConnector and `kv_role: kv_both`, NIXL's LIBFABRIC backend over EFA
  (`--kv-transfer-config`, vllm KVTransferConfig; the connector reads `kv_connector_extra_config.backends`,
  default ["UCX"]: vllm distributed/kv_transfer/kv_connector/v1/nixl_connector.py `get_from_extra_config
  ("backends", ["UCX"])`), its side channel on the pod's IP and port (envs.py VLLM_NIXL_SIDE_CHANNEL_HOST,
  default "localhost", and VLLM_NIXL_SIDE_CHANNEL_PORT, default 5600). Read in the stored vLLM snapshot
  (commit 002a1057), not at the v0.30.0 tag itself: the tag's tree was too large to fetch here.
- The decode pods carry llm-d's routing sidecar (llm-d-router v0.10.0 cmd/pd-sidecar, flags in
  pkg/sidecar/proxy/options.go: `--port` default 8000, `--model-server-port` default 8200, `--kv-connector
  nixlv2`, `--secure-proxy` default true, so false here: the gateway and the picker speak plain HTTP to the
  pods). It takes the InferencePool's port 8000, asks the prefill pod the picker chose (its
  `x-prefiller-host-port` header) to prefill, then has its own vLLM (on 8200) pull the KV blocks and decode;
  every other path (`/metrics`, `/health`) it proxies to vLLM (proxy.go: `mux.Handle("/", s.decoderProxy)`).
  The upstream layout is llm-d-router v0.10.0 deploy/components/vllm-decode/deployment.yaml.
- Role labels `llm-d.ai/role: prefill|decode` (the picker's filters: pkg/epp/framework/plugins/scheduling/
  filter/bylabel/roles.go RoleLabel, `prefill-filter` and `decode-filter`).
- EFA: each pod requests its GPU share of its node's EFA interfaces (`vpc.amazonaws.com/efa`), IPC_LOCK to
  register memory for RDMA, the libfabric env, and NCCL's socket interfaces with the EKS Pod Identity link
  excluded (`^lo,docker,veth,eni,pod-id-link0`: aws-samples/aws-do-eks PR #54: when EFA initialisation fails,
  NCCL's TCP fallback otherwise picks `pod-id-link0`).
- Same zone: the pool is an EFA pool pinned to one zone and its cluster placement group (plan/nodes.py
  `efa_pool`); a required pod affinity on the zone to the model's other pods says the same to the scheduler.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from llm_platform.components.specs import serving
from llm_platform.components.specs.autoscaling import _rules as hpa_rules
from llm_platform.components.specs.gateway import prometheus_peer
from llm_platform.components.specs.model_cache import CacheWiring
from llm_platform.facts.versions import LLM_D_SIDECAR_IMAGE
from llm_platform.plan import ModelPlan
from llm_platform.plan.disaggregation import DECODE_VLLM_PORT, RolePlan
from llm_platform.plan.naming import model_selector, restricted_container

ROLE_LABEL = "llm-d.ai/role"  # llm-d-router v0.10.0 filter/bylabel/roles.go RoleLabel
EFA_RESOURCE = "vpc.amazonaws.com/efa"
SIDECAR = "routing-sidecar"
# the sidecar's `--kv-connector` for vLLM's NixlConnector (llm-d-router v0.10.0 pkg/sidecar/constants
# KVConnectorNIXLV2 = "nixlv2")
SIDECAR_KV_CONNECTOR = "nixlv2"
NIXL_BACKENDS = {"nixl-libfabric": ["LIBFABRIC"]}
# libfabric and NCCL over EFA; NCCL's socket list excludes the Pod Identity link (aws-do-eks PR #54)
PD_EFA_ENV = (
    ("FI_PROVIDER", "efa"),
    ("FI_EFA_USE_DEVICE_RDMA", "1"),
    ("FI_EFA_USE_HUGE_PAGE", "0"),
    ("NCCL_SOCKET_IFNAME", "^lo,docker,veth,eni,pod-id-link0"),
    ("GLOO_SOCKET_IFNAME", "eth0"),
    ("NCCL_DEBUG", "WARN"),
)
# the P/D decider's threshold: a request with fewer uncached prompt tokens than this skips the prefill role
# (llm-d-router v0.10.0 deploy/config/pd-epp-config.yaml `prefix-based-pd-decider` nonCachedTokens: 16)
PD_NON_CACHED_TOKENS = 16


def kv_transfer_config(m: ModelPlan) -> str:
    d = m.disaggregation
    assert d is not None
    config = {
        "kv_connector": "NixlConnector",
        "kv_role": "kv_both",
        "kv_connector_extra_config": {"backends": NIXL_BACKENDS[d.kv_transport]},
    }
    return json.dumps(config, separators=(",", ":"))


def role_labels(m: ModelPlan, role: RolePlan, environment: str) -> dict[str, str]:
    return {**serving.labels(m, environment), ROLE_LABEL: role.role, "llm-platform/model": m.name}


def role_selector(m: ModelPlan, role: RolePlan) -> dict[str, str]:
    return {**model_selector(m.name), ROLE_LABEL: role.role}


def _role_args(m: ModelPlan, role: RolePlan, wiring: CacheWiring) -> list[str]:
    """vLLM's arguments with the role's tensor parallelism, the decode vLLM behind the sidecar's port, and
    the KV transfer."""
    args = serving.vllm_args(m, wiring)
    args[args.index("--tensor-parallel-size") + 1] = str(role.tensor_parallel_size)
    if role.role == "decode":
        args[args.index("--port") + 1] = str(DECODE_VLLM_PORT)
    return [*args, "--kv-transfer-config", kv_transfer_config(m)]


def _role_container(container: dict[str, Any], m: ModelPlan, role: RolePlan, wiring: CacheWiring) -> None:
    d = m.disaggregation
    assert d is not None
    container["args"] = _role_args(m, role, wiring)
    resources = serving.pod_resources(role.gpus, m.instance)
    efa = {EFA_RESOURCE: str(role.efa_per_pod)}
    resources["requests"].update(efa)
    resources["limits"].update(efa)
    container["resources"] = resources
    container["env"] += [
        {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": str(d.side_channel_port)},
        *({"name": k, "value": v} for k, v in PD_EFA_ENV),
    ]
    container["securityContext"]["capabilities"] = {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    port = DECODE_VLLM_PORT if role.role == "decode" else serving.PORT
    container["ports"] = [
        {"name": "http", "containerPort": port, "protocol": "TCP"},
        {"name": "nixl", "containerPort": d.side_channel_port, "protocol": "TCP"},
    ]
    probe = container["startupProbe"]
    if "exec" in probe:  # the compile-cache marker check reads vLLM's own port
        command = probe["exec"]["command"]
        command[-1] = command[-1].replace(f":{serving.PORT}/", f":{port}/")


def routing_sidecar() -> dict[str, Any]:
    """llm-d's routing sidecar as a native sidecar (an init container that keeps running), as upstream runs it."""
    return {
        "name": SIDECAR,
        "image": LLM_D_SIDECAR_IMAGE,
        "restartPolicy": "Always",
        "args": [
            f"--port={serving.PORT}",
            f"--model-server-port={DECODE_VLLM_PORT}",
            f"--kv-connector={SIDECAR_KV_CONNECTOR}",
            "--secure-proxy=false",
        ],
        "ports": [{"name": "sidecar-http", "containerPort": serving.PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": restricted_container(),
    }


def same_zone_affinity(m: ModelPlan) -> dict[str, Any]:
    """Every pod of the model in the zone of the others (a pod matching its own term may start the first)."""
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": model_selector(m.name)},
                    "topologyKey": "topology.kubernetes.io/zone",
                }
            ]
        }
    }


def role_deployment(
    m: ModelPlan,
    role: RolePlan,
    *,
    environment: str,
    wiring: CacheWiring,
    mounts_hf_token: bool,
    priority_class: str | None = serving.SERVING_PRIORITY_CLASS,
) -> dict[str, Any]:
    """One role's Deployment, from the aggregated Deployment's (image, cache wiring, secrets, probes, drain)
    plus the role's parallelism, the KV transfer, EFA and, on decode, the routing sidecar."""
    out = copy.deepcopy(
        serving.deployment(
            m,
            environment=environment,
            wiring=wiring,
            mounts_hf_token=mounts_hf_token,
            priority_class=priority_class,
        )
    )
    labels = role_labels(m, role, environment)
    out["metadata"]["name"] = role.deployment
    out["metadata"]["labels"] = labels
    spec = out["spec"]
    spec["selector"] = {"matchLabels": role_selector(m, role)}
    template = spec["template"]
    template["metadata"]["labels"] = {**template["metadata"]["labels"], **labels}
    pod = template["spec"]
    pod["affinity"] = same_zone_affinity(m)
    for constraint in pod["topologySpreadConstraints"]:
        constraint["labelSelector"] = {"matchLabels": role_selector(m, role)}
    _role_container(pod["containers"][0], m, role, wiring)
    if role.role == "decode":
        pod["initContainers"] = [*pod.get("initContainers", []), routing_sidecar()]
    return out


# ------------------------------------------------------------------------------------------- scaling


def role_scaled_object(m: ModelPlan, role: RolePlan, environment: str) -> dict[str, Any]:
    """One role's KEDA ScaledObject: its Deployment, its bounds, its own signal (an AverageValue per replica),
    the model's HPA behaviour."""
    s = m.scaling
    t = role.trigger
    rules = {"scaleUp": hpa_rules(s.scale_up), "scaleDown": hpa_rules(s.scale_down)}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": role.scaled_object,
            "namespace": m.names.namespace,
            "labels": {
                "app.kubernetes.io/instance": m.name,
                "llm-platform/environment": environment,
                ROLE_LABEL: role.role,
            },
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": role.deployment},
            "minReplicaCount": role.min_replicas,
            "maxReplicaCount": role.max_replicas,
            "pollingInterval": s.polling_interval_s,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": rules}},
            "triggers": [
                {
                    "type": t.type,
                    "name": t.name,
                    "metricType": t.metric_type,
                    "metadata": {
                        "serverAddress": s.prometheus_url,
                        "ignoreNullValues": str(s.ignore_null_values).lower(),
                        "query": t.query,
                        "threshold": f"{t.threshold:g}",
                    },
                }
            ],
        },
    }


# ------------------------------------------------------------------------------------------- network


def network_policies(m: ModelPlan, prometheus_namespace: str | None = None) -> list[dict[str, Any]]:
    """What the roles need beyond the model's serving policy (gateway and Prometheus on 8000): the NIXL side
    channel between the model's pods, the decode sidecars' prefill requests to the prefill pods' vLLM, and
    Prometheus scraping the decode pods' vLLM behind the sidecar. The KV bytes themselves move over EFA,
    which bypasses the kernel and so NetworkPolicy."""
    d = m.disaggregation
    assert d is not None
    prefill, decode = d.role("prefill"), d.role("decode")
    ns = m.names.namespace
    prometheus = prometheus_peer()
    if prometheus_namespace is not None:
        prometheus["namespaceSelector"] = {
            "matchLabels": {"kubernetes.io/metadata.name": prometheus_namespace}
        }

    def policy(name: str, pods: dict[str, str], peers: list[dict[str, Any]], port: int) -> dict[str, Any]:
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": f"{m.name}-{name}", "namespace": ns},
            "spec": {
                "podSelector": {"matchLabels": pods},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": peers, "ports": [{"port": port, "protocol": "TCP"}]}],
            },
        }

    model_pods = model_selector(m.name)
    return [
        policy(
            "kv-side-channel", model_pods, [{"podSelector": {"matchLabels": model_pods}}], d.side_channel_port
        ),
        policy(
            "prefill-from-decode",
            role_selector(m, prefill),
            [{"podSelector": {"matchLabels": role_selector(m, decode)}}],
            serving.PORT,
        ),
        policy("decode-metrics", role_selector(m, decode), [prometheus], DECODE_VLLM_PORT),
    ]


# ------------------------------------------------------------------------------------------- picker


def pd_picker_config(config: dict[str, Any]) -> dict[str, Any]:
    """The model's EndpointPickerConfig with llm-d's P/D profile (llm-d-router v0.10.0 deploy/config/
    pd-epp-config.yaml): `disagg-profile-handler` (profilehandler/disagg/disagg_profile_handler.go; profiles
    `prefill` and `decode` are its defaults) with `prefix-based-pd-decider`, which reads the prefix match the
    `approx-prefix-cache-producer` estimates; each profile keeps the model's scorers behind its role filter."""
    out = copy.deepcopy(config)
    out["plugins"] = [
        *out["plugins"],
        {"type": "approx-prefix-cache-producer"},
        {"type": "prefill-filter"},
        {"type": "decode-filter"},
        {"type": "max-score-picker"},
        {"type": "prefix-based-pd-decider", "parameters": {"nonCachedTokens": PD_NON_CACHED_TOKENS}},
        {
            "type": "disagg-profile-handler",
            "parameters": {"deciders": {"prefill": "prefix-based-pd-decider"}},
        },
    ]
    (default,) = out["schedulingProfiles"]
    scorers = default["plugins"]
    out["schedulingProfiles"] = [
        {
            "name": role,
            "plugins": [{"pluginRef": f"{role}-filter"}, {"pluginRef": "max-score-picker"}, *scorers],
        }
        for role in ("prefill", "decode")
    ]
    return out
