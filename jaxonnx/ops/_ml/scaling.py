"""Scaler, Normalizer, Binarizer and Imputer (ai.onnx.ml 1): elementwise preprocessing."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

ML = "ai.onnx.ml"


def _per_column(values, X, name: str, dtype):
    """One value for every column (the last axis) of ``X``, or one for all."""
    values = np.asarray(values if values is not None else [], dtype).reshape(-1)
    columns = X.shape[-1] if X.ndim else 1
    if len(values) not in (1, columns):
        raise OnnxValidationError(f"got {len(values)} `{name}` for rows of {columns} columns; it needs 1 or {columns}.")
    return jnp.asarray(values).reshape((1,) * max(X.ndim - 1, 0) + (-1,))


@register("Scaler", 1, domain=ML, folds=False)
def scaler(X, *, offset=None, scale=None):
    """Implements ONNX Scaler (ai.onnx.ml): ``(X - offset) * scale`` per column, in float32.

    Args:
        X: float or integer rows; ``offset`` and ``scale`` apply along the last axis.
        offset: one value per column, or one for all (0 when not given).
        scale: one value per column, or one for all (1 when not given).

    Returns:
        A float32 array of the shape of ``X``.

    Example:
        >>> jaxonnx.ops.scaler(jnp.array([[1.0, 2.0], [3.0, 4.0]]), offset=[1.0, 2.0], scale=[0.5, 2.0])
        Array([[0., 0.],
               [1., 4.]], dtype=float32)
    """
    X = X.astype(jnp.float32)
    offset = _per_column(offset if offset is not None else [0.0], X, "offset", np.float32)
    scale = _per_column(scale if scale is not None else [1.0], X, "scale", np.float32)
    return (X - offset) * scale


@register("Normalizer", 1, domain=ML, folds=False)
def normalizer(X, *, norm="MAX"):
    """Implements ONNX Normalizer (ai.onnx.ml): each row divided by its MAX, L1 or L2 norm.

    MAX divides by the row's largest value, L1 by the sum of magnitudes, L2 by the root of
    the sum of squares (the sign stays, as in onnxruntime and scikit-learn; the text's
    ``sqrt(X^2 / sum(X^2))`` would drop it). A row whose norm is 0 stays as it is.

    Args:
        X: float or integer rows (N, C), or one row (C,).
        norm: MAX, L1 or L2.

    Returns:
        Float32 rows of the shape of ``X``.

    Example:
        >>> jaxonnx.ops.normalizer(jnp.array([[3.0, -4.0]]), norm="L2")
        Array([[ 0.6, -0.8]], dtype=float32)
    """
    if X.ndim not in (1, 2):
        raise OnnxValidationError(f"needs `X` of rank 1 or 2, got shape {tuple(X.shape)}.")
    X = X.astype(jnp.float32)
    if norm == "MAX":
        scale = jnp.max(X, axis=-1, keepdims=True)
    elif norm == "L1":
        scale = jnp.sum(jnp.abs(X), axis=-1, keepdims=True)
    elif norm == "L2":
        squares = jnp.sum(X * X, axis=-1, keepdims=True)
        # The root of 1 where the row is 0: the root of 0 has an infinite derivative.
        scale = jnp.where(squares == 0, jnp.zeros_like(squares), jnp.sqrt(jnp.where(squares == 0, 1, squares)))
    else:
        raise OnnxValidationError(f"got `norm`={norm!r}; it is MAX, L1 or L2.")
    zero = scale == 0
    return jnp.where(zero, X, X / jnp.where(zero, jnp.ones_like(scale), scale))


@register("Binarizer", 1, domain=ML, folds=False)
def binarizer(X, *, threshold=0.0):
    """Implements ONNX Binarizer (ai.onnx.ml): 1 where ``X > threshold``, else 0.

    Args:
        X: a float or integer array.
        threshold: the value to exceed.

    Returns:
        An array of the shape and dtype of ``X``.

    Example:
        >>> jaxonnx.ops.binarizer(jnp.array([-1.0, 0.5, 2.0]), threshold=0.5)
        Array([0., 0., 1.], dtype=float32)
    """
    compared = jnp.float64 if X.dtype == jnp.float64 else jnp.float32
    return (X.astype(compared) > jnp.asarray(threshold, compared)).astype(X.dtype)


@register("Imputer", 1, domain=ML, folds=False)
def imputer(
    X, *, imputed_value_floats=None, imputed_value_int64s=None, replaced_value_float=0.0, replaced_value_int64=0
):
    """Implements ONNX Imputer (ai.onnx.ml): the entries equal to the replaced value (NaN
    matches NaN) become the imputed value of their column.

    Float inputs take ``imputed_value_floats`` and ``replaced_value_float``, integer inputs
    ``imputed_value_int64s`` and ``replaced_value_int64``.

    Args:
        X: rows; the imputed values apply along the last axis.
        imputed_value_floats, imputed_value_int64s: one value per column, or one for all.
        replaced_value_float, replaced_value_int64: the value that marks a missing entry.

    Returns:
        An array of the shape and dtype of ``X``.

    Example:
        >>> jaxonnx.ops.imputer(jnp.array([[1.0, jnp.nan], [jnp.nan, 4.0]]), imputed_value_floats=[7.0, 8.0],
        ...                     replaced_value_float=float("nan"))
        Array([[1., 8.],
               [7., 4.]], dtype=float32)
    """
    floating = jnp.issubdtype(X.dtype, jnp.floating)
    values, replaced = (
        (imputed_value_floats, replaced_value_float) if floating else (imputed_value_int64s, replaced_value_int64)
    )
    if not values:
        raise OnnxValidationError(
            f"needs `imputed_value_{'floats' if floating else 'int64s'}` for an input of dtype {X.dtype}, got none."
        )
    imputed = _per_column(values, X, "imputed values", np.float64 if floating else np.int64).astype(X.dtype)
    if floating and np.isnan(replaced):
        missing = jnp.isnan(X)
    else:
        missing = X == jnp.asarray(replaced, X.dtype)
    return jnp.where(missing, imputed, X)


__all__ = ["binarizer", "imputer", "normalizer", "scaler"]
