"""Pow: versions 1 (legacy broadcasting), 7, 12 (exponent of its own type T1), 13 and 15."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import broadcast_together
from jaxonnx.ops._helpers.legacy import legacy_binary


# folds=False: XLA's and numpy's float `pow` differ in the last bit, and an op gives one answer.
@register("Pow", 7, 12, 13, 15, folds=False, padding="elementwise", layout="elementwise")
def pow(X, Y):
    """Implements ONNX Pow: ``X ** Y`` with numpy broadcasting, in the dtype of ``X``.

    From version 12 the exponent may have another type than the base. A float base is
    raised to the exponent converted to the wider of the two float types, then rounded
    to the base's type. An integer base with an integer exponent is exact integer
    arithmetic (wrapping on overflow); a negative exponent gives the truncated quotient
    ``1 / X**-Y``: 1 for ``X=1``, ±1 for ``X=-1``, else 0 (also for ``X=0``, where C and
    numpy have no answer). An integer base with a float exponent is computed in float64
    (float32 with ``jax_enable_x64`` off) and truncated toward zero, as onnx.reference does.

    Gradients: with respect to ``X``, JAX's rule for ``jnp.power``. With respect to a float
    ``Y``, ``X ** Y * log(X)`` where ``X > 0``, and 0 where ``X <= 0``. At ``X < 0`` the
    power is defined only at integral ``Y`` and is not continuous in ``Y`` there, so it has
    no derivative; at ``X = 0`` it is constant (0) in ``Y > 0``. So the gradient in ``Y``
    is finite wherever the inputs and the value are finite (``log(X)`` alone is nan or
    -inf at ``X <= 0``; PyTorch zeroes it only at ``X = 0`` with ``Y >= 0`` and gives nan
    for a negative base), and a trainable exponent applied to negative data does not turn
    a training step into nan. (The gradient in ``X`` keeps JAX's values, e.g. nan at
    ``X = 0, Y = 0``.)

    Args:
        X: the base (int32, int64 or float).
        Y: the exponent, any numeric type, broadcastable with ``X``.

    Returns:
        An array of the broadcast shape and the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.pow(jnp.array([2.0, -2.0, 4.0]), jnp.array([3, 3, -1]))
        Array([ 8.  , -8.  ,  0.25], dtype=float32)
    """
    X, Y = broadcast_together(X, Y, names=("X", "Y"))
    x_int, y_int = X.dtype.kind in "iu", Y.dtype.kind in "iu"
    if not x_int:
        if y_int:
            return jnp.power(X, Y.astype(X.dtype))
        wide = _wider_float(X.dtype, Y.dtype)
        return _float_power(X.astype(wide), Y.astype(wide)).astype(X.dtype)
    if not y_int:
        wide = jax.dtypes.canonicalize_dtype(jnp.float64)  # float64, or float32 with x64 off
        return jnp.power(X.astype(wide), Y.astype(wide)).astype(X.dtype)
    negative = Y < 0
    power = jnp.power(X, jnp.where(negative, jnp.zeros_like(Y), Y).astype(X.dtype))
    odd = (Y % 2).astype(bool)
    inverse = jnp.where(X == 1, 1, jnp.where(X == -1, jnp.where(odd, -1, 1), 0)).astype(X.dtype)
    return jnp.where(negative, inverse, power)


@jax.custom_jvp
def _float_power(x, y):
    return jnp.power(x, y)


def _float_power_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    value = jnp.power(x, y)
    # Symbolic zeros: a constant base or exponent contributes nothing (not 0 * nan, which
    # JAX's base rule would give at x = 0, y = 0, and which would spoil the exponent's part).
    total = jnp.zeros_like(value)
    if not isinstance(x_dot, SymbolicZero):
        total = total + jax.jvp(lambda base: jnp.power(base, y), (x,), (x_dot,))[1]  # JAX's rule for the base
    if not isinstance(y_dot, SymbolicZero):
        # d/dy x**y = x**y * log(x) only where x > 0; 0 where x <= 0 (see `pow`'s docstring).
        # log sees 1 off the domain, so no nan or inf enters the product that `where` discards.
        positive = x > 0
        log_x = jnp.log(jnp.where(positive, x, jnp.ones_like(x)))
        total = total + jnp.where(positive, value * log_x, jnp.zeros_like(value)) * y_dot
    return value, total


_float_power.defjvp(_float_power_jvp, symbolic_zeros=True)


def _wider_float(a, b):
    # Explicit: JAX's strict promotion mode has no implicit float16 -> float64 path.
    if a == b or a.itemsize > b.itemsize:
        return a
    return b if b.itemsize > a.itemsize else jnp.dtype(jnp.float32)  # float16 with bfloat16


register("Pow", 1, folds=False, padding="elementwise")(legacy_binary(pow, names=("X", "Y")))

__all__ = ["pow"]
