"""What LlmPlatform checks before any resource beyond the stack file's schema: the secrets its config needs are
given, its nodes have prices (costs), the eks mode has a region, and, on the plan resolved from it, the add-on
pool's limits hold what lands there at its peak. `config.loader.parse` runs them with the schema, so one run
reports every problem (the stack program runs the secrets check on its Pulumi secrets)."""

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from llm_platform.config.loader import ConfigCheck
from llm_platform.config.schema import RuleError, StackConfig
from llm_platform.plan import Plan, resolve
from llm_platform.plan.addon_pods import addon_pool_peak

__all__ = [
    "SECRET_ARGS",
    "PlanChecks",
    "needed_secrets",
    "platform_checks",
    "secrets_as_inputs_of",
    "secrets_check",
]

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


def _missing_secrets(
    config: StackConfig, is_set: Callable[[str], bool], named: Callable[[str], tuple[str, str]]
) -> list[ValueError]:
    """The Pulumi secrets (stack-file names) the config needs that `is_set` says are not set, each worded by
    `named` as its caller passes it: (the name, how to pass it)."""
    needed = needed_secrets(config)
    problems: list[ValueError] = []
    for secret in SECRET_ARGS:
        if secret in needed and not is_set(secret):
            name, how = named(secret)
            problems.append(RuleError((name,), None, f"required by this config, not set{how}"))
    return problems


def _as_in_the_stack_file(secret: str) -> tuple[str, str]:
    return secret, f" (pulumi config set --secret {secret} ...)"


def _as_python_arguments(secret: str) -> tuple[str, str]:
    """A Python caller passes `api_key=`; a program through the component provider passes the input `apiKey`
    (`secrets_as_inputs_of`)."""
    component = _PROVIDER_COMPONENT.get()
    if component:
        return secret, f"; pass it as a secret input of {component}"
    return (
        f"{SECRET_ARGS[secret]}=",
        "; pass it in LlmPlatformArgs (a secret: pulumi.Output.secret(...) or pulumi.Config().require_secret(...))",
    )


# the component token while the component provider builds one: its callers name secrets by the input names
_PROVIDER_COMPONENT: ContextVar[str | None] = ContextVar("provider_component", default=None)


@contextmanager
def secrets_as_inputs_of(component: str) -> Iterator[None]:
    """While the component provider constructs `component`, a missing secret is named as its input (`apiKey`)."""
    token = _PROVIDER_COMPONENT.set(component)
    try:
        yield
    finally:
        _PROVIDER_COMPONENT.reset(token)


def secrets_check(is_set: Callable[[str], bool]) -> ConfigCheck:
    """The check `parse` runs that every secret the config needs is set (the stack program: stack-file names)."""
    return ConfigCheck(
        ("models", "gateway", "alerting"),
        lambda config: _missing_secrets(config, is_set, _as_in_the_stack_file),
    )


def platform_checks(args: Mapping[str, Any], region: str | None) -> list[ConfigCheck]:
    """What LlmPlatform checks beyond the schema before any resource, reported with the schema's problems:
    the secrets its config needs are given (named as a Python caller passes them), its nodes have prices
    (costs), the eks mode has a region."""
    return [
        ConfigCheck(
            ("models", "gateway", "alerting"),
            lambda config: _missing_secrets(
                config, lambda secret: args.get(SECRET_ARGS[secret]) is not None, _as_python_arguments
            ),
        ),
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


# the stack-file blocks `resolve` reads
RESOLVED_BLOCKS = (
    "environment",
    "cluster",
    "gpuNodePools",
    "models",
    "modelCache",
    "gateway",
    "alerting",
    "costs",
)


class PlanChecks:
    """The checks that read the plan resolved from the config (what the add-on pool must hold at its peak),
    resolving it once: `plan_of` hands LlmPlatform the plan they resolved, so a run resolves the stack once.
    They run only on a config the schema accepted whole, after the checks on the config alone."""

    def __init__(self, stack: str) -> None:
        self._stack = stack
        self._resolved: tuple[StackConfig, Plan] | None = None

    @property
    def checks(self) -> list[ConfigCheck]:
        return [
            ConfigCheck(RESOLVED_BLOCKS, lambda config: _addon_pool_room(self.plan_of(config)), whole=True)
        ]

    def plan_of(self, config: StackConfig) -> Plan:
        """The plan of `config`: the one the checks resolved from this config, else resolved now."""
        if self._resolved is None or self._resolved[0] is not config:
            self._resolved = (config, resolve(config, self._stack))
        return self._resolved[1]


def _addon_pool_room(plan: Plan) -> list[ValueError]:
    """The add-on pool's `limits` (cluster.addonNodes cpuLimit, memoryLimitGiB) hold its pods at their peak:
    past them Karpenter launches no node and the rest stays Pending (preflight's `ceilings` reads the same
    packing from the render: tools/preflight/room.py)."""
    peak, pool = addon_pool_peak(plan), plan.addon_pool
    if peak is None or pool is None:
        return []
    need = (
        f"the add-on pool needs at its peak: {peak.pods} pods requesting {peak.cpu_millis}m CPU (every "
        f"add-on, each model's endpoint pickers at its maxReplicas, every loader Job) pack onto {peak.shape}, "
        f"{peak.vcpus} vCPUs and {peak.memory_gib:g} GiB of node capacity; Karpenter launches no node past "
        "the limit and the rest stays Pending"
    )
    problems: list[ValueError] = []
    if pool.cpu_limit < peak.vcpus:
        problems.append(
            RuleError(
                ("cluster", "addonNodes", "cpuLimit"),
                pool.cpu_limit,
                f"vCPUs is below what {need}; allowed: at least {peak.vcpus}",
            )
        )
    memory_floor = math.ceil(peak.memory_gib)
    if pool.memory_limit_gib < memory_floor:
        problems.append(
            RuleError(
                ("cluster", "addonNodes", "memoryLimitGiB"),
                pool.memory_limit_gib,
                f"GiB is below what {need}; allowed: at least {memory_floor}",
            )
        )
    return problems
