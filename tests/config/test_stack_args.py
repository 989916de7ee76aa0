"""config/stack_args.py describes the schema exactly: regenerated from config/schema/, it is unchanged,
and every key a stack file may set is a key of its typed args."""

from __future__ import annotations

import typing

from pydantic import BaseModel

from llm_platform.config import stack_args
from llm_platform.config.schema import GpuNodePool, ModelConfig, StackConfig
from llm_platform.platform import LlmPlatformArgs
from llm_platform.tools.stack_args import TARGET, source, type_name


def test_the_committed_module_is_the_generated_one() -> None:
    assert TARGET.read_text() == source(), "stale: uv run python -m llm_platform.tools.stack_args"


def test_every_stack_file_key_is_a_typed_key_with_its_requiredness() -> None:
    def check(model: type[BaseModel]) -> None:
        typed = getattr(stack_args, type_name(model))
        hints = typing.get_type_hints(typed, include_extras=True)
        for name, field in model.model_fields.items():
            key = field.alias or name
            assert key in hints, f"{model.__name__}.{key}"
            assert (key in typed.__required_keys__) == field.is_required(), f"{model.__name__}.{key}"

    for model in (GpuNodePool, ModelConfig):
        check(model)
    top = LlmPlatformArgs.__annotations__
    assert {
        "cluster",
        "gpu_node_pools",
        "models",
        "model_cache",
        "gateway",
        "alerting",
        "environment",
    } <= set(top)
    assert set(StackConfig.model_fields) <= set(top)
