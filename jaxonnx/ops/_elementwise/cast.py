"""Cast: versions 1, 6, 9, 13, 19, 21, 23, 24, 25 and 28 (`to` is a type name in 1; 19
adds `saturate` for float8; 24 adds `round_mode` for float8e8m0)."""

from __future__ import annotations

import onnx

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError
from jaxonnx.ops._helpers.casting import TYPE_NAMES, cast_to, schema_types


def _casts_to_strings(attributes) -> bool:
    """Whether a Cast node with these attributes makes strings: its ``to`` is STRING."""
    return attributes.get("to") == onnx.TensorProto.STRING


@register("Cast", 28, padding="elementwise", keeps_non_zeros="bool", makes_strings=_casts_to_strings)
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
    @register("Cast", version, padding="elementwise", keeps_non_zeros="bool", makes_strings=_casts_to_strings)
    def cast_before_28(input, *, to, saturate=1, round_mode="up"):
        return cast_to(input, _target(to, version=version), saturate=saturate, round_mode=round_mode)


for _version in (1, 6, 9, 13, 19, 21, 23, 24, 25):
    _older(_version)


def _target(to, *, version: int) -> str:
    """The ONNX type name of ``to`` (a DataType code, or in Cast-1 its name), checked
    against the version's output types."""
    if isinstance(to, str):  # Cast-1
        name = to.lower()
    else:
        name = TYPE_NAMES.get(to, f"the unknown code {to}")
    allowed = schema_types("Cast", version, "T2")
    if name not in allowed:
        raise OnnxTypeError(f"cannot cast to {name} (`to`={to!r}); it casts to {', '.join(sorted(allowed))}.")
    return name


__all__ = ["cast"]
