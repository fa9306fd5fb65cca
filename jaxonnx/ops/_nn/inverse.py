"""Inverse (com.microsoft, version 1): the inverses of a batch of square matrices."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import contrib_schema

_SCHEMA = contrib_schema(
    "Inverse",
    "Y = the inverse of each square matrix in the last two dims of X.",
    inputs=[("X", "T")],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(float16)", "tensor(float)", "tensor(double)"])],
)


@register("Inverse", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def inverse(X):
    """Implements com.microsoft Inverse: the inverse of each matrix in the last two dims.

    float16 is inverted in float32 and rounded back, as onnxruntime's CPU kernel does (an
    LU factorization in float16 loses most digits).

    Args:
        X: ``(..., n, n)``.

    Returns:
        ``(..., n, n)`` of the type of ``X``.

    Example:
        >>> jaxonnx.ops.inverse(jnp.array([[2.0, 0.0], [0.0, 4.0]]))
        Array([[0.5 , 0.  ],
               [0.  , 0.25]], dtype=float32)
    """
    if X.ndim < 2 or X.shape[-1] != X.shape[-2]:
        raise OnnxValidationError(f"needs `X` of square matrices (..., n, n), got shape {tuple(X.shape)}.")
    if X.dtype == jnp.float16:
        return jnp.linalg.inv(X.astype(jnp.float32)).astype(X.dtype)
    return jnp.linalg.inv(X)


__all__ = ["inverse"]
