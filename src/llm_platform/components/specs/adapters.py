"""A model's LoRA adapters (config/schema/adapters.py, plan/lora.py): synced like its weights, registered with vLLM.

S3 is the source of truth, as for weights: the model's loader Job copies every adapter, from the Hugging Face Hub
at its pinned commit or from its S3 prefix, to `s3://<bucket>/models/_adapters/<model>/<adapter>/` and writes a
completion marker holding what it copied (the commit, or the source prefix), so a re-run copies nothing twice.
vLLM reads an adapter from a directory (vllm/lora/utils.py get_adapter_absolute_path: a local path, else a Hub
download), so each cache mode gives the pod a local copy:

- `nvme`: the node's sync DaemonSet syncs the adapters beside the weights; the pod reads the host path.
- `fsx`:  the data repository association imports `models/`, adapters included; the pod reads the mount.
- `s3`:   an init container copies the adapters into the pod's own volume (vLLM streams only the base weights).

The pod waits for each adapter's marker before vLLM starts: a listed adapter is never missing at start.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, TypeVar

from llm_platform.facts.versions import AWS_CLI_IMAGE
from llm_platform.plan import ModelPlan
from llm_platform.plan.lora import LoraPlan
from llm_platform.plan.naming import READY_MARKER, restricted_container

ADAPTERS_MOUNT = "/adapters"  # s3 mode: the pod's own copy
ADAPTERS_VOLUME = "adapters"
ADAPTERS_VOLUME_GIB = 10  # rank-64 adapters of a 70B model are ~1.6 GB each in BF16


def lora_args(m: ModelPlan, adapter_dirs: dict[str, str]) -> list[str]:
    """vLLM's LoRA flags, sized from the adapter list (vllm/config/lora.py LoRAConfig; `--lora-modules
    name=path`, vllm/entrypoints/openai/cli_args.py LoRAParserAction)."""
    lora = m.lora
    if lora is None:
        return []
    return [
        "--enable-lora",
        "--max-loras",
        str(lora.max_loras),
        "--max-lora-rank",
        str(lora.max_lora_rank),
        "--max-cpu-loras",
        str(lora.max_cpu_loras),
        "--lora-modules",
        *(f"{a.name}={adapter_dirs[a.name]}" for a in lora.adapters),
    ]


def adapter_dirs(m: ModelPlan, models_mount: str) -> dict[str, str]:
    """Where the vLLM container finds each adapter: below the models mount (nvme, fsx) or its own copy (s3)."""
    lora = m.lora
    if lora is None:
        return {}
    if m.cache.mode == "s3":
        return {a.name: f"{ADAPTERS_MOUNT}/{a.name}" for a in lora.adapters}
    return {a.name: f"{models_mount}/{a.relative_dir}" for a in lora.adapters}


W = TypeVar("W")


def with_adapter_dirs(m: ModelPlan, wiring: W, *, bucket: str, models_mount: str) -> W:
    """A cache mode's pod wiring (model_cache.CacheWiring) plus the adapters, after the weights: a local directory
    each and an init container that holds vLLM until every one is there."""
    lora = m.lora
    if lora is None:
        return wiring
    w: Any = wiring
    dirs = adapter_dirs(m, models_mount)
    if m.cache.mode == "s3":
        # the copy container's /tmp is the pod's own `tmp` volume (serving.deployment)
        return replace(
            w,
            adapter_dirs=dirs,
            volumes=[*w.volumes, adapters_volume()],
            volume_mounts=[*w.volume_mounts, adapters_mount()],
            init_containers=[*w.init_containers, copy_adapters(lora, bucket)],
        )
    # nvme and fsx: the adapters arrive below the models mount the weights' wait container reads
    mount = w.init_containers[0]["volumeMounts"][0]
    return replace(
        w, adapter_dirs=dirs, init_containers=[*w.init_containers, wait_for_adapter_files(m, dirs, mount)]
    )


def _resources() -> dict[str, Any]:
    return {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}


def marker_wait(name: str, script: str, mounts: list[dict[str, Any]]) -> dict[str, Any]:
    """Init container that holds vLLM until `script` (a shell loop polling a marker) returns; the weights'
    and the adapters' waits differ only in their script and mounts."""
    return {
        "name": name,
        "image": AWS_CLI_IMAGE,
        "command": ["/bin/sh", "-c"],
        "args": [script],
        "volumeMounts": mounts,
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": restricted_container(),
    }


def wait_for_adapter_files(m: ModelPlan, dirs: dict[str, str], mount: dict[str, Any]) -> dict[str, Any]:
    """Init container (nvme, fsx): hold vLLM until every adapter's marker is on the mounted models volume."""
    markers = " ".join(f'"{d}/{READY_MARKER}"' for d in dirs.values())
    script = f'for f in {markers}; do until [ -f "$f" ]; do echo "waiting for $f"; sleep 10; done; done'
    return marker_wait("wait-for-adapters", script, [mount])


# s3 mode: wait for each adapter's marker in the bucket, then copy the adapter into the pod's volume
COPY_ADAPTERS_SCRIPT = f"""\
set -eu
for a in $ADAPTERS; do
  until aws s3api head-object --bucket "$BUCKET" --key "$PREFIX/$a/{READY_MARKER}" >/dev/null 2>&1; do
    echo "waiting for s3://$BUCKET/$PREFIX/$a/"; sleep 15
  done
  aws s3 sync --no-progress --exclude "{READY_MARKER}" "s3://$BUCKET/$PREFIX/$a/" "{ADAPTERS_MOUNT}/$a/"
  echo "adapter $a ready in {ADAPTERS_MOUNT}/$a"
done
"""


def copy_adapters(lora: LoraPlan, bucket: str) -> dict[str, Any]:
    return {
        "name": "copy-adapters",
        "image": AWS_CLI_IMAGE,
        "command": ["/bin/sh", "-c", COPY_ADAPTERS_SCRIPT],
        "env": [
            {"name": "BUCKET", "value": bucket},
            {"name": "PREFIX", "value": lora.prefix},
            {"name": "ADAPTERS", "value": " ".join(lora.names)},
            {"name": "HOME", "value": "/tmp"},
        ],
        "volumeMounts": [
            {"name": ADAPTERS_VOLUME, "mountPath": ADAPTERS_MOUNT},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        "resources": _resources(),
        "securityContext": restricted_container(),
    }


def adapters_volume() -> dict[str, Any]:
    return {"name": ADAPTERS_VOLUME, "emptyDir": {"sizeLimit": f"{ADAPTERS_VOLUME_GIB}Gi"}}


def adapters_mount() -> dict[str, Any]:
    return {"name": ADAPTERS_VOLUME, "mountPath": ADAPTERS_MOUNT, "readOnly": True}


# ---------------------------------------------------------------------------------- loader Job

# Run by the model's loader Job after load.py (same image, pinned huggingface_hub and boto3). ADAPTERS: JSON
# [{name, source, revision, prefix}]. The marker holds the copied commit (Hub) or the source prefix (S3).
ADAPTER_LOADER_SCRIPT = (
    """\
import json, os, sys, tempfile
import boto3
from huggingface_hub import HfApi, hf_hub_download

bucket = os.environ["BUCKET"]
s3 = boto3.client("s3")
api = HfApi(token=os.environ.get("HF_TOKEN") or None)
MARKER = \""""
    + READY_MARKER
    + """\"


def copied(key):
    try:
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    except s3.exceptions.NoSuchKey:
        return ""


for a in json.loads(os.environ["ADAPTERS"]):
    prefix, source, revision = a["prefix"], a["source"], a["revision"]
    want = revision or source
    if copied(f"{prefix}/{MARKER}") == want:
        print(f"adapter {a['name']} ({want}) is already in s3://{bucket}/{prefix}; nothing to do")
        continue
    if source.startswith("s3://"):
        src_bucket, _, src_prefix = source[len("s3://"):].partition("/")
        src_prefix = src_prefix.rstrip("/")
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=src_bucket, Prefix=src_prefix + "/")
        keys = [o["Key"] for p in pages for o in p.get("Contents", [])]
        names = [k[len(src_prefix) + 1:] for k in keys]
        if "adapter_config.json" not in names:
            sys.exit(f"adapter {a['name']}: {source}/ has no adapter_config.json; is it a PEFT LoRA directory?")
        for key, name in zip(keys, names):
            s3.copy({"Bucket": src_bucket, "Key": key}, bucket, f"{prefix}/{name}")
            print(f"copied {source}/{name}")
    else:
        files = api.list_repo_files(source, revision=revision)
        if "adapter_config.json" not in files:
            sys.exit(f"adapter {a['name']}: {source}@{revision} has no adapter_config.json; is it a LoRA?")
        with tempfile.TemporaryDirectory(dir="/scratch") as tmp:
            for name in files:
                path = hf_hub_download(source, name, revision=revision, local_dir=tmp, token=api.token)
                s3.upload_file(path, bucket, f"{prefix}/{name}")
                os.remove(path)
                print(f"copied {source}@{revision}/{name}")
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{MARKER}", Body=want.encode())
    print(f"adapter {a['name']} ({want}) copied to s3://{bucket}/{prefix}")
"""
)
ADAPTER_LOADER_FILE = "adapters.py"


def loader_env(lora: LoraPlan) -> dict[str, Any]:
    spec = [
        {"name": a.name, "source": a.source, "revision": a.revision, "prefix": a.prefix}
        for a in lora.adapters
    ]
    return {"name": "ADAPTERS", "value": json.dumps(spec, separators=(",", ":"))}


# --------------------------------------------------------------------------------- NVMe sync

# Appended to the node sync's script (model_cache.SYNC_SCRIPT, same variables): each adapter after the weights
NVME_ADAPTER_SYNC = f"""\
for a in $ADAPTERS; do
  key="$ADAPTERS_PREFIX/$a/{READY_MARKER}"
  until aws s3api head-object --bucket "$BUCKET" --key "$key" >/dev/null 2>&1; do
    echo "waiting for the loader job to copy adapter $a"; sleep 30
  done
  want=$(aws s3 cp "s3://$BUCKET/$key" -)
  dir="/nvme/$ADAPTERS_PREFIX/$a"
  if [ "$(cat "$dir/{READY_MARKER}" 2>/dev/null || true)" != "$want" ]; then
    rm -f "$dir/{READY_MARKER}"
    aws s3 sync --no-progress --delete --exclude "{READY_MARKER}" "s3://$BUCKET/$ADAPTERS_PREFIX/$a/" "$dir"
    printf '%s' "$want" > "$dir/{READY_MARKER}"
  fi
  echo "adapter $a ($want) ready in $dir"
done
"""


def nvme_sync_env(lora: LoraPlan) -> list[dict[str, Any]]:
    return [
        {"name": "ADAPTERS_PREFIX", "value": lora.prefix},
        {"name": "ADAPTERS", "value": " ".join(lora.names)},
    ]


# ------------------------------------------------------------------------------------------ IAM


def with_adapters(
    policy: dict[str, Any], bucket_arn: str, lora: LoraPlan | None, *, loader: bool
) -> dict[str, Any]:
    """A model role's policy plus its adapters: read them in the bucket (the node sync, an s3-mode pod); the
    loader also writes them and reads each S3 source prefix."""
    if lora is None:
        return policy
    p = lora.prefix
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ListAdapters",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [f"{p}/*", p]}},
        },
        {
            "Sid": "ReadWriteAdapters" if loader else "ReadAdapters",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"]
            if loader
            else "s3:GetObject",
            "Resource": f"{bucket_arn}/{p}/*",
        },
    ]
    if loader:
        for i, source in enumerate(lora.s3_sources):
            src_bucket, _, src_prefix = source[len("s3://") :].partition("/")
            src_prefix = src_prefix.rstrip("/")
            arn = f"arn:{bucket_arn.split(':')[1]}:s3:::{src_bucket}"  # the bucket's partition
            statements += [
                {
                    "Sid": f"ListAdapterSource{i}",
                    "Effect": "Allow",
                    "Action": "s3:ListBucket",
                    "Resource": arn,
                    "Condition": {"StringLike": {"s3:prefix": [f"{src_prefix}/*", src_prefix]}},
                },
                {
                    "Sid": f"ReadAdapterSource{i}",
                    "Effect": "Allow",
                    "Action": "s3:GetObject",
                    "Resource": f"{arn}/{src_prefix}/*",
                },
            ]
    return {**policy, "Statement": [*policy["Statement"], *statements]}
