"""The provider path holds a TypeScript or YAML program's raw properties to the rules and messages a Python
caller gets: a key the schema does not name is refused with the closest one, never dropped."""

from __future__ import annotations

import pulumi
import pytest
from pulumi.errors import InputPropertyError
from pulumi.provider.server import ComponentInitError

from llm_platform import ConfigError, LlmPlatform
from llm_platform.testing import evaluate, example_values, test_args
from tests.package.built_provider import provider
from tests.package.test_provider import _over_the_wire

TOKEN = "llm-platform:index:LlmPlatform"
SECRETS = {"grafanaAdminPassword": "test-only-secret", "apiKey": "test-only-secret"}


def _construct(values: dict, secrets: dict[str, str] = SECRETS) -> None:
    sent = _over_the_wire(values)

    def program() -> None:
        given = {k: pulumi.Output.secret(v) for k, v in secrets.items()}
        provider().construct("llm-dev", TOKEN, {**sent, **given})

    evaluate(program)


def test_an_unknown_nested_key_is_refused_as_python_refuses_it() -> None:
    values = example_values()
    values["models"][0]["autoscaling"]["maxReplica"] = 5
    with pytest.raises(ConfigError) as python:
        evaluate(lambda: LlmPlatform("llm-dev", test_args(values)))
    with pytest.raises(ComponentInitError) as construct:
        _construct(values)
    assert str(construct.value) == str(python.value)
    assert str(python.value).startswith(
        "models[0] (qwen-1-5b).autoscaling.maxReplica: unknown key (did you mean 'maxReplicas'?)"
    )


def test_an_unknown_key_outside_the_stack_files_blocks_is_refused_with_the_closest_one() -> None:
    values = example_values()
    values["gpuNodePool"] = values.pop("gpuNodePools")
    with pytest.raises(InputPropertyError) as error:
        _construct(values)
    # the missing required input is reported first by the SDK; put it back and only the stray key is left
    values["gpuNodePools"] = values["gpuNodePool"]
    with pytest.raises(InputPropertyError) as error:
        _construct(values)
    assert error.value.property_path == "gpuNodePool"
    assert error.value.reason.startswith("gpuNodePool: unknown key (did you mean 'gpuNodePools'?); allowed: ")


def test_a_missing_secret_is_named_as_the_programs_input() -> None:
    with pytest.raises(ComponentInitError) as error:
        _construct(example_values(), {"grafanaAdminPassword": "test-only-secret"})
    assert str(error.value) == (
        f"apiKey: required by this config, not set; pass it as a secret input of {TOKEN}"
    )
