"""The logical ops And, Or, Xor (versions 1, with the pre-7 ``broadcast``/``axis``
attributes, and 7) and Not (version 1), on bool tensors. They fold."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import broadcast_together
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.legacy import legacy_binary


@register("And", 7, padding="elementwise", layout="elementwise")
def and_(A, B):
    """Implements ONNX And: the elementwise logical and of bool arrays, with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.and_(jnp.array([True, True, False]), jnp.array([True, False, False]))
        Array([ True, False, False], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return namespace(A, B).logical_and(A, B)


@register("Or", 7, padding="elementwise", layout="elementwise")
def or_(A, B):
    """Implements ONNX Or: the elementwise logical or of bool arrays, with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.or_(jnp.array([True, True, False]), jnp.array([True, False, False]))
        Array([ True,  True, False], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return namespace(A, B).logical_or(A, B)


@register("Xor", 7, padding="elementwise", layout="elementwise")
def xor(A, B):
    """Implements ONNX Xor: the elementwise exclusive or of bool arrays, with numpy broadcasting.

    Example:
        >>> jaxonnx.ops.xor(jnp.array([True, True, False]), jnp.array([True, False, False]))
        Array([False,  True, False], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return namespace(A, B).logical_xor(A, B)


@register("Not", 1, padding="elementwise", layout="elementwise")
def not_(X):
    """Implements ONNX Not: the elementwise logical negation of a bool array.

    Example:
        >>> jaxonnx.ops.not_(jnp.array([True, False]))
        Array([False,  True], dtype=bool)
    """
    return namespace(X).logical_not(X)


register("And", 1, padding="elementwise")(legacy_binary(and_))
register("Or", 1, padding="elementwise")(legacy_binary(or_))
register("Xor", 1, padding="elementwise")(legacy_binary(xor))

__all__ = ["and_", "or_", "xor", "not_"]
