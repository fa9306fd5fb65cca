"""What the normalization ops (Layer-, Batch-, Instance-, Group-, RMS-Normalization, ...) share:
the compute type, moments, the inverse standard deviation and the broadcasting of scales."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError


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


def contrib_work_type(dtype):
    """The type onnxruntime's contrib normalizations compute in: float32, or double for double data."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def contrib_normalize(x, axes, epsilon, *, simplified: bool):
    """onnxruntime's contrib normalizations (SkipLayerNormalization, SimplifiedLayerNormalization,
    the first LayerNormalization, ...): ``x`` normalized over ``axes`` in float32 (double stays
    double), before the scale.

    Simplified (RMS): ``x / sqrt(mean(x * x) + epsilon)``, and the mean is zero, as
    onnxruntime writes it. Otherwise ``(x - mean) / sqrt(var + epsilon)``, the population
    variance computed from the centered values (onnxruntime's skip kernels take ``E[x^2] -
    mean^2``: equal up to rounding, this is the more accurate form).

    Returns:
        ``(normalized, mean, inv_std)`` in the work type, the statistics with the ``axes``
        kept as size-1 dims.
    """
    if epsilon < 0:
        raise OnnxValidationError(f"got `epsilon`={epsilon}; it must be >= 0.")
    x = x.astype(contrib_work_type(x.dtype))
    if simplified:
        inv = inverse_std(jnp.mean(x * x, axis=axes, keepdims=True), epsilon)
        return x * inv, jnp.zeros_like(inv), inv
    mean, centered, variance = moments(x, axes)
    inv = inverse_std(variance, epsilon)
    return centered * inv, mean, inv
