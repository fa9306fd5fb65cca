"""Concat: versions 1, 4, 11 and 13 (4 makes `axis` required, 11 allows negative axes)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis


@register("Concat", 11, 13, padding="concat", layout="along_axis")
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


@register("Concat", 4, padding="concat", layout="along_axis")
def _concat_4(*inputs, axis):
    return _concat(inputs, axis, allow_negative=False)


@register("Concat", 1, padding="concat")
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
