"""Winograd F(2x2, 3x3) (ops/_helpers/conv_winograd.py) against XLA's convolution: values
within float32 reassociation of the direct convolution, exact gradients, jit and vmap, the
narrow float types, and the rule that says where it runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from jaxonnx.ops._helpers.conv_winograd import winograd_convolve, winograd_wins

# (x shape (N, C, H, W), output channels M, ((top, bottom), (left, right)))
CASES = {
    "same padding": ((1, 4, 8, 8), 3, ((1, 1), (1, 1))),
    "odd sizes, batch 3": ((3, 5, 7, 9), 6, ((1, 1), (1, 1))),
    "no padding": ((2, 3, 6, 5), 4, ((0, 0), (0, 0))),
    "uneven padding": ((1, 2, 5, 6), 3, ((2, 0), (0, 3))),
    "negative padding crops": ((2, 3, 7, 8), 2, ((-1, 1), (1, -1))),
    "3x3 input, one output": ((1, 4, 3, 3), 5, ((0, 0), (0, 0))),
    "one row of output": ((2, 3, 3, 10), 2, ((0, 0), (1, 1))),
    "1x1 input, all padding but the centre": ((2, 6, 1, 1), 4, ((1, 1), (1, 1))),
    "many channels": ((2, 48, 10, 11), 40, ((1, 1), (1, 1))),
}


def _arrays(case, seed=0, dtype=np.float32):
    x_shape, out_channels, _ = CASES[case]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((out_channels, x_shape[1], 3, 3)).astype(dtype)
    return x, w


def _direct(x, w, padding):
    return jax.lax.conv_general_dilated(x, w, (1, 1), padding)


def _relative_error(got, reference):
    got, reference = np.asarray(got, np.float64), np.asarray(reference, np.float64)
    return float(np.max(np.abs(got - reference)) / np.max(np.abs(reference)))


# Winograd's error against a float64 reference may exceed the direct float32 convolution's by
# this factor (F(2x2, 3x3) measured at 0.5-1.9x; F(4x4, 3x3), which would fail, at 4-25x).
_ERROR_FACTOR = 3.0


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("weights", ["numpy", "traced"])
def test_float32_error_is_the_direct_convolutions(case, weights):
    x, w = _arrays(case)
    padding = CASES[case][2]
    reference = _direct(x.astype(np.float64), w.astype(np.float64), padding)
    direct = _direct(x, w, padding)
    if weights == "numpy":  # an ONNX initializer: transformed at trace time
        got = jax.jit(lambda x: winograd_convolve(x, w, padding))(x)
    else:
        got = jax.jit(lambda x, w: winograd_convolve(x, w, padding))(x, jnp.asarray(w))
    assert got.shape == direct.shape and got.dtype == np.float32
    floor = np.finfo(np.float32).eps  # a sum of few terms can be exact for the direct convolution
    assert _relative_error(got, reference) <= _ERROR_FACTOR * max(_relative_error(direct, reference), floor)


@pytest.mark.parametrize("case", ["odd sizes, batch 3", "uneven padding", "negative padding crops"])
def test_float64_equals_direct_convolution(case):
    x, w = _arrays(case, dtype=np.float64)
    padding = CASES[case][2]
    got = jax.jit(lambda x, w: winograd_convolve(x, w, padding))(x, w)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _direct(x, w, padding), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_narrow_floats_compute_in_float32_and_round_once(dtype):
    x, w = _arrays("odd sizes, batch 3", dtype=dtype)
    padding = CASES["odd sizes, batch 3"][2]
    got = jax.jit(lambda x: winograd_convolve(x, w, padding))(x)
    assert got.dtype == dtype
    in_float32 = winograd_convolve(x.astype(np.float32), w.astype(np.float32), padding)
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(in_float32.astype(dtype), np.float32))
    # XLA:CPU's convolution also rounds a float32 sum once: the two are at most one unit
    # in the last place apart (a unit is at most 2^-10 of the value in float16, 2^-7 in bfloat16).
    direct = np.asarray(_direct(x, w, padding), np.float32)
    unit = 2.0 ** -(jnp.finfo(dtype).nmant)
    assert np.all(np.abs(np.asarray(got, np.float32) - direct) <= np.abs(direct) * unit + 1e-6)


@pytest.mark.parametrize("case", ["odd sizes, batch 3", "uneven padding", "1x1 input, all padding but the centre"])
def test_gradients_are_exact_and_equal_the_direct_convolutions(case):
    x, w = _arrays(case, seed=1, dtype=np.float64)
    padding = CASES[case][2]
    winograd = jax.jit(lambda x, w: winograd_convolve(x, w, padding))
    check_grads(winograd, (x, w), order=1, modes=("rev", "fwd"), atol=1e-6, rtol=1e-6)
    y, winograd_vjp = jax.vjp(winograd, x, w)
    _, direct_vjp = jax.vjp(lambda x, w: _direct(x, w, padding), x, w)
    cotangent = np.random.default_rng(2).standard_normal(y.shape)
    for got, expected in zip(winograd_vjp(cotangent), direct_vjp(cotangent)):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_float32_gradients_have_the_direct_convolutions_error():
    x, w = _arrays("many channels", seed=3)
    padding = CASES["many channels"][2]
    cotangent = np.random.default_rng(4).standard_normal((2, 40, 10, 11)).astype(np.float32)

    def grads(convolve, x, w):
        return jax.vjp(lambda x, w: convolve(x, w, padding), x, w)[1](cotangent.astype(x.dtype))

    reference = grads(_direct, x.astype(np.float64), w.astype(np.float64))
    direct = grads(_direct, x, w)
    got = jax.jit(lambda x, w: grads(winograd_convolve, x, w))(x, w)
    for g, d, r in zip(got, direct, reference):
        assert g.dtype == np.float32
        assert _relative_error(g, r) <= _ERROR_FACTOR * _relative_error(d, r)


def test_vmap_equals_a_loop():
    x, w = _arrays("odd sizes, batch 3")
    padding = CASES["odd sizes, batch 3"][2]
    xs = np.stack([x, 2 * x, -x])
    ws = np.stack([w, w[::-1], 0.5 * w])
    batched = jax.jit(jax.vmap(lambda x, w: winograd_convolve(x, w, padding)))(xs, ws)
    single = jax.jit(lambda x, w: winograd_convolve(x, w, padding))
    for i in range(3):
        # The batched dot may sum in another order: float32 reassociation, no more.
        expected = single(xs[i], jnp.asarray(ws[i]))
        np.testing.assert_allclose(
            batched[i], expected, rtol=0, atol=4 * np.finfo(np.float32).eps * float(np.max(np.abs(expected)))
        )


def test_wrong_weights_are_named():
    x, w = _arrays("same padding")
    with pytest.raises(ValueError, match=r"weights of shape \(M, 4, 3, 3\).*\(3, 4, 2, 2\)"):
        winograd_convolve(x, w[:, :, :2, :2], ((1, 1), (1, 1)))
    with pytest.raises(ValueError, match="does not fit"):
        winograd_convolve(x[:, :, :2], w, ((0, 0), (0, 0)))


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "strides", "dilations", "group", "expected"),
    [
        ((1, 256, 14, 14), (256, 256, 3, 3), (1, 1), (1, 1), 1, True),
        ((8, 512, 7, 7), (512, 512, 3, 3), (1, 1), (1, 1), 1, True),
        ((1, 512, 7, 7), (512, 512, 3, 3), (1, 1), (1, 1), 1, True),
        ((8, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1), 1, True),
        ((8, 4, 12, 12), (8, 4, 3, 3), (1, 1), (1, 1), 1, False),  # the CNN fixture: few channels
        ((1, 128, 14, 14), (32, 128, 3, 3), (1, 1), (1, 1), 1, False),
        ((1, 32, 56, 56), (64, 32, 3, 3), (1, 1), (1, 1), 1, False),
        ((1, 256, 14, 14), (256, 256, 3, 3), (2, 2), (1, 1), 1, False),
        ((1, 256, 14, 14), (256, 256, 3, 3), (1, 1), (2, 2), 1, False),
        ((1, 256, 14, 14), (256, 128, 3, 3), (1, 1), (1, 1), 2, False),
        ((1, 256, 14, 14), (256, 256, 5, 5), (1, 1), (1, 1), 1, False),
        ((1, 256, 14), (256, 256, 3), (1,), (1,), 1, False),
    ],
)
def test_winograd_wins_where_measured(x_shape, w_shape, strides, dilations, group, expected):
    assert winograd_wins(x_shape, w_shape, strides, dilations, group) is expected
