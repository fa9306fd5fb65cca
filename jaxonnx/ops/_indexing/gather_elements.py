"""GatherElements: versions 11 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import is_traced, namespace, normalize_axis


@register("GatherElements", 11, 13, concrete=("indices",), padding="reads")
def gather_elements(data, indices, *, axis: int = 0, padded=frozenset()):
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
        padded: ``{"indices"}`` when ``indices`` carries a size hint's padding: those read zeros.

    Returns:
        An array of the shape of ``indices`` and the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.gather_elements(jnp.array([[1, 2], [3, 4]]), jnp.array([[0, 0], [1, -2]]), axis=1)
        Array([[1, 1],
               [4, 3]], dtype=int32)
    """
    rank = data.ndim
    if rank == 0:
        raise OnnxValidationError("needs `data` of rank >= 1, got a scalar.")
    if indices.ndim != rank:
        raise OnnxValidationError(
            f"needs `indices` of the rank of `data` ({rank}), got shape {tuple(indices.shape)} "
            f"for `data` of shape {tuple(data.shape)}."
        )
    axis = normalize_axis(axis, rank)
    check_indices_fit(indices, data, axis, kind="gather")
    dim = data.shape[axis]
    if "indices" in padded:  # padding reads zeros (the graph runner traces padded indices)
        corner = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
        wrapped = jnp.where(indices < 0, indices + dim, indices)
        return jnp.take_along_axis(jnp.asarray(data)[corner], wrapped, axis, mode="fill", fill_value=0)
    indices = in_bounds_indices(indices, dim, axis=axis, shape=data.shape)
    # Non-axis dims of `indices` may be shorter than `data`'s: only that corner is read.
    corner = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    data = data[corner]
    xp = namespace(data, indices)
    # No `mode`: every index is in bounds now, and the default gather has the plainest VJP.
    return xp.take_along_axis(data, indices, axis)


def check_indices_fit(indices, data, axis: int, *, kind: str) -> None:
    """GatherElements and ScatterElements: off the ``kind`` axis, ``indices`` may be shorter
    than ``data`` (only that corner is used), never longer."""
    for d, (n_index, n_data) in enumerate(zip(indices.shape, data.shape)):
        if d != axis and n_index > n_data:
            raise OnnxValidationError(
                f"got `indices` of shape {tuple(indices.shape)} larger than `data` "
                f"{tuple(data.shape)} on dim {d}, which is not the {kind} axis ({axis})."
            )


def in_bounds_indices(indices, dim: int, *, axis: int, shape, name: str = "indices"):
    """``indices`` along an axis of size ``dim`` wrapped into ``[0, dim)``, in the narrowest
    exact integer type. Concrete indices outside ``[-dim, dim)`` raise with the value and its
    position; traced ones are clamped (their values are unknown at trace time)."""
    index_type = np.int32 if dim < 2**31 else np.int64
    if not is_traced(indices):
        concrete = np.asarray(indices)
        bad = (concrete < -dim) | (concrete >= dim)
        if bad.any():
            where = tuple(int(i[0]) for i in np.nonzero(bad))
            raise OnnxValidationError(
                f"got index {concrete[where]} at position {where} of `{name}`, outside "
                f"[{-dim}, {dim - 1}] for axis {axis} of `data` with shape {tuple(shape)}."
            )
        return np.where(concrete < 0, concrete + dim, concrete).astype(index_type)  # exact: in [0, dim)
    if dim == 0:
        if indices.size:
            raise OnnxValidationError(
                f"gathers along axis {axis} of size 0 with {indices.size} indices; every index is out of bounds."
            )
        return indices.astype(index_type)
    # In a type that holds `dim` (uint8 indices + 300 would wrap); clamped as XLA would.
    wide = indices.astype(np.promote_types(indices.dtype, index_type)) if indices.dtype.kind == "i" else indices
    wrapped = jnp.where(wide < 0, wide + dim, wide) if wide.dtype.kind == "i" else wide
    return jnp.clip(wrapped, 0, dim - 1).astype(index_type)


__all__ = ["gather_elements"]
