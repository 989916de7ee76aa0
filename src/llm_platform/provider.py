"""The package as a Pulumi component provider, so TypeScript, Go, C#, Java and YAML programs compose the
platform too: `pulumi package add <this repository>/provider` (provider/PulumiPlugin.yaml runs `main`).

The schema is inferred from LlmPlatform's type annotations by the SDK's component provider host
(pulumi.provider.experimental); provider/schema.json is that schema, committed and checked by a test.

    uv run python -m llm_platform.provider schema > provider/schema.json   # after changing the args
"""

import json
import sys
from typing import Any

import pulumi
from pulumi.provider.experimental import component_provider_host
from pulumi.provider.experimental.component import ComponentProvider

from llm_platform import __version__
from llm_platform.platform import LlmPlatform

__all__ = ["COMPONENTS", "PACKAGE", "main", "provider", "schema"]

PACKAGE = "llm-platform"
COMPONENTS: list[type[pulumi.ComponentResource]] = [LlmPlatform]


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
