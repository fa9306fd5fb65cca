"""LpNormalization: versions 1 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import normalize_axis


@register("LpNormalization", 1, 22, folds=False)
def lp_normalization(input, *, axis: int = -1, p: int = 2):
    """Implements ONNX LpNormalization: ``input / ||input||_p`` along ``axis`` (0 where the norm is 0).

    The norm is ``sum(|x|)`` for ``p=1`` (the L1 norm; onnx.reference sums ``x`` without
    the absolute value, which differs for negative inputs) and ``sqrt(sum(x ** 2))`` for
    ``p=2``. Each slice is first divided by its largest magnitude (the result does not
    change), so the squares cannot overflow or underflow. The gradient is exact, and 0 at
    an all-zero slice (the output is 0 there).

    Args:
        input: a float array of rank >= 1.
        axis: the axis to normalize along, in ``[-rank, rank - 1]``.
        p: 1 or 2.

    Returns:
        An array of the shape and dtype of ``input``.

    Example:
        >>> jaxonnx.ops.lp_normalization(jnp.array([[3.0, -4.0], [0.0, 0.0]]))
        Array([[ 0.6, -0.8],
               [ 0. ,  0. ]], dtype=float32)
    """
    if p not in (1, 2):
        raise OnnxValidationError(f"got `p`={p}; it must be 1 or 2.")
    if input.ndim == 0:
        raise OnnxValidationError("needs `input` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, input.ndim)
    magnitude = jnp.abs(input)
    largest = jax.lax.stop_gradient(jnp.max(magnitude, axis=axis, keepdims=True, initial=0))
    zero = largest == 0
    scaled = input / jnp.where(zero, jnp.ones_like(largest), largest)
    if p == 1:
        norm = jnp.sum(jnp.abs(scaled), axis=axis, keepdims=True)
    else:
        # An all-zero slice takes the root of 1, not of 0 (whose derivative is inf, and inf * 0 = nan).
        squares = jnp.sum(scaled * scaled, axis=axis, keepdims=True)
        norm = jnp.sqrt(jnp.where(zero, jnp.ones_like(squares), squares))
    # The scaled norm is >= 1 where the slice is not all zeros (its largest term is 1).
    return jnp.where(zero, jnp.zeros_like(scaled), scaled / jnp.where(zero, jnp.ones_like(norm), norm))


__all__ = ["lp_normalization"]
