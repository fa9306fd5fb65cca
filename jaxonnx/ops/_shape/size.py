"""Size: versions 1, 13, 19, 21, 23, 24 and 25 (each only widens the type list)."""

from __future__ import annotations

import math

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import dims_array


@register("Size", 1, 13, 19, 21, 23, 24, 25, padding="size", shape_only=True)
def size(data):
    """Implements ONNX Size: the number of elements of ``data``, as an int64 scalar.

    Like Shape, the result is an exact numpy value even for a traced ``data``.

    Args:
        data: an array of any element type.

    Returns:
        A 0-D int64 array.

    Example:
        >>> jaxonnx.ops.size(jnp.zeros((2, 3)))
        array(6)
    """
    return dims_array([math.prod(data.shape)]).reshape(())


__all__ = ["size"]
