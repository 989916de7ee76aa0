"""Karpenter and GPU NodePools: pools from config, cost guardrails, scoped IAM, unique names, ordering."""

from __future__ import annotations

import json

import pytest

from llm_platform.components.specs import addon_nodes
from llm_platform.components.specs import karpenter as spec
from llm_platform.config.loader import parse
from llm_platform.plan import NodeClassPlan, resolve
from llm_platform.plan.nodes import ADDON_POOL
from tests.conftest import load_fixture, stack_values

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def gpu(registered: list) -> list:
    """The GPU NodePools or EC2NodeClasses (the add-on pool's are tested on their own)."""
    return [r for r in registered if r.inputs["metadata"]["name"] != ADDON_POOL]


def _requirements(pool_inputs: dict) -> dict[str, list[str]]:
    reqs = pool_inputs["spec"]["template"]["spec"]["requirements"]
    return {r["key"]: r["values"] for r in reqs}


def test_prod_renders_a_g5_pool_and_a_p4d_pool(run_program) -> None:
    m = run_program("prod")
    pools = {p.inputs["metadata"]["name"]: p.inputs for p in gpu(m.by_type(NODE_POOL))}
    assert set(pools) == {"g5", "p4d"}
    g5 = _requirements(pools["g5"])
    assert g5["karpenter.k8s.aws/instance-family"] == ["g5"]
    assert g5["node.kubernetes.io/instance-type"] == ["g5.2xlarge", "g5.12xlarge"]
    assert g5["karpenter.sh/capacity-type"] == ["on-demand", "spot"]
    assert g5["karpenter.k8s.aws/instance-gpu-manufacturer"] == ["nvidia"]
    assert g5["topology.kubernetes.io/zone"] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    p4d = _requirements(pools["p4d"])
    assert p4d["node.kubernetes.io/instance-type"] == ["p4d.24xlarge"]
    assert p4d["karpenter.sh/capacity-type"] == ["on-demand"]


def test_dev_renders_a_spot_pool(run_program) -> None:
    m = run_program("dev")
    (pool,) = gpu(m.by_type(NODE_POOL))
    assert _requirements(pool.inputs)["karpenter.sh/capacity-type"] == ["spot"]
    assert pool.inputs["spec"]["weight"] == 100


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_every_pool_is_tainted_limited_and_consolidates_when_empty(run_program, stack: str) -> None:
    cfg = load_fixture(stack)
    m = run_program(stack)
    pools = {p.inputs["metadata"]["name"]: p.inputs["spec"] for p in m.by_type(NODE_POOL)}
    for pool in cfg.gpu_node_pools:
        s = pools[pool.name]
        assert s["template"]["spec"]["taints"] == [
            {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
        ]
        assert s["limits"] == {"nvidia.com/gpu": str(pool.gpu_limit)}
        assert s["disruption"]["consolidationPolicy"] == "WhenEmpty"
        assert s["disruption"]["consolidateAfter"] == pool.consolidate_after
        assert s["template"]["metadata"]["labels"]["llm-platform/gpu-pool"] == pool.name


def test_on_demand_only_pools_weigh_less_than_spot_pools() -> None:
    cfg = load_fixture("prod")
    assert spec.pool_weight(cfg.pool("g5")) > spec.pool_weight(cfg.pool("p4d"))


def test_bottlerocket_pools_never_get_a_second_device_plugin() -> None:
    values = stack_values("staging")
    values["gpuNodePools"][0]["amiFamily"] = "bottlerocket"
    from llm_platform.config.loader import parse

    pool = parse(values).gpu_node_pools[0]
    assert spec.node_labels(pool)["nvidia.com/gpu.deploy.device-plugin"] == "false"
    manifest = spec.node_class(
        ami_family="bottlerocket", ami_version="v1.55.0", cluster_name="c", node_role_name="r", tags={}
    )
    assert manifest["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.55.0"}]
    assert [d["deviceName"] for d in manifest["spec"]["blockDeviceMappings"]] == ["/dev/xvda", "/dev/xvdb"]


def test_node_class_pins_ami_requires_imdsv2_and_raids_nvme(run_program) -> None:
    m = run_program("prod")
    (node_class,) = gpu(m.by_type(NODE_CLASS))
    s = node_class.inputs["spec"]
    assert s["amiSelectorTerms"] == [{"alias": "al2023@v20260827"}]
    assert s["instanceStorePolicy"] == "RAID0"
    assert s["metadataOptions"]["httpTokens"] == "required"
    assert s["metadataOptions"]["httpPutResponseHopLimit"] == 1
    (root,) = s["blockDeviceMappings"]
    assert root["ebs"]["encrypted"] is True and root["ebs"]["volumeType"] == "gp3"
    assert s["role"] == "llm-prod-karpenter-node"
    assert s["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "llm-prod"}}]


def test_dev_may_float_on_latest_ami(run_program) -> None:
    m = run_program("dev")
    (node_class,) = gpu(m.by_type(NODE_CLASS))
    assert node_class.inputs["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]


def _controller_policy() -> dict:
    return spec.controller_policy(
        partition="aws",
        region="us-east-1",
        account="111122223333",
        cluster_name="llm-prod",
        queue_arn="arn:aws:sqs:us-east-1:111122223333:llm-prod-karpenter",
        node_role_arn="arn:aws:iam::111122223333:role/node",
    )


def test_controller_policy_is_scoped_to_this_cluster() -> None:
    policy = json.loads(json.dumps(_controller_policy()))  # valid JSON
    statements = {s["Sid"]: s for s in policy["Statement"]}
    # wildcards only where AWS offers no resource-level scoping, and then region-conditioned or read-only
    for sid, s in statements.items():
        if s["Resource"] == "*":
            assert sid in {
                "AllowRegionalReadActions",
                "AllowPricingReadActions",
                "AllowUnscopedInstanceProfileListAction",
                "AllowZonalShiftStatusReadOnly",
            }, sid
    assert statements["AllowUnscopedInstanceProfileListAction"]["Action"] == "iam:ListInstanceProfiles"
    assert statements["AllowZonalShiftStatusReadOnly"]["Condition"]["StringEquals"] == {
        "arc-zonal-shift:ResourceIdentifier": "arn:aws:eks:us-east-1:111122223333:cluster/llm-prod"
    }
    assert statements["AllowRegionalReadActions"]["Condition"] == {
        "StringEquals": {"aws:RequestedRegion": "us-east-1"}
    }
    deletion = statements["AllowScopedDeletion"]
    assert deletion["Condition"]["StringEquals"] == {
        "aws:ResourceTag/kubernetes.io/cluster/llm-prod": "owned"
    }
    assert statements["AllowPassingInstanceRole"]["Resource"] == "arn:aws:iam::111122223333:role/node"
    assert statements["AllowInterruptionQueueActions"]["Resource"].endswith(":llm-prod-karpenter")
    assert statements["AllowAPIServerEndpointDiscovery"]["Resource"] == (
        "arn:aws:eks:us-east-1:111122223333:cluster/llm-prod"
    )
    for sid in ("AllowScopedInstanceProfileCreationActions", "AllowScopedInstanceProfileActions"):
        assert statements[sid]["Resource"] == "arn:aws:iam::111122223333:instance-profile/*"
    launches = statements["AllowScopedEC2InstanceActionsWithTags"]["Condition"]["StringEquals"]
    assert launches["aws:RequestTag/eks:eks-cluster-name"] == "llm-prod"


def test_controller_can_check_instance_health_and_list_profiles() -> None:
    """Karpenter >= 1.12 drains instances whose status checks fail (ec2:DescribeInstanceStatus); the
    EC2NodeClass finalizer lists instance profiles, a call that takes no resource ARN."""
    actions = {
        (a, s["Resource"] if isinstance(s["Resource"], str) else tuple(s["Resource"]))
        for s in _controller_policy()["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert ("ec2:DescribeInstanceStatus", "*") in actions
    assert ("iam:ListInstanceProfiles", "*") in actions


def test_karpenter_comes_first_and_every_addon_waits_for_its_nodes(run_program) -> None:
    """The add-ons' pods need the nodes Karpenter launches, so Karpenter is installed before monitoring, with
    the chart's ServiceMonitor off (its CRD does not exist yet); the platform's own Karpenter ServiceMonitor
    waits for kube-prometheus-stack; every add-on release waits for the add-on NodePool."""
    m = run_program("prod")
    karpenter = m.named("llm-prod-karpenter-controller", RELEASE)
    assert not karpenter.depends_on(RELEASE, "llm-prod-monitoring-release")
    assert karpenter.inputs["values"]["serviceMonitor"] == {"enabled": False}
    monitor = m.named("llm-prod-monitoring-karpenter-monitor")
    assert monitor.inputs["spec"]["endpoints"] == [{"port": "http-metrics", "path": "/metrics"}]
    assert monitor.depends_on(RELEASE, "llm-prod-monitoring-release")
    addon_pool = m.named("llm-prod-addons-pool", NODE_POOL)
    assert addon_pool.depends_on(RELEASE, "llm-prod-karpenter-controller")
    assert addon_pool.depends_on(NODE_CLASS, "llm-prod-addons-class")
    for release in m.by_type(RELEASE):
        if release.inputs["name"] in ("karpenter", "karpenter-crd"):
            continue
        assert release.depends_on(NODE_POOL, "llm-prod-addons-pool"), release.inputs["name"]
    gpu_operator = next(r for r in m.by_type(RELEASE) if r.inputs.get("name") == "gpu-operator")
    assert gpu_operator.depends_on(RELEASE, "llm-prod-monitoring-release")


@pytest.mark.parametrize(("stack", "capacity"), [("dev", ["spot", "on-demand"]), ("prod", ["on-demand"])])
def test_addon_pool_is_cpu_only_tainted_and_on_demand_in_prod(
    run_program, stack: str, capacity: list[str]
) -> None:
    m = run_program(stack)
    (pool,) = [p.inputs for p in m.by_type(NODE_POOL) if p.inputs["metadata"]["name"] == ADDON_POOL]
    template = pool["spec"]["template"]
    reqs = _requirements(pool)
    assert reqs["karpenter.sh/capacity-type"] == capacity
    assert "karpenter.k8s.aws/instance-gpu-manufacturer" not in reqs
    assert all(not t.startswith(("g", "p")) for t in reqs["node.kubernetes.io/instance-type"])
    assert template["metadata"]["labels"] == {"llm-platform/node-role": "addons"}
    assert template["spec"]["taints"] == [
        {"key": "llm-platform/addons", "value": "true", "effect": "NoSchedule"}
    ]
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert {"nodes": "10%"} in pool["spec"]["disruption"]["budgets"]
    # GPU pools never admit an add-on: each keeps its GPU taint
    for gpu_pool in gpu(m.by_type(NODE_POOL)):
        assert gpu_pool.inputs["spec"]["template"]["spec"]["taints"] == [spec.GPU_TAINT]
    (node_class,) = [c.inputs for c in m.by_type(NODE_CLASS) if c.inputs["metadata"]["name"] == ADDON_POOL]
    assert node_class["spec"]["amiSelectorTerms"][0]["alias"].startswith("al2023@")
    assert node_class["spec"]["metadataOptions"]["httpTokens"] == "required"
    assert "instanceStorePolicy" not in node_class["spec"]


def test_addon_pool_follows_the_stack_file() -> None:
    values = stack_values("dev")
    values["cluster"]["addonNodes"] = {
        "instanceFamilies": ["c7i"],
        "instanceSizes": ["xlarge"],
        "capacityTypes": ["on-demand"],
        "cpuLimit": 8,
        "memoryLimitGiB": 16,
        "disruptionBudgetPercent": 25,
        "consolidateAfter": "15m",
    }
    plan = resolve(parse(values))
    assert plan.addon_pool is not None
    pool = addon_nodes.node_pool(plan.addon_pool, zones=["us-east-1a"])
    assert _requirements(pool)["node.kubernetes.io/instance-type"] == ["c7i.xlarge"]
    assert pool["spec"]["limits"] == {"cpu": "8", "memory": "16Gi"}
    assert pool["spec"]["disruption"]["budgets"][0] == {"nodes": "25%"}
    assert pool["spec"]["disruption"]["consolidateAfter"] == "15m"


def test_gpu_root_volume_holds_only_the_os() -> None:
    """RAID0 puts containerd and kubelet on the instance store; a 150 GiB gp3 root was mostly unused."""
    node_class = spec.node_class(
        ami_family="al2023", ami_version="v20260827", cluster_name="c", node_role_name="r", tags={}
    )
    assert node_class["spec"]["instanceStorePolicy"] == "RAID0"
    (root,) = node_class["spec"]["blockDeviceMappings"]
    assert root["ebs"]["volumeSize"] == f"{spec.AL2023_ROOT_GIB}Gi" and spec.AL2023_ROOT_GIB <= 50


def test_rendered_controller_policy_and_queue_policy(run_program) -> None:
    m = run_program("prod")
    inline = m.named("llm-prod-karpenter-controller", "aws:iam/rolePolicy:RolePolicy")
    policy = json.loads(inline.inputs["policy"])
    assert any(s["Sid"] == "AllowScopedDeletion" for s in policy["Statement"])
    (queue_policy,) = m.by_type("aws:sqs/queuePolicy:QueuePolicy")  # the only queue
    denies = [s for s in json.loads(queue_policy.inputs["policy"])["Statement"] if s["Effect"] == "Deny"]
    assert denies[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (queue,) = m.by_type("aws:sqs/queue:Queue")
    assert queue.inputs["sqsManagedSseEnabled"] is True


def test_controller_uses_pod_identity(run_program) -> None:
    m = run_program("prod")
    assoc = m.named("llm-prod-karpenter-controller", "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert (assoc.inputs["namespace"], assoc.inputs["serviceAccount"]) == ("karpenter", "karpenter")
    role = m.named("llm-prod-karpenter-controller", "aws:iam/role:Role")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    (entry,) = m.by_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["type"] == "EC2_LINUX"


def test_interruption_rules_cover_the_four_event_kinds(run_program) -> None:
    m = run_program("prod")
    rules = m.by_type("aws:cloudwatch/eventRule:EventRule")
    kinds = {json.loads(r.inputs["eventPattern"])["detail-type"][0] for r in rules}
    assert kinds == {
        "AWS Health Event",
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
    }
    assert len(m.by_type("aws:cloudwatch/eventTarget:EventTarget")) == 4


def test_queue_and_rule_names_are_unique_per_stack(run_program) -> None:
    names = {}
    for stack in ("dev", "prod"):
        m = run_program(stack)
        names[stack] = {r.inputs["name"] for r in m.by_type("aws:cloudwatch/eventRule:EventRule")}
        names[stack] |= {r.inputs["name"] for r in m.by_type("aws:sqs/queue:Queue")}
    assert len(names["dev"]) == 5
    assert not names["dev"] & names["prod"]


def test_karpenter_release_order(run_program) -> None:
    m = run_program("prod")
    crd = m.named("llm-prod-karpenter-crd")
    controller = m.named("llm-prod-karpenter-controller", RELEASE)
    assert crd.inputs["chart"] == "oci://public.ecr.aws/karpenter/karpenter-crd"
    assert controller.inputs["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert controller.inputs["version"] == crd.inputs["version"] == "1.14.1"
    assert controller.inputs["skipCrds"] is True
    assert controller.depends_on(RELEASE, "llm-prod-karpenter-crd"), "CRDs before the controller"
    assert controller.depends_on("eks:index:Cluster") and controller.depends_on("eks:index:ManagedNodeGroup")
    assert controller.depends_on("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    values = controller.inputs["values"]
    assert values["settings"] == {
        "clusterName": "llm-prod",
        "interruptionQueue": "llm-prod-karpenter",
        "featureGates": {"nodeRepair": True},  # failed GPU nodes are replaced (NodeRepair)
    }
    assert values["nodeSelector"]["llm-platform/node-role"] == "system"
    for pool in m.by_type(NODE_POOL) + m.by_type(NODE_CLASS):
        assert pool.depends_on(RELEASE, "llm-prod-karpenter-controller"), f"{pool.name} waits for the CRDs"


def test_al2023_nodes_pull_images_fast_and_get_lustre_only_with_fsx() -> None:
    with_fsx = spec.al2023_user_data(
        NodeClassPlan("al2023", "latest", fast_image_pull=True, lustre_client=True)
    )
    without = spec.al2023_user_data(
        NodeClassPlan("al2023", "latest", fast_image_pull=True, lustre_client=False)
    )
    assert with_fsx is not None and without is not None
    assert "FastImagePull: true" in with_fsx and "FastImagePull: true" in without
    assert "lustre-client" in with_fsx and "lustre-client" not in without
    for data in (with_fsx, without):
        assert data.startswith("MIME-Version: 1.0") and data.rstrip().endswith("--//--")


@pytest.mark.parametrize("reservations", [False, True])
def test_node_repair_is_on_so_failed_gpu_nodes_are_replaced(reservations: bool) -> None:
    """Karpenter's NodeRepair gate (alpha, off in the chart) replaces a node whose AcceleratedHardwareReady
    condition is False; with reservations the ReservedCapacity gate stays on beside it."""
    gates = spec.helm_values("c", "q", capacity_reservations=reservations)["settings"]["featureGates"]
    assert gates["nodeRepair"] is True
    assert gates.get("reservedCapacity", False) is reservations
