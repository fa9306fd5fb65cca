"""Trilu: version 14."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced, namespace


@register("Trilu", 14, concrete=("k",))
def trilu(input, k=None, *, upper: int = 1):
    """Implements ONNX Trilu: the upper (or lower) triangle of the last two dims of ``input``.

    Elements with ``col - row >= k`` are kept for ``upper=1`` (``col - row <= k`` for
    ``upper=0``), the others become zero (``False``, or ``""`` for strings), as
    ``jnp.triu``/``jnp.tril`` but with ``k`` allowed to be traced.

    Args:
        input: an array of rank >= 2; leading dims are batch dims.
        k: the diagonal offset, a scalar int64 (default 0); positive is above the main diagonal.
        upper: 1 keeps the upper triangle, 0 the lower one.

    Returns:
        An array of the shape and dtype of ``input``.

    Example:
        >>> jaxonnx.ops.trilu(jnp.ones((2, 3), jnp.int32), np.array(1))
        Array([[0, 1, 1],
               [0, 0, 1]], dtype=int32)
    """
    if input.ndim < 2:
        raise OnnxValidationError(f"needs `input` of rank >= 2, got shape {tuple(input.shape)}.")
    if upper not in (0, 1):
        raise OnnxValidationError(f"got `upper`={upper}; it must be 0 or 1.")
    rows, cols = input.shape[-2:]
    if k is None:
        k = 0
    elif k.size != 1:
        raise OnnxValidationError(f"needs a scalar `k`, got shape {tuple(k.shape)}.")
    offset = np.subtract.outer(np.arange(cols), np.arange(rows)).T  # col - row, shape (rows, cols)
    if is_traced(k):
        # Any k outside [-rows, cols] keeps or clears everything; clipped, it fits int32.
        k = k.reshape(()).clip(-rows - 1, cols + 1).astype(np.int32)
        offset = offset.astype(np.int32)
    else:
        k = int(np.clip(np.asarray(k).reshape(-1)[0], -rows - 1, cols + 1))
    keep = (offset >= k if upper else offset <= k).reshape((1,) * (input.ndim - 2) + (rows, cols))
    xp = namespace(input, keep)
    zero = np.asarray("" if input.dtype.kind in "OUS" else 0).astype(input.dtype)
    return xp.where(keep, input, zero)


__all__ = ["trilu"]
