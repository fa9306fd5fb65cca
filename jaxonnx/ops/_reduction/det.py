"""Det: versions 11 and 22 (22 only adds float16 and bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


# folds=False: numpy's and XLA's LU factorizations round differently; an op gives one answer.
@register("Det", 11, 22, folds=False)
def det(X):
    """Implements ONNX Det: the determinants of the square matrices in the last two dims of ``X``.

    float16 and bfloat16 matrices are factorized in float32 and the determinant rounded
    back. The gradient is the cofactor matrix, also at singular matrices (JAX's rule).

    Args:
        X: a float array of shape ``[*, M, M]``.

    Returns:
        An array of shape ``[*]`` (a scalar for one matrix), of the dtype of ``X``; the
        determinant of a 0x0 matrix is 1.

    Example:
        >>> jaxonnx.ops.det(jnp.array([[[1.0, 2.0], [3.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]]))
        Array([-2.,  6.], dtype=float32)
    """
    if X.ndim < 2 or X.shape[-1] != X.shape[-2]:
        raise OnnxValidationError(f"needs `X` of shape [*, M, M] (square matrices), got shape {tuple(X.shape)}.")
    if X.dtype.itemsize == 2:
        return jnp.linalg.det(X.astype(np.float32)).astype(X.dtype)
    return jnp.linalg.det(X)


__all__ = ["det"]
