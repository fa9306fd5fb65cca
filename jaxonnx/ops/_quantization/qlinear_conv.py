"""QLinearConv: version 10."""

from __future__ import annotations

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.quantization import conv_int32, per_channel_shape, requantize


@register("QLinearConv", 10, folds=False)
def qlinear_conv(
    x,
    x_scale,
    x_zero_point,
    w,
    w_scale,
    w_zero_point,
    y_scale,
    y_zero_point,
    B=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    pads=None,
    strides=None,
):
    """Implements ONNX QLinearConv: the convolution of quantized ``x`` and ``w``, quantized.

    ``y = saturate(round((conv(x - x_zero_point, w - w_zero_point) + B) * (x_scale *
    w_scale / y_scale)) + y_zero_point)``: the integer part is ConvInteger's (exact, int32
    accumulation) plus the int32 bias ``B`` (quantized with scale ``x_scale * w_scale``
    and zero point 0); the requantization is in float32, as onnxruntime computes it,
    rounding half to even and saturating to ``y_zero_point``'s type. Window attributes as
    Conv's.

    Args:
        x: int8 or uint8 ``(N, C, D1, ..., Dn)``.
        x_scale, x_zero_point: scalars; the zero point of ``x``'s type.
        w: int8 or uint8 weights ``(M, C / group, k1, ..., kn)``.
        w_scale, w_zero_point: of one shape: scalars, or ``M``-vectors (per output channel).
        y_scale, y_zero_point: scalars; the zero point's type is the output's.
        B: optional int32 bias ``(M,)``.
        auto_pad, dilations, group, kernel_shape, pads, strides: as in Conv.

    Returns:
        ``(N, M, O1, ..., On)`` of ``y_zero_point``'s type.

    Example:
        >>> x = jnp.arange(4, dtype=jnp.uint8).reshape(1, 1, 2, 2)
        >>> w = jnp.ones((1, 1, 1, 1), jnp.int8)
        >>> s = jnp.float32(0.5)
        >>> jaxonnx.ops.qlinear_conv(x, s, jnp.uint8(0), w, s, jnp.int8(0), s, jnp.uint8(100))[0, 0]
        Array([[100, 100],
               [101, 102]], dtype=uint8)
    """
    per_tensor = {"x_scale": x_scale, "x_zero_point": x_zero_point, "y_scale": y_scale, "y_zero_point": y_zero_point}
    for name, value in per_tensor.items():
        per_channel_shape(value, 0, x.ndim, name=name)
    scale_shape = per_channel_shape(w_scale, w.shape[0], x.ndim, name="w_scale")
    if scale_shape != per_channel_shape(w_zero_point, w.shape[0], x.ndim, name="w_zero_point"):
        raise OnnxValidationError(
            f"needs `w_scale` and `w_zero_point` of one shape, got {tuple(w_scale.shape)} and {tuple(w_zero_point.shape)}."
        )
    acc = conv_int32(
        x,
        w,
        x_zero_point,
        w_zero_point,
        B,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )
    multiplier = true_divide(x_scale.reshape(()) * w_scale.reshape(scale_shape), y_scale.reshape(()))
    return requantize(acc, multiplier, y_zero_point.reshape(()), onnx_type_name(y_zero_point.dtype))


__all__ = ["qlinear_conv"]
