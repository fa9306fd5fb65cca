"""The CPU formulations of pooling windows (ops/_helpers/pool_cpu.py, strided slices) against
``reduce_window``: values, gradients (on ties for the maximum), NaN, integers, dilations, and
which formulation each platform lowers to; and MaxPool and AveragePool end to end in a model
against onnxruntime."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxonnx
from jaxonnx.ops._helpers.pool_cpu import (
    _reduce_max,
    _reduce_sum,
    _slices_max,
    _slices_sum,
    max_pool,
    numpy_window_sum,
    window_sum,
)

# (channels-last x shape, kernel, strides, (low, high) padding per spatial axis)
CASES = {
    "3x3 stride 2 pad 1 (ResNet's)": ((2, 9, 8, 5), (3, 3), (2, 2), ((1, 1), (1, 1))),
    "2x2 stride 2, no padding": ((1, 6, 6, 3), (2, 2), (2, 2), ((0, 0), (0, 0))),
    "5x5 stride 1 pad 2 (YOLO's SPPF)": ((1, 7, 6, 4), (5, 5), (1, 1), ((2, 2), (2, 2))),
    "uneven pads, ceil-mode end padding past the input": ((1, 7, 5, 2), (3, 2), (2, 3), ((0, 2), (1, 2))),
    "1-D": ((3, 11, 2), (4,), (3,), ((1, 2),)),
    "3-D": ((1, 4, 5, 6, 2), (2, 3, 2), (1, 2, 2), ((1, 0), (0, 1), (1, 1))),
}


def _x(case, dtype=np.float32, seed=0):
    x = np.random.default_rng(seed).standard_normal(CASES[case][0])
    # ReLU'd: many zeros, so windows tie and the gradient convention shows.
    return np.maximum(x, 0).astype(dtype)


def _geometry(case, lowest=-np.inf, dilations=None):
    """The window over every axis of the channels-last case (1 on the batch and channels)."""
    _, kernel, strides, padding = CASES[case]
    dilations = dilations or (1,) * len(kernel)
    geometry = {
        "window": (1, *kernel, 1),
        "strides": (1, *strides, 1),
        "dilations": (1, *dilations, 1),
        "padding": ((0, 0), *padding, (0, 0)),
    }
    return geometry if lowest is None else {**geometry, "lowest": lowest}


@pytest.mark.parametrize("case", CASES)
def test_slices_equal_reduce_max(case):
    x = _x(case)
    got, expected = jax.jit(lambda x: (_slices_max(x, **_geometry(case)), _reduce_max(x, **_geometry(case))))(x)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("case", CASES)
def test_gradient_goes_to_the_first_maximum_as_reduce_window_s(case):
    x = _x(case, np.float64)
    cotangent = np.random.default_rng(1).standard_normal(
        jax.eval_shape(lambda x: _reduce_max(x, **_geometry(case)), x).shape
    )
    # Both gradients in one program.
    grads = jax.jit(
        lambda x: [
            jax.grad(lambda x: jnp.sum(f(x, **_geometry(case)) * cotangent))(x) for f in (_slices_max, _reduce_max)
        ]
    )(x)
    assert np.count_nonzero(x == 0) > 0  # ties exist
    np.testing.assert_array_equal(grads[0], grads[1])


def test_nan_wins_as_with_lax_max():
    x = _x("3x3 stride 2 pad 1 (ResNet's)")
    x[0, 3, 4, 1] = np.nan
    got = _slices_max(x, **_geometry("3x3 stride 2 pad 1 (ResNet's)"))
    expected = _reduce_max(x, **_geometry("3x3 stride 2 pad 1 (ResNet's)"))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    assert np.isnan(got).sum() == 2  # the two windows (rows 2-4 and 4-6 of the padded input) that read it
    np.testing.assert_array_equal(got, expected)


def test_integers_pad_with_their_minimum():
    x = np.random.default_rng(2).integers(-128, 128, CASES["3x3 stride 2 pad 1 (ResNet's)"][0]).astype(np.int8)
    geometry = _geometry("3x3 stride 2 pad 1 (ResNet's)", lowest=np.int8(-128))
    np.testing.assert_array_equal(_slices_max(x, **geometry), _reduce_max(x, **geometry))


def test_each_platform_lowers_its_formulation():
    case = "3x3 stride 2 pad 1 (ResNet's)"
    g = _geometry(case, lowest=None)
    pools = {
        "max": lambda x, g=g: max_pool(x, g["window"], g["strides"], g["padding"], -np.inf),
        "sum": lambda x, g=g: window_sum(x, g["window"], g["strides"], g["dilations"], g["padding"]),
    }
    for pool in pools.values():
        traced = jax.jit(pool).trace(_x(case))
        assert "reduce_window" not in traced.lower(lowering_platforms=("cpu",)).as_text()
        for platform in ("cuda", "tpu"):
            assert "reduce_window" in traced.lower(lowering_platforms=(platform,)).as_text()
    # A window of more than 64 taps keeps reduce_window everywhere.
    x = np.zeros((1, 9, 9, 2), np.float32)
    big = jax.jit(lambda x: max_pool(x, (1, 9, 9, 1), (1, 1, 1, 1), ((0, 0), (4, 4), (4, 4), (0, 0)), -np.inf)).trace(x)
    assert "reduce_window" in big.lower(lowering_platforms=("cpu",)).as_text()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dilated", [False, True])
def test_window_sum_equals_reduce_window_with_exact_gradients(case, dilated):
    dilations = tuple(2 for _ in CASES[case][1]) if dilated else None
    geometry = _geometry(case, lowest=None, dilations=dilations)
    x = _x(case, np.float64) - 0.3
    cotangent = np.random.default_rng(1).standard_normal(jax.eval_shape(lambda x: _reduce_sum(x, **geometry), x).shape)

    @jax.jit  # the values and both gradients in one program
    def sums_and_gradients(x):
        grads = [jax.grad(lambda x, f=f: jnp.sum(f(x, **geometry) * cotangent))(x) for f in (_slices_sum, _reduce_sum)]
        return _slices_sum(x, **geometry), _reduce_sum(x, **geometry), grads

    got, expected, grads = sums_and_gradients(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # In numpy (the divisors): the same sums.
    np.testing.assert_allclose(numpy_window_sum(x, **geometry), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def _check_conv_then_pool(run_onnxruntime, x_shape, pool, seed):
    """A Conv, a Relu, then ``pool`` (a node from "r" to "y"): channels-last, as in a model,
    against onnxruntime; and its gradient against the graph in ONNX's layout."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((8, x_shape[1], 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        pool,
    ]
    graph = helper.make_graph(
        nodes,
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    (expected,) = run_onnxruntime(model, {"x": x})
    fast, plain = jaxonnx.load(model), jaxonnx.load(model, channels_last=False)

    @jax.jit  # the output and both layouts' gradients in one program
    def output_and_gradients(x):
        return fast(x), [jax.grad(lambda x, m=m: jnp.sum(m(x)[0] ** 2))(x) for m in (fast, plain)]

    (got,), grads = output_and_gradients(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_op_in_a_model_matches_onnxruntime(run_onnxruntime, count_include_pad):
    """AveragePool 3x3, strides (2, 1), uneven pads and ceil_mode, with and without the
    padding counted."""
    from onnx import helper

    pool = helper.make_node(
        "AveragePool",
        ["r"],
        ["y"],
        kernel_shape=[3, 3],
        strides=[2, 1],
        pads=[1, 1, 0, 1],
        ceil_mode=1,
        count_include_pad=count_include_pad,
    )
    _check_conv_then_pool(run_onnxruntime, (2, 3, 9, 10), pool, seed=4)


def test_max_pool_op_in_a_model_matches_onnxruntime(run_onnxruntime):
    """MaxPool 3x3 stride 2 with pads and ceil_mode after a Relu (ties at zero): the values,
    and the gradient equals that of ONNX's layout (reduce_window's first-max rule)."""
    from onnx import helper

    pool = helper.make_node(
        "MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 0], ceil_mode=1
    )
    _check_conv_then_pool(run_onnxruntime, (2, 3, 11, 10), pool, seed=3)
