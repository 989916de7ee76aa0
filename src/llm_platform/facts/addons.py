"""One record per Helm add-on: its charts (repository, pinned default version), namespace, the CRDs it provides,
where preflight's model of its pods and its values builder live, and what it must come after.

Everything that needs a fact about an add-on reads it here: the pins (`facts/versions.py` re-exports the
versions), the namespaces (`plan/naming.py`), the pod models of its charts (`plan/chart_pods.py`, which
preflight and the simulator's add-on pool read), preflight's CRD ordering table (`tools/preflight/ordering.py`),
the render validator's CRD files (`tools/validate_render.py`) and the components that install them; `LlmPlatform` installs every record without a component of its own
(`component=None`) from `ordered()`, after what its `after` names.

The record sits below the code it names: the pod model and values builder are references `module:function`
(entry-point style, resolved by `resolve_ref` when used), so this module imports nothing of the package and
any layer may read it. Adding an add-on: its record here, its values builder (`(Plan) -> dict`, importable
without the components: the simulator prices its pods with it), its pod model (`plan/chart_pods.py`), then the regenerated snapshots (URNs, the bundled CRDs with
`validate_render --download`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ADDONS",
    "Addon",
    "Chart",
    "CrdFile",
    "addon",
    "ordered",
    "record_installed",
    "resolve_ref",
    "version_of",
]


@dataclass(frozen=True)
class Chart:
    """One Helm chart of an add-on, as its release installs it."""

    release: str
    """The Helm release's name."""
    chart: str
    """The chart's name in `repo`, or its full `oci://` reference."""
    version: str
    """The pinned default version (a caller can override it: `version_of`)."""
    repo: str | None = None
    """The chart repository's URL (None: `chart` is an `oci://` reference)."""
    pods: str | None = None
    """`module:function` of preflight's model of the release's pods (`Release -> list[PodTemplate]`); None: the
    chart runs no pods of its own (CRDs only)."""
    crd_groups: tuple[str, ...] = ()
    """The API groups whose CRDs the chart installs (preflight's ordering check)."""

    @property
    def name(self) -> str:
        """The chart's own name, as preflight reads it from a release (the last part of an `oci://` reference)."""
        return self.chart.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class CrdFile:
    """One CRD file in its upstream repository at a pinned tag, and the sha256 of its bytes there (the render
    validator checks the objects of `kind` against it)."""

    repo: str
    tag: str
    path: str
    kind: str
    sha256: str


@dataclass(frozen=True)
class Addon:
    """One Helm add-on of the platform."""

    name: str
    """Its key: what `after` and a caller's version overrides name."""
    namespace: str
    charts: tuple[Chart, ...]
    crd_files: tuple[CrdFile, ...] = ()
    """The CRD files the render validator checks the platform's custom objects against."""
    after: tuple[str, ...] = ()
    """The add-ons it must be installed after (their CRDs, or the API it probes at install time)."""
    values: str | None = None
    """`module:function` of its values builder (`(Plan) -> dict`), for an add-on without a component."""
    component: str | None = None
    """The component that installs it (`module:Class`); None: `LlmPlatform` installs it itself."""
    pod_security: str = "restricted"
    """Pod Security level of its namespace (when `LlmPlatform` creates it)."""
    enabled: str | None = None
    """`module:function` `(Plan) -> bool`: whether the stack runs it (None: always)."""

    @property
    def chart(self) -> Chart:
        """Its main chart: the last one (CRD charts come first)."""
        return self.charts[-1]

    @property
    def version(self) -> str:
        return self.chart.version

    @property
    def crd_groups(self) -> tuple[str, ...]:
        """The API groups whose CRDs its charts install."""
        return tuple(dict.fromkeys(g for c in self.charts for g in c.crd_groups))


def resolve_ref(ref: str) -> Any:
    """The object a `module:attribute` reference names."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _gh(repo: str, tag: str, folder: str, files: dict[str, tuple[str, str]]) -> tuple[CrdFile, ...]:
    return tuple(
        CrdFile(repo, tag, f"{folder}/{name}.yaml", kind, sha) for name, (kind, sha) in files.items()
    )


def _tag(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


_PODS = "llm_platform.plan.chart_pods"
_KARPENTER_API = ("karpenter.sh", "karpenter.k8s.aws")
_GATEWAY_API = ("gateway.networking.k8s.io", "gateway.envoyproxy.io")
_INFERENCE_API = ("inference.networking.k8s.io", "inference.networking.x-k8s.io")

KARPENTER_VERSION = "1.14.1"
KEDA_VERSION = "2.20.2"
KUBE_PROMETHEUS_STACK_VERSION = "88.5.3"
PROMETHEUS_OPERATOR_VERSION = "v0.93.1"  # the operator (and CRDs) kube-prometheus-stack 88.5.3 ships
GATEWAY_API_VERSION = "v1.5.1"  # installed by gateway-crds-helm (crds.gatewayAPI.channel=standard)
ENVOY_GATEWAY_VERSION = "v1.8.3"  # charts gateway-crds-helm and gateway-helm
ENVOY_AI_GATEWAY_VERSION = "v1.1.0"  # charts ai-gateway-crds-helm and ai-gateway-helm
GATEWAY_API_INFERENCE_EXTENSION_VERSION = "v1.6.0"  # the InferencePool CRD (inference.networking.k8s.io/v1)
LLM_D_ROUTER_VERSION = "v0.10.0"  # chart llm-d-router-gateway and the EPP image (facts/versions.py)
LWS_VERSION = "0.10.0"
# Progressive rollouts (models[].rollout): Argo Rollouts with its Gateway API traffic-router plugin. Chosen over
# Flagger because only the plugin can shift weights between InferencePool backendRefs: it finds the HTTPRoute's
# backendRefs by name alone and sets their weights in place, whatever their kind
# (argoproj-labs/rollouts-plugin-trafficrouter-gatewayapi pkg/plugin/httproute.go@v0.15.0 setHTTPRouteWeight:
# `switch string(...BackendRefs[j].Name) { case canaryServiceName ... case stableServiceName ...}`), while
# Flagger's gatewayapi router writes the whole HTTPRoute itself with `kind: Service` backendRefs
# (fluxcd/flagger pkg/router/gateway_api.go@v1.44.0: `backendRefKind = "Service"`, makeBackendRef), which would
# send the traffic around the endpoint picker. docs/rollouts.md has the rest.
ARGO_ROLLOUTS_CHART_VERSION = "2.41.0"  # argoproj/argo-helm charts/argo-rollouts: appVersion v1.9.0
ARGO_ROLLOUTS_VERSION = "v1.9.0"  # the controller (and CRDs) chart 2.41.0 ships

KARPENTER = Addon(
    name="karpenter",
    namespace="karpenter",
    charts=(
        Chart("karpenter-crd", "oci://public.ecr.aws/karpenter/karpenter-crd", KARPENTER_VERSION, crd_groups=_KARPENTER_API),
        Chart("karpenter", "oci://public.ecr.aws/karpenter/karpenter", KARPENTER_VERSION, pods=f"{_PODS}:_karpenter",
              crd_groups=_KARPENTER_API),
    ),
    crd_files=_gh("aws/karpenter-provider-aws", _tag(KARPENTER_VERSION), "pkg/apis/crds", {
        "karpenter.sh_nodepools": ("NodePool", "3bb64a20c80776b77aa19a699ebdaf34480a7b2e7ec4ef890b43225b3517f878"),
        "karpenter.k8s.aws_ec2nodeclasses": ("EC2NodeClass", "62dec59f01c0972d4503ca3ed25f243ba9c2f561be0d964ce7a14c8df406132f"),
    }),
    component="llm_platform.components.karpenter:Karpenter",
)  # fmt: skip
KUBE_PROMETHEUS_STACK = Addon(
    name="kube-prometheus-stack",
    namespace="monitoring",  # also Grafana, the platform's rules and dashboards
    charts=(
        Chart("kube-prometheus-stack", "kube-prometheus-stack", KUBE_PROMETHEUS_STACK_VERSION,
              "https://prometheus-community.github.io/helm-charts", pods=f"{_PODS}:_kube_prometheus_stack",
              crd_groups=("monitoring.coreos.com",)),
    ),
    crd_files=_gh("prometheus-operator/prometheus-operator", PROMETHEUS_OPERATOR_VERSION, "example/prometheus-operator-crd", {
        "monitoring.coreos.com_servicemonitors": ("ServiceMonitor", "7dd4206947c94bc76f71daa07c45a1010a5d697c54fe079f8207b0e82026a26a"),
        "monitoring.coreos.com_podmonitors": ("PodMonitor", "eef45bb50df838a85226eb6b03c0c7094c54d605776bdf2ec149f17fba8a1df0"),
        "monitoring.coreos.com_prometheusrules": ("PrometheusRule", "2d72928f7ceb99d153f2f91d2c2fd68d4b89c4914f2a09e15ac049b2f0316df3"),
    }),
    after=("karpenter",),  # it runs on the add-on nodes Karpenter launches
    component="llm_platform.components.observability:Observability",
    pod_security="privileged",  # node-exporter uses the host's namespaces
)  # fmt: skip
KEDA = Addon(
    name="keda",
    namespace="keda",
    charts=(
        Chart("keda", "keda", KEDA_VERSION, "https://kedacore.github.io/charts", pods=f"{_PODS}:_keda",
              crd_groups=("keda.sh",)),
    ),
    crd_files=_gh("kedacore/keda", _tag(KEDA_VERSION), "config/crd/bases", {
        "keda.sh_scaledobjects": ("ScaledObject", "af35555862a83933b074af14ad439c4b4ceabaf4daa3e9338e9b23e36d308d80"),
        "keda.sh_triggerauthentications": ("TriggerAuthentication", "275307b4cb19ca8f0f506a879282aa4c67587ac16ec757f494d6585c5c185d65"),
    }),
    after=("kube-prometheus-stack",),  # its ServiceMonitors render only when the API exists
    component="llm_platform.components.keda:Keda",
)  # fmt: skip
GPU_OPERATOR = Addon(
    name="gpu-operator",
    namespace="gpu-operator",
    charts=(
        # the Node Feature Discovery version the GPU Operator chart bundles, deployed as its own release
        Chart("node-feature-discovery", "node-feature-discovery", "0.19.0",
              "https://kubernetes-sigs.github.io/node-feature-discovery/charts", pods=f"{_PODS}:_nfd"),
        Chart("gpu-operator", "gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia",
              pods=f"{_PODS}:_gpu_operator"),
    ),
    after=("kube-prometheus-stack",),  # the DCGM exporter's ServiceMonitor
    component="llm_platform.components.gpu_operator:GpuOperator",
    pod_security="privileged",  # operands mount host paths
)  # fmt: skip
AWS_LOAD_BALANCER_CONTROLLER = Addon(
    name="aws-load-balancer-controller",
    namespace="kube-system",
    charts=(
        Chart("aws-load-balancer-controller", "aws-load-balancer-controller", "1.17.0",
              "https://aws.github.io/eks-charts", pods=f"{_PODS}:_load_balancer_controller",
              crd_groups=("elbv2.k8s.aws",)),
    ),
    after=("karpenter",),
    component="llm_platform.components.load_balancer:LoadBalancerController",
)  # fmt: skip
FSX_CSI_DRIVER = Addon(
    name="aws-fsx-csi-driver",
    namespace="kube-system",
    charts=(
        Chart("aws-fsx-csi-driver", "aws-fsx-csi-driver", "1.17.0",
              "https://kubernetes-sigs.github.io/aws-fsx-csi-driver", pods=f"{_PODS}:_fsx_csi"),
    ),
    after=("karpenter",),
    component="llm_platform.components.model_cache:ModelCache",
)  # fmt: skip
_ENVOY = "oci://docker.io/envoyproxy"
ENVOY_GATEWAY = Addon(
    name="envoy-gateway",
    namespace="llm-gateway",  # Envoy Gateway's controller, the Envoy proxies, the Gateway and its policies
    charts=(
        Chart("gateway-crds-helm", f"{_ENVOY}/gateway-crds-helm", ENVOY_GATEWAY_VERSION,
              crd_groups=(*_GATEWAY_API, *_INFERENCE_API)),
        Chart("gateway-helm", f"{_ENVOY}/gateway-helm", ENVOY_GATEWAY_VERSION, pods=f"{_PODS}:_envoy_gateway",
              crd_groups=_GATEWAY_API),
    ),
    crd_files=(
        *_gh("kubernetes-sigs/gateway-api", GATEWAY_API_VERSION, "config/crd/standard", {
            "gateway.networking.k8s.io_gatewayclasses": ("GatewayClass", "234ad4b2757ee1b3596a4187bb98df071c5bbdd9e1806f692f2dbf8387e6bef4"),
            "gateway.networking.k8s.io_gateways": ("Gateway", "7416e8300eb4d8c0a71a23445609075bbacbe8bc80104584b019cfe1ebe77c31"),
            "gateway.networking.k8s.io_httproutes": ("HTTPRoute", "682203b109baecb18d38073a578f7bc2c17d22fe9b0c27bf030850abe014c370"),
            "gateway.networking.k8s.io_referencegrants": ("ReferenceGrant", "a8902c486eed0b7339f5bb8a476ccaba0918eb038048402bdc01cbb69b0fbb51"),
        }),
        *_gh("kubernetes-sigs/gateway-api-inference-extension", GATEWAY_API_INFERENCE_EXTENSION_VERSION, "config/crd/bases", {
            "inference.networking.k8s.io_inferencepools": ("InferencePool", "55e0dbf39c50c4bbdd60106493a4573df4bb44479f9ce46762f1af718883e5cd"),
        }),
        *_gh("envoyproxy/gateway", ENVOY_GATEWAY_VERSION, "charts/gateway-helm/charts/crds/crds/generated", {
            "gateway.envoyproxy.io_backendtrafficpolicies": ("BackendTrafficPolicy", "3b285efcb7d8f9c292f386528d83a61bd719d992a67f9c48a848353f10655e66"),
            "gateway.envoyproxy.io_clienttrafficpolicies": ("ClientTrafficPolicy", "5322c533fd33282cce6eba9405331477872a06fafebaac20026bb6d08ff4a291"),
            "gateway.envoyproxy.io_envoyproxies": ("EnvoyProxy", "a1efb63b00659fe8dae385236deb20a29619b5537a9552b60940dc6425924a2e"),
            "gateway.envoyproxy.io_httproutefilters": ("HTTPRouteFilter", "ebba11783da910e78829941deeb3c6701ba95b4cddb9f595382c71793546efca"),
            "gateway.envoyproxy.io_securitypolicies": ("SecurityPolicy", "f156487aeb871a5f946d10153de0676b1e69a2b42be7a1259e2619a75adc4951"),
        }),
    ),
    after=("kube-prometheus-stack", "aws-load-balancer-controller"),
    component="llm_platform.components.gateway:Gateway",
)  # fmt: skip
AI_GATEWAY = Addon(
    name="ai-gateway",
    namespace="envoy-ai-gateway-system",  # the Envoy AI Gateway controller
    charts=(
        Chart("ai-gateway-crds-helm", f"{_ENVOY}/ai-gateway-crds-helm", ENVOY_AI_GATEWAY_VERSION,
              crd_groups=("aigateway.envoyproxy.io",)),
        Chart("ai-gateway-helm", f"{_ENVOY}/ai-gateway-helm", ENVOY_AI_GATEWAY_VERSION, pods=f"{_PODS}:_ai_gateway"),
    ),
    crd_files=_gh("envoyproxy/ai-gateway", ENVOY_AI_GATEWAY_VERSION, "manifests/charts/ai-gateway-crds-helm/templates", {
        "aigateway.envoyproxy.io_aigatewayroutes": ("AIGatewayRoute", "c6ca0a06b214d93f1c7eefe8f9735fa551f23948088e0bf3c317b792ad68f162"),
    }),
    after=("envoy-gateway",),
    component="llm_platform.components.gateway:Gateway",
)  # fmt: skip
ENDPOINT_PICKER = Addon(
    name="llm-d-router",
    namespace="llm-gateway",  # one release per model, in the gateway's namespace
    charts=(
        Chart("llm-d-router-gateway", "oci://ghcr.io/llm-d/charts/llm-d-router-gateway", LLM_D_ROUTER_VERSION,
              # the chart can install the InferencePool CRD itself (preflight accepts it as a provider)
              pods=f"{_PODS}:_endpoint_picker", crd_groups=_INFERENCE_API),
    ),
    after=("envoy-gateway", "ai-gateway"),
    component="llm_platform.components.gateway:Gateway",
)  # fmt: skip
OPENCOST = Addon(
    name="opencost",
    namespace="monitoring",  # beside the Prometheus it reads
    charts=(
        # opencost/opencost-helm-chart charts/opencost, chart 2.5.17 = app and image 1.120.1
        Chart("opencost", "opencost", "2.5.17", "https://opencost.github.io/opencost-helm-chart",
              pods=f"{_PODS}:_opencost"),
    ),
    after=("kube-prometheus-stack",),
    component="llm_platform.components.costs:CostAllocation",
)  # fmt: skip
LWS = Addon(
    name="lws",
    namespace="lws-system",  # the chart's documented namespace (lws v0.10.0 installation docs)
    charts=(
        Chart("lws", "oci://registry.k8s.io/lws/charts/lws", LWS_VERSION, pods=f"{_PODS}:_lws",
              crd_groups=("leaderworkerset.x-k8s.io",)),
    ),
    # multi-node replicas (the LWS chart's own CRD, what `helm install` applies)
    crd_files=_gh("kubernetes-sigs/lws", _tag(LWS_VERSION), "charts/lws/crds", {
        "leaderworkerset.x-k8s.io_leaderworkersets": ("LeaderWorkerSet", "4c5518df96ae0456ff66ec3d4337f5419aa42daae5b15c68878b85a2aee8556e"),
    }),
    after=("karpenter",),
    component="llm_platform.components.multinode:MultiNodeControllers",
    pod_security="baseline",
)  # fmt: skip
EFA_DEVICE_PLUGIN = Addon(
    name="aws-efa-k8s-device-plugin",
    namespace="kube-system",  # a node-critical DaemonSet like the VPC CNI
    charts=(
        Chart("aws-efa-k8s-device-plugin", "aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts",
              pods=f"{_PODS}:_efa_device_plugin"),
    ),
    component="llm_platform.components.multinode:MultiNodeControllers",
)  # fmt: skip

ARGO_ROLLOUTS = Addon(
    name="argo-rollouts",
    namespace="argo-rollouts",  # the namespace the plugin's docs and the chart's examples use
    charts=(
        Chart("argo-rollouts", "argo-rollouts", ARGO_ROLLOUTS_CHART_VERSION, "https://argoproj.github.io/argo-helm",
              pods=f"{_PODS}:_argo_rollouts", crd_groups=("argoproj.io",)),
    ),
    # the chart's own CRD templates are these files (charts/argo-rollouts/templates/crds, installCRDs: true)
    crd_files=_gh("argoproj/argo-rollouts", ARGO_ROLLOUTS_VERSION, "manifests/crds", {
        "rollout-crd": ("Rollout", "d79c0dab9bb386b1c9329fb69cf0d843fff2152b3f7916839755c1aabc7387f5"),
        "analysis-template-crd": ("AnalysisTemplate", "96a871705477bb8876f91630789ce753c8291f0ff5457a8cbc781ff150522369"),
    }),
    after=("kube-prometheus-stack", "envoy-gateway"),  # its ServiceMonitor; the HTTPRoutes its plugin edits
    values="llm_platform.plan.rollout:controller_values",
    enabled="llm_platform.plan.rollout:any_rollout",
)  # fmt: skip

ADDONS: tuple[Addon, ...] = (
    KARPENTER,
    KUBE_PROMETHEUS_STACK,
    KEDA,
    GPU_OPERATOR,
    AWS_LOAD_BALANCER_CONTROLLER,
    FSX_CSI_DRIVER,
    ENVOY_GATEWAY,
    AI_GATEWAY,
    ENDPOINT_PICKER,
    OPENCOST,
    LWS,
    EFA_DEVICE_PLUGIN,
    ARGO_ROLLOUTS,
)
"""Every add-on of the platform; a new one is a new record here (`LlmPlatform` reads this tuple each time)."""


def addon(name: str, records: Iterable[Addon] | None = None) -> Addon:
    """The record called `name`; an unknown name lists the known ones."""
    found = {a.name: a for a in (ADDONS if records is None else records)}
    if name not in found:
        raise KeyError(f"no add-on {name!r}; add-ons: {', '.join(sorted(found))}")
    return found[name]


def ordered(records: Iterable[Addon] | None = None) -> list[Addon]:
    """The records with every add-on after those its `after` names (among `records`), otherwise in their
    order; a cycle is an error that names it."""
    pending = list(ADDONS if records is None else records)
    known = {a.name for a in pending}
    done: list[Addon] = []
    placed: set[str] = set()
    while pending:
        ready = [a for a in pending if all(d in placed or d not in known for d in a.after)]
        if not ready:
            raise ValueError(f"add-ons {', '.join(a.name for a in pending)}: their `after` form a cycle")
        done.append(ready[0])
        placed.add(ready[0].name)
        pending.remove(ready[0])
    return done


def record_installed(plan: Any) -> list[Addon]:
    """The records without a component of their own that the stack's plan runs, in `ordered()`'s order: what
    `LlmPlatform` installs from the record alone and what the plan's add-on pool model prices from it."""
    return [r for r in ordered() if r.component is None and (not r.enabled or resolve_ref(r.enabled)(plan))]


def version_of(record: Addon, chart: Chart, overrides: Mapping[str, str] | None = None) -> str:
    """The version to install of one of the record's charts: the caller's override of the add-on (by its
    name) for its main chart and every chart released with it (pinned at the main chart's version: a CRD
    chart such as `karpenter-crd`, which must match its controller), else the pin (a chart versioned on its
    own, such as the GPU Operator's Node Feature Discovery). A caller pinning a chart elsewhere owns its CRD
    files' match."""
    if overrides and record.name in overrides and chart.version == record.chart.version:
        return overrides[record.name]
    return chart.version
