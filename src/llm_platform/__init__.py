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

if TYPE_CHECKING:  # the public names for type checkers (`X as X`: re-exported, PEP 484)
    from llm_platform.components.autoscaling import (
        ModelAutoscaling as ModelAutoscaling,
    )
    from llm_platform.components.autoscaling import (
        ModelAutoscalingArgs as ModelAutoscalingArgs,
    )
    from llm_platform.components.cluster import (
        EksCluster as EksCluster,
    )
    from llm_platform.components.cluster import (
        EksClusterArgs as EksClusterArgs,
    )
    from llm_platform.components.cluster import (
        ExistingCluster as ExistingCluster,
    )
    from llm_platform.components.cluster import (
        ExistingClusterArgs as ExistingClusterArgs,
    )
    from llm_platform.components.gateway import (
        Gateway as Gateway,
    )
    from llm_platform.components.gateway import (
        GatewayArgs as GatewayArgs,
    )
    from llm_platform.components.gateway_routes import (
        GatewayRoutes as GatewayRoutes,
    )
    from llm_platform.components.gateway_routes import (
        GatewayRoutesArgs as GatewayRoutesArgs,
    )
    from llm_platform.components.gpu_operator import (
        GpuOperator as GpuOperator,
    )
    from llm_platform.components.gpu_operator import (
        GpuOperatorArgs as GpuOperatorArgs,
    )
    from llm_platform.components.headroom import (
        GpuHeadroom as GpuHeadroom,
    )
    from llm_platform.components.headroom import (
        GpuHeadroomArgs as GpuHeadroomArgs,
    )
    from llm_platform.components.inference import (
        InferenceService as InferenceService,
    )
    from llm_platform.components.inference import (
        InferenceServiceArgs as InferenceServiceArgs,
    )
    from llm_platform.components.karpenter import (
        GpuNodePools as GpuNodePools,
    )
    from llm_platform.components.karpenter import (
        GpuNodePoolsArgs as GpuNodePoolsArgs,
    )
    from llm_platform.components.karpenter import (
        Karpenter as Karpenter,
    )
    from llm_platform.components.karpenter import (
        KarpenterArgs as KarpenterArgs,
    )
    from llm_platform.components.keda import (
        Keda as Keda,
    )
    from llm_platform.components.keda import (
        KedaArgs as KedaArgs,
    )
    from llm_platform.components.load_balancer import (
        LoadBalancerController as LoadBalancerController,
    )
    from llm_platform.components.load_balancer import (
        LoadBalancerControllerArgs as LoadBalancerControllerArgs,
    )
    from llm_platform.components.model_cache import (
        FsxVolume as FsxVolume,
    )
    from llm_platform.components.model_cache import (
        ModelCache as ModelCache,
    )
    from llm_platform.components.model_cache import (
        ModelCacheArgs as ModelCacheArgs,
    )
    from llm_platform.components.model_cache import (
        ModelWeights as ModelWeights,
    )
    from llm_platform.components.network import (
        Network as Network,
    )
    from llm_platform.components.network import (
        NetworkArgs as NetworkArgs,
    )
    from llm_platform.components.observability import (
        Observability as Observability,
    )
    from llm_platform.components.observability import (
        ObservabilityArgs as ObservabilityArgs,
    )
    from llm_platform.config.errors import (
        ConfigError as ConfigError,
    )
    from llm_platform.config.stack_args import (
        AlertingSettings as AlertingSettings,
    )
    from llm_platform.config.stack_args import (
        AmiVersionsSettings as AmiVersionsSettings,
    )
    from llm_platform.config.stack_args import (
        ClusterSettings as ClusterSettings,
    )
    from llm_platform.config.stack_args import (
        GatewaySettings as GatewaySettings,
    )
    from llm_platform.config.stack_args import (
        GpuNodePoolSettings as GpuNodePoolSettings,
    )
    from llm_platform.config.stack_args import (
        ModelCacheSettings as ModelCacheSettings,
    )
    from llm_platform.config.stack_args import (
        ModelSettings as ModelSettings,
    )
    from llm_platform.plan import (
        Plan as Plan,
    )
    from llm_platform.plan import (
        resolve as resolve,
    )
    from llm_platform.platform import (
        LlmPlatform as LlmPlatform,
    )
    from llm_platform.platform import (
        LlmPlatformArgs as LlmPlatformArgs,
    )
    from llm_platform.platform import (
        platform_args as platform_args,
    )

# The public components, in the order the provider's schema lists them: name -> the module that defines the
# component and its `<Name>Args`. This one list makes `__all__`, the names imported on first use below and
# the component provider's COMPONENTS (provider.py).
COMPONENTS = {
    "LlmPlatform": "llm_platform.platform",
    "Network": "llm_platform.components.network",
    "EksCluster": "llm_platform.components.cluster",
    "ExistingCluster": "llm_platform.components.cluster",
    "Karpenter": "llm_platform.components.karpenter",
    "GpuNodePools": "llm_platform.components.karpenter",
    "GpuOperator": "llm_platform.components.gpu_operator",
    "Observability": "llm_platform.components.observability",
    "Keda": "llm_platform.components.keda",
    "ModelCache": "llm_platform.components.model_cache",
    "GpuHeadroom": "llm_platform.components.headroom",
    "InferenceService": "llm_platform.components.inference",
    "ModelAutoscaling": "llm_platform.components.autoscaling",
    "Gateway": "llm_platform.components.gateway",
    "GatewayRoutes": "llm_platform.components.gateway_routes",
    "LoadBalancerController": "llm_platform.components.load_balancer",
}
# the other public names: the stack file's blocks, the error, the plan, the components' shared types
_OTHERS = {
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
    "ModelWeights": "llm_platform.components.model_cache",
    "FsxVolume": "llm_platform.components.model_cache",
}
# public name -> the module that defines it
_EXPORTS = {
    **{name: module for component, module in COMPONENTS.items() for name in (component, f"{component}Args")},
    **_OTHERS,
}

__all__ = sorted([*_EXPORTS, "__version__"])  # pyright: ignore[reportUnsupportedDunderAll]

try:
    __version__ = version("llm-platform")
except PackageNotFoundError:  # run from a source tree that is not installed
    __version__ = "0.0.0"


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'llm_platform' has no attribute {name!r}")
