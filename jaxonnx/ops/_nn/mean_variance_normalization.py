"""MeanVarianceNormalization: versions 9 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import normalize_axis

# The function body's epsilon, added to the standard deviation.
_EPSILON = 1e-9


@register("MeanVarianceNormalization", 9, 13, folds=False)
def mean_variance_normalization(X, *, axes=(0, 2, 3)):
    """Implements ONNX MeanVarianceNormalization: ``(X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9)``.

    The means are over ``axes``; the ``1e-9`` is the schema's function body's. The variance
    is the mean of the squared deviations (never negative; the function body's
    ``E[X^2] - E[X]^2`` is the same number but loses digits when the mean is large).
    float16 and bfloat16 are computed in float32. At a constant slice the output is 0 and
    the gradient finite.

    Args:
        X: a float array.
        axes: the axes to normalize over, in ``[-rank, rank - 1]``, each once.

    Returns:
        An array of the shape and dtype of ``X``.

    Example:
        >>> jaxonnx.ops.mean_variance_normalization(jnp.array([[1.0, 3.0], [2.0, 2.0]]), axes=[1])
        Array([[-1.,  1.],
               [ 0.,  0.]], dtype=float32)
    """
    normalized = tuple(normalize_axis(a, X.ndim, name="axes") for a in axes)
    if len(set(normalized)) != len(normalized):
        raise OnnxValidationError(
            f"got repeated `axes` {list(axes)} for `X` of rank {X.ndim}; each axis may appear once."
        )
    x = X.astype(np.float32) if X.dtype.itemsize == 2 else X
    deviation = x - jnp.mean(x, axis=normalized, keepdims=True)
    variance = jnp.mean(deviation * deviation, axis=normalized, keepdims=True)
    # sqrt's derivative at 0 is inf (and inf * 0 = nan): a zero variance takes the root of 1.
    positive = variance > 0
    deviation_scale = jnp.where(positive, jnp.sqrt(jnp.where(positive, variance, jnp.ones_like(variance))), 0)
    return (deviation / (deviation_scale + _EPSILON)).astype(X.dtype)


__all__ = ["mean_variance_normalization"]
