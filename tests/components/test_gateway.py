"""The inference gateway as the real __main__.py registers it for a fixture stack (tests/fixtures/stacks/Pulumi.gateway.yaml):
install order, the NLB, routing by `model` field and path, keys and rate limits, the bounded queue, failure
behaviour, NetworkPolicies, precise prefix routing, and the shared schema check of the whole render."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform import Gateway, GatewayArgs, testing
from llm_platform.components.specs import gateway as gw
from llm_platform.components.specs import gateway_monitoring as monitoring
from llm_platform.components.specs import inference_pool as pool
from llm_platform.config.loader import PROJECT, SECRET_KEYS, ConfigError, parse
from llm_platform.config.schema import GatewayClient
from llm_platform.plan import resolve
from llm_platform.plan.naming import AI_GATEWAY_NAMESPACE, GATEWAY_NAMESPACE
from llm_platform.tools import mocks as platform_mocks
from llm_platform.tools import render
from tests.components import promtool
from tests.shared_check import SHARED_CHECK, check_render

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "Pulumi.gateway.yaml"
VLLM_KEY = "fixture-vllm-key-0123456789"
CLIENT_KEYS = {"web": "web-key-0123456789abcdef", "batch": "batch-key-0123456789abcdef"}
RELEASE = "kubernetes:helm.sh/v3:Release"


def fixture_values() -> dict[str, Any]:
    raw = yaml.safe_load(FIXTURE.read_text())["config"]
    return copy.deepcopy({k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{PROJECT}:")})


class Run:
    def __init__(self, m: platform_mocks.PlatformMocks) -> None:
        self.mocks = m
        self.manifests = [render._manifest(r) for r in m.created if render._is_manifest(r.typ)]
        self.helm = {r.inputs.get("name", r.name): render._helm(r) for r in m.by_type(RELEASE)}

    def objects(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.manifests if o["kind"] == kind]

    def one(self, kind: str, name: str) -> dict[str, Any]:
        return next(o for o in self.objects(kind) if o["metadata"]["name"] == name)


def evaluate() -> Run:
    """Run __main__.py under mocks with the fixture's config and its secrets."""
    raw = yaml.safe_load(FIXTURE.read_text())["config"]
    config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    for key in SECRET_KEYS:
        config[f"{PROJECT}:{key}"] = "render-only-secret"
    config[f"{PROJECT}:apiKey"] = VLLM_KEY
    config[f"{PROJECT}:gatewayClientKeys"] = json.dumps(CLIENT_KEYS)
    m, loop = platform_mocks.install("gateway-fixture", config, [f"{PROJECT}:{k}" for k in SECRET_KEYS])
    try:
        platform_mocks.run_main()
    finally:
        platform_mocks.uninstall(loop)
    return Run(m)


@pytest.fixture(scope="module")
def run() -> Run:
    return evaluate()


def models() -> list[dict[str, Any]]:
    return fixture_values()["models"]


# ------------------------------------------------------------------------------------------ install order


def test_crds_controllers_and_gateway_objects_install_in_order(run: Run) -> None:
    m = run.mocks
    eg = m.named("llm-gw-fixture-gateway-envoy-gateway", RELEASE)
    assert eg.depends_on(RELEASE, "llm-gw-fixture-gateway-gateway-crds")
    assert eg.depends_on("kubernetes:yaml/v2:ConfigFile", "llm-gw-fixture-gateway-inferencepool-crd")
    aigw = m.named("llm-gw-fixture-gateway-ai-gateway", RELEASE)
    assert aigw.depends_on(RELEASE, "llm-gw-fixture-gateway-ai-gateway-crds")
    assert aigw.depends_on(RELEASE, "llm-gw-fixture-gateway-envoy-gateway")
    proxy = m.named("llm-gw-fixture-gateway-envoy-proxy")
    assert proxy.depends_on(RELEASE, "llm-gw-fixture-gateway-ai-gateway")
    for model in ("chat-7b", "code-1b"):
        picker = m.named(f"llm-gw-fixture-gateway-{model}-pool", RELEASE)
        # the model's vLLM Deployment exists first (a dependency on a component is one on its children)
        assert picker.depends_on("kubernetes:apps/v1:Deployment", f"llm-gw-fixture-{model}-deployment")
        assert picker.depends_on("kubernetes:yaml/v2:ConfigFile")
        route = m.named(f"llm-gw-fixture-gateway-{model}-route-by-model")
        # AI Gateway creates its own host-rewrite filter when it finds none: ours must exist first
        assert route.depends_on(
            "kubernetes:gateway.envoyproxy.io/v1alpha1:HTTPRouteFilter",
            f"llm-gw-fixture-gateway-{model}-model-filter",
        )


def test_pinned_versions_and_aigw_extension_wiring(run: Run) -> None:
    assert run.helm["gateway-crds"]["values"] == {
        "crds": {"envoyGateway": {"enabled": True}, "gatewayAPI": {"channel": "standard", "enabled": True}}
    }
    assert {
        r["chart"]: r["version"]
        for r in run.helm.values()
        if "gateway" in r["chart"] or "llm-d" in r["chart"]
    } == {
        "gateway-crds-helm": "v1.8.3",
        "gateway-helm": "v1.8.3",
        "ai-gateway-crds-helm": "v1.1.0",
        "ai-gateway-helm": "v1.1.0",
        "llm-d-router-gateway": "v0.10.0",
    }
    manager = run.helm["envoy-gateway"]["values"]["config"]["envoyGateway"]["extensionManager"]
    assert manager["backendResources"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
    ]
    assert manager["service"]["fqdn"] == {
        "hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local",
        "port": 1063,
    }
    assert run.helm["envoy-gateway"]["values"]["crds"] == {"enabled": False}
    assert run.helm["ai-gateway"]["values"]["envoyGateway"]["namespace"] == GATEWAY_NAMESPACE


# ------------------------------------------------------------------------------------------- the NLB


def test_one_gateway_behind_an_internal_nlb_with_tls_from_acm(run: Run) -> None:
    assert (
        len(run.objects("EnvoyProxy")) == len(run.objects("GatewayClass")) == len(run.objects("Gateway")) == 1
    )
    cert = fixture_values()["gateway"]["certificateArn"]
    service = run.one("EnvoyProxy", gw.ENVOY_PROXY)["spec"]["provider"]["kubernetes"]["envoyService"]
    annotations = service["annotations"]
    assert service["loadBalancerClass"] == "service.k8s.aws/nlb"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == cert
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "443"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-healthcheck-port"] == "19003"
    listener = run.one("Gateway", gw.GATEWAY)["spec"]["listeners"][0]
    assert (listener["protocol"], listener["port"]) == ("HTTP", 443)  # TLS ends at the NLB
    assert run.one("GatewayClass", gw.GATEWAY_CLASS)["spec"]["parametersRef"]["name"] == gw.ENVOY_PROXY


def test_without_a_certificate_the_listener_is_plain_http_on_80() -> None:
    values = fixture_values()
    del values["gateway"]["certificateArn"]
    run = Run(
        testing.evaluate(
            lambda: Gateway(
                "gateway",
                GatewayArgs(
                    environment=values["environment"],
                    gateway=values["gateway"],
                    models=values["models"],
                    gpu_node_pools=values["gpuNodePools"],
                    client_keys=CLIENT_KEYS,
                    vllm_api_key=VLLM_KEY,
                    vpc_cidr=values["cluster"]["vpcCidr"],
                ),
            )
        )
    )
    service = run.one("EnvoyProxy", gw.ENVOY_PROXY)["spec"]["provider"]["kubernetes"]["envoyService"]
    assert not any("ssl" in a for a in service["annotations"])
    assert run.one("Gateway", gw.GATEWAY)["spec"]["listeners"][0]["port"] == 80
    policy = run.one("NetworkPolicy", "envoy-proxy-ingress")
    assert {p["port"] for p in policy["spec"]["ingress"][0]["ports"]} == {10080, 19003}


def test_proxies_are_spread_over_nodes_and_zones_with_a_pdb(run: Run) -> None:
    kube = run.one("EnvoyProxy", gw.ENVOY_PROXY)["spec"]["provider"]["kubernetes"]
    assert kube["envoyDeployment"]["replicas"] == 3
    keys = {c["topologyKey"] for c in kube["envoyDeployment"]["pod"]["topologySpreadConstraints"]}
    assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    assert kube["envoyPDB"] == {"maxUnavailable": 1}


# --------------------------------------------------------------------------------- pools and pickers


def test_each_pool_selects_exactly_its_vllm_pods_on_their_port(run: Run) -> None:
    for model in models():
        name = model["name"]
        vllm = run.one("Deployment", name)
        servers = run.helm[name]["values"]["router"]["modelServers"]
        template_labels = vllm["spec"]["template"]["metadata"]["labels"]
        assert servers["matchLabels"].items() <= template_labels.items()
        assert servers["matchLabels"] == vllm["spec"]["selector"]["matchLabels"]
        port = vllm["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
        assert servers["targetPorts"] == [{"number": port}]
        assert run.helm[name]["namespace"] == vllm["metadata"]["namespace"]  # a pool selects in its namespace


def test_pickers_score_queue_kv_and_prefix_sized_for_the_platform(run: Run) -> None:
    for model in models():
        epp = run.helm[model["name"]]["values"]["router"]["epp"]
        config = yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
        weights = {p["pluginRef"]: p["weight"] for p in config["schedulingProfiles"][0]["plugins"]}
        assert weights == {"queue-scorer": 2, "kv-cache-utilization-scorer": 2, "prefix-cache-scorer": 3}
        assert epp["replicas"] >= 2
        assert epp["resources"]["requests"] != {"cpu": "8", "memory": "8Gi"}  # not the chart's default
        assert (
            epp["tolerations"]
            and epp["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        )
        pdb = run.one("PodDisruptionBudget", f"{model['name']}-epp")
        assert pdb["spec"] == {
            "maxUnavailable": 1,
            "selector": {"matchLabels": {"llm-d-router-gateway": f"{model['name']}-epp"}},
        }


def test_picker_metrics_are_scraped_as_often_as_vllm(run: Run) -> None:
    """The arrival-rate trigger rates the pickers' counters over THROUGHPUT_WINDOW: the chart's ServiceMonitor
    (routerlib `_servicemonitor.yaml`, `router.monitoring.interval`, 10s by default) must scrape at vLLM's
    interval so that window holds four samples, as the simulator assumes."""
    from llm_platform.plan.model import SCRAPE_INTERVAL_SECONDS
    from llm_platform.plan.promql import THROUGHPUT_WINDOW_SECONDS

    assert THROUGHPUT_WINDOW_SECONDS >= 4 * SCRAPE_INTERVAL_SECONDS
    for model in models():
        assert run.helm[model["name"]]["values"]["router"]["monitoring"] == {
            "interval": f"{SCRAPE_INTERVAL_SECONDS}s",
            "prometheus": {"enabled": True},
        }


@pytest.mark.parametrize("max_pending", [1, 8, 33])
def test_queue_is_bounded_and_sheds_past_it(max_pending: int) -> None:
    values = fixture_values()
    values["gateway"]["maxPendingPerReplica"] = max_pending
    model = resolve(parse(values)).models[0]
    config = pool.endpoint_picker_config(model)
    assert "flowControl" in config["featureGates"]
    per_picker = int(config["flowControl"]["maxRequests"])
    # the pickers together hold at least what the stack allows, and less than one extra request each
    total = max_pending * model.model.autoscaling.max_replicas
    assert total <= per_picker * pool.EPP_REPLICAS < total + pool.EPP_REPLICAS
    # a request is held no longer than the model's TTFT objective: past it, it has missed it anyway
    ttl = config["flowControl"]["defaultRequestTTL"]
    seconds = float(ttl.removesuffix("ms")) / 1000 if ttl.endswith("ms") else float(ttl.removesuffix("s"))
    assert seconds == model.model.slo.ttft_seconds
    detector = next(p for p in config["plugins"] if p["type"] == "utilization-detector")
    # vLLM's queue may grow past the autoscaler's target before the gateway holds requests, so KEDA scales
    assert (
        detector["parameters"]["queueDepthThreshold"] >= 2 * model.model.autoscaling.queue_depth_per_replica
    )
    assert detector["parameters"]["kvCacheUtilThreshold"] > model.model.autoscaling.kv_cache_usage


# ------------------------------------------------------------------------------------------- routing


def test_routes_by_model_field_and_by_path_to_the_models_pool(run: Run) -> None:
    for model in models():
        name, ns = model["name"], f"model-{model['name']}"
        by_model = run.one("AIGatewayRoute", name)["spec"]["rules"][0]
        assert by_model["matches"][0]["headers"] == [
            {"name": "x-ai-eg-model", "type": "Exact", "value": name}
        ]
        assert by_model["backendRefs"] == [
            {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": name}
        ]
        by_path = run.one("HTTPRoute", f"{name}-by-path")["spec"]["rules"][0]
        assert by_path["matches"][0]["path"] == {"type": "PathPrefix", "value": f"/{name}/v1"}
        assert by_path["filters"][0]["urlRewrite"]["path"]["replacePrefixMatch"] == "/v1"
        assert by_path["backendRefs"] == by_model["backendRefs"]
        for route in (run.one("AIGatewayRoute", name), run.one("HTTPRoute", f"{name}-by-path")):
            assert route["metadata"]["namespace"] == ns
            assert route["spec"]["parentRefs"][0]["name"] == gw.GATEWAY
        attach = run.one("Gateway", gw.GATEWAY)["spec"]["listeners"][0]["allowedRoutes"]["namespaces"]
        assert ns in attach["selector"]["matchExpressions"][0]["values"]


def test_vllm_key_is_injected_upstream_on_both_routes(run: Run) -> None:
    for model in models():
        name = model["name"]
        path_filter = run.one("HTTPRouteFilter", f"{name}-vllm-key")["spec"]["credentialInjection"]
        # the filter AI Gateway references from the HTTPRoute it generates for the AIGatewayRoute `name`
        model_filter = run.one("HTTPRouteFilter", f"ai-eg-host-rewrite-{name}")["spec"]
        assert model_filter["urlRewrite"] == {"hostname": {"type": "Backend"}}
        for injection in (path_filter, model_filter["credentialInjection"]):
            assert injection["overwrite"] is True
            assert injection["credential"]["valueRef"]["name"] == pool.CREDENTIAL_SECRET
        secret = next(
            s
            for s in run.objects("Secret")
            if s["metadata"]["name"] == pool.CREDENTIAL_SECRET
            and s["metadata"]["namespace"] == f"model-{name}"
        )
        assert secret["stringData"] == {"credential": "[secret]"}


def test_the_injected_credential_is_the_bearer_vllm_key(run: Run) -> None:
    secret = next(r for r in run.mocks.created if r.name.endswith("chat-7b-vllm-credential"))
    assert platform_mocks.plain(secret.inputs, mask="<m>")["stringData"] == {"credential": "<m>"}
    assert pool.bearer(VLLM_KEY) == f"Bearer {VLLM_KEY}"


# ------------------------------------------------------------------------------ keys and rate limits


def test_api_keys_authenticate_and_set_an_unspoofable_client_header(run: Run) -> None:
    auth = run.one("SecurityPolicy", gw.GATEWAY)["spec"]["apiKeyAuth"]
    assert auth["extractFrom"] == [{"headers": ["Authorization"]}]
    assert auth["forwardClientIDHeader"] == gw.CLIENT_HEADER and auth["sanitize"] is True
    assert auth["credentialRefs"][0]["name"] == gw.CLIENT_KEYS_SECRET
    early = run.one("ClientTrafficPolicy", gw.GATEWAY)["spec"]["headers"]["earlyRequestHeaders"]
    assert gw.CLIENT_HEADER in early["remove"]  # a client's own copy is gone before any filter runs
    assert "x-gateway-destination-endpoint" in early["remove"]  # nor can it pick a pod


@pytest.mark.parametrize("replicas", [1, 2, 3, 7])
def test_rate_limits_divide_each_clients_limit_over_the_envoy_replicas(replicas: int) -> None:
    clients = [
        GatewayClient(name="web", requests_per_minute=600),
        GatewayClient(name="batch", requests_per_minute=100),
    ]
    rules = gw.rate_limit_policy(clients, replicas)["spec"]["rateLimit"]["local"]["rules"]
    for client, rule in zip(clients, rules, strict=True):
        assert rule["clientSelectors"] == [
            {"headers": [{"name": gw.CLIENT_HEADER, "type": "Exact", "value": client.name}]}
        ]
        per_replica = rule["limit"]["requests"]
        assert rule["limit"]["unit"] == "Minute"
        # the replicas together allow the configured limit, never less, and at most one extra per replica
        assert client.requests_per_minute <= per_replica * replicas < client.requests_per_minute + replicas


def test_rate_limit_policy_covers_every_configured_client(run: Run) -> None:
    rules = run.one("BackendTrafficPolicy", gw.GATEWAY)["spec"]["rateLimit"]["local"]["rules"]
    assert [r["limit"]["requests"] for r in rules] == [math.ceil(600 / 3), math.ceil(100 / 3)]


def test_keys_never_appear_in_the_render(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "render"
    render.write(_render(run), out)
    text = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    for secret in [VLLM_KEY, *CLIENT_KEYS.values()]:
        assert secret not in text
    keys = run.one("Secret", gw.CLIENT_KEYS_SECRET)
    assert keys["stringData"] == "[secret]" or set(keys["stringData"].values()) == {"[secret]"}


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"web": "web-key-0123456789abcdef"}, "no key for client"),
        ({**CLIENT_KEYS, "ghost": "ghost-key-0123456789"}, "unknown client"),
        ({"web": "short", "batch": "batch-key-0123456789abcdef"}, r"gatewayClientKeys\[web\]"),
        ({"web": "same-key-0123456789abc", "batch": "same-key-0123456789abc"}, "share a key"),
    ],
)
def test_bad_client_keys_are_refused_without_echoing_them(keys: dict[str, str], message: str) -> None:
    clients = [
        GatewayClient(name="web", requests_per_minute=600),
        GatewayClient(name="batch", requests_per_minute=100),
    ]
    with pytest.raises(ValueError, match=message) as err:
        gw.check_clients(clients, keys, VLLM_KEY)
    assert not any(k in str(err.value) for k in keys.values())


# ---------------------------------------------------------------------------------- failure behaviour


def test_a_pool_states_what_happens_when_its_pickers_are_down(run: Run) -> None:
    for model in models():
        assert run.helm[model["name"]]["values"]["router"]["inferencePool"]["failureMode"] == "FailClose"
        rule = run.one("PrometheusRule", f"{model['name']}-endpoint-picker")
        alerts = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
        assert alerts["InferenceGatewayPickerDown"]["labels"]["severity"] == "critical"
        assert {
            "InferenceGatewayPickerDegraded",
            "InferencePoolNoReadyEndpoints",
            "InferenceGatewaySchedulingErrors",
            "InferenceGatewayShedding",
        } <= alerts.keys()


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    return {"series": name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "values": values}


def test_picker_alerts_fire_on_bad_series_and_stay_silent_otherwise(tmp_path: Path) -> None:
    model = resolve(parse(fixture_values())).models[0]
    ns, epp = "model-chat-7b", "chat-7b-epp"
    rule = monitoring.epp_prometheus_rule(model)["spec"]
    labels = {"namespace": ns, "inference_pool": "chat-7b"}
    by_name = {r["alert"]: r for r in rule["groups"][0]["rules"]}

    def fires(alert: str, at: str, value: str) -> dict[str, Any]:
        """The alert with its labels and annotations as Prometheus renders them ({{ $value }} -> value)."""
        annotations = {
            k: v.replace(monitoring.VALUE, value) for k, v in by_name[alert]["annotations"].items()
        }
        severity = by_name[alert]["labels"]["severity"]
        return {
            "alertname": alert,
            "eval_time": at,
            "exp_alerts": [{"exp_labels": {"severity": severity, **labels}, "exp_annotations": annotations}],
        }

    down = fires("InferenceGatewayPickerDown", "10m", "0")
    degraded = fires("InferenceGatewayPickerDegraded", "20m", "1")
    shed = fires("InferenceGatewayShedding", "20m", "166.7m")
    silent = [{**a, "exp_alerts": []} for a in (down, degraded, shed)]
    kube = "kube_deployment_status_replicas_available"
    flow = "llm_d_epp_flow_control_requests_total"
    flow_labels = {"namespace": ns, "inference_pool": "chat-7b", "priority": "0"}
    tests = [
        {
            "interval": "1m",
            "input_series": [_series(kube, {"namespace": ns, "deployment": epp}, "0x30")],
            "alert_rule_test": [down],
        },
        {
            "interval": "1m",
            "input_series": [_series(kube, {"namespace": ns, "deployment": epp}, "1x30")],
            "alert_rule_test": [degraded],
        },
        {
            "interval": "1m",
            "input_series": [
                _series(kube, {"namespace": ns, "deployment": epp}, "2x30"),
                _series(flow, {**flow_labels, "outcome": "EvictedTTL"}, "0+10x30"),
                _series(flow, {**flow_labels, "outcome": "Dispatched"}, "0+100x30"),
            ],
            "alert_rule_test": [shed, *silent[:2]],
        },
        {
            "interval": "1m",
            "input_series": [
                # another model's picker down, and this one healthy: nothing fires for chat-7b
                _series(kube, {"namespace": "model-other", "deployment": "other-epp"}, "0x30"),
                _series(kube, {"namespace": ns, "deployment": epp}, "2x30"),
                _series(flow, {**flow_labels, "outcome": "Dispatched"}, "0+100x30"),
            ],
            "alert_rule_test": silent,
        },
    ]
    promtool.unit_test_rules(rule, tests, tmp_path)


def test_picker_dashboard_queries_parse(tmp_path: Path) -> None:
    board = monitoring.epp_dashboard()
    exprs = [promtool.substitute_grafana_variables(e) for e in render_dashboard_exprs(board)]
    promtool.check_expressions(exprs, tmp_path)


def render_dashboard_exprs(board: dict[str, Any]) -> list[str]:
    return promtool.dashboard_expressions(board)


# ------------------------------------------------------------------------------------- network policies


def test_network_policies_chain_gateway_to_picker_to_vllm(run: Run) -> None:
    for model in models():
        name, ns = model["name"], f"model-{model['name']}"
        epp = next(p for p in run.objects("NetworkPolicy") if p["metadata"]["name"] == f"{name}-epp-ingress")
        ingress = {r["ports"][0]["port"]: r["from"][0] for r in epp["spec"]["ingress"]}
        assert ingress[pool.EXT_PROC_PORT]["namespaceSelector"]["matchLabels"] == {
            "kubernetes.io/metadata.name": GATEWAY_NAMESPACE
        }
        assert ingress[pool.EXT_PROC_PORT]["podSelector"]["matchLabels"] == {
            "app.kubernetes.io/name": "envoy",
            "app.kubernetes.io/component": "proxy",
            "app.kubernetes.io/managed-by": "envoy-gateway",
            "gateway.envoyproxy.io/owning-gateway-name": gw.GATEWAY,
        }
        assert ingress[pool.METRICS_PORT]["namespaceSelector"]["matchLabels"] == {
            "kubernetes.io/metadata.name": "monitoring"
        }
        to_vllm = run.one("NetworkPolicy", f"{name}-from-epp")["spec"]
        vllm = run.one("Deployment", name)
        assert to_vllm["podSelector"]["matchLabels"] == vllm["spec"]["selector"]["matchLabels"]
        assert to_vllm["ingress"][0]["from"] == [
            {"podSelector": {"matchLabels": {"llm-d-router-gateway": f"{name}-epp"}}}
        ]
        assert epp["metadata"]["namespace"] == ns
        # the serving policy admits the Envoy proxies, the same peer as the picker's ext_proc port
        serving = run.one("NetworkPolicy", f"{name}-ingress")["spec"]["ingress"][0]["from"]
        assert ingress[pool.EXT_PROC_PORT] in serving
        # nothing else reaches the picker: kubelet's gRPC health probes come from the node, always allowed
        assert set(ingress) == {pool.EXT_PROC_PORT, pool.METRICS_PORT}
        assert not [p for r in epp["spec"]["ingress"] for p in r["from"] if "ipBlock" in p]


# ------------------------------------------------------------------- the AI Gateway webhook's certificate

TLS = "tls:index/"


def test_the_ai_gateway_webhook_serves_this_clusters_own_certificate(run: Run, tmp_path: Path) -> None:
    """Not a key pair Helm generated once and never renews: the Secret the chart reads (its lookup of
    `controller.mutatingWebhook.tlsCertSecretName`, ai-gateway-helm v1.1.0 admission_webhook.yaml) holds a
    CA and a leaf of this stack, with the chart's default key names, and exists before the release."""
    m = run.mocks
    values = run.helm["ai-gateway"]["values"]["controller"]["mutatingWebhook"]
    assert values == {"tlsCertSecretName": gw.WEBHOOK_CERT_SECRET}
    secret = run.one("Secret", gw.WEBHOOK_CERT_SECRET)
    assert secret["metadata"]["namespace"] == AI_GATEWAY_NAMESPACE and secret["type"] == "Opaque"
    assert secret["stringData"] == {"ca.crt": "[secret]", "tls.crt": "[secret]", "tls.key": "[secret]"}
    # Helm adopts an object only with its release's ownership metadata (else the install fails)
    assert secret["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    annotations = secret["metadata"]["annotations"]
    assert annotations["meta.helm.sh/release-name"] == release_name(m, "llm-gw-fixture-gateway-ai-gateway")
    assert annotations["meta.helm.sh/release-namespace"] == run.helm["ai-gateway"]["namespace"]
    release = m.named("llm-gw-fixture-gateway-ai-gateway", RELEASE)
    assert release.depends_on("kubernetes:core/v1:Secret", "llm-gw-fixture-gateway-ai-gateway-webhook-tls")

    (ca,) = m.by_type(f"{TLS}selfSignedCert:SelfSignedCert")
    assert ca.inputs["isCaCertificate"] is True and "cert_signing" in ca.inputs["allowedUses"]
    (leaf,) = m.by_type(f"{TLS}locallySignedCert:LocallySignedCert")
    assert "server_auth" in leaf.inputs["allowedUses"]
    assert leaf.inputs["earlyRenewalHours"] < leaf.inputs["validityPeriodHours"]
    assert leaf.depends_on(f"{TLS}selfSignedCert:SelfSignedCert")
    (csr,) = m.by_type(f"{TLS}certRequest:CertRequest")
    # the names the API server dials the webhook Service by (the chart's own list)
    svc = "ai-gateway-controller.envoy-ai-gateway-system"
    assert csr.inputs["dnsNames"] == ["ai-gateway-controller", svc, f"{svc}.svc", f"{svc}.svc.cluster.local"]

    # no private key reaches the render: the mocks' PEMs are labelled, the real ones are Pulumi secrets
    out = tmp_path / "render"
    render.write(_render(run), out)
    text = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "PRIVATE KEY" not in text
    assert render._resource(leaf)["inputs"]["caPrivateKeyPem"] == "[secret]"


def release_name(m: platform_mocks.PlatformMocks, resource: str) -> str:
    return m.named(resource, RELEASE).inputs["name"]


# ------------------------------------------------------------------------------ precise prefix routing


def test_precise_prefix_routing_is_a_per_model_switch_off_by_default(run: Run) -> None:
    off, on = run.helm["chat-7b"]["values"]["router"], run.helm["code-1b"]["values"]["router"]
    assert "tokenizer" not in off
    assert on["tokenizer"]["enabled"] is True and on["tokenizer"]["modelName"] == "Qwen/Qwen2.5-1.5B-Instruct"
    config = yaml.safe_load(on["epp"]["pluginsCustomConfig"][pool.PLUGINS_FILE])
    producer = next(p for p in config["plugins"] if p["type"] == "precise-prefix-cache-producer")
    assert producer["parameters"]["kvEventsConfig"]["podDiscoveryConfig"]["socketPort"] == 5557
    scorer = next(p for p in config["plugins"] if p["type"] == "prefix-cache-scorer")
    assert scorer["parameters"]["prefixMatchInfoProducerName"] == "precise-prefix-cache-producer"

    def vllm(name: str) -> dict[str, Any]:
        return run.one("Deployment", name)["spec"]["template"]["spec"]["containers"][0]

    assert "--kv-events-config" not in vllm("chat-7b")["args"]
    args = vllm("code-1b")["args"]
    events = json.loads(args[args.index("--kv-events-config") + 1])
    assert events["publisher"] == "zmq" and events["endpoint"] == "tcp://*:5557"
    assert events["topic"] == "kv@$(POD_IP):$(POD_PORT)@code-1b"
    assert {"name": "kv-events", "containerPort": 5557, "protocol": "TCP"} in vllm("code-1b")["ports"]
    assert "POD_IP" in {e["name"] for e in vllm("code-1b")["env"]}
    ports = {p["port"] for p in run.one("NetworkPolicy", "code-1b-from-epp")["spec"]["ingress"][0]["ports"]}
    assert ports == {8000, 5557}


# ------------------------------------------------------------------------------------------------ config


def test_a_removed_gateway_key_says_what_replaced_it() -> None:
    values = fixture_values()
    values["gateway"]["maxInflightPerReplica"] = 64
    with pytest.raises(
        ConfigError, match=r"gateway.maxInflightPerReplica: 64 is no longer a setting.*maxPendingPerReplica"
    ):
        parse(values)


def test_an_unbounded_gateway_queue_is_refused() -> None:
    values = fixture_values()
    values["gateway"]["maxPendingPerReplica"] = 0
    with pytest.raises(ConfigError, match="maxPendingPerReplica"):
        parse(values)


# -------------------------------------------------------------------------------- the whole render


def _render(run: Run) -> render.Render:
    m = run.mocks
    return render.Render(
        resources=sorted((render._resource(r) for r in m.created), key=lambda r: (r["type"], r["name"])),
        manifests=sorted(run.manifests, key=render._manifest_order),
        helm=run.helm,
        mocks=m,
        seconds=0.0,
    )


@pytest.mark.skipif(not SHARED_CHECK.exists(), reason="../shared/tools/check_render.py not present")
def test_the_fixture_render_passes_the_shared_schema_check(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "render"
    render.write(_render(run), out)
    proc = check_render(out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
