"""The figures the README and docs state are the ones their commands print: each test runs the command the
doc names and compares every figure of a table or sentence with its output, on whichever page holds it
(tests/docs.py). A change to the simulator that
moves a documented figure fails here until the doc is regenerated (run the command, paste its figures).

Not checked here: timings (benchmarks/simulate_day.py prints them, machines differ), the headroom benchmark's
twelve-day table and the tuned configs' table (each takes a tune or a dozen day runs; their commands run on
small inputs in tests/test_doc_commands.py), and figures quoted from upstream sources."""

from __future__ import annotations

import json
import re
import shlex
import sys
from functools import cache
from typing import Any

import pytest

from tests import docs
from tests.conftest import run_once
from tests.test_doc_commands import COMMAND_ENV

pytestmark = pytest.mark.slow


@cache
def output(command: str) -> str:
    """stdout of `uv run python <command>` from the repository: each command runs once per session, also when
    tests/test_doc_commands.py runs the same documented command (tests/conftest.py run_once)."""
    proc = run_once([sys.executable, *shlex.split(command)], env=COMMAND_ENV, timeout=1200)
    proc.check_returncode()
    return proc.stdout


def rows(command: str) -> dict[str, dict[str, Any]]:
    return {row.get("strategy", row.get("router")): row for row in json.loads(output(command))}


SEED = "-m llm_platform.simulator --scenario seed-benchmark --json"
PROD = "-m llm_platform.simulator --stack prod --model mistral-7b --json"


def _money(x: float) -> str:
    return f"${x:,.2f}"


def test_the_readme_cost_claims_are_the_simulators() -> None:
    seed, prod = rows(SEED), rows(PROD)
    static, derived = seed["A static-8"], seed["recommended"]
    share = derived["gpu_cost_usd_per_day"] / static["gpu_cost_usd_per_day"]
    assert derived["slo_violation_pct"] < static["slo_violation_pct"]  # "with fewer misses"
    text = docs.flat()
    assert (
        f"the KEDA config the simulator derives costs {share * 100:.0f} % of static capacity "
        f"(`simulator --scenario seed-benchmark`: {_money(derived['gpu_cost_usd_per_day'])} vs "
        f"{_money(static['gpu_cost_usd_per_day'])}/day for 8 replicas all day" in text
    )
    static_prod = next(r for name, r in prod.items() if name.startswith("static-"))
    tuned = prod["stack-config"]
    share = tuned["gpu_cost_usd_per_day"] / static_prod["gpu_cost_usd_per_day"]
    assert (
        f"prod's tuned config for mistral-7b costs {share * 100:.0f} % of static capacity at its maxReplicas "
        f"(`simulator --stack prod --model mistral-7b`: {_money(tuned['gpu_cost_usd_per_day'])} vs "
        f"{_money(static_prod['gpu_cost_usd_per_day'])}/day, {tuned['slo_violation_pct']:.2f} % vs "
        f"{static_prod['slo_violation_pct']:.2f} % of requests" in text
    )


def test_the_seed_benchmark_table_and_config_are_this_run() -> None:
    seed = rows(SEED)
    table = docs.table("| strategy | peak | off-peak | P95 TTFT ms |")
    assert [r[0] for r in table] == list(seed)
    for name, peak, offpeak, ttft, misses, cost in table:
        r = seed[name]
        assert [peak, offpeak, ttft, misses, cost] == [
            str(r["peak_replicas"]), str(r["offpeak_replicas"]), f"{r['p95_ttft_ms']:,.1f}",
            f"{r['slo_violation_pct']:.3f}", f"{r['gpu_cost_usd_per_day']:.2f}",
        ], name  # fmt: skip
    documented = docs.block_after("Recommended config (derived")
    assert documented.strip() == seed["recommended"]["yaml"].strip()
    kv = float(re.search(r"kvCacheUsage: ([\d.]+)", documented).group(1))  # pyright: ignore[reportOptionalMemberAccess]
    assert f"fills only {kv * 100:.2f} % of its cache" in docs.flat()


def test_the_seed_replica_figures_are_this_run() -> None:
    summary = next(
        line for line in output("-m llm_platform.simulator --scenario seed-benchmark").splitlines()
        if line.startswith("per replica (")
    )  # fmt: skip
    itl, kv, saturation, slo_rate = re.search(  # type: ignore[union-attr]
        r"batch-1 ITL ([\d.]+) ms, ([\d,]+) KV tokens, saturates at ([\d.]+) req/s, P95 meets the SLO up to "
        r"([\d.]+) req/s",
        summary,
    ).groups()  # pyright: ignore[reportOptionalMemberAccess]
    text = docs.flat()
    assert (
        f"Per replica: batch-1 ITL {itl} ms, {kv} KV tokens, saturation {saturation} req/s, P95 meets the "
        f"SLO up to {slo_rate} req/s" in text
    )
    assert f"4-bit weights leave {kv} KV tokens" in text


def _routing_cells(row: dict[str, Any]) -> list[str]:
    ttft = row["p95_ttft_ms"]
    shown = "> 6 h (queue never drains)" if ttft > 6 * 3600 * 1000 else f"{ttft:,.0f} ms"
    return [
        f"{row['prefix_hit_rate']:.2f}", f"{row['mean_uncached_prompt_tokens']:,.0f}", shown,
        f"{row['slo_violation_pct']:.1f} %",
    ]  # fmt: skip


def test_the_routing_table_is_this_run() -> None:
    table = docs.table("| traffic | router | prefix hit |")
    runs = [
        rows("-m llm_platform.simulator.commands.routing --shared-fraction 0.8 --prefix-tokens 1500 --distinct-prefixes 100 --json"),
        rows("-m llm_platform.simulator.commands.routing --shared-fraction 0.9 --prefix-tokens 6000 --distinct-prefixes 150 --json"),
    ]  # fmt: skip
    for pair, run in zip((table[0:2], table[2:4]), runs, strict=True):
        rr, prefix = run["round-robin"], run["prefix-aware"]
        assert run["load-aware"] == {**rr, "router": "load-aware"}  # "round-robin / load-aware"
        assert run["prefix-aware-precise"] == {**prefix, "router": "prefix-aware-precise"}
        assert pair[0][2:] == [*_routing_cells(rr), _money(rr["gpu_cost_usd_per_day"])]
        saving = prefix["gpu_cost_usd_per_day"] / rr["gpu_cost_usd_per_day"] - 1
        cost = f"{_money(prefix['gpu_cost_usd_per_day'])} (\u2212{-saving * 100:.0f} %)"
        assert pair[1][2:] == [*_routing_cells(prefix), cost]


def test_the_reservation_sweep_figures_are_this_run() -> None:
    sweep = "-m llm_platform.simulator reservations --stack prod --model llama-70b --json"
    odcr = json.loads(output(sweep))["days"]
    block = json.loads(output(f"{sweep} --reserved-usd-per-hour 14.75 --max-reserved 3"))["days"]
    text = docs.flat()
    assert len({d["gpu_cost_usd_per_day"] for d in odcr}) == 1
    assert f"every count costs {_money(odcr[0]['gpu_cost_usd_per_day'])}/day" in text
    two, three = block[2], block[3]
    saving = two["gpu_cost_usd_per_day"] / block[0]["gpu_cost_usd_per_day"] - 1
    assert (
        f"2 reserved p4d (16 GPUs) cost {_money(two['gpu_cost_usd_per_day'])}/day ({saving * 100:+.1f} %)"
        in text
    )
    assert (
        f"a third (`--max-reserved 3`) adds a full day of waste ({_money(three['gpu_cost_usd_per_day'])})"
        in text
    )


def test_the_calibration_table_is_what_calibrate_prints() -> None:
    """The table, its numbered explanations and sources, exactly as `calibrate` prints them."""
    assert output("-m llm_platform.simulator calibrate").strip() in docs.text()


MULTINODE = "-m llm_platform.simulator --stack tests/fixtures/stacks/Pulumi.multinode.yaml --scale 0.2 --json"


def test_the_multi_node_cost_is_the_simulators() -> None:
    """The docs' multi-node figures (Capacity): one replica's hourly price from the catalog (2 x p5.48xlarge) and the
    day at the fixture's traffic from the simulator."""
    from llm_platform.facts.catalog import instance

    node = instance("p5.48xlarge").on_demand_usd_per_hour("us-east-1")
    row = rows(MULTINODE)["stack-config"]
    assert row["offpeak_replicas"] == row["peak_replicas"]
    assert row["gpu_cost_usd_per_day"] == pytest.approx(row["peak_replicas"] * 2 * node * 24)
    text = docs.flat()
    assert (
        f"one replica of the fixture is 2 x p5.48xlarge at {_money(node)}/h each, {_money(2 * node)}/h"
        in text
    )
    # the misses as the table the docs' command prints shows them (the JSON rounds to 3 decimals first)
    line = next(
        x for x in output(MULTINODE.removesuffix(" --json")).splitlines() if x.startswith("stack-config")
    )
    misses = line.split()[-3]
    assert float(misses) == pytest.approx(row["slo_violation_pct"], abs=0.01)
    assert (
        f"the stack's config holds {row['peak_replicas']} replica all day: {_money(row['gpu_cost_usd_per_day'])}/day, "
        f"{misses} % of requests over the SLO" in text
    )


def test_the_scale_to_zero_table_is_this_run() -> None:
    """Every row of the doc's table is the benchmark's row (stacks in order, the days in OFFICE_KINDS order)."""
    table = docs.table("| stack / model | day | $/day own |")
    printed = [
        line.split()[1:]
        for line in output("benchmarks/scale_to_zero.py").splitlines()
        if line.startswith("  ") and line.split()[0] != "day"
    ]
    documented = [["0s" if c == "-" else c.replace(" s", "s") for c in row[2:]] for row in table]
    assert documented == printed
    text = docs.flat()
    for stack in ("dev", "staging"):
        head = next(ln for ln in output("benchmarks/scale_to_zero.py").splitlines() if ln.startswith(stack))
        hold = head.split("hold ")[1].split(",")[0]
        assert f"{stack} / {head.split('/')[1].split(':')[0]} (hold {hold.replace('s', ' s')})" in text


def _secs(cell: str) -> list[int]:
    return [int(n) for n in re.findall(r"(\d+) s\b", cell)]


def test_the_from_zero_row_is_the_plans_from_zero_start() -> None:
    """The from-zero table (Capacity): each phase, the total and the hold are the stack's plan (the model's new-node
    start, `from_zero_start_s`, `from_zero_hold_s`, capped at HOLD_CAP_S with the wake it cuts); a change to the
    plan's from-zero start fails here."""
    from llm_platform.plan.zero import (
        HOLD_CAP_S,
        exceeds_hold_cap,
        from_zero_hold_s,
        from_zero_start_s,
        from_zero_wake_s,
    )
    from llm_platform.simulator.search.stacks import stack_model

    table = docs.table("| from zero: stack / model (instance, cache, image pull) |")
    assert [row[0].split(" (")[0] for row in table] == ["dev / qwen-1-5b", "staging / mistral-7b"]
    for label, node, image, weights, compile_cache, vllm, total, hold in table:
        stack, model = label.split(" (")[0].split(" / ")
        _, _, plan = stack_model(stack, model)
        b = plan.cold_start.new_node
        assert b is not None
        pull = "SOCI" if plan.image_pull == "soci" else plan.image_pull
        assert label.endswith(f"({plan.instance.instance_type}, {plan.model.cache}, {pull})"), label
        assert _secs(node) == [round(b.node_ready)], label
        assert _secs(image) == [round(b.image_pull)], label
        assert _secs(weights) == [round(x) for x in (b.node_prefetch, b.pod_fetch, b.weight_load) if x], label
        assert compile_cache.startswith("not persisted") == (plan.cache.compile_cache_prefix is None), label
        assert _secs(vllm) == [round(b.engine_init + b.readiness), round(b.engine_init), round(b.readiness)]
        assert _secs(total) == [round(from_zero_start_s(plan.cold_start))] == [round(b.total)], label
        assert _secs(hold)[0] == round(from_zero_hold_s(plan.cold_start, plan.scaling)), label
        capped = exceeds_hold_cap(plan.cold_start, plan.scaling)
        assert ("the cap" in hold) == capped, label
        if capped:  # "270 s (the cap: the wake, up to N s, outlasts it)"
            assert _secs(hold) == [round(HOLD_CAP_S), round(from_zero_wake_s(plan.cold_start, plan.scaling))]
        else:
            assert len(_secs(hold)) == 1, label


def test_the_warm_buffer_rows_are_this_run() -> None:
    """The `+buffer` rows of `scale_to_zero.py --buffer-gpus 1` (stacks in order, days in OFFICE_KINDS order)."""
    table = docs.table("| stack / model | day | $/day zero + buffer |")
    printed = [
        line.replace("(warm wakes ", "").replace(", buffer $", " ").rstrip(")").split()[1:]
        for line in output("benchmarks/scale_to_zero.py --buffer-gpus 1").splitlines()
        if "+buffer" in line
    ]
    documented = [[c.replace(" s", "s") for c in row[2:]] for row in table]
    assert [[("0s" if c == "-" else c) for c in row] for row in documented] == [
        [c for i, c in enumerate(row) if i != 0] for row in printed
    ]
    # the docs' sentence: staging's weekday wake with and without the buffer, and the buffer's $/day
    plain = docs.table("| stack / model | day | $/day own |")
    staging = next(i for i, row in enumerate(plain) if row[0].startswith("staging"))
    wait_zero, (wait_buffer, buffer_usd) = plain[staging][9], (table[staging][8], table[staging][11])
    text = docs.flat()
    assert (
        f"staging's 09:00 wake waits {wait_buffer} instead of {wait_zero}, for the node's ${buffer_usd} a weekday"
        in text
    )


SERVING_PATHS = "-m llm_platform.simulator serving-paths prod --model"
SERVING_PATH_EXAMPLES = {  # the doc's marker -> the command whose output its text block is
    "The first command above (the seed day:": f"{SERVING_PATHS} mistral-7b --day-engine",
    "The second command above:": (
        f"{SERVING_PATHS} mistral-7b --input-tokens 800 --output-tokens 150 --scale 0.2 --prefix-reuse 0.8 "
        "--working-set-gib 40"
    ),
    "The third command above:": (
        "-m llm_platform.simulator serving-paths tests/fixtures/stacks/Pulumi.reservations.yaml --model llama-70b "
        "--input-tokens 8000 --output-tokens 1000 --ttft-seconds 2 --itl-seconds 0.05"
    ),
}


@pytest.mark.parametrize("marker", list(SERVING_PATH_EXAMPLES))
def test_the_serving_paths_examples_are_this_run(marker: str) -> None:
    """Every line of each example's output block (docs/simulator/serving-paths.md) is a line the command prints."""
    printed = output(SERVING_PATH_EXAMPLES[marker]).splitlines()
    documented = docs.block_after(marker, "```text").splitlines()
    assert documented and [line for line in documented if line not in printed] == []
