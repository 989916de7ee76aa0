"""LlmPlatformArgs: the args of the top-level component `LlmPlatform` (platform.py), and the mapping between
them and a stack file's `llm-platform:` values (camelCase keys) both ways; platform.py re-exports them.

Not named `platform_args`: importing a submodule of that name would hide the package's `platform_args`
function (`llm_platform.platform_args`).
"""

from typing import Any, NotRequired, TypedDict

import pulumi

from llm_platform.config.schema import StackConfig
from llm_platform.config.stack_args import (
    AlertingSettings,
    ClusterSettings,
    CostsSettings,
    EnvironmentValue,
    GatewaySettings,
    GpuNodePoolSettings,
    ModelCacheSettings,
    ModelSettings,
)

__all__ = ["LlmPlatformArgs", "config_of", "platform_args"]


class LlmPlatformArgs(TypedDict):
    """The `llm-platform:` keys of a stack file, and the secrets the stack program reads from Pulumi secrets.

    The blocks are typed as the stack file's schema describes them (`config/stack_args.py`, camelCase keys);
    the schema's rules validate them when the component is built."""

    environment: EnvironmentValue
    """dev, staging or prod."""
    cluster: ClusterSettings
    """The stack file's `cluster` block (mode eks or existing, name, zones, system nodes, ...)."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The stack file's `gpuNodePools`: Karpenter GPU NodePools (instance families, gpuLimit, capacity types)."""
    models: NotRequired[list[ModelSettings]]
    """The stack file's `models`: what vLLM serves, on which pool, cached how, autoscaled how."""
    model_cache: NotRequired[ModelCacheSettings]
    """The stack file's `modelCache`: the S3 bucket and the FSx for Lustre file system."""
    gateway: NotRequired[GatewaySettings]
    """The stack file's `gateway`: Envoy Gateway + AI Gateway in front of the models, its clients and limits."""
    alerting: NotRequired[AlertingSettings]
    """The stack file's `alerting`: where Alertmanager sends alerts."""
    costs: NotRequired[CostsSettings]
    """The stack file's `costs`: OpenCost, actual $/day and $/million tokens per model and client, the forecasts."""
    region: NotRequired[str]
    """The AWS region the pools' instances must be sold in; default: the AWS provider's (`aws:region`)."""
    grafana_admin_password: pulumi.Input[str]
    """Grafana's admin password (a secret)."""
    api_key: NotRequired[pulumi.Input[str]]
    """The key vLLM requires of every request (a secret); required when models are served."""
    hugging_face_token: NotRequired[pulumi.Input[str]]
    """A Hugging Face token (a secret), for gated models and the Hub -> S3 loader."""
    gateway_client_keys: NotRequired[pulumi.Input[dict[str, str]]]
    """Each gateway client's API key by client name (a secret); required with the gateway."""
    alert_receiver: NotRequired[pulumi.Input[str]]
    """The alert receiver's URL or key (a secret); required unless alerting.receiver is none."""
    addon_versions: NotRequired[dict[str, str]]
    """Chart versions by add-on name (`llm_platform.facts.addons`: `karpenter`, `keda`, `gpu-operator`, ...) in
    place of the pinned ones, for every add-on (the charts released with its main chart follow it); the CRD
    files the render validator checks stay the pinned ones."""


# the stack file's keys, as users write them (the schema's aliases), for the snake_case keys of LlmPlatformArgs
_STACK_KEYS = {name: field.alias or name for name, field in StackConfig.model_fields.items()}


def platform_args(values: dict[str, Any], **secrets: Any) -> LlmPlatformArgs:
    """LlmPlatformArgs from a stack file's `llm-platform:` values (camelCase keys, as `config.loader` reads
    them) and the secrets by their LlmPlatformArgs names (`api_key=...`); None secrets are left out."""
    by_stack_key = {stack_key: key for key, stack_key in _STACK_KEYS.items()}
    args: dict[str, Any] = {by_stack_key[k]: v for k, v in values.items() if k in by_stack_key}
    args |= {k: v for k, v in secrets.items() if v is not None}
    return args  # type: ignore[return-value]  # parse() validates the values when the component is built


def config_of(args: LlmPlatformArgs) -> dict[str, Any]:
    """The stack-file view of `args` (camelCase keys, no secrets), as `config.loader.parse` validates it."""
    return {stack_key: args[key] for key, stack_key in _STACK_KEYS.items() if key in args}  # type: ignore[literal-required]
