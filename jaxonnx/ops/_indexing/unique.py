"""Unique: versions 11 and 28 (28 only adds bfloat16)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import RealLength
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError, StaticValueError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if
from jaxonnx.ops._helpers.common import is_traced, normalize_axis
from jaxonnx.ops._helpers.fill import padding_scalar


# Under a size hint: `Y` and `counts` are padded with zeros, `indices` with an out-of-range
# index, and `inverse_indices` has the length of the input, so it is never padded.
@register("Unique", 11, 28, concrete=("X",), size_hint=("zeros", "indices", "", "zeros"))
def unique(
    X, *, axis: int | None = None, sorted: int = 1, size: int | None = None, fill_value=None, real_length: bool = False
):
    """Implements ONNX Unique: the unique elements (or slices along ``axis``) of ``X``.

    Returns the unique values ``Y``; ``indices``, the first occurrence of each in ``X``;
    ``inverse_indices``, for each element (or slice) of ``X`` its position in ``Y``; and
    ``counts``. ``sorted=1`` sorts ``Y`` ascending (slices lexicographically, as
    ``np.unique``); ``sorted=0`` keeps the order of first occurrence. Without ``axis``,
    ``X`` is flattened first. NaNs are one value, and -0.0 equals 0.0 (the first occurrence
    is kept).

    The number of unique values depends on the values of ``X``. A concrete ``X`` (numpy,
    or a JAX array outside ``jax.jit``) gives the exact result. A traced ``X`` needs
    ``size`` (for a model: a size hint on any output of the node), like ``jnp.unique``:
    ``Y``, ``indices`` and ``counts`` then have ``size`` entries, the real ones first, then
    padding; finding more than ``size`` unique values raises at run time (a host
    callback, as in :func:`non_zero`) instead of truncating. The padding is chosen so
    that it changes no sum and reads nothing: ``Y`` pads with ``fill_value`` (zeros by
    default), ``counts`` with 0, and ``indices`` with ``X.shape[axis]`` (``X.size`` without
    ``axis``), out of range, so that a gather reads zeros there. ``inverse_indices`` is
    never padded and only names real entries of ``Y``.

    ``Y`` is gathered from ``X``, so gradients flow from ``Y`` to the first occurrences.

    Args:
        X: the array to search; strings only when concrete.
        axis: the axis whose slices are compared, in ``[-rank, rank - 1]``; None flattens ``X``.
        sorted: 1 sorts the unique values, 0 keeps their order of first occurrence.
        size: the static number of unique values to return (needed for a traced ``X``).
        fill_value: the value of the padding of ``Y`` when ``size`` is given (0 by default,
            "" for strings); the dtype of ``X`` must hold it exactly.
        real_length: with ``size``, also return the number of unique values (a
            :class:`~jaxonnx._core.padding.RealLength`, for the graph runner's padding marks).

    Returns:
        ``(Y, indices, inverse_indices, counts)``; the last three int64 (int32 when JAX's
        x64 mode is off and ``X`` is a JAX array).

    Example:
        >>> y, indices, inverse, counts = jaxonnx.ops.unique(np.array([2, 1, 1, 3, 2]), sorted=0)
        >>> y, indices, inverse, counts
        (array([2, 1, 3]), array([0, 1, 3]), array([0, 1, 1, 2, 0]), array([2, 2, 1]))
        >>> jax.jit(lambda x: jaxonnx.ops.unique(x, size=4)[0])(jnp.array([2., 1., 1., 3., 2.]))
        Array([1., 2., 3., 0.], dtype=float32)
    """
    if real_length and size is not None:
        outputs = unique(X, axis=axis, sorted=sorted, size=size, fill_value=fill_value)
        counts = outputs[3]  # a real value occurs at least once; padding counts 0
        count = jnp.count_nonzero(counts) if isinstance(counts, jax.Array) else np.count_nonzero(counts)
        return (*outputs, RealLength(count, (0 if axis is None else axis % X.ndim, 0, None, 0)))
    if sorted not in (0, 1):
        raise OnnxValidationError(f"got `sorted`={sorted}; it must be 0 or 1.")
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0):
        raise OnnxValidationError(f"needs a non-negative int `size`, got {size!r}.")
    if axis is None:
        data, axis = X.reshape(-1), 0
    elif X.ndim == 0:
        raise OnnxValidationError(f"needs `X` of rank >= 1 when `axis` is given, got a scalar and `axis`={axis}.")
    else:
        data, axis = X, normalize_axis(axis, X.ndim)
    fill = padding_scalar(fill_value, np.dtype(X.dtype), name="X")
    if is_traced(X):
        if size is None:
            error = StaticValueError(
                f"cannot decide its output shape under `jax.jit`: `X` is traced (shape {tuple(X.shape)}), "
                "so the number of unique values is unknown at trace time. Make `X` static (a numpy array), "
                "or pass `size=` (the number of unique values to return) and optionally `fill_value=`."
            )
            error.argument = "X"
            raise error
        return _unique_traced(data, axis, bool(sorted), size, fill)
    return _unique_concrete(data, axis, bool(sorted), size, fill)


def _rows(data, axis: int):
    """The slices of ``data`` along ``axis``, each flattened into one row."""
    moved = data if axis == 0 else (np if isinstance(data, np.ndarray) else jnp).moveaxis(data, axis, 0)
    return moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))  # not -1: there may be no rows


def _unique_concrete(data, axis: int, keep_sorted: bool, size, fill):
    values = np.asarray(data)
    n = values.shape[axis]
    rows = _rows(values, axis)
    # Each element as its rank among the distinct elements: np.unique's flat comparison
    # (NaNs one value, -0.0 == 0.0, strings too), then the rows compare as integer rows.
    codes = (
        np.unique(rows.reshape(-1), return_inverse=True)[1].reshape(rows.shape) if rows.size else rows.astype(np.int64)
    )
    order = np.lexsort(codes.T[::-1]) if codes.shape[1] else np.arange(n)  # stable: first occurrences first
    ordered = codes[order]
    is_new = np.ones(n, bool)
    is_new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    group = np.cumsum(is_new) - 1
    starts = np.flatnonzero(is_new)
    first = order[starts]
    counts = np.diff(np.append(starts, n))
    inverse = np.empty(n, np.int64)
    inverse[order] = group
    if not keep_sorted:
        by_first = np.argsort(first, kind="stable")
        first, counts = first[by_first], counts[by_first]
        position = np.empty(len(by_first), np.int64)
        position[by_first] = np.arange(len(by_first))
        inverse = position[inverse]
    found = len(first)
    if size is not None and found > size:
        raise OnnxValidationError(
            f"found {found} unique values but `size`={size}; the result would be truncated, so it is "
            "refused. Give a larger `size`."
        )
    pad = 0 if size is None else size - found
    indices = np.concatenate([first, np.full(pad, n)]).astype(np.int64)
    counts = np.concatenate([counts, np.zeros(pad, np.int64)]).astype(np.int64)
    if isinstance(data, jax.Array):  # eager JAX in, JAX out; the indices are exact in 32 bits too
        index_type = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
        y = jnp.take(data, indices, axis=axis, mode="fill", fill_value=fill)
        return y, *(jnp.asarray(v, index_type) for v in (indices, inverse, counts))
    y = np.take(values, first, axis=axis)
    if pad:
        pad_shape = list(y.shape)
        pad_shape[axis] = pad
        y = np.concatenate([y, np.full(pad_shape, fill, dtype=y.dtype)], axis=axis)
    return y, indices, inverse, counts


def _unique_traced(data, axis: int, keep_sorted: bool, size: int, fill):
    n = data.shape[axis]
    index_type = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
    rows = _rows(data, axis)
    if n == 0:  # nothing found: all padding
        shape = list(data.shape)
        shape[axis] = size
        return (
            jnp.full(shape, fill, dtype=data.dtype),
            jnp.full(size, n, index_type),
            jnp.zeros(0, index_type),
            jnp.zeros(size, index_type),
        )
    columns = [rows[:, j] for j in range(rows.shape[1])]
    # jnp.lexsort sorts by its last key first; it is stable, so first occurrences come first.
    # Its float keys sort as np.unique's: NaNs last, -0.0 with 0.0.
    order = jnp.lexsort(columns[::-1]) if columns else jnp.arange(n)
    ordered = rows[order]
    differs = ordered[1:] != ordered[:-1]
    if jnp.issubdtype(rows.dtype, jnp.inexact):
        differs &= ~(jnp.isnan(ordered[1:]) & jnp.isnan(ordered[:-1]))  # NaNs are one value
    is_new = jnp.concatenate([jnp.ones(1, bool), differs.any(axis=1)])
    group = jnp.cumsum(is_new, dtype=index_type) - 1
    found = group[-1] + 1
    refuse_at_run_time_if(
        found > size,
        lambda count: (
            f"Unique found {int(count)} unique values at run time but its output was given size={size}; "
            "the result would be truncated, so it is refused. Give a larger `size` (for a model, a larger "
            "size hint: `size_hints=` of `jaxonnx.load`, or `--size-hint OUTPUT=N` of the jaxonnx command)."
        ),
        found,
    )
    (starts,) = jnp.nonzero(is_new, size=size, fill_value=n)  # past `found`: n, out of range
    first = jnp.where(starts < n, order[jnp.minimum(starts, n - 1)], n).astype(index_type)
    counts = jnp.diff(jnp.concatenate([starts, jnp.full(1, n, starts.dtype)])).astype(index_type)
    inverse = jnp.zeros(n, index_type).at[order].set(group, unique_indices=True)
    if not keep_sorted:
        by_first = jnp.argsort(first, stable=True)  # the padding (n) stays last
        first, counts = first[by_first], counts[by_first]
        position = jnp.zeros(size, index_type).at[by_first].set(jnp.arange(size, dtype=index_type), unique_indices=True)
        inverse = position[inverse]
    y = jnp.take(data, first, axis=axis, mode="fill", fill_value=fill)
    return y, first, inverse, counts


__all__ = ["unique"]
