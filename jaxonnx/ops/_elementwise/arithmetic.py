"""Add, Sub and Mul: versions 1 and 6 (legacy broadcasting), 7, 13 and 14 (more types).

They fold: on numpy inputs they compute with numpy (exact shape arithmetic at trace time).
Integers wrap around on overflow, as in numpy, XLA and C.
"""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import broadcast_together
from jaxonnx.ops._helpers.legacy import legacy_binary


@register("Add", 7, 13, 14, padding="elementwise", adds=True, layout="elementwise")
@np.errstate(all="ignore")  # folded float overflow gives inf, as in JAX, without a warning
def add(A, B):
    """Implements ONNX Add: ``A + B`` with numpy broadcasting.

    Args:
        A: a numeric array.
        B: an array of the dtype of ``A``, broadcastable with it.

    Returns:
        The elementwise sum, of the broadcast shape and the dtype of ``A``.

    Example:
        >>> jaxonnx.ops.add(jnp.array([[1, 2]]), jnp.array([[10], [20]]))
        Array([[11, 12],
               [21, 22]], dtype=int32)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A + B


@register("Sub", 7, 13, 14, padding="elementwise", layout="elementwise")
@np.errstate(all="ignore")
def sub(A, B):
    """Implements ONNX Sub: ``A - B`` with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.sub(jnp.array([5.0, 7.0]), jnp.array(2.0))
        Array([3., 5.], dtype=float32)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A - B


@register("Mul", 7, 13, 14, padding="elementwise", layout="elementwise")
@np.errstate(all="ignore")
def mul(A, B):
    """Implements ONNX Mul: ``A * B`` with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.mul(jnp.array([2, 3]), jnp.array([4, 5]))
        Array([ 8, 15], dtype=int32)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A * B


register("Add", 1, 6, padding="elementwise", adds=True)(legacy_binary(add))
register("Sub", 1, 6, padding="elementwise")(legacy_binary(sub))
register("Mul", 1, 6, padding="elementwise")(legacy_binary(mul))

__all__ = ["add", "sub", "mul"]
