"""`llm-platform plan [STACK]`: the offline preview. Renders the stack under Pulumi mocks, checks it against
the schema, runs preflight and simulates each model's day as deployed ($/day, SLO misses) on the traffic
the stack names (`costs.expectedTraffic`; the seed day at 1x otherwise, and the plan says which).

Without STACK it plans the embedded default: the prod stack shipped in the package, so it runs from a wheel.
`--against REF` compares with a git ref (the stack file, the program and the package at that ref, read with
`git archive` into a temporary folder and planned there) or with a previous plan's `--json` output:
objects added, changed (field by field) and removed, the change in $/day and SLO misses, new preflight
findings. `--markdown FILE` writes the pull-request comment (.github/workflows/pr.yml posts it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from llm_platform import commandline
from llm_platform.cli import diff, report, snapshot
from llm_platform.config.loader import ROOT, ConfigError, Stack, stack_file, stack_name

PROG = "llm-platform plan"
PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED = Path(__file__).resolve().parent / "default_stack"  # in a wheel (pyproject's force-include)
DEFAULT_STACK = "Pulumi.prod.yaml"


class PlanError(Exception):
    """A ref or a plan file that cannot be compared with (exit 2)."""


def default_project() -> Path:
    """Where the embedded default lives: the copy shipped in the wheel, else this source tree's project."""
    if (SHIPPED / DEFAULT_STACK).is_file():
        return SHIPPED
    tree = PACKAGE.parents[1]
    if (tree / "Pulumi.yaml").is_file() and (tree / DEFAULT_STACK).is_file():
        return tree
    raise PlanError("this installation ships no default stack; give a STACK (a name or a stack file)")


def parser() -> commandline.ArgumentParser:
    p = commandline.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument(
        "stack", nargs="?", type=commandline.known_stack, metavar="STACK",
        help="stack name (reads Pulumi.<stack>.yaml) or the path of a stack file (default: the embedded prod stack)",
    )  # fmt: skip
    p.add_argument(
        "--against", metavar="REF", help="a git ref (main, origin/main, HEAD~1) or a plan's --json file"
    )
    p.add_argument("--markdown", metavar="FILE", type=Path, help="write the pull-request comment here")
    p.add_argument("--json", action="store_true", help="the plan (and the comparison) as JSON on stdout")
    return p


def run_script(project: Path, stack: Path, pythonpath: Path | None = None) -> dict[str, Any]:
    """snapshot.py as a script in another project folder (its `__main__.py` and stack files), with another
    package first on the path when `pythonpath` is given."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="llm-platform-plan-") as tmp:
        out = Path(tmp) / "plan.json"
        command = [sys.executable, "-P", snapshot.__file__, str(stack), str(out)]
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
            raise PlanError(f"planning {stack.name} in {project} failed:\n{tail}")
        return json.loads(out.read_text())


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PlanError(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


@contextmanager
def checkout(ref: str) -> Iterator[tuple[Path, Path]]:
    """The repository at `ref` in a temporary folder (`git archive`): its top folder and the project's."""
    top = Path(_git("rev-parse", "--show-toplevel", cwd=ROOT))
    _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=top)
    with tempfile.TemporaryDirectory(prefix="llm-platform-ref-") as tmp:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", ref], cwd=top, capture_output=True, check=False
        )
        if archive.returncode != 0:
            raise PlanError(f"git archive {ref}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp), Path(tmp) / ROOT.resolve().relative_to(top.resolve())


def at_ref(stack: Stack, ref: str) -> dict[str, Any]:
    """The plan of `stack` as the ref had it: its stack file, program and package."""
    path = stack_file(stack).resolve()
    top = Path(_git("rev-parse", "--show-toplevel", cwd=ROOT)).resolve()
    try:
        relative = path.relative_to(top)
    except ValueError:
        raise PlanError(
            f"{path} is not in the git repository at {top}; compare with a plan's --json"
        ) from None
    with checkout(ref) as (tree, project):
        old = tree / relative
        if not old.is_file():
            return snapshot.empty(stack_name(stack))  # a stack the change adds
        return run_script(project, old, pythonpath=tree / "src" if (tree / "src").is_dir() else None)


def previous(stack: Stack, against: str) -> dict[str, Any]:
    """What to compare with: a previous plan's JSON file, else a git ref."""
    path = Path(against)
    if path.suffix == ".json" or path.is_file():
        if not path.is_file():
            raise PlanError(f"--against {against}: no such file")
        doc = json.loads(path.read_text())
        doc = doc.get("plan", doc)  # a plan's --json output, with or without its comparison
        if doc.get("format") != snapshot.FORMAT or "objects" not in doc:
            raise PlanError(f"--against {against}: not a plan's --json output (format {snapshot.FORMAT})")
        return doc
    return at_ref(stack, against)


def plan_of(stack: Stack | None, step: snapshot.Progress) -> dict[str, Any]:
    """The plan of STACK, or of the embedded default (in its own project folder when that is not this one)."""
    if stack is not None:
        return snapshot.snapshot(stack, step)
    project = default_project()
    if project.resolve() == ROOT.resolve():
        return snapshot.snapshot(project / DEFAULT_STACK, step)
    step("embedded default (prod)")
    return run_script(project, project / DEFAULT_STACK)


@contextmanager
def steps(quiet: bool) -> Iterator[snapshot.Progress]:
    """Each step of the plan on a rich status line on stderr, on a terminal only."""
    from rich.console import Console

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield lambda _what: None
        return
    with console.status("planning") as status:
        yield lambda what: status.update(f"planning: {what}")


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        with steps(args.json) as step:
            plan = plan_of(args.stack, step)
            if args.against:
                step(f"against {args.against}")
            before = previous(args.stack or plan["stack"], args.against) if args.against else None
    except ConfigError as exc:
        return commandline.invalid_config(PROG, args.stack or DEFAULT_STACK, exc)
    except (PlanError, ValueError, OSError) as exc:
        return commandline.error(PROG, str(exc))
    cmp = diff.compare(before, plan, args.against) if before is not None else None
    if args.markdown:
        args.markdown.write_text(report.markdown(plan, cmp))
    if args.json:
        print(json.dumps({"plan": plan, "comparison": cmp.to_json()} if cmp else plan, indent=1))
    else:
        print(report.text(plan, cmp))
    return 1 if any(f["severity"] == "blocker" for f in plan["preflight"]) else 0


if __name__ == "__main__":
    sys.exit(main())
