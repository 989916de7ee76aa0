"""Write `config/stack_args.py`: the stack file's schema (`config/schema/`) as TypedDicts, the typed args
of LlmPlatform. Pyright checks a Python program's args against them, and Pulumi's component schema
inference reads them, so TypeScript, Go and YAML programs get the same keys, types and docs.

    uv run python -m llm_platform.tools.stack_args            # rewrite the module after a schema change
    uv run python -m llm_platform.tools.stack_args --check    # exit 1 when it is stale (the tests do this)

The schema stays the one definition: these types only describe it (keys as written in a stack file,
camelCase), and `config.loader.parse` still validates every value with the schema's own rules.

A field that allows a fixed set of strings (a `Literal` or a str enum in the schema) gets a `StrEnum`, so the
provider's schema publishes it as an enum (`ClusterMode`, `ModelCache`, ...), and the field's type is the
enum's `...Value` alias: for type checkers the enum or its values as plain strings (`"eks"` or
`ClusterMode.EKS`); at runtime the enum alone, since the SDK's schema inference reads the annotations at
runtime and takes no unions.
"""

from __future__ import annotations

import argparse
import enum
import ipaddress
import re
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from llm_platform import COMPONENTS
from llm_platform.config.schema import StackConfig

TARGET = Path(__file__).resolve().parents[1] / "config" / "stack_args.py"
# the stack file's top-level keys LlmPlatformArgs takes itself (snake_case there), not a generated type
TOP = StackConfig
LINE = 110  # ruff's line-length (pyproject.toml): the module is written as `ruff format` leaves it


def type_name(model: type[BaseModel]) -> str:
    return model.__name__.removesuffix("Config") + "Settings"


@dataclass(frozen=True)
class Choice:
    """A field's fixed set of strings, as the StrEnum the module declares (or imports, for a schema enum)."""

    name: str
    values: tuple[str, ...]
    field: str  # where it is used first, for its docstring: `ClusterSettings.mode`
    schema_enum: type[enum.Enum] | None = None


@dataclass
class Found:
    """What the module declares besides the stack file's blocks: the models' TypedDicts and the enums."""

    models: list[type[BaseModel]]
    choices: dict[str, Choice]


def _pascal(key: str, *, plural: bool) -> str:
    word = key[:1].upper() + key[1:]
    return word.removesuffix("s") if plural else word


def _choice(annotation: object, owner: str, key: str, *, plural: bool, found: Found) -> str | None:
    """The `...Value` alias of a str Literal or str enum annotation (its Choice recorded), else None."""
    if typing.get_origin(annotation) is typing.Literal:
        values = typing.get_args(annotation)
        if not all(isinstance(v, str) for v in values):
            return None
        name = owner.removesuffix("Settings") + _pascal(key, plural=plural)
        # a component's name is the resource's in the provider's schema and the SDKs: the enum is a kind of it
        choice = Choice(f"{name}Kind" if name in COMPONENTS else name, values, f"{owner}.{key}")
    elif isinstance(annotation, type) and issubclass(annotation, enum.StrEnum):
        values = tuple(m.value for m in annotation)
        choice = Choice(annotation.__name__, values, f"{owner}.{key}", annotation)
    else:
        return None
    seen = found.choices.setdefault(choice.name, choice)
    if seen.values != choice.values:
        raise ValueError(f"{choice.field} and {seen.field} both make the enum {choice.name}")
    return f"{choice.name}Value"


def _python_type(
    annotation: object, found: Found, owner: str = "", key: str = "", *, plural: bool = False
) -> str:
    """The TypedDict spelling of a schema annotation: models become their Args type, str literals and str
    enums their `...Value` alias, other literals their base type (the allowed values go in the docstring),
    addresses str."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _python_type(args[0], found, owner, key, plural=plural)
    if origin in (typing.Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return _python_type(kept[0], found, owner, key, plural=plural) if len(kept) == 1 else "Any"
    if (alias := _choice(annotation, owner, key, plural=plural, found=found)) is not None:
        return alias
    if origin is typing.Literal:
        return type(args[0]).__name__
    if origin is list:
        return f"list[{_python_type(args[0], found, owner, key, plural=True)}]"
    if origin is dict:
        return f"dict[{_python_type(args[0], found)}, {_python_type(args[1], found)}]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in found.models:
            found.models.append(annotation)
        return type_name(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "str"
    if annotation in (ipaddress.IPv4Network, ipaddress.IPv4Address):
        return "str"
    if annotation in (str, int, float, bool):
        return annotation.__name__  # type: ignore[union-attr]
    return "Any"


def _allowed(annotation: object) -> list[str]:
    """The literal values an annotation allows, anywhere inside it."""
    if typing.get_origin(annotation) is typing.Literal:
        return [repr(a) for a in typing.get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [repr(m.value) for m in annotation]
    return [v for a in typing.get_args(annotation) for v in _allowed(a)]


def _doc(field: FieldInfo) -> str:
    """What the schema says of a field, in words: allowed values, bounds, pattern, default."""
    parts = []
    if allowed := _allowed(field.annotation):
        parts.append("one of " + ", ".join(allowed))
    bounds = {
        Gt: (">", "gt"),
        Ge: (">=", "ge"),
        Lt: ("<", "lt"),
        Le: ("<=", "le"),
        MinLen: ("at least", "min_length"),
        MaxLen: ("at most", "max_length"),
    }
    for meta in field.metadata:
        for kind, (word, attribute) in bounds.items():
            if isinstance(meta, kind):
                items = " items" if kind in (MinLen, MaxLen) else ""
                parts.append(f"{word} {getattr(meta, attribute)}{items}")
        if pattern := getattr(meta, "pattern", None):
            parts.append(f"matches {pattern}")
    if not field.is_required():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            parts.append("default: the schema's defaults")
        elif default is not None and default != [] and default != {}:
            shown = default.value if isinstance(default, enum.Enum) else default
            parts.append(f"default {shown!r}")
    return "; ".join(parts)


def _class(model: type[BaseModel], found: Found) -> str:
    doc = " ".join((model.__doc__ or f"The stack file's {model.__name__}.").split())
    lines = [f"class {type_name(model)}(TypedDict):", f'    """{doc}"""', ""]
    for name, field in model.model_fields.items():
        key = field.alias or name
        spelled = _python_type(field.annotation, found, type_name(model), key)
        lines.append(f"    {key}: {spelled if field.is_required() else f'NotRequired[{spelled}]'}")
        if described := _doc(field):
            lines.append(f'    """{described}."""'.replace("\\", "\\\\"))
    return "\n".join(lines)


def _quoted(value: str) -> str:
    return '"' + value + '"'


def _member(value: str) -> str:
    name = re.sub(r"\W", "_", value).upper()
    if not name.isidentifier():
        raise ValueError(f"{value!r} makes no enum member name")
    return name


def _enums(choices: list[Choice]) -> list[str]:
    """The StrEnums the module declares, then the `...Value` aliases of every enum its fields use."""
    blocks = [
        "\n".join(
            [
                f"class {c.name}(StrEnum):",
                f'    """The values of {c.field}."""',
                "",
                *[f"    {_member(v)} = {_quoted(v)}" for v in c.values],
            ]
        )
        for c in choices
        if c.schema_enum is None
    ]
    checking = []
    for c in choices:
        union = f"{c.name} | Literal[{', '.join(_quoted(v) for v in c.values)}]"
        line = f"    {c.name}Value: TypeAlias = {union}"
        checking.append(
            line if len(line) <= LINE else f"    {c.name}Value: TypeAlias = (\n        {union}\n    )"
        )
    runtime = [f"    {c.name}Value = {c.name}" for c in choices]
    aliases = [
        "# A field that takes an enum takes its members or their values as plain strings (`ClusterMode.EKS` or",
        '# "eks"). At runtime its type is the enum alone: Pulumi\'s schema inference reads these annotations, takes',
        "# no unions, and publishes each enum as an enum type of the provider's schema.",
        "if TYPE_CHECKING:",
        *checking,
        "else:",
        *runtime,
    ]
    return [*blocks, "\n".join(aliases)]


def _ordered(found: Found) -> list[type[BaseModel]]:
    """The models, each after those it uses."""
    ordered: list[type[BaseModel]] = []

    def place(model: type[BaseModel]) -> None:
        if model in ordered:
            return
        for field in model.model_fields.values():
            inner = Found([], {})
            _python_type(field.annotation, inner)
            for used in inner.models:
                place(used)
        ordered.append(model)

    for model in found.models:
        place(model)
    return ordered


def source() -> str:
    """The module's text: the enums, then one TypedDict per schema model below the top level, each after
    those it uses."""
    found = Found([], {})
    for name, field in TOP.model_fields.items():
        _python_type(field.annotation, found, "", field.alias or name)
    classes: dict[type[BaseModel], str] = {}
    while len(classes) < len(found.models):
        for model in [m for m in found.models if m not in classes]:
            classes[model] = _class(model, found)
    ordered = _ordered(found)
    choices = sorted(found.choices.values(), key=lambda c: c.name)
    imported = sorted({(c.schema_enum.__module__, c.name) for c in choices if c.schema_enum is not None})
    names = sorted(
        [type_name(m) for m in ordered] + [c.name for c in choices] + [f"{c.name}Value" for c in choices]
    )
    header = [
        '"""The stack file\'s schema as typed args (camelCase keys, as in `Pulumi.<stack>.yaml`).',
        "",
        "Generated from config/schema/ by `python -m llm_platform.tools.stack_args`; do not edit. The schema",
        "validates every value; these types describe it to type checkers and to Pulumi's schema inference.",
        '"""',
        "",
        "from enum import StrEnum",
        "from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypeAlias, TypedDict",
        "",
        *[f"from {module} import {name}" for module, name in imported],
        "",
        "__all__ = [",
        *[f'    "{n}",' for n in names],
        "]",
    ]
    body = "\n\n\n".join([*_enums(choices), *(classes[m] for m in ordered)])
    text = "\n".join(header) + "\n\n\n" + body + "\n"
    return text if "Any" in body else text.replace("TYPE_CHECKING, Any, ", "TYPE_CHECKING, ")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m llm_platform.tools.stack_args", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if config/stack_args.py is stale")
    args = parser.parse_args()
    text = source()
    if args.check:
        if TARGET.read_text() != text:
            sys.exit(f"{TARGET} is stale: uv run python -m llm_platform.tools.stack_args")
        return
    TARGET.write_text(text)
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
