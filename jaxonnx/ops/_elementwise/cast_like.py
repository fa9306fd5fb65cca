"""CastLike: versions 15, 19, 21, 23, 24 and 25 (19 adds `saturate`, 24 `round_mode`)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.casting import cast_to


@register("CastLike", 15, 19, 21, 23, 24, 25, padding="elementwise", keeps_non_zeros="bool")
def cast_like(input, target_type, *, saturate: int = 1, round_mode: str = "up"):
    """Implements ONNX CastLike: ``input`` cast to the element type of ``target_type``.

    The rules are Cast's (see :func:`jaxonnx.ops.cast`); only the dtype of ``target_type``
    is read. Before version 19 (no ``saturate``) float8 casts saturate.

    Args:
        input: an array.
        target_type: an array whose element type the result takes (its values are not read).
        saturate: for float8 targets: 1 saturates, 0 gives NaN (or inf for float8e5m2).
        round_mode: for float8e8m0: "up" (the default), "down" or "nearest".

    Returns:
        The converted array.

    Example:
        >>> jaxonnx.ops.cast_like(jnp.array([1.7, -2.5]), jnp.zeros(1, jnp.int8))
        Array([ 1, -2], dtype=int8)
    """
    dtype = np.dtype(target_type.dtype)
    target = "string" if dtype.kind in "OUS" else onnx_type_name(dtype)
    return cast_to(input, target, saturate=saturate, round_mode=round_mode)


__all__ = ["cast_like"]
