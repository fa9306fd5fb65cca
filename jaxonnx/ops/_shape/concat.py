"""Concat: versions 1, 4, 11 and 13 (4 makes `axis` required, 11 allows negative axes)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, Mark, as_tuple, combine, length_marks, merge, with_count
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis


def _on_padding(call: Call):
    """Concat's rule on padding: along a marked axis, each input's real entries come first, in
    order, then all the padding, as the exact concatenation of the real parts has them; the
    other axes keep their marks."""
    results = as_tuple(call.run(call.args))
    out = results[0]
    axis = call.attributes.get("axis", 0)
    axis = axis + out.ndim if axis < 0 else axis
    axes: dict[int, Mark] = {}
    for marks in call.marks:
        for a, mark in ({} if marks is None else marks.axes).items():
            if a != axis:
                merge(axes, a, mark)
    along = [m.axes[axis] if m is not None and axis in m.axes else None for m in call.marks]
    if any(along):
        # The real entries of each input first, in order, then all the padding: as the exact
        # concatenation of the real parts would have them.
        masks = [
            jnp.arange(a.shape[axis]) < (m.count if m is not None else a.shape[axis]) for a, m in zip(call.args, along)
        ]
        real = jnp.concatenate(masks)
        order = jnp.argsort(~real, stable=True)
        out = jnp.take(jnp.asarray(out), order, axis=axis)
        count = sum(m.count if m is not None else a.shape[axis] for a, m in zip(call.args, along))
        axes[axis] = with_count(next(m for m in along if m is not None), count)
    lengths = None
    if call.has_lengths():
        flags = [
            np.zeros(np.shape(a), bool) if call.length_flags(i) is None else call.length_flags(i)
            for i, a in enumerate(call.args)
        ]
        lengths = length_marks(
            np.concatenate(flags, axis=axis), as_tuple(call.run(call.reals()))[0], call.length_origin()
        )
    return (out,), [combine(axes, lengths)]


@register("Concat", 11, 13, padding=_on_padding, layout="along_axis")
def concat(*inputs, axis: int):
    """Implements ONNX Concat: ``inputs`` joined along ``axis``.

    Args:
        *inputs: one or more arrays of one dtype and rank (>= 1), with equal dims except on ``axis``.
        axis: the axis to join along, in ``[-rank, rank - 1]``.

    Returns:
        The joined array.

    Example:
        >>> jaxonnx.ops.concat(jnp.zeros((2, 1)), jnp.ones((2, 2)), axis=-1)
        Array([[0., 1., 1.],
               [0., 1., 1.]], dtype=float32)
    """
    return _concat(inputs, axis, allow_negative=True)


@register("Concat", 4, padding=_on_padding, layout="along_axis")
def _concat_4(*inputs, axis):
    return _concat(inputs, axis, allow_negative=False)


@register("Concat", 1, padding=_on_padding)
def _concat_1(*inputs, axis=None):
    # Concat-1's schema has no default, but its text says "Default value is 1".
    return _concat(inputs, 1 if axis is None else axis, allow_negative=False)


def _concat(inputs, axis, *, allow_negative):
    rank = inputs[0].ndim
    if rank == 0:
        raise OnnxValidationError("needs inputs of rank >= 1, got a scalar as input 0.")
    axis = normalize_axis(axis, rank, allow_negative=allow_negative)
    first = tuple(inputs[0].shape)
    for i, x in enumerate(inputs[1:], start=1):
        shape = tuple(x.shape)
        if len(shape) != rank or any(a != b for d, (a, b) in enumerate(zip(first, shape)) if d != axis):
            raise OnnxValidationError(
                f"got input {i} of shape {shape}, which does not match input 0 of shape {first} "
                f"on every dim except the concat axis {axis}."
            )
    if len(inputs) == 1:
        return inputs[0]
    return namespace(*inputs).concatenate(inputs, axis=axis)


__all__ = ["concat"]
