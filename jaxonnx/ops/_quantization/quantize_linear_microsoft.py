"""QuantizeLinear and DequantizeLinear of the com.microsoft domain (version 1), which
onnxruntime's quantization tool writes for 16-bit and 4-bit types in QDQ models made for
opsets before 21. They are the default domain's version-13 ops (per tensor or per axis,
no blocks) over a wider type list."""

from __future__ import annotations

import numpy as np
import onnx.defs

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.quantization import dequantize, quantization_layout, quantize
from jaxonnx.ops._helpers.schemas import attribute_without_default, contrib_schema

_INTEGERS = ["tensor(int8)", "tensor(uint8)", "tensor(int16)", "tensor(uint16)", "tensor(int4)", "tensor(uint4)"]
_AXIS = attribute_without_default(
    "axis",
    onnx.defs.OpSchema.AttrType.INT,
    "The axis of per-axis quantization; with scalar scales (per tensor) it is not read.",
)
_QUANTIZE_SCHEMA = contrib_schema(
    "QuantizeLinear",
    "y = saturate(round(x / y_scale) + y_zero_point), rounding half to even.",
    inputs=[("x", "T1"), ("y_scale", "T1"), ("y_zero_point", "T2", "optional")],
    outputs=[("y", "T2")],
    type_constraints=[("T1", ["tensor(float16)", "tensor(float)"]), ("T2", _INTEGERS)],
    attributes=[_AXIS],
    differentiable=(),
)
_DEQUANTIZE_SCHEMA = contrib_schema(
    "DequantizeLinear",
    "y = (x - x_zero_point) * x_scale.",
    inputs=[("x", "T1"), ("x_scale", "T2"), ("x_zero_point", "T1", "optional")],
    outputs=[("y", "T2")],
    type_constraints=[("T1", _INTEGERS + ["tensor(int32)"]), ("T2", ["tensor(float16)", "tensor(float)"])],
    differentiable=("x_scale",),
    attributes=[_AXIS],
)


@register("QuantizeLinear", 1, domain="com.microsoft", schema=_QUANTIZE_SCHEMA)
def quantize_linear_microsoft(x, y_scale, y_zero_point=None, *, axis=None):
    """Implements com.microsoft QuantizeLinear: ``y = saturate(round(x / y_scale) +
    y_zero_point)``, per tensor (scalar scale) or per ``axis`` (a 1-D scale).

    As the default domain's QuantizeLinear-13 (division in the scale's type, rounding half
    to even, saturation to the output type's range), over int8, uint8, int16, uint16,
    int4 and uint4. The output type is ``y_zero_point``'s, uint8 without one. ``axis``
    defaults to 1, as onnxruntime's kernel reads it.

    Args:
        x: float32 or float16.
        y_scale: a scalar, or 1-D of ``x.shape[axis]``, of ``x``'s type.
        y_zero_point: optional, of ``y_scale``'s shape; its type is the output's.
        axis: the quantized axis of per-axis quantization (negative from the back).

    Returns:
        The quantized array, of ``x``'s shape.

    Example:
        >>> jaxonnx.ops.quantize_linear_microsoft(jnp.array([-70000.0, 0.5, 3.0]), jnp.float32(2.0), jnp.int16(-1))
        Array([-32768,     -1,      1], dtype=int16)
    """
    axis = 1 if axis is None else axis
    target = "uint8" if y_zero_point is None else onnx_type_name(y_zero_point.dtype)
    layout = quantization_layout(x.shape, y_scale, y_zero_point, axis=axis, block_size=0)
    return quantize(x, y_scale, y_zero_point, target, layout)


@register("DequantizeLinear", 1, domain="com.microsoft", schema=_DEQUANTIZE_SCHEMA)
def dequantize_linear_microsoft(x, x_scale, x_zero_point=None, *, axis=None):
    """Implements com.microsoft DequantizeLinear: ``y = (x - x_zero_point) * x_scale``, per
    tensor (scalar scale) or per ``axis`` (a 1-D scale).

    As the default domain's DequantizeLinear-13 (the difference exact, the product in
    float32, rounded once to the scale's type), over int8, uint8, int16, uint16, int4,
    uint4 and int32. ``axis`` defaults to 1, as onnxruntime's kernel reads it.

    Args:
        x: the quantized array.
        x_scale: a float32 or float16 scalar, or 1-D of ``x.shape[axis]``.
        x_zero_point: optional, of ``x``'s type and ``x_scale``'s shape.
        axis: the quantized axis of per-axis quantization (negative from the back).

    Returns:
        ``x``'s shape, of ``x_scale``'s type.

    Example:
        >>> jaxonnx.ops.dequantize_linear_microsoft(jnp.array([-8, 0, 7], jnp.int4), jnp.float32(0.5), jnp.int4(-1))
        Array([-3.5,  0.5,  4. ], dtype=float32)
    """
    axis = 1 if axis is None else axis
    layout = quantization_layout(
        x.shape, x_scale, x_zero_point, axis=axis, block_size=0, names=("x_scale", "x_zero_point")
    )
    return dequantize(x, x_scale, x_zero_point, np.dtype(x_scale.dtype), layout)


__all__ = ["dequantize_linear_microsoft", "quantize_linear_microsoft"]
