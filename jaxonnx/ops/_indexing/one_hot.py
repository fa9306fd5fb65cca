"""OneHot: versions 9, 11 (negative indices) and 28 (bfloat16 values)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace


@register("OneHot", 11, 28, static=("depth",))
def one_hot(indices, depth, values, *, axis: int = -1):
    """Implements ONNX OneHot: ``values[1]`` where a new axis' position equals the index, else ``values[0]``.

    The output has a new axis of size ``depth`` at ``axis``. Indices in ``[-depth, -1]``
    count from the back; indices outside ``[-depth, depth - 1]`` give a row of
    ``values[0]`` only. Float indices are truncated to integers first, as onnxruntime
    does. ``depth`` decides the output shape, so it must be known at trace time (a float
    depth is truncated too); ``indices`` and ``values`` may be traced.

    Args:
        indices: numeric array of any rank.
        depth: positive scalar (or one-element array), the size of the new axis.
        values: ``[off_value, on_value]``; the output has its dtype.
        axis: where the new axis goes, in ``[-rank - 1, rank]``.

    Returns:
        An array of rank ``indices.ndim + 1`` with the dtype of ``values``.

    Example:
        >>> jaxonnx.ops.one_hot(jnp.array([0, -1, 5]), 3, jnp.array([0., 2.]))
        Array([[2., 0., 0.],
               [0., 0., 2.],
               [0., 0., 0.]], dtype=float32)
    """
    return _one_hot(indices, depth, values, axis, negative_indices=True)


@register("OneHot", 9, static=("depth",))
def _one_hot_9(indices, depth, values, *, axis=-1):
    # Version 9 defines indices in [0, depth) only: negative ones select nothing.
    return _one_hot(indices, depth, values, axis, negative_indices=False)


def _one_hot(indices, depth, values, axis, *, negative_indices):
    depth = np.asarray(depth)
    if depth.size != 1 or not depth.reshape(-1)[0] >= 1:
        raise OnnxValidationError(f"needs a positive scalar `depth`, got {depth.tolist()!r}.")
    depth = int(depth.reshape(-1)[0])
    if values.size != 2:
        raise OnnxValidationError(
            f"needs `values` = [off_value, on_value] (2 elements), got shape {tuple(values.shape)}."
        )
    rank = indices.ndim
    if not -rank - 1 <= axis <= rank:
        raise OnnxValidationError(
            f"got `axis`={axis} for `indices` of rank {rank}; the new axis goes at a position in [{-rank - 1}, {rank}]."
        )
    axis = axis % (rank + 1)
    xp = namespace(indices, values)
    if indices.dtype.kind == "f":
        compared = np.promote_types(indices.dtype, np.float32)  # float16 cannot count past 2048
        indices = xp.trunc(indices)
    elif indices.dtype.kind == "u":
        compared = np.promote_types(indices.dtype, np.min_scalar_type(depth - 1))
    else:  # a type that holds `-depth`, so that wrapping negative indices cannot overflow
        compared = np.promote_types(indices.dtype, np.min_scalar_type(-depth))
    indices = indices.astype(compared)
    if negative_indices and compared.kind != "u":
        indices = xp.where(indices < 0, indices + np.asarray(depth, compared), indices)
    positions = np.arange(depth, dtype=compared).reshape((1,) * axis + (depth,) + (1,) * (indices.ndim - axis))
    hit = xp.expand_dims(indices, axis) == positions
    values = values.reshape(2)
    return xp.where(hit, values[1], values[0])


__all__ = ["one_hot"]
