"""LayerNormalization: version 17; the normalization the other *Normalization ops share."""

from __future__ import annotations


from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import normalize_axis
from jaxonnx.ops._helpers.normalization import broadcast_to_rank, compute_type, inverse_std, moments


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
