"""The pods of each Helm add-on's chart, as scheduling templates, from its release's values: what preflight
checks the render with (`tools/preflight/pods.py`) and what the simulator prices the add-on pool with
(`plan/addon_pods.py`), read below both so neither imports the other.

A chart's pods are modelled from its templates and default values at the pinned version
(`shared/reference/chart-values/<chart>-<version>.values.yaml`), overlaid with the values the program sets:
replicas, requests, node selectors, tolerations, affinity and topology spread. The add-on records
(`facts/addons.py`) name each chart's model here (`pods=`).
"""

from __future__ import annotations

from typing import Any, Protocol

from llm_platform.plan.node_capacity import EFA_DEVICE_PLUGIN_RESOURCES, FSX_CSI_CPU, FSX_CSI_MEMORY
from llm_platform.plan.pod_templates import PodTemplate, Requests, from_pod_spec

__all__ = [
    "CHART_DEFAULTS",
    "CRITICAL_ADDONS",
    "GPU_OPERANDS",
    "ChartRelease",
    "value_at",
]


# chart defaults where the program sets none
CHART_DEFAULTS: dict[str, Requests] = {
    "keda": Requests("100m", "100Mi"),  # keda 2.20.2 values.yaml resources.{operator,metricServer,webhooks}
    "aws-fsx-csi-driver": Requests(FSX_CSI_CPU, FSX_CSI_MEMORY),
    "gateway-helm": Requests("100m", "256Mi"),  # gateway-helm v1.8.3 deployment.envoyGateway.resources
    "lws": Requests("1", "1Gi"),  # lws 0.10.0 values.yaml resources
}


class ChartRelease(Protocol):
    """What a chart's pod model reads of a Helm release (preflight's `view.Release`, or one made of the plan)."""

    @property
    def name(self) -> str: ...
    @property
    def values(self) -> dict[str, Any]: ...


def value_at(values: dict[str, Any], path: str, default: Any = None) -> Any:
    """The value at a dotted `path` of `values`, else `default`."""
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _chart_pod(
    release: ChartRelease,
    component: str,
    kind: str,
    *,
    replicas: int = 1,
    resources: dict[str, Any] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
    spread: list[dict[str, Any]] | None = None,
    where: str,
) -> PodTemplate:
    spec = {
        "containers": [{"resources": resources or {}}],
        "nodeSelector": node_selector or {},
        "tolerations": tolerations or [],
        "affinity": affinity or {},
        "topologySpreadConstraints": spread or [],
    }
    owner = f"Helm release {release.name} ({component})"
    return from_pod_spec(owner, f"values.{where}", kind, replicas, spec, {})


CRITICAL_ADDONS = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]


def _karpenter(r: ChartRelease) -> list[PodTemplate]:
    v = r.values
    return [
        _chart_pod(
            r,
            "controller",
            "Deployment",
            replicas=int(value_at(v, "replicas", 2)),
            resources=value_at(v, "controller.resources"),
            node_selector=value_at(v, "nodeSelector", {"kubernetes.io/os": "linux"}),
            tolerations=value_at(v, "tolerations", CRITICAL_ADDONS),
            affinity=value_at(
                v,
                "affinity",
                {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}
                                    ]
                                }
                            ]
                        }
                    },
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "kubernetes.io/hostname"}
                        ]
                    },
                },
            ),
            spread=value_at(
                v,
                "topologySpreadConstraints",
                [
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                    }
                ],
            ),
            where="",
        )
    ]


def _system_style(r: ChartRelease, component: str, kind: str, base: str, **kwargs: Any) -> PodTemplate:
    v = r.values
    prefix = f"{base}." if base else ""
    return _chart_pod(
        r,
        component,
        kind,
        node_selector=value_at(v, f"{prefix}nodeSelector", {}),
        tolerations=value_at(v, f"{prefix}tolerations", []),
        where=base,
        **kwargs,
    )


def _kube_prometheus_stack(r: ChartRelease) -> list[PodTemplate]:
    v = r.values
    prom, am = "prometheus.prometheusSpec", "alertmanager.alertmanagerSpec"
    return [
        _system_style(
            r, "prometheus", "StatefulSet", prom,
            replicas=int(value_at(v, f"{prom}.replicas", 1)), resources=value_at(v, f"{prom}.resources"),
        ),
        _system_style(
            r, "alertmanager", "StatefulSet", am,
            replicas=int(value_at(v, f"{am}.replicas", 1)), resources=value_at(v, f"{am}.resources"),
        ),
        _system_style(r, "operator", "Deployment", "prometheusOperator", resources=value_at(v, "prometheusOperator.resources")),
        _system_style(r, "grafana", "Deployment", "grafana", resources=value_at(v, "grafana.resources")),
        _system_style(r, "kube-state-metrics", "Deployment", "kube-state-metrics"),
        # prometheus-node-exporter 4.56.1: tolerates every NoSchedule taint by default
        _chart_pod(
            r, "node-exporter", "DaemonSet",
            tolerations=value_at(v, "prometheus-node-exporter.tolerations", [{"effect": "NoSchedule", "operator": "Exists"}]),
            where="prometheus-node-exporter",
        ),
    ]  # fmt: skip


def _keda(r: ChartRelease) -> list[PodTemplate]:
    defaults = {"requests": CHART_DEFAULTS["keda"].as_dict()}
    return [
        _system_style(
            r, component, "Deployment", "", resources=value_at(r.values, f"resources.{key}", defaults)
        )
        for component, key in (
            ("operator", "operator"),
            ("metrics server", "metricServer"),
            ("webhooks", "webhooks"),
        )
    ]


GPU_OPERANDS = {
    "devicePlugin": "device plugin",
    "dcgmExporter": "DCGM exporter",
    "gfd": "GPU feature discovery",
}


def _gpu_operator(r: ChartRelease) -> list[PodTemplate]:
    v = r.values
    out = [
        _system_style(r, "operator", "Deployment", "operator", resources=value_at(v, "operator.resources"))
    ]
    tolerations = value_at(
        v, "daemonsets.tolerations", [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    )
    for key, component in GPU_OPERANDS.items():
        if value_at(v, f"{key}.enabled", True):
            pod = _chart_pod(
                r,
                component,
                "DaemonSet",
                tolerations=tolerations,
                node_selector={"nvidia.com/gpu.present": "true"},
                where=key,
            )
            out.append(pod)
    return out  # fmt: skip


def _nfd(r: ChartRelease) -> list[PodTemplate]:
    v = r.values
    out = [_system_style(r, "master", "Deployment", "master")]
    if value_at(v, "gc.enable", True):
        out.append(
            _system_style(r, "gc", "Deployment", "gc", replicas=int(value_at(v, "gc.replicaCount", 1)))
        )
    out.append(
        _chart_pod(
            r, "worker", "DaemonSet", tolerations=value_at(v, "worker.tolerations", []), where="worker"
        )
    )
    return out


def _load_balancer_controller(r: ChartRelease) -> list[PodTemplate]:
    v = r.values
    return [
        _system_style(
            r, "controller", "Deployment", "",
            replicas=int(value_at(v, "replicaCount", 2)), resources=value_at(v, "resources"),
            spread=value_at(v, "topologySpreadConstraints", []),
        )
    ]  # fmt: skip


def _fsx_csi(r: ChartRelease) -> list[PodTemplate]:
    v = r.values
    default_tolerations = [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"effect": "NoExecute", "operator": "Exists"},
    ]
    node_tolerations = (
        [{"operator": "Exists"}]
        if value_at(v, "node.tolerateAllTaints", True)
        else value_at(v, "node.tolerations", [])
    )
    return [
        _chart_pod(
            r, "controller", "Deployment", replicas=int(value_at(v, "controller.replicaCount", 2)),
            resources=value_at(v, "controller.resources", {"requests": CHART_DEFAULTS["aws-fsx-csi-driver"].as_dict()}),
            node_selector=value_at(v, "controller.nodeSelector", {}),
            tolerations=value_at(v, "controller.tolerations", default_tolerations), where="controller",
        ),
        _chart_pod(
            r, "node", "DaemonSet", tolerations=node_tolerations,
            resources=value_at(v, "node.resources", {"requests": CHART_DEFAULTS["aws-fsx-csi-driver"].as_dict()}),
            where="node",
        ),
    ]  # fmt: skip


def _envoy_gateway(r: ChartRelease) -> list[PodTemplate]:
    """gateway-helm v1.8.3: the Envoy Gateway controller (its Envoy proxies come from the EnvoyProxy object)."""
    v = r.values
    return [
        _chart_pod(
            r, "controller", "Deployment", replicas=int(value_at(v, "deployment.replicas", 1)),
            resources=value_at(v, "deployment.envoyGateway.resources", {"requests": CHART_DEFAULTS["gateway-helm"].as_dict()}),
            node_selector=value_at(v, "deployment.pod.nodeSelector", {}),
            tolerations=value_at(v, "deployment.pod.tolerations", []),
            affinity=value_at(v, "deployment.pod.affinity", {}),
            spread=value_at(v, "deployment.pod.topologySpreadConstraints", []), where="deployment.pod",
        ),
        *_rate_limit_service(r),
    ]  # fmt: skip


def _rate_limit_service(r: ChartRelease) -> list[PodTemplate]:
    """The global rate limit service Envoy Gateway runs once `config.envoyGateway.rateLimit` is set, from
    `provider.kubernetes.rateLimitDeployment` (EG v1.8.3 default: 1 replica)."""
    config = value_at(r.values, "config.envoyGateway", {})
    if not config.get("rateLimit"):
        return []
    d = "config.envoyGateway.provider.kubernetes.rateLimitDeployment"
    return [
        _chart_pod(
            r, "ratelimit", "Deployment", replicas=int(value_at(r.values, f"{d}.replicas", 1)),
            resources=value_at(r.values, f"{d}.container.resources", {}),
            node_selector=value_at(r.values, f"{d}.pod.nodeSelector", {}),
            tolerations=value_at(r.values, f"{d}.pod.tolerations", []),
            affinity=value_at(r.values, f"{d}.pod.affinity", {}), where=f"{d}.pod",
        )
    ]  # fmt: skip


def _ai_gateway(r: ChartRelease) -> list[PodTemplate]:
    """ai-gateway-helm v1.1.0: the AI Gateway controller (its ext_proc runs as a sidecar of the Envoy pods)."""
    return [
        _system_style(
            r, "controller", "Deployment", "controller",
            replicas=int(value_at(r.values, "controller.replicaCount", 1)), resources=value_at(r.values, "controller.resources"),
        )
    ]  # fmt: skip


def _endpoint_picker(r: ChartRelease) -> list[PodTemplate]:
    """llm-d-router-gateway v0.10.0: a model's endpoint picker (chart default 8 CPU / 8 GiB unless sized)."""
    epp = "router.epp"
    return [
        _chart_pod(
            r, "epp", "Deployment", replicas=int(value_at(r.values, f"{epp}.replicas", 1)),
            resources=value_at(r.values, f"{epp}.resources", {"requests": {"cpu": "8", "memory": "8Gi"}}),
            node_selector=value_at(r.values, f"{epp}.nodeSelector") or {},
            tolerations=value_at(r.values, f"{epp}.tolerations", []),
            affinity=value_at(r.values, f"{epp}.affinity", {}), where=epp,
        )
    ]  # fmt: skip


def _lws(r: ChartRelease) -> list[PodTemplate]:
    """The LeaderWorkerSet controller (lws v0.10.0 chart: `replicaCount`, `resources` 1 CPU / 1Gi)."""
    v = r.values
    resources = value_at(v, "resources", {"requests": CHART_DEFAULTS["lws"].as_dict()})
    return [
        _system_style(
            r,
            "controller",
            "Deployment",
            "",
            replicas=int(value_at(v, "replicaCount", 1)),
            resources=resources,
        )
    ]


def _argo_rollouts(r: ChartRelease) -> list[PodTemplate]:
    """The Argo Rollouts controller (argo-rollouts 2.41.0: `controller.replicas` 2, `controller.resources`
    unset, `controller.initContainers` beside it; the dashboard is off by default)."""
    v = r.values
    spec = {
        "containers": [{"resources": value_at(v, "controller.resources", {})}],
        "initContainers": value_at(v, "controller.initContainers", []),
        "nodeSelector": value_at(v, "controller.nodeSelector", {}),
        "tolerations": value_at(v, "controller.tolerations", []),
        "affinity": value_at(v, "controller.affinity", {}),
    }
    replicas = int(value_at(v, "controller.replicas", 2))
    owner = f"Helm release {r.name} (controller)"
    return [from_pod_spec(owner, "values.controller", "Deployment", replicas, spec, {})]


def _efa_device_plugin(r: ChartRelease) -> list[PodTemplate]:
    """The EFA device plugin DaemonSet (aws-efa-k8s-device-plugin v0.5.30: tolerates CriticalAddonsOnly plus
    `tolerations`, node affinity on `supportedInstanceLabels`, 10m / 20Mi)."""
    v = r.values
    keys = value_at(v, "supportedInstanceLabels.keys", ["node.kubernetes.io/instance-type"])
    values = value_at(v, "supportedInstanceLabels.values", [])
    terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": values}]} for k in keys]
    return [
        _chart_pod(
            r,
            "device plugin",
            "DaemonSet",
            resources=value_at(v, "resources", EFA_DEVICE_PLUGIN_RESOURCES),
            node_selector=value_at(v, "nodeSelector", {}),
            tolerations=[*CRITICAL_ADDONS, *value_at(v, "tolerations", [])],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            },
            where="",
        )
    ]


def _opencost(r: ChartRelease) -> list[PodTemplate]:
    """opencost 2.5.17: one Deployment (`opencost.exporter.replicas`) of the exporter, plus the UI container
    unless `opencost.ui.enabled: false`; chart defaults 10m / 55Mi and 10m / 55Mi."""
    v, base = r.values, "opencost"
    default = {"requests": {"cpu": "10m", "memory": "55Mi"}}
    containers = [{"resources": value_at(v, f"{base}.exporter.resources", default)}]
    if value_at(v, f"{base}.ui.enabled", True):
        containers.append({"resources": value_at(v, f"{base}.ui.resources", default)})
    spec = {
        "containers": containers,
        "nodeSelector": value_at(v, f"{base}.nodeSelector") or {},
        "tolerations": value_at(v, f"{base}.tolerations", []),
        "affinity": value_at(v, f"{base}.affinity", {}),
        "topologySpreadConstraints": value_at(v, f"{base}.topologySpreadConstraints", []),
    }
    owner = f"Helm release {r.name} (exporter)"
    replicas = int(value_at(v, f"{base}.exporter.replicas", 1))
    return [from_pod_spec(owner, f"values.{base}", "Deployment", replicas, spec, {})]
