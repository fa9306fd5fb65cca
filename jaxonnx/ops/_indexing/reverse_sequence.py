"""ReverseSequence: versions 10 and 28 (28 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced, namespace


@register("ReverseSequence", 10, 28, concrete=("sequence_lens",))
def reverse_sequence(input, sequence_lens, *, batch_axis: int = 1, time_axis: int = 0, checks=None):
    """Implements ONNX ReverseSequence: each batch entry's first ``sequence_lens[b]`` steps reversed.

    Steps at and past ``sequence_lens[b]`` are copied unchanged. The result is one gather
    along ``time_axis`` with a per-batch reversed index, so ``sequence_lens`` may be traced
    (under ``jax.jit`` or ``jax.vmap``) and the gradient in ``input`` is exact (each
    element moves, none is combined).

    A concrete length outside ``[0, T]`` (``T`` the time dim) raises, naming the value and
    its batch entry; a traced one is clipped into ``[0, T]`` (its value is unknown at
    trace time), as gathers clamp traced indices, and its check is made after the
    computation where ``checks`` is given.

    Args:
        input: an array of rank >= 2.
        sequence_lens: int64 lengths, shape ``(batch,)``.
        batch_axis: the batch axis, 0 or 1.
        time_axis: the time axis, 1 or 0 (the other one).
        checks: where the check of traced ``sequence_lens`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        An array of the shape and dtype of ``input``.

    Example:
        >>> jaxonnx.ops.reverse_sequence(jnp.arange(8.).reshape(2, 4), np.array([3, 1]), batch_axis=0, time_axis=1)
        Array([[2., 1., 0., 3.],
               [4., 5., 6., 7.]], dtype=float32)
    """
    if input.ndim < 2:
        raise OnnxValidationError(f"needs `input` of rank >= 2, got shape {tuple(input.shape)}.")
    if (batch_axis, time_axis) not in ((0, 1), (1, 0)):
        raise OnnxValidationError(
            f"got `batch_axis`={batch_axis} and `time_axis`={time_axis}; one must be 0 and the other 1."
        )
    batch, steps = input.shape[batch_axis], input.shape[time_axis]
    if tuple(sequence_lens.shape) != (batch,):
        raise OnnxValidationError(
            f"needs `sequence_lens` of shape ({batch},) (the batch dim {batch_axis} of `input` "
            f"{tuple(input.shape)}), got shape {tuple(sequence_lens.shape)}."
        )
    index_type = np.int32 if steps < 2**31 else np.int64
    time = np.arange(steps, dtype=index_type)
    message = (
        f"got `sequence_lens`[{{position[0]}}]={{value}}, outside [0, {steps}] (the time dim "
        f"{time_axis} of `input` {tuple(input.shape)})."
    )
    if is_traced(sequence_lens):
        if checks is not None:
            checks.fail_where((sequence_lens < 0) | (sequence_lens > steps), sequence_lens, message)
        lengths = jnp.clip(sequence_lens, 0, steps).astype(index_type)[:, None]
        source = jnp.where(time[None, :] < lengths, lengths - 1 - time[None, :], time[None, :])
    else:
        lengths = np.asarray(sequence_lens)
        bad = (lengths < 0) | (lengths > steps)
        if bad.any():
            b = int(np.flatnonzero(bad)[0])
            raise OnnxValidationError(message.format(value=lengths[b], position=(b,)))
        lengths = lengths.astype(index_type)[:, None]
        source = np.where(time[None, :] < lengths, lengths - 1 - time[None, :], time[None, :])
    # `source` is (batch, time); laid out as `input`'s axes, with ones for the other dims.
    source = source if batch_axis == 0 else source.T
    source = source.reshape(source.shape + (1,) * (input.ndim - 2))
    xp = namespace(input, source)
    if xp is np:
        return np.take_along_axis(input, source, axis=time_axis)
    # Every index is in range (built above), so the gather needs no bounds masking.
    return jnp.take_along_axis(input, source, axis=time_axis, mode="promise_in_bounds")


__all__ = ["reverse_sequence"]
