"""URN snapshots: every resource's URN, as the engine builds it, for each fixture and real stack.

A URN is a resource's identity in Pulumi state: a program that registers a resource under another URN
(a new parent, a renamed type or name) replaces it on the next `pulumi up` unless an alias names the old
URN. The snapshots in tests/fixtures/urns/ were taken before the code moved into one package; the test
compares every evaluation with them.

    uv run python -m tests.urn_snapshots --write   # take them again (only for a deliberate change)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_platform.tools import mocks as platform_mocks
from llm_platform.tools.render import evaluate

SNAPSHOTS = Path(__file__).resolve().parent / "fixtures" / "urns"


def urns(mocks: platform_mocks.PlatformMocks) -> list[str]:
    return sorted(r.urn for r in mocks.created)


def snapshot_file(kind: str, stack: str) -> Path:
    return SNAPSHOTS / f"{kind}-{stack}.txt"


def read(kind: str, stack: str) -> list[str]:
    return snapshot_file(kind, stack).read_text().splitlines()


def stacks() -> dict[tuple[str, str], Path]:
    root = Path(__file__).resolve().parents[1]
    fixtures = {
        ("fixture", p.stem.removeprefix("Pulumi.")): p for p in (root / "tests/fixtures/stacks").iterdir()
    }
    real = {("real", name): root / f"Pulumi.{name}.yaml" for name in ("dev", "staging", "prod")}
    return dict(sorted((fixtures | real).items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--write", action="store_true", help="write the snapshots")
    if not parser.parse_args().write:
        parser.error("nothing to do: pass --write")
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    for (kind, stack), path in stacks().items():
        found = urns(evaluate(path).mocks)
        snapshot_file(kind, stack).write_text("\n".join(found) + "\n")
        print(f"{kind} {stack}: {len(found)} URNs")


if __name__ == "__main__":
    main()
