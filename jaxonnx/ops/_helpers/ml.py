"""What the ai.onnx.ml classifiers and regressors share: the post transforms of their
scores and the mapping of winning class indices to class labels."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import is_traced
from jaxonnx._errors import OnnxTypeError, OnnxValidationError

POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def post_transform(scores, name: str):
    """``scores`` (rows x classes or targets) after the post transform ``name``.

    PROBIT is the exact quantile function of the standard normal distribution
    (``jax.scipy.special.ndtri``); onnxruntime and onnx.reference compute it with
    Winitzki's approximation of ``erfinv``, which is off by up to about 2e-3.
    SOFTMAX_ZERO is a softmax that leaves the scores equal to 0 (within 1e-7) at 0, and
    gives 0.5 everywhere to a row whose every score is 0.
    """
    if name == "NONE":
        return scores
    if name == "LOGISTIC":
        return jax.nn.sigmoid(scores)
    if name == "SOFTMAX":
        return jax.nn.softmax(scores, axis=-1)
    if name == "PROBIT":
        return jax.scipy.special.ndtri(scores)
    if name == "SOFTMAX_ZERO":
        largest = jax.lax.stop_gradient(jnp.max(scores, axis=-1, keepdims=True))
        zero = jnp.abs(scores) <= 1e-7
        exps = jnp.where(zero, scores * jnp.exp(-largest), jnp.exp(scores - largest))
        total = jnp.sum(exps, axis=-1, keepdims=True)
        empty = total == 0
        return jnp.where(empty, jnp.full_like(exps, 0.5), exps / jnp.where(empty, jnp.ones_like(total), total))
    raise OnnxValidationError(f"got `post_transform`={name!r}; it is one of {', '.join(POST_TRANSFORMS)}.")


def binary_scores(score, name: str):
    """The two scores of a binary model's one score ``s`` (the second class's), as onnxruntime
    writes them: ``[1 - p, p]`` with ``p`` the LOGISTIC or PROBIT of ``s``, or ``s`` itself for
    NONE, SOFTMAX and SOFTMAX_ZERO (a softmax of one score would be 1)."""
    probability = post_transform(score, name) if name in ("LOGISTIC", "PROBIT") else score
    return jnp.stack([1 - probability, probability], axis=-1)


def class_labels(
    classlabels_ints,
    classlabels_strings,
    *,
    count: int | None = None,
    ints: str = "classlabels_ints",
    strings: str = "classlabels_strings",
) -> np.ndarray:
    """The class labels as an int64 array or an object array of ``str``; exactly one of the
    two attributes is given (``count``: how many labels the scores need, checked)."""
    if (classlabels_ints is None) == (classlabels_strings is None):
        raise OnnxValidationError(
            f"needs exactly one of `{ints}` and `{strings}`, got "
            f"{'both' if classlabels_ints is not None else 'neither'}."
        )
    if classlabels_ints is not None:
        labels = np.asarray(classlabels_ints, dtype=np.int64).reshape(-1)
    else:
        labels = np.empty(len(classlabels_strings), dtype=object)
        labels[:] = list(classlabels_strings)
    if count is not None and len(labels) != count:
        raise OnnxValidationError(f"has {count} classes in its scores but {len(labels)} class labels.")
    return labels


def labels_at(labels: np.ndarray, index):
    """``labels[index]``: int64 labels gathered (also under ``jax.jit``), string labels picked
    on concrete indices only, since JAX cannot hold strings."""
    if labels.dtype != object:
        xp = jnp if isinstance(index, jax.Array) else np
        return xp.asarray(labels)[index] if xp is np else jnp.take(jnp.asarray(labels), index)
    if is_traced(index):
        raise OnnxTypeError(
            "has string class labels, which JAX cannot hold: run it outside `jax.jit` (on numpy "
            "or concrete inputs), or give it integer labels."
        )
    return labels[np.asarray(index)]
