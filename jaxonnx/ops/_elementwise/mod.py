"""Mod: versions 10 and 13 (``fmod=0`` for integers only) and 28 (``fmod=0`` also for floats)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import broadcast_together
from jaxonnx.ops._helpers.common import namespace


@register("Mod", 28, padding="elementwise", layout="elementwise")
def mod(A, B, *, fmod: int = 0):
    """Implements ONNX Mod: the remainder of ``A / B``, with numpy broadcasting.

    ``fmod=0`` gives ``A - floor(A / B) * B``, with the sign of the divisor, like Python's
    ``%`` and ``np.mod`` (for floats from version 28 on; a zero result is a zero with the
    sign of ``B``). ``fmod=1`` gives ``A - trunc(A / B) * B``, C's ``fmod``, with the sign
    of the dividend. An integer remainder by zero gives 0 (C leaves it undefined;
    onnx.reference's numpy gives 0), on the numpy and the JAX path alike; a float one
    gives nan.

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
    return _mod(A, B, fmod, float_floor_mod=True)


@register("Mod", 10, 13, padding="elementwise", layout="elementwise")
def _mod_13(A, B, *, fmod=0):
    return _mod(A, B, fmod, float_floor_mod=False)


@np.errstate(all="ignore")  # a folded float remainder by zero is nan, as in JAX, without a warning
def _mod(A, B, fmod, *, float_floor_mod):
    if fmod not in (0, 1):
        raise OnnxValidationError(f"got `fmod`={fmod}; it must be 0 or 1.")
    A, B = broadcast_together(A, B, names=("A", "B"))
    xp = namespace(A, B)
    if A.dtype.kind not in "iu":
        if fmod:
            return xp.fmod(A, B)
        if not float_floor_mod:
            raise OnnxValidationError(
                f"got `fmod`=0 for inputs of dtype {A.dtype}; before version 28 floating-point Mod "
                "needs `fmod`=1 (C's fmod), as the operator's text requires."
            )
        remainder = xp.remainder(A, B)
        # A zero takes the sign of B (numpy does so; XLA's rem keeps the sign of A).
        return xp.where(remainder == 0, xp.copysign(xp.zeros_like(remainder), B), remainder)
    by_zero = B == 0
    divisor = xp.where(by_zero, xp.ones_like(B), B)
    remainder = xp.fmod(A, divisor) if fmod else xp.remainder(A, divisor)
    return xp.where(by_zero, xp.zeros_like(remainder), remainder)


__all__ = ["mod"]
