"""The comparisons Equal, Less, LessOrEqual, Greater and GreaterOrEqual, with numpy
broadcasting and a bool result. Version 1 of Equal, Less and Greater has the pre-7
``broadcast``/``axis`` attributes (an adapter); the other versions only widen the types.

They fold: comparisons of shape values stay numpy at trace time. Equal-19 also compares
strings, on the eager (numpy) path.
"""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import broadcast_together
from jaxonnx.ops._helpers.legacy import legacy_binary


@register("Equal", 7, 11, 13, 19, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")  # numpy warns on nan in bfloat16 (ml_dtypes) comparisons
def equal(A, B):
    """Implements ONNX Equal: ``A == B`` elementwise (nan equals nothing).

    Example:
        >>> jaxonnx.ops.equal(jnp.array([1, 2, 3]), jnp.array(2))
        Array([False,  True, False], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A == B


@register("Less", 7, 9, 13, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")
def less(A, B):
    """Implements ONNX Less: ``A < B`` elementwise.

    Example:
        >>> jaxonnx.ops.less(jnp.array([1.0, 2.0]), jnp.array([2.0, 2.0]))
        Array([ True, False], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A < B


@register("LessOrEqual", 12, 16, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")
def less_or_equal(A, B):
    """Implements ONNX LessOrEqual: ``A <= B`` elementwise.

    Example:
        >>> jaxonnx.ops.less_or_equal(jnp.array([1.0, 2.0]), jnp.array([2.0, 2.0]))
        Array([ True,  True], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A <= B


@register("Greater", 7, 9, 13, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")
def greater(A, B):
    """Implements ONNX Greater: ``A > B`` elementwise.

    Example:
        >>> jaxonnx.ops.greater(jnp.array([1.0, 3.0]), jnp.array([2.0, 2.0]))
        Array([False,  True], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A > B


@register("GreaterOrEqual", 12, 16, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")
def greater_or_equal(A, B):
    """Implements ONNX GreaterOrEqual: ``A >= B`` elementwise.

    Example:
        >>> jaxonnx.ops.greater_or_equal(jnp.array([1.0, 3.0]), jnp.array([2.0, 3.0]))
        Array([False,  True], dtype=bool)
    """
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A >= B


register("Equal", 1, padding="elementwise")(legacy_binary(equal))
register("Less", 1, padding="elementwise")(legacy_binary(less))
register("Greater", 1, padding="elementwise")(legacy_binary(greater))

__all__ = ["equal", "less", "less_or_equal", "greater", "greater_or_equal"]
