"""A model's progressive rollout with Argo Rollouts v1.9.0 (chart argo-rollouts 2.41.0) and its Gateway API
traffic-router plugin v0.15.0: the controller's values, the Rollout, the AnalysisTemplate, the canary Service,
the two InferencePools' picker values and the weighted path route (plan/rollout.py says how they play; why
Argo Rollouts and not Flagger: facts/addons.py ARGO_ROLLOUTS, docs/rollouts.md).

Field sources: Rollout and AnalysisTemplate: argoproj/argo-rollouts manifests/crds/{rollout,analysis-template}-crd.yaml
@v1.9.0 (validated against them by tools/validate_render.py); the plugin's configuration: argoproj-labs/
rollouts-plugin-trafficrouter-gatewayapi pkg/plugin/types.go@v0.15.0 (`GatewayAPITrafficRouting`: `httpRoutes`,
`namespace`); the controller's values: argoproj/argo-helm charts/argo-rollouts/values.yaml@argo-rollouts-2.41.0.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from llm_platform.components.specs import inference_pool as pool
from llm_platform.components.specs.serving import PORT, labels
from llm_platform.plan import ModelPlan, promql
from llm_platform.plan.naming import PROMETHEUS_URL, model_selector
from llm_platform.plan.rollout import (
    CANARY,
    CANARY_HASH_ARG,
    HASH_LABEL,
    PLUGIN,
    SCALE_DOWN_DELAY_SECONDS,
    STABLE,
    STABLE_HASH_ARG,
    TRACK_LABEL,
    RolloutPlan,
    error_rate,
    latency_p95,
    throttle_rate,
)

# ------------------------------------------------------------------------------------------------- pods


def candidate_plan(m: ModelPlan, r: RolloutPlan) -> ModelPlan:
    """The model as its pod template runs it: the candidate's image and engine args in place of its own (the
    Deployment the Rollout reads its template from; Argo starts a rollout when the template changes)."""
    model = m.model.model_copy(update={"image": r.image, "extra_args": list(r.extra_args)})
    return dataclasses.replace(m, model=model)


def rolled_deployment(deployment: dict[str, Any]) -> dict[str, Any]:
    """The Deployment as the Rollout's template: its pods labelled as the stable track, so that while a model
    that served before moves to the Rollout its Deployment's pods stay in the stable pool; the Rollout scales
    the Deployment down as its own pods become Ready (`workloadRef.scaleDown: progressively`, then 0 once
    Healthy: rollout/replicaset.go@v1.9.0). No `replicas`, as before: Pulumi never resets Argo's count."""
    out = copy.deepcopy(deployment)
    template = out["spec"]["template"]["metadata"]
    template["labels"] = {**template["labels"], TRACK_LABEL: STABLE}
    return out


def rollout(m: ModelPlan, r: RolloutPlan) -> dict[str, Any]:
    """The Rollout: the Deployment's pods in two ReplicaSets, traffic through the plugin, the analysis in the
    background from the first step, and the steps."""
    canary: dict[str, Any] = {
        "stableService": r.stable_pool,
        "canaryService": r.canary_pool,
        "stableMetadata": {"labels": {TRACK_LABEL: STABLE}},
        "canaryMetadata": {"labels": {TRACK_LABEL: CANARY}},
        # the stable version keeps its size through the steps: an abort sends traffic back with no cold start
        "dynamicStableScale": False,
        "scaleDownDelaySeconds": SCALE_DOWN_DELAY_SECONDS,
        "trafficRouting": {
            "plugins": {PLUGIN: {"httpRoutes": [{"name": r.path_route}], "namespace": r.namespace}}
        },
        "analysis": {
            "templates": [{"templateName": r.analysis_template}],
            # from the step that first sends the candidate traffic (0-based index)
            "startingStep": 1,
            "args": [
                {"name": CANARY_HASH_ARG, "valueFrom": {"podTemplateHashValue": "Latest"}},
                {"name": STABLE_HASH_ARG, "valueFrom": {"podTemplateHashValue": "Stable"}},
            ],
        },
        "steps": _steps(r),
    }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {
            "name": r.rollout,
            "namespace": r.namespace,
            "labels": {"app.kubernetes.io/instance": m.name},
        },
        "spec": {
            # no `replicas`: KEDA's HPA owns the count through the Rollout's scale subresource
            "selector": {"matchLabels": model_selector(m.name)},
            "revisionHistoryLimit": 5,
            "workloadRef": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": m.names.deployment,
                "scaleDown": "progressively",
            },
            "strategy": {"canary": canary},
        },
    }


def _steps(r: RolloutPlan) -> list[dict[str, Any]]:
    pause = {"pause": {"duration": f"{r.step_seconds}s"}}
    if r.strategy == "blueGreen":
        # the candidate at full size with no traffic, then all of it, analysed for a step before promotion
        return [{"setCanaryScale": {"weight": 100}}, {"setWeight": 100}, pause]
    out: list[dict[str, Any]] = []
    for weight in r.weights:
        out += [{"setWeight": weight}, pause]
    return out


def analysis_template(r: RolloutPlan, served_model: str) -> dict[str, Any]:
    """The canary's own TTFT and ITL p95 (vLLM's histograms over its pods), its picker's error and 429 rates,
    each measured every interval; `failureLimit` failures abort the rollout."""
    a = r.analysis
    every = {"interval": f"{a.interval_seconds}s", "failureLimit": a.failure_limit}

    def metric(name: str, query: str, condition: str) -> dict[str, Any]:
        return {
            "name": name,
            **every,
            "successCondition": condition,
            "provider": {"prometheus": {"address": PROMETHEUS_URL, "query": query}},
        }

    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": r.analysis_template, "namespace": r.namespace},
        "spec": {
            "args": [{"name": CANARY_HASH_ARG}, {"name": STABLE_HASH_ARG}],
            "metrics": [
                # NaN: the canary finished nothing in the interval (no traffic yet): not a failure
                metric(
                    "ttft-p95",
                    latency_p95(r, served_model, promql.TTFT),
                    f"isNaN(result[0]) || result[0] <= {a.ttft_p95_seconds:g}",
                ),
                metric(
                    "itl-p95",
                    latency_p95(r, served_model, promql.ITL),
                    f"isNaN(result[0]) || result[0] <= {a.itl_p95_seconds:g}",
                ),
                metric("error-rate", error_rate(r), f"result[0] <= {a.max_error_rate:g}"),
                metric("throttle-rate", throttle_rate(r), f"result[0] <= {a.max_throttle_rate:g}"),
            ],
        },
    }


def canary_service(m: ModelPlan, r: RolloutPlan, environment: str) -> dict[str, Any]:
    """The Service Argo Rollouts points at the candidate's pods (it adds the hash to the selector); named as
    the canary InferencePool, which is how the plugin finds the pool's backendRef."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": r.canary_pool, "namespace": r.namespace, "labels": labels(m, environment)},
        "spec": {
            "selector": model_selector(m.name),
            "ports": [{"name": "http", "port": PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }


# --------------------------------------------------------------------------------------- the two pools


def _track_values(m: ModelPlan, release: str, track: str) -> dict[str, Any]:
    values = pool.helm_values(m)
    router = values["router"]
    router["modelServers"]["matchLabels"] = {**model_selector(m.name), TRACK_LABEL: track}
    own, new = pool.epp_labels(m), {"llm-d-router-gateway": f"{release}-epp"}
    router["epp"]["affinity"] = _replace_labels(router["epp"]["affinity"], own, new)
    return values


def _replace_labels(node: Any, old: dict[str, str], new: dict[str, str]) -> Any:
    if node == old:
        return dict(new)
    if isinstance(node, dict):
        return {k: _replace_labels(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_labels(v, old, new) for v in node]
    return node


def stable_pool_values(m: ModelPlan, r: RolloutPlan) -> dict[str, Any]:
    """The model's own pool (`<model>`), over the stable version's pods only."""
    return _track_values(m, r.stable_pool, STABLE)


def canary_pool_values(m: ModelPlan, r: RolloutPlan) -> dict[str, Any]:
    """The candidate's pool (`<model>-canary`), with its own picker."""
    return _track_values(m, r.canary_pool, CANARY)


def weighted_path_route(m: ModelPlan, r: RolloutPlan) -> dict[str, Any]:
    """The path route with both pools: all to stable until the plugin sets the weights at a step (it owns
    them from then on: Pulumi's ignoreChanges in the component)."""
    route = pool.path_route(m)
    rule = route["spec"]["rules"][0]
    group = "inference.networking.k8s.io"
    rule["backendRefs"] = [
        {"group": group, "kind": "InferencePool", "name": r.stable_pool, "weight": 100},
        {"group": group, "kind": "InferencePool", "name": r.canary_pool, "weight": 0},
    ]
    return route


def canary_epp_pod_disruption_budget(r: RolloutPlan) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": r.canary_epp, "namespace": r.namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"llm-d-router-gateway": r.canary_epp}}},
    }


def canary_epp_network_policies(m: ModelPlan, r: RolloutPlan) -> list[dict[str, Any]]:
    """The canary picker's ingress (as the stable one's) and its scrape of the vLLM pods."""
    ingress = pool.epp_network_policy(m)
    ingress["metadata"]["name"] = f"{r.canary_epp}-ingress"
    ingress["spec"]["podSelector"] = {"matchLabels": {"llm-d-router-gateway": r.canary_epp}}
    scrape = pool.vllm_from_picker_network_policy(m)
    scrape["metadata"]["name"] = f"{m.name}-from-canary-epp"
    scrape["spec"]["ingress"][0]["from"] = [
        {"podSelector": {"matchLabels": {"llm-d-router-gateway": r.canary_epp}}}
    ]
    return [ingress, scrape]


def pod_monitor_with_hash(pod_monitor: dict[str, Any]) -> dict[str, Any]:
    """vLLM's PodMonitor with each pod's version hash on its series (the analysis filters by it)."""
    out = copy.deepcopy(pod_monitor)
    out["spec"]["podTargetLabels"] = [HASH_LABEL]
    return out
