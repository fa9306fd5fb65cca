"""What the signal ops share: ONNX's real and complex layouts (a trailing dimension of 1 or
2) as complex arrays and back, static scalars, and the output type of the window ops."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import numpy_dtype, onnx_type_name
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.casting import schema_types
from jaxonnx.ops._helpers.common import int_list, namespace


def static_int(value, *, name: str) -> int:
    """A static scalar integer tensor (0-D or of one element) as a Python int."""
    values = int_list(value, name=name)
    if len(values) != 1:
        raise OnnxValidationError(f"needs a scalar `{name}`, got {len(values)} values {list(values)}.")
    return values[0]


def as_complex(x, *, name: str):
    """``x`` of shape ``[..., 1]`` (real) or ``[..., 2]`` (real and imaginary parts) as a
    complex array without the trailing dimension, and whether it was real.

    Half-precision inputs compute in float32 (complex64): FFTs have no half type.
    """
    if x.ndim < 2 or x.shape[-1] not in (1, 2):
        raise OnnxValidationError(
            f"needs `{name}` of rank >= 2 whose last dimension is 1 (real) or 2 (complex), got shape {tuple(x.shape)}."
        )
    if np.dtype(x.dtype).itemsize < 4:
        x = x.astype(np.float32)
    if x.shape[-1] == 1:
        return x[..., 0], True
    if namespace(x) is jnp:
        return jax.lax.complex(x[..., 0], x[..., 1]), False
    return x[..., 0] + 1j * x[..., 1], False


def full_spectrum(half, length: int, axis: int):
    """The ``length`` bins of a real signal's DFT from its ``length // 2 + 1`` one-sided bins
    (``rfft``), the rest by conjugate symmetry: the DC and Nyquist bins stay exactly real."""
    xp = namespace(half)
    mirrored = xp.take(half, np.arange(length - length // 2 - 1, 0, -1), axis=axis)
    return xp.concatenate([half, xp.conj(mirrored)], axis=axis)


def as_pairs(z, dtype):
    """The complex ``z`` in ONNX's layout: real and imaginary parts on a trailing axis of 2."""
    xp = namespace(z)
    return xp.stack([xp.real(z), xp.imag(z)], axis=-1).astype(dtype)


def output_dtype(op_type: str, output_datatype: int) -> np.dtype:
    """The numpy dtype of an ``output_datatype`` code, refused outside the schema's T2/T3."""
    type_param = "T3" if op_type == "MelWeightMatrix" else "T2"
    allowed = schema_types(op_type, 17, type_param)
    try:
        dtype = numpy_dtype(output_datatype)
    except OnnxTypeError:
        dtype = None
    if dtype is None or onnx_type_name(dtype) not in allowed:
        raise OnnxTypeError(
            f"got `output_datatype`={output_datatype}; the output may be one of {', '.join(sorted(allowed))}."
        )
    return dtype


def cast_real(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float64 ``values`` as ``dtype``; integer types truncate toward zero, as Cast does."""
    with np.errstate(invalid="ignore"):  # nan (a symmetric window of size 1) has no integer
        return values.astype(dtype)
