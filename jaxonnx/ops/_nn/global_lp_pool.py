"""GlobalLpPool: versions 1, 2 and 22 (2 makes `p` an int, 22 adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


@register("GlobalLpPool", 1, 2, 22, folds=False)
def global_lp_pool(X, *, p=2):
    """Implements ONNX GlobalLpPool: the Lp norm over all spatial axes, kept as size 1.

    ``Y[n, c] = (sum over the spatial axes of |X[n, c]| ** p) ** (1 / p)``. Version 1
    takes a float ``p``, later versions an int.

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        p: the order of the norm (positive).

    Returns:
        An array of shape ``(N, C, 1, ..., 1)`` and the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.global_lp_pool(jnp.array([[[3.0, -4.0]]]))
        Array([[[5.]]], dtype=float32)
    """
    if X.ndim < 3:
        raise OnnxValidationError(f"needs `X` of rank >= 3 (N, C, spatial...), got shape {tuple(X.shape)}.")
    if not p > 0:
        raise OnnxValidationError(f"needs a positive `p`, got {p}.")
    # Half-precision sums accumulate in float32.
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    powers = jnp.abs(X.astype(work)) ** p
    return (jnp.sum(powers, axis=tuple(range(2, X.ndim)), keepdims=True) ** (1.0 / p)).astype(X.dtype)


__all__ = ["global_lp_pool"]
