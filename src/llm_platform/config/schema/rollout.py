"""A model's progressive rollout: `models[].rollout: {strategy, steps, stepSeconds, analysis, candidate}`.

The candidate (`candidate: {image, extraArgs}`) is the version to move to; the model's own `image` and
`extraArgs` stay the version that serves now until the rollout is promoted, after which the candidate's values
move into the model and `candidate` is removed. Argo Rollouts (facts/addons.py ARGO_ROLLOUTS) shifts the traffic
between the model's two InferencePools (stable, canary) in `steps` (the canary's share of new requests, in
percent), waits `stepSeconds` at each and aborts back to the stable version when the analysis fails on the
canary's own metrics (plan/rollout.py, components/specs/rollout.py, docs/rollouts.md).

`blueGreen`: the candidate starts at the stable version's full size with no traffic, then takes all of it at
once and is analysed for `stepSeconds` before the old version goes; `steps` is not used.

Limits: the model's weights stay its `huggingFaceId` at the revision its cache synced (the cache has no
revision pin to roll); a multi-node model (a LeaderWorkerSet) and a model without the gateway cannot roll out
this way.
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

from pydantic import AfterValidator, Field, model_validator

from llm_platform.config.schema.base import Problems, RuleError, Schema


def _pinned(value: str) -> str:
    repo, _, tag = value.rpartition(":")
    if "@sha256:" in value:
        return value
    if not repo or "/" in tag or tag in ("", "latest") or tag.startswith("latest-"):
        raise ValueError(
            f"{value!r} is not pinned; give an explicit version tag such as 'vllm/vllm-openai:v0.31.0'"
        )
    return value


class RolloutAnalysis(Schema):
    """What the canary must hold at every analysis run; unset latencies default to the model's `slo`."""

    ttft_p95_seconds: float | None = Field(default=None, gt=0)
    itl_p95_seconds: float | None = Field(default=None, gt=0)
    # requests the canary's endpoint picker answered with an error (not counting its 429s), of all it got
    max_error_rate: float = Field(default=0.01, ge=0, lt=1)
    # requests the canary's picker turned away with 429 (queue full or held too long), of all it got
    max_throttle_rate: float = Field(default=0.05, ge=0, lt=1)
    # failed measurements before the rollout aborts (Argo Rollouts `failureLimit`)
    failure_limit: int = Field(default=1, ge=0, le=10)
    # how often the analysis measures (Argo Rollouts `interval`), and the rate window of its queries
    interval_seconds: int = Field(default=60, ge=30, le=600)


class RolloutCandidate(Schema):
    """The version to roll out: what differs from the model's own `image` and `extraArgs`."""

    image: Annotated[str, AfterValidator(_pinned)] | None = None
    extra_args: list[str] | None = None


class ModelRollout(Schema):
    strategy: Literal["canary", "blueGreen"] = "canary"
    # the canary's share of new requests at each step, in percent, rising; 100 comes after the last step
    steps: list[int] | None = None
    step_seconds: int = Field(default=600, ge=60, le=86400)
    analysis: RolloutAnalysis = Field(default_factory=RolloutAnalysis)
    candidate: RolloutCandidate | None = None

    @model_validator(mode="after")
    def _steps_rise(self) -> ModelRollout:
        problems = Problems()
        with problems.check():
            check_steps(self.strategy, self.steps)
        problems.raise_all()
        return self

    @property
    def weights(self) -> tuple[int, ...]:
        """The canary's traffic share at each step (blueGreen: all of it in one step)."""
        if self.strategy == "blueGreen":
            return (100,)
        return tuple(self.steps) if self.steps else DEFAULT_STEPS


DEFAULT_STEPS = (5, 25, 50)


def check_steps(strategy: str, steps: list[int] | None) -> None:
    if steps is None:
        return
    if strategy == "blueGreen":
        raise RuleError(
            ("steps",),
            steps,
            "is for strategy canary; blueGreen moves all traffic in one step; allowed: remove steps, or "
            "strategy: canary",
        )
    if not steps:
        raise RuleError(("steps",), steps, "is empty; allowed: percentages such as [5, 25, 50]")
    for i, weight in enumerate(steps):
        if not 1 <= weight <= 99:
            raise RuleError(
                ("steps", i),
                weight,
                "is not a canary share; allowed: 1 to 99 (100 is the promotion after the last step)",
            )
        if i and weight <= steps[i - 1]:
            raise RuleError(
                ("steps", i),
                weight,
                f"does not rise above the step before ({steps[i - 1]}); allowed: rising percentages",
            )


def check_candidate(
    rollout: ModelRollout, image: str, extra_args: list[str], reserved_flags: tuple[str, ...]
) -> None:
    """The candidate changes something, and its args keep the platform's own flags out (the model's rule)."""
    candidate = rollout.candidate
    if candidate is None:
        return
    if candidate.image in (None, image) and candidate.extra_args in (None, extra_args):
        raise RuleError(
            ("candidate",),
            candidate.model_dump(by_alias=True, exclude_none=True),
            f"is the version that serves now (image {image}, extraArgs {extra_args}); allowed: a new image "
            "or new extraArgs, or remove candidate",
        )
    for i, arg in enumerate(candidate.extra_args or []):
        if str(arg).split("=", 1)[0] in reserved_flags:
            raise RuleError(
                ("candidate", "extraArgs", i),
                arg,
                "is not allowed: the platform writes vLLM's LoRA flags itself from the model's adapters",
            )


class RolledModel(Protocol):
    """What the rollout rules read of a model (config/schema/models.py ModelConfig)."""

    @property
    def image(self) -> str: ...
    @property
    def extra_args(self) -> list[str]: ...
    @property
    def pipeline_parallel_size(self) -> int: ...
    @property
    def rollout(self) -> ModelRollout | None: ...
    @property
    def disaggregation(self) -> object | None: ...


def check_model_rollout(
    at: tuple[str | int, ...],
    model: RolledModel,
    *,
    gateway_enabled: bool,
    gateway_known: bool,
    reserved_flags: tuple[str, ...] = (),
) -> None:
    """A rollout needs the gateway (its two InferencePools and the weighted route) and a Deployment's pods
    (Argo Rollouts runs ReplicaSets, not LeaderWorkerSet groups); every broken rule is raised."""
    rollout = model.rollout
    if rollout is None:
        return
    problems = Problems()
    with problems.check():
        if gateway_known and not gateway_enabled:
            raise RuleError(
                (*at, "rollout"),
                "rollout",
                "needs the gateway: the versions are two InferencePools behind its weighted HTTPRoute; "
                "allowed: gateway.enabled: true, or remove rollout",
            )
    with problems.check():
        if model.disaggregation is not None:
            raise RuleError(
                (*at, "rollout"),
                "rollout",
                "is not supported for a disaggregated model: Argo Rollouts takes over one Deployment, and a "
                "P/D model has a prefill and a decode Deployment; allowed: remove rollout, or remove "
                "disaggregation",
            )
    with problems.check():
        if model.pipeline_parallel_size > 1:
            raise RuleError(
                (*at, "rollout"),
                "rollout",
                "is not supported for a multi-node model (pipelineParallelSize > 1): Argo Rollouts runs "
                "ReplicaSets, not LeaderWorkerSet groups; allowed: remove rollout",
            )
    with problems.check():
        try:
            check_candidate(rollout, model.image, model.extra_args, reserved_flags)
        except RuleError as exc:
            raise RuleError((*at, "rollout", *exc.loc), exc.value, exc.message) from None
    problems.raise_all()
