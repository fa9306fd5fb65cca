"""onnx's node test cases, built once in memory by ``collect_testcases``."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases


@functools.cache
def node_cases() -> tuple:
    # Building onnx's cases for other ops warns (divisions by zero in expected values, and
    # numpy deprecations inside onnx's own case modules on newer numpy).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)  # never filtered: the first call fixes the module-level list
    return tuple(
        case for case in sorted(cases, key=lambda c: c.name)
        if case.model is not None and case.kind == "node"
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
