"""MatMul: versions 1, 9 and 13 (9 adds integer types, 13 bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import matmul_operands
from jaxonnx.ops._helpers.common import namespace


@register("MatMul", 1, 9, 13)
def matmul(A, B):
    """Implements ONNX MatMul: the matrix product of ``A`` and ``B``, as ``numpy.matmul``.

    A 1-D ``A`` is a row vector and a 1-D ``B`` a column vector (that dim is dropped from
    the result); the leading (batch) dims broadcast numpy-style.

    Args:
        A: an array of rank >= 1, ``(..., M, K)``.
        B: an array of rank >= 1 and the dtype of ``A``, ``(..., K, N)``.

    Returns:
        The product, with the dtype of ``A`` (integers wrap around as in numpy).

    Example:
        >>> jaxonnx.ops.matmul(jnp.ones((2, 1, 3, 4)), jnp.ones((5, 4, 2))).shape
        (2, 5, 3, 2)
    """
    a, b, out_shape = matmul_operands(A, B)
    if namespace(A, B) is np:
        return np.matmul(A, B)
    # Equal ranks, so jnp.matmul needs no rank promotion (an error under strict settings).
    y = jnp.matmul(a, b, preferred_element_type=A.dtype)
    return y.reshape(out_shape)


__all__ = ["matmul"]
