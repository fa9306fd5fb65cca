"""SwiGLU: version 28."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


@register("SwiGLU", 28, folds=False)
def swiglu(A, B, *, alpha: float = 1.0):
    """Implements ONNX SwiGLU: ``Swish_alpha(A) * B``, where ``Swish_alpha(a) = a * sigmoid(alpha * a)``.

    Args:
        A: the gate.
        B: the value, of the shape and dtype of ``A`` (no broadcasting).
        alpha: scales the gate inside the sigmoid.

    Returns:
        ``Y``: the shape and dtype of ``A``.

    Example:
        >>> jaxonnx.ops.swiglu(jnp.array([0.0, 2.0]), jnp.array([5.0, 0.5]))
        Array([0.      , 0.880797], dtype=float32)
    """
    if A.shape != B.shape:
        raise OnnxValidationError(
            f"needs `A` and `B` of one shape (no broadcasting), got {tuple(A.shape)} and {tuple(B.shape)}."
        )
    # jax.nn.sigmoid (lax.logistic) rather than 1 / (1 + exp(-z)): the same values, and a
    # gradient that stays finite where exp(-z) overflows.
    gate = jax.nn.sigmoid(jnp.asarray(alpha, A.dtype) * A)
    return A * gate * B


__all__ = ["swiglu"]
