"""GPU headroom: the serving and placeholder PriorityClasses, and per pool the placeholders that keep
warm GPU nodes up (resized on a schedule by KEDA)."""

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import dashboards
from llm_platform.components.specs import headroom as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.config.stack_args import (
    EnvironmentValue,
    GpuNodePoolSettings,
    ModelCacheSettings,
    ModelSettings,
)
from llm_platform.plan.headroom import PoolPlan
from llm_platform.plan.naming import MONITORING_NAMESPACE, headroom_namespace, scoped
from llm_platform.plan.stack import serving_plans


class GpuHeadroomArgs(TypedDict):
    """The GPU pools and the models they serve (the stack file's blocks, camelCase keys, checked by the
    stack's rules): each pool's `headroom` sizes its placeholders by the models on it."""

    environment: EnvironmentValue
    """dev, staging or prod."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The stack file's `gpuNodePools`, with their `headroom` blocks."""
    models: NotRequired[list[ModelSettings]]
    """The stack file's `models`: which pools serve a model (only those get pre-pulls and placeholders)."""
    model_cache: NotRequired[ModelCacheSettings]
    """The stack file's `modelCache` (the fsx cache needs its `fsx` block)."""
    has_model_bucket: NotRequired[bool]
    """The model bucket exists (an EKS stack; default true): a warm start reads weights from it."""
    keda: NotRequired[k8s.helm.v3.Release]
    """The KEDA release (its CRDs): needed first when a pool's headroom has a schedule."""
    monitoring: NotRequired[k8s.helm.v3.Release]
    """kube-prometheus-stack (the PrometheusRule CRD and the Grafana namespace): for the buffer's alert
    and dashboard."""
    prefix: NotRequired[str]
    """A team's on a cluster it shares (the same as its GpuNodePools' and InferenceServices'): the
    namespace, the PriorityClasses and the dashboard are `<prefix>-llm-headroom`, `<prefix>-llm-serving`,
    ...; the pods select the team's NodePools. Default: none, the platform's own names."""
    monitor_labels: NotRequired[dict[str, str]]
    """Labels the cluster's Prometheus selects PrometheusRules by (kube-prometheus-stack's default:
    `{"release": "<its Helm release>"}`). Default: none, as the platform's own Prometheus selects every rule."""


class GpuHeadroom(pulumi.ComponentResource):
    """Registers the vLLM pods' PriorityClass (`serving_priority_class_name`: give it to each
    InferenceService as `priority_class`), the `llm-headroom` namespace with an image pre-pull DaemonSet per
    pool that serves a model, and, for pools with `headroom`, the placeholder PriorityClass, a placeholder
    Deployment per pool and a KEDA cron ScaledObject when the headroom has a schedule.

    Cluster prerequisites: GPU nodes labelled `llm-platform/gpu-pool: <pool>` (`<prefix>-<pool>` with a
    prefix) and tainted `nvidia.com/gpu: NoSchedule` (`GpuNodePools` makes them); KEDA's CRDs when a
    headroom has a schedule and the Prometheus Operator's CRDs and Grafana's dashboard sidecar in
    `monitoring` when a pool has headroom (pass the releases as `keda` and `monitoring` to wait for them)."""

    serving_priority_class_name: pulumi.Output[str]
    """The vLLM pods' PriorityClass, known once it is registered (an InferenceService's `priority_class`)."""

    def __init__(
        self,
        name: str,
        args: GpuHeadroomArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        pools: Sequence[PoolPlan] | None = None,
    ) -> None:
        """`pools`: every GPU pool's plan, already resolved from these args (`LlmPlatform` passes its own);
        without it the args are validated and resolved here."""
        # bad input stops before any resource
        if pools is not None:
            pool_plans = tuple(pools)
        else:
            _, pool_plans = serving_plans(args, has_bucket=args.get("has_model_bucket", True))
        prefix = args.get("prefix", "")
        super().__init__(
            "llm-platform:index:GpuHeadroom",
            name,
            None,
            typed_options(opts, "llm-platform:headroom:GpuHeadroom"),
        )
        # the PriorityClass the vLLM pods name (not a schema output: a Kubernetes object)
        serving_priority = spec.serving_priority_class(prefix)
        self.serving_priority_class: pulumi.Resource = apply_manifest(
            f"{name}-serving-priority", serving_priority, child_options(self, opts)
        )
        self.serving_priority_class_name = self.serving_priority_class.urn.apply(
            lambda _: str(serving_priority["metadata"]["name"])
        )
        serving = [p for p in pool_plans if p.models]
        placeholders: list[str] = []
        outputs = {"placeholders": placeholders}
        if not serving:  # no model, no warm node to prepare (headroom needs a served pool: the schema)
            self.register_outputs(outputs)
            return
        ns = apply_manifest(
            f"{name}-ns",
            namespace_manifest(headroom_namespace(prefix), "restricted"),
            child_options(self, opts),
        )
        for pool in serving:
            apply_manifest(
                f"{name}-{pool.name}-prepull",
                spec.prepull_daemonset(pool),
                child_options(self, opts, ns),
            )
        placeholders += self._placeholders(
            name, args, opts, ns, [p for p in serving if p.headroom is not None]
        )
        self.register_outputs(outputs)

    def _placeholders(
        self,
        name: str,
        args: GpuHeadroomArgs,
        opts: pulumi.ResourceOptions | None,
        ns: pulumi.Resource,
        pools: list[PoolPlan],
    ) -> list[str]:
        """The warm placeholders of the pools with headroom: their PriorityClass, each pool's Deployment (and
        its KEDA schedule when it has windows), their alerts and dashboard; the Deployments' names."""
        if not pools:
            return []
        prefix = args.get("prefix", "")
        placeholders: list[str] = []
        priority = apply_manifest(
            f"{name}-placeholder-priority",
            spec.headroom_priority_class(prefix),
            child_options(self, opts),
        )
        for pool in pools:
            deployment = apply_manifest(
                f"{name}-{pool.name}",
                spec.placeholder_deployment(pool),
                child_options(self, opts, ns, priority),
            )
            assert pool.headroom is not None
            placeholders.append(pool.headroom.deployment)
            if pool.headroom.windows:
                keda = args.get("keda")
                after = [deployment] + ([keda] if keda is not None else [])
                apply_manifest(
                    f"{name}-{pool.name}-schedule",
                    spec.scaled_object(pool),
                    child_options(self, opts, *after),
                )
        release = args.get("monitoring")
        monitoring = [release] if release is not None else []
        apply_manifest(
            f"{name}-alerts",
            spec.prometheus_rule(pools, args.get("monitor_labels") or {}),
            child_options(self, opts, ns, *monitoring),
        )
        board_name = scoped(prefix, dashboards.HEADROOM_DASHBOARD)
        board = dashboards.headroom_dashboard(headroom_namespace(prefix), uid=board_name, team=prefix)
        apply_manifest(
            f"{name}-dashboard",
            dashboards.dashboard_configmap(board_name, MONITORING_NAMESPACE, board),
            child_options(self, opts, *monitoring),
        )
        return placeholders
