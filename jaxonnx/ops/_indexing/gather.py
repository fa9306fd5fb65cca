"""Gather: versions 1, 11 and 13 (11 documents negative indices, 13 adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.indexing import in_bounds_indices


@register("Gather", 1, 11, 13, concrete=("indices",), padding="gather")
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
