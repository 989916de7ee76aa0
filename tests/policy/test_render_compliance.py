"""The project's own objects pass every policy: each fixture stack is rendered offline (the real __main__.py under
mocks, as `python -m llm_platform.tools.render` does) and every registered resource goes through the pack, the resource
policies one resource at a time and the stack policies over the whole stack.

It covers whatever the program registers, so it grows with the platform: today the cluster and network,
then the Karpenter EC2NodeClasses, the vLLM Deployments and their ScaledObjects as those components land.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

import pytest
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from llm_platform.tools.render import Render, evaluate
from policy.llm_platform_policies import ALL_POLICIES
from tests.conftest import fixture_stack
from tests.policy.builders import render_violations

STACKS = ("dev", "staging", "prod", "multinode", "kvtier", "pd", "rollout")
# the types the pack has rules for; the render summary below says how many of each the program registers
WATCHED = (
    "kubernetes:apps/v1:Deployment",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
    "kubernetes:keda.sh/v1alpha1:ScaledObject",
    "kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
    "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
    "kubernetes:karpenter.sh/v1:NodePool",
    "kubernetes:helm.sh/v3:Release",
)


@cache
def rendered(stack: str) -> Render:
    return evaluate(fixture_stack(stack))


def _policy_id(policy: Any) -> str:
    return policy.name


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("policy", ALL_POLICIES, ids=_policy_id)
def test_rendered_stack_passes_policy(
    stack: str, policy: ResourceValidationPolicy | StackValidationPolicy
) -> None:
    found = render_violations(policy, rendered(stack).resources, stack)
    assert found == [], f"stack {stack}, policy {policy.name}:\n" + "\n".join(found)


@pytest.mark.parametrize("stack", STACKS)
def test_render_registers_resources(stack: str) -> None:
    """The render the compliance test reads is not empty, and each watched type is counted (shown with -rA)."""
    counts = Counter(r["type"] for r in rendered(stack).resources)
    assert counts, f"stack {stack} rendered no resources"
    print(f"{stack}: " + ", ".join(f"{t.rsplit(':', 1)[-1]}={counts.get(t, 0)}" for t in WATCHED))
