"""The stack evaluations (and documented command runs) of a test session, shared by its xdist workers
through files.

tests/conftest.py evaluates a stack file under mocks once per session for a given stack file content and
program content, and runs a documented command that two test files need once (`run_once`). The first worker to need an evaluation runs it and stores it, pickled, in the session's
directory (made by the controller, removed when the session ends); a worker that needs the same one waits on
the entry's lock and reads it (about 10 ms, where an evaluation takes 1-3 s of CPU). Without xdist (`-n 0`)
the directory is the process's own.

An evaluation's mocks hold Pulumi objects only where a resource is passed as another's input (the EKS
cluster of its managed node group); they are stored as the `type::name` that `mocks.plain` reads them as,
which is how every reader of an evaluation (`mocks.plain`, the preflight view, the URN snapshots) sees them.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi

try:
    import fcntl
except ImportError:  # no flock (Windows): each worker evaluates for itself
    fcntl = None

WORKER_INPUT = "llm_platform_renders"  # the key of the directory in xdist's workerinput


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, pulumi.Resource):  # as mocks.plain writes a resource reference
            return str, (f"{obj.pulumi_resource_type}::{obj.pulumi_resource_name}",)
        return NotImplemented


def dumps(value: object) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


class SharedRenders:
    """Pickled evaluations by key: this process's in memory, the session's in `directory`."""

    def __init__(self) -> None:
        self.directory: Path | None = None
        self.owned = False
        self._read: dict[str, bytes] = {}

    def start(self, workerinput: dict[str, Any] | None) -> None:
        """In the controller (or a run without xdist): make the session's directory; in a worker: use it."""
        if workerinput is not None and WORKER_INPUT in workerinput:
            self.directory = Path(workerinput[WORKER_INPUT])
        else:
            self.directory, self.owned = Path(tempfile.mkdtemp(prefix="llm-platform-renders-")), True

    def stop(self) -> None:
        if self.owned and self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def get(self, key: tuple[str, ...], evaluate: Callable[[], object]) -> bytes:
        """The pickled evaluation of `key`, evaluated by whichever process asks first; an evaluation that
        raises is not stored (the next caller evaluates again and raises again)."""
        name = hashlib.sha256("\0".join(key).encode()).hexdigest()
        if name in self._read:
            return self._read[name]
        if self.directory is None or fcntl is None:
            self._read[name] = dumps(evaluate())
            return self._read[name]
        entry = self.directory / f"{name}.pickle"
        with (self.directory / f"{name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker evaluating this key: wait for its entry
            if entry.exists():
                data = entry.read_bytes()
            else:
                data = dumps(evaluate())
                partial = entry.with_suffix(f".{os.getpid()}.partial")
                partial.write_bytes(data)
                partial.replace(entry)
        self._read[name] = data
        return data
