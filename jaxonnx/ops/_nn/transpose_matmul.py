"""TransposeMatMul (com.microsoft, version 1): FusedMatMul's older name, without the batch moves."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import matmul_operands
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_SCHEMA = contrib_schema(
    "TransposeMatMul",
    "Y = alpha * A' @ B', A (B) with its last two dims swapped where transA (transB) says.",
    inputs=[("A", "T"), ("B", "T")],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(float)"])],
    attributes=[
        attribute("alpha", 1.0, "The factor of the product."),
        attribute("transA", 0, "Whether A's last two dims are swapped."),
        attribute("transB", 0, "Whether B's last two dims are swapped."),
    ],
)


@register("TransposeMatMul", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def transpose_matmul(A, B, *, alpha=1.0, transA=0, transB=0):
    """Implements com.microsoft TransposeMatMul: ``alpha * A' @ B'``, MatMul of transposed operands.

    onnxruntime keeps it for files its older optimizers wrote and runs it with FusedMatMul's
    kernel; the product broadcasts as MatMul's.

    Args:
        A, B: float arrays, of rank >= 2 where transposed.
        alpha: the factor of the product.
        transA, transB: whether the operand's last two dims are swapped.

    Returns:
        The product, of the type of ``A``.

    Example:
        >>> jaxonnx.ops.transpose_matmul(jnp.ones((3, 2)), jnp.ones((3, 4)), transA=1, alpha=0.5).shape
        (2, 4)
    """
    a, b = A, B
    for name, operand, trans in (("A", A, transA), ("B", B, transB)):
        if trans and operand.ndim < 2:
            raise OnnxValidationError(
                f"needs `{name}` of rank >= 2 with trans{name}=1, got shape {tuple(operand.shape)}."
            )
    if transA:
        a = jnp.swapaxes(A, -1, -2)
    if transB:
        b = jnp.swapaxes(B, -1, -2)
    # matmul_operands names both operands and their shapes where the inner dims differ.
    a, b, out_shape = matmul_operands(a, b)
    y = jnp.matmul(a, b, preferred_element_type=A.dtype).reshape(out_shape)
    return y if alpha == 1 else y * jnp.asarray(alpha, y.dtype)


__all__ = ["transpose_matmul"]
