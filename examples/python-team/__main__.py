"""The search team's program: its two models on the shared cluster, under its own prefix."""

import pulumi
from team import Team, deploy

config = pulumi.Config()
deploy(
    Team(
        prefix=config.get("prefix") or "search",
        cluster_name=config.require("clusterName"),
        kubeconfig=config.require_secret("kubeconfig"),
        node_role_name=config.require("nodeRoleName"),
        prometheus_url=config.require("prometheusUrl"),
        prometheus_namespace=config.require("prometheusNamespace"),
        prometheus_release=config.require("prometheusRelease"),
        deployer_role_arn=config.require("deployerRoleArn"),
    ),
    api_key=config.require_secret("apiKey"),
)
