"""onnx's node test cases, built once per pytest run (and onnx version) and shared by every
test file and every xdist worker through a pickle on disk.

``collect_testcases`` runs every case generator of onnx (numpy and onnx.reference compute
the expected values): about 7 s of CPU, which each worker process used to pay for itself.
The first process to need the cases builds them and writes them to the cache folder
(pytest's cache, ``.pytest_cache/d/jaxonnx``, or the system's temporary folder where
pytest's cache is off); the others read the file (0.1 s): see ``tests/_shared.py``.
"""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
from _shared import cache_folder, computed_once, per_run
from onnx import numpy_helper

import jaxonnx


def cache_file() -> Path:
    """Where this environment's cases are kept: one file per onnx, numpy and Python version,
    since the cases (and their pickles) depend on them."""
    folder = cache_folder()
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
    cases = computed_once(cache_file(), _collected)
    return tuple(case for case in sorted(cases, key=lambda c: c.name) if case.model is not None and case.kind == "node")


def supported_case_names() -> list[str]:
    """Every case jaxonnx can run: all its ops registered, local functions, or ops that onnx
    defines with a function body (whose ops jaxonnx runs), at any depth of subgraphs.
    Found once per run and shared by the xdist workers (about 4 s of CPU each)."""
    return per_run(
        "supported-node-cases",
        lambda: sorted(case.name for case in node_cases() if not jaxonnx.unsupported_nodes(case.model)),
    )


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
