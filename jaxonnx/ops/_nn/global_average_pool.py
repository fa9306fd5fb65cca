"""GlobalAveragePool: versions 1 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


@register("GlobalAveragePool", 1, 22, folds=False)
def global_average_pool(X, *, channels_last=False):
    """Implements ONNX GlobalAveragePool: the mean over all spatial axes, kept as size 1.

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        channels_last: ``X`` is ``(N, D1, ..., Dn, C)`` and so is the result.

    Returns:
        An array of shape ``(N, C, 1, ..., 1)`` and the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.global_average_pool(jnp.arange(8.0).reshape(1, 2, 2, 2)).ravel()
        Array([1.5, 5.5], dtype=float32)
    """
    if X.ndim < 3:
        raise OnnxValidationError(f"needs `X` of rank >= 3 (N, C, spatial...), got shape {tuple(X.shape)}.")
    # Half-precision means accumulate in float32.
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    spatial = tuple(range(1, X.ndim - 1)) if channels_last else tuple(range(2, X.ndim))
    return jnp.mean(X, axis=spatial, keepdims=True, dtype=work).astype(X.dtype)


__all__ = ["global_average_pool"]
