"""Mod: versions 10, 13 and 28 (each only adds types)."""

from __future__ import annotations

import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._registry import register
from jaxonnx.ops._broadcasting import broadcast_together
from jaxonnx.ops._common import namespace


@register("Mod", 10, 13, 28)
@np.errstate(all="ignore")  # folded fmod by zero gives nan, as in JAX, without a warning
def mod(A, B, *, fmod: int = 0):
    """Implements ONNX Mod: the remainder of ``A / B``, with numpy broadcasting.

    ``fmod=0`` (integers only) gives the remainder with the sign of the divisor, like
    Python's ``%`` and ``np.mod``; ``fmod=1`` gives C's ``fmod``, with the sign of the
    dividend, and is required for floats (as the operator's text says). An integer
    remainder by zero gives 0 (C leaves it undefined; onnx.reference's numpy gives 0), on
    the numpy and the JAX path alike; a float one gives nan.

    Args:
        A: the dividend, a numeric array.
        B: the divisor, of the dtype of ``A`` and broadcastable with it.
        fmod: 0 or 1, see above.

    Returns:
        The remainder, of the broadcast shape and the dtype of ``A``.

    Example:
        >>> jaxonnx.ops.mod(jnp.array([-7, 7]), jnp.array([2, -2]))
        Array([ 1, -1], dtype=int32)
        >>> jaxonnx.ops.mod(jnp.array([-7.5, 7.5]), jnp.array([2.0, -2.0]), fmod=1)
        Array([-1.5,  1.5], dtype=float32)
    """
    if fmod not in (0, 1):
        raise OnnxValidationError(f"got `fmod`={fmod}; it must be 0 or 1.")
    A, B = broadcast_together(A, B, names=("A", "B"))
    xp = namespace(A, B)
    if A.dtype.kind not in "iu":
        if not fmod:
            raise OnnxValidationError(
                f"got `fmod`=0 for inputs of dtype {A.dtype}; floating-point Mod needs `fmod`=1 "
                "(C's fmod), as the operator's text requires."
            )
        return xp.fmod(A, B)
    by_zero = B == 0
    divisor = xp.where(by_zero, xp.ones_like(B), B)
    remainder = xp.fmod(A, divisor) if fmod else xp.remainder(A, divisor)
    return xp.where(by_zero, xp.zeros_like(remainder), remainder)


__all__ = ["mod"]
