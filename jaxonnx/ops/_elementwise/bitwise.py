"""The bitwise ops: BitShift (versions 11 and 28), BitwiseAnd, BitwiseOr, BitwiseXor and
BitwiseNot (version 18).

They fold (the default): with numpy inputs they compute in numpy, exactly, so shape
arithmetic built from them stays static. Integers only; they have no gradient.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import broadcast_together
from jaxonnx.ops._helpers.common import namespace


@register("BitShift", 11, 28, padding="elementwise")
def bit_shift(X, Y, *, direction: str):
    """Implements ONNX BitShift: ``X << Y`` or ``X >> Y`` elementwise, with numpy broadcasting.

    A right shift of a signed type is arithmetic (it fills with the sign bit); a left shift
    discards the bits shifted past the top, also past the sign bit of a signed type. A
    shift ``Y`` that is negative or at least the bit width of the type gives what the sign
    extension alone gives: -1 for a right shift of a negative ``X``, else 0. That is what
    BitShift-28's text defines (and onnx.reference computes); version 11 (unsigned types
    only) leaves such shifts undefined, and gets the same answer (0), where C's and numpy's
    shifts have none.

    Args:
        X: the integers to shift (unsigned; also signed from version 28).
        Y: the shift amounts, of the type of ``X``.
        direction: ``"LEFT"`` or ``"RIGHT"``.

    Returns:
        An array of the broadcast shape and the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.bit_shift(jnp.array([1, 4, -8], jnp.int8), jnp.array([1, 1, 9], jnp.int8), direction="RIGHT")
        Array([ 0,  2, -1], dtype=int8)
    """
    if direction not in ("LEFT", "RIGHT"):
        raise OnnxValidationError(f'got `direction`={direction!r}; it must be "LEFT" or "RIGHT".')
    X, Y = broadcast_together(X, Y, names=("X", "Y"))
    xp = namespace(X, Y)
    bits = X.dtype.itemsize * 8
    in_range = (Y >= 0) & (Y < bits) if X.dtype.kind == "i" else Y < bits
    # Only in-range shifts reach the shift (C, numpy and XLA disagree beyond the width).
    count = xp.where(in_range, Y, xp.zeros_like(Y))
    if direction == "LEFT":
        shifted = _left_shift(xp, X, count)
        return xp.where(in_range, shifted, xp.zeros_like(X))
    shifted = xp.right_shift(X, count)  # arithmetic for signed types in numpy and JAX alike
    sign_fill = xp.where(X < 0, -xp.ones_like(X), xp.zeros_like(X)) if X.dtype.kind == "i" else xp.zeros_like(X)
    return xp.where(in_range, shifted, sign_fill)


def _left_shift(xp, X, count):
    if X.dtype.kind == "u":
        return xp.left_shift(X, count)
    # Signed: shift the bits as unsigned (a signed overflow is undefined in C, whose
    # semantics numpy inherits), then read them back as the signed type.
    unsigned = np.dtype(f"u{X.dtype.itemsize}")
    if xp is np:
        return np.left_shift(X.view(unsigned), count.astype(unsigned)).view(X.dtype)
    as_unsigned = jax.lax.bitcast_convert_type(X, unsigned)
    return jax.lax.bitcast_convert_type(xp.left_shift(as_unsigned, count.astype(unsigned)), X.dtype)


@register("BitwiseAnd", 18, padding="elementwise")
def bitwise_and(A, B):
    """Implements ONNX BitwiseAnd: the bitwise AND of two integer arrays, with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.bitwise_and(jnp.array([12, -1], jnp.int32), jnp.array([10, 5], jnp.int32))
        Array([8, 5], dtype=int32)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return namespace(A, B).bitwise_and(A, B)


@register("BitwiseOr", 18, padding="elementwise")
def bitwise_or(A, B):
    """Implements ONNX BitwiseOr: the bitwise OR of two integer arrays, with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.bitwise_or(jnp.array([12, 0], jnp.int32), jnp.array([10, 5], jnp.int32))
        Array([14,  5], dtype=int32)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return namespace(A, B).bitwise_or(A, B)


@register("BitwiseXor", 18, padding="elementwise")
def bitwise_xor(A, B):
    """Implements ONNX BitwiseXor: the bitwise exclusive OR of two integer arrays, with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.bitwise_xor(jnp.array([12, -1], jnp.int32), jnp.array([10, 5], jnp.int32))
        Array([ 6, -6], dtype=int32)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return namespace(A, B).bitwise_xor(A, B)


@register("BitwiseNot", 18, padding="elementwise")
def bitwise_not(X):
    """Implements ONNX BitwiseNot: every bit of ``X`` flipped (``-X - 1`` for signed types).

    Example:
        >>> jaxonnx.ops.bitwise_not(jnp.array([0, 5], jnp.uint8))
        Array([255, 250], dtype=uint8)
    """
    return namespace(X).bitwise_not(X)


__all__ = ["bit_shift", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor"]
