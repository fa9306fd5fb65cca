"""Unique, ReverseSequence, Scatter and EyeLike against onnxruntime, and what the op table
cannot check: strings, traced values under jax.jit (Unique with `size`, ReverseSequence's
`sequence_lens`), the exact gradients, and the errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from onnx import TensorProto as T
from onnx import helper

import jaxonnx
from jaxonnx import ops

_rng = np.random.default_rng(3)


def _type(array) -> int:
    array = np.asarray(array)
    return T.STRING if array.dtype.kind in "OUS" else helper.np_dtype_to_tensor_dtype(array.dtype)


def _model(op_type, inputs, outputs, opset, **attributes):
    """A one-node model; ``inputs``: name -> array (its type is the array's); ``outputs``:
    their names, the first of the type of the first input, the others int64 (Unique's)."""
    node = helper.make_node(op_type, list(inputs), list(outputs), **attributes)
    declared = [helper.make_tensor_value_info(n, _type(a), np.shape(a)) for n, a in inputs.items()]
    first = attributes.get("dtype", _type(next(iter(inputs.values()))))
    results = [helper.make_tensor_value_info(o, first if i == 0 else T.INT64, None) for i, o in enumerate(outputs)]
    graph = helper.make_graph([node], "g", declared, results)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _assert_same(actual, expected):
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and (a.dtype == e.dtype or e.dtype.kind in "OUS"), (
            a.shape,
            e.shape,
            a.dtype,
            e.dtype,
        )
        np.testing.assert_array_equal(a, e)


_REPEATS = np.array([[2.5, -1.0, 2.5, 0.0], [-0.0, 7.0, -1.0, 2.5], [2.5, -1.0, 2.5, 0.0]], np.float32)


@pytest.mark.parametrize(
    "attributes",
    [
        {},
        {"sorted": 0},
        {"axis": 0},
        {"axis": 0, "sorted": 0},
        {"axis": -1},
        {"axis": 1, "sorted": 0},
    ],
)
def test_unique_matches_onnxruntime_and_jit_with_a_size_matches_eager(attributes, run_onnxruntime):
    model = _model("Unique", {"x": _REPEATS}, ["y", "indices", "inverse", "counts"], 11, **attributes)
    expected = run_onnxruntime(model, {"x": _REPEATS})
    _assert_same(jaxonnx.load(model)(_REPEATS), expected)
    # Traced, with room for two more: the real entries first, then the documented padding.
    found, axis = len(expected[1]), attributes.get("axis")
    y, indices, inverse, counts = jax.jit(lambda x: ops.unique(x, **attributes, size=found + 2))(jnp.asarray(_REPEATS))
    y = np.asarray(y)
    pad_index = _REPEATS.size if axis is None else _REPEATS.shape[axis]
    np.testing.assert_array_equal(np.take(y, np.arange(found), axis=0 if axis is None else axis), expected[0])
    assert not np.take(y, [found, found + 1], axis=0 if axis is None else axis).any()
    np.testing.assert_array_equal(indices, [*expected[1], pad_index, pad_index])
    np.testing.assert_array_equal(inverse, expected[2])
    np.testing.assert_array_equal(counts, [*expected[3], 0, 0])


def test_unique_of_strings_matches_onnxruntime(run_onnxruntime):
    words = np.array([["b", "a", "b"], ["c", "a", "a"]], dtype=object)
    for attributes in ({}, {"sorted": 0}, {"axis": 1}):
        model = _model("Unique", {"x": words}, ["y", "indices", "inverse", "counts"], 11, **attributes)
        _assert_same(jaxonnx.load(model)(words), run_onnxruntime(model, {"x": words}))


def test_unique_nans_are_one_value_eagerly_and_jitted():
    x = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, 1.0], np.float32)
    eager = ops.unique(x)
    jitted = jax.jit(lambda x: ops.unique(x, size=3))(jnp.asarray(x))
    _assert_same(jitted, eager)
    np.testing.assert_array_equal(eager[3], [2, 2, 2])


def test_unique_gradient_reaches_the_first_occurrences():
    x = jnp.array([3.0, 1.0, 3.0, 2.0])
    grad = jax.jit(jax.grad(lambda x: (ops.unique(x, size=4)[0] * jnp.array([1.0, 10.0, 100.0, 1000.0])).sum()))(x)
    np.testing.assert_array_equal(grad, [100.0, 1.0, 0.0, 10.0])  # sorted: 1, 2, 3, then padding


def test_unique_size_too_small_raises_eagerly_and_at_run_time():
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"^Unique-28 found 3 unique values but `size`=2; the result would be truncated",
    ):
        ops.unique(np.array([1, 2, 3]), size=2)
    run = jax.jit(lambda x: ops.unique(x, size=2))
    _assert_same(
        run(jnp.array([5, 4, 5])), (jnp.array([4, 5]), jnp.array([1, 0]), jnp.array([1, 0, 1]), jnp.array([1, 2]))
    )
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"Unique found 3 unique values at run time but its output was given size=2"
    ):
        np.asarray(run(jnp.array([1, 2, 3]))[0])


def test_unique_refuses_bad_arguments():
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"^Unique-28 got `sorted`=2; it must be 0 or 1\.$"):
        ops.unique(np.arange(3), sorted=2)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"^Unique-28 got `axis`=2 for an input of rank 2"):
        ops.unique(np.zeros((2, 2)), axis=2)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"which dtype int8 of `X` cannot hold exactly"):
        jax.jit(lambda x: ops.unique(x, size=4, fill_value=300))(jnp.arange(3, dtype=jnp.int8))


def test_reverse_sequence_matches_onnxruntime_with_traced_lengths(run_onnxruntime):
    x = _rng.standard_normal((4, 3, 2)).astype(np.float32)
    lengths = np.array([4, 0, 2], np.int64)
    model = _model("ReverseSequence", {"x": x, "lengths": lengths}, ["y"], 10, batch_axis=1, time_axis=0)
    expected = run_onnxruntime(model, {"x": x, "lengths": lengths})
    loaded = jaxonnx.load(model)
    _assert_same(loaded(x, lengths), expected)
    _assert_same(jax.jit(loaded)(x, lengths), expected)
    swapped = _model(
        "ReverseSequence", {"x": x.transpose(1, 0, 2), "lengths": lengths}, ["y"], 10, batch_axis=0, time_axis=1
    )
    _assert_same(
        jax.jit(jaxonnx.load(swapped))(x.transpose(1, 0, 2), lengths),
        run_onnxruntime(swapped, {"x": x.transpose(1, 0, 2), "lengths": lengths}),
    )


def test_reverse_sequence_gradient_is_exact_with_traced_lengths():
    x = jnp.asarray(_rng.standard_normal((3, 4)))
    reverse = jax.jit(lambda x, n: ops.reverse_sequence(x, n, batch_axis=0, time_axis=1))
    lengths = jnp.array([3, 1, 4])
    check_grads(lambda x: reverse(x, lengths), (x,), order=1, modes=("rev", "fwd"))
    weights = jnp.arange(12.0).reshape(3, 4)
    # The gradient of a permutation is the permutation back: weights moved to where x came from.
    grad = jax.grad(lambda x: (reverse(x, lengths) * weights).sum())(x)
    np.testing.assert_array_equal(grad, [[2, 1, 0, 3], [4, 5, 6, 7], [11, 10, 9, 8]])


def test_reverse_sequence_of_strings_and_bad_lengths():
    words = np.array([["a", "b"], ["c", "d"], ["e", "f"]], dtype=object)
    _assert_same(
        [ops.reverse_sequence(words, np.array([3, 2]))], [np.array([["e", "d"], ["c", "b"], ["a", "f"]], dtype=object)]
    )
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"^ReverseSequence-28 got `sequence_lens`\[1\]=4, outside \[0, 3\]"
    ):
        ops.reverse_sequence(words, np.array([1, 4]))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"one must be 0 and the other 1"):
        ops.reverse_sequence(words, np.array([1, 2]), batch_axis=1, time_axis=1)


def test_scatter_matches_onnxruntime(run_onnxruntime):
    # onnx's checker refuses Scatter in a model of opset 11 and later (deprecated there), so
    # models reach Scatter-9; Scatter-11 (negative indices) is checked in the op table.
    data = _rng.standard_normal((3, 4)).astype(np.float32)
    for axis, indices in (
        (1, np.array([[3, 0, 1], [0, 2, 1]], np.int64)),
        (0, np.array([[1, 0, 2, 0], [2, 1, 0, 1]], np.int32)),
    ):
        feed = {"data": data, "indices": indices, "updates": _rng.standard_normal(indices.shape).astype(np.float32)}
        model = _model("Scatter", feed, ["out"], 10, axis=axis)
        _assert_same(jaxonnx.load(model)(*feed.values()), run_onnxruntime(model, feed))


def test_eye_like_matches_onnxruntime_and_is_known_at_trace_time(run_onnxruntime):
    x = np.zeros((3, 5), np.int32)
    for attributes in ({}, {"k": 2, "dtype": T.FLOAT}, {"k": -1, "dtype": T.INT64}):  # onnxruntime has no bool EyeLike
        model = _model("EyeLike", {"x": x}, ["y"], 9, **attributes)
        _assert_same(jaxonnx.load(model)(x), run_onnxruntime(model, {"x": x}))
    assert isinstance(jax.jit(lambda x: jnp.asarray(ops.eye_like(x)).sum())(jnp.asarray(x)), jax.Array)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"^EyeLike-22 needs a rank-2 `input`, got shape \(3,\)\.$"):
        ops.eye_like(np.zeros(3))


@pytest.mark.parametrize(
    "x, axis, found",
    [
        (np.zeros((3, 0), np.float32), 0, 1),  # three empty slices, all equal
        (np.zeros((0, 2), np.float32), 0, 0),
        (np.zeros((0, 2), np.float32), None, 0),
        (np.array(5.0, np.float32), None, 1),
    ],
)
def test_unique_of_empty_slices_empty_inputs_and_scalars_is_the_same_eagerly_and_jitted(x, axis, found):
    eager = ops.unique(x, axis=axis)
    assert eager[3].tolist() == ([x.shape[0]] if found and x.ndim else [1] * found)
    _assert_same(jax.jit(lambda x: ops.unique(x, axis=axis, size=found))(jnp.asarray(x)), eager)
