"""Register a built manifest as the matching typed pulumi_kubernetes resource.

Builders in components.specs return plain manifests (easy to read, test and render); this is the one place
that turns them into resources, so every Kubernetes object is registered the same way. A manifest that
depends on another resource's output (a bucket name, a role name) arrives as an Output of the whole dict.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

_TYPED: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "PersistentVolume"): k8s.core.v1.PersistentVolume,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("apps/v1", "StatefulSet"): k8s.apps.v1.StatefulSet,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("storage.k8s.io/v1", "StorageClass"): k8s.storage.v1.StorageClass,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
}

# manifest fields whose keyword argument in the typed resources is spelled differently
_KEYWORDS = {
    "stringData": "string_data",
    "binaryData": "binary_data",
    "automountServiceAccountToken": "automount_service_account_token",
    "allowVolumeExpansion": "allow_volume_expansion",
    "reclaimPolicy": "reclaim_policy",
    "volumeBindingMode": "volume_binding_mode",
    "globalDefault": "global_default",
    "preemptionPolicy": "preemption_policy",
}


def apply_manifest(
    resource_name: str,
    manifest: dict[str, Any] | pulumi.Output[dict[str, Any]],
    opts: pulumi.ResourceOptions,
    *,
    api_version: str | None = None,
    kind: str | None = None,
    fields: tuple[str, ...] = ("metadata", "spec"),
) -> pulumi.CustomResource:
    """A typed resource for core kinds (full schema and diffs), a CustomResource for CRD kinds.

    A plain dict names its own apiVersion, kind and fields; an Output needs `api_version` and `kind`
    (they choose the resource type) and takes `fields` from the dict once it resolves.
    """
    if isinstance(manifest, dict):
        version, kind_ = str(manifest["apiVersion"]), str(manifest["kind"])
        body: dict[str, Any] = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    elif api_version is None or kind is None:
        raise ValueError(f"{resource_name}: an Output manifest needs api_version and kind")
    else:
        version, kind_ = api_version, kind
        body = {field: manifest[field] for field in fields}
    typed = _TYPED.get((version, kind_))
    if typed is not None:
        return typed(resource_name, opts=opts, **{_KEYWORDS.get(k, k): v for k, v in body.items()})
    return k8s.apiextensions.CustomResource(resource_name, api_version=version, kind=kind_, opts=opts, **body)
