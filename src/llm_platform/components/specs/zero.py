"""The gateway side of a model at minReplicas 0: the 503 that ends a hold gets a `Retry-After`.

The picker holds the request that wakes the model for the from-zero hold (plan/zero.py); when that runs out
with the pool still empty it answers 503 with `x-llm-d-request-dropped-reason: rejected-no-endpoints` and no
`Retry-After` (llm-d router v0.10.0 pkg/epp/requestcontrol/admission.go `translateFlowControlOutcome`,
pkg/common/error/error.go). The answer is an ext_proc immediate response, i.e. an Envoy local reply, and Envoy
Gateway v1.8.3's `responseOverride` acts on it: the custom_response filter it enables on the route sees every
response on the way out, local or upstream (internal/xds/translator/custom_response.go; `source` unset = All).

Attachment: a BackendTrafficPolicy per model in its namespace, targeting its two HTTPRoutes (`<model>-by-path`,
and `<model>`, the one AI Gateway v1.1.0 generates from the AIGatewayRoute of that name:
internal/controller/ai_gateway_route.go). A route-level policy without `mergeType` would REPLACE the gateway's
own BackendTrafficPolicy (the clients' rate limits) on those routes: "If unset, no merging occurs, and only the
most specific configuration takes effect" (CRD gateway.envoyproxy.io_backendtrafficpolicies.yaml, mergeType).
`mergeType: StrategicMerge` merges it into the Gateway's policy instead (internal/gatewayapi/
backendtrafficpolicy.go `processBackendTrafficPolicyForRoute` -> `translateBackendTrafficPolicyForRouteWithMerge`,
which keeps the gateway policy's rate-limit rules when the route policy has none). Putting the override in the
gateway policy itself is not an option: it would apply to every model's 503 with one Retry-After.

Envoy's LocalResponsePolicy replaces the body (empty unless one is given: source/extensions/http/
custom_response/local_response_policy), so the override states an OpenAI-style JSON error body. It matches
every 503 of the model's routes, not only the hold's: any 503 there means no replica could take the request.
"""

from __future__ import annotations

import json
from typing import Any

from llm_platform.components.specs.inference_pool import path_route
from llm_platform.plan import ModelPlan
from llm_platform.plan.zero import RETRY_AFTER_S

MERGE_TYPE = "StrategicMerge"  # into the Gateway's BackendTrafficPolicy (rate limits), never replacing it
UNAVAILABLE = 503
DASHBOARD = (
    "llm-platform-scale-to-zero"  # the ConfigMap of its Grafana dashboard (gateway_monitoring.zero_dashboard)
)


def at_zero(model: ModelPlan) -> bool:
    """The model scales to zero behind the gateway: its picker holds for the from-zero hold."""
    return model.flow_control is not None and model.flow_control.from_zero_hold_s is not None


def policy_name(model: ModelPlan) -> str:
    return f"{model.name}-from-zero"


def unavailable_body(model: ModelPlan) -> str:
    """What a client reads with the 503: the model, that it is (re)starting, and when to retry. No `%`: the
    body is an Envoy format string (command operators)."""
    return json.dumps(
        {
            "error": {
                "message": (
                    f"model {model.model.served_model_name} has no ready replica yet (it scales to zero and "
                    f"is starting); retry after {RETRY_AFTER_S} s"
                ),
                "type": "service_unavailable",
                "code": UNAVAILABLE,
            }
        },
        separators=(",", ":"),
    )


def zero_hold_policy(model: ModelPlan) -> dict[str, Any]:
    """A 503 on the model's routes keeps its status and gets `Retry-After` and a JSON body."""
    if not at_zero(model):
        raise ValueError(f"models ({model.name}): not at minReplicas 0 behind the gateway: no hold to answer")
    routes = [model.name, path_route(model)["metadata"]["name"]]
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "BackendTrafficPolicy",
        "metadata": {"name": policy_name(model), "namespace": model.names.namespace},
        "spec": {
            "targetRefs": [
                {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name} for name in routes
            ],
            "mergeType": MERGE_TYPE,
            "responseOverride": [
                {
                    "match": {"statusCodes": [{"type": "Value", "value": UNAVAILABLE}]},
                    "response": {
                        "statusCode": UNAVAILABLE,
                        "contentType": "application/json",
                        "body": {"type": "Inline", "inline": unavailable_body(model)},
                        "header": {"set": [{"name": "Retry-After", "value": str(RETRY_AFTER_S)}]},
                    },
                }
            ],
        },
    }
