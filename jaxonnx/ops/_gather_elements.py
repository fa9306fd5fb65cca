"""GatherElements: versions 11 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx._registry import register
from jaxonnx.ops._common import common_namespace, is_traced, normalize_axis, public_array, public_static

_OP = "GatherElements"


def _gather_elements(data, indices, axis=0):
    rank = data.ndim
    if indices.dtype.kind not in "iu":
        raise OnnxTypeError(f"{_OP} needs integer `indices`, got dtype {indices.dtype}.")
    if indices.ndim != rank:
        raise OnnxValidationError(
            f"{_OP} needs `indices` of the rank of `data` ({rank}), got shape {tuple(indices.shape)} "
            f"for `data` of shape {tuple(data.shape)}."
        )
    if rank == 0:
        raise OnnxValidationError(f"{_OP} needs `data` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, rank, op=_OP)
    for d, (n_index, n_data) in enumerate(zip(indices.shape, data.shape)):
        if d != axis and n_index > n_data:
            raise OnnxValidationError(
                f"{_OP} got `indices` of shape {tuple(indices.shape)} larger than `data` "
                f"{tuple(data.shape)} on dim {d}, which is not the gather axis ({axis})."
            )
    dim = data.shape[axis]
    if not is_traced(indices):
        concrete = np.asarray(indices)
        bad = (concrete < -dim) | (concrete >= dim)
        if bad.any():
            where = tuple(int(i[0]) for i in np.nonzero(bad))
            raise OnnxValidationError(
                f"{_OP} got index {concrete[where]} at position {where} of `indices`, outside "
                f"[{-dim}, {dim - 1}] for axis {axis} of `data` with shape {tuple(data.shape)}."
            )
        concrete = np.where(concrete < 0, concrete + dim, concrete)
        if dim < 2**31:
            concrete = concrete.astype(np.int32)  # exact: every value is in [0, dim).
        indices = jnp.asarray(concrete) if isinstance(indices, jax.Array) else concrete
    elif dim == 0 and indices.size:
        raise OnnxValidationError(
            f"{_OP} gathers along axis {axis} of size 0 with {indices.size} indices; every index is out of bounds."
        )
    # Non-axis dims of `indices` may be shorter than `data`'s: only that corner is read.
    corner = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    xp, (data, indices) = common_namespace(("data", data), ("indices", indices), op=_OP)
    data = data[corner]
    if xp is np:
        return np.take_along_axis(data, indices, axis)
    if is_traced(indices):
        # Clamped here, in the indices' own dtype: jnp's "clip" mode would wrap a negative
        # result once more, and may narrow 64-bit indices to int32 before clipping.
        indices = jnp.clip(jnp.where(indices < 0, indices + dim, indices), 0, dim - 1)
    return jnp.take_along_axis(data, indices, axis, mode="clip")


def gather_elements(data, indices, axis: int = 0):
    """Implements ONNX GatherElements: ``out[i][j] = data[indices[i][j]][j]`` for ``axis=0``.

    Out-of-bounds indices raise when ``indices`` is concrete (numpy, or a JAX array
    outside ``jax.jit``). Under ``jax.jit`` the values are unknown at trace time and an
    out-of-bounds index is clamped into ``[0, dim - 1]`` (after negative indices are
    wrapped), as XLA's gather does; it never reads outside ``data``.

    Args:
        data: the array to gather from.
        indices: int32/int64 array of the rank of ``data``; negative values count from the
            back; on the other dims it may be shorter than ``data``.
        axis: the gather axis, in ``[-rank, rank - 1]``.

    Returns:
        An array of the shape of ``indices`` and the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.gather_elements(jnp.array([[1, 2], [3, 4]]), jnp.array([[0, 0], [1, -2]]), axis=1)
        Array([[1, 1],
               [4, 3]], dtype=int32)
    """
    return _gather_elements(
        public_array(data, op=_OP, name="data"), public_static(indices), axis
    )


@register(_OP, 11, 13)
def _gather_elements_11(data, indices, *, axis=0):
    return _gather_elements(data, indices, axis)


__all__ = ["gather_elements"]
