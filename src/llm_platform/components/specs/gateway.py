"""The platform's entry point: Envoy Gateway + Envoy AI Gateway on Gateway API, one Gateway behind an internal
NLB, per-client API keys and rate limits. Facts and sources: ../shared/reference/GATEWAY.md.

Install order (each step waits for the one before): Gateway API v1.5.1 standard CRDs and Envoy Gateway's CRDs
(gateway-crds-helm) and the InferencePool v1 CRD; Envoy Gateway (gateway-helm) with AI Gateway as its
extension server for InferencePool backends; AI Gateway's CRDs and controller; then the EnvoyProxy,
GatewayClass and Gateway, the policies, and per model its endpoint picker and routes
(components.specs.inference_pool).

Requests pass, in Envoy Gateway v1.8.3's filter order: API key auth (SecurityPolicy) -> AI Gateway's ext_proc
(reads the OpenAI `model` field) -> local rate limit (BackendTrafficPolicy) -> the model's endpoint picker
(ext_proc) -> router. Auth and limits therefore run before a request ever reaches a picker or vLLM.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llm_platform.components.specs import quota
from llm_platform.components.specs.common import secret
from llm_platform.components.specs.gateway_charts import AI_GATEWAY_CONTROLLER as AI_GATEWAY_CONTROLLER
from llm_platform.components.specs.gateway_charts import (
    AI_GATEWAY_EXTENSION_PORT as AI_GATEWAY_EXTENSION_PORT,
)
from llm_platform.components.specs.gateway_charts import AI_GATEWAY_RELEASE as AI_GATEWAY_RELEASE
from llm_platform.components.specs.gateway_charts import CONTROLLER_NAME as CONTROLLER_NAME
from llm_platform.components.specs.gateway_charts import (
    WEBHOOK_CA_VALIDITY_HOURS as WEBHOOK_CA_VALIDITY_HOURS,
)
from llm_platform.components.specs.gateway_charts import WEBHOOK_CERT_RENEW_HOURS as WEBHOOK_CERT_RENEW_HOURS
from llm_platform.components.specs.gateway_charts import WEBHOOK_CERT_SECRET as WEBHOOK_CERT_SECRET
from llm_platform.components.specs.gateway_charts import (
    WEBHOOK_CERT_VALIDITY_HOURS as WEBHOOK_CERT_VALIDITY_HOURS,
)
from llm_platform.components.specs.gateway_charts import addon_pod
from llm_platform.components.specs.gateway_charts import envoy_gateway_values as envoy_gateway_values
from llm_platform.components.specs.gateway_charts import gateway_crds_values as gateway_crds_values
from llm_platform.components.specs.gateway_charts import webhook_cert_secret as webhook_cert_secret
from llm_platform.components.specs.gateway_charts import webhook_dns_names as webhook_dns_names
from llm_platform.config.schema import GatewayClient
from llm_platform.plan.addon_pods import (
    AI_GATEWAY_CONTROLLER_REQUESTS,
    AI_GATEWAY_REPLICAS,
    PROXY_CPU,
    PROXY_MEMORY,
)
from llm_platform.plan.gateway import duration, request_received_timeout_s
from llm_platform.plan.naming import GATEWAY_NAMESPACE, MONITORING_NAMESPACE

if TYPE_CHECKING:
    from llm_platform.plan.model import ModelPlan

GATEWAY_CLASS = "llm-platform"
GATEWAY = "llm-gateway"
ENVOY_PROXY = "llm-gateway-proxy"
CLIENT_KEYS_SECRET = "gateway-client-keys"
# set by the API key filter from the key that authenticated; removed from every request on arrival
CLIENT_HEADER = "x-llm-client"
# headers only the gateway may set: a client's own copy is dropped before routing and before any filter
# (client identity; AI Gateway's model header; the endpoint picker's destination header)
GATEWAY_OWNED_HEADERS = (CLIENT_HEADER, "x-ai-eg-model", "x-gateway-destination-endpoint")

# Envoy proxy pod facts (EG v1.8.3 internal/infrastructure/kubernetes/proxy, xds/bootstrap). The labels
# every proxy pod carries: EnvoyAppLabel() (proxy/resource.go) and the owning Gateway's
# (gatewayapi/helpers.go, OwningGatewayNameLabel), on the pod template (proxy/resource_provider.go,
# getPodLabels); the controller pods in the same namespace carry none of them.
PROXY_LABELS = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
    "gateway.envoyproxy.io/owning-gateway-name": GATEWAY,
}
PROXY_METRICS_PORT = 19001  # container port "metrics", /stats/prometheus
# AI Gateway's ext_proc sidecar in the Envoy pods: its own Prometheus metrics (gen_ai_* token usage and
# latency) on container port "aigw-admin", /metrics (ai-gateway v1.1.0 internal/controller/extproc_builder.go
# extProcAdminPort; examples/monitoring/monitoring.yaml scrapes it)
EXTPROC_METRICS_PORT = 1064
# the client id header as a label of those metrics (`llm.client` -> Prometheus `llm_client`): per-client tokens
CLIENT_METRIC_ATTRIBUTE = "llm.client"
PROXY_READINESS_PORT = 19003  # container port "readiness", /ready
PROXY_READINESS_PATH = "/ready"
LISTENER_PORT_SHIFT = 10000  # EG maps listener ports below 1024 to port + 10000 in the pod
PROXY_MEMORY_LIMIT = "1Gi"

# Timeouts for streamed generations: Envoy Gateway's defaults would cut long ones. The routes' request timeout
# is per model (plan/gateway.py FlowControlPlan.route_timeout: the serving budget, plus the hold at zero).
# Envoy's connection idle timeout, below the NLB's 350 s idle timeout, so Envoy, not the NLB, closes a quiet
# connection. 350 s is fixed for a TLS listener (this stack's with `certificateArn`) and the default of a TCP
# listener (without it), where the listener attribute `tcp.idle_timeout.seconds` could set 60-6000 s; the stack
# leaves it at the default (AWS docs, "Update the TCP idle timeout for your Network Load Balancer listener").
# A held request (a model at zero) sends nothing either way: its hold is capped at 270 s (plan/zero.py
# HOLD_CAP_S, the AI Gateway ext_proc's 300 s message timeout minus a margin), under 350 s.
IDLE_TIMEOUT = "300s"
PRESTOP_DRAIN_SECONDS = 30  # EnvoyProxy shutdown.drainTimeout; the NLB deregisters the pod meanwhile

# requests without a valid key never reach a rate-limit bucket: the API key filter answers 401 first
MIN_KEY_LENGTH = 16
_KEY_CHARS = re.compile(r"^[\x21-\x7e]+$")  # visible ASCII: a header value without spaces


# ------------------------------------------------------------------------------------------ validation


def check_clients(
    clients: Sequence[GatewayClient], client_keys: Mapping[str, str], vllm_api_key: str
) -> None:
    """Every client has exactly one usable key, no key is shared, no stray key is left over. Messages name
    the client, never the key. The clients themselves (names, rates, unique, at least one) are the
    schema's to check (config/schema/gateway.py GatewayConfig); only the secret is checked here."""
    names = [c.name for c in clients]
    missing = sorted(set(names) - set(client_keys))
    if missing:
        raise ValueError(f"gatewayClientKeys: no key for client(s) {', '.join(missing)}")
    unknown = sorted(set(client_keys) - set(names))
    if unknown:
        raise ValueError(f"gatewayClientKeys: key(s) for unknown client(s) {', '.join(unknown)}")
    seen: dict[str, str] = {}
    for name in names:
        key = client_keys[name]
        if len(key) < MIN_KEY_LENGTH or not _KEY_CHARS.match(key):
            raise ValueError(
                f"gatewayClientKeys[{name}]: use at least {MIN_KEY_LENGTH} visible ASCII characters without "
                "spaces (for example `openssl rand -hex 32`)"
            )
        if key in seen:
            raise ValueError(f"gatewayClientKeys: clients {seen[key]} and {name} share a key")
        if key == vllm_api_key:
            raise ValueError(f"gatewayClientKeys[{name}]: must not be the platform's vLLM API key")
        seen[key] = name


# ------------------------------------------------------------------------------------- rate-limit math


def per_replica_limit(requests_per_minute: int, envoy_replicas: int) -> int:
    """A client's limit as each Envoy replica enforces it.

    Envoy Gateway v1.8.3's local rate limit keeps one token bucket per Envoy replica and per route, even
    when the policy targets the Gateway (no Redis; `shared` is read only by the global path). The NLB
    spreads connections evenly over the replicas, so each replica gets its share of the limit; the client
    then gets its configured limit per model and entry path. Rounded up, so the sum is never below it."""
    return max(1, math.ceil(requests_per_minute / envoy_replicas))


# ------------------------------------------------------------------------------------------ Helm values


def ai_gateway_values() -> dict[str, Any]:
    """ai-gateway-helm: its controller is Envoy Gateway's extension server (and grants Envoy Gateway's
    service account read access to InferencePools in `envoyGateway.namespace`); its sidecar-injection
    webhook serves the platform's own certificate (WEBHOOK_CERT_SECRET)."""
    return {
        "envoyGateway": {"namespace": GATEWAY_NAMESPACE},
        "controller": {
            **addon_pod(),
            "replicaCount": AI_GATEWAY_REPLICAS,
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "resources": {"requests": AI_GATEWAY_CONTROLLER_REQUESTS.as_dict(), "limits": {"memory": "1Gi"}},
            "mutatingWebhook": {"tlsCertSecretName": WEBHOOK_CERT_SECRET},
            # ai-gateway-helm v1.1.0 values.yaml: "header1:label1,..." onto the ext_proc's metrics only
            "metricsRequestHeaderAttributes": f"{CLIENT_HEADER}:{CLIENT_METRIC_ATTRIBUTE}",
        },
    }


# ------------------------------------------------------------------------------------ Kubernetes objects


def namespace(environment: str) -> dict[str, Any]:
    """Baseline enforced (AI Gateway injects its ext_proc sidecar into the Envoy pods), restricted warned."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": GATEWAY_NAMESPACE,
            "labels": {
                "pod-security.kubernetes.io/enforce": "baseline",
                "pod-security.kubernetes.io/warn": "restricted",
                "pod-security.kubernetes.io/audit": "restricted",
                # AWS Load Balancer Controller: an Envoy pod is Ready only once its NLB target is healthy, so
                # a rollout never removes the last registered replica
                "elbv2.k8s.aws/pod-readiness-gate-inject": "enabled",
                "llm-platform/environment": environment,
            },
        },
    }


def _spread(topology_key: str, labels: Mapping[str, str], *, hard: bool = True) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": topology_key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": dict(labels)},
    }


_LB = "service.beta.kubernetes.io/aws-load-balancer-"
NLB_CLASS = "service.k8s.aws/nlb"
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"


def service_annotations(*, internal: bool, certificate_arn: str | None) -> dict[str, str]:
    """AWS Load Balancer Controller v2.17 annotations of the Service Envoy Gateway makes for the Gateway."""
    annotations = {
        f"{_LB}scheme": "internal" if internal else "internet-facing",
        f"{_LB}nlb-target-type": "ip",  # pods are the targets: no NodePort hop, the readiness gate applies
        f"{_LB}healthcheck-protocol": "http",
        f"{_LB}healthcheck-port": str(PROXY_READINESS_PORT),
        f"{_LB}healthcheck-path": PROXY_READINESS_PATH,
        f"{_LB}target-group-attributes": (
            f"preserve_client_ip.enabled=false,deregistration_delay.timeout_seconds={PRESTOP_DRAIN_SECONDS}"
        ),
    }
    if certificate_arn:
        annotations |= {
            f"{_LB}ssl-cert": certificate_arn,
            f"{_LB}ssl-ports": "443",
            f"{_LB}ssl-negotiation-policy": TLS_POLICY,
            f"{_LB}backend-protocol": "tcp",  # TLS ends at the NLB; plain HTTP inside the VPC
        }
    return annotations


def listener_port(certificate_arn: str | None) -> int:
    return 443 if certificate_arn else 80


def envoy_proxy(*, replicas: int, internal: bool, certificate_arn: str | None) -> dict[str, Any]:
    """How Envoy Gateway runs this Gateway's proxies: on the add-on nodes, spread, with a PDB, behind the NLB."""
    spread_labels = {"gateway.envoyproxy.io/owning-gateway-name": GATEWAY}
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyProxy",
        "metadata": {"name": ENVOY_PROXY, "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "provider": {
                "type": "Kubernetes",
                "kubernetes": {
                    "envoyDeployment": {
                        "replicas": replicas,
                        "pod": {
                            **addon_pod(),
                            "topologySpreadConstraints": [
                                _spread("topology.kubernetes.io/zone", spread_labels, hard=False),
                                _spread("kubernetes.io/hostname", spread_labels),
                            ],
                        },
                        "container": {
                            "resources": {
                                "requests": {"cpu": PROXY_CPU, "memory": PROXY_MEMORY},
                                "limits": {"memory": PROXY_MEMORY_LIMIT},
                            }
                        },
                    },
                    "envoyPDB": {"maxUnavailable": 1},
                    "envoyService": {
                        "type": "LoadBalancer",
                        # the AWS Load Balancer Controller, not the legacy cloud provider, owns the Service;
                        # without the controller nothing is provisioned (never a public Classic ELB)
                        "loadBalancerClass": NLB_CLASS,
                        "allocateLoadBalancerNodePorts": False,
                        "annotations": service_annotations(
                            internal=internal, certificate_arn=certificate_arn
                        ),
                    },
                },
            },
            "shutdown": {"drainTimeout": f"{PRESTOP_DRAIN_SECONDS}s"},
        },
    }


def gateway_class() -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": GATEWAY_CLASS},
        "spec": {
            "controllerName": CONTROLLER_NAME,
            "parametersRef": {
                "group": "gateway.envoyproxy.io",
                "kind": "EnvoyProxy",
                "name": ENVOY_PROXY,
                "namespace": GATEWAY_NAMESPACE,
            },
        },
    }


def gateway(*, certificate_arn: str | None, model_namespaces: Sequence[str]) -> dict[str, Any]:
    """One HTTP listener: TLS ends at the NLB (port 443 with a certificate, else 80). Routes attach from the
    models' namespaces only."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY, "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            "listeners": [
                {
                    "name": "http",
                    "protocol": "HTTP",
                    "port": listener_port(certificate_arn),
                    "allowedRoutes": {
                        "namespaces": {
                            "from": "Selector",
                            "selector": {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/metadata.name",
                                        "operator": "In",
                                        "values": sorted(model_namespaces),
                                    }
                                ]
                            },
                        },
                        "kinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}],
                    },
                }
            ],
        },
    }


def _gateway_target() -> list[dict[str, Any]]:
    return [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GATEWAY}]


def client_traffic_policy(models: Sequence[ModelPlan] = ()) -> dict[str, Any]:
    """Headers only the gateway sets are dropped on arrival; timeouts for streamed generations.

    `requestReceivedTimeout` is Envoy's `request_timeout`, which runs until the last request byte goes upstream,
    so it includes a from-zero hold in the picker (before the router): with a model at zero it is the longest
    hold plus the slow-loris guard (plan/gateway.py `request_received_timeout_s`), else 10 s as before.
    `streamIdleTimeout` stays Envoy's 5 min default: a hold is at most HOLD_CAP_S (270 s, plan/zero.py), so a
    held stream, on which nothing flows, cannot reach it."""
    received = request_received_timeout_s(m.flow_control for m in models)
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "ClientTrafficPolicy",
        "metadata": {"name": GATEWAY, "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "targetRefs": _gateway_target(),
            "headers": {"earlyRequestHeaders": {"remove": list(GATEWAY_OWNED_HEADERS)}},
            "timeout": {"http": {"idleTimeout": IDLE_TIMEOUT, "requestReceivedTimeout": duration(received)}},
        },
    }


def client_keys_secret(client_keys: Any) -> dict[str, Any]:
    """Key = client id, value = its API key (a Pulumi secret in the component: masked in state and renders)."""
    return secret(CLIENT_KEYS_SECRET, GATEWAY_NAMESPACE, client_keys)


def security_policy() -> dict[str, Any]:
    """Clients send `Authorization: Bearer <key>`; a missing or unknown key gets 401. The key is removed
    before forwarding (sanitize) and the client's id is set in CLIENT_HEADER."""
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "SecurityPolicy",
        "metadata": {"name": GATEWAY, "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "targetRefs": _gateway_target(),
            "apiKeyAuth": {
                "credentialRefs": [{"group": "", "kind": "Secret", "name": CLIENT_KEYS_SECRET}],
                "extractFrom": [{"headers": ["Authorization"]}],
                "forwardClientIDHeader": CLIENT_HEADER,
                "sanitize": True,
            },
        },
    }


def rate_limit_policy(
    clients: Sequence[GatewayClient], envoy_replicas: int, *, global_limits: bool = False
) -> dict[str, Any]:
    """One bucket per client, keyed on the client-ID header the API key filter set (which runs first, and
    whose value a client cannot choose). Local: each replica enforces its share (per_replica_limit). Global
    (a quota store): one bucket per client and limit across all replicas and routes (specs.quota)."""
    if global_limits:
        return {
            "apiVersion": "gateway.envoyproxy.io/v1alpha1",
            "kind": "BackendTrafficPolicy",
            "metadata": {"name": GATEWAY, "namespace": GATEWAY_NAMESPACE},
            "spec": {
                "targetRefs": _gateway_target(),
                "rateLimit": {"global": {"rules": quota.global_rules(clients, CLIENT_HEADER)}},
            },
        }
    rules = [
        {
            "clientSelectors": [{"headers": [{"name": CLIENT_HEADER, "type": "Exact", "value": c.name}]}],
            "limit": {"requests": per_replica_limit(c.requests_per_minute, envoy_replicas), "unit": "Minute"},
        }
        for c in clients
    ]
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "BackendTrafficPolicy",
        "metadata": {"name": GATEWAY, "namespace": GATEWAY_NAMESPACE},
        "spec": {"targetRefs": _gateway_target(), "rateLimit": {"local": {"rules": rules}}},
    }


def proxy_pod_monitor() -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "envoy-proxy", "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": dict(PROXY_LABELS)},
            "podMetricsEndpoints": [
                {"port": "metrics", "path": "/stats/prometheus", "interval": "15s"},
                {"port": "aigw-admin", "path": "/metrics", "interval": "15s"},
            ],
        },
    }


def proxy_network_policy(vpc_cidr: str, certificate_arn: str | None) -> dict[str, Any]:
    """The Envoy pods: the listener and the NLB health check from the VPC (the NLB's own addresses, with
    client IP preservation off), metrics from Prometheus only."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "envoy-proxy-ingress", "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "podSelector": {"matchLabels": dict(PROXY_LABELS)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"ipBlock": {"cidr": vpc_cidr}}],
                    "ports": [
                        {"port": listener_port(certificate_arn) + LISTENER_PORT_SHIFT, "protocol": "TCP"},
                        {"port": PROXY_READINESS_PORT, "protocol": "TCP"},
                    ],
                },
                {
                    "from": [prometheus_peer()],
                    "ports": [
                        {"port": PROXY_METRICS_PORT, "protocol": "TCP"},
                        {"port": EXTPROC_METRICS_PORT, "protocol": "TCP"},
                    ],
                },
            ],
        },
    }


def prometheus_peer() -> dict[str, Any]:
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }


def proxy_peer() -> dict[str, Any]:
    """The Envoy proxies of the gateway, as another namespace's NetworkPolicy names them: not the rest of
    the gateway namespace (Envoy Gateway's controller)."""
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": GATEWAY_NAMESPACE}},
        "podSelector": {"matchLabels": dict(PROXY_LABELS)},
    }
