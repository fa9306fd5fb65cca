"""MatMulIntegerToFloat and DynamicQuantizeMatMul (com.microsoft, version 1): quantized
products with a float output, as onnxruntime's ``quantize_dynamic`` and its graph fusions
write them."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import (
    per_tensor_value,
    quantize,
    quantized_matmul,
    round_half_to_even,
    row_and_column_layout,
    zero_points_apart,
)
from jaxonnx.ops._helpers.schemas import contrib_schema

_INTEGER_TO_FLOAT_SCHEMA = contrib_schema(
    "MatMulIntegerToFloat",
    "Y = (A - a_zero_point) @ (B - b_zero_point) * a_scale * b_scale + bias, the product exact in int32.",
    inputs=[
        ("A", "T1"),
        ("B", "T2"),
        ("a_scale", "T3"),
        ("b_scale", "T3"),
        ("a_zero_point", "T1", "optional"),
        ("b_zero_point", "T2", "optional"),
        ("bias", "T3", "optional"),
    ],
    outputs=[("Y", "T3")],
    type_constraints=[
        ("T1", ["tensor(int8)", "tensor(uint8)"]),
        ("T2", ["tensor(int8)", "tensor(uint8)"]),
        ("T3", ["tensor(float)", "tensor(float16)"]),
    ],
    differentiable=("a_scale", "b_scale", "bias"),
)
_DYNAMIC_SCHEMA = contrib_schema(
    "DynamicQuantizeMatMul",
    "Y = MatMulIntegerToFloat(DynamicQuantizeLinear(A), B, ...): A quantized to uint8 with a scale and zero point "
    "from its range, then multiplied exactly by the quantized B.",
    inputs=[
        ("A", "T1"),
        ("B", "T2"),
        ("b_scale", "T1"),
        ("b_zero_point", "T2", "optional"),
        ("bias", "T1", "optional"),
    ],
    outputs=[("Y", "T1")],
    type_constraints=[("T1", ["tensor(float)"]), ("T2", ["tensor(int8)", "tensor(uint8)"])],
    differentiable=("b_scale", "bias"),
)


@register("MatMulIntegerToFloat", 1, domain="com.microsoft", schema=_INTEGER_TO_FLOAT_SCHEMA)
def matmul_integer_to_float(A, B, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    """Implements com.microsoft MatMulIntegerToFloat: ``Y = (A - a_zero_point) @ (B -
    b_zero_point) * a_scale * b_scale + bias``.

    The product is ``numpy.matmul``'s (batch dims broadcast) and exact: the zero points are
    subtracted in int16 and the products summed in int32. Then, as onnxruntime computes it,
    ``acc * (a_scale * b_scale) + bias`` in float32 (the multiplier rounded once to float32),
    rounded to the output type. ``a_zero_point`` is per tensor; ``b_scale`` and
    ``b_zero_point`` per tensor or per column of ``B``. A non-scalar ``a_scale`` (per row of
    ``A``, broadcast to the output) is accepted too; where onnxruntime's fusions left the two
    scales the other way round (a per-column scale in ``a_scale``), they are swapped back
    as onnxruntime's kernel does.

    Args:
        A: int8 or uint8 ``(..., M, K)``.
        B: int8 or uint8 ``(..., K, N)``.
        a_scale, b_scale: float32 (or float16) scales.
        a_zero_point: optional scalar of ``A``'s type.
        b_zero_point: optional, of ``B``'s type: a scalar, ``(N,)`` or ``(..., 1, N)``.
        bias: optional ``(N,)``.

    Returns:
        ``(..., M, N)`` of the scales' type.

    Example:
        >>> A = jnp.array([[130, 126]], jnp.uint8)
        >>> B = jnp.array([[2], [-1]], jnp.int8)
        >>> jaxonnx.ops.matmul_integer_to_float(A, B, jnp.float32(0.5), jnp.float32(0.25), jnp.uint8(128))
        Array([[0.75]], dtype=float32)
    """
    a_scale, b_scale = _scales_in_place(a_scale, b_scale)
    per_tensor_value(a_zero_point, "a_zero_point")
    return _to_float(A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias)


@register("DynamicQuantizeMatMul", 1, domain="com.microsoft", schema=_DYNAMIC_SCHEMA)
@np.errstate(all="ignore")  # an all-zero `A` divides 0 by its scale
def dynamic_quantize_matmul(A, B, b_scale, b_zero_point=None, bias=None):
    """Implements com.microsoft DynamicQuantizeMatMul: ``A`` quantized to uint8 from its own
    range, then multiplied by the quantized ``B`` as :func:`matmul_integer_to_float` does.

    ``A``'s parameters are onnxruntime's (DynamicQuantizeLinear's text), in float32: the range
    widened to include 0, ``a_scale = (max - min) / 255`` (1 for an all-zero ``A``),
    ``a_zero_point = round(clip(-min / a_scale, 0, 255))``, ``q = saturate(round(A /
    a_scale) + a_zero_point)``, rounding half to even, true divisions. Then ``Y = (q -
    a_zero_point) @ (B - b_zero_point) * (a_scale * b_scale) + bias``, the product exact.

    Gradients: ``Y`` is flat in ``A`` almost everywhere but for ``a_scale``, a function of
    ``A``'s extremes; ``b_scale`` and ``bias`` get exact gradients.

    Args:
        A: float32 ``(..., M, K)``.
        B: int8 or uint8 ``(..., K, N)``.
        b_scale: a scalar, ``(N,)`` or ``(..., 1, N)`` float32.
        b_zero_point: optional, of ``B``'s type and ``b_scale``'s layout.
        bias: optional ``(N,)`` float32.

    Returns:
        ``(..., M, N)`` float32.

    Example:
        >>> A = jnp.array([[-1.0, 3.0]])  # a_scale 4/255, a_zero_point 64
        >>> B = jnp.array([[1], [2]], jnp.int8)
        >>> jaxonnx.ops.dynamic_quantize_matmul(A, B, jnp.float32(0.5))
        Array([[2.4941177]], dtype=float32)
    """
    xp = namespace(A)
    low, high = 0, 255
    a_max = xp.max(A, initial=0.0).astype(np.float32)
    a_min = xp.min(A, initial=0.0).astype(np.float32)
    a_scale = xp.where(a_max == a_min, np.float32(1), true_divide(a_max - a_min, xp.asarray(high - low, np.float32)))
    a_zero = round_half_to_even(xp.clip(np.float32(low) - true_divide(a_min, a_scale), low, high)).astype(np.uint8)
    quantized = quantize(A, a_scale, a_zero, "uint8", ("tensor", None))
    return _to_float(quantized, B, a_scale, b_scale, a_zero, b_zero_point, bias)


def _scales_in_place(a_scale, b_scale):
    """onnxruntime's fix-up of scales its fusions may have swapped (shapes unknown there):
    a non-scalar ``a_scale`` that is 1-D or not one per row is ``B``'s; a scalar ``a_scale``
    with a ``b_scale`` that varies along rows is ``A``'s."""
    if a_scale.size != 1:
        if a_scale.ndim == 1 or a_scale.shape[-1] != 1:
            return b_scale, a_scale
    elif b_scale.size != 1 and b_scale.ndim > 1 and b_scale.shape[-2] != 1:
        return b_scale, a_scale
    return a_scale, b_scale


def _to_float(A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias):
    a_zero = per_tensor_value(a_zero_point, "a_zero_point")
    b_zero_shape = row_and_column_layout(b_zero_point, B, rows=False, name="b_zero_point")
    acc = quantized_matmul(zero_points_apart(A, a_zero), zero_points_apart(B, b_zero_point, b_zero_shape))
    rank = acc.ndim
    out_dtype = np.result_type(a_scale.dtype, b_scale.dtype)
    if a_scale.size == 1 and b_scale.size == 1:
        multiplier = a_scale.reshape(()).astype(np.float32) * b_scale.reshape(()).astype(np.float32)
    else:
        multiplier = _to_rank(a_scale.astype(np.float32), rank, "a_scale", acc.shape) * _to_rank(
            b_scale.astype(np.float32), rank, "b_scale", acc.shape
        )
    y = acc.astype(np.float32) * multiplier
    if bias is not None:
        if bias.ndim != 1 or bias.shape[0] != acc.shape[-1]:
            raise OnnxValidationError(f"needs `bias` of shape ({acc.shape[-1]},), got {tuple(bias.shape)}.")
        y = y + _to_rank(bias.astype(np.float32), rank, "bias", acc.shape)
    return y.astype(out_dtype)


def _to_rank(value, rank: int, name: str, out_shape):
    """``value`` with leading 1-dims to ``rank``, checked to broadcast to ``out_shape``."""
    if value.ndim > rank or any(v not in (1, o) for v, o in zip(value.shape[::-1], tuple(out_shape)[::-1])):
        raise OnnxValidationError(
            f"needs `{name}` broadcastable to the product's shape {tuple(out_shape)}, got {tuple(value.shape)}."
        )
    return value.reshape((1,) * (rank - value.ndim) + tuple(value.shape))


__all__ = ["dynamic_quantize_matmul", "matmul_integer_to_float"]
