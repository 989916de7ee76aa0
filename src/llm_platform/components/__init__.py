"""One ComponentResource per concern; what each resource looks like lives in components.specs."""

from __future__ import annotations

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
