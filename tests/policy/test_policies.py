"""Each policy of the pack, without the Pulumi CLI: a compliant object passes, a violation is caught, and an
unknown value during preview is tolerated (skipped, never raised)."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import StackValidationPolicy

from policy.llm_platform_policies import (
    ALL_POLICIES,
    gpu_nodes_imdsv2,
    keda_prometheus_queries,
    no_plaintext_secret_env,
    pd_role_ports,
    prod_vllm_min_replicas,
    prod_vllm_zone_spread,
    vllm_environment_label,
    vllm_graceful_drain,
    vllm_no_hub_downloads_outside_dev,
    vllm_no_utilisation_autoscaling,
    vllm_shm_for_tensor_parallel,
    vllm_tensor_parallel_within_node,
)
from policy.llm_platform_policies.autoscaling import single_series
from policy.llm_platform_policies.workloads import looks_secret
from tests.policy.builders import (
    DEPLOYMENT,
    HPA,
    NODE_CLASS,
    QUEUE_QUERY,
    SCALED_OBJECT,
    UNKNOWN_NUMBER,
    UNKNOWN_STRING,
    container_of,
    hpa,
    node_class,
    pod_spec_of,
    prometheus_trigger,
    resource_args,
    scaled_object,
    stack_args,
    violations,
    vllm_deployment,
)


def deployment_violations(policy: Any, deployment: dict[str, Any], stack: str = "prod") -> list[str]:
    return violations(policy, resource_args(DEPLOYMENT, deployment, stack=stack))


def test_pack_has_unique_names_and_mandatory_enforcement() -> None:
    names = [p.name for p in ALL_POLICIES]
    assert len(names) == len(set(names))
    assert all(
        p.enforcement_level is not None and p.enforcement_level.value == "mandatory" for p in ALL_POLICIES
    )


# ------------------------------------------------------------------------- no utilisation autoscaling


def test_keda_on_vllm_queue_and_kv_cache_passes() -> None:
    args = stack_args([(DEPLOYMENT, vllm_deployment()), (SCALED_OBJECT, scaled_object())], stack="prod")
    assert violations(vllm_no_utilisation_autoscaling, args) == []


@pytest.mark.parametrize(
    "trigger",
    [
        {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}},
        {"type": "memory", "metricType": "Utilization", "metadata": {"value": "80"}},
        prometheus_trigger('avg(DCGM_FI_DEV_GPU_UTIL{namespace="llm"})', "80"),
        prometheus_trigger('sum(DCGM_FI_DEV_FB_USED{namespace="llm"}) / sum(DCGM_FI_DEV_FB_FREE)', "0.9"),
    ],
    ids=["keda-cpu", "keda-memory", "dcgm-gpu-util", "dcgm-framebuffer"],
)
def test_keda_on_utilisation_is_rejected(trigger: dict[str, Any]) -> None:
    scaler = scaled_object(triggers=[prometheus_trigger(QUEUE_QUERY), trigger])
    args = stack_args([(DEPLOYMENT, vllm_deployment()), (SCALED_OBJECT, scaler)], stack="dev")
    found = violations(vllm_no_utilisation_autoscaling, args)
    assert len(found) == 1
    assert "utilisation" in found[0]


@pytest.mark.parametrize(
    "metric",
    [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
        },
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization"}}},
        {
            "type": "Pods",
            "pods": {"metric": {"name": "DCGM_FI_DEV_GPU_UTIL"}, "target": {"type": "AverageValue"}},
        },
    ],
    ids=["hpa-cpu", "hpa-memory", "hpa-gpu-util"],
)
def test_hpa_on_utilisation_of_a_vllm_target_is_rejected(metric: dict[str, Any]) -> None:
    args = stack_args([(DEPLOYMENT, vllm_deployment()), (HPA, hpa(metrics=[metric]))], stack="staging")
    assert len(violations(vllm_no_utilisation_autoscaling, args)) == 1


def test_cpu_hpa_of_a_non_vllm_deployment_is_allowed() -> None:
    gateway = vllm_deployment()
    gateway["metadata"] = {
        "name": "gateway",
        "namespace": "llm",
        "labels": {"app.kubernetes.io/name": "gateway"},
    }
    gateway["spec"]["template"]["metadata"]["labels"] = {"app.kubernetes.io/name": "gateway"}
    container_of(gateway)["name"] = "gateway"
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}
    args = stack_args([(DEPLOYMENT, gateway), (HPA, hpa(target="gateway", metrics=[cpu]))], stack="prod")
    assert violations(vllm_no_utilisation_autoscaling, args) == []


# ------------------------------------------------------------------------- /dev/shm


def test_shm_memory_emptydir_with_tensor_parallel_passes() -> None:
    assert deployment_violations(vllm_shm_for_tensor_parallel, vllm_deployment(tp=4)) == []


def test_tensor_parallel_without_shm_is_rejected() -> None:
    d = vllm_deployment(tp=4)
    container_of(d)["volumeMounts"] = [{"name": "models", "mountPath": "/models"}]
    assert "/dev/shm" in deployment_violations(vllm_shm_for_tensor_parallel, d)[0]


def test_shm_on_disk_emptydir_is_rejected() -> None:
    d = vllm_deployment(tp=2)
    pod_spec_of(d)["volumes"][0] = {"name": "shm", "emptyDir": {}}
    assert "medium: Memory" in deployment_violations(vllm_shm_for_tensor_parallel, d)[0]


def test_single_gpu_needs_no_shm() -> None:
    d = vllm_deployment(tp=1)
    container_of(d)["volumeMounts"] = []
    assert deployment_violations(vllm_shm_for_tensor_parallel, d) == []


# ------------------------------------------------------------------------- tensor parallel within a node


def test_gpu_limit_equal_to_tensor_parallel_passes() -> None:
    assert deployment_violations(vllm_tensor_parallel_within_node, vllm_deployment(tp=8)) == []
    assert deployment_violations(vllm_tensor_parallel_within_node, vllm_deployment(tp=4, gpus="4")) == []


def test_gpu_limit_different_from_tensor_parallel_is_rejected() -> None:
    found = deployment_violations(vllm_tensor_parallel_within_node, vllm_deployment(tp=4, gpus=1))
    assert len(found) == 1
    assert "does not match --tensor-parallel-size 4" in found[0]


def test_tensor_parallel_beyond_one_node_is_rejected() -> None:
    found = deployment_violations(vllm_tensor_parallel_within_node, vllm_deployment(tp=16))
    assert any("more than the 8 GPUs" in f for f in found)


def test_missing_gpu_limit_is_rejected_and_flag_spellings_are_read() -> None:
    d = vllm_deployment(tp=2)
    container_of(d)["resources"] = {}
    container_of(d)["args"] = ["serve", "/models/m", "--tensor_parallel_size=2"]
    assert "no nvidia.com/gpu limit" in deployment_violations(vllm_tensor_parallel_within_node, d)[0]


# ------------------------------------------------------------------------- no Hugging Face Hub outside dev


def test_local_path_or_offline_hub_id_passes_outside_dev() -> None:
    assert deployment_violations(vllm_no_hub_downloads_outside_dev, vllm_deployment()) == []
    offline = vllm_deployment(model="mistralai/Mistral-7B-Instruct-v0.2")  # HF_HUB_OFFLINE=1 is set
    assert deployment_violations(vllm_no_hub_downloads_outside_dev, offline) == []
    s3 = vllm_deployment(model="s3://llm-prod-models/mistral-7b")
    container_of(s3)["env"] = []
    assert deployment_violations(vllm_no_hub_downloads_outside_dev, s3) == []


def test_hub_id_without_offline_is_rejected_in_prod_but_allowed_in_dev() -> None:
    d = vllm_deployment(model="mistralai/Mistral-7B-Instruct-v0.2")
    container_of(d)["env"] = [e for e in container_of(d)["env"] if e["name"] != "HF_HUB_OFFLINE"]
    found = deployment_violations(vllm_no_hub_downloads_outside_dev, d)
    assert len(found) == 1
    assert "Hugging Face Hub" in found[0]
    dev = vllm_deployment(env="dev", model="Qwen/Qwen2.5-1.5B-Instruct")
    container_of(dev)["env"] = []
    assert deployment_violations(vllm_no_hub_downloads_outside_dev, dev, stack="dev") == []


def test_positional_model_and_init_container_download_are_caught() -> None:
    d = vllm_deployment(env="staging")
    container_of(d)["args"] = ["meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "1"]
    container_of(d)["env"] = [{"name": "HF_HUB_OFFLINE", "value": "0"}]
    pod_spec_of(d)["initContainers"] = [
        {
            "name": "fetch",
            "image": "python:3.12",
            "command": ["sh", "-c", "hf download meta-llama/x --local-dir /m"],
        }
    ]
    found = deployment_violations(vllm_no_hub_downloads_outside_dev, d, stack="staging")
    assert len(found) == 2


# ------------------------------------------------------------------------- prod min replicas


def test_prod_scaled_object_with_two_replicas_passes() -> None:
    args = stack_args([(DEPLOYMENT, vllm_deployment()), (SCALED_OBJECT, scaled_object())], stack="prod")
    assert violations(prod_vllm_min_replicas, args) == []


@pytest.mark.parametrize("min_replicas", [1, None], ids=["one", "keda-default-zero"])
def test_prod_scaled_object_below_two_is_rejected(min_replicas: int | None) -> None:
    scaler = scaled_object(min_replicas=min_replicas)
    args = stack_args([(DEPLOYMENT, vllm_deployment()), (SCALED_OBJECT, scaler)], stack="prod")
    found = violations(prod_vllm_min_replicas, args)
    assert len(found) == 1
    assert "minReplicaCount" in found[0]


def test_dev_may_run_one_replica_and_unscaled_prod_deployment_needs_two() -> None:
    dev = stack_args(
        [(DEPLOYMENT, vllm_deployment(env="dev")), (SCALED_OBJECT, scaled_object(min_replicas=1))],
        stack="dev",
    )
    assert violations(prod_vllm_min_replicas, dev) == []
    lone = vllm_deployment()
    lone["spec"]["replicas"] = 1
    assert len(violations(prod_vllm_min_replicas, stack_args([(DEPLOYMENT, lone)], stack="prod"))) == 1


# ------------------------------------------------------------------------- prod zone spread


def test_prod_zone_spread_passes() -> None:
    assert deployment_violations(prod_vllm_zone_spread, vllm_deployment()) == []


def test_prod_without_zone_spread_is_rejected_but_dev_is_not() -> None:
    d = vllm_deployment()
    pod_spec_of(d)["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}
    ]
    assert "topology.kubernetes.io/zone" in deployment_violations(prod_vllm_zone_spread, d)[0]
    dev = vllm_deployment(env="dev")
    del pod_spec_of(dev)["topologySpreadConstraints"]
    assert deployment_violations(prod_vllm_zone_spread, dev, stack="dev") == []


def test_environment_comes_from_policy_config_when_set() -> None:
    d = vllm_deployment(env="prod")
    del d["metadata"]["labels"]["llm-platform/environment"]
    del pod_spec_of(d)["topologySpreadConstraints"]
    args = resource_args(DEPLOYMENT, d, stack="team-sandbox", config={"environment": "prod"})
    assert len(violations(prod_vllm_zone_spread, args)) == 1


# ------------------------------------------------------------------------- graceful drain


def test_grace_period_longer_than_prestop_plus_drain_passes() -> None:
    assert deployment_violations(vllm_graceful_drain, vllm_deployment()) == []  # 90 > 10 + 60


def test_grace_period_too_short_for_drain_is_rejected() -> None:
    d = vllm_deployment()
    del pod_spec_of(d)["terminationGracePeriodSeconds"]  # default 30 < 10 + 60
    found = deployment_violations(vllm_graceful_drain, d)
    assert len(found) == 1
    assert "(the default)" in found[0]
    exec_hook = vllm_deployment()
    container_of(exec_hook)["lifecycle"] = {"preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 40"]}}}
    assert len(deployment_violations(vllm_graceful_drain, exec_hook)) == 1  # 90 <= 40 + 60


# ------------------------------------------------------------------------- KEDA queries


def test_summed_queries_on_current_metrics_pass() -> None:
    assert violations(keda_prometheus_queries, resource_args(SCALED_OBJECT, scaled_object())) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('vllm:num_requests_waiting{model_name="m"}', "sum(...)"),
        ('sum by (pod) (vllm:num_requests_waiting{model_name="m"})', "sum(...)"),
        ('sum(vllm:gpu_cache_usage_perc{model_name="m"})', "vllm:kv_cache_usage_perc"),
        ('sum(vllm:gpu_cache_usage_factor{model_name="m"})', "never existed"),
        ("sum(rate(vllm:time_per_output_token_seconds_sum[1m]))", "vllm:inter_token_latency_seconds"),
    ],
)
def test_unsummed_or_retired_queries_are_rejected(query: str, expected: str) -> None:
    scaler = scaled_object(triggers=[prometheus_trigger(query)])
    found = violations(keda_prometheus_queries, resource_args(SCALED_OBJECT, scaler))
    assert len(found) == 1
    assert expected in found[0]


def test_single_series_shapes() -> None:
    assert single_series("sum(a) / sum(b)")
    assert single_series("histogram_quantile(0.95, sum by (le) (rate(x_bucket[5m])))")
    assert not single_series("sum(a) by (pod)")
    assert not single_series("rate(a[1m])")
    assert not single_series("vllm:num_requests_waiting")
    assert not single_series("sum(unbalanced")
    # the current metric whose name contains a retired one is not flagged
    current = scaled_object(
        triggers=[prometheus_trigger("sum(rate(vllm:request_time_per_output_token_seconds_sum[1m]))")]
    )
    assert violations(keda_prometheus_queries, resource_args(SCALED_OBJECT, current)) == []


# ------------------------------------------------------------------------- IMDSv2


def test_imdsv2_with_hop_limit_one_passes() -> None:
    options = {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1}
    assert violations(gpu_nodes_imdsv2, resource_args(NODE_CLASS, node_class(options))) == []
    assert (
        violations(gpu_nodes_imdsv2, resource_args(NODE_CLASS, node_class({"httpEndpoint": "disabled"})))
        == []
    )


def test_imdsv1_or_hop_limit_two_or_unset_is_rejected() -> None:
    optional = node_class({"httpTokens": "optional", "httpPutResponseHopLimit": 2})
    assert len(violations(gpu_nodes_imdsv2, resource_args(NODE_CLASS, optional))) == 2
    assert len(violations(gpu_nodes_imdsv2, resource_args(NODE_CLASS, node_class(None)))) == 1


# ------------------------------------------------------------------------- plaintext secrets


def test_secret_key_ref_passes() -> None:
    assert deployment_violations(no_plaintext_secret_env, vllm_deployment()) == []


def test_literal_secret_env_and_api_key_flag_are_rejected() -> None:
    d = vllm_deployment(
        extra_env=[
            {"name": "HF_TOKEN", "value": "hf_abc"},
            {"name": "DB_PASSWORD", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
            {"name": "TOKENIZERS_PARALLELISM", "value": "false"},
            {"name": "TLS_KEY_FILE", "value": "/etc/tls/key.pem"},
        ]
    )
    container_of(d)["args"] += ["--api-key", "sk-plaintext"]
    found = deployment_violations(no_plaintext_secret_env, d)
    assert len(found) == 3
    assert any("HF_TOKEN" in f for f in found)
    assert any("DB_PASSWORD" in f for f in found)
    assert any("--api-key" in f for f in found)


def test_helm_release_env_values_are_checked() -> None:
    release = {
        "name": "grafana",
        "chart": "grafana",
        "values": {"grafana": {"env": {"GF_SECURITY_ADMIN_PASSWORD": "admin"}, "extraEnv": []}},
    }
    found = violations(no_plaintext_secret_env, resource_args("kubernetes:helm.sh/v3:Release", release))
    assert len(found) == 1
    release["values"] = {"grafana": {"envFromSecret": "grafana-admin"}}
    assert violations(no_plaintext_secret_env, resource_args("kubernetes:helm.sh/v3:Release", release)) == []


def test_secret_name_heuristic_and_allow_list() -> None:
    assert looks_secret("VLLM_API_KEY")
    assert looks_secret("hf-token")
    assert not looks_secret("MAX_NUM_BATCHED_TOKENS")
    assert not looks_secret("SECRET_NAME")
    d = vllm_deployment(extra_env=[{"name": "CACHE_KEY", "value": "v1"}])
    args = resource_args(DEPLOYMENT, d, stack="prod", config={"allowedNames": ["CACHE_KEY"]})
    assert violations(no_plaintext_secret_env, args) == []


# ------------------------------------------------------------------------- environment label


def test_environment_label_matching_the_stack_passes() -> None:
    assert deployment_violations(vllm_environment_label, vllm_deployment(env="prod"), stack="prod") == []


def test_missing_or_mismatched_environment_label_is_rejected() -> None:
    missing = vllm_deployment()
    del missing["metadata"]["labels"]["llm-platform/environment"]
    assert len(deployment_violations(vllm_environment_label, missing)) == 1
    assert "stack is 'prod'" in deployment_violations(vllm_environment_label, vllm_deployment(env="dev"))[0]


# ------------------------------------------------------------------------- preview: unknown values


def test_unknown_values_during_preview_are_skipped_not_raised() -> None:
    d = vllm_deployment(tp=4)
    container_of(d)["resources"]["limits"]["nvidia.com/gpu"] = UNKNOWN_NUMBER
    container_of(d)["env"][0]["value"] = UNKNOWN_STRING
    pod_spec_of(d)["terminationGracePeriodSeconds"] = UNKNOWN_NUMBER
    pod_spec_of(d)["topologySpreadConstraints"] = UNKNOWN_STRING
    d["metadata"]["namespace"] = UNKNOWN_STRING
    for policy in ALL_POLICIES:
        if isinstance(policy, StackValidationPolicy):
            continue
        assert violations(policy, resource_args(DEPLOYMENT, d, stack="prod")) == [], policy.name
    scaler = scaled_object(min_replicas=None)
    scaler["spec"]["minReplicaCount"] = UNKNOWN_NUMBER
    scaler["spec"]["triggers"][0]["metadata"]["query"] = UNKNOWN_STRING
    args = stack_args([(DEPLOYMENT, d), (SCALED_OBJECT, scaler)], stack="prod")
    assert violations(prod_vllm_min_replicas, args) == []
    assert violations(vllm_no_utilisation_autoscaling, args) == []
    assert violations(pd_role_ports, args) == []
    assert violations(keda_prometheus_queries, resource_args(SCALED_OBJECT, scaler)) == []
    options = {"httpTokens": UNKNOWN_STRING, "httpPutResponseHopLimit": UNKNOWN_NUMBER}
    assert violations(gpu_nodes_imdsv2, resource_args(NODE_CLASS, node_class(options))) == []


def test_missing_keys_are_tolerated() -> None:
    bare: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"labels": {}}}
    vllm_bare = {"metadata": {"labels": {"app.kubernetes.io/name": "vllm"}}, "spec": {"template": {}}}
    for props in (bare, vllm_bare, {}):
        for policy in ALL_POLICIES:
            if isinstance(policy, StackValidationPolicy):
                args: Any = stack_args([(DEPLOYMENT, props), (SCALED_OBJECT, {})], stack="prod")
            else:
                args = resource_args(DEPLOYMENT, props, stack="prod")
            violations(policy, args)  # must not raise
    assert (
        violations(keda_prometheus_queries, resource_args(SCALED_OBJECT, {"spec": {"triggers": [{}]}})) == []
    )
