"""How long the test suite takes: runs `pytest` (the test command scripts/test runs, any extra arguments passed on) in
a child process and prints its wall time, the CPU time it used (user + sys of pytest and everything it
started: xdist workers, the simulator's process pool, subprocesses), the ten slowest tests and the test time
by directory.

Prints figures, asserts nothing. CPU time is the steadier figure on a machine shared with other work: wall
time grows with the load, CPU time barely does; on an idle machine with N cores the wall time approaches
CPU time / N. A virtual machine's speed also drifts (the same suite took 85 s and 96 s on one VM within an
hour), so a fixed pure-Python workload that runs none of the project's code is timed before and after the
suite, and the suite's wall time is also printed in units of it: that ratio compares runs across machines and
hours.

    uv run python benchmarks/test_suite_time.py [--slowest 10] [-- -m "not slow" ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def slowest(junit: Path, count: int) -> list[tuple[float, str]]:
    """(seconds, test id) of the `count` slowest tests in a JUnit report (setup, call and teardown)."""
    cases = ET.parse(junit).getroot().iter("testcase")
    timed = [
        (float(c.get("time", 0)), f"{c.get('classname', '').replace('.', '/')}.py::{c.get('name')}")
        for c in cases
    ]
    return sorted(timed, reverse=True)[:count]


def by_directory(junit: Path) -> list[tuple[float, str]]:
    """(seconds, directory) summed over the tests of each test directory, longest first (on N workers the
    sum is about N x the wall time)."""
    totals: dict[str, float] = {}
    for c in ET.parse(junit).getroot().iter("testcase"):
        directory = "/".join(c.get("classname", "").split(".")[:-1]) or "."
        totals[directory] = totals.get(directory, 0.0) + float(c.get("time", 0))
    return sorted(((t, d) for d, t in totals.items()), reverse=True)


def yardstick_seconds() -> float:
    """Wall time of a fixed single-core pure-Python workload (no project code, no numpy threads)."""
    started = time.perf_counter()
    total = 0
    for i in range(4_000_000):
        total += i * i % 7
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--slowest", type=int, default=10, help="how many of the slowest tests to list")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest after `--`")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", f"--junitxml={junit}", *args.pytest_args]
        yardstick = [yardstick_seconds()]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        yardstick.append(yardstick_seconds())
        summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
        user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
        print(f"pytest {' '.join(args.pytest_args)}".rstrip() + f": {summary}")
        print(f"wall {wall:.1f} s, CPU {user + system:.1f} s (user {user:.1f} s + sys {system:.1f} s)")
        unit = sum(yardstick) / len(yardstick)
        print(
            f"yardstick (fixed pure-Python workload) {yardstick[0]:.2f} s before, {yardstick[1]:.2f} s after: "
            f"the wall time is {wall / unit:.0f} yardsticks"
        )
        load = os.getloadavg()[0]
        print(f"{os.cpu_count()} cores, load average (1 min) at the end {load:.2f}")
        if junit.exists():
            print(f"the {args.slowest} slowest tests (setup + call + teardown):")
            for seconds, test in slowest(junit, args.slowest):
                print(f"  {seconds:7.2f} s  {test}")
            print("test time by directory (setup + call + teardown, summed over the workers):")
            for seconds, directory in by_directory(junit):
                print(f"  {seconds:7.1f} s  {directory}")
        if result.returncode != 0:
            print(f"pytest exited {result.returncode}:\n{result.stdout[-4000:]}{result.stderr[-2000:]}")


if __name__ == "__main__":
    main()
