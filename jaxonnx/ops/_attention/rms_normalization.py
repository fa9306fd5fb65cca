"""RMSNormalization: version 23."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.dtypes import jax_dtype, numpy_dtype
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import normalize_axis

_STASH_TYPES = {1: "float", 10: "float16", 11: "double", 16: "bfloat16"}


@register("RMSNormalization", 23, folds=False, weights=("scale",))
def rms_normalization(X, scale, *, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1):
    """Implements ONNX RMSNormalization: ``X / sqrt(mean(X * X) + epsilon) * scale`` over dims ``axis...``.

    Stage one (the normalization) computes in the type ``stash_type`` names, or in the type
    of ``X`` where that is wider (float32 for half-precision ``X`` by default, as the text
    says; double ``X`` keeps double); its result is cast back to the type of ``X``, then
    multiplied by ``scale``.

    Args:
        X: the input.
        scale: broadcast one way to ``X``.
        axis: the first normalized dim, in ``[-rank, rank - 1]``.
        epsilon: added to the mean square.
        stash_type: the ONNX element type of stage one: 1 (float), 10 (float16), 11 (double)
            or 16 (bfloat16).

    Returns:
        ``Y``: the shape of ``X``, the dtype of ``scale``.

    Example:
        >>> jaxonnx.ops.rms_normalization(jnp.array([[2.0, -2.0, 2.0]]), jnp.array([1.0, 2.0, 3.0]), epsilon=0.0)
        Array([[ 1., -2.,  3.]], dtype=float32)
    """
    if stash_type not in _STASH_TYPES:
        raise OnnxValidationError(
            f"got `stash_type`={stash_type}; it is 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)."
        )
    if X.ndim == 0:
        raise OnnxValidationError("needs `X` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, X.ndim)
    if scale.ndim > X.ndim or any(s not in (1, x) for s, x in zip(scale.shape[::-1], X.shape[::-1])):
        raise OnnxValidationError(
            f"cannot broadcast `scale` of shape {tuple(scale.shape)} one way to `X` of shape {tuple(X.shape)}."
        )
    stash = jax_dtype(numpy_dtype(stash_type))
    work = _wider(stash, jax_dtype(X.dtype))
    x = X.astype(work)
    mean_square = jnp.mean(x * x, axis=tuple(range(axis, X.ndim)), keepdims=True)
    normalized = (x / jnp.sqrt(mean_square + jnp.asarray(epsilon, work))).astype(X.dtype)
    scale = scale.reshape((1,) * (X.ndim - scale.ndim) + tuple(scale.shape))
    return normalized.astype(scale.dtype) * scale


def _wider(a, b):
    """The float type that holds both (float32 for float16 beside bfloat16)."""
    a, b = jnp.dtype(a), jnp.dtype(b)
    if a == b or a.itemsize > b.itemsize:
        return a
    return b if b.itemsize > a.itemsize else jnp.dtype(jnp.float32)


__all__ = ["rms_normalization"]
