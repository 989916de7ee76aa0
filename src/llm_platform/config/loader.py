"""Read the stack configuration from Pulumi config (or a stack file) and validate it in one go.

Both ways in, the offline tools reading `Pulumi.<stack>.yaml` and the program run by `pulumi preview`/`up`,
go through `parse`: every `llm-platform:` key is checked (an unknown one is an error, never ignored), and a
bad stack stops before any resource is registered with one line per problem: file and line, field path,
value, what is allowed (config/errors.py).
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, create_model

from llm_platform.config.errors import (
    PROJECT,
    ConfigError,
    StackSource,
    config_keys,
    error_lines,
    format_errors,
    read_stack_file,
    rule_lines,
    unknown_key,
)
from llm_platform.config.schema import STACK_RULES, Problems, Schema, ServingConfig, StackConfig

__all__ = ["PROJECT", "ConfigCheck", "ConfigError"]


def project_dir(start: Path | None = None) -> Path:
    """The Pulumi project the tools work on: the nearest folder from `start` (the working directory) up
    that holds a Pulumi.yaml, where its `__main__.py` and `Pulumi.<stack>.yaml` files are; else `start`."""
    here = (start or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / "Pulumi.yaml").is_file()), here)


ROOT = project_dir()
# the structured keys of the public contract, as they appear under `llm-platform:` in Pulumi.<stack>.yaml
CONFIG_KEYS = config_keys()
# Pulumi secrets the program reads (never part of the validated plain-value schema)
SECRET_KEYS = ("apiKey", "grafanaAdminPassword", "huggingFaceToken", "gatewayClientKeys", "alertReceiver")
NOT_UNDER_PULUMI = (
    "__main__.py is the Pulumi program and runs under the Pulumi CLI: `pulumi preview -s <stack>` or "
    "`pulumi up -s <stack>`; to see what a stack deploys without the CLI: "
    "`uv run python -m llm_platform.tools.render <stack> --out build/<stack>`"
)


@dataclass(frozen=True)
class ConfigCheck:
    """A check beyond the schema (the secrets a config needs are set, its nodes have prices), on the stack-file
    blocks in `needs`: `parse` runs it on the validated config, or, when the schema refused part of the config,
    on the blocks that validated, so one run reports every problem. `run` returns the problems it finds
    (RuleErrors are placed on the stack file's lines). `whole`: it reads the plan resolved from the config,
    so it runs only on a config the schema accepted whole, its rules across blocks included."""

    needs: tuple[str, ...]
    run: Callable[[StackConfig], list[ValueError]]
    whole: bool = False


def parse(
    raw: dict[str, Any],
    source: StackSource | None = None,
    region: str | None = None,
    checks: Sequence[ConfigCheck] = (),
) -> StackConfig:
    """Validate `llm-platform:` values (keys without the prefix, secrets allowed and skipped); `source`, the
    stack file the values were read from, adds the file and line to each problem; `region` (`aws:region`)
    adds the rules that need it (zones in the region, instances sold there); `checks` run after the schema.

    Every problem is reported at once, one line each: unknown keys, the values the schema refuses, then the
    rules across blocks and the checks, run on every block that validated when others did not."""
    allowed = CONFIG_KEYS + SECRET_KEYS
    problems = [
        _unknown_config_key(key, allowed, source) for key in _in_file_order(set(raw) - set(allowed), source)
    ]
    plain = {k: v for k, v in raw.items() if k in CONFIG_KEYS}
    context = {"region": region}
    try:
        config = StackConfig.model_validate(plain, context=context)
    except ValidationError as exc:
        problems += error_lines(exc, plain, source)
        failed = {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
        partial = _validated_blocks(plain, failed)
        valid = set(CONFIG_KEYS) - failed
        rules = Problems()
        for rule in STACK_RULES:
            if set(rule.needs) <= valid:
                rule.run(partial, rules, context)
        problems += [line for err in rules.errors for line in rule_lines(err, plain, source)]
        partial_checks = [c for c in checks if set(c.needs) <= valid and not c.whole]
        problems += _check_lines(partial_checks, partial, plain, source)
        raise ConfigError("\n".join(dict.fromkeys(problems))) from None
    problems += _check_lines(checks, config, plain, source)
    if problems:
        raise ConfigError("\n".join(problems))
    return config


def _check_lines(
    checks: Sequence[ConfigCheck], config: StackConfig, plain: dict[str, Any], source: StackSource | None
) -> list[str]:
    return [line for check in checks for err in check.run(config) for line in rule_lines(err, plain, source)]


def _validated_blocks(plain: dict[str, Any], failed: set[str]) -> StackConfig:
    """A StackConfig of the blocks the schema accepted alone (the others left unset), without its rules across
    blocks: what those rules and the checks run on when part of the config was refused."""
    fields: dict[str, Any] = {}
    for name, field in StackConfig.model_fields.items():
        key = field.alias or name
        if key in failed or key not in plain:
            continue
        spec: dict[str, Any] = {name: (field.annotation, field)}
        block = create_model(f"Block_{key}", __base__=Schema, **spec)
        fields[name] = getattr(block.model_validate({key: plain[key]}), name)
    return StackConfig.model_construct(**fields)


def parse_serving(raw: dict[str, Any], *, has_bucket: bool = True) -> ServingConfig:
    """The serving blocks of a stack file alone (`environment`, `gpuNodePools`, `models`, `modelCache`,
    `gateway`; camelCase keys), by the stack's rules for them and with its messages; `has_bucket`: the model
    bucket exists (an EKS cluster), else only the `hub` cache is allowed."""
    try:
        return ServingConfig.model_validate(raw, context={"has_bucket": has_bucket})
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, raw)) from None


def parse_block(key: str, value: Any, schema: Any = None) -> Any:
    """One block of a stack file alone (`gpuNodePools`, `alerting`, ...: a top-level key), validated by the
    stack schema's field rules and reported with its messages; `schema`: the type of a block that is not a
    top-level key (`amiVersions`: config.schema.AmiVersions)."""
    if schema is None:
        name, field = next((n, f) for n, f in StackConfig.model_fields.items() if (f.alias or n) == key)
        fields: dict[str, Any] = {name: (field.annotation, field)}
    else:
        name, fields = "block", {"block": (schema, Field(alias=key))}
    block = create_model(f"Block_{key}", __base__=Schema, **fields)
    try:
        return getattr(block.model_validate({key: value}), name)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, {key: value})) from None


def _in_file_order(keys: set[str], source: StackSource | None) -> list[str]:
    def order(key: str) -> tuple[int, str]:
        line = source.key_line((key,)) if source else None
        return (line or 0, key)

    return sorted(keys, key=order)


def _unknown_config_key(key: str, allowed: tuple[str, ...], source: StackSource | None) -> str:
    where = source.where(source.key_line((key,))) if source else ""
    if ":" in key:  # a misspelt project namespace (_ours)
        namespace, name = key.split(":", 1)
        return f"{where}{key}: unknown config namespace {namespace!r} (did you mean '{PROJECT}:{name}'?)"
    return where + unknown_key(f"{PROJECT}:{key}", key, allowed, "config key")


def _ours(entries: dict[str, Any]) -> dict[str, Any]:
    """The `llm-platform:` entries, keyed without the prefix; an entry whose namespace is a typo of the
    project's (`llm_platform:models`) keeps its full key, so `parse` refuses it instead of ignoring it."""
    ours = {}
    for key, value in entries.items():
        namespace, _, name = key.partition(":")
        if namespace == PROJECT:
            ours[name] = value
        elif name and difflib.get_close_matches(namespace, [PROJECT], cutoff=0.8):
            ours[key] = value
    return ours


# A stack is named (`prod`: Pulumi.prod.yaml beside Pulumi.yaml) or given as the path of a stack file
# (`tests/fixtures/stacks/Pulumi.prod.yaml`: the fixture stacks the behaviour tests run on).
Stack = str | Path


def stack_arg(text: str) -> Stack:
    """A stack as given on a command line: a name, or the path of a stack file (`*.yaml`)."""
    return Path(text) if text.endswith((".yaml", ".yml")) or "/" in text else text


def stack_file(stack: Stack) -> Path:
    if isinstance(stack, Path):
        return stack
    return ROOT / f"Pulumi.{stack}.yaml"


def stack_name(stack: Stack) -> str:
    """The Pulumi stack name: `prod` for both `prod` and `.../Pulumi.prod.yaml`."""
    if isinstance(stack, Path):
        return stack.name.removeprefix("Pulumi.").removesuffix(".yaml")
    return stack


def stack_names(folder: Path = ROOT) -> list[str]:
    """The stacks that have a stack file in `folder`."""
    return sorted(stack_name(p) for p in folder.glob("Pulumi.*.yaml"))


def read_stack(stack: Stack) -> tuple[dict[str, Any], StackSource]:
    """The `llm-platform:` entries of a stack file (keys without the prefix) and the file's source."""
    path = stack_file(stack)
    if not path.exists():
        known = ", ".join(stack_names(path.parent)) or "none"
        raise ConfigError(f"stack {stack_name(stack)!r}: {path.name} does not exist; stacks: {known}")
    entries, source = read_stack_file(path)
    return _ours(entries), source


def raw_stack_config(stack: Stack) -> dict[str, Any]:
    """All `config:` entries of Pulumi.<stack>.yaml, fully qualified keys (`llm-platform:models`)."""
    path = stack_file(stack)
    if not path.exists():
        read_stack(stack)  # the error that lists the stacks
    return read_stack_file(path)[0]


def stack_region(stack: Stack) -> str:
    """The stack file's `aws:region`: where its nodes run and what they cost (facts/catalog.py prices)."""
    region = raw_stack_config(stack).get("aws:region")
    if not isinstance(region, str) or not region:
        raise ConfigError(
            f"stack {stack_name(stack)!r}: {stack_file(stack).name} sets no aws:region; set it "
            "(e.g. `aws:region: us-east-1`): node prices and offerings depend on it"
        )
    return region


def load_stack(stack: Stack, checks: Sequence[ConfigCheck] = ()) -> StackConfig:
    """Validated config of a stack file, for offline tools (render, simulator) and tests; `checks` beyond the
    schema (`llm-platform check` runs the plan's, platform_checks.PlanChecks)."""
    ours, source = read_stack(stack)
    return parse(ours, source, region=raw_stack_config(stack).get("aws:region"), checks=checks)


def load_from_pulumi(checks: Sequence[ConfigCheck] = ()) -> StackConfig:
    """Validated config of the stack `pulumi preview`/`up` runs, every `llm-platform:` key of it included;
    `checks` (e.g. the secrets it needs are set) are reported with the schema's problems.

    A bad config stops the program before any resource with the problems and no traceback
    (`pulumi.RunError`); run outside the Pulumi CLI, it prints how to run it and exits 2.
    """
    import pulumi
    from pulumi.runtime import settings

    if settings.get_monitor() is None:
        print(NOT_UNDER_PULUMI, file=sys.stderr)
        raise SystemExit(2)
    stack = pulumi.get_stack()
    raw = values_from_pulumi()
    try:
        return parse(raw, stack_source(stack, raw), region=pulumi.Config("aws").get("region"), checks=checks)
    except ConfigError as exc:
        raise pulumi.RunError(f"invalid config for stack {stack!r}, nothing was deployed:\n{exc}") from None


def values_from_pulumi() -> dict[str, Any]:
    """The `llm-platform:` values the engine handed over (secrets left out), keyed as in the stack file."""
    from pulumi.runtime import config as engine_config

    # every key the engine handed over (the CLI sets PULUMI_CONFIG; mocks set the config map)
    keys = sorted({*engine_config.CONFIG.get(), *engine_config.get_config_env()})
    values = _ours({key: engine_config.get_config(key) for key in keys})
    return {key: _decoded(value) for key, value in values.items() if key not in SECRET_KEYS}


def _decoded(value: Any) -> Any:
    """The engine hands config over as strings, objects JSON-encoded."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def stack_source(stack: str, raw: dict[str, Any]) -> StackSource | None:
    """The stack file, when it holds exactly the values the engine handed over (so its lines are right):
    `raw` keyed as in the stack file, without the prefix and secrets."""
    try:
        ours, source = read_stack(stack)
    except ConfigError:
        return None
    plain = {k: v for k, v in ours.items() if k not in SECRET_KEYS}
    return source if json.loads(json.dumps(plain, default=str)) == raw else None
