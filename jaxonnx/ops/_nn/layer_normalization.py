"""LayerNormalization: version 17; the normalization the other *Normalization ops share."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import normalize_axis


def compute_type(dtype, stash_type=1):
    """Half-precision data normalizes in float32 (`stash_type` 1, the default, says so)."""
    return np.dtype(np.float32) if stash_type == 1 and np.dtype(dtype).itemsize < 4 else np.dtype(dtype)


def moments(x, axes):
    """Mean and population variance of ``x`` over ``axes``, kept as size-1 dims."""
    mean = jnp.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    return mean, centered, jnp.mean(centered * centered, axis=axes, keepdims=True)


def inverse_std(variance, epsilon):
    return 1 / jnp.sqrt(variance + jnp.asarray(epsilon, dtype=variance.dtype))


def broadcast_to_rank(value, rank: int, *, name: str, shape, target):
    """``value`` with leading 1s up to ``rank``, refused unless it broadcasts one way to ``target``."""
    if value.ndim > len(target) or any(v not in (1, t) for v, t in zip(value.shape[::-1], target[::-1])):
        raise OnnxValidationError(
            f"cannot broadcast `{name}` of shape {tuple(value.shape)} to {tuple(target)}, the normalized "
            f"dims of `X` (shape {tuple(shape)})."
        )
    return value.reshape((1,) * (rank - value.ndim) + tuple(value.shape))


@register("LayerNormalization", 17, folds=False)
def layer_normalization(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    """Implements ONNX LayerNormalization: ``X`` normalized over dims ``axis...``, times ``Scale``, plus ``B``.

    Args:
        X: the input.
        Scale: broadcast one way to ``X.shape[axis:]``.
        B: optional; broadcast one way to ``X.shape[axis:]``.
        axis: the first normalized dim, in ``[-rank, rank - 1]``.
        epsilon: added to the variance.
        stash_type: 1 computes half-precision ``X`` in float32.

    Returns:
        ``(Y, Mean, InvStdDev)``: ``Y`` of the dtype of ``X``; the mean and ``1 / sqrt(var +
        epsilon)`` over the normalized dims, with those dims of size 1 (float32 for
        half-precision ``X``, else the dtype of ``X``).

    Example:
        >>> y, mean, inv_std = jaxonnx.ops.layer_normalization(jnp.array([[1.0, 3.0]]), jnp.ones(2), epsilon=0.0)
        >>> y, mean
        (Array([[-1.,  1.]], dtype=float32), Array([[2.]], dtype=float32))
    """
    axis = normalize_axis(axis, X.ndim)
    work = compute_type(X.dtype, stash_type)
    normalized = tuple(X.shape[axis:])
    mean, centered, variance = moments(X.astype(work), tuple(range(axis, X.ndim)))
    inv = inverse_std(variance, epsilon)
    scale = broadcast_to_rank(Scale, X.ndim, name="Scale", shape=X.shape, target=normalized)
    Y = (centered * inv).astype(X.dtype) * scale
    if B is not None:
        Y = Y + broadcast_to_rank(B, X.ndim, name="B", shape=X.shape, target=normalized)
    stats = compute_type(X.dtype)
    return Y, mean.astype(stats), inv.astype(stats)


__all__ = ["layer_normalization"]
