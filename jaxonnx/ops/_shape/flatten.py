"""Flatten: versions 1, 9, 11, 13, 21, 23, 24 and 25."""

from __future__ import annotations

import math

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import normalize_axis


@register("Flatten", 11, 13, 21, 23, 24, 25, padding="moves", keeps_non_zeros=True)
def flatten(input, *, axis: int = 1):
    """Implements ONNX Flatten: ``input`` as a matrix whose rows are the leading ``axis`` dims.

    Args:
        input: an array of any rank (a scalar, with ``axis=0``, gives shape ``(1, 1)``).
        axis: dims ``[0, axis)`` make the rows, ``[axis, rank)`` the columns; in ``[-rank, rank]``.

    Returns:
        A 2-D array of shape ``(prod(shape[:axis]), prod(shape[axis:]))``; zero-size dims give 0.

    Example:
        >>> jaxonnx.ops.flatten(jnp.zeros((2, 3, 4)), axis=-1).shape
        (6, 4)
    """
    return _flatten(input, axis, allow_negative=True)


@register("Flatten", 1, 9, padding="moves", keeps_non_zeros=True)
def _flatten_1(input, *, axis=1):
    # Flatten-1 and -9 accept only axis in [0, rank] (Flatten-1: floats only, from its schema).
    return _flatten(input, axis, allow_negative=False)


def _flatten(data, axis, *, allow_negative):
    rank = data.ndim
    axis = normalize_axis(axis, rank, allow_negative=allow_negative, upper=rank + 1)
    shape = (math.prod(data.shape[:axis]), math.prod(data.shape[axis:]))
    return data if data.shape == shape else data.reshape(shape)


__all__ = ["flatten"]
