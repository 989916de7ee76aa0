"""A model's objects behind the gateway, in its namespace: its InferencePool and endpoint picker (one chart
release), its two routes, their filters and policies, the picker's PDB, NetworkPolicies and alerts
(components.specs.inference_pool). Written by `Gateway` for its own models and by `GatewayRoutes` for a team's."""

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import gateway as spec
from llm_platform.components.specs import gateway_monitoring as monitoring
from llm_platform.components.specs import inference_pool as pool
from llm_platform.components.specs import quota, zero
from llm_platform.components.specs import rollout as rollout_spec
from llm_platform.config.errors import ConfigError
from llm_platform.config.schema import GatewayClient
from llm_platform.config.stack_args import (
    EnvironmentValue,
    GatewaySettings,
    GpuNodePoolSettings,
    ModelCacheSettings,
    ModelSettings,
)
from llm_platform.facts.addons import ENDPOINT_PICKER, Addon, version_of
from llm_platform.facts.versions import ENVOY_GATEWAY_CHART_REPO, LLM_D_ROUTER_CHART_REPO
from llm_platform.plan import ModelPlan
from llm_platform.plan.naming import GATEWAY_NAMESPACE, check_prefix
from llm_platform.plan.rollout import RolloutPlan, rollout_plan
from llm_platform.plan.stack import resolve_serving, serving_config


class RouteWriter(pulumi.ComponentResource):
    """What `Gateway` and `GatewayRoutes` share: a model's objects, and their children's naming and options
    (`<component>-<suffix>`, parented to the component, after what it was told to wait for)."""

    _name: str
    _opts: pulumi.ResourceOptions | None
    _models_ready: list[pulumi.Resource]
    _costs: list[dict[str, str]]
    _clients: list[GatewayClient]
    _monitor_labels: dict[str, str] | None
    _addon_versions: Mapping[str, str] | None

    def _model(
        self,
        model: ModelPlan,
        credential: pulumi.Output[str],
        *after: pulumi.Resource,
    ) -> None:
        """The model's InferencePool and picker (one chart release), routes, PDB, policies and alerts."""
        waits = [*after, *self._models_ready]
        prefix = model.name
        rolled = rollout_plan(model)
        picker = self._release(
            f"{prefix}-pool",
            "llm-d-router-gateway",
            self._chart_version(ENDPOINT_PICKER),
            pool.helm_values(model) if rolled is None else rollout_spec.stable_pool_values(model, rolled),
            *waits,
            namespace=model.names.namespace,
            release=pool.release_name(model),
            repository=LLM_D_ROUTER_CHART_REPO,
        )
        pickers = [picker] if rolled is None else [picker, self._canary_pool(model, rolled, waits)]
        secret = self._apply(f"{prefix}-vllm-credential", pool.credential_secret(model, credential), *waits)
        path_filter = self._apply(f"{prefix}-vllm-key", pool.credential_filter(model), secret)
        model_filter = self._apply(f"{prefix}-model-filter", pool.model_route_filter(model), secret)
        if rolled is None:
            by_path = self._apply(f"{prefix}-route-by-path", pool.path_route(model), picker, path_filter)
        else:
            # the plugin sets the two backendRefs' weights at each step: Pulumi leaves them to it
            by_path = apply_manifest(
                f"{self._name}-{prefix}-route-by-path",
                rollout_spec.weighted_path_route(model, rolled),
                pulumi.ResourceOptions.merge(
                    child_options(self, self._opts, *pickers, path_filter),
                    pulumi.ResourceOptions(ignore_changes=["spec.rules[0].backendRefs"]),
                ),
            )
        by_model = self._apply(
            f"{prefix}-route-by-model", pool.model_field_route(model, self._costs), picker, model_filter
        )
        # clients with a token budget kept off the path route, which charges no tokens (specs/quota.py)
        uncharged = quota.uncharged_route_policy(
            pool.path_route_name(model), model.names.namespace, self._clients, spec.CLIENT_HEADER
        )
        if uncharged is not None:
            self._apply(f"{prefix}-path-token-budgets", uncharged, by_path)
        if zero.at_zero(model):
            # merged into the Gateway's BackendTrafficPolicy (rate limits): specs/zero.py
            self._apply(f"{prefix}-from-zero", zero.zero_hold_policy(model), by_path, by_model)
        self._apply(f"{prefix}-epp-pdb", pool.epp_pod_disruption_budget(model), *waits)
        self._apply(f"{prefix}-epp-netpol", pool.epp_network_policy(model), *waits)
        self._apply(f"{prefix}-vllm-from-epp", pool.vllm_from_picker_network_policy(model), *waits)
        self._apply(
            f"{prefix}-epp-alerts", monitoring.epp_prometheus_rule(model, self._monitor_labels), *waits
        )

    def _canary_pool(
        self, model: ModelPlan, rolled: RolloutPlan, waits: list[pulumi.Resource]
    ) -> pulumi.Resource:
        """A progressive rollout's second InferencePool and picker (`<model>-canary`), its PDB and policies."""
        prefix = model.name
        picker = self._release(
            f"{prefix}-canary-pool",
            "llm-d-router-gateway",
            self._chart_version(ENDPOINT_PICKER),
            rollout_spec.canary_pool_values(model, rolled),
            *waits,
            namespace=model.names.namespace,
            release=rolled.canary_pool,
            repository=LLM_D_ROUTER_CHART_REPO,
        )
        self._apply(f"{prefix}-canary-epp-pdb", rollout_spec.canary_epp_pod_disruption_budget(rolled), *waits)
        for policy in rollout_spec.canary_epp_network_policies(model, rolled):
            self._apply(f"{prefix}-{policy['metadata']['name'].removeprefix(prefix + '-')}", policy, *waits)
        return picker

    def _chart_version(self, record: Addon, chart: int = -1) -> str:
        """The version of the record's chart (by index; default its main chart) to install."""
        return version_of(record, record.charts[chart], self._addon_versions)

    def _release(
        self,
        suffix: str,
        chart: str,
        version: str,
        values: dict[str, Any],
        *after: pulumi.Resource,
        namespace: str = GATEWAY_NAMESPACE,
        release: str | None = None,
        repository: str = ENVOY_GATEWAY_CHART_REPO,
    ) -> k8s.helm.v3.Release:
        return k8s.helm.v3.Release(
            f"{self._name}-{suffix}",
            name=release or suffix,
            chart=f"{repository}/{chart}",
            version=version,
            namespace=namespace,
            values=values,
            opts=child_options(self, self._opts, *after),
        )

    def _apply(self, suffix: str, manifest: dict, *after: pulumi.Resource) -> pulumi.CustomResource:
        return apply_manifest(f"{self._name}-{suffix}", manifest, child_options(self, self._opts, *after))


class GatewayRoutesArgs(TypedDict):
    """A team's models behind a Gateway it shares: the stack file's blocks of the team's models (camelCase
    keys, checked by the stack's rules), the Gateway's `gateway` block, the team's prefix and vLLM key."""

    environment: EnvironmentValue
    """dev, staging or prod."""
    gateway: GatewaySettings
    """The `gateway` block the shared Gateway was built from: its clients (their token budgets reach these
    routes) and its quota store."""
    models: list[ModelSettings]
    """The team's models: an InferencePool, an endpoint picker and routes for each."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The team's `gpuNodePools` the models run on."""
    model_cache: NotRequired[ModelCacheSettings]
    """The team's `modelCache` (the fsx cache needs its `fsx` block)."""
    vllm_api_key: pulumi.Input[str]
    """The key the team's vLLM checks (its InferenceServices' `api_key`); the gateway injects it upstream."""
    prefix: NotRequired[str]
    """The team's (the same as its InferenceServices'): the routes live in `<prefix>-model-<name>` and the
    path route is `/<prefix>-<name>/v1`. Default: none, the platform's own names."""
    monitor_labels: NotRequired[dict[str, str]]
    """Labels the cluster's Prometheus selects PrometheusRules by. Default: none (the platform's own
    Prometheus selects every rule)."""


class GatewayRoutes(RouteWriter):
    """A team's models on a Gateway the cluster already runs: per model, in its namespace, an InferencePool
    with its endpoint picker (the llm-d router chart), the path route `/<prefix>-<model>/v1` and the
    `model`-field AIGatewayRoute, the vLLM credential and its filters, the picker's PDB, NetworkPolicies and
    alerts. Instantiated once per team, beside the platform's own Gateway: it writes nothing outside its
    models' namespaces.

    Prerequisites: the platform's `Gateway` (its controllers, CRDs and the `llm-gateway` Gateway in
    `envoy-gateway-system`) with the team's model namespaces among its `route_namespaces`; the team's
    InferenceServices (their namespaces `<prefix>-model-<name>` and pods: pass them as `models_ready`);
    Envoy Gateway's and AI Gateway's CRDs (the Gateway installs them); the Prometheus Operator's
    CRDs (PrometheusRule). Clients and rate limits are the Gateway's: a client's key reaches every team's
    models. Clients pick a model by its served name, which must be unique among every team's models behind
    the Gateway (the Gateway cannot tell two teams' `chat` apart). A model that scales to zero is refused:
    the Gateway's request-received timeout covers only its own models' holds."""

    namespaces: list[str]

    def __init__(
        self,
        name: str,
        args: GatewayRoutesArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        models_ready: Sequence[pulumi.Resource] = (),
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`models_ready`: the team's InferenceServices (Python only): their namespaces and pods exist before
        each model's pool and routes. `versions`: chart versions by add-on name (`llm_platform.facts.addons`:
        llm-d-router) in place of the pinned one."""
        # bad input stops before any resource
        config = serving_config(args)
        gateway = config.gateway
        if not gateway.enabled:
            raise ConfigError("gateway.enabled: false; GatewayRoutes needs the `gateway` block of a Gateway")
        # the pickers read no cache fact
        models, _ = resolve_serving(config, has_bucket=True, prefix=check_prefix(args.get("prefix", "")))
        held = [m.name for m in models if zero.at_zero(m)]
        if held:
            raise ConfigError(
                f"models ({', '.join(held)}).autoscaling.minReplicas: 0 behind a shared Gateway is not "
                "supported (its request-received timeout covers only the Gateway's own models' holds); "
                "use minReplicas >= 1"
            )
        super().__init__("llm-platform:index:GatewayRoutes", name, None, opts)
        self._name, self._opts, self._models_ready = name, opts, list(models_ready)
        self._monitor_labels = args.get("monitor_labels")
        self._addon_versions = versions
        self._clients = list(gateway.clients)
        self._costs = quota.llm_request_costs(gateway.clients) if gateway.quota_store else []
        self.namespaces = [m.names.namespace for m in models]
        credential = pulumi.Output.secret(pulumi.Output.from_input(args["vllm_api_key"]).apply(pool.bearer))
        for model in models:
            self._model(model, credential)
        self.register_outputs({"namespaces": self.namespaces})
