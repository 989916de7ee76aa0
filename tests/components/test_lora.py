"""LoRA adapters as the real __main__.py registers them for tests/fixtures/stacks/Pulumi.lora.yaml: vLLM's
flags, the sync of each adapter per cache mode, the IAM that allows it, the gateway's routes and the picker's
lora-affinity-scorer, and the shared schema check of the whole render."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from llm_platform.components.specs import adapters as adapter_spec
from llm_platform.tools import render
from tests.conftest import fixture_stack
from tests.shared_check import SHARED_CHECK, check_render


@pytest.fixture(scope="module")
def run() -> render.Render:
    return render.evaluate(fixture_stack("lora"))


def _one(run: render.Render, kind: str, namespace: str, name: str | None = None) -> dict[str, Any]:
    return next(
        o
        for o in run.manifests
        if o["kind"] == kind
        and o["metadata"].get("namespace") == namespace
        and (name is None or o["metadata"]["name"] == name)
    )


def _args(run: render.Render, model: str) -> list[str]:
    return _one(run, "Deployment", f"model-{model}", model)["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]


def test_vllm_flags_are_sized_from_the_list(run: render.Render) -> None:
    args = _args(run, "llama-8b")
    at = args.index("--enable-lora")
    assert args[at : at + 7] == [
        "--enable-lora",
        "--max-loras",
        "2",
        "--max-lora-rank",
        "64",
        "--max-cpu-loras",
        "3",
    ]
    modules = args[args.index("--lora-modules") + 1 : args.index("--lora-modules") + 4]
    assert modules == [
        f"{n}=/models/_adapters/llama-8b/{n}" for n in ("sql-lora", "support-lora", "legal-lora")
    ]
    chat = _args(run, "chat-7b")
    assert chat[chat.index("--lora-modules") + 1] == "chat-pirate=/adapters/chat-pirate"
    assert chat[chat.index("--max-lora-rank") + 1] == "8"  # rank 4 rounds up to vLLM's smallest choice above


def test_pods_wait_for_every_adapter(run: render.Render) -> None:
    llama = _one(run, "Deployment", "model-llama-8b", "llama-8b")["spec"]["template"]["spec"]
    wait = next(c for c in llama["initContainers"] if c["name"] == "wait-for-adapters")
    assert "/models/_adapters/llama-8b/legal-lora/.llm-platform-complete" in wait["args"][0]
    chat = _one(run, "Deployment", "model-chat-7b", "chat-7b")["spec"]["template"]["spec"]
    copy = next(c for c in chat["initContainers"] if c["name"] == "copy-adapters")
    env = {e["name"]: e["value"] for e in copy["env"]}
    assert env["PREFIX"] == "models/_adapters/chat-7b" and env["ADAPTERS"] == "chat-pirate"
    assert {"name": "adapters", "emptyDir": {"sizeLimit": "10Gi"}} in chat["volumes"]
    mounts = chat["containers"][0]["volumeMounts"]
    assert {"name": "adapters", "mountPath": "/adapters", "readOnly": True} in mounts


def test_loader_copies_adapters_at_their_pins(run: render.Render) -> None:
    job = _one(run, "Job", "model-llama-8b")["spec"]["template"]["spec"]["containers"][0]
    assert job["args"][0].endswith("&& python /opt/loader/adapters.py")
    spec = json.loads(next(e["value"] for e in job["env"] if e["name"] == "ADAPTERS"))
    assert spec[0] == {
        "name": "sql-lora",
        "source": "acme-ml/llama-3.1-8b-sql-lora",
        "revision": "0123456789abcdef0123456789abcdef01234567",
        "prefix": "models/_adapters/llama-8b/sql-lora",
    }
    assert spec[2]["source"] == "s3://acme-adapters/llama-3.1-8b/legal/v3" and spec[2]["revision"] is None
    script = _one(run, "ConfigMap", "model-llama-8b", "model-loader")["data"]["adapters.py"]
    compile(script, "adapters.py", "exec")
    sync = _one(run, "DaemonSet", "model-llama-8b")["spec"]["template"]["spec"]["initContainers"][0]
    assert sync["command"][2].endswith(adapter_spec.NVME_ADAPTER_SYNC)


def test_loader_role_reads_the_s3_source(run: render.Render) -> None:
    policies = [
        json.loads(r["inputs"]["inlinePolicies"][0]["policy"])
        for r in run.resources
        if r["type"] == "aws:iam/role:Role"
        and r["name"].endswith("loader")
        and "llama-8b" in r["name"]
        and r["inputs"].get("inlinePolicies")
    ]
    if not policies:  # roles attach their policy as a RolePolicy
        policies = [
            json.loads(r["inputs"]["policy"])
            for r in run.resources
            if r["type"] == "aws:iam/rolePolicy:RolePolicy" and "llama-8b-loader" in r["name"]
        ]
    (policy,) = policies
    sids = {s["Sid"]: s for s in policy["Statement"]}
    assert sids["ReadAdapterSource0"]["Resource"] == "arn:aws:s3:::acme-adapters/llama-3.1-8b/legal/v3/*"
    assert "s3:PutObject" in sids["ReadWriteAdapters"]["Action"]


def test_gateway_routes_adapter_names_to_the_model_pool(run: render.Render) -> None:
    route = _one(run, "AIGatewayRoute", "model-llama-8b", "llama-8b")
    (rule,) = route["spec"]["rules"]
    names = [m["headers"][0]["value"] for m in rule["matches"]]
    assert names == ["llama-8b", "sql-lora", "support-lora", "legal-lora"]
    assert rule["backendRefs"][0]["kind"] == "InferencePool"


def test_picker_scores_lora_affinity(run: render.Render) -> None:
    values = run.helm["llama-8b"]["values"]["router"]["epp"]
    config = yaml.safe_load(next(iter(values["pluginsCustomConfig"].values())))
    assert {"type": "lora-affinity-scorer"} in config["plugins"]
    profile = config["schedulingProfiles"][0]["plugins"]
    assert {"pluginRef": "lora-affinity-scorer", "weight": 3} in profile


@pytest.mark.skipif(not SHARED_CHECK.exists(), reason="the shared render check is not on this machine")
def test_render_passes_the_shared_check(run: render.Render, tmp_path) -> None:
    render.write(run, tmp_path)
    result = check_render(tmp_path)
    assert result.returncode == 0 and " 0 problems" in result.stdout, result.stdout + result.stderr
