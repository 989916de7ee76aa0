"""Envoy Gateway's and AI Gateway's charts as the platform installs them: the CRD chart's and Envoy Gateway's
values (AI Gateway as its extension server for InferencePool backends) and the AI Gateway webhook's own
certificate Secret. Re-exported by components.specs.gateway, whose module docstring gives the install order.
"""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs import quota
from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION, secret
from llm_platform.config.schema import QuotaStoreConfig
from llm_platform.plan.naming import AI_GATEWAY_NAMESPACE

AI_GATEWAY_CONTROLLER = (
    "ai-gateway-controller"  # the chart's fullnameOverride; the extension server's Service
)
AI_GATEWAY_EXTENSION_PORT = 1063
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"


def addon_pod() -> dict[str, Any]:
    """A chart pod's place: the add-on nodes (their label and taint)."""
    return {"nodeSelector": dict(ADDON_NODE_LABEL), "tolerations": [ADDON_TOLERATION]}


def gateway_crds_values() -> dict[str, Any]:
    """gateway-crds-helm: the Gateway API v1.5.1 standard channel (all 8 CRDs; EG always watches GRPCRoute,
    TLSRoute, ListenerSet, BackendTLSPolicy) and Envoy Gateway's own CRDs."""
    return {
        "crds": {"gatewayAPI": {"enabled": True, "channel": "standard"}, "envoyGateway": {"enabled": True}}
    }


def envoy_gateway_values(quota_store: QuotaStoreConfig | None = None) -> dict[str, Any]:
    """gateway-helm with AI Gateway's base and InferencePool add-on values (ai-gateway v1.1.0
    manifests/envoy-gateway-values.yaml, examples/inference-pool/envoy-gateway-values-addon.yaml); with a
    quota store, the global rate limit's Redis backend and rate limit Deployment (specs.quota)."""
    values: dict[str, Any] = {
        "crds": {"enabled": False},  # installed first, by gateway-crds-helm
        # one controller: while it restarts the proxies keep serving their last configuration
        "deployment": {"pod": addon_pod()},
        "certgen": {"job": addon_pod()},
        "config": {
            "envoyGateway": {
                "gateway": {"controllerName": CONTROLLER_NAME},
                "provider": {"type": "Kubernetes"},
                "logging": {"level": {"default": "info"}},
                "extensionApis": {"enableEnvoyPatchPolicy": True, "enableBackend": True},
                "extensionManager": {
                    "hooks": {
                        "xdsTranslator": {
                            "translation": {
                                "listener": {"includeAll": True},
                                "route": {"includeAll": True},
                                "cluster": {"includeAll": True},
                                "secret": {"includeAll": True},
                            },
                            "post": ["Translation", "Cluster", "Route"],
                        }
                    },
                    "service": {
                        "fqdn": {
                            "hostname": f"{AI_GATEWAY_CONTROLLER}.{AI_GATEWAY_NAMESPACE}.svc.cluster.local",
                            "port": AI_GATEWAY_EXTENSION_PORT,
                        }
                    },
                    # Envoy Gateway hands these backendRefs to AI Gateway, which turns them into an
                    # ORIGINAL_DST cluster and the pool's endpoint-picker ext_proc
                    "backendResources": [
                        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
                    ],
                },
            }
        },
    }
    if quota_store is not None:
        values["config"]["envoyGateway"] |= quota.envoy_gateway_quota_values(quota_store)
    return values


# The AI Gateway controller's pod-mutating webhook (ai-gateway-helm v1.1.0, templates/admission_webhook.yaml):
# with cert-manager off the chart makes the Secret `controller.mutatingWebhook.tlsCertSecretName` itself,
# from a CA and a 365-day leaf that Helm's genCA/genSignedCert generate at the first install and that its
# `lookup` of that Secret then keeps on every upgrade, never renewed (the leaf expires a year after install
# and, with `failurePolicy: Fail`, no Envoy proxy pod can be created after that). The platform makes that
# Secret itself, from a CA and a leaf of its own (pulumi-tls, renewed by the `pulumi up` after
# WEBHOOK_CERT_RENEW_HOURS before expiry); the chart's `lookup` finds it, so Helm renders the same data and
# adopts the object (Helm's ownership labels and annotations below). Keys: caBundleName/tlsCertName/
# tlsKeyName's defaults; the controller mounts it at /certs (templates/deployment.yaml), serves the leaf
# through controller-runtime's webhook server (cmd/controller/main.go, CertDir: its certwatcher reloads a
# renewed leaf) and patches ca.crt into the MutatingWebhookConfiguration at start (maybePatchAdmissionWebhook).
WEBHOOK_CERT_SECRET = "ai-gateway-webhook-tls"
AI_GATEWAY_RELEASE = "ai-gateway"
WEBHOOK_CA_VALIDITY_HOURS = 10 * 365 * 24  # the chart's own CA: genCA ... 3650 days
WEBHOOK_CERT_VALIDITY_HOURS = 3 * 365 * 24
WEBHOOK_CERT_RENEW_HOURS = 90 * 24


def webhook_dns_names() -> list[str]:
    """The names the API server may dial the webhook Service by: the chart's own list (admission_webhook.yaml)."""
    svc, ns = AI_GATEWAY_CONTROLLER, AI_GATEWAY_NAMESPACE
    return [svc, f"{svc}.{ns}", f"{svc}.{ns}.svc", f"{svc}.{ns}.svc.cluster.local"]


def webhook_cert_secret(pems: Any) -> dict[str, Any]:
    """`pems` = {ca.crt, tls.crt, tls.key} (a Pulumi secret in the component: masked in state and renders).
    Opaque, as the chart renders it (a Secret's type cannot change); labelled for Helm to adopt it, and
    Pulumi's own writes win over the field ownership Helm's adoption takes (pulumi.com/patchForce)."""
    manifest = secret(WEBHOOK_CERT_SECRET, AI_GATEWAY_NAMESPACE, pems)
    manifest["metadata"] |= {
        "labels": {"app.kubernetes.io/managed-by": "Helm"},
        "annotations": {
            "meta.helm.sh/release-name": AI_GATEWAY_RELEASE,
            "meta.helm.sh/release-namespace": AI_GATEWAY_NAMESPACE,
            "pulumi.com/patchForce": "true",
        },
    }
    return manifest
