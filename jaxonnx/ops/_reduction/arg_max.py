"""ArgMax and ArgMin: versions 1, 11, 12 and 13.

Version 11 allowed negative axes, 12 added ``select_last_index``, 13 only bfloat16.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis


@register("ArgMax", 12, 13, padding="max")
def arg_max(data, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0):
    """Implements ONNX ArgMax (version 13): the index of the largest element along ``axis``.

    Args:
        data: the array to search, of rank >= 1 and a non-empty ``axis``.
        axis: the axis to search, in ``[-rank, rank - 1]``.
        keepdims: 1 keeps ``axis`` with size 1, 0 drops it.
        select_last_index: among equal maxima, 0 gives the first index and 1 the last.

    Returns:
        int64 indices (int32 when ``jax_enable_x64`` is off). A NaN counts as the maximum.

    Example:
        >>> jaxonnx.ops.arg_max(jnp.array([[1.0, 5.0, 5.0], [7.0, 0.0, 2.0]]), axis=1, select_last_index=1)
        Array([[2],
               [0]], dtype=int32)
    """
    return _arg(data, axis, keepdims, select_last_index, largest=True)


@register("ArgMin", 12, 13, padding="min")
def arg_min(data, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0):
    """Implements ONNX ArgMin (version 13): the index of the smallest element along ``axis``.

    Arguments and result as in :func:`arg_max`; a NaN counts as the minimum.

    Example:
        >>> jaxonnx.ops.arg_min(jnp.array([[1.0, 5.0, 1.0], [7.0, 0.0, 2.0]]), axis=-1, keepdims=0)
        Array([0, 1], dtype=int32)
    """
    return _arg(data, axis, keepdims, select_last_index, largest=False)


@register("ArgMax", 11, padding="max")
def _arg_max_11(data, *, axis=0, keepdims=1):
    return _arg(data, axis, keepdims, 0, largest=True)


@register("ArgMin", 11, padding="min")
def _arg_min_11(data, *, axis=0, keepdims=1):
    return _arg(data, axis, keepdims, 0, largest=False)


@register("ArgMax", 1, padding="max")
def _arg_max_1(data, *, axis=0, keepdims=1):
    return _arg(data, axis, keepdims, 0, largest=True, allow_negative=False)


@register("ArgMin", 1, padding="min")
def _arg_min_1(data, *, axis=0, keepdims=1):
    return _arg(data, axis, keepdims, 0, largest=False, allow_negative=False)


def _arg(data, axis, keepdims, select_last_index, *, largest, allow_negative=True):
    if data.ndim == 0:
        raise OnnxValidationError("needs `data` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, data.ndim, allow_negative=allow_negative)
    dim = data.shape[axis]
    if dim == 0:
        raise OnnxValidationError(
            f"searches axis {axis} of size 0 (`data` of shape {tuple(data.shape)}); an empty axis has no "
            f"{'largest' if largest else 'smallest'} element."
        )
    xp = namespace(data)
    keepdims = bool(keepdims)
    if xp is np:
        search = np.argmax if largest else np.argmin
        if select_last_index:  # the first hit in the reversed axis is the last one
            return dim - 1 - search(np.flip(data, axis), axis=axis, keepdims=keepdims)
        return search(data, axis=axis, keepdims=keepdims)
    # The extreme, then the first (or last) position that holds it, or holds a NaN (a NaN is
    # the extreme, as in numpy): two plain reductions, which XLA:CPU runs faster than
    # jnp.argmax's variadic (value, index) reduction. Positions count in float32 where it
    # holds them exactly: XLA:CPU's float min is faster than its integer min
    # (measured: benchmarks/cpu_formulations_results.md, section 9).
    extreme = (jnp.max if largest else jnp.min)(data, axis=axis, keepdims=True)
    hit = (data == extreme) | (data != data) if data.dtype.kind == "f" else data == extreme
    index_type = jax.dtypes.canonicalize_dtype(np.int64)
    position = jax.lax.broadcasted_iota(np.float32 if dim <= 2**24 else index_type, data.shape, axis)
    pick, miss = (jnp.max, -1) if select_last_index else (jnp.min, dim)
    return pick(jnp.where(hit, position, miss), axis=axis, keepdims=keepdims).astype(index_type)


__all__ = ["arg_max", "arg_min"]
