"""AveragePool: versions 1, 7, 10, 11, 19 and 22 (7 adds count_include_pad, 10 ceil_mode, 19 dilations)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers import pool_cpu
from jaxonnx.ops._helpers.window import around_spatial, onnx_shape, output_geometry, window_attributes


@register("AveragePool", 1, 7, 10, 11, 19, 22, folds=False)
def average_pool(
    X,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    count_include_pad=0,
    dilations=None,
    kernel_shape=None,
    pads=None,
    strides=None,
    channels_last=False,
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
        channels_last: ``X`` is ``(N, D1, ..., Dn, C)`` and so is the result.

    Returns:
        The means, with the dtype of ``X``.

    Example:
        >>> jaxonnx.ops.average_pool(jnp.array([[[1.0, 2.0, 3.0]]]), kernel_shape=[2], pads=[1, 0])
        Array([[[1. , 1.5, 2.5]]], dtype=float32)
    """
    shape = onnx_shape(X.shape, channels_last)
    kernel, strides, dilations, padding, auto_pad = window_attributes(
        shape, kernel_shape, strides, dilations, pads, auto_pad
    )
    _, padding, extras = output_geometry(shape[2:], kernel, strides, dilations, padding, auto_pad, bool(ceil_mode))
    window = (
        around_spatial(kernel, 1, channels_last),
        around_spatial(strides, 1, channels_last),
        around_spatial(dilations, 1, channels_last),
    )
    # Half-precision sums accumulate in float32.
    work = jnp.float32 if X.dtype.itemsize < 4 else X.dtype
    full_padding = around_spatial(
        [(low, high + extra) for (low, high), extra in zip(padding, extras)], (0, 0), channels_last
    )
    # On CPU a sum of strided slices (ops/_helpers/pool_cpu.py), faster than reduce_window
    # there (measured: benchmarks/cpu_formulations_results.md).
    sums = pool_cpu.window_sum(X.astype(work), *window, full_padding)
    # The divisor of each window, known at trace time: its input elements, plus its explicit
    # padding if counted.
    counted = np.ones(around_spatial(shape[2:], 1, channels_last), dtype=work)
    if count_include_pad:
        counted = np.pad(counted, around_spatial(padding, (0, 0), channels_last), constant_values=1)
    extra_padding = around_spatial(
        [(0, extra) if count_include_pad else (low, high + extra) for (low, high), extra in zip(padding, extras)],
        (0, 0),
        channels_last,
    )
    counts = pool_cpu.numpy_window_sum(counted, *window, extra_padding)
    return (sums / counts).astype(X.dtype)


__all__ = ["average_pool"]
