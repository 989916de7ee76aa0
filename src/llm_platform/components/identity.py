"""IAM roles: for nodes (EC2), and for pods through EKS Pod Identity, each made one way everywhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws as aws

from llm_platform.components.specs.common import (
    NODE_POLICY_ARNS,
    assume_role_policy,
    pod_identity_trust_policy,
)


def pod_identity_role(
    resource_name: str,
    *,
    description: str,
    policy: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.iam.Role:
    """A role only the EKS Pod Identity agent may assume, with one inline policy."""
    role = aws.iam.Role(
        resource_name,
        assume_role_policy=pod_identity_trust_policy(),
        description=description,
        tags=tags,
        opts=opts,
    )
    aws.iam.RolePolicy(resource_name, role=role.id, policy=policy, opts=opts)
    return role


def service_account_identity(
    resource_name: str,
    *,
    cluster_name: pulumi.Input[str],
    namespace: str,
    service_account: str,
    description: str,
    policy: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.eks.PodIdentityAssociation:
    """A pod-identity role bound to one Kubernetes service account; wait on the returned association
    before starting the pods that use it."""
    role = pod_identity_role(resource_name, description=description, policy=policy, tags=tags, opts=opts)
    return pod_identity_association(
        resource_name,
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.arn,
        tags=tags,
        opts=opts,
    )


def pod_identity_association(
    resource_name: str,
    *,
    cluster_name: pulumi.Input[str],
    namespace: str,
    service_account: str,
    role_arn: pulumi.Input[str],
    tags: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> aws.eks.PodIdentityAssociation:
    """Bind an existing role to one Kubernetes service account."""
    return aws.eks.PodIdentityAssociation(
        resource_name,
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role_arn,
        tags=tags,
        opts=opts,
    )


def account_policy(
    parent: pulumi.Resource, build: Callable[..., dict[str, Any]], **inputs: pulumi.Input[str]
) -> pulumi.Output[str]:
    """A policy document scoped to the deploying account, as JSON: `build(partition=..., account=...,
    **inputs)` once the account, the partition and every input (ARNs of other resources) are known."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    identity = aws.get_caller_identity_output(opts=invoke)
    partition = aws.get_partition_output(opts=invoke)
    return pulumi.Output.all(partition=partition.partition, account=identity.account_id, **inputs).apply(
        lambda values: json.dumps(build(**values))
    )


def node_role(
    resource_name: str, *, description: str, tags: dict[str, str], opts: pulumi.ResourceOptions
) -> aws.iam.Role:
    """An EC2 node role with the managed policies every node of the cluster needs."""
    role = aws.iam.Role(
        resource_name,
        assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
        description=description,
        tags=tags,
        opts=opts,
    )
    for i, arn in enumerate(NODE_POLICY_ARNS):
        aws.iam.RolePolicyAttachment(f"{resource_name}-{i}", role=role.name, policy_arn=arn, opts=opts)
    return role
