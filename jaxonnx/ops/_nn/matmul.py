"""MatMul: versions 1, 9 and 13 (9 adds integer types, 13 bfloat16); and onnxruntime's
com.microsoft FusedMatMul (version 1), a MatMul of transposed operands, scaled."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, Mark, Marks, as_tuple, filled, merge
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import matmul_operands
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema


def _on_padding(call: Call):
    """MatMul's rule on padding: the rows of ``A``, the columns of ``B`` and (unbroadcast) batch
    axes keep their marks in the product; along the contracted axis the marked entries of
    either operand count as 0 (both operands are zeroed there, so padding's values never reach
    a real entry). A Mixture-of-Experts layer as Optimum exports it runs each expert's MLP on
    the rows that NonZero routed to it."""
    a, b = call.args[0], call.args[1]
    if call.has_lengths():
        call.refuse("multiplies padded lengths")
    rank_a, rank_b = np.ndim(a), np.ndim(b)
    marks_a, marks_b = call.axis_marks(0), call.axis_marks(1)
    inner_a, inner_b = rank_a - 1, max(rank_b - 2, 0)
    # Entries padded along the contracted axis (in either operand) add nothing: both are 0 there.
    inner = [m for m in (marks_a.get(inner_a), marks_b.get(inner_b)) if m is not None]
    args = list(call.args)
    for mark in inner:
        args[0] = filled(args[0], {inner_a: mark}, 0)
        args[1] = filled(args[1], {inner_b: mark}, 0)
    results = as_tuple(call.run(args))
    shape = np.shape(results[0])
    rank = len(shape)
    batch = rank - (rank_a >= 2) - (rank_b >= 2)
    axes: dict[int, Mark] = {}
    # By position, not identity: MatMul(X, X) passes one array twice.
    for is_b, (operand, marks, operand_rank, inner_axis) in enumerate(
        ((a, marks_a, rank_a, inner_a), (b, marks_b, rank_b, inner_b))
    ):
        for axis, mark in marks.items():
            if axis == inner_axis:
                continue
            if axis >= operand_rank - 2:  # A's rows or B's columns
                out_axis = rank - 1 if is_b or rank_b < 2 else rank - 2
            else:
                out_axis = axis + batch - (operand_rank - 2)
                if shape[out_axis] != np.shape(operand)[axis]:
                    call.refuse(f"broadcasts the padded axis {axis} to length {shape[out_axis]}")
            merge(axes, out_axis, mark)
    return results, [Marks(axes) if axes else None]


@register("MatMul", 1, 9, 13, padding=_on_padding, weights=("B",), linear=True)
def matmul(A, B):
    """Implements ONNX MatMul: the matrix product of ``A`` and ``B``, as ``numpy.matmul``.

    A 1-D ``A`` is a row vector and a 1-D ``B`` a column vector (that dim is dropped from
    the result); the leading (batch) dims broadcast numpy-style.

    Args:
        A: an array of rank >= 1, ``(..., M, K)``.
        B: an array of rank >= 1 and the dtype of ``A``, ``(..., K, N)``.

    Returns:
        The product, with the dtype of ``A`` (integers wrap around as in numpy).

    Example:
        >>> jaxonnx.ops.matmul(jnp.ones((2, 1, 3, 4)), jnp.ones((5, 4, 2))).shape
        (2, 5, 3, 2)
    """
    a, b, out_shape = matmul_operands(A, B)
    if namespace(A, B) is np:
        return np.matmul(A, B)
    # Equal ranks, so jnp.matmul needs no rank promotion (an error under strict settings).
    y = jnp.matmul(a, b, preferred_element_type=A.dtype)
    return y.reshape(out_shape)


_FUSED_MATMUL_SCHEMA = contrib_schema(
    "FusedMatMul",
    "Y = alpha * A' @ B', each operand transposed as transA / transBatchA (transB / transBatchB) say.",
    inputs=[("A", "T"), ("B", "T")],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(float16)", "tensor(float)", "tensor(double)", "tensor(bfloat16)"])],
    attributes=[
        attribute("alpha", 1.0, "The factor of the product."),
        attribute("transA", 0, "Whether A's last two dims are swapped."),
        attribute("transB", 0, "Whether B's last two dims are swapped."),
        attribute("transBatchA", 0, "Whether A's first dim moves to the second-to-last place (before transA)."),
        attribute("transBatchB", 0, "Whether B's first dim moves to the second-to-last place (before transB)."),
    ],
)


@register("FusedMatMul", 1, domain="com.microsoft", schema=_FUSED_MATMUL_SCHEMA, folds=False)
def fused_matmul(A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    """Implements com.microsoft FusedMatMul: ``alpha * A' @ B'``, MatMul of transposed operands.

    ``transBatchA`` moves ``A``'s first dim to the second-to-last place (``(d0, d1, ..., dk,
    m, n)`` becomes ``(d1, ..., dk, m, d0, n)``: the batch dims are ``d1 .. m``); then
    ``transA`` swaps the last two dims; the same for ``B``. The product then broadcasts as
    MatMul's. As onnxruntime requires it, ``transBatchA`` or ``transBatchB`` needs operands of
    one rank, at least 3. onnxruntime's optimizer writes it for a MatMul whose operand is a
    Transpose, and for the ``/ sqrt(d)`` scale of attention scores.

    Args:
        A, B: float arrays of rank >= 1.
        alpha: the factor of the product.
        transA, transB: whether the operand's last two dims are swapped (rank >= 2).
        transBatchA, transBatchB: whether the operand's first dim moves before its last.

    Returns:
        The product, of the type of ``A``.

    Example:
        >>> a, b = jnp.ones((4, 2, 3)), jnp.ones((2, 4, 5))   # A' = (2, 3, 4)
        >>> jaxonnx.ops.fused_matmul(a, b, transBatchA=1, transA=1, alpha=0.5).shape
        (2, 3, 5)
    """
    if (transBatchA or transBatchB) and (A.ndim != B.ndim or A.ndim < 3):
        raise OnnxValidationError(
            f"needs `A` and `B` of one rank >= 3 with `transBatchA` or `transBatchB`, got shapes {tuple(A.shape)} "
            f"and {tuple(B.shape)}."
        )
    a, b = _transposed(A, transA, transBatchA), _transposed(B, transB, transBatchB)
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else -1]:
        raise OnnxValidationError(
            f"cannot multiply `A` of shape {tuple(A.shape)} by `B` of shape {tuple(B.shape)} with transA={transA}, "
            f"transBatchA={transBatchA}, transB={transB}, transBatchB={transBatchB}: they make {tuple(a.shape)} and "
            f"{tuple(b.shape)}, whose inner dims differ."
        )
    y = matmul(a, b)
    return y if alpha == 1 else y * jnp.asarray(alpha, y.dtype)


def _transposed(x, trans: int, trans_batch: int):
    rank = x.ndim
    if trans_batch:
        x = jnp.transpose(x, (*range(1, rank - 1), 0, rank - 1))
    if trans and rank >= 2:
        x = jnp.swapaxes(x, -1, -2)
    return x


__all__ = ["matmul", "fused_matmul"]
