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
