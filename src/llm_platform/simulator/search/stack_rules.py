"""The stack file's own rules for a tuned candidate, and the pool gpuLimit a tuned maxReplicas needs."""

from __future__ import annotations

import copy
from collections.abc import Callable

from llm_platform.config.loader import ConfigError, Stack, parse, read_stack, stack_region
from llm_platform.config.schema import Autoscaling, Headroom
from llm_platform.simulator.search.stacks import StackRun
from llm_platform.simulator.search.yaml_out import go_duration


def stack_accepts(
    stack: Stack, run: StackRun
) -> Callable[[Autoscaling, int | None, Headroom | None, float | None], str | None]:
    """A check of a candidate against the stack file's own rules (e.g. prod keeps minReplicas >= 2, windows
    within min/max, headroom within gpuLimit): the candidate's autoscaling, a grown pool gpuLimit and the
    pool's headroom put in the file's values and validated as `pulumi up` would; returns the first problem,
    None when the stack accepts it."""
    raw, _ = read_stack(stack)
    region = stack_region(stack)

    def check(
        autoscaling: Autoscaling,
        gpu_limit: int | None,
        headroom: Headroom | None,
        consolidate_after: float | None = None,
    ) -> str | None:
        values = copy.deepcopy(raw)
        model = next(m for m in values["models"] if m["name"] == run.model_name)
        model["autoscaling"] = autoscaling.model_dump(by_alias=True, exclude_none=True)
        pool = next(p for p in values["gpuNodePools"] if p["name"] == run.plan.pool.name)
        if gpu_limit is not None:
            pool["gpuLimit"] = gpu_limit
        pool.pop("headroom", None)
        if consolidate_after is not None:
            pool["consolidateAfter"] = go_duration(consolidate_after)
        if headroom is not None:
            pool["headroom"] = headroom.model_dump(by_alias=True, exclude_none=True)
        try:
            parse(values, region=region)
        except ConfigError as exc:
            return str(exc).splitlines()[0]
        return None

    return check


def pool_gpu_limit(run: StackRun, max_replicas: int) -> int | None:
    """The pool gpuLimit a tuned maxReplicas needs (every model of the pool at maxReplicas); None: it fits."""
    extra = (max_replicas - run.plan.scaling.max_replicas) * run.plan.replica_gpus - max(
        0, run.plan.pool_headroom_gpus
    )
    return run.plan.pool.gpu_limit + extra if extra > 0 else None
