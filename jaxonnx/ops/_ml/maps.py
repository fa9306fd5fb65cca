"""ZipMap, DictVectorizer and CastMap (ai.onnx.ml 1): between tensors and maps.

A map is a Python dict and a sequence of maps a list of dicts, as onnxruntime takes and
returns them. These ops run eagerly on concrete values; under ``jax.jit`` ZipMap still
returns dicts (of traced scalars, a pytree), and DictVectorizer takes them.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import is_traced, register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.ml import class_labels

ML = "ai.onnx.ml"


@register("ZipMap", 1, domain=ML, folds=False)
def zip_map(X, *, classlabels_int64s=None, classlabels_strings=None):
    """Implements ONNX ZipMap (ai.onnx.ml): each row of scores as a dict from class label to score.

    Args:
        X: float scores (N, C), or one row (C,).
        classlabels_int64s, classlabels_strings: the C labels (exactly one of the two).

    Returns:
        A list of N dicts ``{label: score}``: Python floats for concrete scores, traced
        scalars under ``jax.jit``.

    Example:
        >>> jaxonnx.ops.zip_map(jnp.array([[0.25, 0.75]]), classlabels_strings=["cat", "dog"])
        [{'cat': 0.25, 'dog': 0.75}]
    """
    labels = class_labels(classlabels_int64s, classlabels_strings, ints="classlabels_int64s").tolist()
    rows = X.reshape(1, -1) if X.ndim == 1 else X
    if rows.ndim != 2 or rows.shape[1] != len(labels):
        raise OnnxValidationError(f"got scores of shape {tuple(X.shape)} for {len(labels)} class labels.")
    if is_traced(rows):
        return [dict(zip(labels, row)) for row in rows]
    return [dict(zip(labels, row)) for row in np.asarray(rows).tolist()]


def _vocabulary(int64_vocabulary, string_vocabulary) -> list:
    if bool(int64_vocabulary) == bool(string_vocabulary):
        raise OnnxValidationError(
            "needs exactly one of `int64_vocabulary` and `string_vocabulary`, got "
            f"{'both' if int64_vocabulary else 'neither'}."
        )
    return [int(v) for v in int64_vocabulary] if int64_vocabulary else list(string_vocabulary)


def _value_dtype(values):
    """The tensor type of a map's values: the type of numpy or JAX values, else str for
    strings, float32 for Python floats (map(string, float), what converters write) and
    int64 for Python ints."""
    if any(isinstance(v, (str, bytes)) for v in values):
        return object
    typed = [v.dtype for v in values if isinstance(v, (np.generic, np.ndarray, jax.Array))]
    if typed:
        return np.result_type(*typed)
    return np.float32 if any(isinstance(v, float) for v in values) else np.int64


@register("DictVectorizer", 1, domain=ML, folds=False)
def dict_vectorizer(X, *, int64_vocabulary=None, string_vocabulary=None):
    """Implements ONNX DictVectorizer (ai.onnx.ml): a map as one row of the values of the
    vocabulary's keys (0 for an absent key).

    Args:
        X: a dict from the vocabulary's kind of key (int or str) to numbers or strings; a
            list of dicts gives one row each.
        int64_vocabulary, string_vocabulary: the keys, in column order (one of the two).

    Returns:
        An array (1, V) for one dict, (N, V) for a list of N: int64 for int values,
        float32 for Python floats (numpy values keep their type), strings for strings.

    Example:
        >>> jaxonnx.ops.dict_vectorizer({"b": 2.0, "c": 3.0}, string_vocabulary=["a", "b", "c"])
        array([[0., 2., 3.]], dtype=float32)
    """
    vocabulary = _vocabulary(int64_vocabulary, string_vocabulary)
    maps = [X] if isinstance(X, Mapping) else X
    if not isinstance(maps, list) or not all(isinstance(m, Mapping) for m in maps):
        raise OnnxTypeError(f"takes a map (a dict) or a list of them as `X`, got {type(X).__name__}.")
    values = [v for m in maps for v in m.values()]
    dtype = _value_dtype(values) if values else np.float32
    if any(is_traced(v) for v in values):
        zero = jnp.zeros((), dtype)
        return jnp.stack([jnp.stack([jnp.asarray(m.get(k, zero), dtype) for k in vocabulary]) for m in maps])
    out = np.full((len(maps), len(vocabulary)), "" if dtype is object else 0, dtype=dtype)
    for row, m in enumerate(maps):
        unknown = [k for k in m if k not in vocabulary]
        if unknown and isinstance(unknown[0], (bytes, str)) != bool(string_vocabulary):
            raise OnnxTypeError(
                f"got a map with keys like {unknown[0]!r} for a vocabulary of {type(vocabulary[0]).__name__}."
            )
        for column, key in enumerate(vocabulary):
            if key in m:
                out[row, column] = m[key]
    return out


@register("CastMap", 1, domain=ML, folds=False)
def cast_map(X, *, cast_to="TO_FLOAT", map_form="DENSE", max_map=1):
    """Implements ONNX CastMap (ai.onnx.ml): a map from int64 keys to strings or floats as a
    row tensor, in the order of its keys.

    DENSE gives the values in ascending key order; SPARSE gives ``max_map`` columns, the
    value of key ``k`` in column ``k`` and 0 (``"0"`` for strings) where there is no key.
    Strings cast to float as Python's ``float`` reads them; floats cast to strings with six
    decimals, as onnxruntime writes them.

    Args:
        X: a dict from int to str or float.
        cast_to: TO_FLOAT, TO_INT64 or TO_STRING.
        map_form: DENSE or SPARSE.
        max_map: the number of columns of the SPARSE form.

    Returns:
        An array (1, len(X)) for DENSE, (1, max_map) for SPARSE: float32, int64 or strings.

    Example:
        >>> jaxonnx.ops.cast_map({3: 1.5, 1: 2.5}, cast_to="TO_INT64")
        array([[2, 1]])
    """
    if not isinstance(X, Mapping):
        raise OnnxTypeError(f"takes a map (a dict) as `X`, got {type(X).__name__}.")
    casts = {"TO_FLOAT": (np.float32, 0.0), "TO_INT64": (np.int64, 0), "TO_STRING": (object, "0")}
    if cast_to not in casts:
        raise OnnxValidationError(f"got `cast_to`={cast_to!r}; it is one of {', '.join(casts)}.")
    dtype, fill = casts[cast_to]

    def cast(value):
        if dtype is object:
            return value if isinstance(value, str) else _float_text(value)
        return dtype(float(value))

    keys = sorted(int(k) for k in X)
    if map_form == "DENSE":
        values = [cast(X[k]) for k in keys]
    elif map_form == "SPARSE":
        if keys and (keys[0] < 0 or keys[-1] >= max_map):
            raise OnnxValidationError(
                f"got the key {keys[-1] if keys[-1] >= max_map else keys[0]} for `max_map`={max_map}."
            )
        present = {k: cast(X[k]) for k in keys}
        values = [present.get(k, fill) for k in range(max_map)]
    else:
        raise OnnxValidationError(f"got `map_form`={map_form!r}; it is DENSE or SPARSE.")
    out = np.empty((1, len(values)), dtype=dtype)
    out[0, :] = values
    return out


def _float_text(value) -> str:
    # The text does not say how; onnxruntime writes C++'s std::to_string, six decimals.
    return f"{float(value):f}"


__all__ = ["cast_map", "dict_vectorizer", "zip_map"]
