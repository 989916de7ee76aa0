"""A model at zero whose from-zero wake outlasts the longest hold the gateway can keep (plan/zero.py HOLD_CAP_S).

The picker holds the waking request at most HOLD_CAP_S (270 s: AI Gateway v1.1.0's hard-coded 300 s ext_proc
message timeout, minus a margin); a wake that takes longer answers that request 503 + `Retry-After` and serves
it on the client's retry (the OpenAI SDK retries a 503 twice by default). A warning, not a blocker: a
retrying client is served, one that does not retry is not, and each retry adds the back-off to its wait.
"""

from __future__ import annotations

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
