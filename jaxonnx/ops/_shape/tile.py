"""Tile: versions 1, 6 and 13 (Tile-1 repeats one axis: inputs `tiles` and `axis`)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis


@register("Tile", 6, 13, static=("repeats",), padding="moves")
def tile(input, repeats):
    """Implements ONNX Tile: ``input`` repeated ``repeats[i]`` times along each axis ``i``.

    Args:
        input: the array to tile.
        repeats: 1-D non-negative integers, one per axis of ``input``. Decides the output
            shape, so it must be known at trace time.

    Returns:
        An array of shape ``input.shape[i] * repeats[i]``.

    Example:
        >>> jaxonnx.ops.tile(jnp.array([[1, 2]]), [2, 2])
        Array([[1, 2, 1, 2],
               [1, 2, 1, 2]], dtype=int32)
    """
    reps = int_list(repeats, name="repeats")
    if np.ndim(repeats) != 1 or len(reps) != input.ndim or min(reps, default=0) < 0:
        raise OnnxValidationError(
            f"got `repeats`={list(reps)} (shape {np.shape(repeats)}) for `input` of shape "
            f"{tuple(input.shape)}; it needs one non-negative count per axis."
        )
    return _tile(input, reps)


@register("Tile", 1, static=("tiles", "axis"), padding="moves")
def _tile_1(input, tiles, axis):
    # Tile-1's `tiles` and `axis` are scalars of the data's type (a float type).
    count, axis = (_whole_number(v, name) for v, name in ((tiles, "tiles"), (axis, "axis")))
    if count < 0:
        raise OnnxValidationError(f"got `tiles`={count}; it must be >= 0.")
    reps = [1] * input.ndim
    reps[normalize_axis(axis, input.ndim, allow_negative=False)] = count
    return _tile(input, reps)


def _whole_number(value, name: str) -> int:
    value = np.asarray(value)
    if value.size != 1 or not np.isfinite(value).all() or value.reshape(()) != np.round(value.reshape(())):
        raise OnnxValidationError(f"needs `{name}` as one whole number, got {value.tolist()}.")
    return int(value.reshape(()))


def _tile(data, reps):
    if all(r == 1 for r in reps):
        return data
    return namespace(data).tile(data, reps)


__all__ = ["tile"]
