"""GatherElements: versions 11 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.padding import Call, Marks, as_tuple, merge, real_mask
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.indexing import check_indices_fit, in_bounds_indices


def _on_padding(call: Call):
    """GatherElements' rule on padding: marked indices read zeros and stay marked; data marked
    along another axis keeps its marks where the indices span that axis whole."""
    data, indices = call.args[0], call.args[1]
    axis = call.attributes.get("axis", 0)
    axis = axis + data.ndim if axis < 0 else axis
    call.no_lengths()
    index_axes = call.axis_marks(1)
    args = list(call.args)
    mask = real_mask(indices.shape, index_axes)
    if index_axes:
        args[1] = jnp.where(mask, indices, 0)
    out = as_tuple(call.run(args))[0]
    if index_axes:
        out = jnp.where(mask, out, 0)
    axes = dict(index_axes)
    for a, mark in call.axis_marks(0).items():
        if a != axis and indices.shape[a] == data.shape[a]:
            merge(axes, a, mark)
        elif a != axis:
            call.refuse(f"reads a part of the padded axis {a}")
    return (out,), [Marks(axes) if axes else None]


@register("GatherElements", 11, 13, concrete=("indices",), padding=_on_padding)
def gather_elements(data, indices, *, axis: int = 0, checks=None):
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
        checks: where the bounds check of traced ``indices`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

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
    indices = in_bounds_indices(indices, dim, axis=axis, shape=data.shape, checks=checks)
    # Non-axis dims of `indices` may be shorter than `data`'s: only that corner is read.
    corner = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    data = data[corner]
    xp = namespace(data, indices)
    # No `mode`: every index is in bounds now, and the default gather has the plainest VJP.
    return xp.take_along_axis(data, indices, axis)


__all__ = ["gather_elements"]
