"""Nearest Resize by an integer factor is a broadcast (no gather): the same values as each
row repeated, and the same gradient as the gather it replaces."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxonnx


# (scales, coordinate transform, nearest rounding) that pick input row i // factor.
@pytest.mark.parametrize(
    ("scales", "mode", "rounding"),
    [
        ((1, 1, 2, 2), "asymmetric", "floor"),
        ((1, 1, 3, 2), "half_pixel", "round_prefer_floor"),
        ((1, 1, 2, 1), "asymmetric", "floor"),
    ],
)
def test_integer_upsampling_repeats_rows_without_a_gather(scales, mode, rounding):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)

    def up(x):
        return jaxonnx.ops.resize(
            x,
            scales=np.asarray(scales, np.float32),
            mode="nearest",
            coordinate_transformation_mode=mode,
            nearest_mode=rounding,
        )

    expected = x
    for axis, factor in enumerate(scales):
        expected = np.repeat(expected, factor, axis=axis)
    np.testing.assert_array_equal(jax.jit(up)(x), expected)
    assert "gather" not in str(jax.make_jaxpr(up)(x))
    cotangent = np.random.default_rng(1).standard_normal(expected.shape).astype(np.float32)
    grad = jax.grad(lambda x: jnp.sum(up(x) * cotangent))(x)
    # The gather's gradient: each input element collects the cotangents of its copies.
    indices = [np.repeat(np.arange(n), f) for n, f in zip(x.shape, scales)]
    gathered = lambda x: x[np.ix_(*indices)]  # noqa: E731
    np.testing.assert_allclose(grad, jax.grad(lambda x: jnp.sum(gathered(x) * cotangent))(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("scale", "rounding"), [(1.5, "round_prefer_floor"), (2, "floor")])
def test_other_row_patterns_still_gather(scale, rounding):
    """A fractional factor, or half_pixel sources floored (rows 0, 0, 0, 1, 1, 2, ...)."""
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    up = lambda x: jaxonnx.ops.resize(
        x, scales=np.asarray([1, 1, scale, 1], np.float32), mode="nearest", nearest_mode=rounding
    )  # noqa: E731
    assert "gather" in str(jax.make_jaxpr(up)(x))
