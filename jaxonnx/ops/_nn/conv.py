"""Conv: versions 1, 11 and 22 (22 only adds bfloat16); and onnxruntime's com.microsoft
FusedConv (a Conv, a sum and an activation) and NhwcConv (a Conv channels-last), version 1,
both running Conv itself."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import onnx.defs

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.conv_cpu import convolve
from jaxonnx.ops._helpers.fused_activation import conv_activation
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema
from jaxonnx.ops._helpers.window import (
    add_channel_bias,
    check_weights,
    onnx_shape,
    output_geometry,
    window_attributes,
)


@register("Conv", 1, 11, 22, folds=False, weights=("W", "B"), linear=True, prefers_channels_last=True)
def conv(
    X,
    W,
    B=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    pads=None,
    strides=None,
    channels_last=False,
):
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
    _, strides, dilations, padding, auto_pad = window_attributes(
        shape, kernel_shape, strides, dilations, pads, auto_pad
    )
    check_weights(jax.ShapeDtypeStruct(shape, X.dtype), W, B, group, kernel_shape)
    _, padding, _ = output_geometry(shape[2:], W.shape[2:], strides, dilations, padding, auto_pad)
    # lax's default layout is ONNX's: (N, C, spatial...) and (O, I, spatial...). On CPU the
    # convolution runs as shifted multiply-adds, Winograd or XLA's (ops/_helpers/conv_cpu.py).
    y = convolve(X, W, strides, padding, dilations, group, channels_last=channels_last)
    return add_channel_bias(y, B, channels_last=channels_last)


_INTS = onnx.defs.OpSchema.AttrType.INTS
_WINDOW = [
    attribute("auto_pad", "NOTSET", "NOTSET, VALID, SAME_UPPER or SAME_LOWER, as Conv's."),
    attribute_without_default("dilations", _INTS, "The spacing of kernel taps per spatial axis."),
    attribute("group", 1, "The number of channel groups."),
    attribute_without_default("kernel_shape", _INTS, "The kernel's spatial shape."),
    attribute_without_default("pads", _INTS, "Padding at the start and end of each spatial axis."),
    attribute_without_default("strides", _INTS, "The step per spatial axis."),
]
_CONV_TYPES = [("T", ["tensor(float16)", "tensor(float)", "tensor(double)"])]
_FUSED_CONV_SCHEMA = contrib_schema(
    "FusedConv",
    "Y = activation(Conv(X, W, B) + Z).",
    inputs=[("X", "T"), ("W", "T"), ("B", "T", "optional"), ("Z", "T", "optional")],
    outputs=[("Y", "T")],
    type_constraints=_CONV_TYPES,
    attributes=[
        *_WINDOW,
        attribute_without_default("activation", onnx.defs.OpSchema.AttrType.STRING, "The activation's op type."),
        attribute_without_default(
            "activation_params", onnx.defs.OpSchema.AttrType.FLOATS, "The activation's parameters."
        ),
    ],
)
_NHWC_CONV_SCHEMA = contrib_schema(
    "NhwcConv",
    "Conv with X, W and Y channels-last.",
    inputs=[("X", "T"), ("W", "T"), ("B", "T", "optional")],
    outputs=[("Y", "T")],
    type_constraints=_CONV_TYPES,
    attributes=_WINDOW,
)


@register("FusedConv", 1, domain="com.microsoft", schema=_FUSED_CONV_SCHEMA, folds=False)
def fused_conv(
    X,
    W,
    B=None,
    Z=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    pads=None,
    strides=None,
    activation=None,
    activation_params=None,
):
    """Implements com.microsoft FusedConv: ``activation(Conv(X, W, B) + Z)``.

    The convolution is Conv's (its CPU formulations included). ``Z`` (the residual sum
    onnxruntime fuses in) has the output's shape; the activation is one of those onnxruntime's
    CPU kernel fuses: Relu, Tanh, Sigmoid, Silu, LeakyRelu (``activation_params`` = alpha),
    Clip (min, max) or HardSigmoid (alpha, beta); none without ``activation``.

    Args:
        X, W, B: as Conv's.
        Z: optional, of the output's shape, added before the activation.
        auto_pad, dilations, group, kernel_shape, pads, strides: as Conv's.
        activation: the activation's op type, or None.
        activation_params: its parameters.

    Returns:
        ``(N, M, O1, ..., On)``, of the type of ``X``.

    Example:
        >>> x = jnp.arange(4.0).reshape(1, 1, 2, 2) - 2
        >>> jaxonnx.ops.fused_conv(x, jnp.ones((1, 1, 1, 1)), activation="Clip", activation_params=[-1.0, 0.5])
        Array([[[[-1. , -1. ],
                 [ 0. ,  0.5]]]], dtype=float32)
    """
    y = conv(
        X,
        W,
        B,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    if Z is not None:
        if tuple(Z.shape) != tuple(y.shape):
            raise OnnxValidationError(f"needs `Z` of the output's shape {tuple(y.shape)}, got {tuple(Z.shape)}.")
        y = y + Z
    return conv_activation(y, activation, activation_params)


@register("NhwcConv", 1, domain="com.microsoft", schema=_NHWC_CONV_SCHEMA, folds=False)
def nhwc_conv(X, W, B=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None):
    """Implements com.microsoft NhwcConv: Conv with ``X``, ``W`` and ``Y`` channels-last.

    ``X`` is ``(N, D1, ..., Dn, C)`` and ``W`` ``(M, k1, ..., kn, C / group)``, the layout
    onnxruntime's optimizer writes (its NhwcConv fusion transposes Conv's weights by
    ``(0, 2, 3, 1)``; the schema text repeats Conv's). The convolution is Conv's, run
    channels-last. onnxruntime runs this op on CUDA only; tests check it against onnxruntime's
    Conv on the transposed operands.

    Args:
        X: ``(N, D1, ..., Dn, C)``.
        W: ``(M, k1, ..., kn, C / group)``.
        B: optional ``(M,)``.
        auto_pad, dilations, group, kernel_shape, pads, strides: as Conv's.

    Returns:
        ``(N, O1, ..., On, M)``, of the type of ``X``.

    Example:
        >>> jaxonnx.ops.nhwc_conv(jnp.ones((1, 3, 3, 2)), jnp.ones((4, 2, 2, 2))).shape
        (1, 2, 2, 4)
    """
    if W.ndim < 3:
        raise OnnxValidationError(f"needs `W` of shape (M, k1, ..., kn, C / group), got {tuple(W.shape)}.")
    onnx_weights = jnp.moveaxis(jnp.asarray(W), -1, 1)
    return conv(
        X,
        onnx_weights,
        B,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
        channels_last=True,
    )


__all__ = ["conv", "fused_conv", "nhwc_conv"]
