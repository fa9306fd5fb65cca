"""Transpose: versions 1, 13, 21, 23, 24 and 25 (each only widens the type list)."""

from __future__ import annotations

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace


@register("Transpose", 1, 13, 21, 23, 24, 25, padding="moves", keeps_non_zeros=True)
def transpose(data, *, perm=None):
    """Implements ONNX Transpose: the axes of ``data`` permuted by ``perm``.

    Args:
        data: an array.
        perm: output axis ``i`` is input axis ``perm[i]``; a permutation of ``0 ... rank - 1``
            (negative entries are refused, as in onnx's shape inference). Defaults to the
            reversed axes.

    Returns:
        The transposed array.

    Example:
        >>> jaxonnx.ops.transpose(jnp.zeros((2, 3, 4)), perm=[1, 2, 0]).shape
        (3, 4, 2)
    """
    rank = data.ndim
    perm = tuple(range(rank))[::-1] if perm is None else tuple(int(p) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise OnnxValidationError(
            f"got `perm`={list(perm)} for an input of rank {rank}; it must be a permutation of {list(range(rank))}."
        )
    if perm == tuple(range(rank)):
        return data
    return namespace(data).transpose(data, perm)


__all__ = ["transpose"]
