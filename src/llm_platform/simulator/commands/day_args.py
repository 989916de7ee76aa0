"""The day command's flags, shared by the commands that run that same day (`reservations` sweeps it).

DESCRIPTION is `python -m llm_platform.simulator --help`'s text."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from llm_platform.commandline import ArgumentParser
from llm_platform.simulator.commands.args import (
    add_stack,
    clock_time,
    fraction,
    non_negative_float,
    non_negative_int,
    png_path,
    positive_float,
    positive_int,
    take_stack,
)
from llm_platform.simulator.commands.overload_args import CLIENTS
from llm_platform.simulator.traffic.traffic import HistogramMix, TokenMix, histogram_mix

DESCRIPTION = """\
`python -m llm_platform.simulator`: cost per day and SLO misses of autoscaling strategies, before deploying them.

Commands: (none) simulate a day; `capacity` one replica at a concurrency; `calibrate` the calibration table;
`tune` the cheapest config under a miss target on every given day (simulator/search/tune.py); `reservations` the
day's cost over reserved instance counts (how many reserved GPUs minimise cost, simulator/search/reservations.py);
`replay` a past day (Prometheus or an export): the deployed config's forecast next to the actual cost and misses;
`serving-paths` aggregated vs prefill/decode disaggregation vs a CPU KV tier vs both for one model and day.
"""

PROG = "python -m llm_platform.simulator"

STACK_ONLY = (
    "model", "image", "spot_discount", "spot_interruptions_per_hour", "scrape_interval", "reserved_instances",
    "reserved_usd_per_hour", "reserved_until",
)  # fmt: skip


def add_traffic_options(p: argparse.ArgumentParser) -> None:
    """The traffic day and its token lengths, as `load` and `mix` read them: the day command's and every
    command that simulates a day its way (serving-paths)."""
    p.add_argument(
        "--traffic", help="builtin:seed-day (default), a CSV (minute,requests_per_second or a request trace) "
        "or a Prometheus query_range JSON export",
    )  # fmt: skip
    p.add_argument(
        "--input-tokens", type=positive_float, help="median prompt tokens (rate traffic; default 128)"
    )
    p.add_argument(
        "--output-tokens", type=positive_float, help="median output tokens (rate traffic; default 96)"
    )
    p.add_argument("--input-spread", type=non_negative_float, help="lognormal sigma of prompt lengths (0.6)")
    p.add_argument("--output-spread", type=non_negative_float, help="lognormal sigma of output lengths (0.5)")
    p.add_argument(
        "--token-histogram", help="Prometheus JSON of vllm:request_prompt_tokens_bucket and "
        "vllm:request_generation_tokens_bucket: lengths drawn from those histograms",
    )  # fmt: skip
    p.add_argument("--scale", type=positive_float, help="multiply the traffic's request rate (rate traffic)")


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description=DESCRIPTION)
    src = p.add_mutually_exclusive_group()
    add_stack(p, src)
    src.add_argument("--scenario", choices=["seed-benchmark"], help="a built-in scenario (instead of STACK)")
    p.add_argument("--model", help="model name in the stack (default: the first)")
    add_traffic_options(p)
    p.add_argument("--prefix-hit-rate", type=fraction, default=0.0, help="fraction of prompt tokens cached")
    p.add_argument(
        "--image",
        choices=["registry", "soci", "prebaked"],
        help="what-if: vLLM image pull on new nodes (stack; default as deployed: soci on al2023 pools)",
    )
    p.add_argument(
        "--spot-discount", type=fraction, help="spot = on-demand x (1 - discount); spot pools only"
    )
    p.add_argument(
        "--spot-interruptions-per-hour", type=non_negative_float, help="per spot node; spot pools only"
    )
    p.add_argument(
        "--scrape-interval",
        type=positive_int,
        help="what-if: Prometheus scrape interval, seconds (stack; default as deployed: the PodMonitor's)",
    )
    p.add_argument(
        "--reserved-instances", type=non_negative_int,
        help="instances of the pool's capacity reservations: prepaid all day, free to launch into (stack; 0)",
    )  # fmt: skip
    p.add_argument(
        "--reserved-usd-per-hour", type=positive_float,
        help="prepaid $/h of one reserved instance (stack; default on-demand, what an ODCR bills; a Capacity Block's price)",
    )  # fmt: skip
    p.add_argument(
        "--reserved-until", type=clock_time, metavar="HH:MM",
        help="the Capacity Block ends then (first day of the traffic): paid up to it, its nodes drained 40 min "
        "before, replacements on-demand/spot with a cold start (stack; default: outlasts the traffic)",
    )  # fmt: skip
    p.add_argument("--memory-target", type=fraction, default=0.9, help="HPA-on-GPU-memory target (fraction)")
    p.add_argument(
        "--client", choices=tuple(CLIENTS), default="openai",
        help="openai: openai-python's defaults (600 s to the first token, 2 retries, backoff 0.5 s doubling to 8 s); "
        "vllm-bench: one attempt, 6 h timeout",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--gpu-node-loss", action="store_true",
        help="what-if: the GPU node serving the most replicas fails at the busiest minute (first strategy): "
        "the SLO misses it adds and the warm headroom that would cover it",
    )  # fmt: skip
    p.add_argument(
        "--json", action="store_true", help="JSON rows with per-day figures and the per-minute timeline"
    )
    p.add_argument("--plot", type=png_path, help="write the day's timeline to this PNG")
    p.add_argument(
        "--explain", action="store_true",
        help="print the inputs the simulator runs for the model as deployed (ScaledObject, scrape, cold start) and stop",
    )  # fmt: skip
    return p


def parse(p: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """The day's arguments: STACK (or --stack) or --scenario, one of them."""
    args = p.parse_args(argv)
    if args.stack_arg is not None and args.scenario is not None:
        p.error("argument --scenario: not allowed with STACK")
    take_stack(p, args, required=False)
    if args.stack is None and args.scenario is None:
        p.error("one of STACK (or --stack) and --scenario is required")
    return args


def mix(args: argparse.Namespace) -> TokenMix | HistogramMix | None:
    if args.token_histogram:
        spread = [
            f for f in ("input_tokens", "output_tokens", "input_spread", "output_spread") if getattr(args, f)
        ]
        if spread:
            raise ValueError(f"--token-histogram sets the lengths; drop --{spread[0].replace('_', '-')}")
        return histogram_mix(args.token_histogram)
    given = {f: getattr(args, f) for f in ("input_tokens", "output_tokens", "input_spread", "output_spread")}
    if all(v is None for v in given.values()):
        return None
    base = TokenMix()
    return TokenMix(
        input_median=given["input_tokens"] or base.input_median,
        input_sigma=base.input_sigma if given["input_spread"] is None else given["input_spread"],
        output_median=given["output_tokens"] or base.output_median,
        output_sigma=base.output_sigma if given["output_spread"] is None else given["output_spread"],
    )
