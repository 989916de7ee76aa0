"""KEDA: turns each model's ScaledObject into an HPA fed by Prometheus queries."""

from collections.abc import Mapping
from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import keda as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.facts.addons import KEDA, version_of
from llm_platform.plan.naming import KEDA_NAMESPACE


class KedaArgs(TypedDict):
    """KEDA takes no settings (`KedaArgs()`): its version is its record's pin (facts/addons.py), its namespace is
    the platform's (`keda`), it runs on the add-on nodes and Prometheus scrapes it (ServiceMonitors)."""


class Keda(pulumi.ComponentResource):
    """The `keda` namespace and the KEDA chart (operator, metrics API server, admission webhooks).

    Its pods run on the add-on nodes (a cluster prerequisite): nodes labelled `llm-platform/node-role: addons` and
    tainted `llm-platform/addons: true` (NoSchedule), which LlmPlatform's AddonNodePool makes; on a cluster you
    run, label and taint a node group so."""

    release: k8s.helm.v3.Release
    """KEDA's Helm release: its CRDs (ScaledObject) exist once it is up."""

    def __init__(
        self,
        name: str,
        args: KedaArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`versions`: chart versions by add-on name (`llm_platform.facts.addons`) in place of the pinned ones
        (`LlmPlatform` passes its `addon_versions`)."""
        super().__init__(
            "llm-platform:index:Keda", name, None, typed_options(opts, "llm-platform:autoscaling:Keda")
        )
        namespace = apply_manifest(
            f"{name}-ns", namespace_manifest(KEDA_NAMESPACE, "restricted"), child_options(self, opts)
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="keda",
            chart="keda",
            version=version_of(KEDA, KEDA.chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=KEDA.chart.repo),
            namespace=KEDA_NAMESPACE,
            values=spec.helm_values(),
            opts=child_options(self, opts, namespace),
        )
        self.register_outputs({"release": self.release.name})
