"""LRN: versions 1 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


@register("LRN", 1, 13, folds=False)
def lrn(X, *, alpha=0.0001, beta=0.75, bias=1.0, size=None):
    """Implements ONNX LRN: local response normalization across channels.

    ``Y[n, c] = X[n, c] / (bias + alpha / size * square_sum[n, c]) ** beta``, where
    ``square_sum[n, c]`` sums ``X[n, i] ** 2`` over the channels
    ``c - floor((size - 1) / 2) <= i <= c + ceil((size - 1) / 2)`` that exist.

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        alpha, beta, bias: the scale, exponent and offset of the normalization.
        size: the number of channels summed (required, positive).

    Returns:
        An array of the shape and dtype of ``X``.

    Example:
        >>> jaxonnx.ops.lrn(jnp.array([[[1.0], [2.0]]]), alpha=1.0, beta=1.0, bias=0.0, size=2).ravel()
        Array([0.4, 1. ], dtype=float32)
    """
    if X.ndim < 3:
        raise OnnxValidationError(f"needs `X` of rank >= 3 (N, C, spatial...), got shape {tuple(X.shape)}.")
    if size is None or size < 1:
        raise OnnxValidationError(f"needs a positive `size` (the channels summed), got {size}.")
    # Half precision computes in float32, rounded once at the end.
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    x = X.astype(work)
    before, after = (size - 1) // 2, -(-(size - 1) // 2)
    window = (1, size) + (1,) * (X.ndim - 2)
    padding = ((0, 0), (before, after)) + ((0, 0),) * (X.ndim - 2)
    square_sum = jax.lax.reduce_window(x * x, np.asarray(0, work), jax.lax.add, window, (1,) * X.ndim, padding)
    scale = np.asarray(bias, work) + np.asarray(alpha / size, work) * square_sum
    return (x / scale ** np.asarray(beta, work)).astype(X.dtype)


__all__ = ["lrn"]
