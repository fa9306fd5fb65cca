"""SplitToSequence (11, 24) and ConcatFromSequence (11): between a tensor and a sequence."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis


@register("SplitToSequence", 11, 24, static=("split",))
def split_to_sequence(input, split=None, *, axis=0, keepdims=1):
    """Implements ONNX SplitToSequence: ``input`` cut along ``axis`` into a sequence.

    Args:
        input: the tensor.
        split: a scalar (pieces of that length, the last one shorter if need be) or a 1-D
            tensor of lengths; omitted: pieces of length 1, squeezed unless ``keepdims`` is 0... as the text says.
        axis: the axis to cut.
        keepdims: without ``split``, whether each length-1 piece keeps the axis.

    Example:
        >>> [p.shape for p in jaxonnx.ops.split_to_sequence(np.zeros((5, 2)), np.array(2))]
        [(2, 2), (2, 2), (1, 2)]
    """
    xp = namespace(input)
    axis = normalize_axis(axis, input.ndim)
    dim = input.shape[axis]
    if split is None:
        pieces = [xp.take(input, xp.asarray([i]), axis=axis) for i in range(dim)]
        return [p if keepdims else xp.squeeze(p, axis) for p in pieces]
    split = np.asarray(split)
    if split.ndim == 0:
        step = int(split)
        if step <= 0:
            raise OnnxValidationError(f"got a scalar `split`={step}; it must be positive.")
        lengths = [step] * (dim // step) + ([dim % step] if dim % step else [])
    else:
        lengths = [int(v) for v in split]
        if any(n < 0 for n in lengths) or sum(lengths) != dim:
            raise OnnxValidationError(f"got `split`={lengths}, which does not add up to the axis length {dim}.")
    offsets = np.cumsum([0, *lengths])
    index = [slice(None)] * input.ndim
    pieces = []
    for start, stop in zip(offsets[:-1], offsets[1:]):
        index[axis] = slice(int(start), int(stop))
        pieces.append(input[tuple(index)])
    return pieces


@register("ConcatFromSequence", 11)
def concat_from_sequence(input_sequence, *, axis, new_axis=0):
    """Implements ONNX ConcatFromSequence: the sequence's tensors joined along ``axis`` (or
    stacked along a new ``axis`` when ``new_axis`` is 1).

    Example:
        >>> jaxonnx.ops.concat_from_sequence([np.zeros(2), np.ones(2)], axis=0, new_axis=1).shape
        (2, 2)
    """
    if not input_sequence:
        raise OnnxValidationError("got an empty sequence; there is nothing to concatenate.")
    xp = namespace(*input_sequence)
    rank = input_sequence[0].ndim + (1 if new_axis else 0)
    axis = normalize_axis(axis, rank)
    if new_axis:
        return xp.stack(input_sequence, axis=axis)
    return xp.concatenate(input_sequence, axis=axis)


__all__ = ["concat_from_sequence", "split_to_sequence"]
