"""llm-platform: read the stack's config and secrets, and compose the platform from them."""

import pulumi

from llm_platform import LlmPlatform, platform_args
from llm_platform.config.loader import PROJECT, load_from_pulumi, values_from_pulumi
from llm_platform.platform import SECRET_ARGS, needed_secrets, secrets_check

# Pulumi secrets, read before anything is registered so a missing one stops the program first
secrets = pulumi.Config(PROJECT)
# raises ConfigError before any resource exists: every problem at once (file and line, field, value, what is
# allowed), the secrets the config needs and are not set among them
config = load_from_pulumi(checks=[secrets_check(lambda name: secrets.get_secret(name) is not None)])
needed = needed_secrets(config)


def secret(name: str) -> pulumi.Output | None:
    """A secret the config needs stops the program when missing; an optional one is passed when set."""
    if name == "gatewayClientKeys":
        return secrets.require_secret_object(name) if name in needed else None
    return secrets.require_secret(name) if name in needed else secrets.get_secret(name)


args = platform_args(values_from_pulumi(), **{key: secret(name) for name, key in SECRET_ARGS.items()})
platform = LlmPlatform(config.cluster.name, args)

pulumi.export("clusterName", platform.cluster_name)
pulumi.export("environment", platform.environment)
pulumi.export("modelEndpoints", platform.model_endpoints)
if config.cluster.mode == "eks":
    pulumi.export("clusterEndpoint", platform.cluster_endpoint)
    pulumi.export("kubeconfig", platform.kubeconfig)
    pulumi.export("vpcId", platform.vpc_id)
    pulumi.export("modelBucket", platform.model_bucket)
if config.gateway.enabled and config.models:
    # the NLB's DNS name: kubectl -n llm-gateway get gateway llm-gateway -o jsonpath='{.status.addresses[0].value}'
    pulumi.export("gatewayNamespace", platform.gateway_namespace)
