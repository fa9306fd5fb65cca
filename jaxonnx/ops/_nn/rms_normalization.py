"""RMSNormalization: version 23."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import normalize_axis


@register("RMSNormalization", 23, folds=False)
def rms_normalization(X, scale, *, axis: int = -1, epsilon: float = 1e-5, stash_type: int = 1):
    """Implements ONNX RMSNormalization: ``X / sqrt(mean(X ** 2) + epsilon) * scale``, the mean over dims ``axis...``.

    With ``stash_type=1`` (the default) float16 and bfloat16 ``X`` are normalized in
    float32 (as LayerNormalization does; wider types keep their precision); the normalized
    values are rounded to the type of ``X``, then multiplied by ``scale`` in its type.

    Args:
        X: a float array.
        scale: floats, broadcastable one way onto ``X`` (numpy's rule, the result of the
            shape of ``X``).
        axis: the first normalized dim, in ``[-rank, rank - 1]``.
        epsilon: added to the mean square.
        stash_type: 1 computes half-precision ``X`` in float32; any other value in its type.

    Returns:
        An array of the shape of ``X`` and the dtype of ``scale``.

    Example:
        >>> jaxonnx.ops.rms_normalization(jnp.array([[3.0, -4.0], [1.0, 1.0]]), jnp.array([1.0, 2.0]), epsilon=0.0)
        Array([[ 0.84852815, -2.2627418 ],
               [ 1.        ,  2.        ]], dtype=float32)
    """
    axis = normalize_axis(axis, X.ndim)
    try:
        shape = jnp.broadcast_shapes(tuple(scale.shape), tuple(X.shape))
    except ValueError:
        shape = None
    if shape != tuple(X.shape):
        raise OnnxValidationError(
            f"cannot broadcast `scale` of shape {tuple(scale.shape)} onto `X` of shape {tuple(X.shape)} "
            "(unidirectional broadcasting: the result must have the shape of `X`)."
        )
    work = np.dtype(np.float32) if stash_type == 1 and X.dtype.itemsize < 4 else X.dtype
    x = X.astype(work)
    mean_square = jnp.mean(x * x, axis=tuple(range(axis, X.ndim)), keepdims=True)
    normalized = (x / jnp.sqrt(mean_square + jnp.asarray(epsilon, work))).astype(X.dtype)
    scale = scale.reshape((1,) * (X.ndim - scale.ndim) + tuple(scale.shape))
    return normalized.astype(scale.dtype) * scale


__all__ = ["rms_normalization"]
