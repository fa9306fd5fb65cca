"""GatherElements: versions 11 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.indexing import check_indices_fit, in_bounds_indices


@register("GatherElements", 11, 13, concrete=("indices",), padding="gather_elements")
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
