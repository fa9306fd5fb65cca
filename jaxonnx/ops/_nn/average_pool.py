"""AveragePool: versions 1, 7, 10, 11, 19 and 22 (7 adds count_include_pad, 10 ceil_mode, 19 dilations)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.window import output_geometry, window_attributes


@register("AveragePool", 1, 7, 10, 11, 19, 22, folds=False)
def average_pool(
    X, *, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None, kernel_shape=None, pads=None, strides=None
):
    """Implements ONNX AveragePool: the mean of each window of ``X``.

    Padding is left out of the mean unless ``count_include_pad`` is set; the end padding
    that ``ceil_mode`` adds is never counted (as in PyTorch).

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        auto_pad, dilations, pads, strides: as in Conv.
        ceil_mode: round the output size up instead of down.
        count_include_pad: count the padding (``pads`` or ``SAME_*``) in each mean's divisor.
        kernel_shape: the window size per spatial axis.

    Returns:
        The means, with the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.average_pool(jnp.array([[[1.0, 2.0, 3.0]]]), kernel_shape=[2], pads=[1, 0])
        Array([[[1. , 1.5, 2.5]]], dtype=float32)
    """
    kernel, strides, dilations, padding, auto_pad = window_attributes(X.shape, kernel_shape, strides, dilations, pads, auto_pad)
    _, padding, extras = output_geometry(X.shape[2:], kernel, strides, dilations, padding, auto_pad, bool(ceil_mode))
    window = dict(
        window_dimensions=(1, 1) + kernel,
        window_strides=(1, 1) + strides,
        window_dilation=(1, 1) + dilations,
    )
    # Half-precision sums accumulate in float32.
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    full_padding = ((0, 0), (0, 0)) + tuple((low, high + extra) for (low, high), extra in zip(padding, extras))
    zero = np.asarray(0, dtype=work)
    sums = jax.lax.reduce_window(X.astype(work), zero, jax.lax.add, padding=full_padding, **window)
    # The divisor of each window: its input elements, plus its explicit padding if counted.
    counted = np.ones((1, 1) + X.shape[2:], dtype=work)
    if count_include_pad:
        counted = np.pad(counted, ((0, 0), (0, 0)) + tuple(padding), constant_values=1)
    extra_padding = [(0, 0)] * 2 + [(0, extra) if count_include_pad else (low, high + extra) for (low, high), extra in zip(padding, extras)]
    counts = jax.lax.reduce_window(jnp.asarray(counted), zero, jax.lax.add, padding=tuple(extra_padding), **window)
    return (sums / counts).astype(X.dtype)


__all__ = ["average_pool"]
