"""`python -m llm_platform.simulator reservations --stack S`: how many reserved instances minimise the day's cost.

Runs the model's deployed autoscaling (the stack's own config, `stack-config`) on the same traffic, seed and
engine once per reserved instance count, 0 up to the most nodes the model can hold at maxReplicas. Reserved
instances are prepaid for the whole day (an ODCR at the on-demand rate, a Capacity Block at
`--reserved-usd-per-hour`) and free to launch into; Karpenter buys on-demand or spot only beyond them
(simulator/serving/nodepool.py; the sweep: search/reservations.py). The cheapest count is the answer for this
traffic; the table shows what each count
costs and how often the SLO is missed, so a count that saves money by starving cold starts is visible.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from llm_platform.commandline import shown_prog
from llm_platform.simulator.commands import day_args, report
from llm_platform.simulator.commands.args import non_negative_int
from llm_platform.simulator.search.reservations import cheapest, most_useful, sweep
from llm_platform.simulator.search.stacks import stack_run
from llm_platform.simulator.traffic.traffic import load


def run(argv: Sequence[str]) -> int:
    parser = day_args.parser()  # the day's own flags, so a sweep runs exactly that day
    parser.prog = shown_prog("python -m llm_platform.simulator reservations")
    parser.add_argument(
        "--max-reserved", type=non_negative_int, default=None,
        help="largest reserved instance count to try (default: the nodes the model fills at maxReplicas)",
    )  # fmt: skip
    args = day_args.parse(parser, argv)
    if args.stack is None:
        raise ValueError("reservations needs STACK: it sweeps a stack model's reserved capacity")
    if args.reserved_instances is not None:
        raise ValueError("--reserved-instances is what this command sweeps; use --max-reserved")
    traffic = load(args.traffic or "builtin:seed-day", args.seed, day_args.mix(args), args.scale or 1.0)
    stack = stack_run(
        args.stack, args.model, traffic, args.seed, args.image,
        0.6 if args.spot_discount is None else args.spot_discount,
        args.spot_interruptions_per_hour or 0.0, args.scrape_interval, args.memory_target,
        args.prefix_hit_rate, 0, args.reserved_usd_per_hour, args.reserved_until,
    )  # fmt: skip
    top = most_useful(stack) if args.max_reserved is None else args.max_reserved
    days = sweep(stack, range(top + 1))
    best = cheapest(days)
    if args.json:
        print(json.dumps({"best": best.row(), "days": [d.row() for d in days]}, indent=2))
        return 0
    instance = stack.instance
    console = report.console()
    rate = stack.setup.config.capacity.reserved_price_per_hour
    title = (
        f"{args.stack}/{stack.model_name} on {instance.instance_type}, traffic {traffic.name}: "
        f"reserved instances at ${rate:,.2f}/h prepaid, on-demand/spot beyond"
    )
    headers = ("reserved", "GPUs", "GPU $/day", "prepaid $/day", "SLO miss %", "P95 TTFT ms", "node-h")
    rows = [
        (
            f"{d.reserved_instances}{' *' if d is best else ''}",
            str(d.reserved_gpus),
            f"{d.cost_usd:,.2f}",
            f"{d.prepaid_usd:,.2f}",
            f"{d.slo_violation_pct:.2f}",
            f"{d.p95_ttft_ms:,.0f}",
            f"{d.node_hours:.1f}",
        )
        for d in days
    ]
    report.print_rows(title, headers, rows, console, first_left=False)
    none = days[0]
    console.print(
        f"cheapest: {best.reserved_instances} reserved {instance.instance_type} ({best.reserved_gpus} GPUs), "
        f"${best.cost_usd:,.2f}/day vs ${none.cost_usd:,.2f}/day without reservations "
        f"({(best.cost_usd / none.cost_usd - 1) * 100:+.1f} %)",
        markup=False,
    )
    if stack.note:
        console.print(stack.note, markup=False)
    return 0
