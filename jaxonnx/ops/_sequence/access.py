"""SequenceAt, SequenceLength, SequenceInsert and SequenceErase (11).

A sequence is a Python list with a length known at trace time, so positions are static:
they decide which tensor comes out (``static=`` in the contract).
"""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError


def _position(position, length: int, *, insert: bool = False) -> int:
    position = np.asarray(position)
    if position.size != 1 or position.dtype.kind not in "iu":
        raise OnnxValidationError(f"needs an integer scalar `position`, got {position.dtype}{list(position.shape)}.")
    p = int(position.reshape(()))
    upper = length if insert else length - 1
    if not -length <= p <= upper:
        raise OnnxValidationError(
            f"got `position`={p} for a sequence of length {length}; the accepted range is [{-length}, {upper}]."
        )
    return p + length if p < 0 else p


@register("SequenceAt", 11, static=("position",))
def sequence_at(input_sequence, position):
    """Implements ONNX SequenceAt: the tensor at ``position`` (negative counts from the end).

    Example:
        >>> jaxonnx.ops.sequence_at([np.zeros(2), np.ones(3)], np.array(-1))
        array([1., 1., 1.])
    """
    return input_sequence[_position(position, len(input_sequence))]


@register("SequenceLength", 11)
def sequence_length(input_sequence):
    """Implements ONNX SequenceLength: the number of tensors, an int64 scalar (known at trace time).

    Example:
        >>> jaxonnx.ops.sequence_length([np.zeros(2), np.ones(3)])
        array(2)
    """
    return np.array(len(input_sequence), np.int64)


@register("SequenceInsert", 11, static=("position",))
def sequence_insert(input_sequence, tensor, position=None):
    """Implements ONNX SequenceInsert: a new sequence with ``tensor`` inserted before
    ``position`` (at the end when it is omitted).

    Example:
        >>> len(jaxonnx.ops.sequence_insert([jnp.zeros(2)], jnp.ones(3)))
        2
    """
    if input_sequence and np.dtype(input_sequence[0].dtype) != np.dtype(tensor.dtype):
        raise OnnxTypeError(
            f"needs `tensor` of the sequence's element type {np.dtype(input_sequence[0].dtype)}, got {np.dtype(tensor.dtype)}."
        )
    at = len(input_sequence) if position is None else _position(position, len(input_sequence), insert=True)
    return [*input_sequence[:at], tensor, *input_sequence[at:]]


@register("SequenceErase", 11, static=("position",))
def sequence_erase(input_sequence, position=None):
    """Implements ONNX SequenceErase: a new sequence without the tensor at ``position`` (the
    last one when it is omitted).

    Example:
        >>> len(jaxonnx.ops.sequence_erase([np.zeros(2), np.ones(3)]))
        1
    """
    if not input_sequence:
        raise OnnxValidationError("got an empty sequence; there is nothing to erase.")
    at = len(input_sequence) - 1 if position is None else _position(position, len(input_sequence))
    return [*input_sequence[:at], *input_sequence[at + 1 :]]


__all__ = ["sequence_at", "sequence_erase", "sequence_insert", "sequence_length"]
