"""QLinearGlobalAveragePool and QLinearAveragePool (com.microsoft, version 1): average pooling
of quantized tensors (channels first, or channels last), as onnxruntime computes them."""

from __future__ import annotations

import itertools

import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import (
    dequantize,
    per_tensor_value,
    requantize,
    saturate_rounded,
)
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema
from jaxonnx.ops._helpers.window import output_geometry, window_attributes

_PER_TENSOR = ("tensor", None)
_INTS = onnx.defs.OpSchema.AttrType.INTS


def _channels_first(X, channels_last: int):
    """``X`` with its channels at axis 1 (moved from the last axis where ``channels_last``)."""
    if X.ndim < 3:
        raise OnnxValidationError(
            f"needs `X` of rank >= 3 (N, C, spatial... or N, spatial..., C), got shape {tuple(X.shape)}."
        )
    return namespace(X).moveaxis(X, -1, 1) if channels_last else X


def _restore(Y, channels_last: int):
    return namespace(Y).moveaxis(Y, 1, -1) if channels_last else Y


def _global_average(X, x_scale, x_zero, y_scale, y_zero):
    """onnxruntime's integer global average of channels-first ``X``: the exact int32 sum of
    ``X - x_zero`` per channel, requantized with ``x_scale / (y_scale * image_size)``."""
    xp = namespace(X)
    spatial = tuple(range(2, X.ndim))
    size = int(np.prod(X.shape[2:]))
    sums = xp.sum(X.astype(np.int32), axis=spatial, keepdims=True, dtype=np.int32) - x_zero.astype(np.int32) * np.int32(
        size
    )
    multiplier = true_divide(x_scale, y_scale * np.float32(size))
    return requantize(sums, multiplier, y_zero, onnx_type_name(X.dtype))


def _scalars(x_scale, x_zero, y_scale, y_zero, dtype):
    """The four per-tensor values: float32 scales, zero points of ``dtype`` (0 where omitted)."""
    x_scale = per_tensor_value(x_scale, "x_scale").astype(np.float32)
    y_scale = per_tensor_value(y_scale, "y_scale").astype(np.float32)
    zeros = [
        np.zeros((), dtype) if z is None else per_tensor_value(z, name)
        for z, name in ((x_zero, "x_zero_point"), (y_zero, "y_zero_point"))
    ]
    return x_scale, zeros[0], y_scale, zeros[1]


_GLOBAL_SCHEMA = contrib_schema(
    "QLinearGlobalAveragePool",
    "Y = quantize(GlobalAveragePool(dequantize(X))), channels first or last.",
    inputs=[
        ("X", "T"),
        ("x_scale", "tensor(float)"),
        ("x_zero_point", "T"),
        ("y_scale", "tensor(float)"),
        ("y_zero_point", "T"),
    ],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(uint8)", "tensor(int8)"])],
    attributes=[attribute("channels_last", 0, "Channels are the last axis.")],
    differentiable=(),
)


@register("QLinearGlobalAveragePool", 1, domain="com.microsoft", schema=_GLOBAL_SCHEMA)
def qlinear_global_average_pool(X, x_scale, x_zero_point, y_scale, y_zero_point, *, channels_last=0):
    """Implements com.microsoft QLinearGlobalAveragePool: the mean over the spatial axes, quantized.

    As onnxruntime: the exact int32 sum of ``X - x_zero_point`` over the spatial axes,
    times ``x_scale / (y_scale * image_size)`` in float32, rounded half to even, plus
    ``y_zero_point``, saturated.

    Args:
        X: uint8 or int8, ``(N, C, D1, ...)`` (or ``(N, D1, ..., C)`` with ``channels_last``).
        x_scale, y_scale: float scalars.
        x_zero_point, y_zero_point: scalars of ``X``'s type.
        channels_last: 1 where the channels are the last axis.

    Returns:
        ``X``'s shape with every spatial axis 1, of ``X``'s type.

    Example:
        >>> x = jnp.arange(8, dtype=jnp.uint8).reshape(1, 2, 2, 2)
        >>> s, z = jnp.float32(1.0), jnp.uint8(0)
        >>> jaxonnx.ops.qlinear_global_average_pool(x, s, z, s, z)[:, :, 0, 0]
        Array([[2, 6]], dtype=uint8)
    """
    x_scale, x_zero, y_scale, y_zero = _scalars(x_scale, x_zero_point, y_scale, y_zero_point, X.dtype)
    X = _channels_first(X, channels_last)
    return _restore(_global_average(X, x_scale, x_zero, y_scale, y_zero), channels_last)


_POOL_SCHEMA = contrib_schema(
    "QLinearAveragePool",
    "Y = quantize(AveragePool(dequantize(X))), channels first or last.",
    inputs=[
        ("X", "T"),
        ("x_scale", "tensor(float)"),
        ("x_zero_point", "T", "optional"),
        ("y_scale", "tensor(float)"),
        ("y_zero_point", "T", "optional"),
    ],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(uint8)", "tensor(int8)"])],
    attributes=[
        attribute("auto_pad", "NOTSET", "As AveragePool's."),
        attribute("ceil_mode", 0, "As AveragePool's."),
        attribute("channels_last", 0, "Channels are the last axis."),
        attribute("count_include_pad", 0, "As AveragePool's."),
        attribute_without_default("kernel_shape", _INTS, "The window size per spatial axis.", required=True),
        attribute_without_default("pads", _INTS, "As AveragePool's."),
        attribute_without_default("strides", _INTS, "As AveragePool's."),
    ],
    differentiable=(),
)


@register("QLinearAveragePool", 1, domain="com.microsoft", schema=_POOL_SCHEMA)
def qlinear_average_pool(
    X,
    x_scale,
    x_zero_point=None,
    y_scale=None,
    y_zero_point=None,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    channels_last=0,
    count_include_pad=0,
    kernel_shape=None,
    pads=None,
    strides=None,
):
    """Implements com.microsoft QLinearAveragePool: the mean of each window, quantized.

    As onnxruntime: ``X`` dequantized to float32, each window summed in order (row-major),
    divided by its count, then ``saturate(round(mean / y_scale + y_zero_point))``. The
    count is the window's input elements, or with ``count_include_pad`` the whole kernel
    (also where a ``ceil_mode`` window reaches past the padding, as onnxruntime counts
    it). A window covering the whole unpadded input takes onnxruntime's integer global
    average instead (:func:`qlinear_global_average_pool`). Window attributes as
    AveragePool's (no dilations).

    Args:
        X: uint8 or int8, ``(N, C, D1, ...)`` (or ``(N, D1, ..., C)`` with ``channels_last``),
            1 to 3 spatial axes.
        x_scale, y_scale: float scalars.
        x_zero_point, y_zero_point: optional scalars of ``X``'s type (0).
        auto_pad, ceil_mode, count_include_pad, kernel_shape, pads, strides: as AveragePool's.
        channels_last: 1 where the channels are the last axis.

    Returns:
        The pooled values, of ``X``'s type.

    Example:
        >>> x = jnp.array([[[10, 20, 31, 40]]], jnp.uint8)
        >>> s, z = jnp.float32(1.0), jnp.uint8(0)
        >>> jaxonnx.ops.qlinear_average_pool(x, s, z, s, z, kernel_shape=[2], strides=[2])
        Array([[[15, 36]]], dtype=uint8)
    """
    x_scale, x_zero, y_scale, y_zero = _scalars(x_scale, x_zero_point, y_scale, y_zero_point, X.dtype)
    X = _channels_first(X, channels_last)
    if X.ndim > 5:
        raise OnnxValidationError(f"pools 1 to 3 spatial axes, got `X` of shape {tuple(X.shape)}.")
    kernel, strides, dilations, padding, auto_pad = window_attributes(
        X.shape, kernel_shape, strides, None, pads, auto_pad
    )
    _, padding, extras = output_geometry(X.shape[2:], kernel, strides, dilations, padding, auto_pad, bool(ceil_mode))
    if tuple(kernel) == tuple(X.shape[2:]) and all(low == high == 0 for low, high in padding):
        return _restore(_global_average(X, x_scale, x_zero, y_scale, y_zero), channels_last)
    xp = namespace(X)
    values = dequantize(X, x_scale, x_zero, np.float32, _PER_TENSOR)
    full_padding = [(0, 0), (0, 0)] + [(low, high + extra) for (low, high), extra in zip(padding, extras)]
    padded = xp.pad(values, full_padding)
    # One strided view per kernel offset, added in row-major order: onnxruntime's order of
    # the float32 sum (the padding adds zeros, which leave a float32 sum unchanged).
    out_sizes = [(p - k) // s + 1 for p, k, s in zip(padded.shape[2:], kernel, strides)]
    total = None
    for offset in itertools.product(*(range(k) for k in kernel)):
        view = padded[
            (slice(None), slice(None))
            + tuple(slice(o, o + (n - 1) * s + 1, s) for o, n, s in zip(offset, out_sizes, strides))
        ]
        total = view if total is None else total + view
    if count_include_pad:
        counts = np.full(out_sizes, np.prod(kernel), np.float32)
    else:
        inside = np.pad(np.ones(X.shape[2:], np.float32), [p for p in full_padding[2:]])
        counts = np.zeros(out_sizes, np.float32)
        for offset in itertools.product(*(range(k) for k in kernel)):
            counts += inside[tuple(slice(o, o + (n - 1) * s + 1, s) for o, n, s in zip(offset, out_sizes, strides))]
    means = true_divide(total, xp.asarray(counts.reshape((1, 1) + counts.shape)))
    scaled = true_divide(means, y_scale) + y_zero.astype(np.float32)
    return _restore(saturate_rounded(scaled, onnx_type_name(X.dtype)), channels_last)


__all__ = ["qlinear_average_pool", "qlinear_global_average_pool"]
