"""`llm-platform upgrade STACK... --to NAME=VERSION [--to ...]`: what moving pinned charts, CRDs and images to
candidate versions changes for each stack, before the pins move (tools/upgrade/).

Renders each stack at the pins and with the candidates, and shows the Helm releases' version and value
changes and the objects added, changed and removed; compares the pinned CRDs with the CRD files at the
candidate tags (downloaded, or with --crds DIR read from a folder: offline) and checks the candidate render
against them; runs the ledger of known breaking changes (facts/breaking_changes.py).
Exit 0: nothing refused and no ledger check hit; 1: something to act on; 2: bad arguments or config.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from llm_platform import commandline
from llm_platform.config.loader import ConfigError
from llm_platform.tools.upgrade import candidates as candidates_
from llm_platform.tools.upgrade import preview as preview_
from llm_platform.tools.upgrade import report

PROG = "llm-platform upgrade"


def parser() -> commandline.ArgumentParser:
    p = commandline.ArgumentParser(prog=PROG, description=__doc__)
    p.add_argument(
        "stacks", nargs="+", type=commandline.known_stack, metavar="STACK",
        help="stack names (Pulumi.<stack>.yaml) or stack files",
    )  # fmt: skip
    p.add_argument(
        "--to", action="append", required=True, metavar="NAME=VERSION",
        help="a candidate: an add-on (keda=2.21.1), a CRD repository (gateway-api=v1.6.1) or a pin of "
        "facts/versions.py (VLLM_IMAGE=vllm/vllm-openai:v0.31.0); repeat for each",
    )  # fmt: skip
    p.add_argument(
        "--crds", type=Path, metavar="DIR",
        help="read the candidate CRD files from this folder (upstream file names) instead of downloading them",
    )  # fmt: skip
    p.add_argument(
        "--out", type=Path, metavar="DIR",
        help="also write each candidate render to DIR/<stack> (for validate_render --build DIR, check_render.py)",
    )  # fmt: skip
    p.add_argument("--markdown", type=Path, metavar="FILE", help="also write the preview here")
    p.add_argument("--json", action="store_true", help="the previews as JSON on stdout")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        candidates = candidates_.parse(args.to)
    except candidates_.CandidateError as exc:
        return commandline.error(PROG, str(exc))
    if args.crds is not None and not args.crds.is_dir():
        return commandline.error(PROG, f"--crds {args.crds}: no such folder")
    previews = []
    for stack in args.stacks:
        try:
            with commandline.working(f"previewing {stack}", quiet=args.json):
                previews.append(preview_.preview(stack, candidates, args.crds, args.out))
        except ConfigError as exc:
            return commandline.invalid_config(PROG, stack, exc)
    text = report.document(previews)
    if args.markdown:
        args.markdown.write_text(text)
    print(json.dumps([report.to_json(x) for x in previews], indent=1) if args.json else text)
    return 1 if any(x.blocking for x in previews) else 0


if __name__ == "__main__":
    sys.exit(main())
