"""Gather: versions 1, 11 and 13 (11 documents negative indices, 13 adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, Mark, as_tuple, combine, length_marks, merge, real_mask
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.indexing import in_bounds_indices


def _on_padding(call: Call):
    """Gather's rule on padding: marked indices read zeros (the output is marked at their
    positions); data marked along an axis that is not gathered keeps its marks."""
    data, indices = call.args[0], call.args[1]
    axis = call.attributes.get("axis", 0)
    axis = axis + data.ndim if axis < 0 else axis
    index_axes = call.axis_marks(1)
    if call.length_flags(1) is not None:
        call.refuse("takes a padded length as indices")
    args = list(call.args)
    if index_axes:
        mask = real_mask(indices.shape, index_axes)
        args[1] = jnp.where(mask, indices, 0)
    results = as_tuple(call.run(args))
    out = results[0]
    axes: dict[int, Mark] = {}
    if index_axes:
        shaped = mask.reshape((1,) * axis + mask.shape + (1,) * (data.ndim - axis - 1))
        out = jnp.where(shaped, out, 0)
        for a, mark in index_axes.items():
            merge(axes, axis + a, mark)
    for a, mark in call.axis_marks(0).items():
        if a != axis:  # a gathered axis: the indices name real positions
            merge(axes, a if a < axis else a + indices.ndim - 1, mark)
    lengths = None
    if call.length_flags(0) is not None:
        flags = np.take(call.length_flags(0), np.asarray(indices), axis=axis)
        lengths = length_marks(flags, as_tuple(call.run(call.reals()))[0], call.length_origin())
    return (out,), [combine(axes, lengths)]


@register("Gather", 1, 11, 13, concrete=("indices",), padding=_on_padding)
def gather(data, indices, *, axis: int = 0, checks=None):
    """Implements ONNX Gather: the slices of ``data`` along ``axis`` picked by ``indices``.

    Like ``jnp.take(data, indices, axis)``: the output shape is ``data.shape[:axis] +
    indices.shape + data.shape[axis + 1:]``. Negative indices count from the back.
    Out-of-bounds indices raise when ``indices`` is concrete (numpy, or a JAX array
    outside ``jax.jit``), naming the value and its position. Under ``jax.jit`` the values
    are unknown at trace time and an out-of-bounds index is clamped into ``[0, dim - 1]``
    (after negative indices are wrapped), as for GatherElements; it never reads outside
    ``data`` (indices that carry a size hint's padding are masked by the graph runner's
    padding rule before the call, see :mod:`jaxonnx._core.padding`). The gradient with respect to ``data`` is a scatter-add.

    Args:
        data: the array to gather from, of rank >= 1.
        indices: int32/int64 array of any rank.
        axis: the gather axis, in ``[-rank, rank - 1]``.
        checks: where the bounds check of traced ``indices`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        An array of rank ``data.ndim + indices.ndim - 1`` and the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.gather(jnp.array([[1, 2], [3, 4], [5, 6]]), jnp.array([[0, -1]]), axis=0)
        Array([[[1, 2],
                [5, 6]]], dtype=int32)
    """
    if data.ndim == 0:
        raise OnnxValidationError("needs `data` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, data.ndim)
    indices = in_bounds_indices(indices, data.shape[axis], axis=axis, shape=data.shape, checks=checks)
    if namespace(data) is jnp:
        # Every index is in bounds now; "clip" is XLA's native gather (no fill mask).
        return jnp.take(data, indices, axis=axis, mode="clip")
    return data.take(indices, axis=axis)


__all__ = ["gather"]
