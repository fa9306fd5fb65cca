"""GlobalMaxPool: versions 1 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


@register("GlobalMaxPool", 1, 22, folds=False)
def global_max_pool(X, *, channels_last=False):
    """Implements ONNX GlobalMaxPool: the maximum over all spatial axes, kept as size 1.

    Any rank from 3 up: ``(N, C, L)``, ``(N, C, H, W)``, ``(N, C, D, H, W)``, ... The
    gradient goes to the maximum (split evenly between tied maxima, as ``jnp.max``).

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        channels_last: ``X`` is ``(N, D1, ..., Dn, C)`` and so is the result.

    Returns:
        An array of shape ``(N, C, 1, ..., 1)`` and the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.global_max_pool(jnp.arange(8.0).reshape(1, 2, 2, 2)).ravel()
        Array([3., 7.], dtype=float32)
    """
    if X.ndim < 3:
        raise OnnxValidationError(f"needs `X` of rank >= 3 (N, C, spatial...), got shape {tuple(X.shape)}.")
    spatial = tuple(range(1, X.ndim - 1)) if channels_last else tuple(range(2, X.ndim))
    if 0 in [X.shape[a] for a in spatial]:
        raise OnnxValidationError(
            f"needs a non-empty spatial extent in `X`, got shape {tuple(X.shape)}; an empty window has no maximum."
        )
    return jnp.max(X, axis=spatial, keepdims=True)


__all__ = ["global_max_pool"]
