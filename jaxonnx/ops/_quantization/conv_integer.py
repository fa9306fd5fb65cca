"""ConvInteger: version 10."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.quantization import conv_int32


@register("ConvInteger", 10, folds=False)
def conv_integer(
    x,
    w,
    x_zero_point=None,
    w_zero_point=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    pads=None,
    strides=None,
):
    """Implements ONNX ConvInteger: Conv of ``x - x_zero_point`` with ``w - w_zero_point`` in int32.

    The window attributes are Conv's. The zero points are subtracted before padding (so
    the padding stands for ``x_zero_point``), in int16, and the products accumulate exactly
    in int32 (``preferred_element_type``, no float accumulation), wrapping around only
    past the int32 range, as the text allows.

    Args:
        x: an int8 or uint8 array ``(N, C, D1, ..., Dn)``.
        w: int8 or uint8 weights ``(M, C / group, k1, ..., kn)``.
        x_zero_point: optional, of ``x``'s type: a scalar.
        w_zero_point: optional, of ``w``'s type: a scalar or an ``M``-vector (per output channel).
        auto_pad, dilations, group, kernel_shape, pads, strides: as in Conv.

    Returns:
        An int32 array ``(N, M, O1, ..., On)``.

    Example:
        >>> x = jnp.arange(9, dtype=jnp.uint8).reshape(1, 1, 3, 3)
        >>> jaxonnx.ops.conv_integer(x, jnp.ones((1, 1, 2, 2), jnp.uint8), jnp.uint8(4))[0, 0]
        Array([[-8, -4],
               [ 4,  8]], dtype=int32)
    """
    return conv_int32(
        x,
        w,
        x_zero_point,
        w_zero_point,
        auto_pad=auto_pad,
        dilations=dilations,
        group=group,
        kernel_shape=kernel_shape,
        pads=pads,
        strides=strides,
    )


__all__ = ["conv_integer"]
