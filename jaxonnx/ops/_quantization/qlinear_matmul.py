"""QLinearMatMul: versions 10 and 21 (21 adds float16 and bfloat16 scales and float8 types)."""

from __future__ import annotations

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.quantization import quantized_matmul, requantize, row_and_column_layout, zero_points_apart


@register("QLinearMatMul", 10, 21)
def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    """Implements ONNX QLinearMatMul: the product of two quantized matrices, quantized.

    ``y = saturate(round(((a - a_zero_point) @ (b - b_zero_point)) * (a_scale * b_scale /
    y_scale)) + y_zero_point)``: the integer product is exact (int32 accumulation, as
    MatMulInteger); the multiplier is computed in the scales' type (as onnx.reference
    does, which matters for float16 scales), the requantization in float32 (as
    onnxruntime), rounding half to even and saturating to the output type. Float8 inputs
    (version 21) multiply in float32, and the result converts to ``y_zero_point``'s float8
    type, saturating.

    Args:
        a: int8 or uint8 (or float8) ``(..., M, K)``.
        a_scale, a_zero_point: of one shape: a scalar, or per row of ``a`` (``(M,)`` or
            ``(..., M, 1)``); the zero point of ``a``'s type.
        b: int8 or uint8 (or float8) ``(..., K, N)``.
        b_scale, b_zero_point: a scalar, or per column of ``b`` (``(N,)`` or ``(..., 1, N)``).
        y_scale, y_zero_point: scalars; the zero point's type is the output's.

    Returns:
        The quantized product, of ``y_zero_point``'s type.

    Example:
        >>> a = jnp.array([[2, 4]], jnp.uint8)
        >>> b = jnp.array([[1], [3]], jnp.uint8)
        >>> s = jnp.float32(0.5)
        >>> jaxonnx.ops.qlinear_matmul(a, s, jnp.uint8(0), b, s, jnp.uint8(0), jnp.float32(1.0), jnp.uint8(10))
        Array([[14]], dtype=uint8)
    """
    a_shape = _paired_layout(a_scale, a_zero_point, a, rows=True, names=("a_scale", "a_zero_point"))
    b_shape = _paired_layout(b_scale, b_zero_point, b, rows=False, names=("b_scale", "b_zero_point"))
    _paired_layout(y_scale, y_zero_point, None, rows=False, names=("y_scale", "y_zero_point"))
    a_apart, b_apart = zero_points_apart(a, a_zero_point, a_shape), zero_points_apart(b, b_zero_point, b_shape)
    acc = quantized_matmul(a_apart, b_apart, names=("a", "b"))
    # On a (..., M, N) view even where `a` or `b` is 1-D, so that per-row and per-column
    # multipliers line up with the product's axes.
    rank = max(a.ndim, b.ndim, 2)
    rows = a.shape[-2] if a.ndim > 1 else 1
    columns = b.shape[-1] if b.ndim > 1 else 1
    view = acc.reshape(tuple(acc.shape[: rank - 2]) + (rows, columns))
    a_scale = a_scale.reshape((1,) * (rank - len(a_shape)) + a_shape) if a_shape else a_scale.reshape(())
    b_scale = b_scale.reshape((1,) * (rank - len(b_shape)) + b_shape) if b_shape else b_scale.reshape(())
    multiplier = true_divide(a_scale * b_scale, y_scale.reshape(()))
    y = requantize(view, multiplier, y_zero_point.reshape(()), onnx_type_name(y_zero_point.dtype))
    return y.reshape(acc.shape)


def _paired_layout(scale, zero_point, operand, *, rows, names):
    """The layout of a scale and its zero point, which must agree (a scalar and a
    one-element vector both mean per tensor)."""
    if operand is None:  # the output's: per tensor only
        for value, name in zip((scale, zero_point), names):
            if value.size != 1 or value.ndim > 1:
                raise OnnxValidationError(f"needs a scalar `{name}` (per tensor), got shape {tuple(value.shape)}.")
        return ()
    scale_shape = row_and_column_layout(scale, operand, rows=rows, name=names[0])
    zero_shape = row_and_column_layout(zero_point, operand, rows=rows, name=names[1])
    if scale_shape != zero_shape:
        raise OnnxValidationError(
            f"needs `{names[0]}` and `{names[1]}` of one shape, got {tuple(scale.shape)} and {tuple(zero_point.shape)}."
        )
    return scale_shape


__all__ = ["qlinear_matmul"]
