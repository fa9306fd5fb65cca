"""LpPool: versions 1, 2, 11, 18 and 22 (2 makes `p` an int, 18 adds ceil_mode and dilations, 22 bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.window import output_geometry, window_attributes


@register("LpPool", 1, 2, 11, 18, 22, folds=False)
def lp_pool(X, *, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, p=2, pads=None, strides=None):
    """Implements ONNX LpPool: the Lp norm of each window of ``X``.

    ``Y = (sum over the window of |X| ** p) ** (1 / p)``; padding (``pads``, ``SAME_*``
    and the end padding of ``ceil_mode``) adds nothing to the sums. Version 1 takes a
    float ``p``; ``ceil_mode`` and ``dilations`` exist from version 18.

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        auto_pad, dilations, pads, strides: as in Conv.
        ceil_mode: round the output size up instead of down.
        kernel_shape: the window size per spatial axis (required).
        p: the order of the norm (positive).

    Returns:
        The norms, with the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.lp_pool(jnp.array([[[3.0, 4.0, 0.0]]]), kernel_shape=[2])
        Array([[[5., 4.]]], dtype=float32)
    """
    if kernel_shape is None:
        raise OnnxValidationError("needs `kernel_shape` (the window size per spatial axis), got none.")
    if not p > 0:
        raise OnnxValidationError(f"needs a positive `p`, got {p}.")
    kernel, strides, dilations, padding, auto_pad = window_attributes(
        X.shape, kernel_shape, strides, dilations, pads, auto_pad
    )
    _, padding, extras = output_geometry(X.shape[2:], kernel, strides, dilations, padding, auto_pad, bool(ceil_mode))
    # Half-precision sums accumulate in float32.
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    powers = jnp.abs(X.astype(work)) ** p
    # A depthwise convolution with a kernel of ones sums each window; unlike a dilated
    # reduce_window it has exact gradients under every dilation.
    batch, channels = X.shape[:2]
    flat = powers.reshape((batch * channels, 1) + X.shape[2:])
    ones = jnp.ones((1, 1) + kernel, work)
    full_padding = [(low, high + extra) for (low, high), extra in zip(padding, extras)]
    sums = jax.lax.conv_general_dilated(
        flat, ones, strides, full_padding, rhs_dilation=dilations, precision=jax.lax.Precision.HIGHEST
    )
    sums = sums.reshape((batch, channels) + sums.shape[2:])
    return (sums ** np.asarray(1.0 / p, work)).astype(X.dtype)


__all__ = ["lp_pool"]
