"""Model cache: the S3 bucket every replica's weights come from, and FSx for Lustre linked to it."""

import json
from collections.abc import Mapping
from typing import NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.identity import service_account_identity
from llm_platform.components.specs import model_cache as spec
from llm_platform.config.errors import ConfigError
from llm_platform.config.loader import parse_block
from llm_platform.config.schema import FsxConfig, S3BucketConfig
from llm_platform.config.stack_args import ModelCacheSettings
from llm_platform.facts.addons import FSX_CSI_DRIVER, version_of
from llm_platform.facts.versions import FSX_LUSTRE_VERSION
from llm_platform.plan import Plan
from llm_platform.plan.naming import KUBE_SYSTEM_NAMESPACE


class FsxVolume(TypedDict):
    """An FSx for Lustre file system holding the models: what a model's static PersistentVolume mounts
    (components/specs/model_cache.fsx_persistent_volume) and the security group its clients (GPU nodes)
    carry."""

    file_system_id: pulumi.Input[str]
    dns_name: pulumi.Input[str]
    mount_name: pulumi.Input[str]
    capacity_gib: int
    client_security_group_id: pulumi.Input[str]


class ModelWeights(TypedDict):
    """What the model cache provides: the bucket (EKS stacks) and the FSx file system (if any)."""

    bucket_name: pulumi.Input[str]
    bucket_arn: pulumi.Input[str]
    fsx: NotRequired[FsxVolume]
    """The FSx for Lustre file system, when a model uses the fsx cache."""


class ModelCacheArgs(TypedDict):
    """The model bucket and, for the fsx cache, FSx for Lustre linked to it."""

    cluster_name: str
    model_cache: NotRequired[ModelCacheSettings]
    """The stack file's `modelCache`: the bucket's settings and the FSx file system's."""
    fsx: NotRequired[bool]
    """Create the FSx for Lustre file system (a model uses the fsx cache; needs `modelCache.fsx`)."""
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    """Lustre file systems live in one zone; the first private subnet's."""
    tags: NotRequired[dict[str, str]]
    """Tags of this component's own AWS resources, beyond the AWS provider's default_tags (the stack's tags)."""


class ModelCache(pulumi.ComponentResource):
    """A versioned, encrypted, private, TLS-only bucket and, when asked for, FSx for Lustre with its CSI
    driver. Installed once per cluster and shared by every team's InferenceServices (`weights`).

    Prerequisites: with `fsx`, a subnet in the GPU nodes' zone (`subnet_id`) and the cluster's VPC; the
    models' readers get their access through the EKS Pod Identity agent (InferenceService makes their
    associations)."""

    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]
    fsx: FsxVolume | None

    def __init__(
        self,
        name: str,
        args: ModelCacheArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: Plan | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`plan`: the stack's plan, already resolved from these args (`LlmPlatform` passes its own; the cache
        reads its `model_cache`); without it the args' block is validated here. `versions`: chart versions by
        add-on name (`llm_platform.facts.addons`) in place of the pinned ones (`LlmPlatform` passes its
        `addon_versions`)."""
        if plan is not None:
            config = plan.model_cache
        else:
            config = parse_block("modelCache", args.get("model_cache", {}))
        if args.get("fsx") and config.fsx is None:
            raise ConfigError("modelCache.fsx: the FSx file system needs its settings, which are missing")
        super().__init__(
            "llm-platform:index:ModelCache", name, None, typed_options(opts, "llm-platform:cache:ModelCache")
        )
        child = child_options(self, opts)
        tags = args.get("tags", {})

        bucket = self._bucket(name, config.s3_bucket, tags, child)

        # no role here: each model's loader, NVMe sync and vLLM pods get roles of their own, scoped to that
        # model's prefixes (components.inference)
        self.fsx = (
            self._lustre(name, args, config.fsx, bucket, opts, versions)
            if config.fsx and args.get("fsx")
            else None
        )
        self.bucket_name = bucket.bucket
        self.bucket_arn = bucket.arn
        self.weights = ModelWeights(bucket_name=self.bucket_name, bucket_arn=self.bucket_arn)
        if self.fsx is not None:
            self.weights["fsx"] = self.fsx
        self.register_outputs(
            {
                "bucketName": self.bucket_name,
                "fsxFileSystemId": self.fsx["file_system_id"] if self.fsx else None,
            }
        )

    def _lustre(
        self,
        name: str,
        args: ModelCacheArgs,
        fsx: FsxConfig,
        bucket: aws.s3.Bucket,
        opts: pulumi.ResourceOptions | None,
        versions: Mapping[str, str] | None,
    ) -> FsxVolume:
        tags = args.get("tags", {})
        child = child_options(self, opts)
        client_sg, server_sg = self._lustre_security_groups(name, args["vpc_id"], tags, child)

        persistent = fsx.deployment_type == "PERSISTENT_2"
        file_system = aws.fsx.LustreFileSystem(
            f"{name}-lustre",
            storage_capacity=fsx.storage_capacity_gib,
            deployment_type=fsx.deployment_type,
            per_unit_storage_throughput=fsx.per_unit_storage_throughput,
            file_system_type_version=FSX_LUSTRE_VERSION,
            subnet_ids=args["subnet_id"],
            security_group_ids=[server_sg.id],
            data_compression_type="LZ4",
            # scratch file systems link to S3 at creation; persistent ones through an association below
            import_path=None if persistent else bucket.bucket.apply(lambda b: f"s3://{b}"),
            auto_import_policy=None if persistent else "NEW_CHANGED_DELETED",
            tags={**tags, "Name": f"{name}-lustre"},
            opts=child,
        )
        if persistent:
            aws.fsx.DataRepositoryAssociation(
                f"{name}-lustre-models",
                file_system_id=file_system.id,
                data_repository_path=bucket.bucket.apply(lambda b: f"s3://{b}/{spec.MODELS_PREFIX}"),
                file_system_path=f"/{spec.MODELS_PREFIX}",
                batch_import_meta_data_on_create=True,
                s3=aws.fsx.DataRepositoryAssociationS3Args(
                    auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(
                        events=["NEW", "CHANGED", "DELETED"]
                    )
                ),
                tags=tags,
                opts=child,
            )

        self._fsx_csi_driver(name, args, opts, versions)
        return FsxVolume(
            file_system_id=file_system.id,
            dns_name=file_system.dns_name,
            mount_name=file_system.mount_name,
            capacity_gib=fsx.storage_capacity_gib,
            client_security_group_id=client_sg.id,
        )

    def _bucket(
        self, name: str, s3_bucket: S3BucketConfig, tags: Mapping[str, str], child: pulumi.ResourceOptions
    ) -> aws.s3.Bucket:
        """The models' bucket: private, versioned (replaced weights expire after `noncurrentVersionDays`),
        KMS-encrypted and TLS-only (specs.model_cache.bucket_policy)."""
        bucket = aws.s3.Bucket(f"{name}-models", force_destroy=s3_bucket.force_destroy, tags=tags, opts=child)
        aws.s3.BucketPublicAccessBlock(
            f"{name}-models",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        aws.s3.BucketVersioning(
            f"{name}-models",
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
            opts=child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-models",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="aws:kms"
                    ),
                    bucket_key_enabled=True,
                )
            ],
            opts=child,
        )
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-models",
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="expire-replaced-weights",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=f"{spec.MODELS_PREFIX}/"),
                    noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                        noncurrent_days=s3_bucket.noncurrent_version_days
                    ),
                    abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                        days_after_initiation=2
                    ),
                )
            ],
            opts=child,
        )
        aws.s3.BucketPolicy(
            f"{name}-models",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(spec.bucket_policy(arn))),
            opts=child,
        )
        return bucket

    def _lustre_security_groups(
        self, name: str, vpc_id: pulumi.Input[str], tags: Mapping[str, str], child: pulumi.ResourceOptions
    ) -> tuple[aws.ec2.SecurityGroup, aws.ec2.SecurityGroup]:
        """The Lustre clients' group and the file system's, with the Lustre ports between them. Returns
        (client, server)."""
        # GPU nodes carry the client group (EC2NodeClass); the file system admits only that group and itself
        client_sg = aws.ec2.SecurityGroup(
            f"{name}-lustre-client",
            vpc_id=vpc_id,
            description="Lustre clients (GPU nodes) of the model cache",
            tags={**tags, "Name": f"{name}-lustre-client"},
            opts=child,
        )
        server_sg = aws.ec2.SecurityGroup(
            f"{name}-lustre",
            vpc_id=vpc_id,
            description="FSx for Lustre model cache: Lustre ports from GPU nodes only",
            tags={**tags, "Name": f"{name}-lustre"},
            opts=child,
        )
        for low, high in spec.LUSTRE_PORTS:
            ports = f"{low}" if low == high else f"{low}-{high}"
            for source, target, label in (
                (client_sg, server_sg, "from-clients"),
                (server_sg, server_sg, "self"),
            ):
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-lustre-{label}-{ports}",
                    security_group_id=target.id,
                    referenced_security_group_id=source.id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    description=f"Lustre {ports} {label}",
                    opts=child,
                )
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-lustre-client-{ports}",
                security_group_id=client_sg.id,
                referenced_security_group_id=server_sg.id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre {ports} from the file system",
                opts=child,
            )
        for sg, label in ((client_sg, "client"), (server_sg, "server")):
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-lustre-{label}-egress",
                security_group_id=sg.id,
                cidr_ipv4="0.0.0.0/0",
                ip_protocol="-1",
                description="all egress",
                opts=child,
            )
        return client_sg, server_sg

    def _fsx_csi_driver(
        self,
        name: str,
        args: ModelCacheArgs,
        opts: pulumi.ResourceOptions | None,
        versions: Mapping[str, str] | None,
    ) -> None:
        """The FSx CSI driver in kube-system, its controller with a Pod Identity of its own."""
        tags = args.get("tags", {})
        child = child_options(self, opts)
        association = service_account_identity(
            f"{name}-fsx-csi",
            cluster_name=args["cluster_name"],
            namespace=KUBE_SYSTEM_NAMESPACE,
            service_account=spec.FSX_CSI_CONTROLLER_SA,
            description=f"FSx CSI controller of {args['cluster_name']} (Pod Identity)",
            policy=json.dumps(spec.fsx_csi_policy()),
            tags=tags,
            opts=child,
        )
        k8s.helm.v3.Release(
            f"{name}-fsx-csi",
            name="aws-fsx-csi-driver",
            chart="aws-fsx-csi-driver",
            version=version_of(FSX_CSI_DRIVER, FSX_CSI_DRIVER.chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=FSX_CSI_DRIVER.chart.repo),
            namespace=KUBE_SYSTEM_NAMESPACE,
            values=spec.fsx_csi_values(),
            opts=child_options(self, opts, association),
        )
