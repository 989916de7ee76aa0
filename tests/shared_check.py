"""The workspace's schema check (shared/tools/check_render.py, beside the repository here and in CI) run in
the test process instead of a fresh interpreter per render.

The tool spends most of its time parsing the pinned reference CRDs and chart values with PyYAML's pure-Python
loader (about 5 s a render on one core; here libyaml's, below); those files are the same for every render of a session, so they
are parsed once per test process and every render is checked against that one copy. The tool's own `main`
does the checking: same arguments, same output, same exit code as `python check_render.py RENDER_DIR`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import yaml

from llm_platform.config.loader import ROOT
from llm_platform.tools.validate_render import SAFE_LOADER

SHARED_CHECK = ROOT.parent / "shared" / "tools" / "check_render.py"


@dataclass(frozen=True)
class CheckResult:
    returncode: int
    stdout: str
    stderr: str


@cache
def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shared_check_render", SHARED_CHECK)
    assert spec is not None and spec.loader is not None, SHARED_CHECK
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    # the same parse with PyYAML's libyaml-backed safe loader: the same safe constructors, about 10x faster
    # on the reference CRDs and chart values; everything else of PyYAML the tool may use stays as it is
    fast_yaml = ModuleType("yaml")
    fast_yaml.__dict__.update(vars(yaml))
    fast_yaml.__dict__.update(
        safe_load=functools.partial(yaml.load, Loader=SAFE_LOADER),
        safe_load_all=functools.partial(yaml.load_all, Loader=SAFE_LOADER),
    )
    tool.__dict__["yaml"] = fast_yaml
    # pure functions of the reference folder, which no test writes: `strict` deep-copies a CRD schema before
    # it edits it and the Helm check only reads the defaults, so one parsed copy serves every render
    # (a newer tool without these names is run as it is, only slower)
    for name in ("load_crds", "chart_defaults"):
        if callable(getattr(tool, name, None)):
            setattr(tool, name, cache(getattr(tool, name)))
    return tool


def check_render(render_dir: Path, *args: str) -> CheckResult:
    """`python shared/tools/check_render.py RENDER_DIR [ARGS]`, in this process."""
    tool = _tool()
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = [str(SHARED_CHECK), str(render_dir), *args]
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            tool.main()
    except SystemExit as exit_:
        code = exit_.code
    finally:
        sys.argv = argv
    returncode = 0 if code is None else code if isinstance(code, int) else 1  # sys.exit("message") is 1
    return CheckResult(returncode, out.getvalue(), err.getvalue())
