"""Slice: versions 1, 10, 11 and 13."""

from __future__ import annotations

import builtins

import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import int_list, normalize_axis

_BOUNDS = ("starts", "ends", "axes", "steps")


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


@register("Slice", 11, 13, static=_BOUNDS, padding="moves")
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
    return _slice(data, starts, ends, axes, steps, negative_axes=True)


@register("Slice", 10, static=_BOUNDS, padding="moves")
def _slice_10(data, starts, ends, axes=None, steps=None):
    return _slice(data, starts, ends, axes, steps, negative_axes=False)


@register("Slice", 1, padding="moves")
def _slice_1(data, *, starts, ends, axes=None):
    # Slice-1's bounds are attributes, and it has no steps.
    return _slice(data, starts, ends, axes, _NO_STEPS, negative_axes=False)


_NO_STEPS = object()


def _slice(data, starts, ends, axes, steps, *, negative_axes):
    given = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    if steps is _NO_STEPS:
        del given["steps"]
    for name, value in given.items():
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise OnnxValidationError(f"needs a 1-D `{name}`, got shape {value.shape}.")
    bounds = {name: int_list(value, name=name) for name, value in given.items() if value is not None}
    count = len(bounds["starts"])
    bounds.setdefault("axes", tuple(range(count)))
    bounds.setdefault("steps", (1,) * count)
    named = [name for name in _BOUNDS if name in given]  # Slice-1 has no `steps`
    lengths = [len(bounds[name]) for name in named]
    if len(set(lengths)) != 1:
        names = [f"`{name}`" for name in named]
        raise OnnxValidationError(
            f"needs {', '.join(names[:-1])} and {names[-1]} of one length, got lengths "
            f"{', '.join(map(str, lengths[:-1]))} and {lengths[-1]}."
        )
    rank = data.ndim
    axes = tuple(normalize_axis(a, rank, name="axes", allow_negative=negative_axes) for a in bounds["axes"])
    if len(set(axes)) != len(axes):
        raise OnnxValidationError(f"got repeated `axes` {list(axes)}; each axis may appear once.")
    if 0 in bounds["steps"]:
        raise OnnxValidationError(f"got `steps`={list(bounds['steps'])}; a step may not be 0.")
    index = [builtins.slice(None)] * rank
    for axis, start, end, step in zip(axes, bounds["starts"], bounds["ends"], bounds["steps"]):
        index[axis] = slice_bounds(data.shape[axis], start, end, step)
    if all(s == builtins.slice(None) for s in index):
        return data
    return data[tuple(index)]


__all__ = ["slice", "slice_bounds"]
