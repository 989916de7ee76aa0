"""FSx for Lustre for the `fsx` cache mode: the static PersistentVolume and claim each model namespace mounts,
and the FSx CSI driver's chart values and controller policy.

Re-exported by `model_cache`, whose `fsx` wiring mounts the claim.
"""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION


def fsx_persistent_volume(
    name: str, *, file_system_id: str, dns_name: str, mount_name: str, capacity_gib: int
) -> dict[str, Any]:
    """A static PV for the file system (one per model namespace; they all point at the same FS)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": f"{capacity_gib}Gi"},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": ["flock"],
            "csi": {
                "driver": "fsx.csi.aws.com",
                "volumeHandle": file_system_id,
                "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
            },
        },
    }


def fsx_persistent_volume_claim(
    name: str, namespace: str, *, volume: str, capacity_gib: int
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": volume,
            "resources": {"requests": {"storage": f"{capacity_gib}Gi"}},
        },
    }


FSX_CSI_CONTROLLER_SA = "fsx-csi-controller-sa"


def fsx_csi_values() -> dict[str, Any]:
    """Controller on the add-on nodes (its identity through Pod Identity), node plugin on GPU nodes."""
    return {
        "controller": {
            "nodeSelector": dict(ADDON_NODE_LABEL),
            "tolerations": [ADDON_TOLERATION],
            "serviceAccount": {"create": True, "name": FSX_CSI_CONTROLLER_SA},
        },
        # the node plugin must run on the tainted GPU nodes that mount Lustre
        "node": {"tolerateAllTaints": True},
    }


def fsx_csi_policy() -> dict[str, Any]:
    """The FSx CSI controller only describes file systems for static volumes (no dynamic provisioning)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DescribeFileSystems",
                "Effect": "Allow",
                "Action": ["fsx:DescribeFileSystems"],
                "Resource": "*",
            }
        ],
    }
