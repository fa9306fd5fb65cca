"""LRN (local response normalization): versions 1 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register


@register("LRN", 1, 13, folds=False)
def lrn(X, *, size: int, alpha: float = 0.0001, beta: float = 0.75, bias: float = 1.0):
    """Implements ONNX LRN: ``X / (bias + alpha / size * square_sum) ** beta`` across channels.

    ``square_sum[n, c, ...]`` is the sum of ``X[n, i, ...] ** 2`` over the channels
    ``i`` from ``c - floor((size - 1) / 2)`` to ``c + ceil((size - 1) / 2)`` (clipped to
    ``[0, C - 1]``). float16 and bfloat16 are computed in float32.

    Args:
        X: a float array of shape ``(N, C, D1, ..., Dk)``.
        size: the number of channels summed over, >= 1.
        alpha, beta, bias: the scale, exponent and offset.

    Returns:
        An array of the shape and dtype of ``X``.

    Example:
        >>> jaxonnx.ops.lrn(jnp.array([[[1.0], [2.0], [3.0]]]), size=2, alpha=1.0, beta=1.0)
        Array([[[0.2857143 ],
                [0.26666668],
                [0.54545456]]], dtype=float32)
    """
    if size < 1:
        raise OnnxValidationError(f"got `size`={size}; it must be at least 1.")
    if X.ndim < 2:
        raise OnnxValidationError(f"needs `X` of shape (N, C, D1, ..., Dk), got shape {tuple(X.shape)}.")
    x = X.astype(np.float32) if X.dtype.itemsize == 2 else X
    channels = X.shape[1]
    before, after = (size - 1) // 2, size // 2  # floor and ceil of (size - 1) / 2
    squares = x * x
    padded = jnp.pad(squares, [(0, 0), (before, after)] + [(0, 0)] * (X.ndim - 2))
    square_sum = sum(padded[:, k : k + channels] for k in range(size))
    return (x / (bias + (alpha / size) * square_sum) ** beta).astype(X.dtype)


__all__ = ["lrn"]
