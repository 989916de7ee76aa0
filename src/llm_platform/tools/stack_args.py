"""Write `config/stack_args.py`: the stack file's schema (`config/schema/`) as TypedDicts, the typed args
of LlmPlatform. Pyright checks a Python program's args against them, and Pulumi's component schema
inference reads them, so TypeScript, Go and YAML programs get the same keys, types and docs.

    uv run python -m llm_platform.tools.stack_args            # rewrite the module after a schema change
    uv run python -m llm_platform.tools.stack_args --check    # exit 1 when it is stale (the tests do this)

The schema stays the one definition: these types only describe it (keys as written in a stack file,
camelCase), and `config.loader.parse` still validates every value with the schema's own rules.
"""

from __future__ import annotations

import argparse
import enum
import ipaddress
import sys
import types
import typing
from pathlib import Path

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from llm_platform.config.schema import StackConfig

TARGET = Path(__file__).resolve().parents[1] / "config" / "stack_args.py"
# the stack file's top-level keys LlmPlatformArgs takes itself (snake_case there), not a generated type
TOP = StackConfig


def type_name(model: type[BaseModel]) -> str:
    return model.__name__.removesuffix("Config") + "Settings"


def _python_type(annotation: object, found: list[type[BaseModel]]) -> str:
    """The TypedDict spelling of a schema annotation: models become their Args type, literals their base
    type (the allowed values go in the docstring), addresses and enums str."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _python_type(args[0], found)
    if origin in (typing.Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return _python_type(kept[0], found) if len(kept) == 1 else "Any"
    if origin is typing.Literal:
        return type(args[0]).__name__
    if origin is list:
        return f"list[{_python_type(args[0], found)}]"
    if origin is dict:
        return f"dict[{_python_type(args[0], found)}, {_python_type(args[1], found)}]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in found:
            found.append(annotation)
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


def _class(model: type[BaseModel], found: list[type[BaseModel]]) -> str:
    doc = " ".join((model.__doc__ or f"The stack file's {model.__name__}.").split())
    lines = [f"class {type_name(model)}(TypedDict):", f'    """{doc}"""', ""]
    for name, field in model.model_fields.items():
        key = field.alias or name
        spelled = _python_type(field.annotation, found)
        lines.append(f"    {key}: {spelled if field.is_required() else f'NotRequired[{spelled}]'}")
        if described := _doc(field):
            lines.append(f'    """{described}."""'.replace("\\", "\\\\"))
    return "\n".join(lines)


def source() -> str:
    """The module's text: one TypedDict per schema model below the top level, each after those it uses."""
    found: list[type[BaseModel]] = []
    for field in TOP.model_fields.values():
        _python_type(field.annotation, found)
    classes: dict[type[BaseModel], str] = {}
    while len(classes) < len(found):
        for model in [m for m in found if m not in classes]:
            classes[model] = _class(model, found)
    ordered: list[type[BaseModel]] = []

    def place(model: type[BaseModel]) -> None:
        if model in ordered:
            return
        for field in model.model_fields.values():
            inner: list[type[BaseModel]] = []
            _python_type(field.annotation, inner)
            for used in inner:
                place(used)
        ordered.append(model)

    for model in found:
        place(model)
    names = sorted(type_name(m) for m in ordered)
    header = [
        '"""The stack file\'s schema as typed args (camelCase keys, as in `Pulumi.<stack>.yaml`).',
        "",
        "Generated from config/schema/ by `python -m llm_platform.tools.stack_args`; do not edit. The schema",
        "validates every value; these types describe it to type checkers and to Pulumi's schema inference.",
        '"""',
        "",
        "from typing import Any, NotRequired, TypedDict",
        "",
        "__all__ = [",
        *[f'    "{n}",' for n in names],
        "]",
    ]
    body = "\n\n\n".join(classes[m] for m in ordered)
    text = "\n".join(header) + "\n\n\n" + body + "\n"
    return text if "Any" in body else text.replace("from typing import Any, ", "from typing import ")


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
