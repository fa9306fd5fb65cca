"""Where: versions 9 and 16 (16 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace


@register("Where", 9, 16, padding="elementwise", layout="elementwise")
def where(condition, X, Y):
    """Implements ONNX Where: elements of ``X`` where ``condition`` is true, else of ``Y``.

    Args:
        condition: a bool array.
        X: values where ``condition`` is true.
        Y: values where it is false; the dtype of ``X`` (Python scalars take it, as in JAX).

    Returns:
        An array of the broadcast shape of the three inputs and the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.where(jnp.array([True, False]), jnp.array([1, 2]), jnp.array([[9], [8]]))
        Array([[1, 9],
               [1, 8]], dtype=int32)
    """
    try:
        # jnp's version also takes the symbolic dims of `jax.export` (shape polymorphism).
        shape = jnp.broadcast_shapes(condition.shape, X.shape, Y.shape)
    except ValueError:
        raise OnnxValidationError(
            f"cannot broadcast `condition` {tuple(condition.shape)}, `X` {tuple(X.shape)} "
            f"and `Y` {tuple(Y.shape)} to one shape."
        ) from None
    xp = namespace(condition, X, Y)
    out = xp.where(condition, X, Y)
    return out if out.shape == shape else xp.broadcast_to(out, shape)


__all__ = ["where"]
