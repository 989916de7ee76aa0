"""A persisted vLLM compile cache: the first replica that served saves it to S3, every later start restores it
before vLLM starts, so a replica on any node (new, headroom, kept) starts its engine from the cache. For nvme
the node's sync DaemonSet does both; for every other mode the vLLM pod itself (an init container and a
native sidecar). The scripts run here against a stand-in `aws` that keeps the bucket in a directory."""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.components.specs import compile_cache
from llm_platform.components.specs import model_cache as spec
from llm_platform.components.specs.serving import deployment
from llm_platform.config.loader import PROJECT, parse
from llm_platform.facts.cold_start import (
    COMPILE_CACHE_GB,
    ENGINE_INIT_CACHED_SECONDS,
    ENGINE_INIT_COLD_SECONDS,
    S3_GB_PER_S,
    network_gb_per_s,
)
from llm_platform.plan import ModelPlan
from llm_platform.plan.model import resolve_model
from tests.conftest import fixture_stack, load_fixture
from tests.plans import model_plan, stack_plan

BUCKET_ARN = "arn:aws:s3:::llm-models"
KEY = "compile-cache/mistral-7b/v0.30.0/A10G"
FSX_PREFIX = (
    "compile-cache/mistral-7b/v0.30.0/A10G"  # the prod fixture's mistral-7b (fsx, g5 pool: A10G only)
)

# A stand-in for the AWS CLI commands the scripts run, over a bucket kept in the directory $FAKE_S3: every
# call is appended to $FAKE_S3.calls, every write to $FAKE_S3.log ("put <key>", "sync to <dir>"). Objects
# carry S3's ETag (the quoted MD5 of the body); `put-object --if-none-match '*'` / `--if-match <etag>` and
# `get-object` answer as S3 does (412 PreconditionFailed, 404 NoSuchKey: the CLI's exit code 254, its
# `--query ETag --output text` prints the quoted ETag). A sync fails (exit 1, a file half written) when
# FAKE_SYNC_FAILS is set, or only the first upload when FAKE_UPLOAD_FAILS_ONCE is; FAKE_SYNC_SECONDS
# holds every upload that long (writing $FAKE_S3.uploading first).
FAKE_AWS = r"""#!/usr/bin/env python3
import hashlib, os, shutil, sys, time
root = os.environ["FAKE_S3"]
argv = sys.argv[1:]
with open(root + ".calls", "a") as calls:
    calls.write(" ".join(argv) + "\n")

def log(line):
    with open(root + ".log", "a") as f:
        f.write(line + "\n")

def fail(code, message):
    sys.stderr.write(f"An error occurred ({code}): {message}\n")
    sys.exit(254)

def option(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default

def etag(path):
    with open(path, "rb") as f:
        return '"' + hashlib.md5(f.read()).hexdigest() + '"'

def local(url):
    return os.path.join(root, url[len("s3://"):].split("/", 1)[1]) if url.startswith("s3://") else url

def answer(tag):
    if option("--query") == "ETag" and option("--output") == "text":
        print(tag)
    else:
        print('{"ETag": "%s"}' % tag.replace('"', '\\"'))

service, command = argv[0], argv[1]
if (service, command) == ("s3api", "head-object"):
    if not os.path.isfile(os.path.join(root, option("--key"))):
        fail("404", "Not Found")
elif (service, command) == ("s3api", "put-object"):
    key = option("--key")
    path = os.path.join(root, key)
    if option("--if-none-match") == "*" and os.path.exists(path):
        fail("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
    if option("--if-match") is not None:
        if not os.path.exists(path):
            fail("NoSuchKey", "The specified key does not exist.")
        if etag(path) != option("--if-match"):
            fail("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    body = option("--body")
    if body is None:
        open(path, "wb").close()
    else:
        shutil.copyfile(body, path)
    log("put " + key)
    answer(etag(path))
elif (service, command) == ("s3api", "get-object"):
    path = os.path.join(root, option("--key"))
    if not os.path.isfile(path):
        fail("NoSuchKey", "The specified key does not exist.")
    outfile = next(a for i, a in enumerate(argv[2:], 2) if not a.startswith("--") and not argv[i - 1].startswith("--"))
    shutil.copyfile(path, outfile)
    answer(etag(path))
elif (service, command) == ("s3", "cp"):
    src, dst = [a for a in argv[2:] if not a.startswith("--")][:2]
    with open(local(src), "rb") as f:
        data = f.read()
    if dst == "-":
        sys.stdout.write(data.decode())
    else:
        with open(local(dst), "wb") as f:
            f.write(data)
elif (service, command) == ("s3", "sync"):
    rest = argv[2:]
    paths = [a for i, a in enumerate(rest) if not a.startswith("--") and rest[i - 1] != "--exclude"]
    src, dst = paths[-2:]
    upload = dst.startswith("s3://")
    src, dst = local(src), local(dst)
    once = root + ".failed-once"
    if os.environ.get("FAKE_SYNC_FAILS") or (
        upload and os.environ.get("FAKE_UPLOAD_FAILS_ONCE") and not os.path.exists(once)
    ):
        open(once, "w").close()
        partial = os.environ.get("FAKE_PARTIAL", dst)
        os.makedirs(partial, exist_ok=True)
        open(os.path.join(partial, "half-written"), "w").close()
        sys.exit(1)
    if upload:
        if os.environ.get("FAKE_SYNC_SECONDS"):
            open(root + ".uploading", "w").close()
            time.sleep(float(os.environ["FAKE_SYNC_SECONDS"]))
        log("sync to " + dst)
    shutil.copytree(src, dst, dirs_exist_ok=True)
else:
    sys.stderr.write("unexpected aws " + " ".join(argv) + "\n")
    sys.exit(2)
"""


def _nvme_model(sizes: list[str] | None = None, families: list[str] | None = None) -> ModelPlan:
    """mistral-7b (nvme) of the headroom fixture, its g5 pool's instances optionally replaced."""
    raw = yaml.safe_load(fixture_stack("headroom").read_text())["config"]
    values = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{PROJECT}:")}
    pool = values["gpuNodePools"][0]
    pool["instanceSizes"] = sizes or pool["instanceSizes"]
    pool["instanceFamilies"] = families or pool["instanceFamilies"]
    return model_plan(parse(values), "mistral-7b")


def _pod(m: ModelPlan) -> dict[str, Any]:
    manifest = deployment(
        m, environment="prod", wiring=spec.cache_wiring(m, bucket="b"), mounts_hf_token=False
    )
    return manifest["spec"]["template"]["spec"]


def test_the_cache_is_keyed_by_model_vllm_image_and_gpu_and_only_where_the_gpu_is_known() -> None:
    m = _nvme_model()
    assert m.cache.compile_cache_prefix == KEY
    assert m.cache.compiled_marker == ".llm-platform-compiled-v0.30.0"
    # a pool that may launch an L4 or an A10G: Inductor's kernels are per GPU, the key is unknown
    assert _nvme_model(["2xlarge"], ["g6", "g5"]).cache.compile_cache_prefix is None
    assert stack_plan("dev").model("qwen-1-5b").cache.compile_cache_prefix is None  # s3 on g6 + g5
    # every weights cache mode persists it: fsx (prod: A10G, A100), by the pod itself
    prod = stack_plan("prod")
    assert prod.model("mistral-7b").cache.compile_cache_prefix == FSX_PREFIX
    assert prod.model("llama-70b").cache.compile_cache_prefix == "compile-cache/llama-70b/v0.30.0/A100-40GB"
    assert all(prod.model(n).cache.compile_cache_in_pod for n in ("mistral-7b", "llama-70b"))
    assert not m.cache.compile_cache_in_pod, "nvme: the node sync restores and saves it"


def test_without_the_model_bucket_nothing_is_persisted() -> None:
    """An existing cluster (hub only) has no bucket: the key would point nowhere."""
    model = load_fixture("prod").models[0].model_copy(update={"cache": "hub"})
    pool = load_fixture("prod").gpu_node_pools[0]
    assert resolve_model(model, pool, has_bucket=False).cache.compile_cache_prefix is None
    hub = resolve_model(model, pool, has_bucket=True).cache
    assert hub.compile_cache_prefix == FSX_PREFIX and hub.compile_cache_in_pod


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


def test_an_fsx_replica_restores_its_compile_cache_in_every_start() -> None:
    """fsx keeps nothing on the node: each pod copies COMPILE_CACHE_GB at the node's S3 rate, then starts
    its engine from the cache (64 s, not 200 s), on a new node and on a warm one alike."""
    m = stack_plan("prod").model("mistral-7b")
    restore = COMPILE_CACHE_GB / min(network_gb_per_s(m.instance), S3_GB_PER_S)
    for start in (m.cold_start.new_node, m.cold_start.warm_node):
        assert start is not None
        assert start.engine_init == ENGINE_INIT_CACHED_SECONDS
        assert start.pod_fetch == pytest.approx(restore)
    warm = m.cold_start.warm_node
    assert warm is not None
    assert warm.total == pytest.approx(
        restore + warm.weight_load + ENGINE_INIT_CACHED_SECONDS + warm.readiness
    )
    # the startup probe's budget follows the shorter start
    assert m.cold_start.startup_failure_threshold == max(30, math.ceil(3 * warm.total / 10))


def test_the_replica_marks_its_cache_complete_only_once_it_serves() -> None:
    for m in (_nvme_model(), stack_plan("prod").model("mistral-7b")):
        (vllm,) = _pod(m)["containers"]
        check = " ".join(vllm["startupProbe"]["exec"]["command"])
        assert "http://127.0.0.1:8000/health" in check
        assert check.index("/health") < check.index(f"/var/cache/vllm/{m.cache.compiled_marker}")
    (vllm,) = _pod(stack_plan("dev").model("qwen-1-5b"))["containers"]
    assert vllm["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}


def test_an_fsx_pod_restores_before_vllm_and_saves_beside_it() -> None:
    pod = _pod(stack_plan("prod").model("mistral-7b"))
    names = [c["name"] for c in pod["initContainers"]]
    assert names == ["wait-for-weights", "restore-compile-cache", "save-compile-cache"]
    restore, save = pod["initContainers"][1:]
    assert "restartPolicy" not in restore, "runs to completion before vLLM starts"
    assert save["restartPolicy"] == "Always", "a native sidecar: beside vLLM, never holds up termination"
    assert restore["command"][-1] == compile_cache.RESTORE_SCRIPT
    assert save["command"][-1] == compile_cache.SAVE_SCRIPT == spec.nvme_daemonset(_nvme_model(), bucket="b")[
        "spec"]["template"]["spec"]["containers"][0]["command"][-1]  # fmt: skip
    (vllm,) = pod["containers"]
    cache_root = next(e["value"] for e in vllm["env"] if e["name"] == "VLLM_CACHE_ROOT")
    volume = next(v["name"] for v in vllm["volumeMounts"] if v["mountPath"] == cache_root)
    for c in (restore, save):
        env = {e["name"]: e["value"] for e in c["env"]}
        assert env["COMPILE_PREFIX"] == FSX_PREFIX and env["COMPILE_CACHE_DIR"] == cache_root
        assert {v["name"]: v["mountPath"] for v in c["volumeMounts"]}[volume] == cache_root
        assert "AWS_SECRET_ACCESS_KEY" not in env and "args" not in c, "credentials come from Pod Identity"
    assert next(v for v in save["volumeMounts"] if v["name"] == volume)["readOnly"] is True


def test_no_pod_level_cache_where_the_gpu_is_unknown_or_the_node_keeps_it() -> None:
    for m in (stack_plan("dev").model("qwen-1-5b"), _nvme_model()):
        names = [c["name"] for c in _pod(m).get("initContainers", [])]
        assert not {"restore-compile-cache", "save-compile-cache"} & set(names)


def test_the_sync_role_writes_only_its_models_compile_cache() -> None:
    policy = spec.model_access_policy(BUCKET_ARN, "models/TheBloke/Mistral", KEY)
    writes = [s for s in policy["Statement"] if "s3:PutObject" in s["Action"]]
    assert [s["Resource"] for s in writes] == [f"{BUCKET_ARN}/{KEY}/*"]
    reads = next(s for s in policy["Statement"] if s["Sid"] == "ReadModels")
    assert reads["Resource"] == f"{BUCKET_ARN}/models/TheBloke/Mistral/*", "its own weights only"
    assert not [
        s
        for s in spec.model_access_policy(BUCKET_ARN, "models/x", None)["Statement"]
        if "s3:PutObject" in s["Action"]
    ]


def test_each_fsx_models_vllm_pods_write_only_their_own_compile_cache(run_program) -> None:
    m = run_program("prod")
    policies = {r.name: json.loads(r.inputs["policy"]) for r in m.by_type("aws:iam/rolePolicy:RolePolicy")}
    bucket = "arn:aws:s3:::llm-prod-cache-models-mock"
    for model, prefix in (
        ("mistral-7b", FSX_PREFIX),
        ("llama-70b", "compile-cache/llama-70b/v0.30.0/A100-40GB"),
    ):
        statements = policies[f"llm-prod-{model}-serving"]["Statement"]
        granted = {(a, r) for s in statements for a in _list(s["Action"]) for r in _list(s["Resource"])}
        writes = {r for a, r in granted if a.startswith("s3:Put") or a.startswith("s3:Delete")}
        assert writes == {f"{bucket}/{prefix}/*"}
        reads = {r for a, r in granted if a == "s3:GetObject"}
        assert reads == {f"{bucket}/{prefix}/*"}, "fsx: vLLM reads no weights from S3"
        listed = [
            s["Condition"]["StringLike"]["s3:prefix"] for s in statements if s["Action"] == "s3:ListBucket"
        ]
        assert listed == [[f"{prefix}/*", prefix]]
    associations = {
        (a.inputs["namespace"], a.inputs["serviceAccount"]): a.inputs["roleArn"]
        for a in m.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    }
    role = m.named("llm-prod-mistral-7b-serving", "aws:iam/role:Role")
    assert role.inputs["description"] == "vLLM pods of mistral-7b: restore and save its vLLM compile cache"
    # the vLLM pods' service account of each model holds that model's role, no shared one
    assert associations["model-mistral-7b", "vllm"].endswith("/llm-prod-mistral-7b-serving")
    assert associations["model-llama-70b", "vllm"].endswith("/llm-prod-llama-70b-serving")


def _list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


# -------------------------------------------------------------------------- the scripts, run for real


def _env(tmp_path: Path, container: dict[str, Any], mounts: dict[str, Path]) -> dict[str, str]:
    """The container's own env, its volume paths (`mounts`) moved under tmp_path, and the stand-in `aws`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # this interpreter without site-packages (the stand-in needs only the standard library): a shim that finds
    # `python3` (pyenv's) costs ~0.1 s a call and the scripts make dozens
    (bin_dir / "aws").write_text(FAKE_AWS.replace("/usr/bin/env python3", f"{sys.executable} -S", 1))
    (bin_dir / "chown").write_text("#!/bin/sh\nexit 0\n")  # the ownership is the container's concern
    for tool in ("aws", "chown"):
        (bin_dir / tool).chmod(0o755)
    env = {e["name"]: _local(e["value"], mounts) for e in container["env"]}
    scratch = tmp_path / "scratch" / str(len(list(tmp_path.glob("scratch/*"))))  # the container's own /tmp
    scratch.mkdir(parents=True)
    return {
        **os.environ,
        **env,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_S3": str(tmp_path / "s3"),
        "TMPDIR": str(scratch),
    }


def _local(text: str, mounts: dict[str, Path]) -> str:
    for path, local in mounts.items():
        text = text.replace(path, str(local))
    return text


def _run(
    container: dict[str, Any], env: dict[str, str], mounts: dict[str, Path], timeout: float = 20
) -> None:
    """The container's script, as rendered, with its waits cut short, run by bash (the image's /bin/sh:
    Amazon Linux 2, aws-cli's docker/Dockerfile at 2.27.50)."""
    body = _local(container["command"][-1], mounts)
    for wait in ("sleep 60 & wait $!", "sleep 3600 & wait $!"):
        body = body.replace(wait, "exit 0")
    subprocess.run(["bash", "-c", body], env=env, check=True, timeout=timeout)


def _sync_containers(tmp_path: Path, m: ModelPlan) -> tuple[dict[str, Any], dict[str, Any], dict[str, Path]]:
    """The nvme DaemonSet's sync (init) and save (long-running) containers, and its host path under tmp_path."""
    pod = spec.nvme_daemonset(m, bucket="llm-models")["spec"]["template"]["spec"]
    return pod["initContainers"][0], pod["containers"][0], {"/nvme": tmp_path / "node"}


def _seed_weights(s3: Path, m: ModelPlan) -> None:
    weights = s3 / m.cache.weights_prefix
    weights.mkdir(parents=True)
    (weights / "model.safetensors").write_text("w")
    (weights / ".llm-platform-complete").write_text("rev1")


def test_a_node_saves_its_cache_once_its_replica_served_and_only_the_first_node_writes(
    tmp_path: Path,
) -> None:
    m = _nvme_model()
    _, saver, mounts = _sync_containers(tmp_path, m)
    env = _env(tmp_path, saver, mounts)
    s3 = tmp_path / "s3"
    _seed_weights(s3, m)
    cache = tmp_path / "node" / "vllm-cache" / "mistral-7b"
    (cache / "torch_compile_cache" / "1517964802" / "rank_0_0").mkdir(parents=True)
    (cache / "torch_compile_cache" / "1517964802" / "rank_0_0" / "computation_graph.py").write_text("g")
    _run(saver, env, mounts)
    assert not (s3 / KEY).exists(), "no upload before the replica served (its compile may be half done)"
    assert m.cache.compiled_marker is not None
    (cache / m.cache.compiled_marker).touch()
    _run(saver, env, mounts)
    saved = s3 / KEY / "torch_compile_cache" / "1517964802" / "rank_0_0" / "computation_graph.py"
    assert saved.read_text() == "g" and (s3 / KEY / ".llm-platform-complete").exists()
    log = (tmp_path / "s3.log").read_text().splitlines()
    assert log.index(f"put {KEY}/.claim") < log.index(f"put {KEY}/.llm-platform-complete")
    # another node whose replica also served: the cache is there, it writes nothing
    (s3 / KEY / ".llm-platform-complete").unlink()  # even mid-upload, the claim keeps it out
    _run(saver, env, mounts)
    assert (tmp_path / "s3.log").read_text().count("sync to") == 1


def test_a_new_node_restores_the_cache_before_the_weights_marker_lets_a_replica_start(tmp_path: Path) -> None:
    m = _nvme_model()
    sync, _, mounts = _sync_containers(tmp_path, m)
    env = _env(tmp_path, sync, mounts)
    s3 = tmp_path / "s3"
    _seed_weights(s3, m)
    saved = s3 / KEY / "torch_compile_cache" / "1517964802"
    saved.mkdir(parents=True)
    (saved / "transformed_code.py").write_text("c")
    (s3 / KEY / ".llm-platform-complete").touch()
    _run(sync, env, mounts)
    node = tmp_path / "node"
    restored = (
        node / "vllm-cache" / "mistral-7b" / "torch_compile_cache" / "1517964802" / "transformed_code.py"
    )
    weights_marker = node / m.cache.weights_prefix / ".llm-platform-complete"
    assert restored.read_text() == "c" and weights_marker.read_text() == "rev1"
    assert restored.stat().st_mtime <= weights_marker.stat().st_mtime


def test_without_a_saved_cache_the_sync_copies_only_the_weights(tmp_path: Path) -> None:
    m = _nvme_model()
    sync, _, mounts = _sync_containers(tmp_path, m)
    env = _env(tmp_path, sync, mounts)
    _seed_weights(tmp_path / "s3", m)
    _run(sync, env, mounts)
    node = tmp_path / "node"
    assert (node / m.cache.weights_prefix / "model.safetensors").exists()
    assert not (node / "vllm-cache" / "mistral-7b" / "torch_compile_cache").exists()


# ------------------------------------------------------------------ the vLLM pod's own restore and save


def _pod_containers(
    tmp_path: Path, pod_dir: str = "pod"
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Path]]:
    """prod's mistral-7b (fsx): its restore init container and save sidecar as rendered, and the pod's
    compile-cache volume (vLLM's VLLM_CACHE_ROOT) under tmp_path."""
    m = stack_plan("prod").model("mistral-7b")
    init = {c["name"]: c for c in _pod(m)["initContainers"]}
    mounts = {compile_cache.COMPILE_CACHE_MOUNT: tmp_path / pod_dir / "compile-cache"}
    mounts[compile_cache.COMPILE_CACHE_MOUNT].mkdir(parents=True)
    return init["restore-compile-cache"], init["save-compile-cache"], mounts


def test_an_fsx_pod_restores_the_saved_cache_into_vllms_cache_root(tmp_path: Path) -> None:
    restore, _, mounts = _pod_containers(tmp_path)
    saved = tmp_path / "s3" / FSX_PREFIX / "torch_compile_cache" / "1517964802"
    saved.mkdir(parents=True)
    (saved / "transformed_code.py").write_text("c")
    (tmp_path / "s3" / FSX_PREFIX / ".llm-platform-complete").touch()
    _run(restore, _env(tmp_path, restore, mounts), mounts)
    cache = mounts[compile_cache.COMPILE_CACHE_MOUNT]
    assert (cache / "torch_compile_cache" / "1517964802" / "transformed_code.py").read_text() == "c"


def test_an_fsx_pod_without_a_saved_cache_or_with_a_failed_copy_starts_vllm_on_an_empty_cache(
    tmp_path: Path,
) -> None:
    restore, _, mounts = _pod_containers(tmp_path)
    env = _env(tmp_path, restore, mounts)
    cache = mounts[compile_cache.COMPILE_CACHE_MOUNT]
    _run(restore, env, mounts)  # nothing saved yet: exits 0, copies nothing
    assert not (cache / "torch_compile_cache").exists()
    (tmp_path / "s3" / FSX_PREFIX / "torch_compile_cache").mkdir(parents=True)
    (tmp_path / "s3" / FSX_PREFIX / ".llm-platform-complete").touch()
    partial = cache / "torch_compile_cache"
    _run(restore, {**env, "FAKE_SYNC_FAILS": "1", "FAKE_PARTIAL": str(partial)}, mounts)
    assert not partial.exists(), "a half-copied cache is removed, never loaded"


def test_an_fsx_pod_saves_its_cache_once_vllm_served_and_only_the_first_pod_writes(tmp_path: Path) -> None:
    _, save, mounts = _pod_containers(tmp_path)
    env = _env(tmp_path, save, mounts)
    s3 = tmp_path / "s3"
    cache = mounts[compile_cache.COMPILE_CACHE_MOUNT]
    (cache / "torch_compile_cache" / "1517964802" / "rank_0_0").mkdir(parents=True)
    (cache / "torch_compile_cache" / "1517964802" / "rank_0_0" / "computation_graph.py").write_text("g")
    _run(save, env, mounts)
    assert not (s3 / FSX_PREFIX).exists(), "no upload before vLLM served (its compile may be half done)"
    # the marker vLLM's startup probe touches once /health answers
    (vllm,) = _pod(stack_plan("prod").model("mistral-7b"))["containers"]
    probe = " ".join(vllm["startupProbe"]["exec"]["command"])
    marker = probe.split("pathlib.Path('")[1].split("')")[0]
    Path(_local(marker, mounts)).touch()
    _run(save, env, mounts)
    saved = s3 / FSX_PREFIX / "torch_compile_cache" / "1517964802" / "rank_0_0" / "computation_graph.py"
    assert saved.read_text() == "g" and (s3 / FSX_PREFIX / ".llm-platform-complete").exists()
    log = (tmp_path / "s3.log").read_text().splitlines()
    assert log.index(f"put {FSX_PREFIX}/.claim") < log.index(f"put {FSX_PREFIX}/.llm-platform-complete")
    # a second pod whose vLLM also served, on another node: the claim keeps it out even mid-upload
    _, save2, mounts2 = _pod_containers(tmp_path, "pod-2")
    cache2 = mounts2[compile_cache.COMPILE_CACHE_MOUNT]
    (cache2 / "torch_compile_cache").mkdir()
    Path(_local(marker, mounts2)).touch()
    (s3 / FSX_PREFIX / ".llm-platform-complete").unlink()
    _run(save2, _env(tmp_path, save2, mounts2), mounts2)
    assert (tmp_path / "s3.log").read_text().count("sync to") == 1


# ------------------------------------------------------------- a failed or killed saver never locks the key


def _served_pod(tmp_path: Path, pod_dir: str) -> tuple[dict[str, Any], dict[str, str], dict[str, Path]]:
    """prod's mistral-7b save sidecar of one pod whose vLLM served: its env (the stand-in `aws`) and mounts."""
    _, save, mounts = _pod_containers(tmp_path, pod_dir)
    cache = mounts[compile_cache.COMPILE_CACHE_MOUNT]
    (cache / "torch_compile_cache" / "1517964802").mkdir(parents=True)
    (cache / "torch_compile_cache" / "1517964802" / "computation_graph.py").write_text(pod_dir)
    marker = stack_plan("prod").model("mistral-7b").cache.compiled_marker
    assert marker is not None
    (cache / marker).touch()
    return save, _env(tmp_path, save, mounts), mounts


def _claim(tmp_path: Path) -> Path:
    return tmp_path / "s3" / FSX_PREFIX / ".claim"


def _ready(tmp_path: Path) -> Path:
    return tmp_path / "s3" / FSX_PREFIX / ".llm-platform-complete"


def test_a_saver_whose_upload_failed_releases_its_claim_and_a_second_saver_writes_the_ready_marker(
    tmp_path: Path,
) -> None:
    first, env, mounts = _served_pod(tmp_path, "pod-1")
    _run(first, {**env, "FAKE_UPLOAD_FAILS_ONCE": "1"}, mounts)
    assert not _ready(tmp_path).exists(), "a failed upload is never marked ready"
    assert _claim(tmp_path).read_text().split()[0] == "0", "the failed saver released its claim"
    second, env2, mounts2 = _served_pod(tmp_path, "pod-2")
    _run(second, env2, mounts2)
    assert _ready(tmp_path).exists()
    saved = tmp_path / "s3" / FSX_PREFIX / "torch_compile_cache" / "1517964802" / "computation_graph.py"
    assert saved.read_text() == "pod-2"
    claimed_at, holder = _claim(tmp_path).read_text().split()
    assert int(claimed_at) > 0 and holder == os.uname().nodename  # who saved, when
    # the first saver, a minute later: the cache is saved, it uploads nothing
    _run(first, env, mounts)
    assert (tmp_path / "s3.log").read_text().count("sync to") == 1


def test_a_failed_saver_tries_again_itself(tmp_path: Path) -> None:
    saver, env, mounts = _served_pod(tmp_path, "pod-1")
    _run(saver, {**env, "FAKE_UPLOAD_FAILS_ONCE": "1"}, mounts)
    assert not _ready(tmp_path).exists()
    _run(saver, {**env, "FAKE_UPLOAD_FAILS_ONCE": "1"}, mounts)  # its next minute: the upload works
    assert _ready(tmp_path).exists()


@pytest.mark.parametrize(
    ("claim", "taken_over"),
    [
        ("{expired} pod-killed-mid-upload", True),
        ("", True),  # the empty claim an older saver left: no time, expired
        ("{fresh} pod-uploading-now", False),
    ],
)
def test_a_claim_expires_so_a_saver_killed_mid_upload_never_locks_the_key(
    tmp_path: Path, claim: str, taken_over: bool
) -> None:
    saver, env, mounts = _served_pod(tmp_path, "pod-2")
    expiry = int(env["CLAIM_EXPIRY_SECONDS"])
    now = int(time.time())
    _claim(tmp_path).parent.mkdir(parents=True)
    _claim(tmp_path).write_text(claim.format(expired=now - expiry - 5, fresh=now - 5))
    _run(saver, env, mounts)
    assert _ready(tmp_path).exists() is taken_over
    if taken_over:
        claimed_at, holder = _claim(tmp_path).read_text().split()
        assert int(claimed_at) >= now and holder == os.uname().nodename
    else:
        assert _claim(tmp_path).read_text() == claim.format(fresh=now - 5), "a live saver's claim stays"
        assert not (tmp_path / "s3.log").exists(), "and it alone uploads"


def test_two_savers_that_read_the_same_expired_claim_take_it_over_once(tmp_path: Path) -> None:
    """The take-over is conditional on the ETag read: the second writer's If-Match fails."""
    saver, env, mounts = _served_pod(tmp_path, "pod-2")
    _claim(tmp_path).parent.mkdir(parents=True)
    _claim(tmp_path).write_text("1 pod-killed-mid-upload")
    stale = '"' + hashlib.md5(b"1 pod-killed-mid-upload").hexdigest() + '"'
    # another saver replaced the stale claim between this saver's read and its write
    read_then_lose = (
        f"read_claim() {{ echo '1 pod-killed-mid-upload' > \"$scratch/claim-theirs\"; echo '{stale}'; }}"
    )
    _claim(tmp_path).write_text(f"{int(time.time())} pod-3")
    body = compile_cache.SAVE_SCRIPT.replace("trap ", read_then_lose + "\ntrap ", 1)
    _run({**saver, "command": [*saver["command"][:-1], body]}, env, mounts)
    assert not _ready(tmp_path).exists()
    assert _claim(tmp_path).read_text().split()[1] == "pod-3", "the claim the other saver took stays its own"


def test_a_terminated_saver_releases_its_claim(tmp_path: Path) -> None:
    saver, env, mounts = _served_pod(tmp_path, "pod-1")
    body = _local(saver["command"][-1], mounts)
    proc = subprocess.Popen(
        ["bash", "-c", body], env={**env, "FAKE_SYNC_SECONDS": "30"}, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 20
        while not (tmp_path / "s3.uploading").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert int(_claim(tmp_path).read_text().split()[0]) > 0, "held while uploading"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the stand-in upload the container's end would stop
    assert _claim(tmp_path).read_text().split()[0] == "0"
    assert not _ready(tmp_path).exists()


def test_the_claim_outlives_the_upload_it_guards() -> None:
    for m in (_nvme_model(), stack_plan("prod").model("mistral-7b"), stack_plan("prod").model("llama-70b")):
        upload = COMPILE_CACHE_GB / min(network_gb_per_s(m.instance), S3_GB_PER_S)
        expiry = compile_cache.claim_expiry_seconds(m)
        assert expiry >= compile_cache.CLAIM_EXPIRY_FLOOR_SECONDS and expiry >= 100 * upload
        env = {e["name"]: e["value"] for e in compile_cache.compile_cache_env(m, bucket="b", cache_dir="/c")}
        assert env["CLAIM_EXPIRY_SECONDS"] == str(expiry)
