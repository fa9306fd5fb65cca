"""QLinearConcat (com.microsoft, version 1): quantized tensors, each requantized to the
output's scale and zero point, concatenated."""

from __future__ import annotations

import numpy as np
import onnx.defs

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.quantization import dequantize, per_tensor_value, quantize
from jaxonnx.ops._helpers.schemas import attribute_without_default, contrib_schema

_PER_TENSOR = ("tensor", None)

_SCHEMA = contrib_schema(
    "QLinearConcat",
    "Y = concat(quantize(dequantize(x_i)), axis): the inputs come as (tensor, scale, zero point) triples.",
    inputs=[("Y_scale", "TF"), ("Y_zero_point", "T8"), ("inputs", "TV", "variadic")],
    outputs=[("Y", "T8")],
    type_constraints=[
        ("T8", ["tensor(uint8)", "tensor(int8)"]),
        ("TF", ["tensor(float)"]),
        ("TV", ["tensor(uint8)", "tensor(int8)", "tensor(float)"]),
    ],
    attributes=[
        attribute_without_default("axis", onnx.defs.OpSchema.AttrType.INT, "The axis to concatenate on.", required=True)
    ],
    differentiable=(),
)


@register("QLinearConcat", 1, domain="com.microsoft", schema=_SCHEMA)
def qlinear_concat(Y_scale, Y_zero_point, *inputs, axis):
    """Implements com.microsoft QLinearConcat: quantized tensors concatenated on a common scale.

    Each input comes as a triple ``(x, x_scale, x_zero_point)``; its values are
    requantized to ``Y_scale`` and ``Y_zero_point`` (``saturate(round(x_scale * (x -
    x_zero_point) / Y_scale) + Y_zero_point)`` in float32, as onnxruntime's lookup
    table), then concatenated along ``axis``.

    Args:
        Y_scale: float scalar.
        Y_zero_point: uint8 or int8 scalar; the output's type.
        *inputs: triples ``x, x_scale, x_zero_point``: tensors of the output's type and
            rank, float scalar scales and zero points of the output's type.
        axis: the axis to concatenate on (negative counts from the end).

    Returns:
        The concatenation, of ``Y_zero_point``'s type.

    Example:
        >>> a = jnp.array([[10, 20]], jnp.uint8)
        >>> b = jnp.array([[10]], jnp.uint8)
        >>> s, z = jnp.float32(1.0), jnp.uint8(0)
        >>> jaxonnx.ops.qlinear_concat(s, z, a, s, z, b, jnp.float32(2.0), jnp.uint8(5), axis=1)
        Array([[10, 20, 10]], dtype=uint8)
    """
    if len(inputs) < 3 or len(inputs) % 3:
        raise OnnxValidationError(
            f"needs its inputs as (tensor, scale, zero point) triples after `Y_scale` and `Y_zero_point`, got {len(inputs)} inputs there."
        )
    y_scale = per_tensor_value(Y_scale, "Y_scale").astype(np.float32)
    y_zero = per_tensor_value(Y_zero_point, "Y_zero_point")
    target = onnx_type_name(y_zero.dtype)
    parts = []
    for index in range(0, len(inputs), 3):
        x, x_scale, x_zero = inputs[index : index + 3]
        which = f"input {index // 3}"
        if x.dtype != y_zero.dtype or x_zero.dtype != y_zero.dtype:
            raise OnnxTypeError(
                f"needs {which} and its zero point of `Y_zero_point`'s type {target}, got {onnx_type_name(x.dtype)} "
                f"and {onnx_type_name(x_zero.dtype)}."
            )
        x_scale = per_tensor_value(x_scale, f"x_scale of {which}").astype(np.float32)
        x_zero = per_tensor_value(x_zero, f"x_zero_point of {which}")
        values = dequantize(x, x_scale, x_zero, np.float32, _PER_TENSOR)
        parts.append(quantize(values, y_scale, y_zero, target, _PER_TENSOR))
    rank = parts[0].ndim
    if any(part.ndim != rank for part in parts):
        raise OnnxValidationError(f"needs inputs of one rank, got shapes {[tuple(p.shape) for p in parts]}.")
    axis = normalize_axis(axis, rank)
    return namespace(*parts).concatenate(parts, axis=axis)


__all__ = ["qlinear_concat"]
