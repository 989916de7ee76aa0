"""A persisted vLLM compile cache (nvme): one node saves it to S3 after its replica served, every new node's
sync restores it before a replica may start, so a replica on any node (new, headroom, kept) starts its engine
from the cache. The scripts run here against a stand-in `aws` that keeps the bucket in a directory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from components.specs import model_cache as spec
from components.specs.serving import deployment
from config.cold_start import ENGINE_INIT_CACHED_SECONDS, ENGINE_INIT_COLD_SECONDS
from config.loader import PROJECT, parse
from plan import ModelPlan
from tests.conftest import fixture_stack
from tests.plans import model_plan, stack_plan

BUCKET_ARN = "arn:aws:s3:::llm-models"
KEY = "compile-cache/mistral-7b/v0.30.0/A10G"

# a stand-in for the AWS CLI commands the scripts run, over a bucket kept in $FAKE_S3
FAKE_AWS = r"""#!/bin/sh
set -eu
bucket_dir() { echo "$FAKE_S3"; }
case "$1 $2" in
  "s3api head-object")
    [ -f "$FAKE_S3/$6" ] ;;
  "s3api put-object")
    key="$6"
    if [ "${7:-}" = "--if-none-match" ] && [ -e "$FAKE_S3/$key" ]; then exit 254; fi
    mkdir -p "$(dirname "$FAKE_S3/$key")"; : > "$FAKE_S3/$key"; echo "put $key" >> "$FAKE_S3.log" ;;
  "s3 cp")
    cat "$FAKE_S3/${3#s3://*/}" ;;
  "s3 sync")
    shift 2
    while [ "${1#--}" != "$1" ]; do
      if [ "$1" = "--exclude" ]; then shift; fi
      shift
    done
    src="$1"; dst="$2"
    case "$src" in s3://*) src="$FAKE_S3/$(echo "${src#s3://}" | cut -d/ -f2-)";; esac
    case "$dst" in s3://*) dst="$FAKE_S3/$(echo "${dst#s3://}" | cut -d/ -f2-)"; echo "sync to $dst" >> "$FAKE_S3.log";; esac
    mkdir -p "$dst"; cp -R "$src/." "$dst/" ;;
  *) echo "unexpected aws $*" >&2; exit 2 ;;
esac
"""


def _nvme_model(sizes: list[str] | None = None, families: list[str] | None = None) -> ModelPlan:
    """mistral-7b (nvme) of the headroom fixture, its g5 pool's instances optionally replaced."""
    raw = yaml.safe_load(fixture_stack("headroom").read_text())["config"]
    values = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{PROJECT}:")}
    pool = values["gpuNodePools"][0]
    pool["instanceSizes"] = sizes or pool["instanceSizes"]
    pool["instanceFamilies"] = families or pool["instanceFamilies"]
    return model_plan(parse(values), "mistral-7b")


def test_the_cache_is_keyed_by_model_vllm_image_and_gpu_and_only_where_the_gpu_is_known() -> None:
    m = _nvme_model()
    assert m.cache.compile_cache_prefix == KEY
    assert m.cache.compiled_marker == ".llm-platform-compiled-v0.30.0"
    # a pool that may launch an L4 or an A10G: Inductor's kernels are per GPU, the key is unknown
    assert _nvme_model(["2xlarge"], ["g6", "g5"]).cache.compile_cache_prefix is None
    assert stack_plan("prod").model("mistral-7b").cache.compile_cache_prefix is None  # fsx: not persisted


def test_every_start_of_a_persisted_model_loads_the_compiled_engine() -> None:
    m = _nvme_model()
    assert m.cold_start.new_node is not None and m.cold_start.warm_node is not None
    assert m.cold_start.new_node.engine_init == ENGINE_INIT_CACHED_SECONDS
    headroom = stack_plan("headroom").pool("g5").headroom
    assert headroom is not None
    new = m.cold_start.new_node
    # a replica preempting a placeholder pays weights and a cached engine start (not 200 s of compile)
    assert headroom.warm_start("mistral-7b") < new.weight_load + ENGINE_INIT_COLD_SECONDS
    assert headroom.warm_start("mistral-7b") == pytest.approx(
        2.0 + new.weight_load + ENGINE_INIT_CACHED_SECONDS + new.readiness
    )


def test_the_replica_marks_its_cache_complete_only_once_it_serves() -> None:
    m = _nvme_model()
    pod = deployment(m, environment="staging", wiring=spec.cache_wiring(m, bucket="b"), mounts_hf_token=False)
    (vllm,) = pod["spec"]["template"]["spec"]["containers"]
    check = " ".join(vllm["startupProbe"]["exec"]["command"])
    assert "http://127.0.0.1:8000/health" in check
    assert check.index("/health") < check.index(f"/var/cache/vllm/{m.cache.compiled_marker}")
    fsx = stack_plan("prod").model("mistral-7b")
    pod = deployment(
        fsx, environment="prod", wiring=spec.cache_wiring(fsx, bucket="b"), mounts_hf_token=False
    )
    (vllm,) = pod["spec"]["template"]["spec"]["containers"]
    assert vllm["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}


def test_the_sync_role_writes_only_its_models_compile_cache() -> None:
    policy = spec.sync_policy(BUCKET_ARN, "models/TheBloke/Mistral", KEY)
    writes = [s for s in policy["Statement"] if "s3:PutObject" in s["Action"]]
    assert [s["Resource"] for s in writes] == [f"{BUCKET_ARN}/{KEY}/*"]
    reads = next(s for s in policy["Statement"] if s["Sid"] == "ReadModels")
    assert reads["Resource"] == f"{BUCKET_ARN}/models/TheBloke/Mistral/*", "its own weights only"
    assert not [
        s
        for s in spec.sync_policy(BUCKET_ARN, "models/x", None)["Statement"]
        if "s3:PutObject" in s["Action"]
    ]


# -------------------------------------------------------------------------- the scripts, run for real


def _env(tmp_path: Path, m: ModelPlan) -> dict[str, str]:
    daemonset = spec.nvme_daemonset(m, bucket="llm-models")["spec"]["template"]["spec"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "aws").write_text(FAKE_AWS)
    (bin_dir / "chown").write_text("#!/bin/sh\nexit 0\n")  # the ownership is the container's concern
    for tool in ("aws", "chown"):
        (bin_dir / tool).chmod(0o755)
    env = {e["name"]: e["value"] for e in daemonset["containers"][0]["env"]}
    return {**os.environ, **env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_S3": str(tmp_path / "s3")}


def _run(script: str, tmp_path: Path, env: dict[str, str], timeout: float = 20) -> None:
    node = tmp_path / "node"
    body = script.replace("/nvme", str(node)).replace("sleep 60", "exit 0 #")
    subprocess.run(["sh", "-c", body], env=env, check=True, timeout=timeout)


def _seed_weights(s3: Path, m: ModelPlan) -> None:
    weights = s3 / m.cache.weights_prefix
    weights.mkdir(parents=True)
    (weights / "model.safetensors").write_text("w")
    (weights / ".llm-platform-complete").write_text("rev1")


def test_a_node_saves_its_cache_once_its_replica_served_and_only_the_first_node_writes(
    tmp_path: Path,
) -> None:
    m = _nvme_model()
    env = _env(tmp_path, m)
    s3 = tmp_path / "s3"
    _seed_weights(s3, m)
    cache = tmp_path / "node" / "vllm-cache" / "mistral-7b"
    (cache / "torch_compile_cache" / "1517964802" / "rank_0_0").mkdir(parents=True)
    (cache / "torch_compile_cache" / "1517964802" / "rank_0_0" / "computation_graph.py").write_text("g")
    _run(spec.SAVE_SCRIPT, tmp_path, env)
    assert not (s3 / KEY).exists(), "no upload before the replica served (its compile may be half done)"
    assert m.cache.compiled_marker is not None
    (cache / m.cache.compiled_marker).touch()
    _run(spec.SAVE_SCRIPT, tmp_path, env)
    saved = s3 / KEY / "torch_compile_cache" / "1517964802" / "rank_0_0" / "computation_graph.py"
    assert saved.read_text() == "g" and (s3 / KEY / ".llm-platform-complete").exists()
    log = (tmp_path / "s3.log").read_text().splitlines()
    assert log.index(f"put {KEY}/.claim") < log.index(f"put {KEY}/.llm-platform-complete")
    # another node whose replica also served: the cache is there, it writes nothing
    (s3 / KEY / ".llm-platform-complete").unlink()  # even mid-upload, the claim keeps it out
    _run(spec.SAVE_SCRIPT, tmp_path, env)
    assert (tmp_path / "s3.log").read_text().count("sync to") == 1


def test_a_new_node_restores_the_cache_before_the_weights_marker_lets_a_replica_start(tmp_path: Path) -> None:
    m = _nvme_model()
    env = _env(tmp_path, m)
    s3 = tmp_path / "s3"
    _seed_weights(s3, m)
    saved = s3 / KEY / "torch_compile_cache" / "1517964802"
    saved.mkdir(parents=True)
    (saved / "transformed_code.py").write_text("c")
    (s3 / KEY / ".llm-platform-complete").touch()
    _run(spec.SYNC_SCRIPT, tmp_path, env)
    node = tmp_path / "node"
    restored = (
        node / "vllm-cache" / "mistral-7b" / "torch_compile_cache" / "1517964802" / "transformed_code.py"
    )
    weights_marker = node / m.cache.weights_prefix / ".llm-platform-complete"
    assert restored.read_text() == "c" and weights_marker.read_text() == "rev1"
    assert restored.stat().st_mtime <= weights_marker.stat().st_mtime


def test_without_a_saved_cache_the_sync_copies_only_the_weights(tmp_path: Path) -> None:
    m = _nvme_model()
    env = _env(tmp_path, m)
    _seed_weights(tmp_path / "s3", m)
    _run(spec.SYNC_SCRIPT, tmp_path, env)
    node = tmp_path / "node"
    assert (node / m.cache.weights_prefix / "model.safetensors").exists()
    assert not (node / "vllm-cache" / "mistral-7b" / "torch_compile_cache").exists()
