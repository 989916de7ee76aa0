"""ExistingCluster on a cluster someone else runs: its kubeconfig may be an Output (a config secret, a
StackReference output) and stays secret in the provider's state and in the component's outputs, which a
TypeScript or YAML program builds its own kubernetes Provider from."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc

from llm_platform import ExistingCluster, ExistingClusterArgs
from llm_platform.testing import evaluate
from tests.package.built_provider import provider, schema
from tests.package.test_provider import _over_the_wire

KUBECONFIG = (
    "apiVersion: v1\nkind: Config\ncurrent-context: team\nusers: [{name: team, user: {token: t0k3n}}]\n"
)
TOKEN = "llm-platform:index:ExistingCluster"


def _secret_flag(output: pulumi.Output[Any], flags: list[bool]) -> None:
    pulumi.Output.from_input(output.is_secret()).apply(flags.append)


@pytest.mark.parametrize("given", ["a secret Output", "a plain string"])
def test_the_kubeconfig_is_taken_as_given_and_kept_secret(given: str) -> None:
    flags: list[bool] = []
    values: list[str] = []

    def program() -> None:
        kubeconfig = pulumi.Output.secret(KUBECONFIG) if given == "a secret Output" else KUBECONFIG
        cluster = ExistingCluster(
            "team", ExistingClusterArgs(cluster_name="team", kubeconfig=kubeconfig, context="team")
        )
        _secret_flag(cluster.kubeconfig, flags)
        cluster.kubeconfig.apply(values.append)

    recorded = evaluate(program)
    (k8s_provider,) = recorded.by_type("pulumi:providers:kubernetes")
    assert rpc.is_rpc_secret(k8s_provider.inputs["kubeconfig"])
    assert rpc.unwrap_rpc_secret(k8s_provider.inputs["kubeconfig"]) == KUBECONFIG
    assert k8s_provider.inputs["context"] == "team"
    assert flags == [True] and values == [KUBECONFIG]


def test_the_schema_takes_an_output_and_publishes_the_kubeconfig() -> None:
    resource = schema()["resources"][TOKEN]
    assert not resource["inputProperties"]["kubeconfig"].get("plain")  # TS: pulumi.Input<string>
    assert resource["properties"]["kubeconfig"]["type"] == "string"
    assert "kubeconfig" in resource["required"]


def test_through_the_provider_a_secret_kubeconfig_comes_back_secret() -> None:
    flags: list[bool] = []
    values: list[str] = []
    sent = _over_the_wire({"clusterName": "team"})

    def program() -> None:
        result = provider().construct("team", TOKEN, {**sent, "kubeconfig": pulumi.Output.secret(KUBECONFIG)})
        _secret_flag(pulumi.Output.from_input(result.state["kubeconfig"]), flags)
        pulumi.Output.from_input(result.state["kubeconfig"]).apply(values.append)

    recorded = evaluate(program)
    (k8s_provider,) = recorded.by_type("pulumi:providers:kubernetes")
    assert rpc.is_rpc_secret(k8s_provider.inputs["kubeconfig"])
    assert flags == [True] and values == [KUBECONFIG]
