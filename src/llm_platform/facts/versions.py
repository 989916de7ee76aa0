"""Pinned upstream versions, one place to bump them (see the upgrades runbook, docs/operations.md).

Source: ../shared/reference/README.md ("Pinned upstream versions").
"""

# The Helm add-ons' charts and versions are their records' (llm_platform/facts/addons.py), named here as before
from llm_platform.facts.addons import (
    AI_GATEWAY,
    AWS_LOAD_BALANCER_CONTROLLER,
    EFA_DEVICE_PLUGIN,
    ENDPOINT_PICKER,
    ENVOY_GATEWAY,
    FSX_CSI_DRIVER,
    GATEWAY_API_INFERENCE_EXTENSION_VERSION,
    GPU_OPERATOR,
    KARPENTER,
    KEDA,
    KUBE_PROMETHEUS_STACK,
    LWS,
    OPENCOST,
)

KARPENTER_CHART, KARPENTER_VERSION = KARPENTER.chart.chart, KARPENTER.version
KARPENTER_CRD_CHART = KARPENTER.charts[0].chart
KEDA_REPO, KEDA_VERSION = KEDA.chart.repo, KEDA.version
KUBE_PROMETHEUS_STACK_REPO = KUBE_PROMETHEUS_STACK.chart.repo
KUBE_PROMETHEUS_STACK_VERSION = KUBE_PROMETHEUS_STACK.version
# the operator (and CRDs) kube-prometheus-stack ships: the tag of its CRD files
PROMETHEUS_OPERATOR_VERSION = KUBE_PROMETHEUS_STACK.crd_files[0].tag
GPU_OPERATOR_REPO, GPU_OPERATOR_VERSION = GPU_OPERATOR.chart.repo, GPU_OPERATOR.chart.version
NFD_REPO, NFD_VERSION = GPU_OPERATOR.charts[0].repo, GPU_OPERATOR.charts[0].version
FSX_CSI_REPO, FSX_CSI_VERSION = FSX_CSI_DRIVER.chart.repo, FSX_CSI_DRIVER.chart.version
AWS_LOAD_BALANCER_CONTROLLER_REPO = AWS_LOAD_BALANCER_CONTROLLER.chart.repo
AWS_LOAD_BALANCER_CONTROLLER_VERSION = AWS_LOAD_BALANCER_CONTROLLER.chart.version
ENVOY_GATEWAY_CHART_REPO = ENVOY_GATEWAY.chart.chart.rsplit("/", 1)[0]  # also AI Gateway's
ENVOY_GATEWAY_VERSION, ENVOY_AI_GATEWAY_VERSION = ENVOY_GATEWAY.version, AI_GATEWAY.version
# the Gateway API CRDs gateway-crds-helm installs (crds.gatewayAPI.channel=standard): the tag of their files
GATEWAY_API_VERSION = ENVOY_GATEWAY.crd_files[0].tag
LLM_D_ROUTER_CHART_REPO = ENDPOINT_PICKER.chart.chart.rsplit("/", 1)[0]
LLM_D_ROUTER_VERSION = ENDPOINT_PICKER.version  # chart llm-d-router-gateway and the EPP image below
LWS_CHART, LWS_VERSION = LWS.chart.chart, LWS.version
EFA_DEVICE_PLUGIN_REPO, EFA_DEVICE_PLUGIN_VERSION = (
    EFA_DEVICE_PLUGIN.chart.repo,
    EFA_DEVICE_PLUGIN.chart.version,
)
OPENCOST_REPO, OPENCOST_VERSION = OPENCOST.chart.repo, OPENCOST.chart.version

# vLLM: plain tags are CUDA 13 builds from v0.20 on; the EKS NVIDIA AMIs' driver must support the CUDA major.
VLLM_IMAGE = "vllm/vllm-openai:v0.30.0"
# The image of models whose pods use EFA (a multi-node LeaderWorkerSet, a disaggregated model's roles): llm-d's
# AWS build, vLLM with NIXL (built with its LIBFABRIC plugin), UCX --with-efa and the AWS EFA installer's
# userspace (libfabric, aws-ofi-nccl, rdma-core). Provenance: llm-d/llm-d docker/Dockerfile.cuda built with
# ENABLE_EFA=true (ARG EFA_INSTALLER_VERSION "1.46.0", NIXL_VERSION "0.9.0", built from source against the EFA
# prefix) and docker/scripts/cuda/common/install-efa.sh (efa-installer.amazonaws.com, `efa_installer.sh
# --skip-kmod`); llm-d PR #1022 moved the full installer (with aws-ofi-nccl) into the runtime stage; the
# image name is llm-d's release table's (`ghcr.io/llm-d/llm-d-aws`: "NVIDIA + EFA/libfabric + NIXL"). NOT
# confirmed at the v0.9.0 tag itself: the files above were read at the stored main-branch revisions
# (Dockerfile.cuda 0199edbf, install-efa.sh 2760655c), and no digest for v0.9.0 was seen; pin the digest
# before production. Its vLLM is llm-d's v0.9.0 build, vLLM v0.26.0 (llm-d PR #2206, "bump images to match vllm
# v0.26.0", merged 2026-08-07), not VLLM_IMAGE's v0.30.0; `--shutdown-timeout` (vLLM v0.18.0+, vllm PR #34730)
# and the other flags the platform writes predate it. Both roles of a model run this one image (NixlConnector
# refuses peers whose vLLM version differs: compute_nixl_compatibility_hash).
EFA_VLLM_IMAGE = "ghcr.io/llm-d/llm-d-aws:v0.9.0"
# the libraries the EFA image carries (the preflight's and the policies' check of any image a model needing EFA
# names): an image not listed here is not known to carry them
EFA_IMAGES = {EFA_VLLM_IMAGE: ("libfabric", "aws-ofi-nccl", "nixl")}
# llm-d's routing sidecar on a disaggregated model's decode pods (llm-d-router v0.10.0 Makefile
# SIDECAR_IMAGE_NAME "llm-d-router-disagg-sidecar", IMAGE_REGISTRY ghcr.io/llm-d; Dockerfile.sidecar builds
# cmd/pd-sidecar): released with the picker, at its version
LLM_D_SIDECAR_IMAGE = f"ghcr.io/llm-d/llm-d-router-disagg-sidecar:{LLM_D_ROUTER_VERSION}"

# Small utility images used by Jobs and DaemonSets (weights sync from S3).
AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.27.50"
PYTHON_IMAGE = "python:3.12.11-slim"

# The Hub -> S3 loader Job installs these into PYTHON_IMAGE at start (pip, pinned)
LOADER_HUGGINGFACE_HUB_VERSION = "0.35.3"
LOADER_BOTO3_VERSION = "1.40.49"


# The Lustre client GPU nodes install when a model reads from FSx: AL2023's own `lustre-client` package,
# so its version follows the pinned AMI release (cluster.amiVersions) rather than a version of its own.
LUSTRE_CLIENT_PACKAGE = "lustre-client"
# The FSx for Lustre file system's Lustre version (FSx `FileSystemTypeVersion`), pinned so a provider default
# never changes a file system; the nodes' lustre-client (above) mounts it.
FSX_LUSTRE_VERSION = "2.15"

# Inference gateway (../shared/reference/GATEWAY.md): Gateway API standard CRDs, the InferencePool CRD, Envoy
# Gateway with Envoy AI Gateway as its extension server, and one llm-d router endpoint picker (EPP) per model.
# AIGW v1.1.x is tested with EG v1.8.1+ and Gateway API v1.5.x; EG v1.9 needs Gateway API v1.6: bump together.
INFERENCE_POOL_CRD_URL = (
    "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
    f"{GATEWAY_API_INFERENCE_EXTENSION_VERSION}/v1-manifests.yaml"
)
LLM_D_EPP_IMAGE_REGISTRY = "ghcr.io/llm-d"
LLM_D_EPP_IMAGE_REPOSITORY = "llm-d-router-endpoint-picker"
# the EPP's tokenizer sidecar for precise prefix routing (`vllm launch render`), the chart's default tag
VLLM_RENDER_IMAGE_REPOSITORY = "vllm/vllm-openai-cpu"
VLLM_RENDER_IMAGE_TAG = "v0.19.1"

# The store of the gateway's global rate-limit counters (gateway.quotaStore): Valkey, the BSD-licensed Redis
# fork; Envoy's ratelimit service speaks the Redis protocol to it (envoyproxy/ratelimit src/redis). The
# image's user is valkey, uid/gid 999 (valkey-container Dockerfile). 8.1.11 (2026-10-26) is the newest 8.1
# patch (valkey.io/download/8.1): 8.1.10's security fixes and the truncated-MULTI AOF recovery fix are in it.
VALKEY_IMAGE = "docker.io/valkey/valkey:8.1.11"
VALKEY_UID = 999

# The pause container of the headroom placeholders and of the image pre-pull DaemonSet: does nothing, holds
# the pod's resources; the version Kubernetes 1.34 ships (kubernetes/kubernetes#130713).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"

# Multi-node replicas (a model with pipelineParallelSize > 1): the LeaderWorkerSet controller, from its chart
# at the release tag (kubernetes-sigs/lws v0.10.0 site/content/en/docs/installation: `helm install lws
# oci://registry.k8s.io/lws/charts/lws --version=0.10.0 --namespace lws-system`; hack/push-chart.sh sets the
# chart's image tag to the release), and the EFA device plugin (aws/eks-charts stable/aws-efa-k8s-device-plugin,
# chart v0.5.30, app v0.5.20), which advertises each node's EFA interfaces as `vpc.amazonaws.com/efa`.
# (LWS_CHART, LWS_VERSION, EFA_DEVICE_PLUGIN_* above, from their records)

# Cost allocation (costs.enabled): the OpenCost chart (opencost/opencost-helm-chart charts/opencost, chart
# 2.5.17 = app and image 1.120.1), reading the stack's Prometheus and pricing nodes from the catalogs.
# (OPENCOST_* above, from its record)

# Progressive rollouts (models[].rollout): Argo Rollouts (chart and CRDs: its record, facts/addons.py
# ARGO_ROLLOUTS) loads its Gateway API traffic-router plugin from this image, copied by an init container
# (argoproj-labs/rollouts-plugin-trafficrouter-gatewayapi docs/installation.md and Dockerfile@v0.15.0: the binary
# is /bin/rollouts-plugin-trafficrouter-gatewayapi, user 999; images for amd64 and arm64 on ghcr.io).
ARGO_ROLLOUTS_GATEWAY_PLUGIN_VERSION = "v0.15.0"
ARGO_ROLLOUTS_GATEWAY_PLUGIN_IMAGE = (
    f"ghcr.io/argoproj-labs/rollouts-plugin-trafficrouter-gatewayapi:{ARGO_ROLLOUTS_GATEWAY_PLUGIN_VERSION}"
)
