"""Scale-to-zero on dev and staging over office days (prints figures, asserts nothing).

For each stack and each day of simulator/traffic/office.py (weekday and weekend, with and without a lone 03:00
request), prints the floor's GPU $/day and the requests lost (503 after the hold) with the stack's own
minReplicas and with minReplicas 0 at the cooldownPeriod the tuner picks, then the held requests' wait
p50/max against the from-zero budget (the hold). A model scales to zero only behind the gateway (whose
requests wake it: config/schema.py); a stack without it is scored as if `gateway.enabled: true`, and says so.

    uv run python benchmarks/scale_to_zero.py [--stacks dev,staging] [--rate 0.05] [--seed 0]
"""

from __future__ import annotations

import sys

from llm_platform.simulator.search.stacks import stack_model
from llm_platform.simulator.search.zero_tune import score, tune_zero
from llm_platform.simulator.serving.zero import ZeroSpec
from llm_platform.simulator.traffic.office import DAY_SECONDS, OFFICE_KINDS, office_day
from llm_platform.tools.cli import ArgumentParser


def main() -> None:
    p = ArgumentParser(
        prog="python benchmarks/scale_to_zero.py", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--stacks", default="dev,staging")
    p.add_argument("--rate", type=float, default=0.05, help="business-hours requests/s")
    p.add_argument("--seed", type=int, default=0)
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
            f"cooldownPeriod {best.cooldown_s:.0f}s"
        )
        print(
            f"  {'day':<13} {'$/day own':>9} {'$/day zero':>10} {'saved':>6} {'lost':>4} "
            f"{'held':>4} {'wait p50':>8} {'wait max':>8}"
        )
        for kind, d in zip(OFFICE_KINDS, days, strict=True):
            own = score(plan, [d], DAY_SECONDS).results[0]
            zero = score(plan, [d], DAY_SECONDS, best.min_replicas, best.cooldown_s).results[0]
            saved = 100 * (1 - zero.cost_usd / own.cost_usd) if own.cost_usd else 0.0
            print(
                f"  {kind:<13} {own.cost_usd:>9.2f} {zero.cost_usd:>10.2f} {saved:>5.0f}% "
                f"{zero.lost:>4} {zero.held:>4} {zero.wait_p50:>7.0f}s {zero.wait_max:>7.0f}s"
            )


if __name__ == "__main__":
    main()
