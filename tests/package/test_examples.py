"""The programs under examples/ use the component as its schema says (known inputs, required ones set,
config plain) and with values the platform accepts (the stack file's rules), so an example cannot drift
from the args it shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tree_sitter_typescript
import yaml
from tree_sitter import Language, Node, Parser

from llm_platform.config.loader import parse
from llm_platform.platform import config_of, platform_args
from tests.package.built_provider import schema

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOKEN = "llm-platform:index:LlmPlatform"


class Expression(str):
    """A program expression in place of a literal (a secret read from config, an output)."""


def schema_problems(properties: dict[str, Any]) -> list[str]:
    """What the provider's schema says is wrong with a component's properties: unknown or missing keys,
    an expression where a plain value must be, a value of the wrong type, at any depth."""
    package = schema()
    resource = package["resources"][TOKEN]
    return _problems(
        properties, resource["inputProperties"], resource["requiredInputs"], package["types"], ""
    )


def _problems(value: dict, properties: dict, required: list[str], types: dict, at: str) -> list[str]:
    problems = [f"{at}{k}: not an input of {TOKEN}" for k in value if k not in properties]
    problems += [f"{at}{k}: required, not set" for k in required if k not in value]
    for key, item in value.items():
        if key in properties:
            problems += _value_problems(item, properties[key], types, f"{at}{key}")
    return problems


PRIMITIVES = {"string": str, "number": (int, float), "integer": int, "boolean": bool}


def _value_problems(value: Any, spec: dict, types: dict, at: str) -> list[str]:
    if isinstance(value, Expression):
        return [f"{at}: must be a plain value, not {value}"] if spec.get("plain") else []
    if "$ref" in spec:
        ref = spec["$ref"].removeprefix("#/types/")
        if ref.startswith("pulumi.json#"):
            return []
        if "enum" in types[ref]:
            allowed = [v["value"] for v in types[ref]["enum"]]
            return [] if value in allowed else [f"{at}: {value!r} is not one of {allowed} ({ref})"]
        if not isinstance(value, dict):
            return [f"{at}: {type(value).__name__} where the schema says an object ({ref})"]
        kind = types[ref]
        return _problems(value, kind["properties"], kind.get("required", []), types, f"{at}.")
    kind = spec.get("type")
    if kind == "array":
        if not isinstance(value, list):
            return [f"{at}: {type(value).__name__} where the schema says an array"]
        return [
            p for i, v in enumerate(value) for p in _value_problems(v, spec["items"], types, f"{at}[{i}]")
        ]
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{at}: {type(value).__name__} where the schema says an object"]
        inner = spec.get("additionalProperties", {})
        return [p for k, v in value.items() for p in _value_problems(v, inner, types, f"{at}.{k}")]
    expected = PRIMITIVES.get(kind or "")
    if expected is not None and (
        not isinstance(value, expected) or isinstance(value, bool) != (kind == "boolean")
    ):
        return [f"{at}: {type(value).__name__} where the schema says {kind}"]
    return []


def accepted(properties: dict[str, Any]) -> None:
    """The stack file's rules over the example's config (raises ConfigError naming the field)."""
    stack_values = {k: v for k, v in properties.items() if not isinstance(v, Expression)}
    parse(config_of(platform_args(stack_values)), region="us-east-1")


def yaml_properties(program: Path) -> list[dict[str, Any]]:
    doc = yaml.safe_load(program.read_text())

    def literal(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("${"):
            return Expression(value)
        if isinstance(value, dict):
            return {k: literal(v) for k, v in value.items()}
        if isinstance(value, list):
            return [literal(v) for v in value]
        return value

    return [literal(r.get("properties") or {}) for r in doc["resources"].values() if r["type"] == TOKEN]


def typescript_properties(program: Path) -> list[dict[str, Any]]:
    parser = Parser(Language(tree_sitter_typescript.language_typescript()))
    source = program.read_bytes()
    tree = parser.parse(source)

    def text(node: Node) -> str:
        return source[node.start_byte : node.end_byte].decode()

    def field(node: Node, name: str) -> Node:
        child = node.child_by_field_name(name)
        assert child is not None, f"{program}: a {node.type} without its {name}"
        return child

    def literal(node: Node) -> Any:
        match node.type:
            case "object":
                pairs = [c for c in node.named_children if c.type == "pair"]
                return {text(field(p, "key")).strip("\"'"): literal(field(p, "value")) for p in pairs}
            case "array":
                return [literal(c) for c in node.named_children if c.type != "comment"]
            case "string":
                return text(node)[1:-1]
            case "number":
                number = float(text(node))
                return int(number) if number.is_integer() else number
            case "true" | "false":
                return node.type == "true"
            case _:
                return Expression(text(node))

    found = []

    def walk(node: Node) -> None:
        if node.type == "new_expression" and text(field(node, "constructor")).endswith(".LlmPlatform"):
            found.append(literal(field(node, "arguments").named_children[1]))
        for child in node.named_children:
            walk(child)

    walk(tree.root_node)
    return found


@pytest.mark.parametrize(
    ("program", "read"),
    [("yaml/Pulumi.yaml", yaml_properties), ("typescript/index.ts", typescript_properties)],
)
def test_the_example_uses_the_component_as_the_schema_says(program: str, read) -> None:
    properties = read(EXAMPLES / program)
    assert len(properties) == 1, f"{program}: one LlmPlatform expected"
    assert schema_problems(properties[0]) == []
    accepted(properties[0])


def test_the_checks_catch_what_a_stale_example_would_get_wrong() -> None:
    good = yaml_properties(EXAMPLES / "yaml" / "Pulumi.yaml")[0]
    assert schema_problems({**good, "gpuPools": []}) == ["gpuPools: not an input of " + TOKEN]
    assert schema_problems({k: v for k, v in good.items() if k != "cluster"}) == [
        "cluster: required, not set"
    ]
    assert schema_problems({**good, "environment": Expression("${env}")}) == [
        "environment: must be a plain value, not ${env}"
    ]
    pool = good["gpuNodePools"][0]
    assert schema_problems(
        {**good, "gpuNodePools": [{**pool, "gpuLimit": "4", "instanceFamily": ["g5"]}]}
    ) == [
        "gpuNodePools[0].instanceFamily: not an input of " + TOKEN,
        "gpuNodePools[0].gpuLimit: str where the schema says integer",
    ]
    assert schema_problems({**good, "gpuNodePools": [{**pool, "capacityTypes": ["spot", "ondemand"]}]}) == [
        "gpuNodePools[0].capacityTypes[1]: 'ondemand' is not one of ['reserved', 'spot', 'on-demand']"
        " (llm-platform:index:GpuNodePoolCapacityType)"
    ]
    with pytest.raises(ValueError, match="gpuLimit"):
        accepted({**good, "gpuNodePools": [{**good["gpuNodePools"][0], "gpuLimit": -1}]})
