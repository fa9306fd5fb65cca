"""MaxPool: versions 1, 8, 10, 11, 12 and 22 (8 adds Indices, 10 dilations and ceil_mode)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers import pool_cpu
from jaxonnx.ops._helpers.window import around_spatial, onnx_shape, output_geometry, window_attributes


@register("MaxPool", 8, 10, 11, 12, 22, folds=False)
def max_pool(
    X,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    dilations=None,
    kernel_shape=None,
    pads=None,
    storage_order=0,
    strides=None,
    channels_last=False,
):
    """Implements ONNX MaxPool: the maximum of each window of ``X``, and where it is.

    Padding never wins (it is below every value). ``ceil_mode`` rounds the output size
    up, as long as the last window starts inside the input or its begin padding.

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        auto_pad, dilations, pads, strides: as in Conv.
        ceil_mode: round the output size up instead of down.
        kernel_shape: the window size per spatial axis.
        storage_order: 0 for row-major ``Indices``, 1 for column-major spatial indices.
        channels_last: ``X`` is ``(N, D1, ..., Dn, C)`` and so is ``Y``; ``Indices``
            (flat indices of ONNX's layout) is then None.

    Returns:
        ``(Y, Indices)``: the maxima (dtype of ``X``) and the flat index of each in ``X``
        (``n * C * size + c * size + spatial index``; int64, int32 when ``jax_enable_x64`` is off).
        On ties the first window element in row-major order wins.

    Example:
        >>> y, i = jaxonnx.ops.max_pool(jnp.array([[[3.0, 1.0, 4.0, 1.0, 5.0]]]), kernel_shape=[2], strides=[2], ceil_mode=1)
        >>> y, i
        (Array([[[3., 4., 5.]]], dtype=float32), Array([[[0, 2, 4]]], dtype=int32))
    """
    shape = onnx_shape(X.shape, channels_last)
    kernel, strides, dilations, padding, auto_pad = window_attributes(
        shape, kernel_shape, strides, dilations, pads, auto_pad
    )
    _, padding, extras = output_geometry(shape[2:], kernel, strides, dilations, padding, auto_pad, bool(ceil_mode))
    lowest = -np.inf if jnp.issubdtype(X.dtype, jnp.floating) else jnp.iinfo(X.dtype).min
    lowest = np.asarray(lowest).astype(X.dtype)
    if channels_last and max(dilations) == 1:
        # On CPU the maximum of strided slices (ops/_helpers/pool_cpu.py), faster than
        # reduce_window there (measured: benchmarks/cpu_formulations_results.md); the same
        # values and gradients.
        padding = [(low, high + extra) for (low, high), extra in zip(padding, extras)]
        window = (
            around_spatial(kernel, 1, True),
            around_spatial(strides, 1, True),
            around_spatial(padding, (0, 0), True),
        )
        return pool_cpu.max_pool(X, *window, lowest), None
    if channels_last:  # a dilated window: the gather of the maxima below, in ONNX's layout
        Y, _ = max_pool(
            jnp.moveaxis(X, -1, 1),
            auto_pad=auto_pad,
            ceil_mode=ceil_mode,
            dilations=dilations,
            kernel_shape=kernel_shape,
            pads=pads,
            strides=strides,
        )
        return jnp.moveaxis(Y, 1, -1), None
    window = dict(
        window_dimensions=(1, 1) + kernel,
        window_strides=(1, 1) + strides,
        padding=((0, 0), (0, 0)) + tuple((low, high + extra) for (low, high), extra in zip(padding, extras)),
        window_dilation=(1, 1) + dilations,
    )
    positions = _first_max_positions(X, lowest, window)
    if max(dilations) == 1:
        Y = jax.lax.reduce_window(X, lowest, jax.lax.max, **window)
    else:  # JAX has no VJP of a dilated max window; a gather of the maxima has the exact one.
        Y = jnp.take(X.reshape(-1), positions)
    return Y, positions if not storage_order else _column_major(positions, X.shape[2:])


def _first_max_positions(X, lowest, window):
    """The row-major flat index in ``X`` of each window's maximum (the first on ties)."""
    spatial_shape = X.shape[2:]
    size = int(np.prod(spatial_shape))
    index_type = jax.dtypes.canonicalize_dtype(np.int64)
    position = jax.lax.broadcasted_iota(index_type, X.shape, 0) * X.shape[1] + jax.lax.broadcasted_iota(
        index_type, X.shape, 1
    )
    spatial = jnp.arange(size, dtype=index_type).reshape((1, 1) + spatial_shape)
    position = position * size + spatial  # the row-major flat index, which decides ties

    def first_max(a, b):
        (a_value, a_index), (b_value, b_index) = a, b
        take_b = (b_value > a_value) | ((b_value == a_value) & (b_index < a_index))
        return jnp.where(take_b, b_value, a_value), jnp.where(take_b, b_index, a_index)

    no_index = np.asarray(np.iinfo(index_type).max, dtype=index_type)
    # Indices have no gradient; a variadic reduce_window has no JVP rule either.
    values = jax.lax.stop_gradient(X)
    return jax.lax.reduce_window((values, position), (lowest, no_index), first_max, **window)[1]


def _column_major(indices, spatial_shape):
    """Row-major flat indices with their spatial part made column-major (storage_order=1)."""
    size = int(np.prod(spatial_shape))
    channel, rest = indices // size, indices % size
    column_major = jnp.zeros_like(rest)
    for axis, dim in reversed(list(enumerate(spatial_shape))):
        column_major = column_major + (rest % dim) * int(np.prod(spatial_shape[:axis]))
        rest = rest // dim
    return channel * size + column_major


@register("MaxPool", 1, folds=False)
def _max_pool_1(X, *, auto_pad="NOTSET", kernel_shape=None, pads=None, strides=None):
    # MaxPool-1 has no Indices output.
    return max_pool(X, auto_pad=auto_pad, kernel_shape=kernel_shape, pads=pads, strides=strides)[0]


__all__ = ["max_pool"]
