"""Where a model's weights come from, per `models[].cache` mode, and what that adds to the vLLM pod.

S3 is the source of truth for every mode but `hub`: a one-off Job copies the model from the Hugging Face
Hub into `s3://<bucket>/models/<huggingFaceId>/` and writes a completion marker, so a scale-out never
depends on the Hub.

- `nvme`: a DaemonSet on the model's GPU nodes syncs the prefix onto the node's RAID0 instance store and
  writes a marker; the vLLM pod waits for the marker in an init container and reads the local copy.
- `fsx`:  FSx for Lustre linked to the bucket (data repository association); vLLM mounts it read-only.
- `s3`:   vLLM streams the weights from S3 itself (`--load-format runai_streamer`).
- `hub`:  dev only; vLLM downloads at start with the token.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from llm_platform.components.specs import adapters as adapter_spec
from llm_platform.components.specs.common import (
    ADDON_NODE_LABEL,
    ADDON_TOLERATION,
    GPU_TOLERATION,
    POOL_LABEL,
)
from llm_platform.components.specs.compile_cache import (
    RESTORE_COMPILE_CACHE,
    SAVE_SCRIPT,
    compile_cache_containers,
    compile_cache_env,
)
from llm_platform.components.specs.model_cache_fsx import (
    FSX_CSI_CONTROLLER_SA as FSX_CSI_CONTROLLER_SA,
)
from llm_platform.components.specs.model_cache_fsx import fsx_csi_policy as fsx_csi_policy
from llm_platform.components.specs.model_cache_fsx import fsx_csi_values as fsx_csi_values
from llm_platform.components.specs.model_cache_fsx import (
    fsx_persistent_volume as fsx_persistent_volume,
)
from llm_platform.components.specs.model_cache_fsx import (
    fsx_persistent_volume_claim as fsx_persistent_volume_claim,
)
from llm_platform.components.specs.model_cache_iam import bucket_policy as bucket_policy
from llm_platform.components.specs.model_cache_iam import model_access_policy as model_access_policy
from llm_platform.components.specs.model_cache_iam import writer_policy as writer_policy
from llm_platform.facts.versions import (
    AWS_CLI_IMAGE,
    LOADER_BOTO3_VERSION,
    LOADER_HUGGINGFACE_HUB_VERSION,
    PYTHON_IMAGE,
)
from llm_platform.plan import ModelPlan
from llm_platform.plan.addon_pods import LOADER, LOADER_SCRATCH_GIB
from llm_platform.plan.naming import (
    HF_TOKEN_SECRET_KEY,
    MODELS_PREFIX,
    PLATFORM_UID,
    READY_MARKER,
    non_root_container,
    non_root_pod,
    restricted_container,
)
from llm_platform.plan.node_capacity import SYNC_INIT_RESOURCES, SYNC_READY_RESOURCES

MODEL_MOUNT = "/models"
LUSTRE_PORTS = [(988, 988), (1018, 1023)]  # TCP: Lustre server and client ports (FSx for Lustre user guide)
# The loader holds one file at a time in its scratch space: the largest file of a Hub repo (Llama-3.1-70B's
# original/consolidated.*.pth are ~17.6 GB) plus pip's cache. It runs on an add-on node, whose root volume
# (cluster.addonNodes.diskSizeGiB, 100 GiB by default) must leave this much allocatable.
LOADER_SCRATCH_REQUEST_GIB = LOADER_SCRATCH_GIB
LOADER_SCRATCH_LIMIT_GIB = 40


# ------------------------------------------------------------------------------------- pod wiring


@dataclass(frozen=True)
class CacheWiring:
    """What a cache mode adds to the vLLM pod."""

    model_path: str
    extra_args: list[str] = field(default_factory=list)
    env: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)
    # torch.compile / CUDA-graph artefacts: on the node's NVMe for nvme (a warm node starts faster),
    # otherwise in the pod's own emptyDir (which also lives on the NVMe-backed ephemeral storage)
    compile_cache: dict[str, Any] = field(default_factory=lambda: {"emptyDir": {"sizeLimit": "20Gi"}})
    # LoRA adapters (components/specs/adapters.py): adapter name -> its directory in the vLLM container
    adapter_dirs: dict[str, str] = field(default_factory=dict)


OFFLINE = [{"name": "HF_HUB_OFFLINE", "value": "1"}]


def _wait_for_file(marker: str, volume: str, sub_path: str | None = None) -> dict[str, Any]:
    """Init container: hold the vLLM container until the weights' completion marker exists."""
    mount: dict[str, Any] = {"name": volume, "mountPath": MODEL_MOUNT, "readOnly": True}
    if sub_path:
        mount["subPath"] = sub_path
    script = f'until [ -f "{marker}" ]; do echo "waiting for {marker}"; sleep 10; done'
    return adapter_spec.marker_wait("wait-for-weights", script, [mount])


def _wait_for_object(bucket: str, key: str) -> dict[str, Any]:
    """Init container: hold the vLLM container until the loader Job has written the marker to S3."""
    return {
        "name": "wait-for-weights",
        "image": AWS_CLI_IMAGE,
        "command": ["/bin/sh", "-c"],
        "args": [
            f'until aws s3api head-object --bucket "{bucket}" --key "{key}" >/dev/null 2>&1; do '
            f'echo "waiting for s3://{bucket}/{key}"; sleep 15; done'
        ],
        "env": [{"name": "HOME", "value": "/tmp"}],
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": restricted_container(),
    }


def _weights_wiring(m: ModelPlan, *, bucket: str) -> CacheWiring:
    model, cache = m.model, m.cache
    if cache.mode == "nvme":
        assert cache.nvme_root is not None and cache.compile_cache_host_path is not None
        local = f"{MODEL_MOUNT}/{model.hugging_face_id}"
        marker = f"{local}/{READY_MARKER}"
        return CacheWiring(
            model_path=local,
            env=OFFLINE,
            volumes=[
                {
                    "name": "weights",
                    "hostPath": {"path": f"{cache.nvme_root}/{MODELS_PREFIX}", "type": "Directory"},
                }
            ],
            volume_mounts=[{"name": "weights", "mountPath": MODEL_MOUNT, "readOnly": True}],
            init_containers=[_wait_for_file(marker, "weights")],
            # prepared (and handed to PLATFORM_UID) by the sync DaemonSet
            compile_cache={"hostPath": {"path": cache.compile_cache_host_path, "type": "Directory"}},
        )
    if cache.mode == "fsx":
        claim = m.names.fsx_claim
        return CacheWiring(
            model_path=f"{MODEL_MOUNT}/{model.hugging_face_id}",
            env=OFFLINE,
            volumes=[{"name": "fsx", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}],
            # the data repository association imports s3://<bucket>/models to /models on the file system
            volume_mounts=[
                {"name": "fsx", "mountPath": MODEL_MOUNT, "subPath": MODELS_PREFIX, "readOnly": True}
            ],
            # the association imports the loader's marker with the weights
            init_containers=[
                _wait_for_file(f"{MODEL_MOUNT}/{model.hugging_face_id}/{READY_MARKER}", "fsx", MODELS_PREFIX)
            ],
        )
    if cache.mode == "s3":
        return CacheWiring(
            model_path=f"s3://{bucket}/{cache.weights_prefix}",
            extra_args=["--load-format", "runai_streamer"],
            env=OFFLINE,
            init_containers=[_wait_for_object(bucket, cache.marker_key)],
        )
    return CacheWiring(model_path=model.hugging_face_id)


def cache_wiring(m: ModelPlan, *, bucket: str) -> CacheWiring:
    """The cache mode's weights wiring; with a compile cache persisted by the pod (every mode but nvme,
    whose node sync does it) an init container restores it before vLLM starts and a native sidecar saves it
    once vLLM wrote the compiled marker (it runs beside vLLM and never holds up the pod's termination)."""
    wiring = adapter_spec.with_adapter_dirs(
        m, _weights_wiring(m, bucket=bucket), bucket=bucket, models_mount=MODEL_MOUNT
    )
    if not m.cache.compile_cache_in_pod:
        return wiring
    return replace(
        wiring, init_containers=[*wiring.init_containers, *compile_cache_containers(m, bucket=bucket)]
    )


# -------------------------------------------------------------------------- Hub -> S3 loader Job

LOADER_SCRIPT = (
    """\
import os, sys, tempfile
import boto3
from huggingface_hub import HfApi, hf_hub_download

repo, bucket, prefix = os.environ["HF_REPO"], os.environ["BUCKET"], os.environ["PREFIX"]
marker = f"{prefix}/"""
    + READY_MARKER
    + """"
s3 = boto3.client("s3")
api = HfApi(token=os.environ.get("HF_TOKEN") or None)
revision = api.model_info(repo).sha
try:
    done = s3.get_object(Bucket=bucket, Key=marker)["Body"].read().decode()
except s3.exceptions.NoSuchKey:
    done = ""
if done == revision:
    print(f"{repo}@{revision} is already in s3://{bucket}/{prefix}; nothing to do")
    sys.exit(0)
files = api.list_repo_files(repo, revision=revision)
with tempfile.TemporaryDirectory(dir="/scratch") as tmp:
    for name in files:
        # one file at a time: scratch space never needs more than the largest shard
        path = hf_hub_download(repo, name, revision=revision, local_dir=tmp, token=api.token)
        s3.upload_file(path, bucket, f"{prefix}/{name}")
        os.remove(path)
        print(f"copied {name}")
s3.put_object(Bucket=bucket, Key=marker, Body=revision.encode())
print(f"{repo}@{revision} copied to s3://{bucket}/{prefix}")
"""
)


def loader_configmap(namespace: str, adapters: bool = False) -> dict[str, Any]:
    data = {"load.py": LOADER_SCRIPT}
    if adapters:
        data[adapter_spec.ADAPTER_LOADER_FILE] = adapter_spec.ADAPTER_LOADER_SCRIPT
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "model-loader", "namespace": namespace},
        "data": data,
    }


def _loader_container(m: ModelPlan, *, bucket: str) -> dict[str, Any]:
    """The copy itself: pip-installs the pinned Hub client and boto3, then runs the loader script (and the
    adapters' one), with scratch space sized for the largest file."""
    model, names = m.model, m.names
    env: list[dict[str, Any]] = [
        {"name": "HF_REPO", "value": model.hugging_face_id},
        {"name": "BUCKET", "value": bucket},
        {"name": "PREFIX", "value": m.cache.weights_prefix},
        {"name": "HF_HOME", "value": "/scratch/hf-home"},
        {"name": "PIP_CACHE_DIR", "value": "/scratch/pip"},
        {"name": "HOME", "value": "/scratch"},
        {"name": "TMPDIR", "value": "/scratch"},
    ]
    if m.loader_uses_hf_token:
        token = {"secretKeyRef": {"name": names.hf_token_secret, "key": HF_TOKEN_SECRET_KEY}}
        env.append({"name": "HF_TOKEN", "valueFrom": token})
    install = (
        f"pip install --quiet --user huggingface_hub=={LOADER_HUGGINGFACE_HUB_VERSION} "
        f"boto3=={LOADER_BOTO3_VERSION}"
    )
    run = f"{install} && python /opt/loader/load.py"
    if m.lora is not None:
        env.append(adapter_spec.loader_env(m.lora))
        run += f" && python /opt/loader/{adapter_spec.ADAPTER_LOADER_FILE}"
    return {
        "name": "load",
        "image": PYTHON_IMAGE,
        "command": ["/bin/sh", "-c"],
        "args": [run],
        "env": env,
        "resources": {
            # plan/addon_pods.py: what the add-on pool's limits must hold at its peak
            "requests": {
                **LOADER.as_dict(),
                "ephemeral-storage": f"{LOADER_SCRATCH_REQUEST_GIB}Gi",
            },
            "limits": {
                "memory": "4Gi",
                "ephemeral-storage": f"{LOADER_SCRATCH_LIMIT_GIB}Gi",
            },
        },
        "volumeMounts": [
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "script", "mountPath": "/opt/loader", "readOnly": True},
        ],
        "securityContext": restricted_container(),
    }


def loader_job(m: ModelPlan, *, bucket: str) -> dict[str, Any]:
    """Copy the model from the Hub into S3 once (idempotent: a marker holds the copied revision)."""
    model, names = m.model, m.names
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": names.loader_job,
            "namespace": names.namespace,
            "labels": {"app.kubernetes.io/name": "model-loader", "app.kubernetes.io/instance": model.name},
            # a 70B copy outlasts any deploy timeout; the serving pods wait for its marker instead
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {
            "backoffLimit": 4,
            "template": {
                "metadata": {
                    "labels": {
                        "app.kubernetes.io/name": "model-loader",
                        "app.kubernetes.io/instance": model.name,
                    }
                },
                "spec": {
                    "serviceAccountName": names.loader_service_account,
                    "restartPolicy": "OnFailure",
                    # a short copy job: on the add-on nodes, never a GPU
                    "nodeSelector": dict(ADDON_NODE_LABEL),
                    "tolerations": [ADDON_TOLERATION],
                    "automountServiceAccountToken": False,  # EKS Pod Identity brings its own token
                    "securityContext": non_root_pod(),
                    "containers": [_loader_container(m, bucket=bucket)],
                    "volumes": [
                        {"name": "scratch", "emptyDir": {"sizeLimit": f"{LOADER_SCRATCH_LIMIT_GIB}Gi"}},
                        {"name": "script", "configMap": {"name": "model-loader"}},
                    ],
                },
            },
        },
    }


# ------------------------------------------------------------------------------ NVMe pre-warm

SYNC_SCRIPT = (
    f"""\
set -eu
src="s3://${{BUCKET}}/${{PREFIX}}/"
dst="/nvme/${{PREFIX}}"
mkdir -p "$dst" "$COMPILE_CACHE_DIR"
until aws s3api head-object --bucket "$BUCKET" --key "${{PREFIX}}/{READY_MARKER}" >/dev/null 2>&1; do
  echo "waiting for the loader job to finish ${{src}}"; sleep 30
done
"""
    # restored before the weights' marker lets a replica start
    + RESTORE_COMPILE_CACHE
    + f"""\
chown -R {PLATFORM_UID}:{PLATFORM_UID} "$COMPILE_CACHE_DIR"
rev=$(aws s3 cp "s3://${{BUCKET}}/${{PREFIX}}/{READY_MARKER}" -)
if [ "$(cat "$dst/{READY_MARKER}" 2>/dev/null || true)" != "$rev" ]; then
  rm -f "$dst/{READY_MARKER}"
  aws s3 sync --no-progress --exclude "{READY_MARKER}" "$src" "$dst"
  printf '%s' "$rev" > "$dst/{READY_MARKER}"
fi
echo "weights of revision $rev ready in $dst"
"""
)


NVME_SYNC_CAPABILITIES_REASON = (
    "the NVMe sync writes root-owned host directories and hands the compile cache to the serving user"
)


def _sync_init_container(env: list[dict[str, Any]], script: str) -> dict[str, Any]:
    """The sync: root with only CAP_CHOWN and CAP_DAC_OVERRIDE, as the host directories belong to root."""
    return {
        "name": "sync",
        "image": AWS_CLI_IMAGE,
        "command": ["/bin/sh", "-c", script],
        "env": env,
        "resources": copy.deepcopy(SYNC_INIT_RESOURCES),
        "volumeMounts": [
            {"name": "nvme", "mountPath": "/nvme"},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "securityContext": {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE"]},
        },
    }


def _sync_ready_container(env: list[dict[str, Any]], marker: str) -> dict[str, Any]:
    """Unprivileged and idle: Ready only while the weights' completion marker is on the node."""
    return {
        "name": "ready",
        "image": AWS_CLI_IMAGE,
        "command": ["/bin/sh", "-c", SAVE_SCRIPT],
        "env": env,
        # idles, and once per node may upload the compile cache (the AWS CLI)
        "resources": copy.deepcopy(SYNC_READY_RESOURCES),
        "volumeMounts": [
            {"name": "nvme", "mountPath": "/nvme", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "readinessProbe": {
            "exec": {"command": ["test", "-f", marker]},
            "periodSeconds": 30,
        },
        "livenessProbe": {
            "exec": {"command": ["test", "-d", "/nvme"]},
            "periodSeconds": 60,
        },
        "securityContext": non_root_container(),
    }


def nvme_daemonset(m: ModelPlan, *, bucket: str) -> dict[str, Any]:
    """Keep the model's weights on every GPU node of its pool, on the RAID0 instance store.

    The sync runs as an init container, as root with only CAP_CHOWN and CAP_DAC_OVERRIDE (the host
    directories belong to root; it hands the compile-cache directory to the serving user). The pod then
    idles unprivileged, Ready only while the completion marker is there; the vLLM pod's init container
    waits for the same marker on the host path.
    """
    model, names = m.model, m.names
    assert m.cache.nvme_root is not None
    marker = f"/nvme/{m.cache.marker_key}"
    env = [
        {"name": "PREFIX", "value": m.cache.weights_prefix},
        *compile_cache_env(m, bucket=bucket, cache_dir=f"/nvme/vllm-cache/{model.name}"),
        *(adapter_spec.nvme_sync_env(m.lora) if m.lora is not None else []),
    ]
    script = SYNC_SCRIPT + (adapter_spec.NVME_ADAPTER_SYNC if m.lora is not None else "")
    labels = {"app.kubernetes.io/name": "model-sync", "app.kubernetes.io/instance": model.name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": names.sync_daemonset,
            "namespace": names.namespace,
            "labels": labels,
            # listed and justified with the other suppressions in src/llm_platform/tools/checkov.yaml
            "annotations": {"checkov.io/skip1": f"CKV_K8S_25={NVME_SYNC_CAPABILITIES_REASON}"},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": names.sync_service_account,
                    "automountServiceAccountToken": False,  # EKS Pod Identity brings its own token
                    "nodeSelector": {POOL_LABEL: names.node_pool},
                    "tolerations": [GPU_TOLERATION],
                    "priorityClassName": "system-node-critical",
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "initContainers": [_sync_init_container(env, script)],
                    "containers": [_sync_ready_container(env, marker)],
                    "volumes": [
                        {
                            "name": "nvme",
                            "hostPath": {"path": m.cache.nvme_root, "type": "DirectoryOrCreate"},
                        },
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                    ],
                },
            },
        },
    }
