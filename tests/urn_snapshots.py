"""URN snapshots: every resource's URN, as the engine builds it, for each fixture and real stack.

A URN is a resource's identity in Pulumi state: a program that registers a resource under another URN
(a new parent, a renamed type or name) replaces it on the next `pulumi up` unless an alias names the old
URN. The snapshots in tests/fixtures/urns/ were taken before the code moved into one package; the test
compares every evaluation with them.

    uv run python -m tests.urn_snapshots --write   # take them again after adding or removing a resource
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_platform.tools import mocks as platform_mocks
from llm_platform.tools.render import evaluate

SNAPSHOTS = Path(__file__).resolve().parent / "fixtures" / "urns"


def urns(mocks: platform_mocks.PlatformMocks) -> list[str]:
    """Each resource's identity in an existing stack's state: the URN its alias names where it has one (the
    URN it had before it moved), else its own. Taken again after a deliberate addition or removal, the
    snapshot keeps the old identities, so the test still holds every moved resource to its alias."""
    return sorted(identity(r) for r in mocks.created)


def identity(r: platform_mocks.Registered) -> str:
    """Of a resource's URN and the aliases that keep its type and name (a provider's aliases of a type's
    older versions do not), the one with the shortest parent chain: where it was before it moved."""

    def same_resource(urn: str) -> bool:
        return urn.split("::")[-1] == r.name and urn.split("::")[2].split("$")[-1] == r.typ

    return min(
        (u for u in [r.urn, *r.aliases] if same_resource(u)), key=lambda u: u.split("::")[2].count("$")
    )


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
