"""The package as a Pulumi component provider, so TypeScript, Go, C#, Java and YAML programs compose the
platform too: `pulumi package add <this repository>/provider` (provider/PulumiPlugin.yaml runs `main`).

The schema is inferred from the components' type annotations (their args TypedDicts and output attributes)
by the SDK's component provider host (pulumi.provider.experimental); provider/schema.json is that schema,
committed and checked by a test. Every component is `llm-platform:index:<Name>` there: the top-level
LlmPlatform and the components it composes, for a program that builds only some of them.

    uv run python -m llm_platform.provider schema > provider/schema.json   # after changing the args
"""

import json
import sys
from typing import Any

import pulumi
from pulumi.provider.experimental import component_provider_host
from pulumi.provider.experimental.component import ComponentProvider

from llm_platform import __version__
from llm_platform.components.autoscaling import ModelAutoscaling
from llm_platform.components.cluster import EksCluster, ExistingCluster
from llm_platform.components.gateway import Gateway
from llm_platform.components.gpu_operator import GpuOperator
from llm_platform.components.headroom import GpuHeadroom
from llm_platform.components.inference import InferenceService
from llm_platform.components.karpenter import GpuNodePools, Karpenter
from llm_platform.components.keda import Keda
from llm_platform.components.load_balancer import LoadBalancerController
from llm_platform.components.model_cache import ModelCache
from llm_platform.components.network import Network
from llm_platform.components.observability import Observability
from llm_platform.platform import LlmPlatform

__all__ = ["COMPONENTS", "PACKAGE", "main", "provider", "schema"]

PACKAGE = "llm-platform"
COMPONENTS: list[type[pulumi.ComponentResource]] = [
    LlmPlatform,
    Network,
    EksCluster,
    ExistingCluster,
    Karpenter,
    GpuNodePools,
    GpuOperator,
    Observability,
    Keda,
    ModelCache,
    GpuHeadroom,
    InferenceService,
    ModelAutoscaling,
    Gateway,
    LoadBalancerController,
]


def provider() -> ComponentProvider:
    """The provider the plugin serves: its schema and its construct path."""
    return ComponentProvider(COMPONENTS, PACKAGE, version=__version__)


def schema() -> dict[str, Any]:
    return json.loads(provider().schema or "{}")


def main() -> None:
    """Serve the components to the Pulumi engine (the plugin's entry point)."""
    component_provider_host(COMPONENTS, PACKAGE, version=__version__)


if __name__ == "__main__":
    if sys.argv[1:] != ["schema"]:
        sys.exit(f"usage: python -m {__spec__.name} schema   (prints the provider's schema as JSON)")
    print(json.dumps(schema(), indent=2, sort_keys=True))
