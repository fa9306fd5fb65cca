"""Trilu (com.microsoft, version 1): onnxruntime's Trilu from before ONNX's Trilu-14."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_SCHEMA = contrib_schema(
    "Trilu",
    "Y = the upper (or lower) triangle of X's last two dims, from diagonal k.",
    inputs=[("X", "T"), ("k", "tensor(int64)", "optional")],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(float)", "tensor(double)", "tensor(int64)", "tensor(bool)"])],
    attributes=[attribute("upper", 1, "1 keeps the upper triangle, 0 the lower one.")],
)


@register("Trilu", 1, domain="com.microsoft", schema=_SCHEMA, static=("k",))
def trilu_microsoft(X, k=None, *, upper: int = 1):
    """Implements com.microsoft Trilu: the upper (or lower) triangle of the last two dims.

    As ONNX's Trilu: elements with ``col - row >= k`` are kept for ``upper=1`` (``<= k`` for
    ``upper=0``), the others become zero (``False``).

    Args:
        X: an array of rank >= 2; leading dims are batch dims.
        k: the diagonal offset, a scalar int64 (default 0), known at trace time.
        upper: 1 keeps the upper triangle, 0 the lower one.

    Returns:
        An array of the shape and dtype of ``X``.

    Example:
        >>> jaxonnx.ops.trilu_microsoft(jnp.ones((2, 3)), np.array(1), upper=0)
        Array([[1., 1., 0.],
               [1., 1., 1.]], dtype=float32)
    """
    if X.ndim < 2:
        raise OnnxValidationError(f"needs `X` of rank >= 2, got shape {tuple(X.shape)}.")
    if upper not in (0, 1):
        raise OnnxValidationError(f"got `upper`={upper}; it must be 0 or 1.")
    offset = 0
    if k is not None:
        k = np.asarray(k)
        if k.size != 1:
            raise OnnxValidationError(f"needs a scalar `k`, got shape {tuple(k.shape)}.")
        offset = int(k.reshape(-1)[0])
    return jnp.triu(X, offset) if upper else jnp.tril(X, offset)


__all__ = ["trilu_microsoft"]
