"""MatMul: versions 1, 9 and 13 (9 adds integer types, 13 bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register
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
    if A.ndim == 0 or B.ndim == 0:
        raise OnnxValidationError(f"needs `A` and `B` of rank >= 1, got shapes {tuple(A.shape)} and {tuple(B.shape)}.")
    a_shape = (1,) + tuple(A.shape) if A.ndim == 1 else tuple(A.shape)
    b_shape = tuple(B.shape) + (1,) if B.ndim == 1 else tuple(B.shape)
    try:
        batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        batch = None
    if a_shape[-1] != b_shape[-2] or batch is None:
        raise OnnxValidationError(
            f"cannot multiply `A` of shape {tuple(A.shape)} by `B` of shape {tuple(B.shape)}: the last dim "
            "of `A` must equal the second-to-last of `B` (the only dim of a 1-D operand), and the "
            "leading dims must broadcast."
        )
    if namespace(A, B) is np:
        return np.matmul(A, B)
    # Equal ranks, so jnp.matmul needs no rank promotion (an error under strict settings).
    rank = max(len(a_shape), len(b_shape))
    a = A.reshape((1,) * (rank - len(a_shape)) + a_shape)
    b = B.reshape((1,) * (rank - len(b_shape)) + b_shape)
    y = jnp.matmul(a, b, preferred_element_type=A.dtype)
    out_shape = batch + a_shape[-2:-1] * (A.ndim > 1) + b_shape[-1:] * (B.ndim > 1)
    return y.reshape(out_shape)


__all__ = ["matmul"]
