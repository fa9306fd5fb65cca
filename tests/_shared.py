"""Values computed once and shared by every xdist worker of a pytest run, through a pickle.

Each worker imports every test module, so a value a module computes at import (the
parameter lists of onnx's node cases, the fixtures' traits) would be computed once per
worker. :func:`computed_once` computes it in the first process that asks, under a file
lock, and the others read its file. :func:`per_run` names a file for values that depend
on this checkout's code (the registry), so each pytest run computes them afresh.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

#: Set by tests/conftest.py to a folder in pytest's cache; the temporary folder otherwise.
CACHE_DIR_VARIABLE = "JAXONNX_TEST_CACHE_DIR"
#: What pytest-xdist sets to one id per run in every worker; absent without xdist.
RUN_ID_VARIABLE = "PYTEST_XDIST_TESTRUNUID"

T = TypeVar("T")


def cache_folder() -> Path:
    return Path(os.environ.get(CACHE_DIR_VARIABLE) or tempfile.gettempdir())


def computed_once(path: Path, compute: Callable[[], T]) -> T:
    """``compute()``, or the value a process wrote to ``path`` before: the first process
    computes it under a lock and writes it whole (a reader never sees half a file); the
    others wait on the lock and read it. An unreadable file (a crash mid-write, a stale
    pickle) is computed again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path, "rb") as f:
                return pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            value = compute()
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            with open(partial, "wb") as f:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(partial, path)
            return value


def per_run(name: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per pytest run, shared by its xdist workers (computed in each
    process where there is no run id: a run without xdist has one process). Files of
    earlier runs are removed."""
    run = os.environ.get(RUN_ID_VARIABLE)
    if run is None:
        return compute()
    folder = cache_folder() / "per_run"
    for old in folder.glob(f"{name}-*"):
        if run not in old.name:
            old.unlink(missing_ok=True)  # another worker of an earlier run may race here: harmless
    return computed_once(folder / f"{name}-{run}.pickle", compute)
