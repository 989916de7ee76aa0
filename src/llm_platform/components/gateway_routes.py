"""A model's objects behind the gateway, in its namespace: its InferencePool and endpoint picker (one chart
release), its two routes, their filters and policies, the picker's PDB, NetworkPolicies and alerts
(components.specs.inference_pool). Written by `Gateway` for its own models and by `GatewayRoutes` for a team's."""

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import gateway as spec
from llm_platform.components.specs import gateway_monitoring as monitoring
from llm_platform.components.specs import inference_pool as pool
from llm_platform.components.specs import quota, zero
from llm_platform.config.schema import GatewayClient
from llm_platform.facts.versions import (
    ENVOY_GATEWAY_CHART_REPO,
    LLM_D_ROUTER_CHART_REPO,
    LLM_D_ROUTER_VERSION,
)
from llm_platform.plan import ModelPlan
from llm_platform.plan.naming import GATEWAY_NAMESPACE


class RouteWriter(pulumi.ComponentResource):
    """What `Gateway` and `GatewayRoutes` share: a model's objects, and their children's naming and options
    (`<component>-<suffix>`, parented to the component, after what it was told to wait for)."""

    _name: str
    _opts: pulumi.ResourceOptions | None
    _models_ready: list[pulumi.Resource]
    _costs: list[dict[str, str]]
    _clients: list[GatewayClient]

    def _model(
        self,
        model: ModelPlan,
        credential: pulumi.Output[str],
        *after: pulumi.Resource,
    ) -> None:
        """The model's InferencePool and picker (one chart release), routes, PDB, policies and alerts."""
        waits = [*after, *self._models_ready]
        prefix = model.name
        picker = self._release(
            f"{prefix}-pool",
            "llm-d-router-gateway",
            LLM_D_ROUTER_VERSION,
            pool.helm_values(model),
            *waits,
            namespace=model.names.namespace,
            release=pool.release_name(model),
            repository=LLM_D_ROUTER_CHART_REPO,
        )
        secret = self._apply(f"{prefix}-vllm-credential", pool.credential_secret(model, credential), *waits)
        path_filter = self._apply(f"{prefix}-vllm-key", pool.credential_filter(model), secret)
        model_filter = self._apply(f"{prefix}-model-filter", pool.model_route_filter(model), secret)
        by_path = self._apply(f"{prefix}-route-by-path", pool.path_route(model), picker, path_filter)
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
        self._apply(f"{prefix}-epp-alerts", monitoring.epp_prometheus_rule(model), *waits)

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
