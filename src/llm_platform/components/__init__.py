"""One ComponentResource per concern; what each resource looks like lives in components.specs."""

from __future__ import annotations

import importlib
import warnings

import pulumi

# The AWS SDK's modules the components use (`aws.<module>.<Resource>`; tests/package/test_public_api.py keeps
# the list whole). pulumi-aws loads each lazily, on first use.
AWS_MODULES = ("cloudwatch", "ec2", "eks", "fsx", "iam", "kms", "s3", "sqs", "vpc")


def _load_cloud_sdks() -> None:
    """Load the cloud SDKs' modules once, here, with their own import-time DeprecationWarnings ignored.

    Their generated modules warn when they are loaded about resources of theirs this package never uses
    (pulumi-aws's s3 `*V2` resources and ec2 `EncryptionControl`, pulumi-eks's `NodeGroup`): 26 warnings in
    a user's pytest run. Only warnings raised by those SDKs' modules, while loading them, are ignored; a
    warning the package's or the user's own code raises, then or later, is not."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"pulumi_(aws|eks)(\.|$)")
        importlib.import_module("pulumi_eks")
        for name in AWS_MODULES:
            # a lazy module runs on its first attribute use (not its `__dict__` or `__name__`)
            getattr(importlib.import_module(f"pulumi_aws.{name}"), "__all__", None)


_load_cloud_sdks()


def child_options(
    parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, *depends_on: pulumi.Resource
) -> pulumi.ResourceOptions:
    """Options for a component's children: parented to it, and waiting for whatever the component was told
    to wait for (Pulumi does not pass a component's `depends_on` down to its children)."""
    inherited = opts.depends_on if opts else None
    if inherited is None:
        waits: list = []
    elif isinstance(inherited, pulumi.Resource):
        waits = [inherited]
    else:
        waits = list(inherited)  # type: ignore[arg-type]
    return pulumi.ResourceOptions(parent=parent, depends_on=[*waits, *depends_on])
