"""Range: versions 11 and 27 (27 adds float16, bfloat16 and `stash_type`)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import onnx

from jaxonnx._core.padding import Call, Marks, as_tuple, with_count
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

_MAX_LENGTH = 2**31 - 1
_STASH_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64}


def _on_padding(call: Call):
    """Range's rule on padding: bounds that are padded lengths give a range marked at its real
    length."""
    results = as_tuple(call.run(call.args))
    if any(m is not None and m.lengths is None for m in call.marks):
        call.refuse("takes a padded value as a bound")
    start, limit, delta = (jnp.asarray(r).reshape(()) for r in call.reals()[:3])
    count = jnp.maximum(jnp.ceil((limit - start) / delta), 0).astype(jnp.int32)
    return results, [Marks({0: with_count(call.length_origin(), jnp.minimum(count, np.shape(results[0])[0]))})]


@register("Range", 27, static=("start", "limit", "delta"), padding=_on_padding)
def range(start, limit, delta, *, stash_type: int = onnx.TensorProto.FLOAT):
    """Implements ONNX Range: ``start, start + delta, ...`` up to ``limit`` (exclusive).

    The length is ``max(ceil((limit - start) / delta), 0)``, so all three inputs must be
    known at trace time; the result is numpy and stays known at trace time too. Integer
    ranges are exact; float ranges compute ``start + i * delta`` in float64 and round once.

    Args:
        start: a scalar.
        limit: a scalar of the dtype of ``start``.
        delta: a non-zero scalar of that dtype.
        stash_type: for float16 and bfloat16, the type that computes the values: 1 (float,
            the default) or 11 (double).

    Returns:
        A 1-D numpy array of the dtype of ``start``.

    Example:
        >>> jaxonnx.ops.range(np.int64(10), np.int64(4), np.int64(-2))
        array([10,  8,  6])
    """
    scalars = {name: _scalar(v, name) for name, v in (("start", start), ("limit", limit), ("delta", delta))}
    dtype = np.asarray(start).dtype
    compute = np.float64 if dtype.kind == "f" else None
    if dtype.name in ("float16", "bfloat16"):
        if stash_type not in _STASH_TYPES:
            raise OnnxValidationError(f"got `stash_type`={stash_type}; it must be 1 (float) or 11 (double).")
        compute = _STASH_TYPES[stash_type]
    first, last, step = scalars.values()
    if step == 0 or not all(math.isfinite(v) for v in scalars.values()):
        raise OnnxValidationError(
            f"got `start`={first}, `limit`={last}, `delta`={step}; they must be finite and `delta` non-zero."
        )
    count = max(math.ceil((last - first) / step) if compute else -((first - last) // step), 0)
    if count > _MAX_LENGTH:
        raise OnnxValidationError(
            f"would make {count} elements from `start`={first}, `limit`={last}, `delta`={step}; the limit is {_MAX_LENGTH}."
        )
    if compute is None:  # int64 arithmetic wraps around, but every value is in range, so exact
        return (np.int64(first) + np.arange(count, dtype=np.int64) * np.int64(step)).astype(dtype)
    return (compute(first) + np.arange(count, dtype=compute) * compute(step)).astype(dtype)


@register("Range", 11, static=("start", "limit", "delta"), padding=_on_padding)
def _range_11(start, limit, delta):
    return range(start, limit, delta)


def _scalar(value, name: str):
    value = np.asarray(value)
    if value.size != 1 or value.ndim > 1:
        raise OnnxValidationError(f"needs a scalar `{name}`, got shape {value.shape}.")
    kind = value.dtype.kind
    if kind not in "iuf" and value.dtype.name != "bfloat16":
        raise OnnxValidationError(f"needs a number `{name}`, got dtype {value.dtype}.")
    value = value.reshape(())
    return int(value) if kind in "iu" else float(value)


__all__ = ["range"]
