"""The CPU formulations of grouped, depthwise and 1x1 convolutions (ops/_helpers/conv_cpu.py)
against XLA's convolution, called directly, in ONNX's layout and channels-last: values,
exact gradients, vmap, and which formulation each platform lowers to."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxonnx
from jaxonnx._xla_cpu import ynn_convolutions
from jaxonnx.ops._helpers.conv_cpu import (
    _cpu_formulation,
    _sum,
    convolve,
    cpu_convolve,
    multiply_adds,
    patches,
    pointwise,
    xla_convolve,
)
from tests._grads import check_grads as check_grads_once

# (x shape, w shape, strides, (low, high) padding per axis, dilations, group, dtype)
CASES = {
    "depthwise 3x3 same": ((2, 4, 6, 7), (4, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 4, np.float32),
    "depthwise strided uneven pads": ((1, 3, 9, 8), (3, 1, 3, 2), (2, 3), ((0, 2), (1, 0)), (1, 1), 3, np.float32),
    "depthwise dilated, multiplier 2": ((1, 3, 8, 8), (6, 1, 3, 3), (1, 1), ((2, 2), (1, 3)), (2, 2), 3, np.float64),
    "grouped 4 per group": ((1, 8, 5, 6), (6, 4, 3, 3), (1, 2), ((1, 1), (0, 1)), (1, 1), 2, np.float32),
    "5x5 on 1x1 (taps in padding left out)": (
        (2, 4, 1, 1),
        (4, 1, 5, 5),
        (1, 1),
        ((2, 2), (2, 2)),
        (1, 1),
        4,
        np.float32,
    ),
    "stride past the input (only padding read)": (
        (1, 2, 1, 1),
        (2, 1, 1, 1),
        (2, 2),
        ((1, 1), (1, 1)),
        (1, 1),
        2,
        np.float32,
    ),
    "window never reaches the input's end": (
        (1, 2, 7, 7),
        (2, 1, 2, 2),
        (3, 3),
        ((0, 0), (0, 0)),
        (1, 1),
        2,
        np.float64,
    ),
    "1-D": ((2, 4, 11), (8, 2, 3), (2,), ((1, 2),), (2,), 2, np.float32),
    "depthwise 1-D, multiplier 3": ((2, 3, 10), (9, 1, 4), (3,), ((2, 1),), (2,), 3, np.float32),
    "depthwise 7x7 (49 terms over 4 partial sums)": (
        (1, 8, 9, 9),
        (8, 1, 7, 7),
        (1, 1),
        ((3, 3), (3, 3)),
        (1, 1),
        8,
        np.float64,
    ),
    "grouped 4 per group, 5x5 (100 terms), 2 outputs each": (
        (1, 8, 6, 6),
        (4, 4, 5, 5),
        (1, 1),
        ((2, 2), (2, 2)),
        (1, 1),
        2,
        np.float64,
    ),
    "grouped 8 per group, strided (RegNet's)": (
        (2, 16, 7, 8),
        (16, 8, 3, 3),
        (2, 1),
        ((1, 1), (1, 1)),
        (1, 1),
        2,
        np.float32,
    ),
    "grouped 1x1, 8 per group": ((1, 24, 5, 5), (12, 8, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 3, np.float64),
    "3-D": ((1, 2, 4, 3, 5), (4, 1, 2, 2, 3), (1, 1, 2), ((1, 0), (0, 1), (1, 1)), (1, 1, 1), 2, np.float64),
    "float16": ((1, 4, 6, 6), (4, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 4, np.float16),
    "bfloat16": ((1, 4, 5, 5), (8, 2, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), 2, jnp.bfloat16),
    "stem 3x3 stride 2, 3 -> 8 channels (group 1)": (
        (2, 3, 9, 8),
        (8, 3, 3, 3),
        (2, 2),
        ((1, 1), (0, 1)),
        (1, 1),
        1,
        np.float64,
    ),
    "1-D stem, 1 channel, dilated": ((2, 1, 20), (8, 1, 5), (2,), ((2, 1),), (2,), 1, np.float32),
    "1x1 pointwise (one dot)": ((2, 6, 5, 7), (4, 6, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1, np.float32),
    "1x1 strided 3-D": (
        (2, 3, 4, 5, 6),
        (5, 3, 1, 1, 1),
        (2, 1, 3),
        ((0, 0), (0, 0), (0, 0)),
        (1, 1, 1),
        1,
        np.float64,
    ),
    "4x4 patches, input cropped to whole patches (one dot)": (
        (2, 3, 18, 21),
        (8, 3, 4, 4),
        (4, 4),
        ((0, 0), (0, 0)),
        (1, 1),
        1,
        np.float32,
    ),
    "1-D patches": ((2, 5, 10), (6, 5, 3), (3,), ((0, 0),), (1,), 1, np.float64),
    "3-D patches, unequal sides": (
        (1, 2, 4, 6, 9),
        (3, 2, 2, 3, 3),
        (2, 3, 3),
        ((0, 0), (0, 0), (0, 0)),
        (1, 1, 1),
        1,
        np.float64,
    ),
}


def _arrays(case, seed=0):
    x_shape, w_shape, *_, dtype = CASES[case]
    rng = np.random.default_rng(seed)
    return rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype)


def _geometry(case):
    _, _, strides, padding, dilations, group, _ = CASES[case]
    return {"strides": strides, "padding": padding, "dilations": dilations, "group": group}


def _tolerance(dtype):
    # One rounding of the float32 sum for the narrow types; reassociation for the others.
    return {np.float16: 1e-3, jnp.bfloat16: 1e-2, np.float32: 1e-5, np.float64: 1e-12}[dtype]


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_cpu_formulation_equals_xla_convolution(case, channels_last):
    x, w = _arrays(case)
    geometry = _geometry(case)
    # The case exercises a rewrite.
    assert (
        multiply_adds(w.shape, geometry["group"])
        or pointwise(w.shape, geometry["padding"], geometry["group"])
        or patches(w.shape, geometry["strides"], geometry["padding"], geometry["dilations"], geometry["group"])
    )
    expected = xla_convolve(x, w, **geometry)
    if channels_last:
        expected = jnp.moveaxis(expected, 1, -1)
        x = np.moveaxis(x, 1, -1)
        assert np.array_equal(xla_convolve(x, w, **geometry, channels_last=True), expected)
    # ynn=True: the 1x1 cases run as one dot whichever convolution this process's XLA runs.
    got = jax.jit(lambda x, w: cpu_convolve(x, w, **geometry, channels_last=channels_last, ynn=True))(x, w)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    tol = _tolerance(CASES[case][-1])
    scale = float(np.max(np.abs(np.asarray(expected, np.float64)))) or 1.0
    np.testing.assert_allclose(
        np.asarray(got, np.float64), np.asarray(expected, np.float64), rtol=tol, atol=tol * scale
    )


@pytest.mark.parametrize(
    "case",
    [
        "depthwise strided uneven pads",
        "grouped 4 per group",
        "5x5 on 1x1 (taps in padding left out)",
        "3-D",
        "depthwise 1-D, multiplier 3",
        "1x1 strided 3-D",
        "stem 3x3 stride 2, 3 -> 8 channels (group 1)",
        "3-D patches, unequal sides",
    ],
)
def test_gradients_are_exact_and_equal_xla_convolution(case):
    x, w = (a.astype(np.float64) for a in _arrays(case, seed=1))
    geometry = _geometry(case)
    cpu = jax.jit(lambda x, w: cpu_convolve(x, w, **geometry, ynn=True))
    check_grads(cpu, (x, w), order=1, modes=("rev", "fwd"), atol=1e-6, rtol=1e-6)
    y, cpu_vjp = jax.vjp(cpu, x, w)
    _, xla_vjp = jax.vjp(lambda x, w: xla_convolve(x, w, **geometry), x, w)
    cotangent = np.random.default_rng(2).standard_normal(y.shape)
    for got, expected in zip(cpu_vjp(cotangent), xla_vjp(cotangent)):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 9, 25])
def test_partial_sums_add_every_term_once(count):
    # Distinct powers of two: a term left out or added twice changes the sum's bits.
    assert _sum([2**i for i in range(count)]) == 2**count - 1


def test_sums_run_channels_last():
    """The sum moves the channels last (to meet XLA's channels-last convolutions in a
    model) and back."""
    for case in ("depthwise 3x3 same", "grouped 4 per group"):
        text = jax.jit(lambda x, w: cpu_convolve(x, w, **_geometry(case))).lower(*_arrays(case)).as_text()
        assert "dims = [0, 2, 3, 1]" in text and "dims = [0, 3, 1, 2]" in text and "convolution" not in text


@pytest.mark.parametrize("case", ["grouped 4 per group", "depthwise dilated, multiplier 2"])
def test_vmap_equals_a_loop(case):
    x, w = _arrays(case)
    geometry = _geometry(case)
    xs = np.stack([x, 2 * x, -x])
    ws = np.stack([w, w[::-1], 0.5 * w])
    batched = jax.jit(jax.vmap(lambda x, w: convolve(x, w, **geometry)))(xs, ws)
    for i in range(3):
        np.testing.assert_allclose(batched[i], xla_convolve(xs[i], ws[i], **geometry), rtol=1e-5, atol=1e-5)


def test_each_platform_lowers_its_formulation():
    x, w = _arrays("depthwise 3x3 same")
    traced = jax.jit(lambda x, w: convolve(x, w, **_geometry("depthwise 3x3 same"))).trace(x, w)
    assert "convolution" not in traced.lower(lowering_platforms=("cpu",)).as_text()
    for platform in ("cuda", "tpu"):
        assert "convolution" in traced.lower(lowering_platforms=(platform,)).as_text()
    # A convolution with many input channels per group keeps XLA's everywhere.
    wide = np.zeros((4, 32, 3, 3), np.float32)
    assert not multiply_adds(wide.shape, 1) and not multiply_adds((32, 32, 3, 3), 2)
    # Up to 8 channels per group are a sum; 16 keep XLA's convolution (the sum was slower).
    assert multiply_adds((16, 4, 3, 3), 4) and multiply_adds((16, 8, 3, 3), 2) and multiply_adds((16, 8, 1, 1), 2)
    assert not multiply_adds((32, 16, 3, 3), 2) and not multiply_adds((32, 16, 1, 1), 2)
    traced = jax.jit(lambda x, w: convolve(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1)).trace(
        np.zeros((1, 32, 5, 5), np.float32), wide
    )
    assert "convolution" in traced.lower(lowering_platforms=("cpu",)).as_text()
    # A 3x3 stem over 3 colour channels is a sum on CPU; a 7x7 one (147 terms) and one onto
    # 4 channels keep XLA's convolution.
    assert (
        multiply_adds((16, 3, 3, 3), 1) and not multiply_adds((64, 3, 7, 7), 1) and not multiply_adds((4, 3, 3, 3), 1)
    )
    stem = jax.jit(lambda x, w: convolve(x, w, (2, 2), ((1, 1), (1, 1)), (1, 1), 1)).trace(
        np.zeros((1, 3, 16, 16), np.float32), np.zeros((16, 3, 3, 3), np.float32)
    )
    assert "convolution" not in stem.lower(lowering_platforms=("cpu",)).as_text()
    assert "convolution" in stem.lower(lowering_platforms=("cuda",)).as_text()
    # A 1x1 convolution is one dot on CPU only, in either layout, where XLA:CPU's convolution
    # is YNNPACK's; Eigen's convolution (what ``import jaxonnx`` gives on jaxlib 0.10) keeps it.
    for channels_last, shape in ((False, (1, 32, 5, 5)), (True, (1, 5, 5, 32))):
        traced = jax.jit(
            lambda x, w: convolve(x, w, (1, 1), ((0, 0), (0, 0)), (1, 1), 1, channels_last=channels_last)
        ).trace(np.zeros(shape, np.float32), np.zeros((8, 32, 1, 1), np.float32))
        assert ("convolution" not in traced.lower(lowering_platforms=("cpu",)).as_text()) == ynn_convolutions()
        assert "convolution" in traced.lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "strides", "group", "with_ynnpack", "with_eigen"),
    [
        ((1, 16, 8, 8), (16, 1, 3, 3), (1, 1), 16, "sums", "sums"),  # depthwise
        ((1, 3, 32, 32), (16, 3, 3, 3), (2, 2), 1, "sums", "sums"),  # stem
        ((1, 32, 8, 8), (64, 32, 1, 1), (1, 1), 1, "dot", None),  # 1x1: Eigen's convolution won
        ((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), 1, "winograd", None),  # Eigen's won below 256 channels
        ((1, 128, 28, 28), (128, 128, 3, 3), (1, 1), 1, "winograd", None),
        ((1, 256, 14, 14), (256, 256, 3, 3), (1, 1), 1, "winograd", "winograd"),
        ((1, 512, 7, 7), (512, 512, 3, 3), (1, 1), 1, "winograd", "winograd"),
        ((1, 64, 56, 56), (128, 64, 3, 3), (2, 2), 1, None, None),  # strided: XLA's
        ((1, 3, 224, 224), (64, 3, 7, 7), (2, 2), 1, None, None),  # 7x7 stem (147 terms): XLA's
        ((1, 3, 224, 224), (192, 3, 16, 16), (16, 16), 1, "patches", "patches"),  # ViT's patch embedding
    ],
)
def test_formulation_follows_the_convolution_library(x_shape, w_shape, strides, group, with_ynnpack, with_eigen):
    same = w_shape[2] > 1 and tuple(strides) != tuple(w_shape[2:])
    padding = tuple((k // 2, k // 2) for k in w_shape[2:]) if same else ((0, 0), (0, 0))
    dilations = (1,) * len(strides)
    for ynn, expected in ((True, with_ynnpack), (False, with_eigen)):
        assert _cpu_formulation(x_shape, w_shape, strides, padding, dilations, group, ynn=ynn) == expected


def test_conv_op_matches_onnxruntime_on_a_depthwise_block(run_onnxruntime):
    """The Conv op end to end (bias, SAME_UPPER, stride 2) on the rewritten path."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 9, 9)).astype(np.float32)
    w = rng.standard_normal((12, 1, 5, 5)).astype(np.float32)
    b = rng.standard_normal(12).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=6, strides=[2, 2], auto_pad="SAME_UPPER")
    graph = helper.make_graph(
        [node],
        "depthwise",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    (expected,) = run_onnxruntime(model, {"x": x})
    (got,) = jax.jit(jaxonnx.load(model))(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["depthwise 3x3 same", "grouped 4 per group", "winograd 256 channels"])
def test_weights_known_at_trace_time_give_the_same_convolution(case):
    # An initializer under jax.jit reaches `convolve` as a concrete array: it stays out of
    # the platform branches' operands (Winograd transforms it in numpy), same values, and
    # the gradient in x is XLA's convolution's.
    if case == "winograd 256 channels":  # Winograd with either convolution library (64 with YNNPACK's)
        rng = np.random.default_rng(5)
        x, w = (
            rng.standard_normal((1, 256, 5, 4)).astype(np.float32),
            rng.standard_normal((256, 256, 3, 3)).astype(np.float32),
        )
        geometry = {"strides": (1, 1), "padding": ((1, 1), (1, 1)), "dilations": (1, 1), "group": 1}
    else:
        (x, w), geometry = _arrays(case), _geometry(case)
    expected = xla_convolve(x, w, **geometry)
    for weights in (w, jnp.asarray(w)):
        got = jax.jit(lambda x: convolve(x, weights, **geometry))(x)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * float(np.abs(expected).max()))
    # On CPU the rewrite runs, with the weights as constants (not operands).
    assert "convolution" not in jax.jit(lambda x: convolve(x, w, **geometry)).lower(x).as_text()
    cotangent = np.random.default_rng(6).standard_normal(expected.shape).astype(np.float32)
    (got_grad,) = jax.vjp(lambda x: convolve(x, w, **geometry), x)[1](cotangent)
    (want_grad,) = jax.vjp(lambda x: xla_convolve(x, w, **geometry), x)[1](cotangent)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-5 * float(np.abs(want_grad).max()))


def _block(x, stem, depthwise):
    """A stem (3 -> 8 channels, shifted multiply-adds), a ReLU, a depthwise 3x3 (the same),
    a max pool's selection and a normalization: what reads a sum's output under jax.grad."""
    same = {"strides": (1, 1), "padding": ((1, 1), (1, 1)), "dilations": (1, 1)}
    y = jax.nn.relu(cpu_convolve(x, stem, group=1, **same))
    y = cpu_convolve(y, depthwise, group=8, **same)
    y = jnp.maximum(y[..., ::2, :], y[..., 1::2, :])
    return jnp.sum(jnp.sin((y - y.mean()) / y.std()))


def test_a_gradients_program_holds_each_sum_once():
    """Under jax.grad a sum's value and its weights' gradient are contractions, so XLA does
    not fuse the sum into each weight's reduction: the gradient's program stays a few times
    the forward one (27x here before, 61x for the fixtures' CNN: 8.7 s to compile)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 12, 12)).astype(np.float32)
    stem = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    depthwise = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    assert multiply_adds(stem.shape, 1) and multiply_adds(depthwise.shape, 8)

    def instructions(f):
        return jax.jit(f).lower(x, stem, depthwise).compile().as_text().count(" = ")

    forward, gradient = instructions(_block), instructions(jax.grad(_block, argnums=(0, 1, 2)))
    assert gradient < 5 * forward, (forward, gradient)

    # and the gradient is still XLA's convolution's, to float32 rounding
    def xla_block(x, stem, depthwise):
        same = {"strides": (1, 1), "padding": ((1, 1), (1, 1)), "dilations": (1, 1)}
        y = jax.nn.relu(xla_convolve(x, stem, group=1, **same))
        y = xla_convolve(y, depthwise, group=8, **same)
        y = jnp.maximum(y[..., ::2, :], y[..., 1::2, :])
        return jnp.sum(jnp.sin((y - y.mean()) / y.std()))

    got = jax.jit(jax.grad(_block, argnums=(0, 1, 2)))(x, stem, depthwise)
    expected = jax.jit(jax.grad(xla_block, argnums=(0, 1, 2)))(x, stem, depthwise)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=2e-4, atol=2e-4 * float(np.max(np.abs(e))))


@pytest.mark.parametrize("case", ["stem 3x3 stride 2, 3 -> 8 channels (group 1)", "depthwise 3x3 same"])
def test_second_derivatives_of_the_sums_are_exact(case):
    """The sums' custom JVPs are themselves differentiable: the gradient's own JVP and VJP
    against central differences (second derivatives, in one compiled program)."""
    x, w = (a.astype(np.float64) for a in _arrays(case, seed=3))
    geometry = _geometry(case)
    gradient = jax.grad(lambda x, w: jnp.sum(jnp.sin(cpu_convolve(x, w, **geometry, ynn=True))), argnums=(0, 1))
    # float64, as the op table's gradients (1e-4 there): central differences of step 1e-4
    # are off by about 1e-6 relative on these sums of sines.
    check_grads_once(gradient, (x, w), atol=1e-5, rtol=1e-5)
