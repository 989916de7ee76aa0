"""Unit-test your own program that composes these components: Pulumi mocks that answer like AWS and the
Kubernetes API do for what the components read back, a recorder of every registration, and args to start
from. No cloud, no Pulumi CLI, no cluster.

    from llm_platform import LlmPlatform
    from llm_platform.testing import evaluate, example_values, test_args

    def test_my_platform_serves_one_model():
        recorded = evaluate(lambda: LlmPlatform("llm-dev", test_args(example_values())))
        assert len(recorded.by_type("kubernetes:apps/v1:Deployment")) == 1

`evaluate` installs fresh mocks, runs the program function once, waits for every output and removes the
mocks again, so tests stay independent. `plain(inputs)` turns a recorded input tree into plain data with
every secret masked (`[secret]`), to compare or print; `stack_file_values(path)` reads a stack file's
`llm-platform:` values.
"""

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_platform.config.errors import read_stack_file
from llm_platform.config.loader import parse
from llm_platform.platform import SECRET_ARGS, LlmPlatformArgs, needed_secrets, platform_args
from llm_platform.tools import mocks
from llm_platform.tools.mocks import PlatformMocks, Registered, plain

__all__ = [
    "PlatformMocks",
    "Registered",
    "evaluate",
    "example_values",
    "plain",
    "stack_file_values",
    "test_args",
]

PROJECT = "llm-platform"
# what a secret holds under test; every recorded secret input is wrapped as a secret, never this text
TEST_SECRET = "test-only-secret"

_EXAMPLE = {
    "environment": "dev",
    "cluster": {
        "mode": "eks",
        "name": "llm-dev",
        "kubernetesVersion": "1.34",
        "vpcCidr": "10.10.0.0/16",
        "availabilityZones": ["us-east-1a", "us-east-1b"],
        "systemNodes": {"instanceType": "m6i.large", "min": 2, "max": 3},
        "endpointPublicAccess": True,
        "publicAccessCidrs": ["0.0.0.0/0"],
        "amiVersions": {"al2023": "latest"},
    },
    "gpuNodePools": [
        {
            "name": "gpu-spot",
            "instanceFamilies": ["g6", "g5"],
            "instanceSizes": ["xlarge", "2xlarge"],
            "capacityTypes": ["spot"],
            "amiFamily": "al2023",
            "gpuLimit": 4,
        }
    ],
    "models": [
        {
            "name": "qwen-1-5b",
            "huggingFaceId": "Qwen/Qwen2.5-1.5B-Instruct",
            "nodePool": "gpu-spot",
            "tensorParallelSize": 1,
            "maxModelLen": 8192,
            "cache": "s3",
            "autoscaling": {"minReplicas": 1, "maxReplicas": 2},
            "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
        }
    ],
}


def example_values() -> dict[str, Any]:
    """A small valid dev platform as a stack file's `llm-platform:` values (camelCase keys): EKS in two
    zones, one spot g6/g5 pool, one 1.5B model. A fresh copy each call, to edit freely."""
    return copy.deepcopy(_EXAMPLE)


def stack_file_values(path: str | Path) -> dict[str, Any]:
    """The `llm-platform:` values of a stack file (`Pulumi.<stack>.yaml`), keyed without the prefix."""
    entries, _ = read_stack_file(Path(path))
    return {k.split(":", 1)[1]: v for k, v in entries.items() if k.startswith(f"{PROJECT}:")}


def test_args(values: dict[str, Any]) -> LlmPlatformArgs:
    """LlmPlatformArgs from stack-file values, with a test secret for every secret the values need (bad
    values raise the ConfigError the component would)."""
    needed = needed_secrets(parse(values)) | {"huggingFaceToken"}  # optional, and harmless to pass
    clients = (values.get("gateway") or {}).get("clients") or []
    secrets: dict[str, Any] = {SECRET_ARGS[s]: TEST_SECRET for s in needed}
    if "gatewayClientKeys" in needed:
        secrets["gateway_client_keys"] = {c["name"]: f"{TEST_SECRET}-{c['name']}" for c in clients}
    return platform_args(values, **secrets)


test_args.__test__ = False  # type: ignore[attr-defined]  # a builder, not a test, when pytest imports it


def evaluate(
    program: Callable[[], object],
    *,
    stack: str = "test",
    project: str = PROJECT,
    region: str = mocks.REGION,
    config: dict[str, Any] | None = None,
) -> PlatformMocks:
    """Run `program` once under fresh mocks and return what it registered (`.created`, `.by_type(...)`,
    `.named(...)`, each with its inputs, parent, URN, dependencies and aliases). `config` sets Pulumi config
    keys the program reads (`{"my-project:replicas": 2}`); `aws:region` is `region`."""
    values = {"aws:region": region, **(config or {})}
    encoded = {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}
    recorder, loop = mocks.install(stack, encoded, [], project=project)
    try:
        mocks.run(program)
    finally:
        mocks.uninstall(loop)
    return recorder
