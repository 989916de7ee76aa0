"""One contract in every language: a field that takes a fixed set of strings is an enum in the provider's
schema (so TypeScript, Go, C# and Java get an enum type, and YAML the allowed values), the provider passes
what a program sends on as the stack file would hold it, and a Python caller still writes plain strings."""

from __future__ import annotations

import enum
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pulumi.provider.server import ComponentInitError
from pydantic import BaseModel

from llm_platform import ConfigError, LlmPlatform
from llm_platform.config.schema import StackConfig
from llm_platform.testing import evaluate, example_values, test_args
from tests.package.built_provider import schema
from tests.package.test_provider_validation import _construct

ROOT = Path(__file__).resolve().parents[2]
TYPES = schema()["types"]


def _choices(annotation: object) -> tuple[str, ...] | None:
    """The strings a schema annotation allows (inside Annotated, Optional or list), if it is a choice."""
    if typing.get_origin(annotation) is typing.Literal:
        values = typing.get_args(annotation)
        return values if all(isinstance(v, str) for v in values) else None
    if isinstance(annotation, type) and issubclass(annotation, enum.StrEnum):
        return tuple(m.value for m in annotation)
    found = [c for a in typing.get_args(annotation) if (c := _choices(a)) is not None]
    return found[0] if found else None


def _schema_fields(
    model: type[BaseModel], seen: set[type[BaseModel]]
) -> typing.Iterator[tuple[str, str, object]]:
    """(schema type name, key, annotation) of every field below the top level, walking nested models."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if model is not StackConfig:
            yield f"{model.__name__.removesuffix('Config')}Settings", key, field.annotation
        stack = [field.annotation]
        while stack:
            a = stack.pop()
            if isinstance(a, type) and issubclass(a, BaseModel) and a not in seen:
                seen.add(a)
                yield from _schema_fields(a, seen)
            stack.extend(typing.get_args(a))


def _enum_values(prop: dict) -> list[str]:
    ref = (prop.get("items") or prop)["$ref"]
    return [v["value"] for v in TYPES[ref.removeprefix("#/types/")]["enum"]]


def test_every_choice_of_the_stack_file_is_an_enum_of_the_schema() -> None:
    checked = 0
    for type_name, key, annotation in _schema_fields(StackConfig, set()):
        allowed = _choices(annotation)
        if allowed is None:
            continue
        prop = TYPES[f"llm-platform:index:{type_name}"]["properties"][key]
        assert _enum_values(prop) == list(allowed), f"{type_name}.{key}"
        checked += 1
    # cluster.mode, addonNodes and pools' capacityTypes, amiFamily, cache, scaling type and selectPolicy,
    # fsx deploymentType, tokenKind, alerting receiver
    assert checked >= 10


def test_every_components_environment_is_the_environment_enum() -> None:
    components = {
        token: r["inputProperties"]["environment"]
        for token, r in schema()["resources"].items()
        if "environment" in r["inputProperties"]
    }
    assert len(components) >= 6
    for token, prop in components.items():
        assert _enum_values(prop) == ["dev", "staging", "prod"], token


def test_an_array_of_enums_reaches_the_component_as_the_stack_file_holds_it() -> None:
    values = example_values()
    values["cluster"]["addonNodes"] = {"capacityTypes": ["on-demand"]}
    values["gpuNodePools"][0]["capacityTypes"] = ["spot", "on-demand"]
    _construct(values)  # the SDK alone maps each item as an object: [{}, {}], which the schema refuses


def test_a_value_outside_an_enum_is_refused_as_python_refuses_it() -> None:
    values = example_values()
    values["gpuNodePools"][0]["capacityTypes"] = ["spot", "on-demnd"]
    with pytest.raises(ConfigError) as python:
        evaluate(lambda: LlmPlatform("llm-dev", test_args(values)))
    with pytest.raises(ComponentInitError) as construct:
        _construct(values)
    assert str(construct.value) == str(python.value)
    assert "capacityTypes[1]" in str(python.value) and "'on-demnd'" in str(python.value)


TYPED_PROGRAM = """
from llm_platform import LlmPlatform
from llm_platform.config.stack_args import ClusterMode, ClusterSettings, GpuNodePoolSettings, ModelSettings

cluster: ClusterSettings = {"name": "team", "availabilityZones": ["us-east-1a", "us-east-1b"], "mode": "eks"}
as_member: ClusterSettings = {"name": "team", "availabilityZones": ["a", "b"], "mode": ClusterMode.EXISTING}
pool: GpuNodePoolSettings = {
    "name": "l4", "instanceFamilies": ["g6"], "gpuLimit": 8, "capacityTypes": ["spot", "on-demand"]
}
model: ModelSettings = {
    "name": "chat", "huggingFaceId": "Qwen/Qwen2.5-1.5B-Instruct", "nodePool": "l4", "maxModelLen": 8192,
    "cache": "hub", "slo": {"ttftSeconds": 1.0, "itlSeconds": 0.1},
}
LlmPlatform("team", {
    "environment": "dev", "cluster": cluster, "gpu_node_pools": [pool], "models": [model],
    "grafana_admin_password": "x",
})
"""


def test_python_callers_pass_plain_strings_and_type_checkers_refuse_other_values(tmp_path: Path) -> None:
    good = tmp_path / "typed_program.py"
    good.write_text(TYPED_PROGRAM)
    bad = tmp_path / "mistyped_program.py"
    bad.write_text(TYPED_PROGRAM.replace('"mode": "eks"', '"mode": "ekss"').replace('"hub"', '"hubb"'))
    run = subprocess.run(
        [sys.executable, "-m", "pyright", "--pythonpath", sys.executable, str(good), str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert "Literal['ekss']\" is not assignable" in run.stdout, run.stdout
    assert "Literal['hubb']\" is not assignable" in run.stdout, run.stdout
    assert "\n2 errors, " in run.stdout, run.stdout  # those two only: the program with plain strings is clean
