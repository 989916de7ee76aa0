"""One ComponentResource per concern; what each resource looks like lives in components.specs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi


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
