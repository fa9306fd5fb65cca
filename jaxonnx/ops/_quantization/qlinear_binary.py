"""QLinearAdd and QLinearMul (com.microsoft, version 1): elementwise sum and product of two
quantized tensors, quantized, computed as onnxruntime's CPU kernels compute them."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import broadcast_together, true_divide
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import (
    fused_multiply_add,
    per_tensor_value,
    rounded_multiply_add,
    saturate_rounded,
)
from jaxonnx.ops._helpers.schemas import contrib_schema

_NAMES = ("A", "A_scale", "A_zero_point", "B", "B_scale", "B_zero_point", "C_scale", "C_zero_point")


def _schema(name: str, what: str):
    return contrib_schema(
        name,
        f"C = quantize(dequantize(A) {what} dequantize(B)), per-tensor scales and zero points, numpy broadcasting.",
        inputs=[
            ("A", "T"),
            ("A_scale", "tensor(float)"),
            ("A_zero_point", "T", "optional"),
            ("B", "T"),
            ("B_scale", "tensor(float)"),
            ("B_zero_point", "T", "optional"),
            ("C_scale", "tensor(float)"),
            ("C_zero_point", "T", "optional"),
        ],
        outputs=[("C", "T")],
        type_constraints=[("T", ["tensor(uint8)", "tensor(int8)"])],
        differentiable=(),
    )


def _operands(values):
    """The eight inputs as float32 scales and integer zero points (0 where omitted)."""
    A, a_scale, a_zero, B, b_scale, b_zero, c_scale, c_zero = (
        per_tensor_value(v, name) if name not in ("A", "B") else v for v, name in zip(values, _NAMES)
    )
    zeros = [np.zeros((), A.dtype) if z is None else z for z in (a_zero, b_zero, c_zero)]
    scales = [s.astype(np.float32) for s in (a_scale, b_scale, c_scale)]
    A, B = broadcast_together(A, B, names=("A", "B"))
    return A, B, scales, zeros


@register("QLinearAdd", 1, domain="com.microsoft", schema=_schema("QLinearAdd", "+"))
def qlinear_add(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point=None):
    """Implements com.microsoft QLinearAdd: the sum of two quantized tensors, quantized.

    ``C = saturate(round((A_scale * (A - A_zero_point) + B_scale * (B - B_zero_point)) /
    C_scale + C_zero_point))``, broadcast as numpy does, computed as onnxruntime's x86-64
    kernel does it: with the ratios ``A_scale / C_scale`` and ``B_scale / C_scale`` in
    float32, ``A * ratio_A + (B * ratio_B + offset)`` as two fused multiply-adds (one of
    them rounded apart where an operand is a single element; the offset holds the zero
    points), rounding half to even. The zero point is added before rounding, as there:
    on an exact tie with an odd ``C_zero_point`` the result is one step from rounding first.

    Args:
        A, B: uint8 or int8 tensors of one type, broadcastable.
        A_scale, B_scale, C_scale: float scalars.
        A_zero_point, B_zero_point, C_zero_point: optional scalars of ``A``'s type (0).

    Returns:
        The quantized sum, of ``A``'s type.

    Example:
        >>> a = jnp.array([10, 20, 30], jnp.uint8)
        >>> s = jnp.float32(0.5)
        >>> jaxonnx.ops.qlinear_add(a, s, jnp.uint8(0), a, s, jnp.uint8(0), jnp.float32(1.0), jnp.uint8(5))
        Array([15, 25, 35], dtype=uint8)
    """
    A, B, (a_scale, b_scale, c_scale), (a_zero, b_zero, c_zero) = _operands(
        (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point)
    )
    xp = namespace(A, B, a_scale, b_scale, c_scale)
    ratio_a, ratio_b = true_divide(a_scale, c_scale), true_divide(b_scale, c_scale)
    f32 = np.float32
    # The constant part, c_zero - (ratio_a * a_zero + ratio_b * b_zero), rounded step by step.
    offset = c_zero.astype(f32) - rounded_multiply_add(ratio_a, a_zero.astype(f32), ratio_b * b_zero.astype(f32))
    a, b = A.astype(f32), B.astype(f32)
    if A.size == 1 and B.size != 1:  # a single element folds into the constant part first
        total = fused_multiply_add(b, ratio_b, rounded_multiply_add(a, ratio_a, offset))
    elif B.size == 1 and A.size != 1:
        total = fused_multiply_add(a, ratio_a, rounded_multiply_add(b, ratio_b, offset))
    else:
        total = fused_multiply_add(a, ratio_a, fused_multiply_add(b, ratio_b, offset))
    shape = tuple(max(m, n) for m, n in zip(A.shape, B.shape))
    return saturate_rounded(xp.broadcast_to(total, shape), onnx_type_name(A.dtype))


@register("QLinearMul", 1, domain="com.microsoft", schema=_schema("QLinearMul", "*"))
def qlinear_mul(A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point=None):
    """Implements com.microsoft QLinearMul: the product of two quantized tensors, quantized.

    ``C = saturate(round(A_scale * (A - A_zero_point) * B_scale * (B - B_zero_point) /
    C_scale + C_zero_point))``, broadcast as numpy does, computed as onnxruntime's kernel
    does it: the integer product ``(A - A_zero_point) * (B - B_zero_point)`` exactly, times
    ``A_scale * B_scale / C_scale`` in float32, plus ``C_zero_point`` (before rounding, as
    there), each step rounded to float32, then rounded half to even and saturated.

    Args:
        A, B: uint8 or int8 tensors of one type, broadcastable.
        A_scale, B_scale, C_scale: float scalars.
        A_zero_point, B_zero_point, C_zero_point: optional scalars of ``A``'s type (0).

    Returns:
        The quantized product, of ``A``'s type.

    Example:
        >>> a = jnp.array([1, 2, 3], jnp.int8)
        >>> s = jnp.float32(0.5)
        >>> jaxonnx.ops.qlinear_mul(a, s, jnp.int8(0), a, s, jnp.int8(0), jnp.float32(0.25), jnp.int8(-1))
        Array([0, 3, 8], dtype=int8)
    """
    A, B, (a_scale, b_scale, c_scale), (a_zero, b_zero, c_zero) = _operands(
        (A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point)
    )
    ratio = true_divide(a_scale * b_scale, c_scale)
    product = (A.astype(np.int32) - a_zero.astype(np.int32)) * (B.astype(np.int32) - b_zero.astype(np.int32))
    return saturate_rounded(rounded_multiply_add(product, ratio, c_zero), onnx_type_name(A.dtype))


__all__ = ["qlinear_add", "qlinear_mul"]
