"""Security scan of the offline render: checkov (Kubernetes framework) over build/<stack>/manifests.yaml.

    uv run python -m llm_platform.tools.security_scan dev staging prod            # scan existing renders
    uv run python -m llm_platform.tools.security_scan prod --render               # render first, then scan
    uv run python -m llm_platform.tools.security_scan prod --json                 # checkov's JSON results

A render older than its stack file or the program is refused (exit 2): scan it again after `--render`.

Suppressions live in one file, src/llm_platform/tools/checkov.yaml, one check id a line with its justification as a
comment; a skip without one stops the scan. checkov is pinned and run through `uvx`, so it never enters
the project's environment. A render with no Kubernetes manifests passes with a note. JUnit XML results go to
build/<stack>/checkov.xml for CI to upload. Exit code: 0 clean, 1 failed checks, 2 setup problems.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from llm_platform import commandline
from llm_platform.config.loader import ROOT, ConfigError, Stack, stack_name

CHECKOV_VERSION = "3.3.30"
CONFIG = Path(__file__).resolve().parent / "checkov.yaml"
SKIP_LINE = re.compile(r"^\s*-\s*(CKV2?_[A-Z0-9_]+)\s*(#\s*(?P<why>.*))?$")

PROG = "python -m llm_platform.tools.security_scan"


def unjustified_skips(config: Path) -> list[str]:
    """Active skip-check entries without a reason of at least a few words on their line."""
    bad = []
    in_skips = False
    for line in config.read_text().splitlines():
        if re.match(r"^skip-check\s*:", line):
            in_skips = True
            continue
        if in_skips and re.match(r"^\S", line):
            in_skips = False
        match = SKIP_LINE.match(line) if in_skips else None
        if match and len((match.group("why") or "").split()) < 4:
            bad.append(match.group(1))
    return bad


def checkov_command(manifests: Path, results: Path, output: str = "cli") -> list[str]:
    if shutil.which("uvx") is None:
        commandline.fail(PROG, "uvx is not on PATH; install uv (https://docs.astral.sh/uv/) to run checkov")
    return [
        "uvx",
        f"checkov=={CHECKOV_VERSION}",
        "--file",
        str(manifests),
        "--framework",
        "kubernetes",
        "--config-file",
        str(CONFIG),
        "--output",
        output,
        "--output",
        "junitxml",
        "--output-file-path",
        f"console,{results}",
    ]


def render(stack: Stack, out: Path) -> None:
    from llm_platform.tools.render import (  # imported late: scanning an existing render needs no Pulumi
        evaluate,
        write,
    )

    out.parent.mkdir(parents=True, exist_ok=True)
    write(evaluate(stack), out)


def scan(stack: Stack, build: Path, *, do_render: bool, report: dict[str, Any] | None = None) -> int:
    """checkov over the stack's render; with `report`, its JSON results go there (by stack name) instead of
    its text to stdout, and this tool's own lines to stderr."""
    name = stack_name(stack)
    say = functools.partial(print, file=sys.stderr if report is not None else sys.stdout, flush=True)
    folder = build / name
    manifests = folder / "manifests.yaml"
    if do_render:
        say(f"== rendering {name} into {folder}")
        try:
            render(stack, folder)
        except ConfigError as exc:
            raise SystemExit(commandline.invalid_config(PROG, stack, exc)) from None
    stale = commandline.stale_render(stack, manifests)
    if stale:
        commandline.fail(PROG, f"{name}: {stale} (or pass --render)")
    documents = [d for d in yaml.safe_load_all(manifests.read_text()) if d]
    if not documents:
        say(f"== {name}: {manifests} holds no Kubernetes manifests; nothing for checkov to scan")
        if report is not None:
            report[name] = {"exit": 0, "results": None}
        return 0
    kinds = sorted({str(d.get("kind")) for d in documents})
    say(f"== checkov {CHECKOV_VERSION}: {name}, {len(documents)} manifests ({', '.join(kinds)})")
    if report is None:
        return subprocess.run(checkov_command(manifests, folder / "checkov.xml"), check=False).returncode
    command = checkov_command(manifests, folder / "checkov.xml", output="json")
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stdout + done.stderr)
        return done.returncode
    report[name] = {"exit": done.returncode, "results": json.loads(done.stdout)}
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = commandline.ArgumentParser(
        prog=PROG,
        description="checkov over the offline render of each stack",
    )
    parser.add_argument(
        "stacks",
        nargs="+",
        type=commandline.known_stack,
        help="stack names (dev, staging, prod) or stack-file paths",
    )
    parser.add_argument("--build", type=Path, default=ROOT / "build", help="render folder (default: build/)")
    parser.add_argument(
        "--render", action="store_true", help="render the stack first, even if a render exists"
    )
    parser.add_argument("--json", action="store_true", help="checkov's JSON results by stack on stdout")
    args = parser.parse_args(argv)
    report: dict[str, Any] | None = {} if args.json else None
    bad = unjustified_skips(CONFIG)
    if bad:
        commandline.fail(
            PROG, f"{CONFIG}: skip-check entries without a justification comment: {', '.join(bad)}"
        )
    worst = 0
    for stack in args.stacks:
        code = scan(stack, args.build, do_render=args.render, report=report)
        if code:
            print(f"== {stack_name(stack)}: checkov failed (exit {code})", file=sys.stderr)
        worst = max(worst, code)
    if report is not None:
        print(json.dumps(report, indent=2))
    return worst


if __name__ == "__main__":
    sys.exit(main())
