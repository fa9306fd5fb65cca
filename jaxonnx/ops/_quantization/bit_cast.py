"""BitCast: version 26."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import X64_ON_HINT, jax_dtype, numpy_dtype, onnx_type_name, x64_enabled
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError
from jaxonnx.ops._helpers.casting import TYPE_CODES, schema_types
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import type_name

#: Bits per element of the types narrower than a byte (ml_dtypes holds each in one byte).
_SUB_BYTE_BITS = {"int4": 4, "uint4": 4, "float4e2m1": 4, "int2": 2, "uint2": 2}


@register("BitCast", 26)
def bit_cast(input, *, to: int):
    """Implements ONNX BitCast: the bits of ``input`` read as the element type ``to``.

    The types must have the same bit width (4- and 2-bit types included); the shape stays.
    ``bool`` is one byte: 0 or 1 as an 8-bit integer, and any nonzero byte reads as True.
    With ``jax_enable_x64`` off a JAX array cannot hold 64-bit types, so those bit casts
    need numpy values or x64 on.

    Args:
        input: an array of any type but string.
        to: the ``onnx.TensorProto.DataType`` code of the result's type.

    Returns:
        An array of ``input``'s shape and the type ``to``.

    Example:
        >>> jaxonnx.ops.bit_cast(jnp.array([1.0, -2.0], jnp.float32), to=6)   # int32
        Array([ 1065353216, -1073741824], dtype=int32)
    """
    source, target = onnx_type_name(input.dtype), type_name(to, name="to")
    allowed = schema_types("BitCast", 26, "T2")
    if target not in allowed:
        raise OnnxTypeError(f"cannot bit-cast to {target} (`to`={to}); it bit-casts to {', '.join(sorted(allowed))}.")
    xp = namespace(input)
    # First: with x64 off a 64-bit input has reached here as its 32-bit counterpart.
    if xp is jnp and _bits(target) == 64 and not x64_enabled():
        raise OnnxTypeError(
            f"cannot bit-cast to {target} with `jax_enable_x64` off, where JAX holds no 64-bit values; {X64_ON_HINT}."
        )
    if _bits(source) != _bits(target):
        raise OnnxTypeError(
            f"cannot bit-cast `input` of type {source} ({_bits(source)} bits) to {target} ({_bits(target)} bits): "
            "the widths must be equal."
        )
    dtype = numpy_dtype(to)
    if xp is np:
        return input.view(dtype)  # ml_dtypes' sub-byte types keep their bits in the low bits of a byte
    dtype = jax_dtype(dtype)
    if source == target:
        return input
    # XLA bit-casts neither bool nor complex values: bool through its byte, complex64
    # through its two float32 halves.
    if source == "bool":
        return _bitcast(input.astype(jnp.uint8), dtype)
    if target == "bool":
        return _bitcast(input, jnp.uint8) != 0
    if source.startswith("complex") or target.startswith("complex"):
        return _complex_bits(input, dtype)
    return jax.lax.bitcast_convert_type(input, dtype)


def _bits(name: str) -> int:
    return _SUB_BYTE_BITS.get(name) or numpy_dtype(TYPE_CODES[name]).itemsize * 8


def _bitcast(x, dtype):
    return x if x.dtype == dtype else jax.lax.bitcast_convert_type(x, dtype)


def _complex_bits(x, dtype):
    """complex64 and 64-bit types: the real part in the low 32 bits (little endian)."""
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        halves = jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1)
        words = jax.lax.bitcast_convert_type(halves, jnp.uint32)
        return jax.lax.bitcast_convert_type(words, dtype)
    words = jax.lax.bitcast_convert_type(x, jnp.uint32)
    halves = jax.lax.bitcast_convert_type(words, jnp.float32)
    return jax.lax.complex(halves[..., 0], halves[..., 1]).astype(dtype)


__all__ = ["bit_cast"]
