"""The AWS Load Balancer Controller the gateway's NLB needs, and the gateway's wiring into the stack."""

from __future__ import annotations

import json
from pathlib import Path

from llm_platform.components.specs import load_balancer as spec
from llm_platform.tools import preflight

# upstream's policy at the pinned controller version (docs/install/iam_policy.json of v2.17.0)
UPSTREAM_POLICY = Path(preflight.__file__).parent / "iam_reference" / "aws-load-balancer-controller.json"

RELEASE = "kubernetes:helm.sh/v3:Release"


def _policy() -> dict:
    return spec.controller_policy(partition="aws", region="us-east-1", account="111122223333")


def test_policy_writes_only_to_resources_the_controller_tagged() -> None:
    statements = {s["Sid"]: s for s in json.loads(json.dumps(_policy()))["Statement"]}
    for sid in ("ManageOwnSecurityGroups", "ManageOwnLoadBalancers", "ModifyListenerAttributes"):
        assert statements[sid]["Condition"] == {"Null": {"aws:ResourceTag/elbv2.k8s.aws/cluster": "false"}}
    assert statements["CreateLoadBalancers"]["Condition"] == {
        "Null": {"aws:RequestTag/elbv2.k8s.aws/cluster": "false"}
    }
    assert statements["CreateElbServiceLinkedRole"]["Condition"]["StringEquals"] == {
        "iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"
    }


def test_policy_resources_are_this_account_and_region() -> None:
    for statement in _policy()["Statement"]:
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        for arn in resources:
            if arn == "*":
                # only read-only calls and creations gated by a service name or the cluster tag
                assert statement["Sid"] in {
                    "CreateElbServiceLinkedRole",
                    "Describe",
                    "CreateSecurityGroups",
                    "CreateLoadBalancers",
                }
                continue
            assert ":us-east-1:111122223333:" in arn, arn


def test_prod_installs_the_controller_before_the_gateway(run_program) -> None:
    m = run_program("prod")
    controller = next(r for r in m.by_type(RELEASE) if r.inputs["name"] == "aws-load-balancer-controller")
    assert controller.inputs["version"] == "1.17.0"
    values = controller.inputs["values"]
    assert values["clusterName"] == "llm-prod" and values["region"] == "us-east-1"
    assert values["vpcId"].startswith("vpc-")
    assert controller.depends_on(
        "aws:eks/podIdentityAssociation:PodIdentityAssociation", "llm-prod-lb-controller"
    )
    # Envoy Gateway makes the NLB Service from the EnvoyProxy; the controller must exist first
    (proxy,) = m.by_type("kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyProxy")
    assert proxy.depends_on(RELEASE, "llm-prod-lb-controller-release"), "the controller makes the NLB"
    service = proxy.inputs["spec"]["provider"]["kubernetes"]["envoyService"]
    assert service["loadBalancerClass"] == "service.k8s.aws/nlb"
    annotations = service["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"].startswith("arn:aws:acm:")


def test_stacks_without_a_gateway_install_no_controller(run_program) -> None:
    m = run_program("dev")
    assert not [r for r in m.by_type(RELEASE) if r.inputs["name"] == "aws-load-balancer-controller"]
    assert not [r for r in m.created if r.typ.startswith("llm-platform:gateway")]


def test_listener_attributes_are_granted_on_listener_arns() -> None:
    """ModifyListenerAttributes acts on a listener: granted only on load balancer and target group ARNs,
    every call was denied."""
    granted = [
        r
        for s in _policy()["Statement"]
        if "elasticloadbalancing:ModifyListenerAttributes"
        in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        for r in ([s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"])
    ]
    assert granted and all(":listener/" in r for r in granted), granted


def test_listener_attributes_carry_upstreams_cluster_tag_condition() -> None:
    """Upstream grants ModifyListenerAttributes only on resources tagged with the cluster tag: so must we."""
    action = "elasticloadbalancing:ModifyListenerAttributes"
    upstream = json.loads(UPSTREAM_POLICY.read_text())["statements"]
    (theirs,) = [s for s in upstream if action in s["actions"]]
    ours = [
        s
        for s in _policy()["Statement"]
        if action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    assert ours and all(s.get("Condition") == theirs["condition"] for s in ours), ours
