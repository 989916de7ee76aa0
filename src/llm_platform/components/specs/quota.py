"""Per-client quotas enforced across every Envoy replica: Envoy Gateway's global rate limit (its rate limit
service, envoyproxy/ratelimit, keeps the counters in a Redis-protocol store) and Envoy AI Gateway's token
costs. Used when the stack file sets `gateway.quotaStore`; without it the gateway keeps local, per-replica
limits (components.specs.gateway.rate_limit_policy).

Facts (Envoy Gateway v1.8.3, AI Gateway v1.1.0; CRDs in ../shared/reference/crds):
- EnvoyGateway `rateLimit.backend: {type: Redis, redis: {url}}` (api/v1alpha1/envoygateway_types.go,
  RateLimitRedisSettings: url and tls only). The password reaches the rate limit service as its REDIS_AUTH
  environment variable (envoyproxy/ratelimit settings.go), set through `provider.kubernetes.
  rateLimitDeployment.container.env` from a Secret (EG's ratelimit tests use the same REDIS_AUTH).
- TLS to the store (Envoy Gateway v1.8.3 internal/infrastructure/kubernetes/ratelimit/resource.go): with
  `redis.tls` set, EG sets REDIS_TLS=true and mounts a volume named `redis-certs` at /redis-certs in the
  rate limit container, but creates that volume only from `tls.certificateRef` (a client certificate; there
  is no CA field): with `tls: {}` alone the Deployment would mount a volume it lacks. The platform gives the
  pod that volume itself (`rateLimitDeployment.pod.volumes`, merged by name: resource.ExpectedVolumes), the
  store's CA only, and points REDIS_TLS_CACERT at it (envoyproxy/ratelimit 1e50889b, EG's pinned image:
  settings.go RedisTlsConfig -> utils.TlsConfigFromFiles adds it to the system roots; the Go TLS dialer
  checks the server's name against the host of REDIS_URL, STORE_HOST). Valkey listens only on TLS (`port 0`,
  `tls-port`; valkey.conf's TLS section), with a leaf for the Service's names signed by the platform's own
  CA (components/certificates.py, as for the AI Gateway webhook), and no client certificates
  (`tls-auth-clients no`: the password still authenticates the client). The valkey/valkey image is built
  with BUILD_TLS=yes (valkey-container Dockerfile.template).
- The rate limit pods carry `app.kubernetes.io/{name: envoy-ratelimit, component: ratelimit, managed-by:
  envoy-gateway}` (internal/infrastructure/kubernetes/ratelimit/resource.go, rateLimitLabels).
- BackendTrafficPolicy `rateLimit.global.rules[]`: `shared: true` makes one bucket across every route the
  policy reaches (else one per route); `xRateLimitHeaders: DraftVersion03` answers with x-ratelimit-limit,
  x-ratelimit-remaining and x-ratelimit-reset; a request over the limit gets 429.
- Token budgets: AIGatewayRoute `llmRequestCosts` stores the response's token usage in dynamic metadata
  `io.envoy.ai_gateway/<metadataKey>`; a rule with `cost.request {from: Number, number: 0}` only checks the
  budget when the request arrives and `cost.response {from: Metadata}` spends the tokens when it ends (the
  AIGatewayRoute CRD's own example). A request is let in while budget remains, so the last one may overrun
  it by its own size; the next gets 429.
- AI Gateway's ext_proc, which writes those token counts, runs only on the routes it generates from an
  AIGatewayRoute (the model-field route); the `/<model>/v1/` path routes have none, so a request there spends
  no tokens. `uncharged_route_policy` keeps clients with a token budget off them: a SecurityPolicy on the path
  route whose `authorization` allows only the clients without one (EG v1.8.3 api/v1alpha1/
  authorization_types.go Principal.headers: exact values of a request header), matched on the client-ID header
  the API key filter sets (internal/xds/translator/httpfilters.go orders api_key_auth (6) before rbac (301), and
  the Gateway's ClientTrafficPolicy removes that header from every arriving request, so a client cannot set
  it); `mergeType: StrategicMerge` merges it into the Gateway's API key policy instead of replacing it on the
  route (internal/gatewayapi/securitypolicy.go, the route policy merged into its parent when mergeType is set).
  A denied client gets 403 and uses the model-field route, which charges it. Routing the path routes through
  the AIGatewayRoute instead would need AI Gateway to match a path prefix and rewrite it, which its generated
  routes (one rule per `model` header match) do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION, secret
from llm_platform.config.schema import GatewayClient, QuotaStoreConfig
from llm_platform.facts.versions import VALKEY_IMAGE, VALKEY_UID
from llm_platform.plan.addon_pods import RATE_LIMIT_CPU, RATE_LIMIT_MEMORY, STORE_CPU, STORE_MEMORY
from llm_platform.plan.naming import GATEWAY_NAMESPACE

STORE = "ratelimit-valkey"
STORE_PORT = 6379
STORE_LABELS = {"app.kubernetes.io/name": "valkey", "app.kubernetes.io/instance": STORE}
STORE_AUTH_SECRET = "ratelimit-valkey-auth"
STORE_CONFIG = "ratelimit-valkey-config"
STORE_HOST = f"{STORE}.{GATEWAY_NAMESPACE}.svc.cluster.local"
STORE_URL = f"{STORE_HOST}:{STORE_PORT}"
STORE_TLS_SECRET = "ratelimit-valkey-tls"  # ca.crt, tls.crt, tls.key (components/certificates.py)
STORE_TLS_DIR = "/etc/valkey/tls"
STORE_CA_VALIDITY_HOURS = 10 * 365 * 24
STORE_CERT_VALIDITY_HOURS = 3 * 365 * 24
STORE_CERT_RENEW_HOURS = 90 * 24
# the pod template's annotation that carries the leaf's SHA-256: Valkey reads its certificate only at start, so
# a leaf renewed by `pulumi up` restarts the pod
STORE_CERT_ANNOTATION = "llm-platform/tls-cert-sha256"
# where the rate limit container finds the store's CA: the mount path EG gives the `redis-certs` volume
RATE_LIMIT_CERTS_VOLUME = "redis-certs"
RATE_LIMIT_CA_FILE = "/redis-certs/ca.crt"
STORE_MEMORY_LIMIT = "512Mi"
# below the container's limit: Valkey evicts the keys nearest expiry (every counter has a TTL) instead of
# being OOM-killed
STORE_MAXMEMORY = "384mb"
RATE_LIMIT_LABELS = {
    "app.kubernetes.io/name": "envoy-ratelimit",
    "app.kubernetes.io/component": "ratelimit",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}
RATE_LIMIT_MEMORY_LIMIT = "512Mi"
AI_GATEWAY_METADATA = "io.envoy.ai_gateway"  # AI Gateway's dynamic metadata namespace (llmRequestCosts)
TOKEN_METADATA = {"input": "llm_input_token", "output": "llm_output_token", "total": "llm_total_token"}
TOKEN_COST_TYPE = {"input": "InputToken", "output": "OutputToken", "total": "TotalToken"}


def store_dns_names() -> list[str]:
    """The names the store's certificate is for: its Service's, the fully qualified one last (STORE_HOST,
    the host the rate limit service dials and checks the certificate against)."""
    return [STORE, f"{STORE}.{GATEWAY_NAMESPACE}", f"{STORE}.{GATEWAY_NAMESPACE}.svc", STORE_HOST]


def store_config() -> str:
    """valkey.conf: TLS only (no plaintext port; no client certificates asked for), append-only file synced
    every second on the volume (a restart keeps the day's budgets), no RDB snapshots, the password from the
    Secret's file (never in argv or a ConfigMap)."""
    return "\n".join(
        [
            "port 0",
            f"tls-port {STORE_PORT}",
            f"tls-cert-file {STORE_TLS_DIR}/tls.crt",
            f"tls-key-file {STORE_TLS_DIR}/tls.key",
            f"tls-ca-cert-file {STORE_TLS_DIR}/ca.crt",
            "tls-auth-clients no",
            "bind * -::*",
            "protected-mode yes",
            "dir /data",
            "appendonly yes",
            "appendfsync everysec",
            'save ""',
            f"maxmemory {STORE_MAXMEMORY}",
            "maxmemory-policy volatile-ttl",
            "include /etc/valkey/auth/auth.conf",
            "",
        ]
    )


def auth_conf(password: str) -> str:
    return f'requirepass "{password}"\n'


def store_secret(data: Any) -> dict[str, Any]:
    """`data` = {password, auth.conf} (a Pulumi secret in the component: masked in state and renders)."""
    return secret(STORE_AUTH_SECRET, GATEWAY_NAMESPACE, data)


def store_tls_secret(pems: Any) -> dict[str, Any]:
    """`pems` = {ca.crt, tls.crt, tls.key} (a Pulumi secret in the component: masked in state and renders)."""
    return secret(STORE_TLS_SECRET, GATEWAY_NAMESPACE, pems)


def store_config_map() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": STORE_CONFIG, "namespace": GATEWAY_NAMESPACE},
        "data": {"valkey.conf": store_config()},
    }


def store_service() -> dict[str, Any]:
    """Headless: the StatefulSet's governing Service, and STORE_URL resolves to its one pod."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": STORE, "namespace": GATEWAY_NAMESPACE, "labels": dict(STORE_LABELS)},
        "spec": {
            "clusterIP": "None",
            "selector": dict(STORE_LABELS),
            "ports": [{"name": "redis", "port": STORE_PORT, "targetPort": "redis", "protocol": "TCP"}],
        },
    }


def _password_env(name: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": STORE_AUTH_SECRET, "key": "password"}}}


def _valkey_container() -> dict[str, Any]:
    """Valkey itself: TLS only (its ping checks the chain), its password from the auth Secret, its
    counters on the `data` volume; read-only root, no capabilities."""
    ping = {
        # valkey-cli checks the chain, not the name (127.0.0.1 is not in the certificate)
        "exec": {
            "command": [
                "sh",
                "-c",
                f"valkey-cli --tls --cacert {STORE_TLS_DIR}/ca.crt -h 127.0.0.1 ping | grep -q PONG",
            ]
        },
        "periodSeconds": 10,
        "timeoutSeconds": 3,
    }
    return {
        "name": "valkey",
        "image": VALKEY_IMAGE,
        "command": ["valkey-server", "/etc/valkey/valkey.conf"],
        "ports": [{"name": "redis", "containerPort": STORE_PORT, "protocol": "TCP"}],
        # valkey-cli reads the password from the environment (REDISCLI_AUTH)
        "env": [_password_env("REDISCLI_AUTH")],
        "readinessProbe": {**ping, "initialDelaySeconds": 5},
        "livenessProbe": {
            "tcpSocket": {"port": "redis"},
            "initialDelaySeconds": 15,
            "periodSeconds": 20,
            "failureThreshold": 3,
        },
        "resources": {
            "requests": {"cpu": STORE_CPU, "memory": STORE_MEMORY},
            "limits": {"memory": STORE_MEMORY_LIMIT},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {
                "name": "config",
                "mountPath": "/etc/valkey/valkey.conf",
                "subPath": "valkey.conf",
            },
            {"name": "auth", "mountPath": "/etc/valkey/auth", "readOnly": True},
            {"name": "tls", "mountPath": STORE_TLS_DIR, "readOnly": True},
        ],
    }


def store_stateful_set(
    store: QuotaStoreConfig, storage_class: str | None, cert_sha256: Any = None
) -> dict[str, Any]:
    """One Valkey on the add-on nodes with its counters on a volume of the stack's StorageClass (the
    cluster's default outside eks mode). One replica: the rate limit service fails open while it restarts
    (Envoy Gateway's default, `failClosed: false`), it does not lose the counters. `cert_sha256`: the
    leaf's digest (an Output in the component) on the pod template, so a renewed leaf restarts Valkey."""
    claim: dict[str, Any] = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": f"{store.storage_gib}Gi"}},
        },
    }
    if storage_class:
        claim["spec"]["storageClassName"] = storage_class
    template_metadata: dict[str, Any] = {"labels": dict(STORE_LABELS)}
    if cert_sha256 is not None:
        template_metadata["annotations"] = {STORE_CERT_ANNOTATION: cert_sha256}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": STORE, "namespace": GATEWAY_NAMESPACE, "labels": dict(STORE_LABELS)},
        "spec": {
            "serviceName": STORE,
            "replicas": 1,
            "selector": {"matchLabels": dict(STORE_LABELS)},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": {
                "metadata": template_metadata,
                "spec": {
                    "nodeSelector": dict(ADDON_NODE_LABEL),
                    "tolerations": [ADDON_TOLERATION],
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": VALKEY_UID,
                        "runAsGroup": VALKEY_UID,
                        "fsGroup": VALKEY_UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [_valkey_container()],
                    "volumes": [
                        {"name": "config", "configMap": {"name": STORE_CONFIG}},
                        {
                            "name": "auth",
                            "secret": {
                                "secretName": STORE_AUTH_SECRET,
                                "items": [{"key": "auth.conf", "path": "auth.conf"}],
                                "defaultMode": 0o440,
                            },
                        },
                        {"name": "tls", "secret": {"secretName": STORE_TLS_SECRET, "defaultMode": 0o440}},
                    ],
                },
            },
            "volumeClaimTemplates": [claim],
        },
    }


def store_network_policy() -> dict[str, Any]:
    """Only Envoy Gateway's rate limit service reaches the store."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{STORE}-ingress", "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "podSelector": {"matchLabels": dict(STORE_LABELS)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"podSelector": {"matchLabels": dict(RATE_LIMIT_LABELS)}}],
                    "ports": [{"port": STORE_PORT, "protocol": "TCP"}],
                }
            ],
        },
    }


def envoy_gateway_quota_values(store: QuotaStoreConfig) -> dict[str, Any]:
    """Merged into gateway-helm's `config.envoyGateway`: the Redis backend over TLS and the rate limit
    Deployment Envoy Gateway then runs (on the add-on nodes, with the store's password from the Secret and
    its CA, nothing else of the TLS Secret, in the `redis-certs` volume EG mounts)."""
    ca_volume = {
        "name": RATE_LIMIT_CERTS_VOLUME,
        "secret": {
            "secretName": STORE_TLS_SECRET,
            "items": [{"key": "ca.crt", "path": "ca.crt"}],
            "defaultMode": 0o444,
        },
    }
    return {
        "rateLimit": {"backend": {"type": "Redis", "redis": {"url": STORE_URL, "tls": {}}}},
        "provider": {
            "type": "Kubernetes",
            "kubernetes": {
                "rateLimitDeployment": {
                    "replicas": store.rate_limit_replicas,
                    "pod": {
                        "nodeSelector": dict(ADDON_NODE_LABEL),
                        "tolerations": [ADDON_TOLERATION],
                        "volumes": [ca_volume],
                    },
                    "container": {
                        "env": [
                            _password_env("REDIS_AUTH"),
                            {"name": "REDIS_TLS_CACERT", "value": RATE_LIMIT_CA_FILE},
                        ],
                        "resources": {
                            "requests": {"cpu": RATE_LIMIT_CPU, "memory": RATE_LIMIT_MEMORY},
                            "limits": {"memory": RATE_LIMIT_MEMORY_LIMIT},
                        },
                    },
                }
            },
        },
    }


def _rule(
    client: str, header: str, limit: int, unit: str, cost: dict[str, Any] | None = None
) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "clientSelectors": [{"headers": [{"name": header, "type": "Exact", "value": client}]}],
        "limit": {"requests": limit, "unit": unit},
        "shared": True,
        "xRateLimitHeaders": "DraftVersion03",
    }
    if cost is not None:
        rule["cost"] = cost
    return rule


def token_cost(kind: str) -> dict[str, Any]:
    return {
        "request": {"from": "Number", "number": 0},
        "response": {
            "from": "Metadata",
            "metadata": {"namespace": AI_GATEWAY_METADATA, "key": TOKEN_METADATA[kind]},
        },
    }


def global_rules(clients: Sequence[GatewayClient], header: str) -> list[dict[str, Any]]:
    """Per client: requests per minute (and per second), tokens per minute and per day, each one bucket for
    the whole gateway. Keyed on the client-ID header the API key filter sets (a client cannot choose it)."""
    rules = []
    for c in clients:
        rules.append(_rule(c.name, header, c.requests_per_minute, "Minute"))
        if c.requests_per_second is not None:
            rules.append(_rule(c.name, header, c.requests_per_second, "Second"))
        for limit, unit in ((c.tokens_per_minute, "Minute"), (c.tokens_per_day, "Day")):
            if limit is not None:
                rules.append(_rule(c.name, header, limit, unit, token_cost(c.token_kind)))
    return rules


def has_token_budget(client: GatewayClient) -> bool:
    return client.tokens_per_minute is not None or client.tokens_per_day is not None


def uncharged_route_policy(
    route: str, namespace: str, clients: Sequence[GatewayClient], header: str
) -> dict[str, Any] | None:
    """A SecurityPolicy on a route that charges no tokens (a `/<model>/v1/` path route): only the clients
    without a token budget may use it (403 for the rest); None when no client has a budget."""
    if not any(has_token_budget(c) for c in clients):
        return None
    allowed = sorted(c.name for c in clients if not has_token_budget(c))
    rules = (
        [
            {
                "name": "no-token-budget",
                "action": "Allow",
                "principal": {"headers": [{"name": header, "values": allowed}]},
            }
        ]
        if allowed
        else []
    )
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "SecurityPolicy",
        "metadata": {"name": route, "namespace": namespace},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route}],
            "mergeType": "StrategicMerge",
            "authorization": {"defaultAction": "Deny", **({"rules": rules} if rules else {})},
        },
    }


def token_kinds(clients: Sequence[GatewayClient]) -> list[str]:
    return sorted({c.token_kind for c in clients if c.tokens_per_minute or c.tokens_per_day})


def llm_request_costs(clients: Sequence[GatewayClient]) -> list[dict[str, str]]:
    """The AIGatewayRoute's `llmRequestCosts`: the token counts the clients' budgets spend."""
    return [{"metadataKey": TOKEN_METADATA[k], "type": TOKEN_COST_TYPE[k]} for k in token_kinds(clients)]
