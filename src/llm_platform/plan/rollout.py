"""A model's progressive rollout, resolved: names, steps, the replicas of each version at each step, and the
analysis queries on the platform's own metrics per version (config/schema/rollout.py is the stack-file side).

How Argo Rollouts v1.9.0 runs it (components/specs/rollout.py writes the objects):
- The Rollout takes the model's pods over from its Deployment (`workloadRef`, `scaleDown: progressively`: the
  Deployment is scaled down as the Rollout's pods become Ready, then kept at 0 as the pod template; its pods
  carry the stable track, so a model that served before keeps serving while it moves). Each version is a
  ReplicaSet; Argo labels the stable one's pods `llm-platform/track:
  stable` and the candidate's `canary` (`stableMetadata`/`canaryMetadata`, rollout/ephemeralmetadata.go@v1.9.0),
  and each InferencePool selects one track: `<model>` the stable pods, `<model>-canary` the candidate's.
- At a step the Gateway API plugin sets the path HTTPRoute's two InferencePool backendRefs to `weight` and
  `100 - weight` (pkg/plugin/httproute.go@v0.15.0); the canary ReplicaSet runs ceil(weight% x replicas) pods and
  the stable one all of them (`dynamicStableScale: false`: a rollback needs no cold start).
- A weight only steers new requests: Envoy picks a backend when a request arrives and a stream stays on the pod
  it started on. After promotion the old pods get no new requests and stop `SCALE_DOWN_DELAY_SECONDS` later
  through their own drain (plan/drain.py: the picker drops the pod, preStop, then vLLM's shutdown timeout within
  the grace period), so a stream finishes on the version that started it.
- The analysis runs from the first step to the end; a failed one aborts: all traffic back to stable, the
  candidate scaled to zero (`abortScaleDownDelaySeconds`), its streams drained the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llm_platform.config.schema import ModelRollout
from llm_platform.facts.versions import ARGO_ROLLOUTS_GATEWAY_PLUGIN_IMAGE
from llm_platform.plan import promql
from llm_platform.plan.addon_pods import ARGO_ROLLOUTS_CONTROLLER, ARGO_ROLLOUTS_REPLICAS
from llm_platform.plan.model import ModelPlan
from llm_platform.plan.nodes import ADDON_NODE_LABEL, ADDON_TOLERATION
from llm_platform.plan.stack import Plan

TRACK_LABEL = "llm-platform/track"  # ephemeral pod label: which InferencePool serves the pod
STABLE, CANARY = "stable", "canary"
# the label Argo Rollouts puts on every pod of a version (its ReplicaSet's template hash); the PodMonitor copies
# it onto vLLM's series (podTargetLabels), where Prometheus spells it with underscores
HASH_LABEL = "rollouts-pod-template-hash"
HASH_SERIES_LABEL = "rollouts_pod_template_hash"
# Argo Rollouts' default `scaleDownDelaySeconds` (rollout-crd.yaml@v1.9.0 doc; defaults.DefaultScaleDownDelaySeconds):
# the old ReplicaSet stays this long after the switch, time for Envoy to take the new weights (xDS, seconds)
SCALE_DOWN_DELAY_SECONDS = 30
# the analysis' arguments: the two versions' pod-template hashes (valueFrom.podTemplateHashValue Latest/Stable)
CANARY_HASH_ARG, STABLE_HASH_ARG = "canary-hash", "stable-hash"
PLUGIN = (
    "argoproj-labs/gatewayAPI"  # the plugin's name, as its docs register it (docs/installation.md@v0.15.0)
)


@dataclass(frozen=True)
class Analysis:
    ttft_p95_seconds: float
    itl_p95_seconds: float
    max_error_rate: float
    max_throttle_rate: float
    failure_limit: int
    interval_seconds: int


@dataclass(frozen=True)
class StepScale:
    """One step: the candidate's share of new requests and the pods of each version while it holds."""

    weight: int
    stable_replicas: int
    canary_replicas: int
    seconds: int


@dataclass(frozen=True)
class RolloutPlan:
    model: str
    namespace: str
    strategy: str
    weights: tuple[int, ...]
    step_seconds: int
    analysis: Analysis
    image: str  # the version the pod template runs: the candidate's when one is given
    extra_args: tuple[str, ...]
    rollout: str  # the Rollout's name (= the Deployment's, so the ScaledObject and preflight find it)
    stable_pool: str  # = the stable Service (the plugin matches backendRefs by the Services' names)
    canary_pool: str  # = the canary Service
    analysis_template: str
    path_route: str

    @property
    def canary_epp(self) -> str:
        return f"{self.canary_pool}-epp"

    @property
    def stable_epp(self) -> str:
        return f"{self.stable_pool}-epp"

    def steps(self, replicas: int) -> list[StepScale]:
        """The pods of each version at each step, at `replicas` (Argo's canary count: ceil(weight% x
        replicas), utils/replicaset/canary.go@v1.9.0; blueGreen scales the candidate to all of them first),
        then the promotion: both at full size for SCALE_DOWN_DELAY_SECONDS."""
        out = []
        for weight in self.weights:
            canary = replicas if self.strategy == "blueGreen" else math.ceil(weight * replicas / 100)
            out.append(StepScale(weight, replicas, canary, self.step_seconds))
        out.append(StepScale(100, replicas, replicas, SCALE_DOWN_DELAY_SECONDS))
        return out


def rollout_plan(m: ModelPlan) -> RolloutPlan | None:
    """The model's rollout; None without `rollout`."""
    config: ModelRollout | None = m.model.rollout
    if config is None:
        return None
    a = config.analysis
    candidate = config.candidate
    image = candidate.image if candidate is not None and candidate.image else m.model.image
    args = (
        candidate.extra_args
        if candidate is not None and candidate.extra_args is not None
        else m.model.extra_args
    )
    return RolloutPlan(
        model=m.name,
        namespace=m.names.namespace,
        strategy=config.strategy,
        weights=config.weights,
        step_seconds=config.step_seconds,
        analysis=Analysis(
            ttft_p95_seconds=a.ttft_p95_seconds or m.model.slo.ttft_seconds,
            itl_p95_seconds=a.itl_p95_seconds or m.model.slo.itl_seconds,
            max_error_rate=a.max_error_rate,
            max_throttle_rate=a.max_throttle_rate,
            failure_limit=a.failure_limit,
            interval_seconds=a.interval_seconds,
        ),
        image=image,
        extra_args=tuple(args),
        rollout=m.names.deployment,
        stable_pool=m.name,
        canary_pool=f"{m.name}-canary",
        analysis_template=f"{m.name}-rollout",
        path_route=f"{m.name}-by-path",
    )


def any_rollout(plan: Plan) -> bool:
    """Whether the stack installs Argo Rollouts: some model rolls out progressively."""
    return any(m.model.rollout is not None for m in plan.models)


# ------------------------------------------------------------------------------------- analysis queries


def _arg(name: str) -> str:
    return "{{args." + name + "}}"


def latency_p95(r: RolloutPlan, served_model: str, histogram: str, hash_arg: str = CANARY_HASH_ARG) -> str:
    """The 95th percentile of a vLLM histogram (promql.TTFT or promql.ITL) over the version's pods only, over
    one analysis interval; NaN while the version served nothing in it."""
    labels = f'namespace="{r.namespace}",model_name="{served_model}",{HASH_SERIES_LABEL}="{_arg(hash_arg)}"'
    window = f"{r.analysis.interval_seconds}s"
    return f"histogram_quantile(0.95, sum by (le) (rate({histogram}_bucket{{{labels}}}[{window}])))"


def _picker(r: RolloutPlan, metric: str, epp: str, extra: str = "") -> str:
    # each version has its own picker, so its own series: the chart names the picker's Service `<release>-epp`
    # (llm-d-router config/charts/routerlib/templates/_helpers.tpl@v0.10.0 `llm-d-router.name`) and its
    # ServiceMonitor (_servicemonitor.yaml) scrapes it; Prometheus Operator puts the Service's name on every
    # series it scrapes through a ServiceMonitor as `service`
    labels = f'namespace="{r.namespace}",service="{epp}"{extra}'
    return f"sum(rate({metric}{{{labels}}}[{r.analysis.interval_seconds}s]))"


def error_rate(r: RolloutPlan, epp: str | None = None) -> str:
    """Requests the version's picker answered with an error other than its flow control's 429/503, of all it
    saw (dispatched plus answered with an error); 0 while it saw none."""
    epp = epp or r.canary_epp
    shed = "|".join(promql.SHED_ERROR_CODES)
    errors = _picker(r, promql.EPP_REQUEST_ERRORS, epp, f',error_code!~"{shed}"')
    seen = f"({_picker(r, promql.EPP_REQUESTS, epp)} + ({_picker(r, promql.EPP_REQUEST_ERRORS, epp)} or vector(0)))"
    return f"((({errors}) or vector(0)) / {seen}) or vector(0)"


def throttle_rate(r: RolloutPlan, epp: str | None = None) -> str:
    """Requests the version's picker turned away with 429 (flow control's ResourceExhausted), of all it saw."""
    epp = epp or r.canary_epp
    throttled = _picker(r, promql.EPP_REQUEST_ERRORS, epp, ',error_code="ResourceExhausted"')
    seen = f"({_picker(r, promql.EPP_REQUESTS, epp)} + ({_picker(r, promql.EPP_REQUEST_ERRORS, epp)} or vector(0)))"
    return f"((({throttled}) or vector(0)) / {seen}) or vector(0)"


# ---------------------------------------------------------------------------------------- the controller

PLUGIN_DIR = "/plugins"
PLUGIN_BINARY = "rollouts-plugin-trafficrouter-gatewayapi"  # where the plugin image keeps it: /bin/<binary>


def _restricted() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def controller_values(plan: Plan) -> dict[str, Any]:
    """The add-on record's values builder (facts/addons.py ARGO_ROLLOUTS), here below the components so the
    plan's add-on pool model prices the controller from its record (plan/addon_pods.py record_pods). The controller on the add-on nodes, the plugin copied from its pinned image by an init container (no
    download at start: plugin docs/installation.md@v0.15.0, "Installing the plugin via init containers"), the
    chart's Gateway API RBAC (`providerRBAC.providers.gatewayAPI`, on by default) and its ServiceMonitor."""
    del plan  # one controller for the cluster, whatever the models
    return {
        "controller": {
            "replicas": ARGO_ROLLOUTS_REPLICAS,
            "nodeSelector": dict(ADDON_NODE_LABEL),
            "tolerations": [ADDON_TOLERATION],
            "resources": {"requests": ARGO_ROLLOUTS_CONTROLLER.as_dict()},
            "initContainers": [
                {
                    "name": "copy-gatewayapi-plugin",
                    "image": ARGO_ROLLOUTS_GATEWAY_PLUGIN_IMAGE,
                    "command": ["/bin/sh", "-c"],
                    "args": [f"cp /bin/{PLUGIN_BINARY} {PLUGIN_DIR}"],
                    "volumeMounts": [{"name": "gatewayapi-plugin", "mountPath": PLUGIN_DIR}],
                    "securityContext": _restricted(),
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                }
            ],
            "trafficRouterPlugins": [{"name": PLUGIN, "location": f"file://{PLUGIN_DIR}/{PLUGIN_BINARY}"}],
            "volumes": [{"name": "gatewayapi-plugin", "emptyDir": {}}],
            "volumeMounts": [{"name": "gatewayapi-plugin", "mountPath": PLUGIN_DIR}],
            "metrics": {"enabled": True, "serviceMonitor": {"enabled": True}},
        },
    }
