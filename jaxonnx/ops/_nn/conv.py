"""Conv: versions 1, 11 and 22 (22 only adds bfloat16)."""

from __future__ import annotations

import jax

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.conv_cpu import convolve
from jaxonnx.ops._helpers.window import (
    add_channel_bias,
    check_weights,
    onnx_shape,
    output_geometry,
    window_attributes,
)


@register("Conv", 1, 11, 22, folds=False, channels_last=True)
def conv(X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None,
         channels_last=False):
    """Implements ONNX Conv: the N-D cross-correlation of ``X`` with ``W``, plus ``B``.

    Args:
        X: input of shape ``(N, C, D1, ..., Dn)``.
        W: weights of shape ``(M, C / group, k1, ..., kn)``.
        B: optional bias of shape ``(M,)``.
        auto_pad: ``NOTSET`` (use ``pads``), ``VALID`` (no padding), ``SAME_UPPER`` or
            ``SAME_LOWER`` (output size ``ceil(D / stride)``; the odd padding pixel at the
            end or at the start).
        dilations: the spacing of kernel taps per spatial axis (default 1).
        group: the number of channel groups; ``C`` and ``M`` must be multiples of it.
        kernel_shape: if given, must equal ``W.shape[2:]``.
        pads: ``[begin_1, ..., begin_n, end_1, ..., end_n]`` (default 0).
        strides: the step per spatial axis (default 1).
        channels_last: ``X`` is ``(N, D1, ..., Dn, C)`` and the result ``(N, O1, ..., On,
            M)`` (``lax``'s ``NHWC``); ``W`` keeps ONNX's layout. The interpreter keeps the
            activations between convolutions so (see ``jaxonnx/_core/layout.py``).

    Returns:
        An array of shape ``(N, M, O1, ..., On)`` and the dtype of ``X``.

    Example:
        >>> x = jnp.arange(9.0).reshape(1, 1, 3, 3)
        >>> jaxonnx.ops.conv(x, jnp.ones((1, 1, 2, 2)), pads=[0, 0, 1, 1])[0, 0]
        Array([[ 8., 12.,  7.],
               [20., 24., 13.],
               [13., 15.,  8.]], dtype=float32)
    """
    shape = onnx_shape(X.shape, channels_last)
    _, strides, dilations, padding, auto_pad = window_attributes(shape, kernel_shape, strides, dilations, pads, auto_pad)
    check_weights(jax.ShapeDtypeStruct(shape, X.dtype), W, B, group, kernel_shape)
    _, padding, _ = output_geometry(shape[2:], W.shape[2:], strides, dilations, padding, auto_pad)
    # lax's default layout is ONNX's: (N, C, spatial...) and (O, I, spatial...). On CPU the
    # convolution runs as shifted multiply-adds, Winograd or XLA's (ops/_helpers/conv_cpu.py).
    y = convolve(X, W, strides, padding, dilations, group, channels_last=channels_last)
    return add_channel_bias(y, B, channels_last=channels_last)


__all__ = ["conv"]
