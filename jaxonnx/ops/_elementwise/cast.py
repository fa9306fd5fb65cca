"""Cast: versions 1, 6, 9, 13, 19, 21, 23, 24, 25 and 28 (`to` is a type name in 1; 19
adds `saturate` for float8; 24 adds `round_mode` for float8e8m0)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import onnx

from jaxonnx._core.dtypes import jax_dtype, numpy_dtype, onnx_type_name
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import is_traced, namespace

_SATURATING = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"}
_JAX_LACKS = {"float6e2m3", "float6e3m2"}  # ml_dtypes holds them; XLA cannot convert to them
_ROUND_MODES = ("up", "down", "nearest")
_SUB_BYTE_INTS = {"int4", "uint4", "int2", "uint2"}
_CODES = {name.lower(): code for name, code in onnx.TensorProto.DataType.items()}
_NAMES = {code: name for name, code in _CODES.items()}


@register("Cast", 28, padding="keeps")
def cast(input, *, to: int, saturate: int = 1, round_mode: str = "up"):
    """Implements ONNX Cast: ``input`` converted to the element type ``to``.

    Follows the ONNX rules where they differ from ``astype``: casts to float8 saturate by
    default (out-of-range values and infinities become the largest finite value; NaN stays
    NaN); casts to float8e8m0 round its exponent as ``round_mode`` says. Integers wrap
    around and floats out of an integer type's range are undefined, as in ONNX. Strings
    (``to=8``) work on concrete values only: numbers print in numpy's shortest form, and
    strings parse as Python numbers ("1e-5", "INF", "-inf", "NaN"). With
    ``jax_enable_x64`` off a JAX array cast to a 64-bit type gets its 32-bit counterpart.

    Args:
        input: an array.
        to: the ``onnx.TensorProto.DataType`` code of the result's element type.
        saturate: for float8 targets: 1 saturates, 0 gives NaN (or inf for float8e5m2).
        round_mode: for float8e8m0: "up" (the default), "down" or "nearest".

    Returns:
        The converted array.

    Example:
        >>> jaxonnx.ops.cast(jnp.array([1.5, 1000.0]), to=17)   # float8e4m3fn: saturates at 448
        Array([1.5, 448], dtype=float8_e4m3fn)
    """
    return cast_to(input, _target(to, version=28), saturate=saturate, round_mode=round_mode)


def _older(version: int):
    @register("Cast", version, padding="keeps")
    def cast_before_28(input, *, to, saturate=1, round_mode="up"):
        return cast_to(input, _target(to, version=version), saturate=saturate, round_mode=round_mode)


for _version in (1, 6, 9, 13, 19, 21, 23, 24, 25):
    _older(_version)


@functools.cache
def schema_types(op_type: str, version: int, type_param: str) -> frozenset[str]:
    """The element type names a schema allows for ``type_param``, e.g. ``{"float", ...}``."""
    schema = onnx.defs.get_schema(op_type, version)
    (constraint,) = [c for c in schema.type_constraints if c.type_param_str == type_param]
    return frozenset(t[len("tensor(") : -1] for t in constraint.allowed_type_strs)


def _target(to, *, version: int) -> str:
    """The ONNX type name of ``to`` (a DataType code, or in Cast-1 its name), checked
    against the version's output types."""
    if isinstance(to, str):  # Cast-1
        name = to.lower()
    else:
        name = _NAMES.get(to, f"the unknown code {to}")
    allowed = schema_types("Cast", version, "T2")
    if name not in allowed:
        raise OnnxTypeError(f"cannot cast to {name} (`to`={to!r}); it casts to {', '.join(sorted(allowed))}.")
    return name


def cast_to(x, target: str, *, saturate=1, round_mode="up"):
    """``x`` cast to the ONNX element type ``target`` (a name such as "float8e4m3fn")."""
    if round_mode not in _ROUND_MODES:
        raise OnnxValidationError(f"got `round_mode`={round_mode!r}; it must be one of {', '.join(_ROUND_MODES)}.")
    if target == "string" or np.dtype(x.dtype).kind in "OUS":
        if is_traced(x):
            raise OnnxTypeError(
                f"cannot cast the traced {np.dtype(x.dtype)} `input` to {target}: JAX cannot hold strings, "
                "so casts from and to string run only on concrete values (outside `jax.jit`)."
            )
        x = np.asarray(x)
        if target == "string":  # numpy's shortest repr, as onnx.reference; ml_dtypes via their scalars
            return (x.astype(object) if x.dtype.kind == "V" else x).astype(np.str_).astype(object)
        x = _parse_strings(x, target)
    dtype = numpy_dtype(_CODES[target])
    xp = namespace(x)
    if xp is jnp:
        if target in _JAX_LACKS:
            raise OnnxTypeError(f"cannot cast a JAX array to {target}, which JAX cannot hold; cast numpy values.")
        dtype = jax_dtype(dtype)
    if target in _SATURATING and saturate:
        # Clipped before rounding, in a type that holds every float input exactly (integers
        # above 2**24 round in float32 but stay far above every float8 limit).
        limit = float(ml_dtypes.finfo(dtype).max)
        wide = x.astype(np.float64 if np.dtype(x.dtype) == np.float64 else np.float32)
        x = xp.clip(wide, -limit, limit)
    elif target == "float8e8m0":
        return _to_float8e8m0(x, xp, dtype, saturate=bool(saturate), round_mode=round_mode)
    elif target in _SUB_BYTE_INTS and jnp.issubdtype(x.dtype, jnp.floating):
        # As onnx.reference (ml_dtypes) does: truncate to an int, then keep the low bits.
        x = x.astype(np.int32)
    return x if x.dtype == dtype else x.astype(dtype)



def _parse_strings(x: np.ndarray, target: str) -> np.ndarray:
    """Strings as numbers: float64 for float and bool targets, exact ints for integers."""
    integer = target.startswith(("int", "uint"))

    def parse(text):
        text = text.decode() if isinstance(text, bytes) else str(text)
        try:
            return int(text) if integer else float(text)
        except ValueError:
            try:
                number = float(text)
                return int(number) if integer else number
            except (ValueError, OverflowError):
                raise OnnxValidationError(f"cannot cast the string {text!r} of `input` to {target}.") from None

    values = [parse(v) for v in x.reshape(-1)]
    if not integer:
        return np.array(values, dtype=np.float64).reshape(x.shape)
    dtype = numpy_dtype(_CODES[target])
    info = ml_dtypes.iinfo(dtype)
    outside = [v for v in values if not info.min <= v <= info.max]
    if outside:  # an int out of range would wrap around: the string says another number
        raise OnnxValidationError(f"cannot cast the string value {outside[0]} of `input` to {target}: out of range.")
    return np.array(values, dtype=np.int64 if info.min < 0 else np.uint64).reshape(x.shape)


def _to_float8e8m0(x, xp, dtype, *, saturate: bool, round_mode: str):
    """float8e8m0 (a bare exponent) from the float32 bits of ``x``, as onnx.numpy_helper's
    ``to_float8e8m0`` rounds it: NaN and infinities give NaN (0xFF)."""
    x32 = x.astype(np.float32)
    bits = x32.view(np.uint32) if xp is np else jax.lax.bitcast_convert_type(x32, jnp.uint32)
    exponent = (bits >> 23) & 0xFF
    fraction = bits & 0x7FFFFF
    if round_mode == "nearest":
        guard, rest = (bits & 0x400000) > 0, (bits & 0x3FFFFF) > 0
        round_up = guard & (rest | (exponent > 0))
    elif round_mode == "up":
        round_up = fraction > 0
    else:
        round_up = xp.zeros(bits.shape, dtype=bool)
    if saturate:
        round_up = round_up & (exponent != 0xFE)
    special = exponent == 0xFF
    out = xp.where(special, 0xFF, exponent + round_up.astype(exponent.dtype)).astype(np.uint8)
    return out.view(dtype) if xp is np else jax.lax.bitcast_convert_type(out, dtype)


__all__ = ["cast"]
