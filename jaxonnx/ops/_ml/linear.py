"""LinearClassifier and LinearRegressor (ai.onnx.ml 1): a matrix product plus intercepts."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.ml import binary_scores, class_labels, labels_at
from jaxonnx.ops._helpers.ml import post_transform as transformed

ML = "ai.onnx.ml"


def _rows(X):
    """``X`` as float32 rows: a 1-D input is one row (the scores are float, as the schema says)."""
    if X.ndim not in (1, 2):
        raise OnnxValidationError(f"needs `X` of rank 1 or 2, got shape {tuple(X.shape)}.")
    return jnp.atleast_2d(jnp.asarray(X, jnp.float32))


def _weights(coefficients, intercepts, count: int, features: int, what: str):
    coefficients = np.asarray(coefficients, np.float32)
    if coefficients.size != count * features:
        raise OnnxValidationError(
            f"got {coefficients.size} `coefficients` for {count} {what} of {features} features "
            f"(it needs {count * features})."
        )
    intercepts = np.zeros(count, np.float32) if intercepts is None else np.asarray(intercepts, np.float32)
    if intercepts.size != count:
        raise OnnxValidationError(f"got {intercepts.size} `intercepts` for {count} {what}.")
    return coefficients.reshape(count, features), intercepts


@register("LinearClassifier", 1, domain=ML, folds=False)
def linear_classifier(
    X,
    *,
    coefficients,
    classlabels_ints=None,
    classlabels_strings=None,
    intercepts=None,
    multi_class=0,
    post_transform="NONE",
):
    """Implements ONNX LinearClassifier (ai.onnx.ml): ``X @ coefficients.T + intercepts``, the
    post transform, and the label of the best class.

    With one row of coefficients and two class labels (a binary model), the label is the
    second one where the raw score ``s`` is positive, and the scores are ``[1 - p, p]``
    with ``p`` the LOGISTIC or PROBIT of ``s``, else ``s`` itself, as onnxruntime writes them.

    Args:
        X: float or integer rows (N, F), or one row (F,); computed in float32.
        coefficients: C * F floats, one row per class.
        classlabels_ints, classlabels_strings: the class labels (exactly one of the two).
        intercepts: C floats (0 when not given).
        multi_class: unused, as in onnxruntime.
        post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT.

    Returns:
        ``(Y, Z)``: the labels (N,), int64 or string, and the float32 scores (N, C).

    Example:
        >>> y, z = jaxonnx.ops.linear_classifier(jnp.array([[1.0, 2.0]]), coefficients=[1.0, 0.0, 0.0, 1.0],
        ...                                      classlabels_ints=[7, 8], intercepts=[0.0, 0.5])
        >>> y, z
        (Array([8], dtype=int32), Array([[1. , 2.5]], dtype=float32))
    """
    rows = _rows(X)
    labels = class_labels(classlabels_ints, classlabels_strings)
    # onnxruntime counts the classes by the intercepts; without them, by the coefficient rows.
    count = len(intercepts) if intercepts is not None else np.size(coefficients) // max(rows.shape[1], 1)
    weights, bias = _weights(coefficients, intercepts, count, rows.shape[1], "classes")
    scores = rows @ weights.T + bias[None, :]
    if count == 1 and len(labels) == 2:
        # A binary model: one score, for the second class.
        label = labels_at(labels, (scores[:, 0] > 0).astype(jnp.int32))
        return label, binary_scores(scores[:, 0], post_transform)
    if count != len(labels):
        raise OnnxValidationError(f"has {count} classes in its coefficients but {len(labels)} class labels.")
    probabilities = transformed(scores, post_transform)
    return labels_at(labels, jnp.argmax(scores, axis=1)), probabilities


@register("LinearRegressor", 1, domain=ML, folds=False)
def linear_regressor(X, *, coefficients=None, intercepts=None, post_transform="NONE", targets=1):
    """Implements ONNX LinearRegressor (ai.onnx.ml): ``X @ coefficients.T + intercepts``, then
    the post transform.

    Args:
        X: float or integer rows (N, F), or one row (F,); computed in float32.
        coefficients: targets * F floats, one row per target.
        intercepts: ``targets`` floats (0 when not given).
        post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT.
        targets: the number of regression targets.

    Returns:
        The float32 predictions (N, targets).

    Example:
        >>> jaxonnx.ops.linear_regressor(jnp.array([[1.0, 2.0], [3.0, 4.0]]), coefficients=[0.5, 1.0],
        ...                              intercepts=[1.0])
        Array([[3.5],
               [6.5]], dtype=float32)
    """
    rows = _rows(X)
    if coefficients is None:
        raise OnnxValidationError("needs `coefficients`, which was not given.")
    weights, bias = _weights(coefficients, intercepts, targets, rows.shape[1], "targets")
    return transformed(rows @ weights.T + bias[None, :], post_transform)


__all__ = ["linear_classifier", "linear_regressor"]
