"""Expand: versions 8 and 13 (13 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, moves
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace


def _on_padding(call: Call):
    """Expand's rule on padding: the values move (``"moves"``), and a padded length in the
    broadcast shape (aligned to the output's last axes) marks the axis it sizes at the real
    length."""
    return moves(call, lengths_as="broadcast_shape")


@register("Expand", 8, 13, static=("shape",), padding=_on_padding)
def expand(input, shape):
    """Implements ONNX Expand: ``input`` broadcast with ``shape`` (numpy's rules, both ways).

    Differs from ``jnp.broadcast_to``: the output shape is the broadcast of ``input.shape``
    and ``shape``, so a 1 in ``shape`` keeps a larger dim of ``input`` and ``shape`` may be
    shorter than the rank of ``input``. ``shape`` decides the output shape, so it must be
    known at trace time.

    A 0-D ``shape`` is read as one dim, as onnxruntime reads it (the operator text asks
    for 1-D).

    Args:
        input: the array to broadcast.
        shape: 1-D non-negative integers (or one, 0-D).

    Returns:
        The broadcast array, with the dtype of ``input``.

    Example:
        >>> jaxonnx.ops.expand(jnp.array([[1], [2]]), [1, 3])
        Array([[1, 1, 1],
               [2, 2, 2]], dtype=int32)
    """
    if np.ndim(shape) == 0:  # onnxruntime reads a scalar shape as one dim
        shape = np.reshape(shape, (1,))
    if np.ndim(shape) != 1:
        raise OnnxValidationError(f"needs a 1-D `shape`, got shape {np.shape(shape)}.")
    dims = int_list(shape, name="shape")
    if min(dims, default=0) < 0:
        raise OnnxValidationError(f"got `shape`={list(dims)}; its dims must be >= 0.")
    try:
        # jnp's version also takes the symbolic dims of `jax.export`.
        out_shape = jnp.broadcast_shapes(tuple(input.shape), dims)
    except ValueError:
        raise OnnxValidationError(
            f"cannot broadcast `input` of shape {tuple(input.shape)} with `shape`={list(dims)}."
        ) from None
    if tuple(out_shape) == tuple(input.shape):
        return input
    return namespace(input).broadcast_to(input, out_shape)


__all__ = ["expand"]
