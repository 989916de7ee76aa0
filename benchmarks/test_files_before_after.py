"""CPU and wall time of test files before and after a change: the `tests/` tree at a git ref (default `main`)
and the working tree's, each copied to a folder of its own and run file by file with `pytest -n 0` in a
child process. Prints, per file, CPU (user + sys of pytest and everything it started) and wall time of the
old and the new tree and the new/old ratio, then the totals.

Prints figures, asserts nothing. CPU time is the figure to compare on a machine shared with other work (wall
time grows with the load); each run pays the same start-up (imports, collection of its one file), which the
figures include. Both trees run against the working tree's package (the rest of the repository is linked in
beside each copy), so a change to `src/` shows in both.

    uv run python benchmarks/test_files_before_after.py tests/package/test_provider_tokens.py ... [--ref main]
"""

from __future__ import annotations

import argparse
import io
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def project_beside(tests: Path) -> None:
    """The project around a copied `tests/`: every other entry of the repository's root linked in (the
    program and the tests find the project by its Pulumi.yaml, from the working directory)."""
    for entry in ROOT.iterdir():
        if entry.name not in ("tests", ".git", "build"):
            (tests / entry.name).symlink_to(entry)


def old_tree(ref: str, into: Path) -> None:
    """`tests/` as committed at `ref`, written under `into`."""
    archive = subprocess.run(["git", "archive", ref, "tests"], cwd=ROOT, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")


def new_tree(into: Path) -> None:
    """`tests/` as it is in the working tree (committed or not), written under `into`."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())


def run(tree: Path, test_file: str) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, pytest's last line) of one file's tests in `tree`."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-c",
        str(ROOT / "pyproject.toml"),
        "--rootdir",
        str(tree),
        "-n",
        "0",
        test_file,
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    last = (result.stdout.strip().splitlines() or result.stderr.strip().splitlines() or ["(no output)"])[-1]
    return cpu, wall, last


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="test files, as paths from the repository's root")
    parser.add_argument("--ref", default="main", help="the git ref whose tests/ are the 'before'")
    args = parser.parse_args()
    totals = [0.0, 0.0, 0.0, 0.0]
    with tempfile.TemporaryDirectory() as old, tempfile.TemporaryDirectory() as new:
        old_tree(args.ref, Path(old))
        new_tree(Path(new))
        for tree in (old, new):
            project_beside(Path(tree))
        print(f"{'file':58} {'CPU old':>8} {'CPU new':>8} {'ratio':>6} {'wall old':>9} {'wall new':>9}")
        for test_file in args.files:
            old_cpu, old_wall, old_line = run(Path(old), test_file)
            new_cpu, new_wall, new_line = run(Path(new), test_file)
            for i, value in enumerate((old_cpu, new_cpu, old_wall, new_wall)):
                totals[i] += value
            print(
                f"{test_file:58} {old_cpu:7.1f}s {new_cpu:7.1f}s {new_cpu / old_cpu:6.2f} "
                f"{old_wall:8.1f}s {new_wall:8.1f}s"
            )
            print(f"    old: {old_line}\n    new: {new_line}")
        old_cpu, new_cpu, old_wall, new_wall = totals
        print(
            f"{'total':58} {old_cpu:7.1f}s {new_cpu:7.1f}s {new_cpu / max(old_cpu, 1e-9):6.2f} "
            f"{old_wall:8.1f}s {new_wall:8.1f}s"
        )


if __name__ == "__main__":
    main()
