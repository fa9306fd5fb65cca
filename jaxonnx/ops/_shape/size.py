"""Size: versions 1, 13, 19, 21, 23, 24 and 25 (each only widens the type list)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, as_tuple, length_marks
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import dims_array


def _on_padding(call: Call):
    """Size's rule on padding: the size of a marked value is a length whose real value counts
    the real entries only."""
    data = call.args[0]
    axes = call.axis_marks(0)
    results = as_tuple(call.run(call.args))
    if not axes:
        return results, [None]
    real = jnp.asarray(1, jnp.asarray(results[0]).dtype)
    for d, n in enumerate(np.shape(data)):
        real = real * (axes[d].count.astype(real.dtype) if d in axes else n)  # counts are int32
    return results, [length_marks(np.ones((), bool), real, next(iter(axes.values())))]


@register("Size", 1, 13, 19, 21, 23, 24, 25, padding=_on_padding, shape_only=True)
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
