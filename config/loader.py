"""Read the stack configuration from Pulumi config (or a stack file) and validate it in one go."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from config.schema import StackConfig

PROJECT = "llm-platform"
ROOT = Path(__file__).resolve().parents[1]
# the structured keys of the public contract, as they appear under `llm-platform:` in Pulumi.<stack>.yaml
CONFIG_KEYS = ("environment", "cluster", "gpuNodePools", "models", "modelCache", "gateway", "alerting")
# Pulumi secrets the program reads (never part of the validated plain-value schema)
SECRET_KEYS = ("apiKey", "grafanaAdminPassword", "huggingFaceToken", "gatewayClientKeys", "alertReceiver")
_SELF_LOCATED = re.compile(r"^[a-z][A-Za-z]*[\[.:]")


class ConfigError(ValueError):
    """Bad stack configuration: one line per problem, each naming the field, the value and what is allowed."""


def parse(raw: dict[str, Any]) -> StackConfig:
    """Validate plain config values (camelCase keys without the project prefix)."""
    unknown = sorted(set(raw) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(
            f"{PROJECT}:{unknown[0]}: unknown config key; allowed: {', '.join(CONFIG_KEYS + SECRET_KEYS)}"
        )
    try:
        return StackConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc)) from None


def format_errors(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "value_error" and _SELF_LOCATED.match(msg):
            lines.append(msg)
            continue
        path = _path(err["loc"])
        value = err.get("input")
        shown = "" if err["type"] == "missing" else f" {json.dumps(value, default=str)[:120]} is not allowed:"
        lines.append(f"{path}:{shown} {msg}")
    return "\n".join(lines)


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(stack)"


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


def raw_stack_config(stack: Stack) -> dict[str, Any]:
    """All `config:` entries of Pulumi.<stack>.yaml, fully qualified keys (`llm-platform:models`)."""
    path = stack_file(stack)
    if not path.exists():
        known = ", ".join(stack_names(path.parent)) or "none"
        raise ConfigError(f"stack {stack_name(stack)!r}: {path.name} does not exist; stacks: {known}")
    return (yaml.safe_load(path.read_text()) or {}).get("config", {}) or {}


def load_stack(stack: Stack) -> StackConfig:
    """Validated config of a stack file, for offline tools (render, simulator) and tests."""
    raw = raw_stack_config(stack)
    ours = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{PROJECT}:")}
    return parse({k: v for k, v in ours.items() if k not in SECRET_KEYS})


def load_from_pulumi() -> StackConfig:
    """Validated config of the running stack; raises ConfigError before anything is registered."""
    import pulumi

    cfg = pulumi.Config(PROJECT)
    raw: dict[str, Any] = {}
    for key in CONFIG_KEYS:
        value = cfg.get_object(key) if key != "environment" else cfg.get(key)
        if value is not None:
            raw[key] = value
    return parse(raw)
