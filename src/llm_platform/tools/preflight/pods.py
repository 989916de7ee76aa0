"""Every pod the stack will run, as a scheduling template: the program's own workloads from the render and
the pods of the Helm releases it configures.

A chart's pods are modelled from its templates and default values at the pinned version
(`shared/reference/chart-values/<chart>-<version>.values.yaml`), overlaid with the values the program sets:
replicas, requests, node selectors, tolerations, affinity and topology spread. A chart not modelled here is
reported, never silently passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llm_platform.facts import addons
from llm_platform.facts.addons import resolve_ref
from llm_platform.plan.addon_pods import CHART_DEFAULTS, RESOURCES, quantity
from llm_platform.plan.node_capacity import EFA_DEVICE_PLUGIN_RESOURCES
from llm_platform.tools.preflight.view import Release, RenderView


def requests_of(containers: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = dict.fromkeys(RESOURCES, 0)
    for c in containers:
        for resource, value in ((c.get("resources") or {}).get("requests") or {}).items():
            if resource in total:
                total[resource] += quantity(resource, value)
    return total


def pod_requests(spec: dict[str, Any]) -> dict[str, int]:
    """What the scheduler reserves for a pod: its containers plus its native sidecars (init containers with
    `restartPolicy: Always`, which run beside them), or an ordinary init container plus the sidecars started
    before it, whichever is larger (KEP-753; k8s.io/component-helpers resource.PodRequests, which the
    scheduler and Karpenter's own podRequests follow)."""
    sidecars: dict[str, int] = dict.fromkeys(RESOURCES, 0)
    peaks = []
    for c in spec.get("initContainers") or []:
        own = requests_of([c])
        if c.get("restartPolicy") == "Always":
            sidecars = {r: sidecars[r] + own[r] for r in RESOURCES}
        else:
            peaks.append({r: sidecars[r] + own[r] for r in RESOURCES})
    main = requests_of(spec.get("containers") or [])
    return {r: max([main[r] + sidecars[r], *(p[r] for p in peaks)]) for r in RESOURCES}


@dataclass
class PodTemplate:
    owner: str  # "Deployment model-x/x", "Helm release karpenter (controller)"
    where: str  # where its scheduling fields live
    kind: str  # Deployment | StatefulSet | DaemonSet | Job
    replicas: int  # the most the stack runs (a ScaledObject's maxReplicaCount)
    requests: dict[str, int]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    required_terms: list[list[dict[str, Any]]] = field(default_factory=list)
    spread: list[dict[str, Any]] = field(default_factory=list)
    hostname_anti_affinity: bool = False
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def daemon(self) -> bool:
        return self.kind == "DaemonSet"


def from_pod_spec(
    owner: str, where: str, kind: str, replicas: int, spec: dict[str, Any], labels: dict[str, str]
) -> PodTemplate:
    requests = pod_requests(spec)
    affinity = spec.get("affinity") or {}
    node_affinity = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = [t.get("matchExpressions") or [] for t in (node_affinity or {}).get("nodeSelectorTerms") or []]
    anti = (affinity.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return PodTemplate(
        owner=owner,
        where=where,
        kind=kind,
        replicas=replicas,
        requests=requests,
        node_selector=dict(spec.get("nodeSelector") or {}),
        tolerations=list(spec.get("tolerations") or []),
        required_terms=terms,
        spread=list(spec.get("topologySpreadConstraints") or []),
        hostname_anti_affinity=any(t.get("topologyKey") == "kubernetes.io/hostname" for t in anti),
        labels=labels,
    )


def _scaled_maximum(view: RenderView, namespace: str, name: str) -> int | None:
    for so in view.of_kind("ScaledObject"):
        target = so.body["spec"]["scaleTargetRef"]
        if so.namespace == namespace and target.get("name") == name:
            return int(so.body["spec"].get("maxReplicaCount", 100))
    return None


def leader_worker_pods(view: RenderView) -> list[PodTemplate]:
    """A LeaderWorkerSet's leaders (one per group, at the ScaledObject's maximum) and workers (size - 1 each)."""
    out = []
    for m in view.of_kind("LeaderWorkerSet"):
        lwt = m.body["spec"]["leaderWorkerTemplate"]
        groups = _scaled_maximum(view, m.namespace, m.name) or int(m.body["spec"].get("replicas", 1))
        size = int(lwt.get("size", 1))
        for role, replicas in (("leaderTemplate", groups), ("workerTemplate", groups * (size - 1))):
            template = lwt[role]
            labels = (template.get("metadata") or {}).get("labels") or {}
            where = f"spec.leaderWorkerTemplate.{role}.spec"
            out.append(
                from_pod_spec(f"{m.ref} ({role[:-8]})", where, m.kind, replicas, template["spec"], labels)
            )
    return out


def program_pods(view: RenderView) -> list[PodTemplate]:
    out = leader_worker_pods(view)
    for m in view.of_kind("Deployment", "StatefulSet", "DaemonSet", "Job"):
        spec = m.body["spec"]
        template = spec["template"]
        replicas = _scaled_maximum(view, m.namespace, m.name) or int(spec.get("replicas", 1))
        if m.kind == "Job":
            replicas = int(spec.get("parallelism", 1))
        labels = (template.get("metadata") or {}).get("labels") or {}
        out.append(from_pod_spec(m.ref, "spec.template.spec", m.kind, replicas, template["spec"], labels))
    return out + envoy_proxy_pods(view)


# ------------------------------------------------------------------------------------ Helm releases


def _get(values: dict[str, Any], path: str, default: Any = None) -> Any:
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _chart_pod(
    release: Release,
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


def _karpenter(r: Release) -> list[PodTemplate]:
    v = r.values
    return [
        _chart_pod(
            r,
            "controller",
            "Deployment",
            replicas=int(_get(v, "replicas", 2)),
            resources=_get(v, "controller.resources"),
            node_selector=_get(v, "nodeSelector", {"kubernetes.io/os": "linux"}),
            tolerations=_get(v, "tolerations", CRITICAL_ADDONS),
            affinity=_get(
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
            spread=_get(
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


def _system_style(r: Release, component: str, kind: str, base: str, **kwargs: Any) -> PodTemplate:
    v = r.values
    prefix = f"{base}." if base else ""
    return _chart_pod(
        r,
        component,
        kind,
        node_selector=_get(v, f"{prefix}nodeSelector", {}),
        tolerations=_get(v, f"{prefix}tolerations", []),
        where=base,
        **kwargs,
    )


def _kube_prometheus_stack(r: Release) -> list[PodTemplate]:
    v = r.values
    prom, am = "prometheus.prometheusSpec", "alertmanager.alertmanagerSpec"
    return [
        _system_style(
            r, "prometheus", "StatefulSet", prom,
            replicas=int(_get(v, f"{prom}.replicas", 1)), resources=_get(v, f"{prom}.resources"),
        ),
        _system_style(
            r, "alertmanager", "StatefulSet", am,
            replicas=int(_get(v, f"{am}.replicas", 1)), resources=_get(v, f"{am}.resources"),
        ),
        _system_style(r, "operator", "Deployment", "prometheusOperator", resources=_get(v, "prometheusOperator.resources")),
        _system_style(r, "grafana", "Deployment", "grafana", resources=_get(v, "grafana.resources")),
        _system_style(r, "kube-state-metrics", "Deployment", "kube-state-metrics"),
        # prometheus-node-exporter 4.56.1: tolerates every NoSchedule taint by default
        _chart_pod(
            r, "node-exporter", "DaemonSet",
            tolerations=_get(v, "prometheus-node-exporter.tolerations", [{"effect": "NoSchedule", "operator": "Exists"}]),
            where="prometheus-node-exporter",
        ),
    ]  # fmt: skip


def _keda(r: Release) -> list[PodTemplate]:
    defaults = {"requests": CHART_DEFAULTS["keda"].as_dict()}
    return [
        _system_style(r, component, "Deployment", "", resources=_get(r.values, f"resources.{key}", defaults))
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


def _gpu_operator(r: Release) -> list[PodTemplate]:
    v = r.values
    out = [_system_style(r, "operator", "Deployment", "operator", resources=_get(v, "operator.resources"))]
    tolerations = _get(
        v, "daemonsets.tolerations", [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    )
    for key, component in GPU_OPERANDS.items():
        if _get(v, f"{key}.enabled", True):
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


def _nfd(r: Release) -> list[PodTemplate]:
    v = r.values
    out = [_system_style(r, "master", "Deployment", "master")]
    if _get(v, "gc.enable", True):
        out.append(_system_style(r, "gc", "Deployment", "gc", replicas=int(_get(v, "gc.replicaCount", 1))))
    out.append(
        _chart_pod(r, "worker", "DaemonSet", tolerations=_get(v, "worker.tolerations", []), where="worker")
    )
    return out


def _load_balancer_controller(r: Release) -> list[PodTemplate]:
    v = r.values
    return [
        _system_style(
            r, "controller", "Deployment", "",
            replicas=int(_get(v, "replicaCount", 2)), resources=_get(v, "resources"),
            spread=_get(v, "topologySpreadConstraints", []),
        )
    ]  # fmt: skip


def _fsx_csi(r: Release) -> list[PodTemplate]:
    v = r.values
    default_tolerations = [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"effect": "NoExecute", "operator": "Exists"},
    ]
    node_tolerations = (
        [{"operator": "Exists"}]
        if _get(v, "node.tolerateAllTaints", True)
        else _get(v, "node.tolerations", [])
    )
    return [
        _chart_pod(
            r, "controller", "Deployment", replicas=int(_get(v, "controller.replicaCount", 2)),
            resources=_get(v, "controller.resources", {"requests": CHART_DEFAULTS["aws-fsx-csi-driver"].as_dict()}),
            node_selector=_get(v, "controller.nodeSelector", {}),
            tolerations=_get(v, "controller.tolerations", default_tolerations), where="controller",
        ),
        _chart_pod(
            r, "node", "DaemonSet", tolerations=node_tolerations,
            resources=_get(v, "node.resources", {"requests": CHART_DEFAULTS["aws-fsx-csi-driver"].as_dict()}),
            where="node",
        ),
    ]  # fmt: skip


def _envoy_gateway(r: Release) -> list[PodTemplate]:
    """gateway-helm v1.8.3: the Envoy Gateway controller (its Envoy proxies come from the EnvoyProxy object)."""
    v = r.values
    return [
        _chart_pod(
            r, "controller", "Deployment", replicas=int(_get(v, "deployment.replicas", 1)),
            resources=_get(v, "deployment.envoyGateway.resources", {"requests": CHART_DEFAULTS["gateway-helm"].as_dict()}),
            node_selector=_get(v, "deployment.pod.nodeSelector", {}),
            tolerations=_get(v, "deployment.pod.tolerations", []),
            affinity=_get(v, "deployment.pod.affinity", {}),
            spread=_get(v, "deployment.pod.topologySpreadConstraints", []), where="deployment.pod",
        ),
        *_rate_limit_service(r),
    ]  # fmt: skip


def _rate_limit_service(r: Release) -> list[PodTemplate]:
    """The global rate limit service Envoy Gateway runs once `config.envoyGateway.rateLimit` is set, from
    `provider.kubernetes.rateLimitDeployment` (EG v1.8.3 default: 1 replica)."""
    config = _get(r.values, "config.envoyGateway", {})
    if not config.get("rateLimit"):
        return []
    d = "config.envoyGateway.provider.kubernetes.rateLimitDeployment"
    return [
        _chart_pod(
            r, "ratelimit", "Deployment", replicas=int(_get(r.values, f"{d}.replicas", 1)),
            resources=_get(r.values, f"{d}.container.resources", {}),
            node_selector=_get(r.values, f"{d}.pod.nodeSelector", {}),
            tolerations=_get(r.values, f"{d}.pod.tolerations", []),
            affinity=_get(r.values, f"{d}.pod.affinity", {}), where=f"{d}.pod",
        )
    ]  # fmt: skip


def _ai_gateway(r: Release) -> list[PodTemplate]:
    """ai-gateway-helm v1.1.0: the AI Gateway controller (its ext_proc runs as a sidecar of the Envoy pods)."""
    return [
        _system_style(
            r, "controller", "Deployment", "controller",
            replicas=int(_get(r.values, "controller.replicaCount", 1)), resources=_get(r.values, "controller.resources"),
        )
    ]  # fmt: skip


def _endpoint_picker(r: Release) -> list[PodTemplate]:
    """llm-d-router-gateway v0.10.0: a model's endpoint picker (chart default 8 CPU / 8 GiB unless sized)."""
    epp = "router.epp"
    return [
        _chart_pod(
            r, "epp", "Deployment", replicas=int(_get(r.values, f"{epp}.replicas", 1)),
            resources=_get(r.values, f"{epp}.resources", {"requests": {"cpu": "8", "memory": "8Gi"}}),
            node_selector=_get(r.values, f"{epp}.nodeSelector") or {},
            tolerations=_get(r.values, f"{epp}.tolerations", []),
            affinity=_get(r.values, f"{epp}.affinity", {}), where=epp,
        )
    ]  # fmt: skip


def envoy_proxy_pods(view: RenderView) -> list[PodTemplate]:
    """The Envoy proxies Envoy Gateway creates from each EnvoyProxy object's Kubernetes provider settings."""
    out = []
    for proxy in view.of_kind("EnvoyProxy"):
        deployment = _get(proxy.body, "spec.provider.kubernetes.envoyDeployment", {}) or {}
        pod = dict(deployment.get("pod") or {})
        pod["containers"] = [deployment.get("container") or {}]
        where = "spec.provider.kubernetes.envoyDeployment"
        out.append(from_pod_spec(proxy.ref, where, "Deployment", int(deployment.get("replicas", 1)), pod, {}))
    return out


def _lws(r: Release) -> list[PodTemplate]:
    """The LeaderWorkerSet controller (lws v0.10.0 chart: `replicaCount`, `resources` 1 CPU / 1Gi)."""
    v = r.values
    resources = _get(v, "resources", {"requests": CHART_DEFAULTS["lws"].as_dict()})
    return [
        _system_style(
            r, "controller", "Deployment", "", replicas=int(_get(v, "replicaCount", 1)), resources=resources
        )
    ]


def _efa_device_plugin(r: Release) -> list[PodTemplate]:
    """The EFA device plugin DaemonSet (aws-efa-k8s-device-plugin v0.5.30: tolerates CriticalAddonsOnly plus
    `tolerations`, node affinity on `supportedInstanceLabels`, 10m / 20Mi)."""
    v = r.values
    keys = _get(v, "supportedInstanceLabels.keys", ["node.kubernetes.io/instance-type"])
    values = _get(v, "supportedInstanceLabels.values", [])
    terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": values}]} for k in keys]
    return [
        _chart_pod(
            r,
            "device plugin",
            "DaemonSet",
            resources=_get(v, "resources", EFA_DEVICE_PLUGIN_RESOURCES),
            node_selector=_get(v, "nodeSelector", {}),
            tolerations=[*CRITICAL_ADDONS, *_get(v, "tolerations", [])],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            },
            where="",
        )
    ]


def _opencost(r: Release) -> list[PodTemplate]:
    """opencost 2.5.17: one Deployment (`opencost.exporter.replicas`) of the exporter, plus the UI container
    unless `opencost.ui.enabled: false`; chart defaults 10m / 55Mi and 10m / 55Mi."""
    v, base = r.values, "opencost"
    default = {"requests": {"cpu": "10m", "memory": "55Mi"}}
    containers = [{"resources": _get(v, f"{base}.exporter.resources", default)}]
    if _get(v, f"{base}.ui.enabled", True):
        containers.append({"resources": _get(v, f"{base}.ui.resources", default)})
    spec = {
        "containers": containers,
        "nodeSelector": _get(v, f"{base}.nodeSelector") or {},
        "tolerations": _get(v, f"{base}.tolerations", []),
        "affinity": _get(v, f"{base}.affinity", {}),
        "topologySpreadConstraints": _get(v, f"{base}.topologySpreadConstraints", []),
    }
    owner = f"Helm release {r.name} (exporter)"
    replicas = int(_get(v, f"{base}.exporter.replicas", 1))
    return [from_pod_spec(owner, f"values.{base}", "Deployment", replicas, spec, {})]


def chart_models() -> dict[str, Callable[[Release], list[PodTemplate]] | None]:
    """Chart name -> the model of its release's pods (None: the chart runs no pods of its own, CRDs only), as
    the add-on records (llm_platform/facts/addons.py) name them; read anew on each call."""
    return {
        chart.name: resolve_ref(chart.pods) if chart.pods else None
        for record in addons.ADDONS
        for chart in record.charts
    }


def release_pods(view: RenderView) -> tuple[list[PodTemplate], list[str]]:
    """Pods of every modelled release, and the names of releases whose pods are not modelled."""
    pods: list[PodTemplate] = []
    unknown = []
    models = chart_models()
    for release in view.releases.values():
        if release.chart not in models:
            unknown.append(release.name)
            continue
        build = models[release.chart]
        if build is not None:
            pods += build(release)
    return pods, unknown
