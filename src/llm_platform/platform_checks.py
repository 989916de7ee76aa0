"""What LlmPlatform checks before any resource beyond the stack file's schema: the secrets its config needs are
given, its nodes have prices (costs), the eks mode has a region. `config.loader.parse` runs them with the schema,
so one run reports every problem (the stack program runs the secrets check on its Pulumi secrets)."""

from collections.abc import Callable, Mapping
from typing import Any

from llm_platform.config.loader import ConfigCheck
from llm_platform.config.schema import RuleError, StackConfig

__all__ = ["SECRET_ARGS", "needed_secrets", "platform_checks", "secrets_check"]

# the stack file's Pulumi secrets, for the keys of LlmPlatformArgs that take them
SECRET_ARGS = {
    "grafanaAdminPassword": "grafana_admin_password",
    "apiKey": "api_key",
    "huggingFaceToken": "hugging_face_token",
    "gatewayClientKeys": "gateway_client_keys",
    "alertReceiver": "alert_receiver",
}


def _cost_pricing(config: StackConfig, region: str | None) -> list[ValueError]:
    """costs.enabled prices every node from the catalogs in the stack's region: known before any resource."""
    from llm_platform.components.specs.costs import PricingError, cpu_ram_prices, instance_prices

    if not config.costs.enabled:
        return []
    if not region:
        return [
            RuleError(
                ("costs", "enabled"),
                True,
                "needs the stack's AWS region: OpenCost prices nodes there; allowed: set aws:region, or false",
            )
        ]
    problems: list[ValueError] = []
    try:
        cpu_ram_prices(region)
    except PricingError as exc:
        problems.append(RuleError(("costs", "enabled"), True, f"cannot price nodes: {_unprefixed(exc)}"))
    for i, pool in enumerate(config.gpu_node_pools):
        try:
            instance_prices([pool], region)
        except PricingError as exc:
            problems.append(
                RuleError(
                    ("gpuNodePools", i, "instanceFamilies"),
                    pool.instance_families,
                    f"cannot be priced with costs.enabled: {_unprefixed(exc)}",
                )
            )
    return problems


def _unprefixed(exc: Exception) -> str:
    return str(exc).removeprefix("costs.enabled: ")


def _eks_region(config: StackConfig, region: str | None) -> list[ValueError]:
    if config.cluster.mode == "eks" and not region:
        return [
            RuleError(
                ("cluster", "mode"),
                "eks",
                "needs the stack's AWS region, which is not set; allowed: set aws:region (or the AWS "
                "provider's region), or mode existing",
            )
        ]
    return []


def _missing_secrets(config: StackConfig, is_set: Callable[[str], bool]) -> list[ValueError]:
    """The Pulumi secrets (stack-file names) the config needs that `is_set` says are not set."""
    needed = needed_secrets(config)
    return [
        RuleError(
            (secret,), None, f"required by this config, not set (pulumi config set --secret {secret} ...)"
        )
        for secret in SECRET_ARGS
        if secret in needed and not is_set(secret)
    ]


def secrets_check(is_set: Callable[[str], bool]) -> ConfigCheck:
    """The check `parse` runs that every secret the config needs is set (stack-file names)."""
    return ConfigCheck(("models", "gateway", "alerting"), lambda config: _missing_secrets(config, is_set))


def platform_checks(args: Mapping[str, Any], region: str | None) -> list[ConfigCheck]:
    """What LlmPlatform checks beyond the schema before any resource, reported with the schema's problems:
    the secrets its config needs are given, its nodes have prices (costs), the eks mode has a region."""
    return [
        secrets_check(lambda secret: args.get(SECRET_ARGS[secret]) is not None),
        ConfigCheck(("costs", "gpuNodePools"), lambda config: _cost_pricing(config, region)),
        ConfigCheck(("cluster",), lambda config: _eks_region(config, region)),
    ]


def needed_secrets(config: StackConfig) -> set[str]:
    """The Pulumi secrets (stack-file names) a config cannot do without."""
    needed = {
        "grafanaAdminPassword": True,
        "apiKey": bool(config.models),
        "huggingFaceToken": any(m.needs_hf_token for m in config.models),
        "gatewayClientKeys": config.gateway.enabled,
        "alertReceiver": config.alerting.receiver != "none",
    }
    return {secret for secret, required in needed.items() if required}
