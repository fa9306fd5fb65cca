"""LabelEncoder (ai.onnx.ml 1, 2, 4), CategoryMapper and OneHotEncoder (1): lookups of
categories. Numeric lookups are array programs (they run under ``jax.jit``); a string on
either side runs eagerly, on numpy object arrays, since JAX cannot hold strings."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx

from jaxonnx._core.dtypes import is_string_array
from jaxonnx._core.registry import is_traced, register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError

ML = "ai.onnx.ml"


def _strings(values) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(values, dtype=object).reshape(-1)]
    return array


def _concrete(x, what: str) -> np.ndarray:
    """``x`` as numpy, for a lookup whose keys or values are strings."""
    if is_traced(x):
        raise OnnxTypeError(
            f"maps `{what}` to or from strings, which JAX cannot hold: run it outside `jax.jit`, on numpy "
            "or concrete inputs."
        )
    return np.asarray(x)


def lookup(x, keys: np.ndarray, values: np.ndarray, default, what: str = "X"):
    """``values[i]`` where ``x == keys[i]`` (the last such ``i``, as LabelEncoder-4's text says
    of repeated keys; NaN matches NaN), else ``default``."""
    if keys.dtype != object and values.dtype != object and not is_string_array(x):
        # numpy in, numpy out: a lookup of values known at trace time (constants) stays known.
        xp = np if isinstance(x, np.ndarray) else jnp
        keys = xp.asarray(keys, x.dtype).reshape((1,) * x.ndim + (-1,))
        match = x[..., None] == keys
        if xp.issubdtype(x.dtype, xp.floating):
            match = match | (xp.isnan(x)[..., None] & xp.isnan(keys))
        found = xp.any(match, axis=-1)
        last = keys.shape[-1] - 1 - xp.argmax(match[..., ::-1], axis=-1)
        picked = xp.take(xp.asarray(values), last)
        return xp.where(found, picked, xp.asarray(default, picked.dtype))
    x = _concrete(x, what)
    if x.dtype != object and keys.dtype == object or x.dtype == object and keys.dtype != object:
        raise OnnxTypeError(f"got `{what}` of dtype {x.dtype} for keys of dtype {keys.dtype}.")
    table: dict = {}
    nan_value = None
    for k, v in zip(keys.tolist(), values.tolist()):
        if isinstance(k, float) and np.isnan(k):
            nan_value = v
        else:
            table[k] = v
    flat = x.reshape(-1).tolist()
    out = [
        nan_value if nan_value is not None and isinstance(v, float) and np.isnan(v) else table.get(v, default)
        for v in flat
    ]
    result = np.empty(len(out), dtype=values.dtype)
    result[:] = out
    return result.reshape(x.shape)


def _attribute_array(kind: str, value) -> np.ndarray:
    """Keys or values of LabelEncoder as numpy: strings as an object array of ``str``."""
    if kind == "tensor":
        value = np.asarray(value).reshape(-1)
        return _strings(value) if value.dtype.kind in "OUS" else value
    return {
        "strings": _strings,
        "int64s": lambda v: np.asarray(v, np.int64),
        "floats": lambda v: np.asarray(v, np.float32),
    }[kind](value)


def _first_given(*candidates):
    for name, value in candidates:
        if value is not None and (not isinstance(value, (list, tuple)) or len(value)):
            return name, value
    return None, None


def _maps_to_strings(attributes) -> bool:
    """Whether a LabelEncoder node with these attributes maps to strings: its values are."""
    values = attributes.get("values_tensor")
    return "values_strings" in attributes or getattr(values, "data_type", None) == onnx.TensorProto.STRING


@register("LabelEncoder", 2, 4, domain=ML, makes_strings=_maps_to_strings)
def label_encoder(
    X,
    *,
    default_float=-0.0,
    default_int64=-1,
    default_string="_Unused",
    default_tensor=None,
    keys_floats=None,
    keys_int64s=None,
    keys_strings=None,
    keys_tensor=None,
    values_floats=None,
    values_int64s=None,
    values_strings=None,
    values_tensor=None,
):
    """Implements ONNX LabelEncoder (ai.onnx.ml 2 and 4): each entry of ``X`` replaced by the
    value of its key, or by the default.

    The keys are one of ``keys_tensor`` (version 4), ``keys_strings``, ``keys_int64s`` or
    ``keys_floats``, the values likewise; the output takes the values' type. The default is
    ``default_tensor`` (version 4), else ``default_string``, ``default_int64`` or
    ``default_float`` by that type. NaN keys match NaN entries, and of repeated keys the
    last counts (version 4's text; onnxruntime's version 2 matches no NaN). Numeric keys and
    values run under ``jax.jit``; strings on either side run eagerly.

    Args:
        X: a string, integer or float array.
        keys_*, values_*: the mapping (one keys attribute and one values attribute).
        default_*: the value of entries no key matches.

    Returns:
        An array of the shape of ``X`` and of the values' type.

    Example:
        >>> jaxonnx.ops.label_encoder(jnp.array([3, 5, 9]), keys_int64s=[3, 5], values_floats=[0.5, 1.5])
        Array([ 0.5,  1.5, -0. ], dtype=float32)
    """
    key_kind, keys = _first_given(
        ("tensor", keys_tensor), ("strings", keys_strings), ("int64s", keys_int64s), ("floats", keys_floats)
    )
    kind, values = _first_given(
        ("tensor", values_tensor), ("strings", values_strings), ("int64s", values_int64s), ("floats", values_floats)
    )
    if keys is None or values is None:
        raise OnnxValidationError(
            f"needs one `keys_*` and one `values_*` attribute, got {'no keys' if keys is None else 'no values'}."
        )
    keys, values = _attribute_array(key_kind, keys), _attribute_array(kind, values)
    if len(keys) != len(values):
        raise OnnxValidationError(f"got {len(keys)} keys and {len(values)} values; each key needs one value.")
    if default_tensor is not None:
        default = np.asarray(default_tensor).reshape(-1)[0]
        default = default.decode() if isinstance(default, bytes) else default
    elif values.dtype == object:
        default = default_string
    elif values.dtype.kind in "iu":
        default = default_int64
    else:
        default = default_float
    return lookup(X, keys, values, default)


@register("LabelEncoder", 1, domain=ML)
def _label_encoder_1(X, *, classes_strings=None, default_int64=-1, default_string="_Unused"):
    # Version 1 maps strings to their index in `classes_strings`, and indices back to strings.
    classes = _strings(classes_strings or [])
    indices = np.arange(len(classes), dtype=np.int64)
    if is_string_array(X):
        return lookup(X, classes, indices, default_int64)
    return lookup(X, indices, classes, default_string)


@register("CategoryMapper", 1, domain=ML, makes_strings=True)  # int64 to string or back, by the input's type
def category_mapper(X, *, cats_int64s=None, cats_strings=None, default_int64=-1, default_string="_Unused"):
    """Implements ONNX CategoryMapper (ai.onnx.ml): strings to integers or integers to
    strings through the pairs ``(cats_strings[i], cats_int64s[i])``.

    It runs eagerly (one side is always strings, which JAX cannot hold).

    Args:
        X: a string or int64 array.
        cats_int64s, cats_strings: the pairs, one entry each.
        default_int64, default_string: the result for an entry with no pair.

    Returns:
        An int64 array for string ``X``, an object array of ``str`` for integer ``X``.

    Example:
        >>> jaxonnx.ops.category_mapper(np.array(["b", "z"], dtype=object), cats_int64s=[1, 2],
        ...                             cats_strings=["a", "b"])
        array([ 2, -1])
    """
    strings, ints = _strings(cats_strings or []), np.asarray(cats_int64s or [], np.int64)
    if len(strings) != len(ints):
        raise OnnxValidationError(f"got {len(strings)} `cats_strings` and {len(ints)} `cats_int64s`; they pair up.")
    if is_string_array(X):
        return lookup(X, strings, ints, default_int64)
    return lookup(_concrete(X, "X").astype(np.int64), ints, strings, default_string)


@register("OneHotEncoder", 1, domain=ML, folds=False)
def one_hot_encoder(X, *, cats_int64s=None, cats_strings=None, zeros=1):
    """Implements ONNX OneHotEncoder (ai.onnx.ml): each entry of ``X`` as a float32 one-hot row
    over the categories.

    With ``zeros=0`` an entry that is no category is an error for strings; numbers compile
    (under ``jax.jit``, and a model's eager call compiles its graph too), where values
    cannot raise, so its row is NaN instead. Numeric categories match numeric entries
    exactly (1.5 is not category 1; onnxruntime truncates it to 1). String categories run
    eagerly.

    Args:
        X: a string, integer or float array.
        cats_int64s, cats_strings: the categories (one of the two).
        zeros: 1: an unknown entry encodes as all zeros; 0: it is an error.

    Returns:
        A float32 array of shape ``X.shape + (categories,)``.

    Example:
        >>> jaxonnx.ops.one_hot_encoder(jnp.array([2, 7]), cats_int64s=[7, 2, 5])
        Array([[0., 1., 0.],
               [1., 0., 0.]], dtype=float32)
    """
    if cats_strings:
        categories = _strings(cats_strings)
        x = _concrete(X, "X")
        if x.dtype != object:
            raise OnnxTypeError(f"has string categories but got `X` of dtype {x.dtype}.")
        encoded = (x.reshape(*x.shape, 1) == categories.reshape((1,) * x.ndim + (-1,))).astype(np.float32)
    elif cats_int64s:
        categories = np.asarray(cats_int64s, np.int64)
        if is_string_array(X):
            raise OnnxTypeError("has integer categories but got a string `X`.")
        compared = (
            jnp.float64
            if X.dtype == jnp.float64
            else (jnp.float32 if jnp.issubdtype(X.dtype, jnp.floating) else X.dtype)
        )
        categories = jnp.asarray(categories).astype(compared).reshape((1,) * X.ndim + (-1,))
        encoded = (X.astype(compared)[..., None] == categories).astype(jnp.float32)
    else:
        raise OnnxValidationError("needs `cats_int64s` or `cats_strings`, got neither.")
    if zeros:
        return encoded
    unknown = encoded.sum(axis=-1) == 0
    if isinstance(encoded, np.ndarray):  # strings, always concrete
        if unknown.any():
            first = X.reshape(-1)[np.flatnonzero(unknown)[0]]
            raise OnnxValidationError(f"got the entry {first!r}, which is none of its categories, with `zeros`=0.")
        return encoded
    # Numbers compile (a model's eager call too), where values cannot raise: a NaN row.
    return jnp.where(unknown[..., None], jnp.full_like(encoded, jnp.nan), encoded)


__all__ = ["category_mapper", "label_encoder", "one_hot_encoder"]
