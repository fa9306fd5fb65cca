"""onnx's node test suite through ``jaxonnx.backend``, as onnx's BackendTest runs it.

Every case whose ops are all registered runs (the list follows the registry): inputs as
BackendTest hands them (TensorProto via ``numpy_helper.to_array``, numpy scalars as 0-d
arrays), outputs compared with onnx's own per-case tolerances and exact dtypes. Cases that
cannot pass have a reason in ``tests/node_suite_skips``.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from _node_cases import as_backend_input, case_ops, node_cases, tensor_graph

import jaxonnx
import jaxonnx.backend
from tests.node_suite_skips import all_skips

REGISTERED = set(jaxonnx.supported_ops())
SKIPS = all_skips()
CASES = [c for c in node_cases() if tensor_graph(c) and case_ops(c) <= REGISTERED]
REAL_MODEL_OPS = {
    word
    for line in (pathlib.Path(__file__).parent / "data" / "real_model_ops.txt").read_text().splitlines()
    if not line.startswith("#")
    for word in line.split()
}


def _params():
    for case in CASES:
        marks = [pytest.mark.skip(reason=SKIPS[case.name])] if case.name in SKIPS else []
        yield pytest.param(case, id=case.name, marks=marks)


def assert_similar_outputs(expected, actual, rtol, atol):
    """onnx's ``Runner.assert_similar_outputs`` for tensors: same count, shape and dtype,
    strings equal, numbers within the case's rtol/atol (bfloat16: at least two ULPs, 2**-6,
    compared in float32, as onnx does)."""
    assert len(actual) == len(expected)
    for want, got in zip(expected, actual):
        got = np.asarray(got)
        assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
        assert got.dtype == want.dtype, f"dtype {got.dtype}, expected {want.dtype}"
        if want.dtype == object:
            np.testing.assert_array_equal(got, want)
        elif want.dtype.name == "bfloat16":
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=max(rtol, 2**-6), atol=atol)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", _params())
def test_node_case(case):
    rep = jaxonnx.backend.prepare(case.model, device="CPU")
    for inputs, expected in case.data_sets:
        outputs = rep.run([as_backend_input(x) for x in inputs])
        assert_similar_outputs([as_backend_input(x) for x in expected], list(outputs), case.rtol, case.atol)


def test_skips_name_real_cases_with_reasons():
    names = {c.name for c in node_cases()}
    unknown = sorted(set(SKIPS) - names)
    assert not unknown, f"skips of cases onnx does not have: {unknown}"
    assert all(isinstance(r, str) and len(r) > 20 for r in SKIPS.values())


def test_the_real_model_ops_are_registered_and_their_cases_run():
    missing = sorted(REAL_MODEL_OPS - REGISTERED)
    assert not missing, f"real-model ops not registered: {missing}"
    real = [c for c in node_cases() if tensor_graph(c) and case_ops(c) <= REAL_MODEL_OPS]
    running = [c for c in real if c.name not in SKIPS]
    # onnx 1.23 has 1210 such cases; the target is that at least 1180 run (and pass, above).
    assert len(real) >= 1210 and len(running) >= 1180, (len(real), len(running))
