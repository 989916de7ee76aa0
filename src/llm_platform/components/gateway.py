"""Gateway: the platform's entry point, Envoy Gateway + Envoy AI Gateway on Gateway API behind an internal NLB,
with an InferencePool and an endpoint picker per model (components.specs.gateway, .inference_pool)."""

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

from llm_platform.components import child_options, typed_options
from llm_platform.components.certificates import server_certificate
from llm_platform.components.gateway_routes import RouteWriter
from llm_platform.components.specs import gateway as spec
from llm_platform.components.specs import gateway_monitoring as monitoring
from llm_platform.components.specs import inference_pool as pool
from llm_platform.components.specs import quota, zero
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.components.specs.dashboards import dashboard_configmap
from llm_platform.config.errors import ConfigError
from llm_platform.config.schema import GatewayConfig, QuotaStoreConfig
from llm_platform.config.stack_args import (
    EnvironmentValue,
    GatewaySettings,
    GpuNodePoolSettings,
    ModelCacheSettings,
    ModelSettings,
)
from llm_platform.facts.addons import AI_GATEWAY, ENVOY_GATEWAY
from llm_platform.facts.versions import (
    INFERENCE_POOL_CRD_URL,
)
from llm_platform.plan import ModelPlan, Plan
from llm_platform.plan.naming import AI_GATEWAY_NAMESPACE, GATEWAY_NAMESPACE
from llm_platform.plan.stack import resolve_serving, serving_config


class GatewayArgs(TypedDict):
    """The gateway as the stack file's `gateway` block says, in front of the stack's models (the stack
    file's blocks, camelCase keys, checked by the stack's rules), and the keys."""

    environment: EnvironmentValue
    """dev, staging or prod."""
    gateway: GatewaySettings
    """The stack file's `gateway`: its clients and rate limits, internal or public, certificate, replicas."""
    models: list[ModelSettings]
    """The stack file's `models`: an InferencePool, an endpoint picker and routes for each."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The stack file's `gpuNodePools` the models run on."""
    model_cache: NotRequired[ModelCacheSettings]
    """The stack file's `modelCache` (the fsx cache needs its `fsx` block)."""
    client_keys: pulumi.Input[dict[str, str]]
    """Client name -> API key (a Pulumi secret, the `gatewayClientKeys` JSON object)."""
    vllm_api_key: pulumi.Input[str]
    """The key vLLM checks; the gateway injects it upstream, clients never see it."""
    vpc_cidr: str
    """Where the NLB's connections and kubelet's probes come from."""
    storage_class: NotRequired[str]
    """The StorageClass of the quota store's volume (`gateway.quotaStore`); the cluster's default if unset."""
    route_namespaces: NotRequired[list[str]]
    """Other teams' model namespaces whose routes the Gateway admits beside its own models' (their
    `GatewayRoutes`' `namespaces`, `<prefix>-model-<name>`). Default: none, its own models' only."""


class Gateway(RouteWriter):
    """CRDs (Gateway API, Envoy Gateway, InferencePool, AI Gateway), the two controllers, the EnvoyProxy,
    GatewayClass and Gateway, client keys, rate limits, and per model an InferencePool with its picker.

    Installed once per cluster; other teams' models join it through `GatewayRoutes` (their namespaces in
    `route_namespaces`). Prerequisites: the models' InferenceServices (their namespaces `model-<name>`; pass
    them as `models_ready`), the Prometheus Operator's CRDs (PodMonitor, PrometheusRule), the AWS Load
    Balancer Controller for the NLB.
    Its pods run on the add-on nodes (a cluster prerequisite): nodes labelled `llm-platform/node-role: addons` and
    tainted `llm-platform/addons: true` (NoSchedule), which LlmPlatform's AddonNodePool makes; on a cluster you
    run, label and taint a node group so."""

    namespace: str

    def __init__(
        self,
        name: str,
        args: GatewayArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        models_ready: Sequence[pulumi.Resource] = (),
        plan: Plan | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`models_ready`: the models' InferenceServices (Python only): their namespaces and pods exist
        before each model's pool and routes; the controllers and CRDs do not wait for them. `plan`: the
        stack's plan, already resolved from these args (`LlmPlatform` passes its own; the gateway reads its
        `gateway` and `models`); without it the args are validated and resolved here. `versions`: chart
        versions by add-on name (`llm_platform.facts.addons`: envoy-gateway, ai-gateway, llm-d-router) in place
        of the pinned ones (`LlmPlatform` passes its `addon_versions`)."""
        # bad input stops before any resource
        if plan is not None:
            gateway, models = plan.gateway, plan.models
        else:
            config = serving_config(args)
            gateway = config.gateway
            models, _ = resolve_serving(config, has_bucket=True)  # the pickers read no cache fact
        if not gateway.enabled:
            raise ConfigError("gateway.enabled: false; the Gateway component needs `enabled: true`")
        super().__init__(
            "llm-platform:index:Gateway", name, None, typed_options(opts, "llm-platform:gateway:Gateway")
        )
        self._name, self._opts, self._models_ready = name, opts, list(models_ready)
        self._addon_versions = versions
        self.namespace = GATEWAY_NAMESPACE
        if gateway.replicas < 2:
            pulumi.log.warn(
                f"{name}: {gateway.replicas} Envoy replica(s): one node loss stops all traffic", self
            )

        ns, pool_crd, controllers = self._controllers(args, gateway)
        gateway_resource = self._front(args, gateway, models, ns, controllers)

        credential = pulumi.Output.secret(pulumi.Output.from_input(args["vllm_api_key"]).apply(pool.bearer))
        self._costs = quota.llm_request_costs(gateway.clients) if gateway.quota_store else []
        self._clients = gateway.clients
        self._monitor_labels = None
        for model in models:
            self._model(model, credential, gateway_resource, pool_crd, *controllers)
        at_zero = [m for m in models if zero.at_zero(m)]
        if at_zero:  # the Grafana sidecar loads dashboards from every namespace
            board = monitoring.zero_dashboard(at_zero)
            self._apply(
                "scale-to-zero-dashboard", dashboard_configmap(zero.DASHBOARD, GATEWAY_NAMESPACE, board), ns
            )
        self.register_outputs({"namespace": self.namespace, "gateway": spec.GATEWAY})

    def _controllers(
        self, args: GatewayArgs, gateway: GatewayConfig
    ) -> tuple[pulumi.Resource, pulumi.Resource, list[pulumi.Resource]]:
        """The gateway namespace, then the CRDs (Gateway API and Envoy Gateway's, InferencePool, AI
        Gateway's) and the two controllers in install order (module doc of components.specs.gateway).
        Returns the namespace, the InferencePool CRD and the controllers."""
        ns = self._apply("ns", spec.namespace(args["environment"]))
        aigw_ns = self._apply("ai-gateway-ns", namespace_manifest(AI_GATEWAY_NAMESPACE, "restricted"))
        crds = self._release(
            "gateway-crds",
            "gateway-crds-helm",
            self._chart_version(ENVOY_GATEWAY, 0),
            spec.gateway_crds_values(),
            ns,
        )
        pool_crd = k8s.yaml.v2.ConfigFile(
            f"{self._name}-inferencepool-crd",
            file=INFERENCE_POOL_CRD_URL,
            opts=child_options(self, self._opts, crds),
        )
        envoy_gateway = self._release(
            "envoy-gateway",
            "gateway-helm",
            self._chart_version(ENVOY_GATEWAY),
            spec.envoy_gateway_values(gateway.quota_store),
            crds,
            pool_crd,
            *self._quota_store(gateway.quota_store, args.get("storage_class"), ns),
        )
        aigw_crds = self._release(
            "ai-gateway-crds",
            "ai-gateway-crds-helm",
            self._chart_version(AI_GATEWAY, 0),
            {},
            aigw_ns,
            crds,
            namespace=AI_GATEWAY_NAMESPACE,
        )
        webhook_cert = self._apply(
            "ai-gateway-webhook-tls", spec.webhook_cert_secret(self._webhook_certificate()), aigw_ns
        )
        ai_gateway = self._release(
            spec.AI_GATEWAY_RELEASE,
            "ai-gateway-helm",
            self._chart_version(AI_GATEWAY),
            spec.ai_gateway_values(),
            aigw_crds,
            envoy_gateway,
            pool_crd,
            webhook_cert,
            namespace=AI_GATEWAY_NAMESPACE,
        )
        controllers: list[pulumi.Resource] = [envoy_gateway, ai_gateway]
        return ns, pool_crd, controllers

    def _front(
        self,
        args: GatewayArgs,
        gateway: GatewayConfig,
        models: Sequence[ModelPlan],
        ns: pulumi.Resource,
        controllers: Sequence[pulumi.Resource],
    ) -> pulumi.Resource:
        """What clients meet, once the controllers run: their keys (checked against the clients), the
        EnvoyProxy, GatewayClass and Gateway (admitting the models' and `route_namespaces`' routes), and
        the Gateway's policies. Returns the Gateway."""

        def checked_keys(values: list[Any]) -> dict[str, str]:
            keys, vllm_key = values
            spec.check_clients(gateway.clients, dict(keys), vllm_key)
            return dict(keys)

        keys = pulumi.Output.secret(
            pulumi.Output.all(args["client_keys"], args["vllm_api_key"]).apply(checked_keys)
        )
        keys_secret = self._apply("client-keys", spec.client_keys_secret(keys), ns)
        proxy = self._apply(
            "envoy-proxy",
            spec.envoy_proxy(
                replicas=gateway.replicas, internal=gateway.internal, certificate_arn=gateway.certificate_arn
            ),
            *controllers,
        )
        gateway_class = self._apply("gateway-class", spec.gateway_class(), proxy)
        model_namespaces = [m.names.namespace for m in models]
        routed: list[str] = [*model_namespaces, *args.get("route_namespaces", [])]
        model_namespaces = list(dict.fromkeys(routed))
        gateway_resource = self._apply(
            "gateway",
            spec.gateway(certificate_arn=gateway.certificate_arn, model_namespaces=model_namespaces),
            gateway_class,
        )
        self._apply("client-traffic", spec.client_traffic_policy(models), gateway_resource)
        self._apply("api-keys", spec.security_policy(), gateway_resource, keys_secret)
        self._apply(
            "rate-limits",
            spec.rate_limit_policy(
                gateway.clients, gateway.replicas, global_limits=gateway.quota_store is not None
            ),
            gateway_resource,
        )
        self._apply("proxy-netpol", spec.proxy_network_policy(args["vpc_cidr"], gateway.certificate_arn), ns)
        self._apply("proxy-podmonitor", spec.proxy_pod_monitor(), ns)
        return gateway_resource

    def _quota_store(
        self, store: QuotaStoreConfig | None, storage_class: str | None, ns: pulumi.Resource
    ) -> list[pulumi.Resource]:
        """The global rate limit's Valkey (specs.quota), before Envoy Gateway starts the rate limit service
        that reads its Secrets. Its password: the SHA-256 (hex) of a pulumi-tls private key kept as a Pulumi
        secret, so it is random, stable across `pulumi up`s and never plaintext in state, renders or argv.
        Its TLS: a CA and a leaf for the Service's names (components/certificates.py), the rate limit
        service trusting that CA."""
        if store is None:
            return []
        opts = child_options(self, self._opts)
        key = tls.PrivateKey(f"{self._name}-quota-store-seed", algorithm="ED25519", opts=opts)

        def auth(pem: str) -> dict[str, str]:
            password = hashlib.sha256(pem.encode()).hexdigest()
            return {"password": password, "auth.conf": quota.auth_conf(password)}

        data = pulumi.Output.secret(key.private_key_pem.apply(auth))
        secret = self._apply("quota-store-auth", quota.store_secret(data), ns)
        cert = server_certificate(
            f"{self._name}-quota-store",
            ca_common_name=f"{quota.STORE}-ca",
            common_name=quota.STORE_HOST,
            dns_names=quota.store_dns_names(),
            ca_validity_hours=quota.STORE_CA_VALIDITY_HOURS,
            cert_validity_hours=quota.STORE_CERT_VALIDITY_HOURS,
            renew_hours=quota.STORE_CERT_RENEW_HOURS,
            opts=opts,
        )
        tls_secret = self._apply("quota-store-tls", quota.store_tls_secret(cert.pems), ns)
        config = self._apply("quota-store-config", quota.store_config_map(), ns)
        service = self._apply("quota-store-svc", quota.store_service(), ns)
        self._apply("quota-store-netpol", quota.store_network_policy(), ns)
        digest = cert.cert_pem.apply(lambda pem: hashlib.sha256(pem.encode()).hexdigest())
        stateful_set = self._apply(
            "quota-store",
            quota.store_stateful_set(store, storage_class, digest),
            secret,
            tls_secret,
            config,
            service,
        )
        return [secret, tls_secret, stateful_set]

    def _webhook_certificate(self) -> pulumi.Output[dict[str, str]]:
        """This cluster's own CA and the AI Gateway webhook's leaf, signed by it (ECDSA P-256): the Secret's
        ca.crt, tls.crt and tls.key, a Pulumi secret (the keys never reach state or a render in plaintext)."""
        dns_names = spec.webhook_dns_names()
        return server_certificate(
            f"{self._name}-ai-gateway-webhook",
            ca_common_name=f"{spec.AI_GATEWAY_CONTROLLER}-ca",
            common_name=dns_names[2],
            dns_names=dns_names,
            ca_validity_hours=spec.WEBHOOK_CA_VALIDITY_HOURS,
            cert_validity_hours=spec.WEBHOOK_CERT_VALIDITY_HOURS,
            renew_hours=spec.WEBHOOK_CERT_RENEW_HOURS,
            opts=child_options(self, self._opts),
        ).pems
