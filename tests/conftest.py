"""Shared fixtures: a fresh event loop and Pulumi mocks per test, and stack configs to start from.

Behaviour tests run on the FIXTURE stacks in tests/fixtures/stacks/ (`Pulumi.<name>.yaml`), never on the
real Pulumi.<stack>.yaml files, which teams edit: a stack name given to the helpers below (`"prod"`) is the
fixture of that name, read through the same loader and render path as a real stack. The real stack files
are checked only by tests/stacks/ (renders, 0 schema problems, policies pass, also with a model added).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import pickle
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from llm_platform.config.loader import (
    PROJECT,
    ROOT,
    ConfigError,
    Stack,
    load_stack,
    parse,
    raw_stack_config,
    stack_file,
    stack_name,
)
from llm_platform.config.schema import StackConfig
from llm_platform.tools import mocks as platform_mocks
from llm_platform.tools import render
from llm_platform.tools.render import stack_config
from tests.render_cache import WORKER_INPUT, SharedRenders

FIXTURE_STACKS = ROOT / "tests" / "fixtures" / "stacks"


def _program_digest() -> str:
    """The program's content: __main__.py and the package's sources (what an evaluation runs)."""
    digest = hashlib.sha256()
    for path in [ROOT / "__main__.py", *sorted((ROOT / "src" / "llm_platform").rglob("*.py"))]:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# every evaluation of a stack file in this session, keyed by the stack's name, its file and that file's
# content and the program's content: a stack is evaluated under mocks once per session however many tests
# and xdist workers read it (tests/render_cache.py shares it between the workers)
_RENDERS = SharedRenders()
_PROGRAM = _program_digest()
_evaluate_program = render.evaluate


@functools.wraps(_evaluate_program)
def _evaluate_once(stack: Stack) -> render.Render:
    """render.evaluate, once per stack file content and program content; each caller gets its own copy (a
    test may edit the resources, manifests, values and mocks it reads). A bad stack file raises every time
    (nothing is cached)."""
    path = stack_file(stack)
    if not path.is_file():  # the program's own error for a missing stack file
        return _evaluate_program(stack)
    key = (stack_name(stack), str(path.resolve()), hashlib.sha256(path.read_bytes()).hexdigest(), _PROGRAM)
    return pickle.loads(_RENDERS.get(key, lambda: _evaluate_program(stack)))


def pytest_configure(config: pytest.Config) -> None:
    _RENDERS.start(getattr(config, "workerinput", None))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, in the controller: each worker reads and writes the controller's evaluations directory."""
    node.workerinput[WORKER_INPUT] = str(_RENDERS.directory)


def pytest_unconfigure(config: pytest.Config) -> None:
    _RENDERS.stop()


# installed before any test module imports `evaluate` from render; `render.evaluate.__wrapped__` evaluates anew
render.evaluate = _evaluate_once


def run_once(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """`argv` run from the repository with `env` added to the environment, once per session whichever test
    and xdist worker asks first (the same store as the evaluations above): tests/test_doc_commands.py runs
    every documented command and tests/test_doc_figures.py reads the figures of several of the same ones
    (the seed benchmark, calibrate, the routing and scale-to-zero benchmarks, the multi-node day). A command
    that exits non-zero is stored as it exited; each caller judges it."""

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **env},
            check=False,
        )

    key = ("command", *argv, *(f"{name}={value}" for name, value in sorted(env.items())))
    return pickle.loads(_RENDERS.get(key, run))


def fixture_stack(name: str) -> Path:
    """The stack file of fixture `name`; an unknown name fails listing the fixtures."""
    path = FIXTURE_STACKS / f"Pulumi.{name}.yaml"
    if not path.exists():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in FIXTURE_STACKS.iterdir())
        raise ConfigError(f"no fixture stack {name!r} in {FIXTURE_STACKS}; fixtures: {', '.join(known)}")
    return path


def load_fixture(name: str) -> StackConfig:
    """Validated config of fixture stack `name` (config.loader.load_stack on its file)."""
    return load_stack(fixture_stack(name))


# the mocks of an unchanged fixture stack's evaluation, shared by the tests of a process that only read them
_UNCHANGED_STACKS: dict[str, platform_mocks.PlatformMocks] = {}


@pytest.fixture
def run_program() -> Iterator[Callable[[str], platform_mocks.PlatformMocks]]:
    """Evaluate the real __main__.py with a fixture stack's config; returns the mocks that recorded it."""
    loops = []

    def run(
        stack: str, overrides: dict[str, Any] | None = None, drop_secrets: list[str] | None = None
    ) -> platform_mocks.PlatformMocks:
        if not overrides and not drop_secrets:  # the session's one evaluation of the file (render.evaluate)
            if stack not in _UNCHANGED_STACKS:
                _UNCHANGED_STACKS[stack] = render.evaluate(fixture_stack(stack)).mocks
            run.last = _UNCHANGED_STACKS[stack]  # type: ignore[attr-defined]
            return _UNCHANGED_STACKS[stack]
        config, secret_keys = stack_config(fixture_stack(stack))
        for key in drop_secrets or []:
            config.pop(f"{PROJECT}:{key}")
        for key, value in (overrides or {}).items():  # a key with its own namespace (`aws:region`) as given
            config[key if ":" in key else f"{PROJECT}:{key}"] = (
                value if isinstance(value, str) else json.dumps(value)
            )
        m, loop = platform_mocks.install(stack, config, secret_keys)
        loops.append(loop)
        run.last = m  # type: ignore[attr-defined]  # what was registered even when the program fails
        platform_mocks.run_main()
        return m

    yield run
    for loop in loops:
        if not loop.is_closed():
            platform_mocks.uninstall(loop)


# `--dist loadfile` (pyproject), refined by FileScheduling below: a file's tests share its module fixtures and
# the evaluations cached above, so a file is one worker's unit of work, except these files, whose tests are
# long and independent (a tune search, an explained stack, a day of cost alerts in promtool, a real stack
# checked end to end, a documented benchmark's run) and spread over the workers; tests there that share one computation or folder stay together
SPREAD_OVER_WORKERS: dict[str, dict[str, str]] = {
    "tests/simulator/test_tune.py": {
        "test_the_tuner_searches_headroom_and_prints_the_pools_block": "tune day b",
        "test_the_pools_consolidate_after_is_a_knob_and_is_printed_for_the_pool": "tune day b",
    },
    "tests/simulator/test_explain.py": {},
    "tests/components/test_costs.py": {},  # two promtool runs of 25 simulated hours each
    "tests/test_doc_commands.py": {
        "test_every_documented_command_is_run": "documented commands",
        "test_the_documented_command_runs": "documented commands",
    },
    "tests/stacks/test_add_a_model.py": {},
    "tests/stacks/test_real_stacks.py": {},
}


class FileScheduling(LoadScopeScheduling):
    """A test file per unit of work, a test per unit in SPREAD_OVER_WORKERS, in the collection's order (the
    order `pytest_collection_modifyitems` gives, longest first)."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False

    def _split_scope(self, nodeid: str) -> str:
        path, _, test = nodeid.partition("::")
        if path not in SPREAD_OVER_WORKERS:
            return path
        together = SPREAD_OVER_WORKERS[path].get(test.split("[", 1)[0])
        return f"{path}::{together}" if together else nodeid


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling | None:
    return FileScheduling(config, log) if config.getvalue("dist") == "loadfile" else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first, then the files with the most tests: the workers finish at about the same time."""
    per_file = Counter(item.path for item in items)
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None, -per_file[item.path]))


def stack_values(stack: str) -> dict[str, Any]:
    """The plain `llm-platform:` values of fixture stack `stack`, keyed without the prefix, safe to mutate."""
    raw = raw_stack_config(fixture_stack(stack))
    return copy.deepcopy({k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{PROJECT}:")})


def config_error(stack: Path | dict[str, Any]) -> str:
    """The ConfigError a stack file (or its plain values) is refused with, as the user reads it."""
    with pytest.raises(ConfigError) as info:
        load_stack(stack) if isinstance(stack, Path) else parse(stack)
    return str(info.value)
