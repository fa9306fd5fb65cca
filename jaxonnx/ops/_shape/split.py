"""Split: versions 1, 2, 11, 13 and 18.

The lengths of the parts come from ``split`` (an attribute in 1, 2 and 11; an input in 1,
13 and 18) or, in 18, from ``num_outputs``. Before 18, without ``split``, ONNX splits into
as many equal parts as the node has outputs: the adapters take an ``output_count`` parameter
and get that count from the node (through the op context); called by hand
without it, they refuse the case with an error that says so.
"""

from __future__ import annotations

import builtins

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, normalize_axis


@register("Split", 18, static=("split",), padding="moves", layout="along_axis")
def split(input, split=None, *, axis: int = 0, num_outputs: int | None = None):
    """Implements ONNX Split: ``input`` cut into consecutive parts along ``axis``.

    Args:
        input: an array of rank >= 1.
        split: 1-D non-negative lengths of the parts, summing to the length of ``axis``.
            Decides the output shapes, so it must be known at trace time.
        axis: the axis to cut, in ``[-rank, rank - 1]``.
        num_outputs: instead of ``split``, the number of parts: each has
            ``ceil(length / num_outputs)`` slices, the last ones fewer (as in onnx.reference,
            down to 0 when the length is too short).

    Returns:
        A tuple of arrays, one per part.

    Example:
        >>> [p.shape for p in jaxonnx.ops.split(jnp.zeros((5, 2)), num_outputs=2)]
        [(3, 2), (2, 2)]
    """
    if (split is None) == (num_outputs is None):
        raise OnnxValidationError(
            f"needs exactly one of the input `split` and the attribute `num_outputs`, got "
            f"{'both' if split is not None else 'neither'}."
        )
    return _split(input, _lengths(split), axis, num_outputs=num_outputs, allow_negative=True)


@register("Split", 13, static=("split",), padding="moves", layout="along_axis")
def _split_13(input, split=None, *, axis=0, output_count=None):
    return _split(input, _lengths(split), axis, output_count=output_count, allow_negative=True)


@register("Split", 11, padding="moves")
def _split_11(input, *, axis=0, split=None, output_count=None):
    return _split(input, split, axis, output_count=output_count, allow_negative=True)


@register("Split", 2, padding="moves")
def _split_2(input, *, axis=0, split=None, output_count=None):
    return _split(input, split, axis, output_count=output_count, allow_negative=False)


@register("Split", 1, static=("split",), padding="moves")
def _split_1(input, split_input=None, *, axis=None, split=None, output_count=None):
    # Split-1 takes `split` as an input (of the data's float type) or as an attribute.
    lengths = split if split_input is None else _whole_numbers(split_input)
    return _split(input, lengths, 0 if axis is None else axis, output_count=output_count, allow_negative=False)


def _lengths(split):
    if split is None:
        return None
    if np.ndim(split) != 1:
        raise OnnxValidationError(f"needs a 1-D `split`, got shape {np.shape(split)}.")
    return int_list(split, name="split")


def _whole_numbers(split):
    values = np.asarray(split).reshape(-1)
    if np.ndim(split) != 1 or not np.all(np.isfinite(values) & (values == np.round(values))):
        raise OnnxValidationError(f"needs `split` as 1-D whole numbers, got {np.asarray(split).tolist()}.")
    return [int(v) for v in values]


def _split(data, lengths, axis, *, num_outputs=None, output_count=None, allow_negative):
    if data.ndim == 0:
        raise OnnxValidationError("needs `input` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, data.ndim, allow_negative=allow_negative)
    dim = data.shape[axis]
    if lengths is None and num_outputs is None:
        if output_count is None:
            raise OnnxValidationError(
                "got no `split`, so the parts would be as many as the node's outputs, which jaxonnx "
                "cannot see yet (the op contract does not pass the output count). Give `split`."
            )
        if output_count < 1 or dim % output_count:
            raise OnnxValidationError(
                f"cannot split axis {axis} of length {dim} (`input` shape {tuple(data.shape)}) into "
                f"{output_count} equal parts, one per output; give `split`."
            )
        lengths = [dim // output_count] * output_count
    if num_outputs is not None:
        if num_outputs < 1:
            raise OnnxValidationError(f"got `num_outputs`={num_outputs}; it must be >= 1.")
        chunk = -(-dim // num_outputs)
        lengths = [max(0, min(chunk, dim - i * chunk)) for i in range(num_outputs)]
    lengths = [int(n) for n in lengths]
    if not lengths or min(lengths) < 0 or sum(lengths) != dim:
        raise OnnxValidationError(
            f"got `split`={lengths}; it needs one or more non-negative lengths summing to {dim}, "
            f"the length of axis {axis} of `input` (shape {tuple(data.shape)})."
        )
    index = [builtins.slice(None)] * data.ndim
    parts, start = [], 0
    for n in lengths:
        index[axis] = builtins.slice(start, start + n)
        parts.append(data[tuple(index)])
        start += n
    return tuple(parts)


__all__ = ["split"]
