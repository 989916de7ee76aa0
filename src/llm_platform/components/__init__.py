"""One ComponentResource per concern; what each resource looks like lives in components.specs."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any

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


def typed_options(opts: pulumi.ResourceOptions | None, former_type: str) -> pulumi.ResourceOptions:
    """`opts` for a component that registered as `former_type` (`llm-platform:<module>:<Name>`) before it
    took `llm-platform:index:<Name>`: aliases that keep an existing stack's component, and so its children,
    from being replaced.

    The engine resolves each alias on its own and joins none of them (pulumi pkg/resource/deploy/
    step_generator.go, generateAliases), so an alias `opts` already carries (LlmPlatform's children: no
    parent, as they were the stack program's top-level resources) gets a twin with the former type too. A
    child needs nothing: the engine aliases it under the old URN its parent was matched through."""
    given = [a for a in (opts.aliases or []) if isinstance(a, pulumi.Alias)] if opts else []
    former = [pulumi.Alias(type_=former_type)] + [
        pulumi.Alias(name=a.name, type_=former_type, parent=a.parent, stack=a.stack, project=a.project)
        for a in given
        if a.type_ is ... or a.type_ is None
    ]
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=former))


def given_provider(opts: pulumi.ResourceOptions | None, package: str) -> pulumi.ProviderResource | None:
    """The `package` provider (`aws`, `kubernetes`) the caller gave in `opts.provider` or `opts.providers`."""
    if opts is None:
        return None
    given: list[Any] = [opts.provider] if opts.provider is not None else []
    if isinstance(opts.providers, Mapping):
        given += list(opts.providers.values())
    elif opts.providers:
        given += list(opts.providers)
    return next((p for p in given if isinstance(p, pulumi.ProviderResource) and p.package == package), None)
