"""One contract in every language: each component a TypeScript, Go, C#, Java or YAML program builds through
the component provider registers the type its schema token names (`llm-platform:index:<Name>`), so the URN
its program gets back, and the state it writes, are of that type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

from llm_platform.provider import COMPONENTS
from llm_platform.testing import evaluate, example_values, stack_file_values
from tests.package.built_provider import provider, schema
from tests.package.test_provider import _over_the_wire

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "Pulumi.gateway.yaml"
VALUES = stack_file_values(FIXTURE)
SECRET = "render-only-secret"
ZONES = ["us-east-1a", "us-east-1b"]
BLOCKS = {"environment": "dev", "gpuNodePools": VALUES["gpuNodePools"]}
# on a cluster the program does not build nothing gives the model bucket: the Hub is the cache there (dev)
MODELS = [m | {"cache": "hub"} for m in VALUES["models"]]

# each component's required inputs (and what its rules need), camelCase as a program sends them; secrets
# are added as secret Outputs
INPUTS: dict[str, dict[str, Any]] = {
    "LlmPlatform": example_values(),
    "Network": {
        "clusterName": "team",
        "region": "us-east-1",
        "vpcCidr": "10.40.0.0/16",
        "availabilityZones": ZONES,
        "natPerZone": False,
    },
    "EksCluster": {
        "clusterName": "team",
        "kubernetesVersion": "1.34",
        "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": ["subnet-a", "subnet-b"],
        "publicSubnetIds": ["subnet-c", "subnet-d"],
        "endpointPublicAccess": False,
        "publicAccessCidrs": [],
        "adminRoleArns": [],
        "systemInstanceType": "m6i.large",
        "systemMin": 2,
        "systemMax": 3,
        "systemDiskGib": 100,
        "deletionProtection": False,
    },
    "ExistingCluster": {"clusterName": "team"},
    "Karpenter": {"clusterName": "team", "region": "us-east-1"},
    "GpuNodePools": {
        "clusterName": "team",
        "gpuNodePools": VALUES["gpuNodePools"],
        "zones": ZONES,
        "nodeRoleName": "team-karpenter-node",
    },
    "GpuOperator": {"migInUse": False},
    "Observability": {"environment": VALUES["environment"], "createStorageClass": False},
    "Keda": {},
    "ModelCache": {"clusterName": "team", "vpcId": "vpc-0123456789abcdef0", "subnetId": "subnet-a"},
    "GpuHeadroom": BLOCKS,
    "InferenceService": {**BLOCKS, "model": MODELS[1], "models": MODELS},
    "ModelAutoscaling": {**BLOCKS, "model": MODELS[1], "models": MODELS},
    "Gateway": {**BLOCKS, "gateway": VALUES["gateway"], "models": MODELS, "vpcCidr": "10.40.0.0/16"},
    "GatewayRoutes": {**BLOCKS, "gateway": VALUES["gateway"], "models": MODELS, "prefix": "search"},
    "LoadBalancerController": {
        "clusterName": "team",
        "region": "us-east-1",
        "vpcId": "vpc-0123456789abcdef0",
    },
}
SECRETS = {
    "LlmPlatform": {"grafanaAdminPassword": SECRET, "apiKey": SECRET},
    "ExistingCluster": {"kubeconfig": "apiVersion: v1\nkind: Config\n"},
    "Observability": {"grafanaAdminPassword": SECRET},
    "InferenceService": {"apiKey": SECRET},
    "Gateway": {"vllmApiKey": SECRET, "clientKeys": {"web": f"{SECRET}-web", "batch": f"{SECRET}-batch"}},
    "GatewayRoutes": {"vllmApiKey": SECRET},
}


def test_every_component_the_schema_offers_is_constructed_here() -> None:
    assert {token.rsplit(":", 1)[-1] for token in schema()["resources"]} == set(INPUTS)
    assert [c.__name__ for c in COMPONENTS] == list(INPUTS)


@pytest.mark.parametrize("component", list(INPUTS))
def test_a_component_built_through_the_provider_registers_its_schema_token(component: str) -> None:
    token = f"llm-platform:index:{component}"
    assert token in schema()["resources"]
    sent = _over_the_wire(INPUTS[component])
    returned: list[str] = []

    def program() -> None:
        secrets = {k: pulumi.Output.secret(v) for k, v in SECRETS.get(component, {}).items()}
        result = provider().construct("team-x", token, {**sent, **secrets})
        pulumi.Output.from_input(result.urn).apply(returned.append)

    recorded = evaluate(program, stack="gateway")
    (built,) = [r for r in recorded.created if r.name == "team-x" and not r.custom]
    assert built.typ == token
    assert built.urn.split("::")[2].split("$")[-1] == token
    assert returned == [built.urn]
