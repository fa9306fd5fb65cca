"""onnx's node test cases, built once per pytest run (and onnx version) and shared by every
test file and every xdist worker through a pickle on disk.

``collect_testcases`` runs every case generator of onnx (numpy and onnx.reference compute
the expected values): about 7 s of CPU, which each worker process used to pay for itself.
The first process to need the cases builds them under a file lock and writes them to the
cache folder (pytest's cache, ``.pytest_cache/d/jaxonnx``, or the system's temporary folder
where pytest's cache is off); the others wait on the lock and read the file (0.1 s).
"""

from __future__ import annotations

import fcntl
import functools
import os
import pickle
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

#: Set by tests/conftest.py to a folder in pytest's cache; the temporary folder otherwise.
CACHE_DIR_VARIABLE = "JAXONNX_TEST_CACHE_DIR"


def cache_file() -> Path:
    """Where this environment's cases are kept: one file per onnx, numpy and Python version,
    since the cases (and their pickles) depend on them."""
    folder = Path(os.environ.get(CACHE_DIR_VARIABLE) or tempfile.gettempdir())
    python = "{}.{}".format(*sys.version_info[:2])
    return folder / f"onnx-node-cases-onnx{onnx.__version__}-numpy{np.__version__}-py{python}.pickle"


def _collected() -> list:
    from onnx.backend.test.case.node import collect_testcases

    # Building onnx's cases for other ops warns (divisions by zero in expected values, and
    # numpy deprecations inside onnx's own case modules on newer numpy).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(collect_testcases(None))  # never filtered: the first call fixes the module-level list


@functools.cache
def node_cases() -> tuple:
    """Every node case of the installed onnx that has a model, sorted by name."""
    path = cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others wait here, then read its file
        try:
            with open(path, "rb") as f:
                cases = pickle.load(f)
        except (
            OSError,
            EOFError,
            pickle.UnpicklingError,
            AttributeError,
            ImportError,
        ):  # absent, half-written by a crash, or stale
            cases = _collected()
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            with open(partial, "wb") as f:
                pickle.dump(cases, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(partial, path)  # a reader never sees half a file
    return tuple(case for case in sorted(cases, key=lambda c: c.name) if case.model is not None and case.kind == "node")


def case_ops(case) -> set[str]:
    return {node.op_type for node in case.model.graph.node}


def tensor_graph(case) -> bool:
    graph = case.model.graph
    return all(v.type.HasField("tensor_type") for v in [*graph.input, *graph.output])


def as_backend_input(value) -> np.ndarray:
    """As onnx's BackendTest hands a value to a backend: TensorProto via
    ``numpy_helper.to_array``, numpy scalars as 0-d arrays."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)
