"""ConvTranspose: versions 1, 11 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.window import add_channel_bias, check_weights, window_attributes


@register("ConvTranspose", 1, 11, 22, folds=False, weights=("W", "B"), linear=True)
def conv_transpose(
    X,
    W,
    B=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    output_padding=None,
    output_shape=None,
    pads=None,
    strides=None,
):
    """Implements ONNX ConvTranspose: the gradient of Conv with respect to its input, plus ``B``.

    Along each spatial axis the full output has ``stride * (D - 1) + output_padding +
    (k - 1) * dilation + 1`` elements, of which ``pads`` removes some at each end. If
    ``output_shape`` is given (or ``auto_pad`` is ``SAME_*``, which means ``output_shape =
    D * stride``), ``pads`` is ignored and the padding is derived from it: the odd pixel
    is removed at the end for ``SAME_UPPER``, at the start otherwise.

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        W: weights of shape ``(C, M / group, k1, ..., kn)``.
        B: optional bias of shape ``(M,)``.
        auto_pad, dilations, group, kernel_shape, pads, strides: as in Conv.
        output_padding: extra elements at the end of each spatial axis (default 0).
        output_shape: the spatial output shape (``n`` values, or ``n + 2`` with N and C).

    Returns:
        An array of shape ``(N, M, O1, ..., On)`` and the dtype of ``X``.

    Example:
        >>> x = jnp.array([[[1.0, 2.0, 3.0]]])
        >>> jaxonnx.ops.conv_transpose(x, jnp.array([[[1.0, 10.0]]]), strides=[2])
        Array([[[ 1., 10.,  2., 20.,  3., 30.]]], dtype=float32)
    """
    _, strides, dilations, padding, auto_pad = window_attributes(
        X.shape, kernel_shape, strides, dilations, pads, auto_pad
    )
    out_channels = check_weights(X, W, B, group, kernel_shape, transposed=True)
    spatial = X.ndim - 2
    output_padding = (0,) * spatial if output_padding is None else tuple(int(p) for p in output_padding)
    if len(output_padding) != spatial or min(output_padding) < 0:
        raise OnnxValidationError(
            f"got `output_padding`={list(output_padding)}; it needs {spatial} non-negative values, one per spatial axis."
        )
    spans = [(k - 1) * d + 1 for k, d in zip(W.shape[2:], dilations)]
    full = [s * (n - 1) + p + span for s, n, p, span in zip(strides, X.shape[2:], output_padding, spans)]
    if output_shape is None and auto_pad.startswith("SAME"):
        output_shape = [n * s for n, s in zip(X.shape[2:], strides)]
    if output_shape is not None:
        output_shape = list(output_shape)[-spatial:] if len(output_shape) in (spatial, spatial + 2) else None
        if output_shape is None or min(output_shape) < 1:
            raise OnnxValidationError(f"needs `output_shape` of {spatial} positive spatial sizes, got {output_shape}.")
        totals = [f - o for f, o in zip(full, output_shape)]
        lows = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in totals]
        padding = [(low, t - low) for low, t in zip(lows, totals)]
    sizes = [f - low - high for f, (low, high) in zip(full, padding)]
    if min(sizes) < 1:
        raise OnnxValidationError(f"got `pads` {padding} that remove the whole output (full spatial shape {full}).")
    # One conv over the stride-dilated input with the flipped kernel, channels swapped per group.
    kernel = W.reshape((group, W.shape[0] // group, W.shape[1]) + W.shape[2:])
    kernel = jnp.swapaxes(kernel, 1, 2).reshape((out_channels, W.shape[0] // group) + W.shape[2:])
    kernel = jnp.flip(kernel, axis=tuple(range(2, X.ndim)))
    conv_padding = [
        (span - 1 - low, span - 1 - high + p) for span, (low, high), p in zip(spans, padding, output_padding)
    ]
    y = jax.lax.conv_general_dilated(
        X, kernel, (1,) * spatial, conv_padding, lhs_dilation=strides, rhs_dilation=dilations, feature_group_count=group
    )
    return add_channel_bias(y, B)


__all__ = ["conv_transpose"]
