"""Div: versions 1 and 6 (legacy broadcasting), 7, 13 and 14 (more types)."""

from __future__ import annotations

import jax
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import broadcast_together, true_divide
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.legacy import legacy_binary


@register("Div", 7, 13, 14, padding="elementwise", layout="elementwise")
@np.errstate(all="ignore")  # folded float division by zero gives inf/nan, as in JAX, without a warning
def div(A, B):
    """Implements ONNX Div: ``A / B`` with numpy broadcasting, in the dtype of ``A``.

    Integer division truncates toward zero, as in C (``-7 / 2 == -3``), not numpy's floor
    division. An integer division by zero gives 0 (C leaves it undefined; this is what
    onnx.reference's numpy gives), on the numpy and the JAX path alike; float division by
    zero follows IEEE (inf or nan). Float division is IEEE division also where ``B`` is
    broadcast (see :func:`true_divide`).

    Args:
        A: the dividend, a numeric array.
        B: the divisor, of the dtype of ``A`` and broadcastable with it.

    Returns:
        The quotient, of the broadcast shape and the dtype of ``A``.

    Example:
        >>> jaxonnx.ops.div(jnp.array([-7, 7, 5]), jnp.array([2, 2, 0]))
        Array([-3,  3,  0], dtype=int32)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    if A.dtype.kind not in "iu":
        return true_divide(A, B)
    xp = namespace(A, B)
    by_zero = B == 0
    divisor = xp.where(by_zero, xp.ones_like(B), B)
    if xp is np:
        quotient = np.floor_divide(A, divisor)
        # Floor and truncation differ where the division is inexact and the signs differ.
        quotient = quotient + ((A - quotient * divisor != 0) & ((A < 0) != (divisor < 0))).astype(A.dtype)
    else:
        quotient = jax.lax.div(A, divisor)  # XLA's integer division truncates, as C does
    return xp.where(by_zero, xp.zeros_like(quotient), quotient)


register("Div", 1, 6, padding="elementwise")(legacy_binary(div))

__all__ = ["div"]
