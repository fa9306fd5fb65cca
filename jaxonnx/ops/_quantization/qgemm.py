"""QGemm (com.microsoft, version 1): Gemm of quantized matrices, quantized or in float."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import (
    per_tensor_value,
    quantized_matmul,
    requantize,
    row_and_column_layout,
    zero_points_apart,
)
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_SCHEMA = contrib_schema(
    "QGemm",
    "Y = alpha * (A - a_zero_point)' (B - b_zero_point)' * a_scale * b_scale + C * a_scale * b_scale, "
    "quantized with y_scale and y_zero_point, or float without them.",
    inputs=[
        ("A", "TA"),
        ("a_scale", "T"),
        ("a_zero_point", "TA"),
        ("B", "TB"),
        ("b_scale", "T"),
        ("b_zero_point", "TB"),
        ("C", "TC", "optional"),
        ("y_scale", "T", "optional"),
        ("y_zero_point", "TYZ", "optional"),
    ],
    outputs=[("Y", "TY")],
    type_constraints=[
        ("T", ["tensor(float)"]),
        ("TA", ["tensor(uint8)", "tensor(int8)"]),
        ("TB", ["tensor(uint8)", "tensor(int8)"]),
        ("TC", ["tensor(int32)"]),
        ("TYZ", ["tensor(uint8)", "tensor(int8)"]),
        ("TY", ["tensor(float)", "tensor(uint8)", "tensor(int8)"]),
    ],
    attributes=[
        attribute("alpha", 1.0, "Scalar multiplier of the product."),
        attribute("transA", 0, "Whether A is transposed."),
        attribute("transB", 0, "Whether B is transposed."),
    ],
    differentiable=(),
)


@register("QGemm", 1, domain="com.microsoft", schema=_SCHEMA)
def qgemm(
    A,
    a_scale,
    a_zero_point,
    B,
    b_scale,
    b_zero_point,
    C=None,
    y_scale=None,
    y_zero_point=None,
    *,
    alpha=1.0,
    transA=0,
    transB=0,
):
    """Implements com.microsoft QGemm: Gemm of quantized matrices, quantized or in float.

    The integer part is exact: ``acc = (A' - a_zero_point) @ (B' - b_zero_point) + C`` in
    int32 (``A'``, ``B'`` transposed as ``transA``, ``transB`` say; ``C`` an int32 bias
    quantized with scale ``a_scale * b_scale``, broadcast to ``(M, N)``). With
    ``y_zero_point``: ``Y = saturate(round(acc * (alpha * a_scale * b_scale / y_scale)) +
    y_zero_point)``, of ``y_zero_point``'s type; without it: ``Y = acc * alpha * a_scale *
    b_scale`` (divided by ``y_scale`` where given) in float32. The multiplier is computed
    in float32 in that order, as onnxruntime does.

    Args:
        A: uint8 or int8 ``(M, K)`` (``(K, M)`` with ``transA``).
        a_scale, a_zero_point: scalars; the zero point of ``A``'s type.
        B: uint8 or int8 ``(K, N)`` (``(N, K)`` with ``transB``).
        b_scale, b_zero_point: of one shape: scalars, or ``N``-vectors (per column).
        C: optional int32 bias broadcastable to ``(M, N)``.
        y_scale, y_zero_point: optional scalars; without ``y_zero_point`` the output is float.
        alpha: the product's multiplier.
        transA, transB: whether ``A``, ``B`` come transposed.

    Returns:
        ``(M, N)``: quantized (``y_zero_point``'s type) or float32.

    Example:
        >>> a = jnp.array([[2, 4]], jnp.uint8)
        >>> b = jnp.array([[1], [3]], jnp.int8)
        >>> s = jnp.float32(0.5)
        >>> jaxonnx.ops.qgemm(a, s, jnp.uint8(0), b, s, jnp.int8(0), None, jnp.float32(1.0), jnp.uint8(10))
        Array([[14]], dtype=uint8)
        >>> jaxonnx.ops.qgemm(a, s, jnp.uint8(0), b, s, jnp.int8(0))
        Array([[3.5]], dtype=float32)
    """
    xp = namespace(A, B)
    for value, name in ((A, "A"), (B, "B")):
        if value.ndim != 2:
            raise OnnxValidationError(f"needs a matrix `{name}`, got shape {tuple(value.shape)}.")
    A = A.T if transA else A
    B = B.T if transB else B
    a_scale = per_tensor_value(a_scale, "a_scale").astype(np.float32)
    a_zero = per_tensor_value(a_zero_point, "a_zero_point")
    column_shape = row_and_column_layout(b_zero_point, B, rows=False, name="b_zero_point")
    if row_and_column_layout(b_scale, B, rows=False, name="b_scale") != column_shape:
        raise OnnxValidationError(
            f"needs `b_scale` and `b_zero_point` of one shape, got {tuple(b_scale.shape)} and {tuple(b_zero_point.shape)}."
        )
    acc = quantized_matmul(zero_points_apart(A, a_zero), zero_points_apart(B, b_zero_point, column_shape))
    if C is not None:
        if C.ndim > 2 or any(c not in (1, n) for c, n in zip(C.shape[::-1], acc.shape[::-1])):
            raise OnnxValidationError(f"needs `C` broadcastable to {tuple(acc.shape)}, got shape {tuple(C.shape)}.")
        acc = acc + xp.asarray(C, np.int32).reshape((1,) * (2 - C.ndim) + tuple(C.shape))
    # (alpha * a_scale) * b_scale [/ y_scale], in float32, one per column where b_scale is.
    multiplier = np.float32(alpha) * a_scale * b_scale.astype(np.float32).reshape(column_shape)
    if y_scale is not None:
        multiplier = true_divide(multiplier, per_tensor_value(y_scale, "y_scale").astype(np.float32))
    if y_zero_point is None:
        return acc.astype(np.float32) * multiplier
    y_zero = per_tensor_value(y_zero_point, "y_zero_point")
    return requantize(acc, multiplier, y_zero, onnx_type_name(y_zero.dtype))


__all__ = ["qgemm"]
