"""Inference service: one model served by vLLM, with its secrets, weights, network policy and scraping."""

import json
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_aws as aws

from llm_platform.components import child_options, typed_options
from llm_platform.components.identity import pod_identity_association, pod_identity_role
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.model_cache import ModelWeights
from llm_platform.components.specs import adapters as adapter_spec
from llm_platform.components.specs import disaggregation as pd_spec
from llm_platform.components.specs import model_cache as cache_spec
from llm_platform.components.specs import multinode as multinode_spec
from llm_platform.components.specs import rollout as rollout_spec
from llm_platform.components.specs import serving as spec
from llm_platform.components.specs.common import secret
from llm_platform.config.stack_args import (
    EnvironmentValue,
    GatewaySettings,
    GpuNodePoolSettings,
    ModelCacheSettings,
    ModelSettings,
)
from llm_platform.plan import ModelPlan
from llm_platform.plan.naming import API_KEY_SECRET_KEY, HF_TOKEN_SECRET_KEY, MONITORING_NAMESPACE
from llm_platform.plan.rollout import RolloutPlan, rollout_plan
from llm_platform.plan.stack import model_plan


def _as_template(workload: dict[str, Any], rolled: bool) -> dict[str, Any]:
    """A rolled model's Deployment is the Rollout's pod template (components/specs/rollout.py)."""
    return rollout_spec.rolled_deployment(workload) if rolled else workload


class InferenceServiceArgs(TypedDict):
    """One model served by vLLM: the stack file's entry for it and the blocks its plan depends on (camelCase
    keys, checked by the stack's rules), the secrets, and where its weights come from."""

    environment: EnvironmentValue
    """dev, staging or prod (replica floors, allowed caches, labels)."""
    model: ModelSettings
    """The stack file's `models` entry of the model: Hugging Face id, nodePool, cache, autoscaling, SLO."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The stack file's `gpuNodePools`: the model's `nodePool` names one (it sizes the pod and start)."""
    models: NotRequired[list[ModelSettings]]
    """Every model served on these pools, this one among them: they share each pool's gpuLimit and
    headroom. Default: this model alone."""
    model_cache: NotRequired[ModelCacheSettings]
    """The stack file's `modelCache` (the fsx cache needs its `fsx` block)."""
    gateway: NotRequired[GatewaySettings]
    """The stack file's `gateway`, when one routes to the model."""
    api_key: pulumi.Input[str]
    """The key vLLM requires of every request (a secret)."""
    hugging_face_token: NotRequired[pulumi.Input[str]]
    """A Hugging Face token (a secret): for a gated model's loader, and vLLM itself with the hub cache."""
    cluster_name: NotRequired[str]
    """The EKS cluster of the Pod Identity associations (caches nvme, fsx, s3 and the compile cache)."""
    weights: NotRequired[ModelWeights]
    """The model cache's bucket (and FSx file system): every cache but hub needs it; without it the model
    is planned as on an existing cluster (hub only)."""
    tags: NotRequired[dict[str, str]]
    """Tags of this component's own AWS resources, beyond the AWS provider's default_tags (the stack's tags)."""
    priority_class: NotRequired[pulumi.Input[str]]
    """The PriorityClass the vLLM pods run at: GpuHeadroom's `serving_priority_class_name` (a pending
    replica then preempts a warm placeholder; the Deployment waits for the class). Default: none, the
    cluster's default priority."""
    prefix: NotRequired[str]
    """A team's on a cluster it shares (the same as its GpuNodePools'): the namespace is
    `<prefix>-model-<name>` and the pods select the NodePool `<prefix>-<pool>`. Default: none, the
    platform's own names (`model-<name>`, the pool's name)."""
    prometheus_namespace: NotRequired[str]
    """The namespace of the Prometheus that scrapes vLLM (the NetworkPolicy admits its pods, labelled
    `app.kubernetes.io/name: prometheus`). Default: `monitoring`, the platform's kube-prometheus-stack."""
    monitor_labels: NotRequired[dict[str, str]]
    """Labels the cluster's Prometheus selects PodMonitors by (kube-prometheus-stack's default:
    `{"release": "<its Helm release>"}`). Default: none, as the platform's own Prometheus selects every
    PodMonitor."""


class InferenceService(pulumi.ComponentResource):
    """Namespace, API-key and Hugging Face token Secrets, the weights pipeline of the model's cache mode,
    the vLLM Deployment, its Service, PodDisruptionBudget, PodMonitor and NetworkPolicy.

    Everything the pods name is created here (namespace, service accounts, Secrets, the loader's
    ConfigMap) or named by an arg (`priority_class`, `weights`). Cluster prerequisites: GPU nodes labelled
    `llm-platform/gpu-pool: <pool>` (`<prefix>-<pool>` with a prefix) and tainted `nvidia.com/gpu:
    NoSchedule` (GpuNodePools makes them), the NVIDIA device plugin (the GPU Operator), the Prometheus
    Operator's CRDs (PodMonitor), the LeaderWorkerSet CRD for a multi-node model, the EKS Pod Identity
    agent for every cache but `hub`, and for the fsx cache the FSx CSI driver. A model with `rollout` also
    needs Argo Rollouts (its CRDs and controller with the Gateway API traffic-router plugin: `LlmPlatform`
    installs them from the `argo-rollouts` add-on record) and the model's path HTTPRoute and canary
    InferencePool the Rollout weighs (Gateway or GatewayRoutes make them); a multi-node or disaggregated
    model, the EFA device plugin (`vpc.amazonaws.com/efa`)."""

    namespace: str
    service_host: str

    def __init__(
        self,
        name: str,
        args: InferenceServiceArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        after: list[pulumi.Resource] | None = None,
        plan: ModelPlan | None = None,
    ) -> None:
        """`after`: what the workload waits for beyond the model's own objects (a multi-node model: the LWS
        controller); a keyword, not an arg, so the provider schema never sees a resource type. `plan`: the
        model's plan, already resolved from these args (`LlmPlatform` passes its own); without it the args
        are validated and resolved here."""
        weights = args.get("weights")
        self._after = list(after or [])
        # bad input stops before any resource
        model = plan if plan is not None else model_plan(args, has_bucket=weights is not None)
        super().__init__(
            "llm-platform:index:InferenceService",
            name,
            None,
            typed_options(opts, "llm-platform:inference:InferenceService"),
        )
        self._name, self._opts, self._args, self._model = name, opts, args, model
        environment, names = args["environment"], model.names
        namespace = names.namespace
        self.namespace = namespace
        # the loader Job needs the token for a gated model; the vLLM container only when it downloads from
        # the Hub itself (cache `hub`): offline caches (nvme, fsx, s3) never give it the token
        hf_token = args.get("hugging_face_token")
        needs_token = hf_token is not None and (model.loader_uses_hf_token or model.serving_uses_hf_token)

        ns, prerequisites = self._prerequisites(needs_token)

        bucket = pulumi.Output.from_input(weights["bucket_name"] if weights else "")
        if model.disaggregation is not None:
            self._roles(bucket, needs_token, prerequisites)
            self._shared_objects(ns)
            return
        workload = multinode_spec.leader_worker_set if model.multi_node else spec.deployment
        rolled = rollout_plan(model)
        # a progressive rollout: the Deployment is the Rollout's template, with the candidate in it
        template_model = model if rolled is None else rollout_spec.candidate_plan(model, rolled)
        # an Output of the PriorityClass's registration carries it into the Deployment's dependencies
        priority = pulumi.Output.from_input(args.get("priority_class"))
        deployment = pulumi.Output.all(bucket, priority).apply(
            lambda o: _as_template(
                workload(
                    template_model,
                    environment=environment,
                    wiring=cache_spec.cache_wiring(model, bucket=o[0]),
                    mounts_hf_token=needs_token and model.serving_uses_hf_token,
                    priority_class=o[1],
                ),
                rolled is not None,
            )
        )
        workload_resource = apply_manifest(
            f"{name}-deployment",
            deployment,
            child_options(self, opts, *prerequisites, *self._after),
            api_version=multinode_spec.LWS_API if model.multi_node else "apps/v1",
            kind="LeaderWorkerSet" if model.multi_node else "Deployment",
        )
        if model.multi_node:
            self._apply("group-netpol", multinode_spec.group_network_policy(model), ns)
            self._apply("workers-pdb", multinode_spec.worker_disruption_budget(model), ns)
        self._shared_objects(ns, None if rolled is None else (rolled, workload_resource))

    def _prerequisites(self, needs_token: bool) -> tuple[pulumi.Resource, list[pulumi.Resource]]:
        """The model's namespace, then what its pods need before they start: its service account, API key
        Secret, Hugging Face token Secret (`needs_token`), Pod Identities and the weights pipeline.
        Returns the namespace and all of them."""
        args, model, names, namespace = self._args, self._model, self._model.names, self.namespace
        environment, hf_token = args["environment"], args.get("hugging_face_token")
        ns = self._apply("ns", spec.namespace(model, environment))
        api_key = pulumi.Output.secret(args["api_key"])
        prerequisites: list[pulumi.Resource] = [
            ns,
            self._apply("sa", spec.service_account(model), ns),
            self._apply(
                "api-key", secret(names.api_key_secret, namespace, {API_KEY_SECRET_KEY: api_key}), ns
            ),
        ]
        if needs_token:
            token = pulumi.Output.secret(hf_token)
            prerequisites.append(
                self._apply(
                    "hf-token", secret(names.hf_token_secret, namespace, {HF_TOKEN_SECRET_KEY: token}), ns
                )
            )
        prerequisites += self._identities(ns)
        if model.cache.loads_from_s3:
            prerequisites += self._weights_pipeline(ns, prerequisites)
        return ns, prerequisites

    def _shared_objects(
        self, ns: pulumi.Resource, rolled: tuple[RolloutPlan, pulumi.Resource] | None = None
    ) -> None:
        """The Service, PDB, PodMonitor and NetworkPolicies over the model's pods (every role's), and a rolled
        model's Argo Rollouts objects over its workload."""
        args, model = self._args, self._model
        environment, names = args["environment"], model.names
        service = self._apply("service", spec.service(model, environment), ns)
        self._apply("pdb", spec.pod_disruption_budget(model), ns)
        monitor = spec.pod_monitor(model, args.get("monitor_labels"))
        if rolled is not None:
            monitor = rollout_spec.pod_monitor_with_hash(monitor)
            self._rollout(rolled[0], environment, rolled[1], service, ns)
        self._apply("podmonitor", monitor, ns)
        self._apply("deny-ingress", spec.default_deny_ingress(model), ns)
        prometheus_namespace = args.get("prometheus_namespace") or MONITORING_NAMESPACE
        self._apply("netpol", spec.network_policy(model, prometheus_namespace), ns)
        if model.disaggregation is not None:
            for policy in pd_spec.network_policies(model, prometheus_namespace):
                self._apply(policy["metadata"]["name"], policy, ns)

        self.service_host = names.service_host
        self.register_outputs({"namespace": names.namespace, "service": self.service_host})

    def _roles(self, bucket: pulumi.Output, needs_token: bool, prerequisites: list[pulumi.Resource]) -> None:
        """A disaggregated model's prefill and decode Deployments (components/specs/disaggregation.py)."""
        args, model, name, opts = self._args, self._model, self._name, self._opts
        assert model.disaggregation is not None
        priority = pulumi.Output.from_input(args.get("priority_class"))
        for role in model.disaggregation.roles:
            deployment = pulumi.Output.all(bucket, priority).apply(
                lambda o, role=role: pd_spec.role_deployment(
                    model,
                    role,
                    environment=args["environment"],
                    wiring=cache_spec.cache_wiring(model, bucket=o[0]),
                    mounts_hf_token=needs_token and model.serving_uses_hf_token,
                    priority_class=o[1],
                )
            )
            apply_manifest(
                f"{name}-{role.role}",
                deployment,
                child_options(self, opts, *prerequisites, *self._after),
                api_version="apps/v1",
                kind="Deployment",
            )

    def _apply(self, suffix: str, manifest: dict, *after: pulumi.Resource) -> pulumi.CustomResource:
        return apply_manifest(f"{self._name}-{suffix}", manifest, child_options(self, self._opts, *after))

    def _rollout(
        self,
        rolled: RolloutPlan,
        environment: str,
        workload: pulumi.Resource,
        service: pulumi.Resource,
        ns: pulumi.Resource,
    ) -> None:
        """Argo Rollouts' objects of a progressive rollout (components/specs/rollout.py): the canary Service,
        the AnalysisTemplate, then the Rollout that takes the pods over; each in the model's namespace."""
        model = self._model
        canary = self._apply(
            "canary-service", rollout_spec.canary_service(model, rolled, environment), ns, service
        )
        template = self._apply(
            "rollout-analysis",
            rollout_spec.analysis_template(rolled, model.model.served_model_name),
            ns,
            service,
            *self._after,
        )
        self._apply(
            "rollout", rollout_spec.rollout(model, rolled), ns, workload, canary, template, *self._after
        )

    def _identities(self, ns: pulumi.Resource) -> list[pulumi.Resource]:
        """Pod Identity for each of the model's service accounts that reaches the bucket, each with a role of
        this model alone: no other model's pods can read its weights or write (and poison) the compiled code
        its vLLM loads. The loader writes its weights; the NVMe sync reads them and saves the compile cache;
        the vLLM pods stream them (s3) and restore and save the compile cache (every mode but nvme)."""
        args, model, name, namespace = self._args, self._model, self._name, self.namespace
        names, cache = model.names, model.cache
        if not (cache.loads_from_s3 or cache.serving_needs_role):
            return []
        weights, cluster_name = args.get("weights"), args.get("cluster_name")
        if weights is None or cluster_name is None:
            raise ValueError(f"model {model.name!r}: cache {cache.mode!r} needs the model cache's bucket")
        after_ns = child_options(self, self._opts, ns)
        bucket_arn = pulumi.Output.from_input(weights["bucket_arn"])

        identities = self._identity_roles(bucket_arn, after_ns)
        out: list[pulumi.Resource] = []
        for service_account, role_ in identities:
            out.append(
                pod_identity_association(
                    f"{name}-{service_account}",
                    cluster_name=cluster_name,
                    namespace=namespace,
                    service_account=service_account,
                    role_arn=role_.arn,
                    tags=args.get("tags", {}),
                    opts=after_ns,
                )
            )
            if service_account != names.service_account:
                out.append(
                    self._apply(
                        service_account,
                        {
                            "apiVersion": "v1",
                            "kind": "ServiceAccount",
                            "metadata": {"name": service_account, "namespace": namespace},
                        },
                        ns,
                    )
                )
        return out

    def _identity_roles(
        self, bucket_arn: pulumi.Output[str], after_ns: pulumi.ResourceOptions
    ) -> list[tuple[str, aws.iam.Role]]:
        """Each service account of the model that reaches the bucket, with its role of this model alone
        (`_identities`): the loader's, the NVMe sync's and the vLLM pods'."""
        args, model, name = self._args, self._model, self._name
        names, cache = model.names, model.cache

        def role(suffix: str, description: str, policy: Callable[[str], dict[str, Any]]) -> aws.iam.Role:
            return pod_identity_role(
                f"{name}-{suffix}",
                description=description,
                policy=bucket_arn.apply(lambda arn: json.dumps(policy(arn))),
                tags=args.get("tags", {}),
                opts=after_ns,
            )

        hf_id = model.model.hugging_face_id
        identities: list[tuple[str, aws.iam.Role]] = []
        if cache.loads_from_s3:
            description = f"Copy {hf_id} from the Hugging Face Hub into the model bucket"
            writer = role(
                "loader",
                description,
                lambda arn: adapter_spec.with_adapters(
                    cache_spec.writer_policy(arn, cache.weights_prefix), arn, model.lora, loader=True
                ),
            )
            identities.append((names.loader_service_account, writer))
        if cache.mode == "nvme":
            description = f"Sync {hf_id} and its vLLM compile cache to GPU nodes"
            sync = role(
                "sync",
                description,
                lambda arn: adapter_spec.with_adapters(
                    cache_spec.model_access_policy(arn, cache.weights_prefix, cache.compile_cache_prefix),
                    arn,
                    model.lora,
                    loader=False,
                ),
            )
            identities.append((names.sync_service_account, sync))
        if cache.serving_needs_role:
            reads = cache.weights_prefix if cache.serving_reads_weights else None
            does = [
                *(["stream its weights from S3"] if reads else []),
                *(["restore and save its vLLM compile cache"] if cache.serving_compile_prefix else []),
            ]
            description = f"vLLM pods of {model.name}: {' and '.join(does)}"
            serving = role(
                "serving",
                description,
                lambda arn: adapter_spec.with_adapters(
                    cache_spec.model_access_policy(arn, reads, cache.serving_compile_prefix),
                    arn,
                    model.lora if cache.mode == "s3" else None,
                    loader=False,
                ),
            )
            identities.append((names.service_account, serving))
        return identities

    def _weights_pipeline(self, ns: pulumi.Resource, ready: list[pulumi.Resource]) -> list[pulumi.Resource]:
        """The Hub -> S3 loader Job, then the NVMe sync DaemonSet or the FSx volume."""
        args, model, name, namespace = self._args, self._model, self._name, self.namespace
        names, mode = model.names, model.cache.mode
        weights = args.get("weights")
        assert weights is not None  # checked with the identities
        after_ns = child_options(self, self._opts, ns)
        out: list[pulumi.Resource] = []
        out.append(
            self._apply("loader-script", cache_spec.loader_configmap(namespace, model.lora is not None), ns)
        )
        bucket = pulumi.Output.from_input(weights["bucket_name"])
        job = bucket.apply(lambda b: cache_spec.loader_job(model, bucket=b))
        apply_manifest(
            f"{name}-load-weights",
            job,
            child_options(self, self._opts, *ready, *out),
            api_version="batch/v1",
            kind="Job",
        )
        if mode == "nvme":
            daemonset = bucket.apply(lambda b: cache_spec.nvme_daemonset(model, bucket=b))
            out.append(
                apply_manifest(
                    f"{name}-weights",
                    daemonset,
                    child_options(self, self._opts, *ready, *out),
                    api_version="apps/v1",
                    kind="DaemonSet",
                )
            )
        if mode == "fsx":
            fsx = weights.get("fsx")
            if fsx is None:
                raise ValueError(f"model {model.name!r}: cache 'fsx' needs the model cache's FSx file system")
            volume_name = names.fsx_volume
            volume = pulumi.Output.all(
                fs=fsx["file_system_id"], dns=fsx["dns_name"], mount=fsx["mount_name"]
            ).apply(
                lambda o: cache_spec.fsx_persistent_volume(
                    volume_name,
                    file_system_id=o["fs"],
                    dns_name=o["dns"],
                    mount_name=o["mount"],
                    capacity_gib=fsx["capacity_gib"],
                )
            )
            pv = apply_manifest(f"{name}-fsx-pv", volume, after_ns, api_version="v1", kind="PersistentVolume")
            claim = cache_spec.fsx_persistent_volume_claim(
                names.fsx_claim, namespace, volume=volume_name, capacity_gib=fsx["capacity_gib"]
            )
            out += [pv, self._apply("fsx-pvc", claim, ns, pv)]
        return out
