"""ArrayFeatureExtractor and FeatureVectorizer (ai.onnx.ml 1): selecting and joining columns."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import is_string_array
from jaxonnx._core.registry import is_traced, register
from jaxonnx._errors import OnnxValidationError

ML = "ai.onnx.ml"


@register("ArrayFeatureExtractor", 1, domain=ML, folds=False)
def array_feature_extractor(X, Y):
    """Implements ONNX ArrayFeatureExtractor (ai.onnx.ml): the columns ``Y`` (along the last
    axis) of ``X``.

    The result has the shape of ``X`` with the last dim replaced by the number of indices;
    a 1-D ``X`` gives one row, as onnxruntime does. Known indices are bounds-checked; a
    traced out-of-range index reads NaN (floats) or the smallest integer, as ``jnp.take``
    fills. String ``X`` runs eagerly.

    Args:
        X: a float, integer or string array.
        Y: int64 indices into the last axis of ``X`` (any shape; they are read flat).

    Returns:
        An array of the dtype of ``X``, of shape ``X.shape[:-1] + (Y.size,)`` (``(1, Y.size)``
        for a 1-D ``X``).

    Example:
        >>> jaxonnx.ops.array_feature_extractor(jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), jnp.array([2, 0]))
        Array([[3., 1.],
               [6., 4.]], dtype=float32)
    """
    if X.ndim == 0:
        raise OnnxValidationError("needs `X` of rank >= 1, got a scalar.")
    shape = (1, Y.size) if X.ndim == 1 else (*X.shape[:-1], Y.size)
    indices = Y.reshape(-1)
    if not is_traced(indices):
        known = np.asarray(indices)
        if known.size and (known.min() < 0 or known.max() >= X.shape[-1]):
            raise OnnxValidationError(f"got the indices `Y`={known.tolist()} for a last axis of length {X.shape[-1]}.")
    if is_string_array(X):
        return X[..., np.asarray(indices)].reshape(shape)
    return jnp.take(X, indices, axis=-1, mode="fill").reshape(shape)


@register("FeatureVectorizer", 1, domain=ML, folds=False)
def feature_vectorizer(*X, inputdimensions=None):
    """Implements ONNX FeatureVectorizer (ai.onnx.ml): the inputs' columns side by side, each
    input cut or zero-padded to its entry of ``inputdimensions``.

    Each input is rows (N, C), or one row (C,), as the text says; the result is float32.

    Args:
        *X: one or more float or integer arrays (all of one dtype) of the same number of rows.
        inputdimensions: the number of columns each input contributes.

    Returns:
        A float32 array (N, sum(inputdimensions)).

    Example:
        >>> jaxonnx.ops.feature_vectorizer(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([[5.0], [6.0]]),
        ...                                inputdimensions=[3, 1])
        Array([[1., 2., 0., 5.],
               [3., 4., 0., 6.]], dtype=float32)
    """
    dims = list(inputdimensions or [])
    if len(dims) != len(X):
        raise OnnxValidationError(f"got {len(X)} inputs and {len(dims)} `inputdimensions`; each input needs one.")
    parts = []
    for index, (x, width) in enumerate(zip(X, dims)):
        if x.ndim not in (1, 2):
            raise OnnxValidationError(f"needs inputs of rank 1 or 2, got input {index} of shape {tuple(x.shape)}.")
        # The text treats a 1-D input as one row [1, C], as onnxruntime does (onnx.reference
        # reads it as a column).
        x = jnp.asarray(x, jnp.float32).reshape(x.shape[0] if x.ndim == 2 else 1, -1)
        if x.shape[1] >= width:
            parts.append(x[:, :width])
        else:
            parts.append(jnp.pad(x, ((0, 0), (0, width - x.shape[1]))))
    rows = {p.shape[0] for p in parts}
    if len(rows) > 1:
        raise OnnxValidationError(f"needs inputs of one number of rows, got {sorted(rows)}.")
    return jnp.concatenate(parts, axis=1)


__all__ = ["array_feature_extractor", "feature_vectorizer"]
