"""A model larger than one node rendered as a LeaderWorkerSet with EFA (components/specs/multinode.py): the
fixture stack `multinode` (Llama-3.1-405B on 2x p5.48xlarge) and its Capacity Block variant."""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs import autoscaling, karpenter, model_cache, multinode, serving
from llm_platform.config.loader import parse
from llm_platform.plan import ModelPlan
from tests.conftest import stack_values
from tests.plans import model_plan, stack_plan


def _lws(m: ModelPlan) -> dict[str, Any]:
    wiring = model_cache.cache_wiring(m, bucket="bucket")
    return multinode.leader_worker_set(m, environment="staging", wiring=wiring, mounts_hf_token=False)


def _container(lws: dict[str, Any], role: str) -> dict[str, Any]:
    return lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"][0]


def test_one_group_of_two_nodes_with_vllm_multi_node_launch() -> None:
    m = model_plan("multinode", "llama-405b")
    lws = _lws(m)
    assert lws["kind"] == "LeaderWorkerSet" and "replicas" not in lws["spec"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    leader, worker = _container(lws, "leaderTemplate"), _container(lws, "workerTemplate")
    for c, rank in ((leader, "0"), (worker, "$(LWS_WORKER_INDEX)")):
        args = c["args"]
        assert args[args.index("--tensor-parallel-size") + 1] == "8"
        assert args[args.index("--pipeline-parallel-size") + 1] == "2"
        assert args[args.index("--nnodes") + 1] == "2"
        assert args[args.index("--node-rank") + 1] == rank
        assert args[args.index("--master-addr") + 1] == "$(LWS_LEADER_ADDRESS)"
    assert "--headless" in worker["args"] and "--headless" not in leader["args"]
    assert "readinessProbe" in leader and "readinessProbe" not in worker and "ports" not in worker


def test_every_pod_requests_a_whole_node_and_its_efa() -> None:
    lws = _lws(model_plan("multinode", "llama-405b"))
    for role in ("leaderTemplate", "workerTemplate"):
        c = _container(lws, role)
        assert c["resources"]["requests"]["nvidia.com/gpu"] == "8"
        assert c["resources"]["requests"]["vpc.amazonaws.com/efa"] == "32"
        assert c["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_HUGE_PAGE"] == "0"
        assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]


def test_only_the_leader_is_routed_to_and_scaled_on() -> None:
    m = model_plan("multinode", "llama-405b")
    lws = _lws(m)
    selector = serving.service(m, "staging")["spec"]["selector"]
    leader_labels = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"]
    worker_labels = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]
    assert selector.items() <= leader_labels.items()
    assert not selector.items() <= worker_labels.items()
    target = autoscaling.scaled_object(m, "staging")["spec"]["scaleTargetRef"]
    assert target == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "llama-405b",
    }
    assert 'pod=~"llama-405b-[0-9]+"' in m.scaling.triggers[0].query


def test_rollout_surges_a_group_only_with_room_for_it() -> None:
    assert multinode.rollout(model_plan("multinode", "llama-405b")) == {"maxSurge": 1, "maxUnavailable": 0}
    values = stack_values("multinode")
    values["gpuNodePools"][0]["gpuLimit"] = 32
    assert multinode.rollout(model_plan(parse(values), "llama-405b")) == {"maxSurge": 0, "maxUnavailable": 1}


def _node_class(values: dict[str, Any]) -> dict[str, Any]:
    pool = parse(values).pool("p5-efa")
    return karpenter.node_class(
        ami_family="al2023",
        ami_version="v1",
        cluster_name="llm-multinode",
        node_role_name="r",
        tags={},
        pool=pool,
    )


def test_efa_pool_has_its_interfaces_placement_group_and_one_zone() -> None:
    values = stack_values("multinode")
    spec = _node_class(values)["spec"]
    interfaces = spec["networkInterfaces"]
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert sum(i["interfaceType"] == "efa-only" for i in interfaces) == 32
    assert spec["placementGroupSelector"] == {"name": "llm-multinode-p5-efa"}
    pool = parse(values).pool("p5-efa")
    zones = karpenter.node_pool(pool, zones=["us-east-1a", "us-east-1b"], prod=False)["spec"]["template"][
        "spec"
    ]
    assert zones["requirements"][-1]["values"] == ["us-east-1a"]


def test_capacity_block_pool_gets_no_placement_group() -> None:
    values = stack_values("multinode")
    values["gpuNodePools"][0] |= {
        "capacityTypes": ["reserved"],
        "capacityReservations": [{"id": "cr-0123456789abcdef0"}],
    }
    spec = _node_class(values)["spec"]
    assert "placementGroupSelector" not in spec
    assert spec["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    assert sum(i["interfaceType"] == "efa-only" for i in spec["networkInterfaces"]) == 32


def test_single_node_stacks_render_no_multi_node_objects() -> None:
    for stack in ("dev", "staging", "prod"):
        plan = stack_plan(stack)
        assert not any(m.multi_node for m in plan.models)
        assert all(p.placement_zone is None for p in plan.gpu_node_pools)


def test_metrics_missing_alert_counts_ready_leaders() -> None:
    """kube-state-metrics reports no LeaderWorkerSet: the alert compares the Ready leader pods with the pods
    exporting vLLM metrics (leaders only), not a Deployment that does not exist."""
    from llm_platform.components.specs import alerts

    m = model_plan("multinode", "llama-405b")
    rules = alerts.prometheus_rule(m)["spec"]["groups"][0]["rules"]
    (missing,) = [r for r in rules if r["alert"] == "VLLMMetricsMissing"]
    assert (
        'kube_pod_status_ready{namespace="model-llama-405b",condition="true",pod=~"llama-405b-[0-9]+"}'
        in missing["expr"]
    )
    assert "kube_deployment_status" not in missing["expr"]


def test_workers_outlive_the_leaders_drain() -> None:
    """A headless rank holds pipeline stages of the leader's streams: it gets SIGTERM only after the leader's
    preStop sleep and --shutdown-timeout, and both pods' grace periods cover that."""
    m = model_plan("multinode", "llama-405b")
    lws = _lws(m)
    leader, worker = _container(lws, "leaderTemplate"), _container(lws, "workerTemplate")
    drain = int(leader["args"][leader["args"].index("--shutdown-timeout") + 1])
    leader_sleep = leader["lifecycle"]["preStop"]["sleep"]["seconds"]
    worker_sleep = worker["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert drain >= m.drain.longest_generation_seconds
    assert worker_sleep >= leader_sleep + drain
    template = lws["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        assert template[role]["spec"]["terminationGracePeriodSeconds"] > worker_sleep


def test_the_efa_device_plugin_runs_on_every_catalog_instance_with_efa() -> None:
    """The chart keeps the plugin to its `supportedInstanceLabels`; the platform lists the catalog's EFA types
    there, so a family the chart's own list lacks (p6-b200) still advertises `vpc.amazonaws.com/efa`."""
    from llm_platform.components.specs.multinode import efa_plugin_values
    from llm_platform.facts.catalog import GPU_INSTANCES

    labels = efa_plugin_values()["supportedInstanceLabels"]
    assert labels["keys"] == ["node.kubernetes.io/instance-type"]
    with_efa = {t for t, i in GPU_INSTANCES.items() if i.efa_interfaces > 0}
    assert set(labels["values"]) == with_efa and "p6-b200.48xlarge" in with_efa
