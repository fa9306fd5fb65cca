"""EyeLike: versions 9 and 22 (22 only adds bfloat16, to the input and the output `dtype`)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import numpy_dtype, onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.casting import schema_types


@register("EyeLike", 22, shape_only=True)
def eye_like(input, *, dtype: int | None = None, k: int = 0):
    """Implements ONNX EyeLike: a matrix of the shape of ``input`` with ones on diagonal ``k``.

    Only the shape of ``input`` is read, never its values, so the result is numpy (like
    :func:`constant_of_shape`): it is known at trace time, also under ``jax.jit``, and
    everything computed from it stays exact. A ``k`` beyond the matrix gives all zeros.

    Args:
        input: a rank-2 array; its shape is the output shape.
        dtype: an ONNX ``TensorProto.DataType`` code for the output; defaults to the dtype
            of ``input``.
        k: the diagonal holding the ones: ``out[i, i + k] = 1``; positive is above the main
            diagonal, negative below.

    Returns:
        A numpy array of the shape of ``input``.

    Example:
        >>> jaxonnx.ops.eye_like(jnp.zeros((2, 3)), k=1)
        array([[0., 1., 0.],
               [0., 0., 1.]], dtype=float32)
    """
    return _eye_like(input, dtype, k, version=22)


@register("EyeLike", 9, shape_only=True)
def _eye_like_9(input, *, dtype=None, k=0):
    return _eye_like(input, dtype, k, version=9)


def _eye_like(input, dtype, k, *, version: int):
    if input.ndim != 2:
        raise OnnxValidationError(f"needs a rank-2 `input`, got shape {tuple(input.shape)}.")
    out_dtype = np.dtype(input.dtype) if dtype is None else numpy_dtype(dtype)
    allowed = schema_types("EyeLike", version, "T2")
    if onnx_type_name(out_dtype) not in allowed:
        raise OnnxTypeError(
            f"got `dtype`={dtype} (tensor({onnx_type_name(out_dtype)})); the output may be one of "
            f"{', '.join(sorted(allowed))}."
        )
    rows, cols = input.shape
    return np.eye(rows, cols, k=k, dtype=out_dtype)


__all__ = ["eye_like"]
