"""The package as users compose it: the public API, the top-level component on its own args, a part of the
platform built from the components alone, and the testing helper they import."""

from __future__ import annotations

import pytest

import llm_platform
from llm_platform import ConfigError, LlmPlatform
from llm_platform.testing import evaluate, example_values, test_args


def test_every_public_name_resolves_and_nothing_else_is_exported() -> None:
    for name in llm_platform.__all__:
        assert getattr(llm_platform, name) is not None, name
    with pytest.raises(AttributeError):
        _ = llm_platform.NotAComponent  # type: ignore[attr-defined]


def test_the_simulator_does_not_load_the_cloud_sdks() -> None:
    import subprocess
    import sys

    code = "import sys, llm_platform.simulator.day.engine; print('pulumi_aws' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_top_level_component_builds_the_platform_from_stack_file_values() -> None:
    recorded = evaluate(lambda: LlmPlatform("llm-dev", test_args(example_values())))
    platform = recorded.by_type("llm-platform:index:LlmPlatform")
    assert [p.name for p in platform] == ["llm-dev"]
    deployments = recorded.by_type("kubernetes:apps/v1:Deployment")
    assert [d.inputs["metadata"]["namespace"] for d in deployments] == ["model-qwen-1-5b"]
    top = [r for r in recorded.created if r.parent_urn == platform[0].urn and r.typ != "pulumi:providers:aws"]
    assert {r.typ for r in top} >= {
        "llm-platform:index:Network",
        "llm-platform:index:EksCluster",
        "llm-platform:index:InferenceService",
    }
    # every child was a top-level resource of the stack program: it aliases the URN it had there
    for r in top:
        assert any("::llm-platform:index:LlmPlatform" not in a for a in r.aliases), r.urn


def test_bad_values_stop_before_any_resource_with_the_stack_file_message() -> None:
    values = example_values()
    values["gpuNodePools"][0]["gpuLimit"] = 0
    with pytest.raises(ConfigError, match=r"gpuNodePools\[0\] \(gpu-spot\)\.gpuLimit: 0"):
        evaluate(lambda: LlmPlatform("llm-dev", test_args(values)))


def test_a_secret_the_values_need_is_asked_for_by_its_python_argument_name() -> None:
    """A Python caller passes `api_key=`, `hugging_face_token=`: the message names those, not the stack
    file's `apiKey` (the stack program asks for its secrets by their stack-file keys itself)."""
    values = example_values()
    values["models"][0]["needsHfToken"] = True
    args = test_args(values)
    del args["api_key"]  # type: ignore[misc]
    del args["hugging_face_token"]  # type: ignore[misc]
    with pytest.raises(ConfigError) as error:
        evaluate(lambda: LlmPlatform("llm-dev", args))
    lines = str(error.value).splitlines()
    assert lines[0].startswith("api_key=: required by this config, not set; pass it in LlmPlatformArgs")
    assert lines[1].startswith("hugging_face_token=: required by this config, not set")
    assert "apiKey" not in str(error.value) and "huggingFaceToken" not in str(error.value)


def test_the_package_is_marked_typed_for_type_checkers() -> None:
    """PEP 561: without `py.typed` in the installed package, mypy skips it (`import-untyped`) and every
    annotation of the public API is lost to a user's type checker (tests/package/installed_wheel.py checks
    the built wheel ships it)."""
    from pathlib import Path

    assert (Path(llm_platform.__file__).parent / "py.typed").is_file()


def test_the_stack_program_asks_for_a_missing_secret_by_its_stack_file_key() -> None:
    """From a stack file, the secret is a Pulumi config key: the message names `llm-platform:apiKey` and the
    command that sets it, not the Python argument."""
    from pathlib import Path

    from llm_platform.tools import mocks
    from llm_platform.tools.render import stack_config

    stack = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "Pulumi.dev.yaml"
    config, secret_keys = stack_config(stack)
    del config["llm-platform:apiKey"]
    _, loop = mocks.install("dev", config, secret_keys)
    try:
        with pytest.raises(Exception, match=r"nothing was deployed") as error:
            mocks.run_main()
    finally:
        mocks.uninstall(loop)
    assert "apiKey: required by this config, not set (pulumi config set --secret apiKey" in str(error.value)
    assert "api_key" not in str(error.value)


def test_one_list_of_components_makes_the_api_the_lazy_exports_and_the_provider() -> None:
    """llm_platform.COMPONENTS: each is public with its Args, imported on first use, served by the provider
    under its schema token; and type checkers see the same public names (the TYPE_CHECKING imports)."""
    import ast
    from pathlib import Path

    from llm_platform.provider import COMPONENTS, schema

    names = list(llm_platform.COMPONENTS)
    assert [c.__name__ for c in COMPONENTS] == names
    assert {t.rsplit(":", 1)[-1] for t in schema()["resources"]} == set(names)
    for name in names:
        assert {name, f"{name}Args"} <= set(llm_platform.__all__)
        assert getattr(llm_platform, name).__module__ == llm_platform.COMPONENTS[name]
    tree = ast.parse(Path(llm_platform.__file__).read_text())
    (checking,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    seen = {a.asname for i in checking.body if isinstance(i, ast.ImportFrom) for a in i.names}
    assert seen == set(llm_platform.__all__) - {"__version__"}
