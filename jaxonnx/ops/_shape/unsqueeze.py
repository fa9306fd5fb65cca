"""Unsqueeze: versions 1, 11, 13, 21, 23, 24 and 25 (`axes` is an attribute before 13)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list


@register("Unsqueeze", 13, 21, 23, 24, 25, static=("axes",), padding="moves", keeps_non_zeros=True)
def unsqueeze(data, axes):
    """Implements ONNX Unsqueeze: ``data`` with size-1 dims inserted at ``axes`` of the output.

    Args:
        data: an array.
        axes: integers in ``[-r, r - 1]`` for the output rank ``r = rank + len(axes)``, each
            once, in any order. Decides the output shape, so it must be known at trace time.

    Returns:
        ``data`` reshaped with the new dims.

    Example:
        >>> jaxonnx.ops.unsqueeze(jnp.zeros((3, 4)), [2, 0]).shape
        (1, 3, 1, 4)
    """
    return _unsqueeze(data, int_list(axes, name="axes"), allow_negative=True)


@register("Unsqueeze", 11, padding="moves", keeps_non_zeros=True)
def _unsqueeze_11(data, *, axes):
    return _unsqueeze(data, axes, allow_negative=True)


@register("Unsqueeze", 1, padding="moves", keeps_non_zeros=True)
def _unsqueeze_1(data, *, axes):
    return _unsqueeze(data, axes, allow_negative=False)


def _unsqueeze(data, axes, *, allow_negative):
    rank = data.ndim + len(axes)
    lower = -rank if allow_negative else 0
    if not all(lower <= a < rank for a in axes):
        raise OnnxValidationError(
            f"got `axes`={list(axes)} for `data` of rank {data.ndim}; the output has rank {rank}, so "
            f"each axis must be in [{lower}, {rank - 1}]."
        )
    axes = [int(a) % rank for a in axes]
    if len(set(axes)) != len(axes):
        raise OnnxValidationError(f"got repeated `axes` {axes}; each axis may appear once.")
    dims = iter(data.shape)
    return data.reshape(tuple(1 if d in axes else next(dims) for d in range(rank)))


__all__ = ["unsqueeze"]
