"""llm-platform: serve LLMs on AWS EKS with vLLM, Karpenter GPU pools and KEDA on vLLM's own metrics.

The public API is what `__all__` names: the top-level component `LlmPlatform` (its args are the stack file's
schema), the components it composes with their args, the config error and the resolved plan they read.
Modules whose names start with an underscore, and everything under `components.specs`, `tools` and
`simulator` not named here, are internal: they change without notice.

Names are imported on first use, so `python -m llm_platform.simulator` does not load the cloud SDKs.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_platform.components.autoscaling import ModelAutoscaling, ModelAutoscalingArgs
    from llm_platform.components.cluster import (
        EksCluster,
        EksClusterArgs,
        ExistingCluster,
        ExistingClusterArgs,
    )
    from llm_platform.components.gateway import Gateway, GatewayArgs
    from llm_platform.components.gpu_operator import GpuOperator, GpuOperatorArgs
    from llm_platform.components.headroom import GpuHeadroom, GpuHeadroomArgs
    from llm_platform.components.inference import InferenceService, InferenceServiceArgs
    from llm_platform.components.karpenter import GpuNodePools, GpuNodePoolsArgs, Karpenter, KarpenterArgs
    from llm_platform.components.keda import Keda, KedaArgs
    from llm_platform.components.load_balancer import LoadBalancerController, LoadBalancerControllerArgs
    from llm_platform.components.model_cache import FsxVolume, ModelCache, ModelCacheArgs, ModelWeights
    from llm_platform.components.network import Network, NetworkArgs
    from llm_platform.components.observability import Observability, ObservabilityArgs
    from llm_platform.config.errors import ConfigError
    from llm_platform.config.stack_args import (
        AlertingSettings,
        AmiVersionsSettings,
        ClusterSettings,
        GatewaySettings,
        GpuNodePoolSettings,
        ModelCacheSettings,
        ModelSettings,
    )
    from llm_platform.plan import Plan, resolve
    from llm_platform.platform import LlmPlatform, LlmPlatformArgs, platform_args

# public name -> the module that defines it
_EXPORTS = {
    "LlmPlatform": "llm_platform.platform",
    "LlmPlatformArgs": "llm_platform.platform",
    "platform_args": "llm_platform.platform",
    "ConfigError": "llm_platform.config.errors",
    "AlertingSettings": "llm_platform.config.stack_args",
    "AmiVersionsSettings": "llm_platform.config.stack_args",
    "ClusterSettings": "llm_platform.config.stack_args",
    "GatewaySettings": "llm_platform.config.stack_args",
    "GpuNodePoolSettings": "llm_platform.config.stack_args",
    "ModelCacheSettings": "llm_platform.config.stack_args",
    "ModelSettings": "llm_platform.config.stack_args",
    "Plan": "llm_platform.plan",
    "resolve": "llm_platform.plan",
    "Network": "llm_platform.components.network",
    "NetworkArgs": "llm_platform.components.network",
    "EksCluster": "llm_platform.components.cluster",
    "EksClusterArgs": "llm_platform.components.cluster",
    "ExistingCluster": "llm_platform.components.cluster",
    "ExistingClusterArgs": "llm_platform.components.cluster",
    "Karpenter": "llm_platform.components.karpenter",
    "KarpenterArgs": "llm_platform.components.karpenter",
    "GpuNodePools": "llm_platform.components.karpenter",
    "GpuNodePoolsArgs": "llm_platform.components.karpenter",
    "GpuOperator": "llm_platform.components.gpu_operator",
    "GpuOperatorArgs": "llm_platform.components.gpu_operator",
    "Observability": "llm_platform.components.observability",
    "ObservabilityArgs": "llm_platform.components.observability",
    "Keda": "llm_platform.components.keda",
    "KedaArgs": "llm_platform.components.keda",
    "ModelCache": "llm_platform.components.model_cache",
    "ModelCacheArgs": "llm_platform.components.model_cache",
    "ModelWeights": "llm_platform.components.model_cache",
    "FsxVolume": "llm_platform.components.model_cache",
    "GpuHeadroom": "llm_platform.components.headroom",
    "GpuHeadroomArgs": "llm_platform.components.headroom",
    "InferenceService": "llm_platform.components.inference",
    "InferenceServiceArgs": "llm_platform.components.inference",
    "ModelAutoscaling": "llm_platform.components.autoscaling",
    "ModelAutoscalingArgs": "llm_platform.components.autoscaling",
    "Gateway": "llm_platform.components.gateway",
    "GatewayArgs": "llm_platform.components.gateway",
    "LoadBalancerController": "llm_platform.components.load_balancer",
    "LoadBalancerControllerArgs": "llm_platform.components.load_balancer",
}

__all__ = [
    "AlertingSettings",
    "AmiVersionsSettings",
    "ClusterSettings",
    "ConfigError",
    "EksCluster",
    "EksClusterArgs",
    "ExistingCluster",
    "ExistingClusterArgs",
    "FsxVolume",
    "Gateway",
    "GatewayArgs",
    "GatewaySettings",
    "GpuHeadroom",
    "GpuHeadroomArgs",
    "GpuNodePoolSettings",
    "GpuNodePools",
    "GpuNodePoolsArgs",
    "GpuOperator",
    "GpuOperatorArgs",
    "InferenceService",
    "InferenceServiceArgs",
    "Karpenter",
    "KarpenterArgs",
    "Keda",
    "KedaArgs",
    "LlmPlatform",
    "LlmPlatformArgs",
    "LoadBalancerController",
    "LoadBalancerControllerArgs",
    "ModelAutoscaling",
    "ModelAutoscalingArgs",
    "ModelCache",
    "ModelCacheArgs",
    "ModelCacheSettings",
    "ModelSettings",
    "ModelWeights",
    "Network",
    "NetworkArgs",
    "Observability",
    "ObservabilityArgs",
    "Plan",
    "__version__",
    "platform_args",
    "resolve",
]

try:
    __version__ = version("llm-platform")
except PackageNotFoundError:  # run from a source tree that is not installed
    __version__ = "0.0.0"


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'llm_platform' has no attribute {name!r}")
