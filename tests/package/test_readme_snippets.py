"""The "Use it from your own program" snippets (docs/library.md) work as shown: the Python program builds the
platform under mocks, the test snippet passes, and the YAML program's properties satisfy the schema and
the stack file's rules."""

from __future__ import annotations

import inspect
import re

import pulumi_kubernetes as k8s
import yaml

from llm_platform.testing import evaluate
from tests import docs
from tests.package.built_provider import schema
from tests.package.test_examples import TOKEN, Expression, _problems, accepted, schema_problems

SECTION = docs.section("Use it from your own program")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)


def test_the_python_program_builds_the_platform() -> None:
    program = next(b for b in blocks("python") if "LlmPlatformArgs(" in b)
    project = "my-platform"
    secrets = {f"{project}:grafanaAdminPassword": "test-only-secret", f"{project}:apiKey": "test-only-secret"}
    recorded = evaluate(lambda: exec(program, {"__name__": "__main__"}), project=project, config=secrets)
    assert [r.name for r in recorded.by_type("llm-platform:index:LlmPlatform")] == ["llm-dev"]
    assert len(recorded.by_type("kubernetes:apps/v1:Deployment")) == 1


def test_the_component_program_serves_a_model_on_an_existing_cluster() -> None:
    program = next(b for b in blocks("python") if "InferenceServiceArgs(" in b)
    project = "my-serving"
    config = {f"{project}:kubeconfig": "{}", f"{project}:apiKey": "test-only-secret"}
    recorded = evaluate(lambda: exec(program, {"__name__": "__main__"}), project=project, config=config)
    assert [r.name for r in recorded.by_type("llm-platform:index:InferenceService")] == ["team-qwen"]
    (deployment,) = recorded.by_type("kubernetes:apps/v1:Deployment")
    assert deployment.k8s_provider == "team-k8s"
    assert deployment.inputs["spec"]["template"]["spec"]["nodeSelector"] == {"llm-platform/gpu-pool": "l4"}
    assert not [r for r in recorded.created if r.typ.startswith("aws:")]  # an existing cluster: no AWS


def test_the_test_snippet_passes() -> None:
    snippet = next(b for b in blocks("python") if "def test_" in b)
    namespace: dict = {}
    exec(snippet, namespace)
    tests = [namespace[name] for name in re.findall(r"^def (test_\w+)", snippet, re.M)]
    assert tests
    for test in tests:
        test()


def test_the_yaml_program_satisfies_the_schema_and_the_rules() -> None:
    program = yaml.safe_load(next(b for b in blocks("yaml") if TOKEN in b))
    for resource in program["resources"].values():
        properties = {
            k: Expression(v) if isinstance(v, str) and v.startswith("${") else v
            for k, v in resource["properties"].items()
        }
        assert schema_problems(properties) == []
        accepted(properties)


def test_the_yaml_program_on_an_existing_cluster_passes_its_own_provider_on() -> None:
    program = yaml.safe_load(next(b for b in blocks("yaml") if "index:ExistingCluster" in b))
    package = schema()
    resources = program["resources"]
    for resource in resources.values():
        if not resource["type"].startswith("llm-platform:"):
            continue
        spec = package["resources"][resource["type"]]
        properties = {
            k: Expression(v) if isinstance(v, str) and v.startswith("${") else v
            for k, v in resource["properties"].items()
        }
        assert (
            _problems(properties, spec["inputProperties"], spec["requiredInputs"], package["types"], "") == []
        )
    # the Kubernetes provider is built from ExistingCluster's outputs, with the settings its own provider has
    k8s_provider = resources["k8s"]
    assert k8s_provider["type"] == "pulumi:providers:kubernetes"
    outputs = package["resources"]["llm-platform:index:ExistingCluster"]["properties"]
    for value in k8s_provider["properties"].values():
        if isinstance(value, str) and value.startswith("${cluster."):
            assert value.removeprefix("${cluster.").removesuffix("}") in outputs, value
    taken = inspect.signature(k8s.Provider._internal_init).parameters
    for key in k8s_provider["properties"]:
        assert re.sub(r"([A-Z])", r"_\1", key).lower() in taken, key
    assert k8s_provider["properties"]["enableServerSideApply"] is True
    assert all(r["options"]["provider"] == "${k8s}" for r in resources.values() if "options" in r)
