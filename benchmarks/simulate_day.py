"""How long one simulated 24 h day at the seed's load takes (target: under 5 s on one core).

Prints figures, asserts nothing: wall time per phase and per strategy (best of N runs), requests simulated
per second, and each strategy's time as a ratio to the static strategy in the same run (the loop with no
controller, i.e. the baseline cost of the serving model and the summary).

    uv run python benchmarks/simulate_day.py [--repeat 3]
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar, cast

# one core: keep BLAS/numpy single-threaded (set before numpy is imported)
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

from llm_platform.commandline import ArgumentParser  # noqa: E402
from llm_platform.simulator.commands.args import positive_int  # noqa: E402
from llm_platform.simulator.commands.progress import track  # noqa: E402
from llm_platform.simulator.controllers.strategies import Strategy  # noqa: E402
from llm_platform.simulator.day.engine import simulate  # noqa: E402
from llm_platform.simulator.search.scenarios import seed_setup, seed_strategies  # noqa: E402

T = TypeVar("T")


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[float, T]:
    """Best wall time of `repeat` calls (at least one) and the last result."""
    timings, out = [], None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        out = fn()
        timings.append(time.perf_counter() - start)
    return min(timings), cast(T, out)


def main() -> None:
    parser = ArgumentParser(
        prog="python benchmarks/simulate_day.py", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--repeat", type=positive_int, default=3, help="runs per figure, the best kept")
    args = parser.parse_args()
    t_setup, setup = best_of(args.repeat, lambda: seed_setup(0))
    requests = len(setup.traffic)
    print(f"seed day: {requests:,} requests; traffic + replica table: {t_setup:.2f} s")
    strategies = seed_strategies(setup)
    times: dict[str, float] = {}
    with track("days simulated", len(strategies) * args.repeat, "days") as progress:  # on stderr

        def day(strategy: Strategy) -> object:
            out = simulate(setup.traffic, setup.table, strategy, setup.config)
            progress.advance()
            return out

        for strategy in strategies:
            times[strategy.name], _ = best_of(args.repeat, lambda s=strategy: day(s))
    base = times[strategies[0].name]
    print(f"{'strategy':<20} {'day (s)':>8} {'requests/s':>12} {'x static':>9}")
    for name, t in times.items():
        print(f"{name:<20} {t:8.2f} {requests / t:12,.0f} {t / base:9.2f}")
    worst = max(times.values())
    print(f"slowest day incl. setup: {worst + t_setup:.2f} s (target < 5 s)")


if __name__ == "__main__":
    main()
