"""CDist (com.microsoft, version 1): the pairwise distances of two sets of row vectors."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_SCHEMA = contrib_schema(
    "CDist",
    "Y[i, j] = distance(A[i], B[j]), squared or plain euclidean as `metric` says.",
    inputs=[("A", "T"), ("B", "T")],
    outputs=[("C", "T")],
    type_constraints=[("T", ["tensor(float)", "tensor(double)"])],
    attributes=[attribute("metric", "sqeuclidean", "'sqeuclidean' or 'euclidean'.")],
)


@register("CDist", 1, domain="com.microsoft", schema=_SCHEMA, folds=False)
def cdist(A, B, *, metric: str = "sqeuclidean"):
    """Implements com.microsoft CDist: ``C[i, j] = |A[i] - B[j]|^2`` (or its square root).

    The squared distances are summed from the differences (not ``|a|^2 + |b|^2 - 2 a.b``), so
    equal rows give exactly 0 and ``euclidean`` has no negative under its square root.

    Args:
        A: ``(N, K)``.
        B: ``(M, K)``.
        metric: ``"sqeuclidean"`` (the default) or ``"euclidean"``.

    Returns:
        ``(N, M)`` of the type of ``A``.

    Example:
        >>> jaxonnx.ops.cdist(jnp.zeros((1, 2)), jnp.array([[3.0, 4.0]]), metric="euclidean")
        Array([[5.]], dtype=float32)
    """
    if metric not in ("sqeuclidean", "euclidean"):
        raise OnnxValidationError(f"got `metric`={metric!r}; it must be 'sqeuclidean' or 'euclidean'.")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise OnnxValidationError(
            f"needs `A` (N, K) and `B` (M, K) with one K, got shapes {tuple(A.shape)} and {tuple(B.shape)}."
        )
    squared = jnp.sum(jnp.square(A[:, None, :] - B[None, :, :]), axis=-1)
    if metric == "sqeuclidean":
        return squared
    # The derivative of sqrt at 0 is infinite; where two rows are equal, take 0 as its
    # subgradient instead of a NaN.
    positive = squared > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1)), 0).astype(squared.dtype)


__all__ = ["cdist"]
