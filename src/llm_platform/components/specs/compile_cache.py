"""vLLM's compile cache, persisted in the model bucket per model, vLLM image and GPU.

vLLM keys `$VLLM_CACHE_ROOT/torch_compile_cache/<hash>` on its configs, PyTorch's and the traced code, and
"you can directly copy the whole ~/.cache/vllm/torch_compile_cache directory in your deployment scenario"
(docs.vllm.ai, design/torch_compile, "Compilation Cache"). The first replica that serves saves it; every
later start restores it before vLLM starts. Who runs the two scripts depends on the cache mode: the node's
sync DaemonSet for `nvme` (the cache then lives on the node, components.specs.model_cache), the vLLM pod
itself for every other mode (an init container and a native sidecar, here).
"""

from __future__ import annotations

from typing import Any

from llm_platform.config.versions import AWS_CLI_IMAGE
from llm_platform.plan import ModelPlan
from llm_platform.plan.naming import READY_MARKER, restricted_container

# the vLLM pod's VLLM_CACHE_ROOT: its own emptyDir, or the node's directory (nvme)
COMPILE_CACHE_MOUNT = "/var/cache/vllm"
COMPILE_CACHE_VOLUME = "compile-cache"

# vLLM's compile cache lives in $VLLM_CACHE_ROOT/torch_compile_cache/<hash>/ (docs.vllm.ai, design/torch_compile)
TORCH_COMPILE_CACHE = "torch_compile_cache"

# The compile cache the first replica saved for this model, vLLM image and GPU, copied into
# $COMPILE_CACHE_DIR before a replica starts: its engine then loads the compiled graphs instead of compiling
# them. Run by the node's sync (nvme) and by the vLLM pod's init container (every other mode). A failed copy
# is removed, never left half-written: vLLM then compiles, as it would without a saved cache.
RESTORE_COMPILE_CACHE = f"""\
if [ -n "${{COMPILE_PREFIX}}" ] && \\
   aws s3api head-object --bucket "$BUCKET" --key "${{COMPILE_PREFIX}}/{READY_MARKER}" >/dev/null 2>&1; then
  if aws s3 sync --no-progress "s3://${{BUCKET}}/${{COMPILE_PREFIX}}/{TORCH_COMPILE_CACHE}/" "$COMPILE_CACHE_DIR/{TORCH_COMPILE_CACHE}/"; then
    echo "compile cache restored from s3://${{BUCKET}}/${{COMPILE_PREFIX}}/"
  else
    rm -rf "$COMPILE_CACHE_DIR/{TORCH_COMPILE_CACHE}"
    echo "compile cache not restored from s3://${{BUCKET}}/${{COMPILE_PREFIX}}/: vLLM compiles" >&2
  fi
fi
"""

# the vLLM pod's init container (every mode but nvme)
RESTORE_SCRIPT = "set -u\n" + RESTORE_COMPILE_CACHE

# Once a replica served (it wrote the compiled marker into $COMPILE_CACHE_DIR), save its compile cache to S3
# unless a replica already did. One saver writes: a claim object created with S3's conditional write
# (If-None-Match) only the first can create; the ready marker is written after the upload, so a reader never
# restores a half-written cache. Then it idles: a long-running container (the node sync's, the vLLM pod's
# native sidecar) that exits is restarted.
SAVE_SCRIPT = f"""\
trap 'exit 0' TERM
while [ -n "${{COMPILE_PREFIX}}" ]; do
  if [ -f "$COMPILE_CACHE_DIR/${{COMPILED_MARKER}}" ]; then
    if ! aws s3api head-object --bucket "$BUCKET" --key "${{COMPILE_PREFIX}}/{READY_MARKER}" >/dev/null 2>&1 && \\
       aws s3api put-object --bucket "$BUCKET" --key "${{COMPILE_PREFIX}}/.claim" --if-none-match '*' >/dev/null 2>&1; then
      aws s3 sync --no-progress "$COMPILE_CACHE_DIR/{TORCH_COMPILE_CACHE}/" "s3://${{BUCKET}}/${{COMPILE_PREFIX}}/{TORCH_COMPILE_CACHE}/" && \\
        aws s3api put-object --bucket "$BUCKET" --key "${{COMPILE_PREFIX}}/{READY_MARKER}" >/dev/null && \\
        echo "compile cache saved to s3://${{BUCKET}}/${{COMPILE_PREFIX}}/"
    fi
    break
  fi
  sleep 60 & wait $!
done
while true; do sleep 3600 & wait $!; done
"""


def compile_cache_env(m: ModelPlan, *, bucket: str, cache_dir: str) -> list[dict[str, Any]]:
    """What the restore and save scripts read: the bucket, the model's compile-cache key, the local cache."""
    return [
        {"name": "BUCKET", "value": bucket},
        {"name": "COMPILE_PREFIX", "value": m.cache.compile_cache_prefix or ""},
        {"name": "COMPILED_MARKER", "value": m.cache.compiled_marker or ""},
        {"name": "COMPILE_CACHE_DIR", "value": cache_dir},
        {"name": "AWS_RETRY_MODE", "value": "adaptive"},
        {"name": "HOME", "value": "/tmp"},
    ]


# the native sidecar idles beside vLLM and uploads the compile cache once (AWS CLI); the restore copies it.
# The sidecar's requests add to vLLM's for the pod's whole life (the headroom placeholder holds both).
SAVER_CPU_MILLICORES = 10
SAVER_MEMORY_MIB = 64
COMPILE_CACHE_SAVER_RESOURCES = {
    "requests": {"cpu": f"{SAVER_CPU_MILLICORES}m", "memory": f"{SAVER_MEMORY_MIB}Mi"},
    "limits": {"memory": "512Mi"},
}
COMPILE_CACHE_RESTORE_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "128Mi"},
    "limits": {"memory": "512Mi"},
}


def compile_cache_containers(m: ModelPlan, *, bucket: str) -> list[dict[str, Any]]:
    """The vLLM pod's restore (init) and save (native sidecar: an init container with `restartPolicy:
    Always`) of its compile cache, in the pod's `compile-cache` volume (vLLM's VLLM_CACHE_ROOT)."""
    env = compile_cache_env(m, bucket=bucket, cache_dir=COMPILE_CACHE_MOUNT)
    tmp = {"name": "tmp", "mountPath": "/tmp"}
    return [
        {
            "name": "restore-compile-cache",
            "image": AWS_CLI_IMAGE,
            "command": ["/bin/sh", "-c", RESTORE_SCRIPT],
            "env": env,
            "volumeMounts": [{"name": COMPILE_CACHE_VOLUME, "mountPath": COMPILE_CACHE_MOUNT}, tmp],
            "resources": COMPILE_CACHE_RESTORE_RESOURCES,
            "securityContext": restricted_container(),
        },
        {
            "name": "save-compile-cache",
            "image": AWS_CLI_IMAGE,
            "restartPolicy": "Always",
            "command": ["/bin/sh", "-c", SAVE_SCRIPT],
            "env": env,
            "volumeMounts": [
                {"name": COMPILE_CACHE_VOLUME, "mountPath": COMPILE_CACHE_MOUNT, "readOnly": True},
                tmp,
            ],
            "resources": COMPILE_CACHE_SAVER_RESOURCES,
            "securityContext": restricted_container(),
        },
    ]
