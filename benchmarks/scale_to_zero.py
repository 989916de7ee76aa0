"""Scale-to-zero on dev and staging over office days (prints figures, asserts nothing).

For each stack and each day of simulator/traffic/office.py (weekday and weekend, with and without a lone 03:00
request), prints the floor's GPU $/day and the requests lost (503 on the client's last attempt) with the
stack's own minReplicas and with minReplicas 0 at the cooldownPeriod the tuner picks, the requests served on a
retry (503 after the hold, retried after Retry-After: a wake over the 270 s hold cap), the held requests' wait
p50/max (from the first send) and the longest wait of a retried one, against the hold. A model scales to zero only behind the gateway (whose
requests wake it: config/schema/stack.py); a stack without it is scored as if `gateway.enabled: true`, and says so.

With `--buffer-gpus N`, each day also gets a `+buffer` row: minReplicas 0 with N warm GPUs of the model's pool
held Monday-Friday 08:30-18:00 UTC by the pool's headroom placeholders (a `headroom.schedule` window, the
platform's buffer: serving/warm_buffer.py), so a wake in business hours starts on a warm node; the weekday
rows are a Monday, the weekend rows a Saturday. Its $/day includes the placeholders' nodes.

    uv run python benchmarks/scale_to_zero.py [--stacks dev,staging] [--rate 0.05] [--seed 0] [--buffer-gpus 1]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from llm_platform.commandline import ArgumentParser
from llm_platform.config.schema import Headroom, HeadroomWindow
from llm_platform.plan.headroom import headroom_plan
from llm_platform.plan.model import ModelPlan
from llm_platform.simulator.commands.args import non_negative_int
from llm_platform.simulator.search.stacks import stack_model
from llm_platform.simulator.search.zero_tune import score, tune_zero
from llm_platform.simulator.serving.warm_buffer import WarmBuffer
from llm_platform.simulator.serving.zero import ZeroSpec
from llm_platform.simulator.traffic.office import DAY_SECONDS, OFFICE_KINDS, office_day

# the business-hours buffer window (KEDA cron, UTC): warm before the 09:00 office start, its refill included
BUFFER_WINDOW = ("30 8 * * 1-5", "0 18 * * 1-5")
MONDAY, SATURDAY = datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 5, tzinfo=UTC)


def warm_buffer(plan: ModelPlan, gpus: int, kind: str) -> WarmBuffer:
    """The model's pool with `gpus` warm GPUs in BUFFER_WINDOW (the schema's `headroom`), over one office day."""
    if gpus % plan.replica_gpus:
        raise SystemExit(
            f"--buffer-gpus {gpus}: {plan.name} replicas take {plan.replica_gpus} GPUs each; allowed: a multiple"
        )
    start, end = BUFFER_WINDOW
    window = HeadroomWindow(start=start, end=end, timezone="UTC", gpus=gpus)
    pool = plan.pool.model_copy(update={"headroom": Headroom(gpus=0, schedule=[window])})
    headroom = headroom_plan(pool, [plan])
    assert headroom is not None
    day = MONDAY if kind.startswith("weekday") else SATURDAY
    return WarmBuffer.from_plan(headroom, plan.name, day, DAY_SECONDS, plan.consolidate_after_s)


def main() -> None:
    p = ArgumentParser(
        prog="python benchmarks/scale_to_zero.py", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--stacks", default="dev,staging")
    p.add_argument("--rate", type=float, default=0.05, help="business-hours requests/s")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--buffer-gpus", type=non_negative_int, default=0,
        help="also score minReplicas 0 with this many warm GPUs in business hours (Mon-Fri 08:30-18:00 UTC)",
    )  # fmt: skip
    args = p.parse_args()
    days = [office_day(k, args.rate, args.seed + i) for i, k in enumerate(OFFICE_KINDS)]
    for stack in args.stacks.split(","):
        cfg, _, plan = stack_model(stack, None)
        if not cfg.gateway.enabled:
            print(
                f"{stack}: no gateway in the stack file; scored as with `gateway.enabled: true`, which zero needs",
                file=sys.stderr,
            )
            cfg = cfg.model_copy(update={"gateway": cfg.gateway.model_copy(update={"enabled": True})})
        spec = ZeroSpec.from_plan(plan)
        best, _ = tune_zero(cfg, plan, days, DAY_SECONDS)
        print(
            f"{stack}/{plan.name}: minReplicas {plan.scaling.min_replicas}, from-zero start "
            f"{spec.start_s:.0f}s, hold {spec.hold_s:.0f}s, tuned minReplicas {best.min_replicas} "
            f"cooldownPeriod {best.cooldown_s:.0f}s, {spec.attempts} attempts {spec.retry_after_s:.0f}s apart"
        )
        print(
            f"  {'day':<19} {'$/day own':>9} {'$/day zero':>10} {'saved':>6} {'lost':>4} {'retried':>7} "
            f"{'held':>4} {'wait p50':>8} {'wait max':>8} {'retry wait':>10}"
        )
        for kind, d in zip(OFFICE_KINDS, days, strict=True):
            own = score(plan, [d], DAY_SECONDS).results[0]
            zero = score(plan, [d], DAY_SECONDS, best.min_replicas, best.cooldown_s).results[0]
            saved = 100 * (1 - zero.cost_usd / own.cost_usd) if own.cost_usd else 0.0
            print(
                f"  {kind:<19} {own.cost_usd:>9.2f} {zero.cost_usd:>10.2f} {saved:>5.0f}% "
                f"{zero.lost:>4} {zero.retried:>7} {zero.held:>4} {zero.wait_p50:>7.0f}s {zero.wait_max:>7.0f}s "
                f"{zero.retried_wait_max:>9.0f}s"
            )
            if args.buffer_gpus:
                warm = [warm_buffer(plan, args.buffer_gpus, kind)]
                buf = score(plan, [d], DAY_SECONDS, 0, best.cooldown_s, warm).results[0]
                saved = 100 * (1 - buf.cost_usd / own.cost_usd) if own.cost_usd else 0.0
                print(
                    f"  {kind + '+buffer':<19} {own.cost_usd:>9.2f} {buf.cost_usd:>10.2f} {saved:>5.0f}% "
                    f"{buf.lost:>4} {buf.retried:>7} {buf.held:>4} {buf.wait_p50:>7.0f}s {buf.wait_max:>7.0f}s "
                    f"{buf.retried_wait_max:>9.0f}s (warm wakes {buf.warm_wakes}/{buf.wakes}, buffer ${buf.buffer_usd:.2f})"
                )


if __name__ == "__main__":
    main()
