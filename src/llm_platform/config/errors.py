"""Config errors a person can act on: where (file, line, field path), the value, and what is allowed.

Every problem is one line in one format:

    Pulumi.dev.yaml:31: models[1] (llama-8b).autoscaling.kvCacheUsage: 1.5 is not allowed: ...

List items are named by index and, when they have a name, by name (`models[1] (llama-8b)`); an unknown key
lists the allowed keys and the closest match; a number is shown as written in the stack file (so
`kubernetesVersion: 1.30` reads `1.30`, not the `1.3` YAML makes of it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

import yaml
from pydantic import BaseModel, ValidationError

from llm_platform.config.schema import RuleError, RuleErrors, StackConfig, did_you_mean, plural

PROJECT = "llm-platform"  # the Pulumi project: config keys are `llm-platform:<key>`
# a validator's message that starts with its own field path, e.g. `gpuNodePools[g5].mig: ...`
_SELF_LOCATED = re.compile(r"^[a-z][A-Za-z]*[\[.:]")
# a list item named by its name in such a message (`gpuNodePools[g5]`): shown as `gpuNodePools[0] (g5)`
_NAMED_ITEM = re.compile(r"^(?P<list>[a-z][A-Za-z]*)\[(?P<name>[a-z][-a-z0-9]*)\]")


class ConfigError(ValueError):
    """Bad stack configuration: one line per problem, each naming the field, the value and what is allowed."""


def config_keys() -> tuple[str, ...]:
    """The top-level `llm-platform:` keys of the schema, as written in a stack file."""
    return tuple(f.alias or name for name, f in StackConfig.model_fields.items())


def unknown_key(path: str, key: str, allowed: list[str] | tuple[str, ...], what: str = "key") -> str:
    """`<path>: unknown key (did you mean 'x'?); allowed: ...`, the path ending in the unknown key."""
    return f"{path}: unknown {what}{did_you_mean(key, allowed)}; allowed: {', '.join(allowed)}"


# ------------------------------------------------------------------------------------------ the source


@dataclass(frozen=True)
class StackSource:
    """A stack file's YAML nodes: the line of a config value, and a scalar as it was written."""

    path: Path
    config: yaml.Node | None  # the `config:` mapping

    @property
    def label(self) -> str:
        try:
            return str(self.path.resolve().relative_to(Path.cwd()))
        except ValueError:
            return str(self.path)

    def _walk(self, loc: tuple[Any, ...]) -> list[yaml.Node]:
        """The nodes along `loc` (its first part a top-level key without the project prefix), as far as found."""
        found: list[yaml.Node] = []
        node = self.config
        for i, part in enumerate(loc):
            key = f"{PROJECT}:{part}" if i == 0 and ":" not in str(part) else part
            if isinstance(node, yaml.MappingNode):
                node = next((v for k, v in node.value if k.value == key), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
                node = node.value[key]
            else:
                node = None
            if node is None:
                break
            found.append(node)
        return found

    def line(self, loc: tuple[Any, ...]) -> int | None:
        found = self._walk(loc)
        return found[-1].start_mark.line + 1 if found else None

    def key_line(self, loc: tuple[Any, ...]) -> int | None:
        """The line of the key `loc[-1]` itself (an unknown key has no value worth pointing at)."""
        parent = self._walk(loc[:-1])
        node = parent[-1] if parent else (self.config if len(loc) == 1 else None)
        key = f"{PROJECT}:{loc[-1]}" if len(loc) == 1 and ":" not in str(loc[-1]) else loc[-1]
        if isinstance(node, yaml.MappingNode):
            for k, _ in node.value:
                if k.value == key:
                    return k.start_mark.line + 1
        return self.line(loc[:-1]) if len(loc) > 1 else None

    def written(self, loc: tuple[Any, ...]) -> str | None:
        """The scalar at exactly `loc` as written in the file (`1.30`), or None."""
        found = self._walk(loc)
        if len(found) == len(loc) and isinstance(found[-1], yaml.ScalarNode):
            return found[-1].value
        return None

    def where(self, line: int | None) -> str:
        return f"{self.label}:{line}: " if line else f"{self.label}: "


# libyaml's parser when PyYAML was built with it (~20x faster: every load of a stack reads its file); the pure
# Python one words syntax errors, so a file that fails to parse is read again with it for the message
_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str, loader_type: type[yaml.SafeLoader]) -> tuple[yaml.Node | None, Any]:
    """The document's root node (its marks give the lines) and its value."""
    loader = loader_type(text)
    try:
        root = loader.get_single_node()
        return root, loader.construct_document(root) if root is not None else {}
    finally:
        loader.dispose()


def read_stack_file(path: Path) -> tuple[dict[str, Any], StackSource]:
    """The `config:` entries of a stack file and its source; a YAML syntax error names the file and line."""
    text = path.read_text()
    try:
        try:
            root, document = _parse(text, _FAST_LOADER)
        except yaml.MarkedYAMLError:
            root, document = _parse(text, yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark, opened = exc.problem_mark or exc.context_mark, exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        context = f" {exc.context}" if exc.context else ""
        if context and opened is not None and opened is not mark:
            context += f" (line {opened.line + 1}, column {opened.column + 1})"
        raise ConfigError(
            f"{where}: YAML syntax error:{context}{',' if context else ''} {exc.problem}"
        ) from None
    config_node = None
    if isinstance(root, yaml.MappingNode):
        config_node = next((v for k, v in root.value if k.value == "config"), None)
    config = document.get("config") if isinstance(document, dict) else None
    if (not isinstance(config, dict) and config is not None) or not isinstance(document, dict):
        raise ConfigError(
            f"{path}:1: a stack file is a mapping whose `config:` maps `<namespace>:<key>` to values"
        )
    return config or {}, StackSource(path, config_node)


# ------------------------------------------------------------------------------------------ formatting


def path_of(loc: tuple[Any, ...], raw: dict[str, Any]) -> str:
    """`models[1] (llama-8b).autoscaling.kvCacheUsage` for ('models', 1, 'autoscaling', 'kvCacheUsage')."""
    out, value = "", cast(Any, raw)
    for part in loc:
        if isinstance(part, int):
            value = value[part] if isinstance(value, list) and 0 <= part < len(value) else None
            name = value.get("name") if isinstance(value, dict) else None
            out += f"[{part}]" + (f" ({name})" if isinstance(name, str) else "")
        else:
            value = value.get(part) if isinstance(value, dict) else None
            out += f".{part}" if out else str(part)
    return out or "(stack)"


def shown(value: Any, written: str | None = None) -> str:
    """A value as a person wrote it: strings quoted, numbers as written in the file when known; a mapping or a
    list by its shape (its keys, its first items), never a whole entry; a long text cut at a word."""
    if isinstance(value, str):
        return repr(_cut(value))
    if written is not None:
        return _cut(written)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        keys = ", ".join(map(str, list(value)[:4])) + (", ..." if len(value) > 4 else "")
        return f"a mapping ({plural(len(value), 'key')}: {keys})" if value else "{}"
    if isinstance(value, list):
        if len(value) <= 6 and all(isinstance(v, (str, int, float, bool)) for v in value):
            return _cut("[" + ", ".join(str(v) for v in value) + "]")
        return f"a list of {plural(len(value), 'item')}"
    return _cut(str(value))


def _cut(text: str, limit: int = 80) -> str:
    """`text`, or its words up to `limit` characters and ` ...`: never cut inside a word."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return (head.rsplit(" ", 1)[0] if " " in head else head).rstrip(",;: ") + " ..."


# the schema's string patterns in words (tests/config/test_error_sweep.py checks every pattern has them)
PATTERN_WORDS = {
    r"^[a-z][a-z0-9-]{0,62}$": "lowercase letters, digits and '-', starting with a letter, at most 63 characters",
    r"^[A-Za-z0-9][\w.-]*/[\w.-]+$": "a Hugging Face repo id <owner>/<name>, e.g. 'Qwen/Qwen2.5-1.5B-Instruct'",
    r"^[0-9a-f]{12}$": "12 lowercase hex digits, as `simulator replay` prints it",
    r"^(latest|v[0-9]{8})$": "'latest' (dev only) or a pinned AL2023 AMI version v<YYYYMMDD>, e.g. 'v20250715'",
    r"^(latest|v[0-9]+\.[0-9]+\.[0-9]+)$": "'latest' (dev only) or a pinned Bottlerocket version, e.g. 'v1.42.0'",
    r"^1\.[0-9]{2}$": 'a Kubernetes minor version in quotes, e.g. "1.34"',
    r"^(builtin:seed-day|.+\.(csv|json))$": "'builtin:seed-day' or the path of a traffic day's .csv or .json file",
    r"^[#@]?[a-z0-9][a-z0-9._-]{0,79}$": (
        "a Slack channel or user such as '#llm-alerts': lowercase letters, digits, '.', '_' and '-', at most 80, "
        "after an optional # or @"
    ),
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$": "an IAM role ARN, arn:aws:iam::<12-digit account>:role/<name>",
    r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/.+$": (
        "an ACM certificate ARN, arn:aws:acm:<region>:<12-digit account>:certificate/<id>"
    ),
}


def format_errors(exc: ValidationError, raw: dict[str, Any], source: StackSource | None = None) -> str:
    return "\n".join(error_lines(exc, raw, source))


def error_lines(exc: ValidationError, raw: dict[str, Any], source: StackSource | None = None) -> list[str]:
    """One line per problem of a validation error (each of a validator's RuleErrors is a line)."""
    lines = [line for err in exc.errors() for line in _lines(err, raw, source)]
    return list(dict.fromkeys(lines))


def rule_lines(cause: ValueError, raw: dict[str, Any], source: StackSource | None = None) -> list[str]:
    """The lines of rules broken outside a validation (the stack's rules run on the blocks that validated)."""
    return _lines({"loc": (), "ctx": {"error": cause}, "msg": str(cause), "type": "value_error"}, raw, source)


def _lines(err: Any, raw: dict[str, Any], source: StackSource | None) -> list[str]:
    loc = tuple(err["loc"])
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, RuleErrors):
        return [
            line
            for inner in cause.errors
            for line in _lines({**err, "ctx": {"error": inner}, "msg": str(inner)}, raw, source)
        ]
    if isinstance(cause, RuleError):
        full = loc + cause.loc
        written = source.written(full) if source else None
        if cause.value is None and written is None:  # a missing field: nothing to show
            return [f"{_at(source, full)}{path_of(full, raw)}: {cause.message}"]
        return [f"{_at(source, full)}{path_of(full, raw)}: {shown(cause.value, written)} {cause.message}"]
    return [_line(err, raw, source)]


def _line(err: Any, raw: dict[str, Any], source: StackSource | None) -> str:
    loc = tuple(err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "value_error" and _SELF_LOCATED.match(msg):
        return f"{_key_at(source, loc, _fields_named(msg))}{_name_items(msg, raw)}"
    if err["type"] == "extra_forbidden":
        where = source.where(source.key_line(loc)) if source else ""
        return where + unknown_key(path_of(loc, raw), str(loc[-1]), allowed_keys(loc[:-1]))
    if err["type"] == "missing":
        return f"{_at(source, loc[:-1])}{path_of(loc, raw)}: is required but missing"
    written = source.written(loc) if source else None
    value = shown(err.get("input"), written)
    msg = _allowed_in_words(err, msg, written)
    if msg.startswith(value):  # the validator's message already names the value (`'x' is not a duration`)
        return f"{_at(source, loc)}{path_of(loc, raw)}: {msg}"
    joint = "; " if msg.startswith("allowed:") else ": "
    return f"{_at(source, loc)}{path_of(loc, raw)}: {value} is not allowed{joint}{msg}"


def _allowed_in_words(err: Any, msg: str, written: str | None) -> str:
    """pydantic's message, a pattern said in words, and a hint to quote where YAML changed the value's type."""
    pattern = (err.get("ctx") or {}).get("pattern")
    if err["type"] == "string_pattern_mismatch" and pattern in PATTERN_WORDS:
        return f"allowed: {PATTERN_WORDS[pattern]}"
    value, loc = err.get("input"), err["loc"]
    if err["type"] == "string_type" and isinstance(value, bool | int | float):
        kind = "a boolean" if isinstance(value, bool) else "a number"
        text = written if written is not None else json.dumps(value)
        key = loc[-1] if loc and isinstance(loc[-1], str) else "value"
        return (
            f'{msg}; YAML reads the unquoted {text} as {kind}: quote it to keep it text, e.g. {key}: "{text}"'
        )
    if err["type"] in _SHAPES:
        return f"{msg}; {_SHAPES[err['type']]}"
    return msg


# what a block of the wrong shape should have been
_SHAPES = {
    "list_type": "allowed: a YAML list, one `- ` item per entry",
    "dict_type": "allowed: a YAML mapping of key: value",
    "model_type": "allowed: a YAML mapping of the block's keys",
    "model_attributes_type": "allowed: a YAML mapping of the block's keys",
}


def _at(source: StackSource | None, loc: tuple[Any, ...]) -> str:
    return source.where(source.line(loc)) if source else ""


def _key_at(source: StackSource | None, loc: tuple[Any, ...], fields: tuple[str, ...]) -> str:
    """`file:line: ` of the deepest of `fields` below `loc` that the file writes (the key's own line), else
    of `loc` itself."""
    if source is None:
        return ""
    for depth in range(len(fields), 0, -1):
        if source.line(loc + fields[:depth]) is not None:
            return source.where(source.key_line(loc + fields[:depth]))
    return _at(source, loc)


_FIELD_PATH = re.compile(r"^[a-z][A-Za-z]*(?:\[[^\]]+\])?(?P<rest>(?:\.[a-z][A-Za-z]*)*)")


def _fields_named(msg: str) -> tuple[str, ...]:
    """The fields below the raising object that a self-located message names: `gpuNodePools[g5].mig: ...`
    -> ('mig',), so its line is the key's, not the object's first line."""
    match = _FIELD_PATH.match(msg)
    return tuple(part for part in match.group("rest").split(".") if part) if match else ()


def _name_items(msg: str, raw: dict[str, Any]) -> str:
    """`gpuNodePools[g5].mig: ...` -> `gpuNodePools[0] (g5).mig: ...`: one path format for every message."""
    match = _NAMED_ITEM.match(msg)
    items = raw.get(match.group("list")) if match else None
    if not match or not isinstance(items, list):
        return msg
    names = [i.get("name") if isinstance(i, dict) else None for i in items]
    if match.group("name") not in names:
        return msg
    index = names.index(match.group("name"))
    return f"{match.group('list')}[{index}] ({match.group('name')}){msg[match.end() :]}"


def allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys the schema allows in the mapping at `loc` (empty when `loc` is not a schema object)."""
    model: type[BaseModel] | None = StackConfig
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = next((f for name, f in model.model_fields.items() if (f.alias or name) == part), None)
        model = _schema_class(field.annotation) if field is not None else None
    if model is None:
        return []
    return [f.alias or name for name, f in model.model_fields.items()]


def _schema_class(annotation: Any) -> type[BaseModel] | None:
    """The schema class inside `list[X]`, `X | None` or `Annotated[X, ...]`."""
    pending = [annotation]
    while pending:
        candidate = pending.pop()
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
        pending.extend(get_args(candidate))
    return None
