"""StringConcat: version 20."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import as_str_array
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import broadcast_together


@register("StringConcat", 20)
def string_concat(X, Y):
    """Implements ONNX StringConcat: ``X`` and ``Y`` concatenated elementwise.

    The inputs broadcast as numpy's arrays do. Strings run eagerly only (numpy object
    arrays of ``str``; JAX cannot hold strings).

    Args:
        X: a string array.
        Y: a string array that broadcasts with ``X``.

    Returns:
        An object array of ``str`` of the broadcast shape.

    Example:
        >>> jaxonnx.ops.string_concat(np.array(["cat", "dog"], object), np.array(["s"], object))
        array(['cats', 'dogs'], dtype=object)
    """
    X, Y = broadcast_together(as_str_array(X), as_str_array(Y), names=("X", "Y"))
    X, Y = np.broadcast_arrays(X, Y)
    joined = [x + y for x, y in zip(X.reshape(-1), Y.reshape(-1))]
    return np.array(joined, dtype=object).reshape(X.shape)


__all__ = ["string_concat"]
