"""Element types: ONNX names, numpy dtypes, and exact conversion to JAX arrays.

The x64 policy: jaxonnx never changes JAX's global configuration. A 64-bit value
(int64, uint64, float64, complex128) can only become a JAX array when
``jax_enable_x64`` is on; when it is off, jaxonnx raises instead of letting JAX
narrow the value to 32 bits. Values that stay static (initializers, Constant nodes,
Slice bounds) stay numpy and are exact whatever the setting.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import onnx
from onnx import helper

from jaxonnx._errors import OnnxTypeError

Array = jax.Array


@functools.cache
def _numpy_dtype_to_onnx_name() -> dict[np.dtype, str]:
    names = {}
    for name, code in onnx.TensorProto.DataType.items():
        if name == "UNDEFINED":
            continue
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(code))
        except (KeyError, ValueError, TypeError):
            continue
        # complex32/bcomplex32 have no numpy dtype of their own; the first name wins.
        names.setdefault(dtype, name.lower())
    return names


def onnx_type_name(dtype) -> str:
    """The ONNX element type name of a numpy/JAX dtype, e.g. ``float32 -> 'float'``."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OUS":
        return "string"
    try:
        return _numpy_dtype_to_onnx_name()[dtype]
    except KeyError:
        raise OnnxTypeError(f"The dtype {dtype} has no ONNX element type.") from None


def numpy_dtype(elem_type: int) -> np.dtype:
    """The numpy dtype of an ONNX ``TensorProto.DataType`` code."""
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        raise OnnxTypeError(
            f"The ONNX element type {onnx.TensorProto.DataType.Name(elem_type)} "
            "has no numpy dtype, so jaxonnx cannot hold it."
        ) from None


def is_string_array(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "OUS"


def as_str_array(array) -> np.ndarray:
    """A string tensor as an object array of ``str`` (ONNX string tensors decode to bytes)."""
    array = np.asarray(array)
    if array.size == 0:
        return array.astype(object)
    return np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v, otypes=[object])(array)


def x64_hint(dtype) -> str:
    return (
        f"{np.dtype(dtype)} needs 64-bit JAX types, but `jax_enable_x64` is off and "
        "jaxonnx will not narrow it to 32 bits; turn it on with "
        '`jax.config.update("jax_enable_x64", True)` or run inside `with jax.enable_x64(True):`'
    )


def as_jax(x, *, what: str = "value") -> Array:
    """Converts ``x`` to a JAX array without changing its dtype or values.

    Raises:
        OnnxTypeError: for string tensors (JAX has no string type) and for 64-bit
            dtypes while ``jax_enable_x64`` is off (JAX would narrow them silently).
    """
    if isinstance(x, jax.Array):
        return x
    x = np.asarray(x)
    if x.dtype.kind in "OUS":
        raise OnnxTypeError(
            f"The {what} is a string tensor, which JAX cannot hold; string tensors run "
            "only on the eager path (numpy inputs, outside `jax.jit`)."
        )
    if jax.dtypes.canonicalize_dtype(x.dtype) != x.dtype:
        raise OnnxTypeError(f"The {what} has dtype {x.dtype}: {x64_hint(x.dtype)}.")
    return jax.numpy.asarray(x)
