"""com.microsoft ops that onnxruntime's CPU provider runs and its own test models use
(onnxruntime/test/testdata), checked against onnxruntime on one-node files built the same way:
ExpandDims, CDist, Inverse, TransposeMatMul, Pad, Range, Trilu and GatherND (issue 41 §2).
"""

from __future__ import annotations

import jax
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import jaxonnx

_rng = np.random.default_rng(41)
MS = "com.microsoft"


def _normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _model(op_type, feed, attributes=None, initializers=()):
    """One com.microsoft node reading ``feed`` then ``initializers`` (name, array) in order."""
    names = list(feed) + [name for name, _ in initializers]
    node = helper.make_node(op_type, names, ["y"], domain=MS, **(attributes or {}))
    graph = helper.make_graph(
        [node],
        op_type,
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()],
        [onnx.ValueInfoProto(name="y")],
        initializer=[numpy_helper.from_array(value, name) for name, value in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


CASES = {
    "ExpandDims-last": (
        _model("ExpandDims", {"x": _normal(2, 3)}, initializers=[("axis", np.array(-1, np.int32))]),
        {"x": _normal(2, 3)},
    ),
    "ExpandDims-first": (
        _model("ExpandDims", {"x": _normal(2, 3)}, initializers=[("axis", np.array(0, np.int32))]),
        {"x": _normal(2, 3)},
    ),
    "CDist-sqeuclidean": (
        _model("CDist", {"a": _normal(3, 4), "b": _normal(5, 4)}),
        {"a": _normal(3, 4), "b": _normal(5, 4)},
    ),
    "CDist-euclidean": (
        _model("CDist", {"a": _normal(3, 4), "b": _normal(5, 4)}, {"metric": "euclidean"}),
        {"a": _normal(3, 4), "b": _normal(5, 4)},
    ),
    "Inverse": (
        _model("Inverse", {"x": _normal(2, 3, 3)}),
        {"x": (np.eye(3) + 0.2 * _normal(2, 3, 3)).astype(np.float32)},
    ),
    "TransposeMatMul-transA": (
        _model("TransposeMatMul", {"a": _normal(3, 2), "b": _normal(3, 4)}, {"transA": 1, "alpha": 0.5}),
        {"a": _normal(3, 2), "b": _normal(3, 4)},
    ),
    "TransposeMatMul-batched-transB": (
        _model("TransposeMatMul", {"a": _normal(2, 2, 3), "b": _normal(5, 3)}, {"transB": 1}),
        {"a": _normal(2, 2, 3), "b": _normal(5, 3)},
    ),
    "Pad-constant-value": (
        _model(
            "Pad",
            {"x": _normal(2, 3)},
            initializers=[("pads", np.array([1, 0, 0, 2])), ("value", np.array([2.5], np.float32))],
        ),
        {"x": _normal(2, 3)},
    ),
    "Pad-reflect-2d-pads": (
        _model("Pad", {"x": _normal(2, 3)}, {"mode": "reflect"}, initializers=[("pads", np.array([[1, 1, 0, 1]]))]),
        {"x": _normal(2, 3)},
    ),
    "Pad-edge-negative": (
        _model("Pad", {"x": _normal(3, 4)}, {"mode": "edge"}, initializers=[("pads", np.array([0, -1, 1, 2]))]),
        {"x": _normal(3, 4)},
    ),
    "Range-float-default-delta": (
        _model("Range", {}, initializers=[("start", np.array(1.0, np.float32)), ("limit", np.array(3.5, np.float32))]),
        {},
    ),
    "Range-int-negative-delta": (
        _model(
            "Range",
            {},
            initializers=[
                ("start", np.array(5, np.int64)),
                ("limit", np.array(0, np.int64)),
                ("delta", np.array(-2, np.int64)),
            ],
        ),
        {},
    ),
    "Trilu-lower-k": (
        _model("Trilu", {"x": _normal(2, 3, 4)}, {"upper": 0}, initializers=[("k", np.array(1))]),
        {"x": _normal(2, 3, 4)},
    ),
    "Trilu-upper-default-k": (_model("Trilu", {"x": _normal(4, 3)}), {"x": _normal(4, 3)}),
    "GatherND-negative-index": (
        _model("GatherND", {"x": _normal(2, 3, 4), "i": np.zeros((2, 2), np.int64)}),
        {"x": _normal(2, 3, 4), "i": np.array([[1, -1], [0, 0]], np.int64)},
    ),
    "GatherND-int32-rows": (
        _model("GatherND", {"x": _normal(2, 3), "i": np.zeros((1, 2, 1), np.int32)}),
        {"x": _normal(2, 3), "i": np.array([[[1], [0]]], np.int32)},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_onnxruntime(run_onnxruntime, case):
    model, feed = CASES[case]
    (want,) = run_onnxruntime(model, feed)
    loaded = jaxonnx.load(model)
    for run in (loaded.run, jax.jit(loaded.run)):
        got = np.asarray(run(feed)["y"])
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_expand_dims_axis_out_of_range_is_a_clear_error():
    model = _model("ExpandDims", {"x": _normal(2, 3)}, initializers=[("axis", np.array(3, np.int32))])
    with pytest.raises(jaxonnx.JaxOnnxError, match=r"ExpandDims.*`axis`=3.*\[-3, 2\]"):
        jaxonnx.load(model).run({"x": _normal(2, 3)})


def test_gather_nd_index_out_of_range_is_a_clear_error():
    model = _model("GatherND", {"x": _normal(2, 3)}, initializers=[("i", np.array([[0, 3]], np.int64))])
    with pytest.raises(jaxonnx.JaxOnnxError, match=r"GatherND.*index 3 .*length 3"):
        jaxonnx.load(model).run({"x": _normal(2, 3)})
