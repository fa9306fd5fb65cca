"""BitCast: version 26."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx

from jaxonnx._core.dtypes import X64_ON_HINT, numpy_dtype, onnx_type_name, x64_enabled
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import namespace

# ml_dtypes stores these one value per byte, so a byte view is not their bit pattern.
_SUB_BYTE = {"int4", "uint4", "float4e2m1", "int2", "uint2"}


@register("BitCast", 26)
def bit_cast(input, *, to: int):
    """Implements ONNX BitCast: the bits of ``input`` read as the element type ``to``.

    The types must have the same width; the bytes are read little endian (complex
    numbers as their real part, then their imaginary part). A bool is the byte 0 or 1;
    a byte read as bool is True when it is not 0. Numpy inputs are reinterpreted in
    numpy (exact, folded). With ``jax_enable_x64`` off, JAX arrays cannot hold 64-bit
    types, so a cast from or to one raises instead of reinterpreting 32-bit data. The
    4-bit and 2-bit types are refused: jaxonnx holds them one value per byte.

    Args:
        input: an array of any numeric or bool type.
        to: the ``onnx.TensorProto.DataType`` code of the result's element type.

    Returns:
        An array of the shape of ``input`` and the element type ``to``.

    Example:
        >>> jaxonnx.ops.bit_cast(jnp.array([1.0, -2.0], jnp.float32), to=6)   # int32
        Array([ 1065353216, -1073741824], dtype=int32)
    """
    if to == onnx.TensorProto.STRING:
        raise OnnxValidationError("got `to`=8 (string); BitCast reinterprets numbers and bools only.")
    target = numpy_dtype(to)
    source_name, target_name = onnx_type_name(input.dtype), onnx_type_name(target)
    for name in (source_name, target_name):
        if name in _SUB_BYTE:
            raise OnnxTypeError(f"cannot reinterpret {name} (jaxonnx holds 4-bit and 2-bit types one value per byte).")
    xp = namespace(input)
    if xp is not np and not x64_enabled() and target.itemsize == 8:
        # Checked first: a 64-bit input has arrived here as its 32-bit counterpart.
        raise OnnxTypeError(
            f"cannot reinterpret {source_name} as {target_name}: with `jax_enable_x64` off, JAX holds "
            f"no 64-bit types (their 32-bit counterparts have other bits); {X64_ON_HINT}."
        )
    if input.dtype.itemsize != target.itemsize:
        raise OnnxValidationError(
            f"got `input` of type {source_name} ({input.dtype.itemsize * 8} bits) and `to`={to} "
            f"({target_name}, {target.itemsize * 8} bits); BitCast needs types of one width."
        )
    if xp is np:
        if input.dtype == bool:
            return input.astype(target)  # True is the byte 1
        return input.view(np.uint8).astype(bool) if target == bool else input.view(target)
    if input.dtype == bool or target == bool:
        return input.astype(target) if input.dtype == bool else jax.lax.bitcast_convert_type(input, jnp.uint8) != 0
    if input.dtype.kind == "c":
        # The real and imaginary halves side by side: the bytes of a complex number.
        halves = jnp.stack([jnp.real(input), jnp.imag(input)], axis=-1)
        return jax.lax.bitcast_convert_type(halves, target)
    if target.kind == "c":
        half = np.dtype(np.float32 if target == np.complex64 else np.float64)
        halves = jax.lax.bitcast_convert_type(input, half)
        return jax.lax.complex(halves[..., 0], halves[..., 1])
    return jax.lax.bitcast_convert_type(input, target)


__all__ = ["bit_cast"]
