"""Slice: versions 1, 10, 11 and 13."""

from __future__ import annotations

import builtins

import jax
import numpy as np

from jaxonnx._dtypes import as_jax, is_string_array
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx._registry import register
from jaxonnx.ops._common import normalize_axis, public_array, static_ints

_OP = "Slice"


def slice_bounds(dim: int, start: int, end: int, step: int) -> builtins.slice:
    """The Python slice that selects what ONNX Slice-13 selects along one axis of size ``dim``.

    Follows the clamping rules of the Slice-13 text, which differ from numpy for a
    negative step and a start below ``-dim`` (ONNX clamps it to 0; numpy selects nothing).

    Example:
        >>> jaxonnx.ops.slice_bounds(4, -10, -10, -1)   # selects index 0 only
        slice(0, 1, 1)
        >>> jaxonnx.ops.slice_bounds(10, 8, -2**63, -3)
        slice(8, None, -3)
    """
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
        count = max(0, -(-(end - start) // step))
    else:
        start = min(max(start, 0), dim - 1)
        end = min(max(end, -1), dim - 1)
        count = max(0, -(-(start - end) // -step)) if dim else 0
    if count == 0:
        return builtins.slice(0, 0, 1)
    if count == 1:  # also keeps steps like INT64_MIN away from JAX, whose strides are int64.
        return builtins.slice(start, start + 1, 1)
    stop = start + count * step
    return builtins.slice(start, stop if stop >= 0 else None, step)


def _check_bound_arrays(bounds: dict, *, op: str) -> None:
    """The bounds given as numpy or JAX arrays must be 1-D and share one dtype (ONNX's
    ``Tind``); Python ints and sequences are read as they are."""
    arrays = {name: v for name, v in bounds.items() if isinstance(v, (np.ndarray, jax.Array))}
    for name, value in arrays.items():
        if value.ndim != 1:
            raise OnnxValidationError(f"{op} needs a 1-D `{name}`, got shape {tuple(value.shape)}.")
    dtypes = {name: np.dtype(value.dtype) for name, value in arrays.items()}
    if len(set(dtypes.values())) > 1:
        listing = [f"`{name}` {dtype}" for name, dtype in dtypes.items()]
        raise OnnxTypeError(
            f"{op} needs its index inputs ({', '.join(f'`{name}`' for name in bounds)}) to share one "
            f"dtype, got {', '.join(listing[:-1])} and {listing[-1]}."
        )


def _slice(data, starts, ends, axes=None, steps=None, *, negative_axes=True, version=13, onnx_inputs=True):
    op = f"{_OP}-{version}" if version != 13 else _OP
    bounds = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    if version == 1:  # Slice-1 has no `steps`
        del bounds["steps"]
    if onnx_inputs:  # the public function reads any integer bounds, as numpy indexing does
        _check_bound_arrays(bounds, op=op)
    # Any JAX input gives a JAX output (concrete JAX bounds are read like numpy ones).
    jax_bounds = any(isinstance(v, jax.Array) for v in (starts, ends, axes, steps))
    starts = static_ints(starts, op=op, name="starts")
    ends = static_ints(ends, op=op, name="ends")
    rank = data.ndim
    axes = tuple(range(len(starts))) if axes is None else static_ints(axes, op=op, name="axes")
    steps = (1,) * len(starts) if steps is None else static_ints(steps, op=op, name="steps")
    lengths = {"starts": len(starts), "ends": len(ends), "axes": len(axes), "steps": len(steps)}
    lengths = {name: lengths[name] for name in bounds}
    if len(set(lengths.values())) != 1:
        names = [f"`{name}`" for name in lengths]
        raise OnnxValidationError(
            f"{op} needs {', '.join(names[:-1])} and {names[-1]} of one length, got lengths "
            f"{', '.join(map(str, list(lengths.values())[:-1]))} and {list(lengths.values())[-1]}."
        )
    axes = tuple(normalize_axis(a, rank, op=op, name="axes", allow_negative=negative_axes) for a in axes)
    if len(set(axes)) != len(axes):
        raise OnnxValidationError(f"{op} got repeated `axes` {list(axes)}; each axis may appear once.")
    if 0 in steps:
        raise OnnxValidationError(f"{op} got `steps`={list(steps)}; a step may not be 0.")
    if jax_bounds and isinstance(data, np.ndarray) and not is_string_array(data):
        data = as_jax(data, what=f"`data` of {op}")
    index = [builtins.slice(None)] * rank
    for axis, start, end, step in zip(axes, starts, ends, steps):
        index[axis] = slice_bounds(data.shape[axis], start, end, step)
    if all(s == builtins.slice(None) for s in index):
        return data
    return data[tuple(index)]


def slice(data, starts, ends, axes=None, steps=None):
    """Implements ONNX Slice (version 13): ``data`` sliced along ``axes``.

    ``starts``, ``ends``, ``axes`` and ``steps`` decide the output shape, so they must be
    known at trace time: Python ints or sequences, numpy arrays or concrete JAX arrays.
    Bounds are clamped exactly as the Slice-13 text says (``INT64_MAX``/``INT64_MIN``
    ends work, negative indices count from the back, negative steps walk backwards).

    Args:
        data: the array to slice.
        starts: start index per sliced axis.
        ends: end index (exclusive) per sliced axis.
        axes: the axes ``starts`` and ``ends`` refer to; defaults to ``0, 1, ...``.
            Negative axes count from the back; each axis may appear once.
        steps: step per sliced axis; defaults to 1; must not be 0.

    Returns:
        The slice, with the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.slice(jnp.arange(10), starts=[8], ends=[-2**63], steps=[-3])
        Array([8, 5, 2], dtype=int32)
    """
    return _slice(public_array(data, op=_OP, name="data"), starts, ends, axes, steps, onnx_inputs=False)


@register(_OP, 11, 13)
def _slice_11(data, starts, ends, axes=None, steps=None):
    return _slice(data, starts, ends, axes, steps)


@register(_OP, 10)
def _slice_10(data, starts, ends, axes=None, steps=None):
    return _slice(data, starts, ends, axes, steps, negative_axes=False, version=10)


@register(_OP, 1)
def _slice_1(data, *, starts, ends, axes=None):
    return _slice(data, starts, ends, axes, None, negative_axes=False, version=1)


__all__ = ["slice", "slice_bounds"]
