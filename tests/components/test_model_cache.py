"""Model cache: S3 source of truth, scoped IAM, Lustre security groups, PV/PVC, NVMe sync handshake."""

from __future__ import annotations

import json

import pytest

from llm_platform.components.specs import model_cache as spec
from llm_platform.plan.model import resolve_model
from llm_platform.plan.naming import READY_MARKER
from llm_platform.tools.preflight import nodes
from tests.conftest import load_fixture
from tests.plans import model_plan as _model

BUCKET_ARN = "arn:aws:s3:::llm-prod-models"


def test_bucket_is_private_versioned_encrypted_and_tls_only(run_program) -> None:
    m = run_program("prod")
    (block,) = m.by_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    assert all(
        block.inputs[k] is True
        for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
    )
    (versioning,) = m.by_type("aws:s3/bucketVersioning:BucketVersioning")
    assert versioning.inputs["versioningConfiguration"]["status"] == "Enabled"
    (sse,) = m.by_type(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    )
    assert sse.inputs["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    (policy,) = m.by_type("aws:s3/bucketPolicy:BucketPolicy")
    (deny,) = json.loads(policy.inputs["policy"])["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_a_models_reader_and_writer_are_limited_to_its_own_prefix() -> None:
    reader = spec.model_access_policy(BUCKET_ARN, "models/org/model-a", None)
    resources = [s["Resource"] for s in reader["Statement"]]
    assert resources == [BUCKET_ARN, BUCKET_ARN, f"{BUCKET_ARN}/models/org/model-a/*"]
    actions = {
        a
        for s in reader["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert not {a for a in actions if a.startswith("s3:Put") or a.startswith("s3:Delete")}
    writer = spec.writer_policy(BUCKET_ARN, "models/org/model-a")
    put = next(s for s in writer["Statement"] if s["Sid"] == "WriteModel")
    assert put["Resource"] == f"{BUCKET_ARN}/models/org/model-a/*", (
        "one model's loader writes its prefix only"
    )
    assert "s3:DeleteObject" not in put["Action"]


def test_get_bucket_location_is_not_under_the_prefix_condition() -> None:
    """GetBucketLocation requests carry no s3:prefix: under that condition they are always denied."""
    for policy in (
        spec.model_access_policy(BUCKET_ARN, "models/a/b", "compile-cache/a/v1/A10G"),
        spec.model_access_policy(BUCKET_ARN, None, "compile-cache/a/v1/A10G"),
        spec.writer_policy(BUCKET_ARN, "models/a/b"),
    ):
        sids = [s["Sid"] for s in policy["Statement"]]
        assert len(sids) == len(set(sids)), "IAM wants one Sid per statement"
        for s in policy["Statement"]:
            actions = [s["Action"]] if isinstance(s["Action"], str) else s["Action"]
            if "s3:GetBucketLocation" in actions:
                assert "Condition" not in s


def test_one_loader_role_per_model_and_no_shared_reader(run_program) -> None:
    """prod serves both models from FSx: no role reads weights from S3 for serving, and each loader writes
    its own prefix."""
    m = run_program("prod")
    roles = {r.name: r for r in m.by_type("aws:iam/role:Role")}
    assert not [n for n in roles if "model-reader" in n], "no role shared by every model's pods"
    policies = {r.name: json.loads(r.inputs["policy"]) for r in m.by_type("aws:iam/rolePolicy:RolePolicy")}
    for model, prefix in (
        ("mistral-7b", "models/TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"),
        ("llama-70b", "models/meta-llama/Llama-3.1-70B-Instruct"),
    ):
        loader = policies[f"llm-prod-{model}-loader"]
        writes = [s for s in loader["Statement"] if s["Sid"] == "WriteModel"]
        assert [s["Resource"] for s in writes] == [f"arn:aws:s3:::llm-prod-cache-models-mock/{prefix}/*"]
        serving = policies[f"llm-prod-{model}-serving"]
        assert not [s for s in serving["Statement"] if "models/" in json.dumps(s["Resource"])]


def test_pod_identity_per_cache_mode_is_least_privilege(run_program) -> None:
    for stack, expected in (
        ("dev", {("model-qwen-1-5b", "model-loader"), ("model-qwen-1-5b", "vllm")}),  # s3: vLLM reads S3
        ("staging", {("model-mistral-7b", "model-loader"), ("model-mistral-7b", "model-sync")}),  # nvme
        # fsx: vLLM restores and saves its compile cache
        (
            "prod",
            {(f"model-{n}", sa) for n in ("mistral-7b", "llama-70b") for sa in ("model-loader", "vllm")},
        ),
    ):
        m = run_program(stack)
        associations = {
            (a.inputs["namespace"], a.inputs["serviceAccount"])
            for a in m.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
            if a.inputs["namespace"].startswith("model-")
        }
        assert associations == expected
    dev = run_program("dev")
    role = dev.named("llm-dev-qwen-1-5b-serving", "aws:iam/role:Role")
    assert role.inputs["description"] == "vLLM pods of qwen-1-5b: stream its weights from S3"
    (serving,) = [r for r in dev.by_type("aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-serving")]
    reads = [
        s["Resource"] for s in json.loads(serving.inputs["policy"])["Statement"] if s["Sid"] == "ReadModels"
    ]
    assert reads == ["arn:aws:s3:::llm-dev-cache-models-mock/models/Qwen/Qwen2.5-1.5B-Instruct/*"], (
        "s3: vLLM streams its own model's weights, no other model's"
    )


def test_lustre_ports_open_to_gpu_nodes_only(run_program) -> None:
    m = run_program("prod")
    rules = m.by_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    assert rules, "prod uses FSx"
    for rule in rules:
        assert "cidrIpv4" not in rule.inputs, "Lustre is never opened to an address range"
        assert rule.inputs["referencedSecurityGroupId"].startswith("sg-")
        assert (rule.inputs["fromPort"], rule.inputs["toPort"]) in {(988, 988), (1018, 1023)}
    client = m.named("llm-prod-cache-lustre-client", "aws:ec2/securityGroup:SecurityGroup")
    (node_class,) = [
        c
        for c in m.by_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
        if c.inputs["metadata"]["name"] != "addons"
    ]
    ids = [t.get("id") for t in node_class.inputs["spec"]["securityGroupSelectorTerms"]]
    assert any(i and i.startswith("sg-") for i in ids), (
        f"GPU nodes carry the Lustre client group {client.name}"
    )
    assert "lustre-client" in node_class.inputs["spec"]["userData"], "AL2023 gets the Lustre client"


def test_fsx_is_persistent_2_linked_to_the_bucket_in_prod(run_program) -> None:
    m = run_program("prod")
    (fs,) = m.by_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fs.inputs["deploymentType"] == "PERSISTENT_2"
    assert fs.inputs["storageCapacity"] == 2400 and fs.inputs["perUnitStorageThroughput"] == 250
    (dra,) = m.by_type("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
    assert dra.inputs["fileSystemPath"] == "/models"
    assert dra.inputs["dataRepositoryPath"].endswith("/models")
    (csi,) = [
        r for r in m.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "aws-fsx-csi-driver"
    ]
    assert csi.inputs["version"] == "1.17.0"
    assert csi.depends_on("aws:eks/podIdentityAssociation:PodIdentityAssociation", "llm-prod-cache-fsx-csi")


def test_static_pv_and_claim_bind_read_only_for_vllm() -> None:
    pv = spec.fsx_persistent_volume(
        "model-x-fsx", file_system_id="fs-1", dns_name="d", mount_name="m", capacity_gib=2400
    )
    assert pv["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-1",
        "volumeAttributes": {"dnsname": "d", "mountname": "m"},
    }
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    claim = spec.fsx_persistent_volume_claim("x-fsx", "model-x", volume="model-x-fsx", capacity_gib=2400)
    assert claim["spec"]["volumeName"] == "model-x-fsx" and claim["spec"]["storageClassName"] == ""
    model = _model("prod", "mistral-7b")
    wiring = spec.cache_wiring(model, bucket="b")
    assert wiring.volumes == [
        {"name": "fsx", "persistentVolumeClaim": {"claimName": model.names.fsx_claim, "readOnly": True}}
    ]
    assert all(m["readOnly"] for m in wiring.volume_mounts)
    assert wiring.model_path == "/models/TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"


@pytest.mark.parametrize(
    ("ami_family", "root"), [("al2023", "/mnt/k8s-disks/0"), ("bottlerocket", "/mnt/.ephemeral")]
)
def test_nvme_sync_and_vllm_meet_at_the_same_marker(ami_family: str, root: str) -> None:
    config = load_fixture("staging")
    model_config = next(m for m in config.models if m.name == "mistral-7b")
    pool = config.pool(model_config.node_pool).model_copy(update={"ami_family": ami_family})
    model = resolve_model(model_config, pool)
    daemonset = spec.nvme_daemonset(model, bucket="b")
    pod = daemonset["spec"]["template"]["spec"]
    (host,) = [v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v]
    assert host == f"{root}/llm-platform"
    assert pod["nodeSelector"] == {"llm-platform/gpu-pool": "g5"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    (sync,) = pod["initContainers"]
    assert READY_MARKER in sync["command"][-1]
    ready_marker = pod["containers"][0]["readinessProbe"]["exec"]["command"][-1]

    wiring = spec.cache_wiring(model, bucket="b")
    (wait,) = wiring.init_containers
    vllm_marker = wait["args"][0].split('"')[1]
    # the DaemonSet sees the host directory at /nvme, vLLM sees its models/ subdirectory at /models
    assert ready_marker.removeprefix("/nvme/models") == vllm_marker.removeprefix("/models")
    assert wiring.volumes[0]["hostPath"]["path"] == f"{root}/llm-platform/models"
    assert wiring.compile_cache["hostPath"]["path"] == f"{root}/llm-platform/vllm-cache/mistral-7b"
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in wiring.env
    assert wiring.model_path == "/models/TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"


def test_s3_mode_streams_with_runai_and_waits_for_the_loader() -> None:
    model = _model("dev", "qwen-1-5b")
    wiring = spec.cache_wiring(model, bucket="models-b")
    assert wiring.model_path == "s3://models-b/models/Qwen/Qwen2.5-1.5B-Instruct"
    assert wiring.extra_args == ["--load-format", "runai_streamer"]
    (wait,) = wiring.init_containers
    assert "models/Qwen/Qwen2.5-1.5B-Instruct/.llm-platform-complete" in wait["args"][0]


def test_loader_job_is_idempotent_and_uses_the_token_only_when_needed() -> None:
    gated = _model("prod", "llama-70b")
    assert gated.model.needs_hf_token
    job = spec.loader_job(gated, bucket="b")
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
    assert env["PREFIX"]["value"] == "models/meta-llama/Llama-3.1-70B-Instruct"
    assert "already in s3://" in spec.LOADER_SCRIPT and "if done == revision" in spec.LOADER_SCRIPT
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    public = spec.loader_job(_model("dev", "qwen-1-5b"), bucket="b")
    assert "HF_TOKEN" not in {e["name"] for e in public["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_loader_script_is_valid_python() -> None:
    compile(spec.LOADER_SCRIPT, "load.py", "exec")


def test_hub_mode_downloads_at_start() -> None:
    from llm_platform.config.loader import parse
    from tests.conftest import stack_values

    values = stack_values("dev")
    values["models"][0]["cache"] = "hub"
    wiring = spec.cache_wiring(_model(parse(values), "qwen-1-5b"), bucket="b")
    assert wiring.model_path == "Qwen/Qwen2.5-1.5B-Instruct" and not wiring.init_containers


def test_sync_script_is_valid_shell() -> None:
    import subprocess

    subprocess.run(["sh", "-n", "-c", spec.SYNC_SCRIPT], check=True)


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_loader_job_fits_an_addon_node(run_program, stack: str) -> None:
    """The loader runs on the add-on nodes: its ephemeral-storage request must fit the allocatable disk of
    every instance the pool admits (Karpenter's default 20 GiB root leaves ~17 GiB; the old 40Gi request
    stayed Pending and every vLLM pod waited for its weights forever)."""
    m = run_program(stack)
    (pool,) = [
        p
        for p in m.by_type("kubernetes:karpenter.sh/v1:NodePool")
        if p.inputs["metadata"]["name"] == "addons"
    ]
    classes = {
        c.inputs["metadata"]["name"]: c.inputs
        for c in m.by_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    }
    admitted = nodes.node_pool_nodes(pool.inputs, classes)
    assert admitted
    node = min(admitted, key=lambda n: n.ephemeral_mib)
    jobs = [r.inputs for r in m.by_type("kubernetes:batch/v1:Job")]
    assert jobs
    for job in jobs:
        (container,) = job["spec"]["template"]["spec"]["containers"]
        request = container["resources"]["requests"]["ephemeral-storage"]
        assert int(request.removesuffix("Gi")) * 1024 <= node.ephemeral_mib, (request, node.ephemeral_mib)
