"""GPU headroom: the serving and placeholder PriorityClasses, and per pool the placeholders that keep
warm GPU nodes up (resized on a schedule by KEDA)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from llm_platform.components import child_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import dashboards
from llm_platform.components.specs import headroom as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.plan import PoolPlan
from llm_platform.plan.naming import HEADROOM_NAMESPACE, MONITORING_NAMESPACE


@dataclass(frozen=True, kw_only=True)
class GpuHeadroomArgs:
    pools: Sequence[PoolPlan]
    """The plan's GPU pools: the models each serves and its resolved headroom."""
    keda: pulumi.Resource | None = None
    """The KEDA release (its CRDs): needed first when a pool's headroom has a schedule."""
    monitoring: pulumi.Resource | None = None
    """kube-prometheus-stack (the PrometheusRule CRD and the Grafana namespace): for the buffer's alert
    and dashboard."""


class GpuHeadroom(pulumi.ComponentResource):
    """Registers the vLLM pods' PriorityClass (always: the serving Deployments name it), the `llm-headroom`
    namespace with an image pre-pull DaemonSet per pool that serves a model, and, for pools with `headroom`,
    the placeholder PriorityClass, a placeholder Deployment per pool and a KEDA cron ScaledObject when the
    headroom has a schedule."""

    serving_priority_class: pulumi.Resource

    def __init__(self, name: str, args: GpuHeadroomArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm-platform:headroom:GpuHeadroom", name, None, opts)
        self.serving_priority_class = apply_manifest(
            f"{name}-serving-priority", spec.serving_priority_class(), child_options(self, opts)
        )
        serving = [p for p in args.pools if p.models]
        placeholders: list[str] = []
        if not serving:  # no model, no warm node to prepare (headroom needs a served pool: the schema)
            self.register_outputs({"placeholders": placeholders})
            return
        ns = apply_manifest(
            f"{name}-ns", namespace_manifest(HEADROOM_NAMESPACE, "restricted"), child_options(self, opts)
        )
        for pool in serving:
            apply_manifest(
                f"{name}-{pool.name}-prepull",
                spec.prepull_daemonset(pool),
                child_options(self, opts, ns),
            )
        pools = [p for p in serving if p.headroom is not None]
        if pools:
            priority = apply_manifest(
                f"{name}-placeholder-priority", spec.headroom_priority_class(), child_options(self, opts)
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
                    after = [deployment] + ([args.keda] if args.keda is not None else [])
                    apply_manifest(
                        f"{name}-{pool.name}-schedule",
                        spec.scaled_object(pool),
                        child_options(self, opts, *after),
                    )
        if pools:
            monitoring = [args.monitoring] if args.monitoring is not None else []
            apply_manifest(
                f"{name}-alerts", spec.prometheus_rule(pools), child_options(self, opts, ns, *monitoring)
            )
            board = dashboards.headroom_dashboard(HEADROOM_NAMESPACE)
            apply_manifest(
                f"{name}-dashboard",
                dashboards.dashboard_configmap("llm-platform-headroom", MONITORING_NAMESPACE, board),
                child_options(self, opts, *monitoring),
            )
        self.register_outputs({"placeholders": placeholders})
