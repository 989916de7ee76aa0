"""GPU Operator: device plugin, GPU feature discovery and DCGM metrics on every GPU node."""

from collections.abc import Mapping
from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import gpu_operator as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.facts.addons import GPU_OPERATOR, version_of
from llm_platform.plan.naming import GPU_OPERATOR_NAMESPACE


class GpuOperatorArgs(TypedDict):
    """The NVIDIA GPU Operator with Node Feature Discovery."""

    mig_in_use: bool
    """A GPU pool partitions its GPUs with MIG: the operator's MIG manager runs."""


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU Operator's namespace and chart (device plugin, DCGM exporter, node feature discovery).

    Its pods run on the add-on nodes (a cluster prerequisite): nodes labelled `llm-platform/node-role: addons` and
    tainted `llm-platform/addons: true` (NoSchedule), which LlmPlatform's AddonNodePool makes; on a cluster you
    run, label and taint a node group so."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        args: GpuOperatorArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`versions`: chart versions by add-on name (`llm_platform.facts.addons`) in place of the pinned ones
        (`LlmPlatform` passes its `addon_versions`)."""
        nfd_chart, operator_chart = GPU_OPERATOR.charts
        super().__init__(
            "llm-platform:index:GpuOperator", name, None, typed_options(opts, "llm-platform:gpu:GpuOperator")
        )
        # operands mount host paths and need privileged pods
        namespace = apply_manifest(
            f"{name}-ns", namespace_manifest(GPU_OPERATOR_NAMESPACE, "privileged"), child_options(self, opts)
        )
        nfd = k8s.helm.v3.Release(
            f"{name}-nfd",
            name="node-feature-discovery",
            chart="node-feature-discovery",
            version=version_of(GPU_OPERATOR, nfd_chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=nfd_chart.repo),
            namespace=GPU_OPERATOR_NAMESPACE,
            values=spec.nfd_values(),
            opts=child_options(self, opts, namespace),
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="gpu-operator",
            chart="gpu-operator",
            version=version_of(GPU_OPERATOR, operator_chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=operator_chart.repo),
            namespace=GPU_OPERATOR_NAMESPACE,
            values=spec.helm_values(mig_in_use=args["mig_in_use"]),
            # operand DaemonSets only become ready once a GPU node exists; don't block `pulumi up` on them
            skip_await=True,
            opts=child_options(self, opts, namespace, nfd),
        )
        self.register_outputs({"release": self.release.name})
