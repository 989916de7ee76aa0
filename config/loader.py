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


def stack_file(stack: str) -> Path:
    return ROOT / f"Pulumi.{stack}.yaml"


def raw_stack_config(stack: str) -> dict[str, Any]:
    """All `config:` entries of Pulumi.<stack>.yaml, fully qualified keys (`llm-platform:models`)."""
    path = stack_file(stack)
    if not path.exists():
        raise ConfigError(f"stack {stack!r}: {path.name} does not exist")
    return (yaml.safe_load(path.read_text()) or {}).get("config", {}) or {}


def load_stack(stack: str) -> StackConfig:
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
