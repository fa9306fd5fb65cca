"""The padding contract of size hints (jaxonnx/_core/padding.py): eager and jax.jit agree,
and padding never reaches a result silently. The graphs are written as PyTorch's exporters
write boolean and integer indexing: ``x[mask]`` (NonZero, Transpose, GatherND), ``x[r, c]``
through flat-index arithmetic (TorchScript: Split, Squeeze, Mul, Add, Gather), their sums
and means."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

vi = helper.make_tensor_value_info
X = np.arange(12, dtype=np.float32).reshape(3, 4)
MASK = X % 3 == 0
INTS = {"one": np.array([1], np.int64), "four": np.array(4, np.int64), "minus1": np.array([-1], np.int64)}


def _model(nodes, outputs):
    graph = helper.make_graph(nodes, "g", [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])], outputs,
                              initializer=[numpy_helper.from_array(v, k) for k, v in INTS.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


BOOLEAN_INDEX = [
    helper.make_node("NonZero", ["mask"], ["nz"]),
    helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
    helper.make_node("GatherND", ["x", "nzt"], ["selected"]),
]
FLAT_INDEX = [  # x[r, c] with (r, c) = mask.nonzero(), as flat indices
    helper.make_node("NonZero", ["mask"], ["nz"]),
    helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
    helper.make_node("Split", ["nzt"], ["r2", "c2"], axis=1, num_outputs=2),
    helper.make_node("Squeeze", ["r2", "one"], ["r"]),
    helper.make_node("Squeeze", ["c2", "one"], ["c"]),
    helper.make_node("Mul", ["r", "four"], ["rf"]),
    helper.make_node("Add", ["rf", "c"], ["flat"]),
    helper.make_node("Reshape", ["x", "minus1"], ["xf"]),
    helper.make_node("Gather", ["xf", "flat"], ["selected"]),
]


def _both(model):
    return [model, jax.jit(model)]


def test_a_boolean_index_and_its_sum_are_the_same_eagerly_and_jitted():
    proto = _model(BOOLEAN_INDEX + [helper.make_node("ReduceSum", ["selected"], ["total"], keepdims=0)],
                   [vi("selected", T.FLOAT, None), vi("total", T.FLOAT, [])])
    exact = jaxonnx.load(proto)(X, MASK)
    np.testing.assert_array_equal(exact[0], X[MASK])
    hinted = jaxonnx.load(proto, size_hints={"nz": 8})
    for model in _both(hinted):
        selected, total = model(X, MASK)
        np.testing.assert_array_equal(selected, [0, 3, 6, 9, 0, 0, 0, 0])  # the real rows, then zero padding
        assert float(total) == float(X[MASK].sum())
    for grad in (jax.grad(lambda x: hinted(x, MASK)[1])(X), jax.jit(jax.grad(lambda x, m: hinted(x, m)[1]))(X, MASK)):
        np.testing.assert_array_equal(grad, MASK.astype(np.float32))


@pytest.mark.parametrize("reduce", ["ReduceMean", "ReduceMax"])
def test_a_reduction_that_padding_would_change_is_refused_eagerly_and_jitted(reduce):
    proto = _model(BOOLEAN_INDEX + [helper.make_node(reduce, ["selected"], ["total"], keepdims=0)],
                   [vi("total", T.FLOAT, [])])
    hinted = jaxonnx.load(proto, size_hints={"nz": 8})
    for model in _both(hinted):
        with pytest.raises(jaxonnx.OnnxValidationError, match=rf"The size-hinted output 'nz' \(of node 'NonZero_0'\) is "
                           rf"padded.*reaches node 'Reduce\w+_3' \({reduce}-18\), which computes on its values"):
            model(X, MASK)
    np.testing.assert_allclose(jaxonnx.load(proto)(X, MASK)[0], getattr(np, reduce[6:].lower())(X[MASK]))


def test_arithmetic_on_padded_indices_is_refused_not_summed_in():
    # TorchScript's x[r, c].sum(): without the contract, the padded rows became real flat indices.
    proto = _model(FLAT_INDEX + [helper.make_node("ReduceSum", ["selected"], ["total"], keepdims=0)],
                   [vi("total", T.FLOAT, [])])
    assert float(jaxonnx.load(proto)(X, MASK)[0]) == float(X[MASK].sum())
    hinted = jaxonnx.load(proto, size_hints={"nz": 8})
    for model in _both(hinted):
        with pytest.raises(jaxonnx.OnnxValidationError, match=r"reaches node 'Mul_5' \(Mul-14\), which computes on "
                           r"its values: the result would be silently wrong. Ways out: run the model without a size hint"):
            model(X, MASK)


def test_index_padding_is_not_summed():
    proto = _model([helper.make_node("NonZero", ["mask"], ["nz"]),
                    helper.make_node("ReduceSum", ["nz"], ["total"], keepdims=0)], [vi("total", T.INT64, [])])
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        with pytest.raises(jaxonnx.OnnxValidationError, match="this padding is out-of-range indices, not zeros"):
            model(X, MASK)


def test_gather_and_scatter_treat_padded_indices_as_nothing():
    nodes = [
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["x", "minus1"], ["xf"]),
        helper.make_node("Reshape", ["mask", "minus1"], ["mf"]),
        helper.make_node("NonZero", ["mf"], ["flat_nz"]),
        helper.make_node("Squeeze", ["flat_nz", "zero"], ["flat"]),
        helper.make_node("Gather", ["xf", "flat"], ["picked"]),
        helper.make_node("Unsqueeze", ["flat", "one"], ["flat_column"]),
        helper.make_node("ScatterND", ["xf", "flat_column", "picked"], ["written"], reduction="add"),
    ]
    graph = helper.make_graph(nodes, "g", [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
                              [vi("picked", T.FLOAT, None), vi("written", T.FLOAT, None)],
                              initializer=[numpy_helper.from_array(v, k) for k, v in
                                           {**INTS, "zero": np.array([0], np.int64)}.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    hinted = jaxonnx.load(proto, size_hints={"nz": 8, "flat_nz": 6})
    for model in _both(hinted):
        picked, written = model(X, MASK)
        np.testing.assert_array_equal(picked, [0, 3, 6, 9, 0, 0])
        np.testing.assert_array_equal(written, np.where(MASK, 2 * X, X).reshape(-1))


# Unique: a size hint sets the length of Y, indices and counts; inverse_indices keeps the
# input's length. Y and counts pad with zeros, indices with an out-of-range index (x.size).
LABELS = np.array([3, 1, 3, 7, 1, 3], np.int64)


def _unique_model(extra_nodes, outputs, sorted=0):
    nodes = [helper.make_node("Unique", ["labels"], ["y", "first", "inverse", "counts"], sorted=sorted), *extra_nodes]
    graph = helper.make_graph(nodes, "g", [vi("labels", T.INT64, [6])], outputs,
                              initializer=[numpy_helper.from_array(np.arange(10, 70, 10, dtype=np.float32), "table")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_unique_with_a_hint_is_the_same_eagerly_and_jitted():
    proto = _unique_model([], [vi(n, T.INT64, None) for n in ("y", "first", "inverse", "counts")])
    exact = jaxonnx.load(proto)(LABELS)
    for got, want in zip(exact, ([3, 1, 7], [0, 1, 3], [0, 1, 0, 2, 1, 0], [3, 2, 1])):
        np.testing.assert_array_equal(got, want)
    for model in _both(jaxonnx.load(proto, size_hints={"y": 5})):
        y, first, inverse, counts = model(LABELS)
        np.testing.assert_array_equal(y, [3, 1, 7, 0, 0])
        np.testing.assert_array_equal(first, [0, 1, 3, 6, 6])  # 6 = the input's size: out of range
        np.testing.assert_array_equal(inverse, exact[2])  # never padded
        np.testing.assert_array_equal(counts, [3, 2, 1, 0, 0])


def test_unique_without_a_hint_under_jit_says_how_to_give_one():
    model = jaxonnx.load(_unique_model([], [vi("y", T.INT64, None)]))
    with pytest.raises(jaxonnx.StaticValueError, match=r"Unique-11.*number of unique values is unknown at trace time"
                       r".*size_hints=\{'y': <length>\}"):
        jax.jit(model)(LABELS)


def test_unique_padding_never_reaches_a_sum_silently():
    nodes = [
        helper.make_node("ReduceSum", ["y"], ["y_sum"], keepdims=0),  # zero padding: exact
        helper.make_node("ReduceSum", ["counts"], ["count_sum"], keepdims=0),
        helper.make_node("Gather", ["table", "first"], ["picked"]),  # out-of-range padding reads zeros
        helper.make_node("ReduceSum", ["picked"], ["picked_sum"], keepdims=0),
        helper.make_node("Gather", ["table", "inverse"], ["per_label"]),  # inverse_indices is not padded
        helper.make_node("Add", ["inverse", "inverse"], ["twice"]),
    ]
    proto = _unique_model(nodes, [vi("y_sum", T.INT64, []), vi("count_sum", T.INT64, []), vi("picked_sum", T.FLOAT, []),
                                  vi("per_label", T.FLOAT, None), vi("twice", T.INT64, None)])
    for model in [jaxonnx.load(proto), *_both(jaxonnx.load(proto, size_hints={"counts": 5}))]:
        y_sum, count_sum, picked_sum, per_label, twice = model(LABELS)
        assert int(y_sum) == 11 and int(count_sum) == 6 and float(picked_sum) == 10 + 20 + 40
        np.testing.assert_array_equal(per_label, [10, 20, 10, 30, 20, 10])
        np.testing.assert_array_equal(twice, [0, 2, 0, 4, 2, 0])


@pytest.mark.parametrize("node, message", [
    (helper.make_node("ReduceSum", ["first"], ["out"], keepdims=0), "this padding is out-of-range indices, not zeros"),
    (helper.make_node("ReduceMean", ["counts"], ["out"], keepdims=0), "computes on its values"),
    (helper.make_node("Gather", ["table", "y"], ["out"]), r"takes it as indices, but this padding is zeros \(a real position\)"),
])
def test_unique_padding_that_would_change_a_result_is_refused(node, message):
    proto = _unique_model([node], [vi("out", T.FLOAT if node.op_type == "Gather" else T.INT64, None)])
    hinted = jaxonnx.load(proto, size_hints={"y": 5})
    for model in _both(hinted):
        with pytest.raises(jaxonnx.OnnxValidationError, match=rf"The size-hinted output '\w+' \(of node 'Unique_0'\).*{message}"):
            model(LABELS)
