"""DequantizeLinear: versions 10 (per tensor), 13 (`axis`: per axis), 19 (float8), 21
(`block_size`, 16- and 4-bit types), 23 (`output_dtype`, float4e2m1), 24 (float8e8m0
scales), 25 (2-bit types) and 28 (float6)."""

from __future__ import annotations

from jaxonnx._core.dtypes import numpy_dtype, onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError
from jaxonnx.ops._helpers.casting import TYPE_CODES
from jaxonnx.ops._helpers.quantization import dequantize, quantization_layout, type_name

_OUTPUT_TYPES = ("float", "float16", "bfloat16")


@register("DequantizeLinear", 23, 24, 25, 28)
def dequantize_linear(x, x_scale, x_zero_point=None, *, axis=1, block_size=0, output_dtype=0, straight_through=False):
    """Implements ONNX DequantizeLinear: ``y = (x - x_zero_point) * x_scale``.

    The difference is exact and the product is rounded once to the output type (computed
    in float32, exact for 8-bit inputs). ``x_scale`` and ``x_zero_point`` apply per
    tensor, per axis or per block, as in QuantizeLinear. The output type is
    ``output_dtype``'s, else ``x_scale``'s (a float8e8m0 scale needs ``output_dtype``).
    float6 inputs work on numpy values only (JAX cannot hold them).

    Args:
        x: the quantized array (8-, 16-, 4- or 2-bit integers, int32, float8, float4 or
            float6). The function (not the registered op) also takes the float32 values
            of a straight-through QuantizeLinear, and passes gradients to them.
        x_scale: the scale (float32, float16, bfloat16 or float8e8m0).
        x_zero_point: optional zero point, of ``x``'s type and ``x_scale``'s shape.
        axis: the quantized axis for per-axis and blocked quantization.
        block_size: the block length along ``axis`` (0: not blocked).
        output_dtype: the output's ``TensorProto.DataType`` code (float, float16 or bfloat16).
        straight_through: not an ONNX attribute: set by ``jaxonnx.load(...,
            straight_through=True)``, when ``x`` arrives as the float32 values of a
            QuantizeLinear with the straight-through estimator (the registry then accepts a
            float ``x``); the computation is the same.

    Returns:
        The dequantized array, of ``x``'s shape.

    Example:
        >>> jaxonnx.ops.dequantize_linear(jnp.array([0, 128, 255], jnp.uint8), jnp.float32(0.5), jnp.uint8(128))
        Array([-64. ,   0. ,  63.5], dtype=float32)
    """
    if output_dtype:
        out_type = type_name(output_dtype, name="output_dtype")
        if out_type not in _OUTPUT_TYPES:
            raise OnnxTypeError(
                f"got `output_dtype`={output_dtype} ({out_type}); it must be one of {', '.join(_OUTPUT_TYPES)}."
            )
    else:
        out_type = onnx_type_name(x_scale.dtype)
        if out_type not in _OUTPUT_TYPES:
            raise OnnxTypeError(
                f"needs `output_dtype` for `x_scale` of type {out_type}, which is no output type; the output "
                f"is one of {', '.join(_OUTPUT_TYPES)}."
            )
    layout = quantization_layout(
        x.shape, x_scale, x_zero_point, axis=axis, block_size=block_size, names=("x_scale", "x_zero_point")
    )
    return dequantize(x, x_scale, x_zero_point, numpy_dtype(TYPE_CODES[out_type]), layout, block_size=block_size)


@register("DequantizeLinear", 21)
def _dequantize_linear_21(x, x_scale, x_zero_point=None, *, axis=1, block_size=0, straight_through=False):
    return dequantize_linear(x, x_scale, x_zero_point, axis=axis, block_size=block_size)


@register("DequantizeLinear", 13, 19)
def _dequantize_linear_13(x, x_scale, x_zero_point=None, *, axis=1, straight_through=False):
    return dequantize_linear(x, x_scale, x_zero_point, axis=axis)


@register("DequantizeLinear", 10)
def _dequantize_linear_10(x, x_scale, x_zero_point=None, *, straight_through=False):
    # Per tensor only: the scale and zero point are scalars.
    names = ("x_scale", "x_zero_point")
    quantization_layout(x.shape, x_scale, x_zero_point, axis=0, block_size=0, per_tensor_only=True, names=names)
    return dequantize_linear(x, x_scale, x_zero_point)


__all__ = ["dequantize_linear"]
