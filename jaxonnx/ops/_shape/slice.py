"""Slice: versions 1, 10, 11 and 13."""

from __future__ import annotations

import builtins

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, RealLength, moves
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError, StaticValueError
from jaxonnx.ops._helpers.bounds import refuse_at_run_time_if
from jaxonnx.ops._helpers.common import int_list, is_traced, normalize_axis

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


def _on_padding(call: Call):
    """Slice's rule on padding: the values move (``"moves"``), and ``Slice(x, 0, n)`` with ``n``
    a padded length (``x[:len(y)]``) marks the axis at the real length."""
    return moves(call, lengths_as="ends")


@register("Slice", 11, 13, static=_BOUNDS, size_hint="own_length", padding=_on_padding)
def slice(
    data, starts, ends, axes=None, steps=None, *, size: int | None = None, fill_value=None, real_length: bool = False
):
    """Implements ONNX Slice (version 13): ``data`` sliced along ``axes``.

    ``starts``, ``ends``, ``axes`` and ``steps`` decide the output shape, so they are
    normally known at trace time: Python ints or sequences, numpy arrays or concrete JAX
    arrays. Bounds are clamped exactly as the Slice-13 text says (``INT64_MAX``/``INT64_MIN``
    ends work, negative indices count from the back, negative steps walk backwards).

    Traced ``starts``/``ends`` (one axis, step 1: a bag between offsets read from the data,
    as ``torch.nn.EmbeddingBag`` exports) give a **padded slice**: ``size`` entries along the
    axis (for a model: a size hint; by default the input's own length, which no slice
    exceeds), the real ones first and zeros (``fill_value``) after. ``real_length=True``
    also returns the real length (a :class:`~jaxonnx._core.padding.RealLength`), from which
    the graph runner marks the padding so that it never reaches a result; called by hand,
    traced bounds need ``size``. A slice longer than ``size`` raises at run time. With
    ``size``, known bounds give the same padded slice, so eager and jitted calls agree.

    Args:
        data: the array to slice.
        starts: start index per sliced axis.
        ends: end index (exclusive) per sliced axis.
        axes: the axes ``starts`` and ``ends`` refer to; defaults to ``0, 1, ...``.
            Negative axes count from the back; each axis may appear once.
        steps: step per sliced axis; defaults to 1; must not be 0.
        size: the padded length for traced bounds.
        fill_value: the padding's value (default 0).
        real_length: with traced bounds, also return the real length.

    Returns:
        The slice, with the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.slice(jnp.arange(10), starts=[8], ends=[-2**63], steps=[-3])
        Array([8, 5, 2], dtype=int32)
        >>> jax.jit(lambda s, e: jaxonnx.ops.slice(jnp.arange(10), s, e, size=4))(jnp.array([2]), jnp.array([5]))
        Array([2, 3, 4, 0], dtype=int32)
    """
    return _slice(
        data, starts, ends, axes, steps, negative_axes=True, size=size, fill_value=fill_value, real_length=real_length
    )


@register("Slice", 10, static=_BOUNDS, size_hint="own_length", padding=_on_padding)
def _slice_10(data, starts, ends, axes=None, steps=None, *, size=None, fill_value=None, real_length=False):
    return _slice(
        data, starts, ends, axes, steps, negative_axes=False, size=size, fill_value=fill_value, real_length=real_length
    )


@register("Slice", 1, padding=_on_padding)
def _slice_1(data, *, starts, ends, axes=None):
    # Slice-1's bounds are attributes, and it has no steps.
    return _slice(data, starts, ends, axes, _NO_STEPS, negative_axes=False)


_NO_STEPS = object()


def _slice(data, starts, ends, axes, steps, *, negative_axes, size=None, fill_value=None, real_length=False):
    traced = [
        name
        for name, value in (("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps))
        if is_traced(value)
    ]
    if traced or size is not None:  # with a size, padded whatever the bounds (eager and jit agree)
        return _padded_slice(
            data,
            starts,
            ends,
            axes,
            steps,
            traced,
            negative_axes=negative_axes,
            size=size,
            fill_value=fill_value,
            real_length=real_length,
        )
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


def _padded_slice(data, starts, ends, axes, steps, traced: list[str], *, negative_axes, size, fill_value, real_length):
    """``data`` sliced between traced bounds along one axis, padded to ``size`` (see `slice`)."""
    fixed = [name for name in traced if name in ("axes", "steps")]  # they decide which axis, and the step
    if size is None and not real_length or fixed:
        traced = (fixed or traced)[0]
        value = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}[traced]
        error = StaticValueError(
            f"needs the value of `{traced}` to decide its output shape, but `{traced}` is traced (shape "
            f"{tuple(value.shape)}, dtype {value.dtype}) so its value is unknown at trace time. Pass it as a Python "
            "value or a numpy array, or give `size=` (the padded length of a slice between traced bounds)."
        )
        error.argument = traced
        raise error
    starts, ends = (jnp.asarray(v).reshape(-1) for v in (starts, ends))
    if starts.shape != (1,) or ends.shape != (1,):
        raise OnnxValidationError(
            f"got traced `{traced[0]}` for {max(starts.size, ends.size)} axes; a slice with traced bounds "
            "(a padded slice) cuts one axis. Make the bounds known at trace time."
        )
    axis = 0 if axes is None else int(np.asarray(axes).reshape(-1)[0])
    axis = normalize_axis(axis, data.ndim, name="axes", allow_negative=negative_axes)
    step = 1 if steps is None or steps is _NO_STEPS else int(np.asarray(steps).reshape(-1)[0])
    if step != 1:
        raise OnnxValidationError(
            f"got traced `{traced[0]}` and step {step}; a slice with traced bounds (a padded slice) takes step 1."
        )
    data = jnp.asarray(data)
    dim = data.shape[axis]
    size = dim if size is None else size
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise OnnxValidationError(f"needs a non-negative int `size`, got {size!r}.")
    # Slice-13's clamping: negative bounds count from the back, then both lie in [0, dim].
    start, end = (jnp.clip(jnp.where(b < 0, b + dim, b), 0, dim).astype(jnp.int32) for b in (starts[0], ends[0]))
    count = jnp.maximum(end - start, 0)
    if size < dim:  # only a bound below the input's length can be exceeded
        refuse_at_run_time_if(
            count > size,
            lambda found: (
                f"Slice cut {int(found)} entries at run time but its output was given size={size}; the result "
                "would be truncated, so it is refused. Give a larger `size` (for a model, a larger size hint: "
                "`size_hints=` of `jaxonnx.load`)."
            ),
            count,
        )
    # Padded behind, so that a window of `size` from any start stays inside (no clamped start).
    widths = [(0, size if d == axis else 0) for d in range(data.ndim)]
    window = jax.lax.dynamic_slice_in_dim(jnp.pad(data, widths), start, size, axis)
    real = (jnp.arange(size, dtype=jnp.int32) < count).reshape([-1 if d == axis else 1 for d in range(data.ndim)])
    fill = jnp.asarray(0 if fill_value is None else fill_value, data.dtype)
    out = jnp.where(real, window, fill)
    return (out, RealLength(count, (axis,))) if real_length else out


__all__ = ["slice", "slice_bounds"]
