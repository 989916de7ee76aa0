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
from importlib import import_module
from typing import Any

import pulumi
from pulumi.errors import InputPropertyError
from pulumi.output import Inputs
from pulumi.provider import main as serve
from pulumi.provider.experimental.analyzer import PropertyDefinition
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.provider import ConstructResult

import llm_platform
from llm_platform import __version__
from llm_platform.config.errors import unknown_key
from llm_platform.platform_checks import secrets_as_inputs_of

__all__ = ["COMPONENTS", "PACKAGE", "main", "provider", "schema"]

PACKAGE = "llm-platform"
# the package's public components (llm_platform.COMPONENTS), in its order: one list for the API and the schema
COMPONENTS: list[type[pulumi.ComponentResource]] = [
    getattr(import_module(module), name) for name, module in llm_platform.COMPONENTS.items()
]


class LlmPlatformProvider(ComponentProvider):
    """The SDK's component provider, holding the raw properties to the rules Python callers get.

    The SDK maps only the properties the schema names and drops any other silently
    (`models[0].autoscaling.maxReplica: 5` was accepted and ignored). Here a key the schema does not name is
    refused as in Python: inside a stack file's block (camelCase TypedDicts, checked by the stack file's
    schema when the component is built) it is passed on, so the schema refuses it with its own message
    (`models[0] (chat).autoscaling.maxReplica: unknown key (did you mean 'maxReplicas'?); allowed: ...`);
    elsewhere it is refused here, in the same words."""

    def construct(
        self, name: str, resource_type: str, inputs: Inputs, options: pulumi.ResourceOptions | None = None
    ) -> ConstructResult:
        with secrets_as_inputs_of(
            resource_type
        ):  # a missing secret is named as this program's input: `apiKey`
            return super().construct(name, resource_type, inputs, options)

    def map_input_properties(
        self,
        inputs: Inputs,
        properties: dict[str, PropertyDefinition],
        mapping: dict[str, str],
        component_name: str,
        property_path: str,
    ) -> Inputs:
        mapped = dict(
            super().map_input_properties(inputs, properties, mapping, component_name, property_path)
        )
        unknown = [key for key in inputs if key not in properties] if isinstance(inputs, dict) else []
        stack_file_block = all(schema_name == py_name for schema_name, py_name in mapping.items())
        for key in unknown:
            if stack_file_block:
                mapped[key] = inputs[key]  # the stack file's schema refuses it, with its message
                continue
            path = f"{property_path}.{key}" if property_path else key
            raise InputPropertyError(path, unknown_key(path, key, sorted(properties)))
        return mapped


def provider() -> ComponentProvider:
    """The provider the plugin serves: its schema and its construct path."""
    return LlmPlatformProvider(COMPONENTS, PACKAGE, version=__version__)


def schema() -> dict[str, Any]:
    return json.loads(provider().schema or "{}")


def main() -> None:
    """Serve the components to the Pulumi engine (the plugin's entry point): what the SDK's
    `component_provider_host` does, with this package's provider. The first argument is the plugin's
    directory, then the engine's address and flags."""
    serve(provider(), sys.argv[1:])


if __name__ == "__main__":
    if sys.argv[1:] != ["schema"]:
        sys.exit(f"usage: python -m {__spec__.name} schema   (prints the provider's schema as JSON)")
    print(json.dumps(schema(), indent=2, sort_keys=True))
