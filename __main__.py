"""llm-platform: read the stack's config and secrets, and compose the platform from them."""

import pulumi

from llm_platform import LlmPlatform, platform_args
from llm_platform.config.loader import PROJECT, load_from_pulumi, values_from_pulumi

# raises ConfigError (file and line, field, value, what is allowed) before any resource exists
config = load_from_pulumi()
# Pulumi secrets, read before anything is registered so a missing one stops the program first
secrets = pulumi.Config(PROJECT)
gated = any(m.needs_hf_token for m in config.models)
gateway = config.gateway.enabled
args = platform_args(
    values_from_pulumi(),
    grafana_admin_password=secrets.require_secret("grafanaAdminPassword"),
    api_key=secrets.require_secret("apiKey") if config.models else None,
    hugging_face_token=(
        secrets.require_secret("huggingFaceToken") if gated else secrets.get_secret("huggingFaceToken")
    ),
    gateway_client_keys=secrets.require_secret_object("gatewayClientKeys") if gateway else None,
    alert_receiver=secrets.require_secret("alertReceiver") if config.alerting.receiver != "none" else None,
)
platform = LlmPlatform(config.cluster.name, args)

pulumi.export("clusterName", platform.cluster_name)
pulumi.export("environment", platform.environment)
pulumi.export("modelEndpoints", platform.model_endpoints)
if config.cluster.mode == "eks":
    pulumi.export("clusterEndpoint", platform.cluster_endpoint)
    pulumi.export("kubeconfig", platform.kubeconfig)
    pulumi.export("vpcId", platform.vpc_id)
    pulumi.export("modelBucket", platform.model_bucket)
if gateway and config.models:
    # the NLB's DNS name: kubectl -n llm-gateway get gateway llm-gateway -o jsonpath='{.status.addresses[0].value}'
    pulumi.export("gatewayNamespace", platform.gateway_namespace)
