"""vLLM's compile cache, persisted in the model bucket per model, vLLM image and GPU.

vLLM keys `$VLLM_CACHE_ROOT/torch_compile_cache/<hash>` on its configs, PyTorch's and the traced code, and
"you can directly copy the whole ~/.cache/vllm/torch_compile_cache directory in your deployment scenario"
(docs.vllm.ai, design/torch_compile, "Compilation Cache"). The first replica that serves saves it; every
later start restores it before vLLM starts. Who runs the two scripts depends on the cache mode: the node's
sync DaemonSet for `nvme` (the cache then lives on the node, components.specs.model_cache), the vLLM pod
itself for every other mode (an init container and a native sidecar, here).
"""

from __future__ import annotations

import math
from typing import Any

from llm_platform.facts.cold_start import COMPILE_CACHE_GB, S3_GB_PER_S, network_gb_per_s
from llm_platform.facts.versions import AWS_CLI_IMAGE
from llm_platform.plan import ModelPlan
from llm_platform.plan.naming import READY_MARKER, restricted_container

# The scripts run under the pinned AWS CLI image's /bin/sh: aws-cli's docker/Dockerfile at tag 2.27.50
# builds it FROM amazonlinux:2 (whose container image runs /bin/bash, amazonlinux/container-images
# Dockerfile; /bin/sh is bash there) with the CLI in /usr/local/bin; date, uname, sleep, rm and test come
# from its coreutils. The tests run them with bash against a stand-in `aws`.

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
# unless a replica already did. One saver writes at a time: it holds the claim object `<prefix>/.claim`, whose
# body is the time it was taken (epoch seconds) and the pod's name. A saver takes it by S3's conditional
# write: create it (If-None-Match: *), or replace one whose time is older than $CLAIM_EXPIRY_SECONDS
# (If-Match: the ETag just read, so of savers that read the same stale claim only one replaces it): a
# saver killed mid-upload (node lost, SIGKILL) keeps no key locked for longer than that. A failed upload, or
# a TERM while the claim is held, releases the claim (rewritten with time 0, If-Match its own ETag, so it
# never releases a claim another saver took over since) and the saver tries again a minute later; a claim
# of no time (the empty claim of an older saver) counts as expired. The ready marker is written after the
# upload, so a reader never restores a half-written cache; the claim stays beside it (who saved, when).
# Then the saver idles: a long-running container (the node sync's, the vLLM pod's native sidecar) that
# exits is restarted. S3 conditional writes in the pinned AWS CLI (2.27.50): `put-object --if-none-match`
# since 2.17.34, `--if-match` since 2.22.5 (aws/aws-cli CHANGELOG.rst; the IfNoneMatch and IfMatch members of
# PutObjectRequest in awscli/botocore/data/s3/2006-03-01/service-2.json at tag 2.27.50).
SAVE_SCRIPT = f"""\
CLAIM_KEY="${{COMPILE_PREFIX}}/.claim"
scratch="${{TMPDIR:-/tmp}}"
claim_etag=""
# the claim as it stands: its body in $scratch/claim-theirs, its ETag printed
read_claim() {{
  aws s3api get-object --bucket "$BUCKET" --key "$CLAIM_KEY" "$scratch/claim-theirs" \\
    --query ETag --output text 2>/dev/null
}}
# write $1 as the claim's time, under the S3 condition $2 $3; prints the new ETag
write_claim() {{
  echo "$1 $(uname -n)" > "$scratch/claim-mine"
  aws s3api put-object --bucket "$BUCKET" --key "$CLAIM_KEY" --body "$scratch/claim-mine" "$2" "$3" \\
    --query ETag --output text 2>/dev/null
}}
take_claim() {{
  claim_etag=$(write_claim "$(date +%s)" --if-none-match '*') && return 0
  theirs=$(read_claim) || return 1
  claimed_at=""
  read -r claimed_at _ < "$scratch/claim-theirs" || true
  case "$claimed_at" in ''|*[!0-9]*) claimed_at=0 ;; esac
  [ $(( $(date +%s) - claimed_at )) -ge "$CLAIM_EXPIRY_SECONDS" ] || return 1
  claim_etag=$(write_claim "$(date +%s)" --if-match "$theirs")
}}
release_claim() {{
  if [ -n "$claim_etag" ]; then
    write_claim 0 --if-match "$claim_etag" >/dev/null || true
    claim_etag=""
  fi
}}
trap 'release_claim; exit 0' TERM
while [ -n "${{COMPILE_PREFIX}}" ]; do
  if [ -f "$COMPILE_CACHE_DIR/${{COMPILED_MARKER}}" ]; then
    if aws s3api head-object --bucket "$BUCKET" --key "${{COMPILE_PREFIX}}/{READY_MARKER}" >/dev/null 2>&1; then
      break
    fi
    if take_claim; then
      aws s3 sync --no-progress "$COMPILE_CACHE_DIR/{TORCH_COMPILE_CACHE}/" "s3://${{BUCKET}}/${{COMPILE_PREFIX}}/{TORCH_COMPILE_CACHE}/" & wait $!
      if [ $? -eq 0 ] && aws s3api put-object --bucket "$BUCKET" --key "${{COMPILE_PREFIX}}/{READY_MARKER}" >/dev/null; then
        claim_etag=""
        echo "compile cache saved to s3://${{BUCKET}}/${{COMPILE_PREFIX}}/"
        break
      fi
      release_claim
      echo "compile cache not saved to s3://${{BUCKET}}/${{COMPILE_PREFIX}}/: tried again in a minute" >&2
    fi
  fi
  sleep 60 & wait $!
done
while true; do sleep 3600 & wait $!; done
"""


def claim_expiry_seconds(m: ModelPlan) -> int:
    """How old a claim must be before another saver takes it over: far above the upload it guards (the compile
    cache at the node's S3 rate, ~1 s), so a live saver keeps it; at least CLAIM_EXPIRY_FLOOR_SECONDS, the AWS
    CLI's adaptive retries of a throttled upload included."""
    upload = COMPILE_CACHE_GB / min(network_gb_per_s(m.instance), S3_GB_PER_S)
    return max(CLAIM_EXPIRY_FLOOR_SECONDS, math.ceil(CLAIM_EXPIRY_UPLOADS * upload))


# a claim outlives this many uploads of the cache, and never less than the floor
CLAIM_EXPIRY_UPLOADS = 100
CLAIM_EXPIRY_FLOOR_SECONDS = 900


def compile_cache_env(m: ModelPlan, *, bucket: str, cache_dir: str) -> list[dict[str, Any]]:
    """What the restore and save scripts read: the bucket, the model's compile-cache key, the local cache."""
    return [
        {"name": "BUCKET", "value": bucket},
        {"name": "COMPILE_PREFIX", "value": m.cache.compile_cache_prefix or ""},
        {"name": "COMPILED_MARKER", "value": m.cache.compiled_marker or ""},
        {"name": "COMPILE_CACHE_DIR", "value": cache_dir},
        {"name": "CLAIM_EXPIRY_SECONDS", "value": str(claim_expiry_seconds(m))},
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
