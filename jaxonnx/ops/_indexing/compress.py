"""Compress: versions 9, 11 and 28 (28 only adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import RealLength
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError, StaticValueError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if
from jaxonnx.ops._helpers.common import is_traced, namespace, normalize_axis
from jaxonnx.ops._helpers.fill import padding_scalar


@register(
    "Compress", 11, 28, concrete=("condition",), size_hint="zeros", counts_non_zeros_of="condition", padded_axis="axis"
)
def compress(
    input, condition, *, axis: int | None = None, size: int | None = None, fill_value=None, real_length: bool = False
):
    """Implements ONNX Compress: the slices of ``input`` along ``axis`` where ``condition`` is true.

    The output length depends on the values of ``condition``. A concrete ``condition``
    (numpy, Python, or a JAX array outside ``jax.jit``) gives the exact result, also
    under ``jax.jit`` when it is closed over. A traced ``condition`` needs ``size``, like
    ``jnp.compress``: the output then has ``size`` slices along ``axis``, the selected
    ones first and the rest ``fill_value``; selecting more than ``size`` raises at run
    time instead of truncating.

    That run-time check is a host callback (``jax.debug.callback``) in the compiled
    function, so a function that calls ``compress`` with a traced ``condition`` and
    ``size=`` runs under ``jax.jit`` (also lowered and compiled ahead of time) but cannot
    be exported: ``jax.export`` raises ``NotImplementedError`` because host callbacks
    cannot be serialized. With a static ``condition`` there is no callback.

    Args:
        input: the array to select from.
        condition: 1-D bool array, at most as long as the axis; slices past its end are dropped.
        axis: the axis to select along, in ``[-rank, rank - 1]``; ``None`` flattens ``input`` first.
        size: the static output length along ``axis`` (needed for a traced ``condition``).
        fill_value: the value of the padding slices when ``size`` is given. Integer and
            bool dtypes must hold it exactly (not 1000 for int8, not 0.5 for ints); a float
            rounds to the nearest value of a float dtype, but may not overflow it. Defaults
            to 0, or "" for string data.
        real_length: with ``size``, also return the number of selected slices (a
            :class:`~jaxonnx._core.padding.RealLength`, for the graph runner's padding marks).

    Returns:
        The selected slices, with the dtype of ``input``.

    Example:
        >>> jaxonnx.ops.compress(jnp.array([[1, 2], [3, 4], [5, 6]]), np.array([False, True]), axis=0)
        Array([[3, 4]], dtype=int32)
    """
    out = _compress(input, condition, axis, size=size, fill_value=fill_value, negative_axis=True)
    return _with_real_length(out, condition, axis, size, real_length)


@register(
    "Compress", 9, concrete=("condition",), size_hint="zeros", counts_non_zeros_of="condition", padded_axis="axis"
)
def _compress_9(input, condition, *, axis=None, size=None, fill_value=None, real_length=False):
    out = _compress(input, condition, axis, size=size, fill_value=fill_value, negative_axis=False)
    return _with_real_length(out, condition, axis, size, real_length)


def _with_real_length(out, condition, axis, size, real_length):
    if not real_length or size is None:
        return out
    count = jnp.count_nonzero(condition) if is_traced(condition) else np.count_nonzero(np.asarray(condition))
    return out, RealLength(count, (0 if axis is None else axis % out.ndim,), counted=1)


# Above this many contiguous runs of selected slices, one gather beats many slices (and
# compiles much faster than a thousand static slices; measured: benchmarks/results.md,
# notes on Compress).
_MAX_SLICED_RUNS = 16


def _take_static(xp, data, selected: np.ndarray, axis: int):
    """``take(data, selected, axis)`` for known indices. In JAX, a few contiguous runs become
    static slices joined by one concatenate: their VJP pads instead of scattering, which
    keeps gradients of sharded arrays (explicit mesh axes) free of scatters whose output
    sharding JAX cannot infer."""
    if xp is np:
        return np.take(data, selected, axis=axis)
    breaks = np.flatnonzero(np.diff(selected) != 1) + 1
    runs = [(int(run[0]), int(run[-1]) + 1) for run in np.split(selected, breaks)] if len(selected) else []
    if 0 < len(runs) <= _MAX_SLICED_RUNS:
        pieces = [jax.lax.slice_in_dim(data, start, stop, axis=axis) for start, stop in runs]
        return pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, axis=axis)
    return jnp.take(data, selected.astype(np.int32 if data.shape[axis] < 2**31 else np.int64), axis=axis)


def _compress(data, condition, axis, *, size, fill_value, negative_axis):
    if condition.ndim != 1:
        raise OnnxValidationError(f"needs a 1-D `condition`, got shape {tuple(condition.shape)}.")
    if axis is None:
        data = data.reshape(-1)
        axis = 0
    else:
        if data.ndim == 0:
            raise OnnxValidationError("needs `input` of rank >= 1 when `axis` is given, got a scalar.")
        axis = normalize_axis(axis, data.ndim, allow_negative=negative_axis)
    dim = data.shape[axis]
    if condition.shape[0] > dim:
        raise OnnxValidationError(
            f"got a `condition` of length {condition.shape[0]}, longer than axis {axis} "
            f"of `input` (size {dim}, input shape {tuple(data.shape)})."
        )
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0):
        raise OnnxValidationError(f"needs a non-negative int `size`, got {size!r}.")
    fill_value = padding_scalar(fill_value, np.dtype(data.dtype))
    xp = namespace(data)

    if not is_traced(condition):
        # A concrete condition is read, never converted: it stays static under jax.jit.
        selected = np.flatnonzero(np.asarray(condition))
        if size is not None and len(selected) > size:
            raise OnnxValidationError(
                f"selected {len(selected)} slices but `size`={size}; the result would be "
                "truncated, so it is refused. Give a larger `size`."
            )
        out = _take_static(xp, data, selected, axis)
        if size is None or size == len(selected):
            return out
        pad_shape = list(out.shape)
        pad_shape[axis] = size - len(selected)
        return xp.concatenate([out, xp.full(pad_shape, fill_value, dtype=data.dtype)], axis=axis)

    if size is None:
        error = StaticValueError(
            f"cannot decide its output shape under `jax.jit`: `condition` is traced "
            f"(shape {tuple(condition.shape)}), so the number of selected slices is unknown at trace "
            "time. Make `condition` static (a numpy array or Python value), or pass `size=` "
            "(the output length along the axis) and optionally `fill_value=`."
        )
        error.argument = "condition"
        raise error
    if dim == 0:  # nothing to select (`condition` is empty too): all padding.
        shape = list(data.shape)
        shape[axis] = size
        return jnp.full(shape, fill_value, dtype=data.dtype)
    (selected,) = jnp.nonzero(condition, size=size)
    count = jnp.count_nonzero(condition)
    # Past `count`, point outside the axis so that `take` fills (jnp.nonzero ignores its own
    # `fill_value` for an empty `condition`).
    selected = jnp.where(jnp.arange(size) < count, selected, dim)
    refuse_at_run_time_if(
        count > size,
        lambda count: (
            f"Compress selected {int(count)} slices at run time but its output was given size={size}; "
            "the result would be truncated, so it is refused. Give a larger `size` (for a model, a larger "
            "size hint: `size_hints=` of `jaxonnx.load`, or `--size-hint OUTPUT=N` of the jaxonnx command)."
        ),
        count,
    )
    return jnp.take(data, selected, axis=axis, mode="fill", fill_value=fill_value)


__all__ = ["compress"]
