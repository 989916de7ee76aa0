"""A model at zero whose from-zero wake outlasts the longest hold the gateway can keep (plan/zero.py HOLD_CAP_S),
or whose wake's arrivals the picker cannot hold in its byte bound.

The picker holds the waking request at most HOLD_CAP_S (270 s: AI Gateway v1.1.0's hard-coded 300 s ext_proc
message timeout, minus a margin); a wake that takes longer answers that request 503 + `Retry-After` and serves
it on the client's retry (the OpenAI SDK retries a 503 twice by default). A warning, not a blocker: a
retrying client is served, one that does not retry is not, and each retry adds the back-off to its wait.

The picker holds a wake's expected arrivals (plan/gateway.py `at_zero`: the expected rate at zero x the hold x
WAKE_HOLD_MARGIN, split over the pickers), but also at most QUEUE_MAX_BYTES of bodies per picker: where that
many prompts of maxModelLen tokens (HELD_BYTES_PER_TOKEN each) exceed it, the byte bound answers the rest of a
wake 503 before the count does. A warning with the numbers.
"""

from __future__ import annotations

from llm_platform.components.specs.inference_pool import HELD_BYTES_PER_TOKEN, QUEUE_MAX_BYTES, QUEUE_MAX_MIB
from llm_platform.plan.gateway import WAKE_HOLD_MARGIN
from llm_platform.plan.zero import HOLD_CAP_S, RETRY_AFTER_S
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.view import RenderView

CHECK = "zero"
# what shortens a from-zero start (docs/capacity.md, cold start: the compile cache is persisted only in a pool of one GPU
# model, and weights from the node's cache beat a streamed or Hub download)
SHORTER_START = (
    "a warm buffer in business hours (the pool's `headroom.schedule`: a wake then starts on a warm node), "
    "the FSx or NVMe cache path (`cache: fsx` or `nvme`), a pool of one GPU model (its compile cache is "
    "persisted), or a smaller image"
)


def zero(view: RenderView) -> list[Finding]:
    return _wake_outlasts_hold(view) + _wake_outgrows_bytes(view)


def _wake_outgrows_bytes(view: RenderView) -> list[Finding]:
    out = []
    for name, (queue, max_model_len) in sorted(view.zero_queues.items()):
        wake = queue.wake_arrivals or 0
        per_picker_mib = queue.held_per_picker * max_model_len * HELD_BYTES_PER_TOKEN / 2**20
        if per_picker_mib <= QUEUE_MAX_MIB:
            continue
        fits = int(QUEUE_MAX_MIB * 2**20 // (max_model_len * HELD_BYTES_PER_TOKEN))
        out.append(
            Finding(
                "warning",
                CHECK,
                f"model {name}",
                "autoscaling.wakeRequestsPerSecond",
                f"{queue.wake_requests_per_second:g} requests/s while at zero x its {queue.from_zero_hold_s:.0f} s "
                f"hold x {WAKE_HOLD_MARGIN} = {wake} requests held per wake, {queue.held_per_picker} per picker; "
                f"at maxModelLen {max_model_len} (~{HELD_BYTES_PER_TOKEN} bytes a token) that is "
                f"{per_picker_mib:.0f} MiB of bodies, over the picker's {QUEUE_MAX_BYTES} byte bound, which "
                f"holds ~{fits} such prompts: the rest of a wake gets a 503; lower the expected rate, or keep a "
                "replica (minReplicas 1, or pre-warm windows for the busy hours)",
            )
        )
    return out


def _wake_outlasts_hold(view: RenderView) -> list[Finding]:
    return [
        Finding(
            "warning",
            CHECK,
            f"model {name}",
            "autoscaling.minReplicas",
            f"0, and its from-zero wake ({wake:.0f} s: one scrape + one pollingInterval + the new-node start) "
            f"exceeds the {HOLD_CAP_S:.0f} s the gateway can hold a request (AI Gateway's 300 s ext_proc "
            f"message timeout): the waking request gets a 503 with Retry-After {RETRY_AFTER_S} s and is served "
            f"only on a client retry; shorten the start with {SHORTER_START}",
        )
        for name, wake in sorted(view.from_zero_wakes.items())
        if wake > HOLD_CAP_S
    ]
