"""Flatten: versions 1, 9, 11, 13, 21, 23, 24 and 25."""

from __future__ import annotations

import math

from jaxonnx._registry import register
from jaxonnx.ops._common import normalize_axis, public_array

_OP = "Flatten"


def _flatten(data, axis=1, *, negative_axis=True, version=25):
    op = _OP if version == 25 else f"{_OP}-{version}"
    rank = data.ndim
    axis = normalize_axis(axis, rank, op=op, allow_negative=negative_axis, upper=rank + 1)
    shape = (math.prod(data.shape[:axis]), math.prod(data.shape[axis:]))
    if data.shape == shape:
        return data
    return data.reshape(shape)


def flatten(data, axis: int = 1):
    """Implements ONNX Flatten: ``data`` as a matrix whose rows are the leading ``axis`` dims.

    Args:
        data: an array of any rank (a scalar, with ``axis=0``, gives shape ``(1, 1)``).
        axis: dims ``[0, axis)`` make the rows, ``[axis, rank)`` the columns; in ``[-rank, rank]``.

    Returns:
        A 2-D array of shape ``(prod(shape[:axis]), prod(shape[axis:]))``; zero-size dims give 0.

    Example:
        >>> jaxonnx.ops.flatten(jnp.zeros((2, 3, 4)), axis=-1).shape
        (6, 4)
    """
    return _flatten(public_array(data, op=_OP, name="input"), axis)


@register(_OP, 11, 13, 21, 23, 24, 25)
def _flatten_11(data, *, axis=1):
    return _flatten(data, axis)


@register(_OP, 9)
def _flatten_9(data, *, axis=1):
    # Flatten-1 and -9 accept only axis in [0, rank]; the registry checks their type lists
    # (Flatten-1: floats only).
    return _flatten(data, axis, negative_axis=False, version=9)


@register(_OP, 1)
def _flatten_1(data, *, axis=1):
    return _flatten(data, axis, negative_axis=False, version=1)


__all__ = ["flatten"]
