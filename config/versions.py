"""Pinned upstream versions, one place to bump them (see the README's upgrade runbook).

Source: ../shared/reference/README.md ("Pinned upstream versions").
"""

KARPENTER_CHART = "oci://public.ecr.aws/karpenter/karpenter"
KARPENTER_VERSION = "1.14.1"

KEDA_REPO = "https://kedacore.github.io/charts"
KEDA_VERSION = "2.20.2"

KUBE_PROMETHEUS_STACK_REPO = "https://prometheus-community.github.io/helm-charts"
KUBE_PROMETHEUS_STACK_VERSION = "88.5.3"

GPU_OPERATOR_REPO = "https://helm.ngc.nvidia.com/nvidia"
GPU_OPERATOR_VERSION = "v26.7.0"

# the Node Feature Discovery version the GPU Operator chart bundles, deployed as its own release
NFD_REPO = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"
NFD_VERSION = "0.19.0"

FSX_CSI_REPO = "https://kubernetes-sigs.github.io/aws-fsx-csi-driver"
FSX_CSI_VERSION = "1.17.0"

# vLLM: plain tags are CUDA 13 builds from v0.20 on; the EKS NVIDIA AMIs' driver must support the CUDA major.
VLLM_IMAGE = "vllm/vllm-openai:v0.30.0"

# Small utility images used by Jobs and DaemonSets (weights sync from S3).
AWS_CLI_IMAGE = "public.ecr.aws/aws-cli/aws-cli:2.27.50"
PYTHON_IMAGE = "python:3.12.11-slim"
KARPENTER_CRD_CHART = "oci://public.ecr.aws/karpenter/karpenter-crd"

# AWS Load Balancer Controller: provisions the gateway's Network Load Balancer
AWS_LOAD_BALANCER_CONTROLLER_REPO = "https://aws.github.io/eks-charts"
AWS_LOAD_BALANCER_CONTROLLER_VERSION = "1.17.0"

# The pause container of the headroom placeholders and of the image pre-pull DaemonSet: does nothing, holds
# the pod's resources; the version Kubernetes 1.34 ships (kubernetes/kubernetes#130713).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
