"""Any language: the package as a Pulumi component provider. The committed schema is the one the SDK infers
from the args, and a YAML program's camelCase inputs, sent over the wire, build the same platform as the
stack program does from the stack file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pulumi
from pulumi.runtime import rpc

from llm_platform.testing import evaluate, stack_file_values
from llm_platform.tools.render import evaluate as render_stack
from tests.package.built_provider import provider, schema

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.gateway.yaml"
TOKEN = "llm-platform:index:LlmPlatform"


def test_the_committed_schema_is_the_inferred_one() -> None:
    committed = json.loads((ROOT / "provider" / "schema.json").read_text())
    assert committed == schema(), (
        "provider/schema.json is stale: uv run python -m llm_platform.provider schema > provider/schema.json"
    )


def test_the_schema_takes_the_stack_files_keys_and_marks_the_config_plain() -> None:
    inputs = schema()["resources"][TOKEN]["inputProperties"]
    assert {"environment", "cluster", "gpuNodePools", "models", "modelCache", "gateway", "alerting"} <= set(
        inputs
    )
    assert all(inputs[k].get("plain") for k in ("environment", "cluster", "gpuNodePools", "models"))
    assert not inputs["apiKey"].get("plain")  # a secret is an Input: an Output of another resource will do
    assert set(schema()["resources"][TOKEN]["requiredInputs"]) == {
        "cluster",
        "environment",
        "gpuNodePools",
        "grafanaAdminPassword",
    }


def _over_the_wire(inputs: dict) -> dict:
    """Inputs as the provider receives them from a YAML or TypeScript program: protobuf values (every
    number a double), secrets as secret Outputs."""
    loop = asyncio.new_event_loop()
    try:
        struct = loop.run_until_complete(rpc.serialize_properties(inputs, {}))
    finally:
        loop.close()
    return rpc.deserialize_properties(struct)


def test_a_yaml_programs_inputs_build_what_the_stack_program_builds() -> None:
    values = stack_file_values(FIXTURE)
    clients = values["gateway"]["clients"]
    sent = _over_the_wire(values)
    secret_values = {
        "grafanaAdminPassword": "render-only-secret",
        "apiKey": "render-only-secret",
        "gatewayClientKeys": {
            c["name"]: f"render-only-secret-{c['name']}-{i:04d}" for i, c in enumerate(clients)
        },
        "huggingFaceToken": "render-only-secret",
    }
    if values.get("alerting", {}).get("receiver", "none") != "none":
        secret_values["alertReceiver"] = "render-only-secret"

    def program() -> None:
        secrets = {k: pulumi.Output.secret(v) for k, v in secret_values.items()}
        provider().construct(values["cluster"]["name"], TOKEN, {**sent, **secrets})

    via_provider = evaluate(program, stack="gateway", config={"aws:region": "us-east-1"})
    via_program = render_stack(FIXTURE).mocks
    assert sorted((r.typ, r.name) for r in via_provider.created) == sorted(
        (r.typ, r.name) for r in via_program.created
    )
    deployment = "kubernetes:apps/v1:Deployment"
    assert [r.inputs for r in via_provider.by_type(deployment)] == [
        r.inputs for r in via_program.by_type(deployment)
    ]


def test_the_schema_offers_the_sub_components_with_the_stack_files_blocks() -> None:
    resources = schema()["resources"]
    for name in ("EksCluster", "GpuNodePools", "InferenceService", "Network", "ModelAutoscaling", "Keda"):
        assert f"llm-platform:index:{name}" in resources
    service = resources["llm-platform:index:InferenceService"]
    inputs = service["inputProperties"]
    assert inputs["model"]["$ref"] == "#/types/llm-platform:index:ModelSettings"
    assert inputs["gpuNodePools"]["items"]["$ref"] == "#/types/llm-platform:index:GpuNodePoolSettings"
    assert not inputs["apiKey"].get("plain")  # a secret: an Output of another resource will do
    assert set(service["requiredInputs"]) == {"environment", "model", "gpuNodePools", "apiKey"}
    pools = resources["llm-platform:index:GpuNodePools"]["inputProperties"]
    assert not pools["nodeRoleName"].get("plain")  # Karpenter's output
    assert resources["llm-platform:index:EksCluster"]["inputProperties"]["vpcId"]["type"] == "string"


def test_a_yaml_programs_inference_service_is_the_python_programs() -> None:
    """An InferenceService built from camelCase inputs over the wire, as `pulumi package add` SDKs send
    them, registers what the Python component registers from the same blocks."""
    values = stack_file_values(FIXTURE)
    model = values["models"][0]
    blocks = {"environment": values["environment"], "gpuNodePools": values["gpuNodePools"], "model": model}
    bucket = {"bucketName": "team-models", "bucketArn": "arn:aws:s3:::team-models"}
    sent = _over_the_wire({**blocks, "models": values["models"], "clusterName": "team", "weights": bucket})

    def via_construct() -> None:
        secrets = {"apiKey": pulumi.Output.secret("render-only-secret")}
        provider().construct("qwen", "llm-platform:index:InferenceService", {**sent, **secrets})

    def via_python() -> None:
        from llm_platform import InferenceService, InferenceServiceArgs, ModelWeights

        InferenceService(
            "qwen",
            InferenceServiceArgs(
                environment=values["environment"],
                model=model,
                models=values["models"],
                gpu_node_pools=values["gpuNodePools"],
                api_key=pulumi.Output.secret("render-only-secret"),
                cluster_name="team",
                weights=ModelWeights(bucket_name="team-models", bucket_arn="arn:aws:s3:::team-models"),
            ),
        )

    constructed, built = evaluate(via_construct), evaluate(via_python)
    assert sorted((r.typ, r.name) for r in constructed.created) == sorted(
        (r.typ, r.name) for r in built.created
    )
    (deployment,) = constructed.by_type("kubernetes:apps/v1:Deployment")
    assert [deployment.inputs] == [r.inputs for r in built.by_type("kubernetes:apps/v1:Deployment")]
    assert deployment.inputs["metadata"]["name"] == model["name"]
    assert "team-models" in json.dumps(deployment.inputs)  # the weights' bucket, sent as a nested object
