"""GatherND (com.microsoft, version 1): onnxruntime's GatherND from before ONNX's GatherND-11."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced
from jaxonnx.ops._helpers.schemas import contrib_schema

_SCHEMA = contrib_schema(
    "GatherND",
    "Y[i...] = data[indices[i...]]: each row of `indices`' last dim indexes data's leading dims.",
    inputs=[("data", "T"), ("indices", "Tind")],
    outputs=[("output", "T")],
    type_constraints=[
        (
            "T",
            [
                "tensor(float)",
                "tensor(double)",
                "tensor(int32)",
                "tensor(int64)",
                "tensor(bool)",
                "tensor(float16)",
                "tensor(int8)",
                "tensor(uint8)",
            ],
        ),
        ("Tind", ["tensor(int32)", "tensor(int64)"]),
    ],
)


@register("GatherND", 1, domain="com.microsoft", schema=_SCHEMA, folds=False, concrete=("indices",))
def gather_nd_microsoft(data, indices):
    """Implements com.microsoft GatherND: ONNX GatherND-11 (no batch dims).

    The last dim of ``indices`` (of length ``q <= rank(data)``) indexes ``data``'s first
    ``q`` dims; negative indices count from the end. Indices known at trace time are checked
    against the dims; traced ones out of range are clamped (jax's gather cannot raise).

    Args:
        data: an array of rank r >= 1.
        indices: int32 or int64 of shape ``(..., q)``.

    Returns:
        ``indices.shape[:-1] + data.shape[q:]``, of the type of ``data``.

    Example:
        >>> jaxonnx.ops.gather_nd_microsoft(jnp.arange(6).reshape(2, 3), np.array([[1, -1], [0, 0]]))
        Array([5, 0], dtype=int32)
    """
    if indices.ndim < 1 or not 1 <= indices.shape[-1] <= data.ndim:
        raise OnnxValidationError(
            f"needs `indices` whose last dim is 1 to the rank of `data` ({data.ndim}), got shape "
            f"{tuple(indices.shape)}."
        )
    depth = indices.shape[-1]
    dims = np.asarray(data.shape[:depth], np.int64)
    if not is_traced(indices):
        concrete = np.asarray(indices, np.int64)
        bad = (concrete < -dims) | (concrete >= dims)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise OnnxValidationError(
                f"got index {int(concrete[where])} at {where} of `indices` for a dim of length {int(dims[where[-1]])} "
                f"of `data` (shape {tuple(data.shape)})."
            )
    wide = jnp.asarray(indices).astype(jnp.int32 if data.size < 2**31 else jnp.int64)
    wrapped = jnp.where(wide < 0, wide + dims.astype(wide.dtype).reshape((1,) * (wide.ndim - 1) + (depth,)), wide)
    return jnp.asarray(data)[tuple(jnp.moveaxis(wrapped, -1, 0))]


__all__ = ["gather_nd_microsoft"]
