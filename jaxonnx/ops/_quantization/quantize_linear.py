"""QuantizeLinear: versions 10 (per tensor), 13 (`axis`: per axis), 19 (float8 and
`saturate`), 21 (`block_size`, `output_dtype`, 16- and 4-bit types), 23 (`precision`,
float4e2m1), 24 (float8e8m0 scales), 25 (2-bit types) and 28 (float6)."""

from __future__ import annotations

import functools

import onnx

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.casting import schema_types
from jaxonnx.ops._helpers.quantization import quantization_layout, quantize, type_name


@register("QuantizeLinear", 28)
def quantize_linear(
    x,
    y_scale,
    y_zero_point=None,
    *,
    axis=1,
    block_size=0,
    output_dtype=0,
    precision=0,
    saturate=1,
    straight_through=False,
):
    """Implements ONNX QuantizeLinear: ``y = saturate(round(x / y_scale) + y_zero_point)``.

    The division is in ``y_scale``'s type (or ``precision``'s), rounding is half to even,
    and integers saturate to their type's range. Float8 types round to nearest even and
    saturate (or with ``saturate=0`` overflow to NaN, or inf for float8e5m2), float4 and
    float6 always saturate; their zero point is added as a float. The output type is
    ``y_zero_point``'s, else ``output_dtype``'s, else uint8. NaN quantizes to an integer
    type's lowest value (the text leaves it open; onnxruntime does this). float6 results
    work on numpy values only (JAX cannot hold them).

    ``y_scale`` and ``y_zero_point`` (of one shape) apply per tensor (a scalar), per axis
    (1-D, along ``axis``) or per block (``x``'s shape with ``ceil(D / block_size)`` at
    ``axis``: each scale covers ``block_size`` consecutive elements).

    Args:
        x: a float32, float16, bfloat16 or int32 array.
        y_scale: the scale (float types, int32, or float8e8m0).
        y_zero_point: optional zero point, of ``y_scale``'s shape; its type is the output's.
        axis: the quantized axis for per-axis and blocked quantization.
        block_size: the block length along ``axis`` (0: not blocked).
        output_dtype: the output's ``TensorProto.DataType`` code when there is no zero point.
        precision: the ``TensorProto.DataType`` code of a float type to divide in.
        saturate: for float8 outputs: 1 saturates out-of-range values, 0 does not.
        straight_through: not an ONNX attribute. The gradient of the rounding: False (the
            default) zero, as rounding's derivative almost everywhere; True the
            straight-through estimator (identity inside the range, zero outside, as
            PyTorch's fake-quantize). JAX differentiates only through float arrays, so
            with True the quantized values come in float32 (see
            ``jaxonnx/ops/_helpers/quantization.py``); DequantizeLinear's function
            takes them as its ``x``.

    Returns:
        The quantized array, of ``x``'s shape.

    Example:
        >>> jaxonnx.ops.quantize_linear(jnp.array([-1.0, 0.25, 0.75, 300.0]), jnp.float32(0.5), jnp.uint8(128))
        Array([126, 128, 130, 255], dtype=uint8)
    """
    return _quantize_linear(
        x,
        y_scale,
        y_zero_point,
        version=28,
        axis=axis,
        block_size=block_size,
        output_dtype=output_dtype,
        precision=precision,
        saturate=saturate,
        straight_through=straight_through,
    )


def _with_precision(version: int):
    # 24 and 25 only widen the types (float8e8m0 scales, 2-bit outputs); the version
    # decides which `output_dtype` values are allowed.
    @register("QuantizeLinear", version)
    def quantize_linear_with_precision(
        x,
        y_scale,
        y_zero_point=None,
        *,
        axis=1,
        block_size=0,
        output_dtype=0,
        precision=0,
        saturate=1,
        straight_through=False,
    ):
        return _quantize_linear(
            x,
            y_scale,
            y_zero_point,
            version=version,
            axis=axis,
            block_size=block_size,
            output_dtype=output_dtype,
            precision=precision,
            saturate=saturate,
            straight_through=straight_through,
        )


for _version in (23, 24, 25):
    _with_precision(_version)


@register("QuantizeLinear", 21)
def _quantize_linear_21(
    x, y_scale, y_zero_point=None, *, axis=1, block_size=0, output_dtype=0, saturate=1, straight_through=False
):
    return _quantize_linear(
        x,
        y_scale,
        y_zero_point,
        version=21,
        axis=axis,
        block_size=block_size,
        output_dtype=output_dtype,
        saturate=saturate,
        straight_through=straight_through,
    )


@register("QuantizeLinear", 19)
def _quantize_linear_19(x, y_scale, y_zero_point=None, *, axis=1, saturate=1, straight_through=False):
    return _quantize_linear(
        x, y_scale, y_zero_point, version=19, axis=axis, saturate=saturate, straight_through=straight_through
    )


@register("QuantizeLinear", 13)
def _quantize_linear_13(x, y_scale, y_zero_point=None, *, axis=1, straight_through=False):
    return _quantize_linear(x, y_scale, y_zero_point, version=13, axis=axis, straight_through=straight_through)


@register("QuantizeLinear", 10)
def _quantize_linear_10(x, y_scale, y_zero_point=None, *, straight_through=False):
    return _quantize_linear(x, y_scale, y_zero_point, version=10, straight_through=straight_through)


def _quantize_linear(
    x,
    y_scale,
    y_zero_point,
    *,
    version,
    axis=1,
    block_size=0,
    output_dtype=0,
    precision=0,
    saturate=1,
    straight_through=False,
):
    target = _output_type(y_zero_point, output_dtype, version)
    layout = quantization_layout(
        x.shape, y_scale, y_zero_point, axis=axis, block_size=block_size, per_tensor_only=version < 13
    )
    return quantize(
        x,
        y_scale,
        y_zero_point,
        target,
        layout,
        block_size=block_size,
        saturate=saturate,
        precision=precision,
        straight_through=straight_through,
    )


def _output_type(zero_point, output_dtype: int, version: int) -> str:
    """The output's ONNX type: the zero point's, else ``output_dtype``'s, else uint8."""
    allowed = _output_types(version)
    requested = type_name(output_dtype, name="output_dtype") if output_dtype else None
    if zero_point is not None:
        given = onnx_type_name(zero_point.dtype)
        if requested is not None and requested != given:
            raise OnnxValidationError(
                f"got `output_dtype`={output_dtype} ({requested}) but `y_zero_point` of type {given}; they must agree."
            )
        return given
    if requested is not None and requested not in allowed:
        raise OnnxTypeError(
            f"got `output_dtype`={output_dtype} ({requested}); it must be one of {', '.join(sorted(allowed))}."
        )
    return requested or "uint8"


@functools.cache
def _output_types(version: int) -> frozenset[str]:
    output = onnx.defs.get_schema("QuantizeLinear", version).outputs[0]
    return schema_types("QuantizeLinear", version, output.type_str)


__all__ = ["quantize_linear"]
