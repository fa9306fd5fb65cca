"""Conversion to every ONNX element type, as Cast defines it (float8 saturation, float8e8m0
rounding, sub-byte integers, strings); shared by Cast, CastLike, ConstantOfShape and the
quantization ops."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import onnx

from jaxonnx._core.dtypes import jax_dtype, numpy_dtype
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced, namespace

SATURATING = frozenset({"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"})
_FNUZ = frozenset({"float8e4m3fnuz", "float8e5m2fnuz"})
#: Types ml_dtypes holds but XLA cannot convert to: they work on concrete numpy values only.
JAX_LACKS = frozenset({"float6e2m3", "float6e3m2"})
_ROUND_MODES = ("up", "down", "nearest")
_SUB_BYTE_INTS = {"int4", "uint4", "int2", "uint2"}
#: ONNX element type names (lower case, "float8e4m3fn") and their DataType codes, both ways.
TYPE_CODES = {name.lower(): code for name, code in onnx.TensorProto.DataType.items()}
TYPE_NAMES = {code: name for name, code in TYPE_CODES.items()}


@functools.cache
def schema_types(op_type: str, version: int, type_param: str) -> frozenset[str]:
    """The element type names a schema allows for ``type_param``, e.g. ``{"float", ...}``."""
    schema = onnx.defs.get_schema(op_type, version)
    (constraint,) = [c for c in schema.type_constraints if c.type_param_str == type_param]
    return frozenset(t[len("tensor(") : -1] for t in constraint.allowed_type_strs)


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
    dtype = numpy_dtype(TYPE_CODES[target])
    xp = namespace(x)
    if xp is jnp:
        if target in JAX_LACKS:
            raise OnnxTypeError(f"cannot cast a JAX array to {target}, which JAX cannot hold; cast numpy values.")
        dtype = jax_dtype(dtype)
    if target in SATURATING and saturate:
        # Clipped before rounding, in a type that holds every float input exactly (integers
        # above 2**24 round in float32 but stay far above every float8 limit).
        limit = float(ml_dtypes.finfo(dtype).max)
        wide = x.astype(np.float64 if np.dtype(x.dtype) == np.float64 else np.float32)
        x = xp.clip(wide, -limit, limit)
    elif target == "float8e8m0":
        return _to_float8e8m0(x, xp, dtype, saturate=bool(saturate), round_mode=round_mode)
    if target in _FNUZ and xp is jnp and jnp.issubdtype(x.dtype, jnp.floating):
        # These types have no -0 (its bits are NaN): a negative value that rounds to zero
        # becomes +0. XLA:CPU's classic emitters (`--xla_cpu_use_fusion_emitters=false`) gave
        # NaN for -1e-9; zeroing what rounds to zero first gives +0 under every emitter.
        tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal) / 2  # ties round to even: to 0
        x = jnp.where(jnp.abs(x) <= tiny, jnp.zeros((), x.dtype), x)
    if target in _SUB_BYTE_INTS and jnp.issubdtype(x.dtype, jnp.floating):
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
    dtype = numpy_dtype(TYPE_CODES[target])
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
