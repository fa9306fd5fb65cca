"""SVMClassifier and SVMRegressor (ai.onnx.ml 1): kernel machines, as libsvm evaluates them.

The classifier is libsvm's one-against-one scheme: one decision value per pair of classes
from the kernel values of the two classes' support vectors, a vote per pair, and, with
``prob_a``/``prob_b``, Platt's sigmoid per pair coupled into class probabilities by
libsvm's iterative method (a ``lax.while_loop`` here, each row stopping on its own).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.ml import class_labels, labels_at
from jaxonnx.ops._helpers.ml import post_transform as transformed

ML = "ai.onnx.ml"
KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")


def _rows(X):
    if X.ndim not in (1, 2):
        raise OnnxValidationError(f"needs `X` of rank 1 or 2, got shape {tuple(X.shape)}.")
    X = jnp.atleast_2d(X)
    return X.astype(jnp.float64 if X.dtype == jnp.float64 else jnp.float32)


def kernel(X, vectors, kernel_type: str, kernel_params):
    """The kernel of every row with every vector, ``[rows, vectors]``; ``kernel_params`` is
    ``[gamma, coef0, degree]``."""
    gamma, coef0, degree = (list(kernel_params or []) + [0.0, 0.0, 0.0])[:3]
    vectors = jnp.asarray(vectors, X.dtype)
    if kernel_type == "RBF":
        differences = X[:, None, :] - vectors[None, :, :]
        return jnp.exp(-gamma * jnp.sum(differences * differences, axis=-1))
    dots = X @ vectors.T
    if kernel_type == "LINEAR":
        return dots
    if kernel_type == "POLY":
        return (gamma * dots + coef0) ** int(degree)
    if kernel_type == "SIGMOID":
        return jnp.tanh(gamma * dots + coef0)
    raise OnnxValidationError(f"got `kernel_type`={kernel_type!r}; it is one of {', '.join(KERNELS)}.")


def _coupled_probabilities(pairwise, classes: int):
    """libsvm's ``multiclass_probability``: class probabilities from the pairwise ones
    ``pairwise[row, i, j]`` (the probability of i against j), per row until its error is
    below ``0.005 / classes`` or after ``max(100, classes)`` rounds."""
    r = pairwise
    Q = jnp.stack(
        [
            jnp.stack(
                [
                    jnp.sum(jnp.stack([r[:, s, t] ** 2 for s in range(classes) if s != t]), axis=0)
                    if t == u
                    else -r[:, u, t] * r[:, t, u]
                    for u in range(classes)
                ],
                axis=-1,
            )
            for t in range(classes)
        ],
        axis=1,
    )  # [rows, t, u]
    limit, eps = max(100, classes), 0.005 / classes
    P = jnp.full(r.shape[:1] + (classes,), 1.0 / classes, r.dtype)

    def error(P):
        Qp = jnp.einsum("rtu,ru->rt", Q, P)
        pQp = jnp.sum(P * Qp, axis=1, keepdims=True)
        return jnp.max(jnp.abs(Qp - pQp), axis=1)

    def sweep(state):
        P, done, rounds = state
        Qp = jnp.einsum("rtu,ru->rt", Q, P)
        pQp = jnp.sum(P * Qp, axis=1)
        new_P = P
        for t in range(classes):
            diff = (-Qp[:, t] + pQp) / Q[:, t, t]
            new_P = new_P.at[:, t].add(diff)
            pQp = (pQp + diff * (diff * Q[:, t, t] + 2 * Qp[:, t])) / (1 + diff) ** 2
            new_P = new_P / (1 + diff)[:, None]
            Qp = (Qp + diff[:, None] * Q[:, t, :]) / (1 + diff)[:, None]
        P = jnp.where(done[:, None], P, new_P)
        return P, done | (error(P) < eps), rounds + 1

    def going(state):
        _, done, rounds = state
        return (rounds < limit) & ~jnp.all(done)

    P, _, _ = jax.lax.while_loop(going, sweep, (P, error(P) < eps, 0))
    return P


@register("SVMClassifier", 1, domain=ML, folds=False)
def svm_classifier(
    X,
    *,
    classlabels_ints=None,
    classlabels_strings=None,
    coefficients=None,
    kernel_params=None,
    kernel_type="LINEAR",
    post_transform="NONE",
    prob_a=None,
    prob_b=None,
    rho=None,
    support_vectors=None,
    vectors_per_class=None,
):
    """Implements ONNX SVMClassifier (ai.onnx.ml): a support vector classifier, one against one.

    With support vectors (``vectors_per_class``), each pair of classes ``i < j`` has the
    decision value ``rho[pair] + sum(coef * kernel)`` over both classes' vectors; a
    positive value votes for ``i``, else for ``j``; the label is the class with most votes
    (the first of equals). The scores are the pairwise decision values, or, with
    ``prob_a``/``prob_b``, the coupled Platt probabilities. Without support vectors it is
    linear: one score ``rho[0] + X @ coefficients[class]`` per class. A binary model without
    probabilities scores ``[-d, d]`` for its decision value ``d``, as onnxruntime does.

    Args:
        X: float or integer rows (N, F), or one row (F,).
        classlabels_ints, classlabels_strings: the class labels (exactly one of the two).
        coefficients: the dual coefficients, (classes - 1) x vectors (linear: classes x F).
        kernel_params: ``[gamma, coef0, degree]``.
        kernel_type: LINEAR, POLY, RBF or SIGMOID.
        post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT.
        prob_a, prob_b: Platt's sigmoid per pair of classes (probabilities when given).
        rho: the intercept per pair of classes.
        support_vectors: the vectors, flat, grouped by class.
        vectors_per_class: how many vectors each class has.

    Returns:
        ``(Y, Z)``: the labels (N,), int64 or string, and the float32 scores.

    Example:
        >>> y, z = jaxonnx.ops.svm_classifier(jnp.array([[1.0, 0.0], [0.0, 1.0]]), classlabels_ints=[0, 1, 2],
        ...     coefficients=[1.0, 0.0, 0.0, 1.0, 0.0, 0.0], rho=[0.0])
        >>> y
        Array([0, 1], dtype=int32)
    """
    rows = _rows(X)
    labels = class_labels(classlabels_ints, classlabels_strings)
    classes = len(labels)
    coefficients = np.asarray(coefficients or [], np.float64)
    rho = np.asarray(rho or [0.0], np.float64)
    counts = np.asarray(vectors_per_class or [], np.int64)
    vectors = int(counts.sum())
    if vectors == 0:
        weights = coefficients.reshape(classes, -1) if coefficients.size else np.zeros((classes, rows.shape[1]))
        scores = float(rho[0]) + rows @ jnp.asarray(weights, rows.dtype).T
        return labels_at(labels, jnp.argmax(scores, axis=1)), transformed(scores, post_transform).astype(jnp.float32)
    if len(counts) != classes:
        raise OnnxValidationError(f"got {len(counts)} `vectors_per_class` for {classes} classes.")
    support = np.asarray(support_vectors or [], np.float64)
    if support.size != vectors * rows.shape[1]:
        raise OnnxValidationError(
            f"got {support.size} `support_vectors` values for {vectors} vectors of {rows.shape[1]} features."
        )
    if coefficients.size != (classes - 1) * vectors:
        raise OnnxValidationError(
            f"got {coefficients.size} `coefficients` for {classes - 1} x {vectors} dual coefficients."
        )
    pairs = [(i, j) for i in range(classes) for j in range(i + 1, classes)]
    if len(rho) != len(pairs):
        raise OnnxValidationError(f"got {len(rho)} `rho` for {len(pairs)} pairs of classes.")
    K = kernel(rows, support.reshape(vectors, -1), kernel_type, kernel_params)
    coefs = jnp.asarray(coefficients.reshape(classes - 1, vectors), rows.dtype)
    starts = np.concatenate([[0], np.cumsum(counts)])
    decisions = []
    for pair, (i, j) in enumerate(pairs):
        span_i, span_j = slice(starts[i], starts[i + 1]), slice(starts[j], starts[j + 1])
        decisions.append(float(rho[pair]) + K[:, span_i] @ coefs[j - 1, span_i] + K[:, span_j] @ coefs[i, span_j])
    decisions = jnp.stack(decisions, axis=1)  # [rows, pairs]
    votes = jnp.zeros((rows.shape[0], classes), jnp.int32)
    for pair, (i, j) in enumerate(pairs):
        wins = decisions[:, pair] > 0
        votes = votes.at[:, i].add(wins.astype(jnp.int32)).at[:, j].add((~wins).astype(jnp.int32))
    label = labels_at(labels, jnp.argmax(votes, axis=1))
    if prob_a:
        a, b = np.asarray(prob_a, np.float64), np.asarray(prob_b or [], np.float64)
        if len(a) != len(pairs) or len(b) != len(pairs):
            raise OnnxValidationError(f"got {len(a)} `prob_a` and {len(b)} `prob_b` for {len(pairs)} pairs of classes.")
        # Platt's sigmoid, clipped away from 0 and 1 as libsvm does.
        platt = jnp.clip(
            jax.nn.sigmoid(-(decisions * jnp.asarray(a, rows.dtype)[None, :] + jnp.asarray(b, rows.dtype)[None, :])),
            1e-7,
            1 - 1e-7,
        )
        pairwise = jnp.zeros((rows.shape[0], classes, classes), rows.dtype)
        for pair, (i, j) in enumerate(pairs):
            pairwise = pairwise.at[:, i, j].set(platt[:, pair]).at[:, j, i].set(1 - platt[:, pair])
        return label, transformed(_coupled_probabilities(pairwise, classes), post_transform).astype(jnp.float32)
    if classes == 2:
        decision = decisions[:, 0]
        if post_transform == "LOGISTIC":
            pair_scores = jnp.stack([jax.nn.sigmoid(-decision), jax.nn.sigmoid(decision)], axis=1)
        else:
            pair_scores = transformed(jnp.stack([-decision, decision], axis=1), post_transform)
        return label, pair_scores.astype(jnp.float32)
    return label, transformed(decisions, post_transform).astype(jnp.float32)


@register("SVMRegressor", 1, domain=ML, folds=False)
def svm_regressor(
    X,
    *,
    coefficients=None,
    kernel_params=None,
    kernel_type="LINEAR",
    n_supports=0,
    one_class=0,
    post_transform="NONE",
    rho=None,
    support_vectors=None,
):
    """Implements ONNX SVMRegressor (ai.onnx.ml): ``rho[0] + sum(coefficients * kernel(X, vectors))``.

    Without support vectors (``n_supports=0``) it is linear, ``rho[0] + X @ coefficients``.
    A one-class model (``one_class=1``) gives 1 where that is positive, else -1.

    Args:
        X: float or integer rows (N, F), or one row (F,).
        coefficients: one per support vector (linear: one per feature).
        kernel_params: ``[gamma, coef0, degree]``.
        kernel_type: LINEAR, POLY, RBF or SIGMOID.
        n_supports: the number of support vectors.
        one_class: 1 for a one-class SVM.
        post_transform: NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT.
        rho: the intercept (one value).
        support_vectors: the vectors, flat.

    Returns:
        The float32 predictions (N, 1).

    Example:
        >>> jaxonnx.ops.svm_regressor(jnp.array([[1.0, 2.0]]), coefficients=[0.5, 0.25], rho=[1.0])
        Array([[2.]], dtype=float32)
    """
    rows = _rows(X)
    coefficients = np.asarray(coefficients or [], np.float64)
    intercept = float((rho or [0.0])[0])
    if n_supports > 0:
        support = np.asarray(support_vectors or [], np.float64)
        if support.size != n_supports * rows.shape[1] or coefficients.size != n_supports:
            raise OnnxValidationError(
                f"got {support.size} `support_vectors` values and {coefficients.size} `coefficients` for "
                f"{n_supports} vectors of {rows.shape[1]} features."
            )
        K = kernel(rows, support.reshape(n_supports, -1), kernel_type, kernel_params)
        scores = K @ jnp.asarray(coefficients, rows.dtype) + intercept
    else:
        if coefficients.size != rows.shape[1]:
            raise OnnxValidationError(f"got {coefficients.size} `coefficients` for rows of {rows.shape[1]} features.")
        scores = rows @ jnp.asarray(coefficients, rows.dtype) + intercept
    if one_class:
        scores = jnp.where(scores > 0, jnp.ones_like(scores), -jnp.ones_like(scores))
    return transformed(scores[:, None], post_transform).astype(jnp.float32)


__all__ = ["svm_classifier", "svm_regressor"]
