"""Element types: ONNX names, numpy dtypes, and conversion to JAX arrays.

The x64 policy: jaxonnx never changes JAX's global configuration.

- ``jax_enable_x64`` on: every element type is held exactly.
- ``jax_enable_x64`` off: a 64-bit type computes as its 32-bit JAX counterpart, as in
  every JAX function (int64 -> int32, uint64 -> uint32, float64 -> float32,
  complex128 -> complex64). An integer value that does not fit in 32 bits raises
  instead of wrapping around; floats round as JAX rounds them.

Values that stay static (initializers, Constant nodes, Slice bounds and all shape
arithmetic) stay numpy and are exact whatever the setting.
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
    names: dict[np.dtype, str] = {}
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


X64_ON_HINT = 'turn it on with `jax.config.update("jax_enable_x64", True)` or run inside `with jax.enable_x64(True):`'


def x64_enabled() -> bool:
    return bool(jax.config.read("jax_enable_x64"))


def jax_dtype(dtype) -> np.dtype:
    """The dtype JAX computes ``dtype`` in under the current setting: itself with
    ``jax_enable_x64`` on, the 32-bit counterpart of a 64-bit type with it off."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.dtype(dtype)))


#: The 64-bit type whose values JAX computes as each 32-bit type while x64 is off: the one
#: narrowing table (the 32-bit side is `jax_dtype`'s answer for the 64-bit one).
WIDE = {
    np.dtype(narrow): np.dtype(wide)
    for narrow, wide in [
        (np.int32, np.int64),
        (np.uint32, np.uint64),
        (np.float32, np.float64),
        (np.complex64, np.complex128),
    ]
}


def is_narrowed(dtype) -> bool:
    """Whether ``dtype`` is a 64-bit type that JAX narrows under the current setting."""
    dtype = np.dtype(dtype)
    return dtype.kind not in "OUSV" and jax_dtype(dtype) != dtype


def narrowed(x: np.ndarray, *, what: str = "value") -> np.ndarray:
    """A numpy array in the dtype JAX would compute it in (see :func:`jax_dtype`).

    Integers must fit: a value outside the 32-bit range raises rather than wrapping
    around. Floats and complex numbers round to the nearest 32-bit value, as in JAX.

    Raises:
        OnnxTypeError: for an integer value that does not fit, naming ``what`` and the value.
    """
    x = np.asarray(x)
    if not is_narrowed(x.dtype):
        return x
    target = jax_dtype(x.dtype)
    if x.dtype.kind in "iu":
        info = np.iinfo(target)
        outside = (x < info.min) | (x > info.max)
        if outside.any():
            position = np.unravel_index(np.argmax(outside), x.shape) if x.ndim else ()
            where = f" at position {tuple(int(p) for p in position)}" if x.ndim else ""
            raise OnnxTypeError(
                f"The {what} holds the {onnx_type_name(x.dtype)} value {int(x[position])}{where}, which does not fit "
                f"in {onnx_type_name(target)} ([{info.min}, {info.max}]); with `jax_enable_x64` off, 64-bit types "
                f"compute in 32 bits. To keep it exact, {X64_ON_HINT}."
            )
    return x.astype(target)


def as_jax(x, *, what: str = "value") -> Array:
    """Converts ``x`` to a JAX array, exactly or not at all.

    With ``jax_enable_x64`` on, the dtype and values are kept. With it off, a 64-bit
    value becomes its 32-bit JAX counterpart, as ``jnp.asarray`` does, but an integer
    value that does not fit raises instead of wrapping around (see :func:`narrowed`).

    Raises:
        OnnxTypeError: for string tensors (JAX has no string type) and for 64-bit
            integers that do not fit in 32 bits while ``jax_enable_x64`` is off.

    Example:
        >>> with jax.enable_x64(False):
        ...     as_jax(np.array([1, 2], np.int64)).dtype
        dtype('int32')
    """
    if isinstance(x, jax.Array):
        return x
    x = np.asarray(x)
    if x.dtype.kind in "OUS":
        raise OnnxTypeError(
            f"The {what} is a string tensor, which JAX cannot hold; string tensors run "
            "only on the eager path (numpy inputs, outside `jax.jit`)."
        )
    return to_device(narrowed(x, what=what))


def to_device(x: np.ndarray) -> Array:
    """``x`` as a JAX array, as ``jnp.asarray`` makes it (64-bit types canonicalized).

    Outside a trace it is copied to the device: jax 0.10's ``jnp.asarray`` of a numpy array
    compiles an identity program for each new shape and dtype (a large part of an eager op
    call; measured: ``benchmarks/suite_time.md``), where ``jax.device_put`` only copies.
    Inside a trace the value becomes a constant of the computation, as ``jnp.asarray`` makes
    it.

    Example:
        >>> to_device(np.arange(3, dtype=np.int32))
        Array([0, 1, 2], dtype=int32)
    """
    return jax.numpy.asarray(x) if trace_in_progress() else jax.device_put(x)


def trace_in_progress() -> bool:
    """Whether a JAX transformation (``jit``, ``grad``, ``vmap``) is tracing now, even where
    no value at hand is a tracer. JAX's trace state says so at once (there is no public
    spelling of it in jax 0.10); without it, whether an array made now comes out a tracer,
    which runs a small computation (measured: ``benchmarks/cpu_formulations_results.md``)."""
    clean = getattr(jax._src.core, "trace_state_clean", None)
    return not clean() if clean is not None else isinstance(jax.numpy.zeros(()), jax.core.Tracer)
