"""MatMulInteger: version 10."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.quantization import quantized_matmul, row_and_column_layout, zero_points_apart


@register("MatMulInteger", 10)
def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    """Implements ONNX MatMulInteger: ``(A - a_zero_point) @ (B - b_zero_point)`` in int32.

    A matrix product as ``numpy.matmul`` (batch dims broadcast; a 1-D operand is a row or
    column vector), computed exactly: the zero points are subtracted in int16 and the
    products accumulate in int32 (``preferred_element_type``, no float accumulation),
    wrapping around only past the int32 range, as the text allows.

    Args:
        A: an int8 or uint8 array ``(..., M, K)``.
        B: an int8 or uint8 array ``(..., K, N)``.
        a_zero_point: optional, of ``A``'s type: a scalar (per tensor), an ``M``-vector or
            an array of shape ``(..., M, 1)`` (per row of ``A``).
        b_zero_point: optional, of ``B``'s type: a scalar, an ``N``-vector or an array of
            shape ``(..., 1, N)`` (per column of ``B``).

    Returns:
        The int32 product.

    Example:
        >>> A = jnp.array([[11, 7], [10, 6]], jnp.uint8)
        >>> jaxonnx.ops.matmul_integer(A, jnp.array([[1], [2]], jnp.uint8), jnp.uint8(12))
        Array([[-11],
               [-14]], dtype=int32)
    """
    a_shape = row_and_column_layout(a_zero_point, A, rows=True, name="a_zero_point")
    b_shape = row_and_column_layout(b_zero_point, B, rows=False, name="b_zero_point")
    return quantized_matmul(zero_points_apart(A, a_zero_point, a_shape), zero_points_apart(B, b_zero_point, b_shape))


__all__ = ["matmul_integer"]
