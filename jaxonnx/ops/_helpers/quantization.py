"""Linear quantization shared by QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and
the integer and quantized products: rounding (with a straight-through variant), the
per-tensor / per-axis / blocked layout of scales and zero points, saturation, and exact
int32 products. Registers no op.

Gradients. Rounding is flat almost everywhere, so ``jax.grad`` through a quantization
is zero, as the math says. :func:`round_half_to_even` takes ``straight_through=True``
for quantization-aware training: the rounding then passes its tangent on unchanged (the
straight-through estimator), and the saturating clip around it gives zero outside the
representable range, as PyTorch's fake-quantize does. JAX differentiates only through
inexact (float) arrays, so a straight-through quantization returns the quantized values
in a float *carrier* (float32: it holds every value of the 16-bit and narrower types
exactly) instead of the quantized type; :func:`dequantize` takes such a carrier as its
``x``. Through a quantize-dequantize pair the gradient is then 1 inside the range and 0
outside.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

from jaxonnx._core.dtypes import jax_dtype, numpy_dtype
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import matmul_operands, true_divide
from jaxonnx.ops._helpers.casting import SATURATING, TYPE_CODES, TYPE_NAMES, cast_to
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.window import add_channel_bias, check_weights, output_geometry, window_attributes

#: The saturation range of each integer type QuantizeLinear produces (its text's table).
INTEGER_RANGES = {
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint4": (0, 15),
    "int4": (-8, 7),
    "uint2": (0, 3),
    "int2": (-2, 1),
}
#: Types without infinities or NaN: conversion always saturates (``saturate`` is for float8).
_ALWAYS_SATURATING = {"float4e2m1", "float6e2m3", "float6e3m2"}


def round_half_to_even(v, *, straight_through: bool = False):
    """``v`` rounded to the nearest integer, ties to even (``np.rint``), in ``v``'s dtype.

    Args:
        v: a float array (numpy or JAX).
        straight_through: the gradient. False (the default): zero, as rounding's
            derivative is almost everywhere. True: the straight-through estimator, the
            tangent passed on unchanged (the derivative of the identity).

    Example:
        >>> round_half_to_even(np.array([0.5, 1.5, 2.5, -2.5]))
        array([ 0.,  2.,  2., -2.])
        >>> jax.grad(lambda v: round_half_to_even(v, straight_through=True))(2.3)
        Array(1., dtype=float32, weak_type=True)
    """
    if namespace(v) is np:
        return np.rint(v)
    return _straight_through(jnp.round, v) if straight_through else jnp.round(v)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _straight_through(fn, v):
    return fn(v)


@_straight_through.defjvp
def _straight_through_jvp(fn, primals, tangents):
    (v,), (tangent,) = primals, tangents
    return fn(v), tangent


def type_name(code: int, *, name: str) -> str:
    """The ONNX element type name of the DataType ``code`` given as attribute ``name``."""
    if code not in TYPE_NAMES or code == 0:
        raise OnnxValidationError(f"got `{name}`={code}, which is no ONNX element type code.")
    return TYPE_NAMES[code]


def division_dtype(x, scale, precision: int) -> np.dtype:
    """The dtype QuantizeLinear divides in: ``precision`` if given, else ``scale``'s type
    (float32 for a float8e8m0 scale, a bare power of two; float64, or float32 with
    ``jax_enable_x64`` off, for an int32 scale)."""
    if precision:
        dtype = numpy_dtype(precision) if precision in TYPE_NAMES else None
        if dtype is None or not jnp.issubdtype(dtype, jnp.floating) or dtype.itemsize < 2:
            shown = TYPE_NAMES.get(precision, "no type")
            raise OnnxValidationError(
                f"got `precision`={precision} ({shown}); it must name a float type of 16 bits or more."
            )
    elif jnp.issubdtype(scale.dtype, jnp.floating) and np.dtype(scale.dtype).itemsize >= 2:
        dtype = np.dtype(scale.dtype)
    elif jnp.issubdtype(scale.dtype, jnp.floating):
        dtype = np.dtype(np.float32)
    else:
        dtype = np.dtype(np.float64)
    return dtype if namespace(x, scale) is np else jax_dtype(dtype)


def quantization_layout(
    x_shape, scale, zero_point, *, axis: int, block_size: int, per_tensor_only=False, names=("y_scale", "y_zero_point")
):
    """How ``scale`` (and ``zero_point``, of the same shape) apply to an input of ``x_shape``:
    ``("tensor", None)``, ``("axis", axis)`` or ``("block", axis)``, checked as the text says.

    Per tensor: a scalar (a one-element 1-D tensor is accepted too, as onnxruntime and
    onnx.reference accept it). Per axis: a 1-D tensor of length ``x_shape[axis]``.
    Blocked (``block_size > 0``): ``x``'s shape with ``ceil(D / block_size)`` at ``axis``.
    """
    scale_name, zero_name = names
    # A scalar with a one-element 1-D is the same per-tensor layout (onnx's node cases mix them).
    same = zero_point is None or tuple(zero_point.shape) == tuple(scale.shape)
    if not same and not (_per_tensor(scale) and _per_tensor(zero_point)):
        raise OnnxValidationError(
            f"needs `{zero_name}` of the shape of `{scale_name}` {tuple(scale.shape)}, got {tuple(zero_point.shape)}."
        )
    if block_size < 0:
        raise OnnxValidationError(f"got `block_size`={block_size}; it must be positive (or 0: not blocked).")
    if _per_tensor(scale):
        return "tensor", None
    if per_tensor_only:
        raise OnnxValidationError(
            f"needs a scalar `{scale_name}` (per-tensor quantization), got shape {tuple(scale.shape)}."
        )
    rank = len(x_shape)
    axis = normalize_axis(axis, rank)
    if not block_size:
        if scale.ndim != 1 or scale.shape[0] != x_shape[axis]:
            raise OnnxValidationError(
                f"got `{scale_name}` of shape {tuple(scale.shape)} for `x` of shape {tuple(x_shape)} and `axis`={axis}; "
                f"it must be a scalar, or 1-D of length {x_shape[axis]} (per axis), or with `block_size` blocked."
            )
        return "axis", axis
    expected = tuple(x_shape[:axis]) + (-(-x_shape[axis] // block_size),) + tuple(x_shape[axis + 1 :])
    if scale.ndim != rank or any(s != x for i, (s, x) in enumerate(zip(scale.shape, x_shape)) if i != axis):
        raise OnnxValidationError(
            f"got `{scale_name}` of shape {tuple(scale.shape)} for `x` of shape {tuple(x_shape)}, `axis`={axis} and "
            f"`block_size`={block_size}; blocked quantization needs the shape {expected}."
        )
    blocks = scale.shape[axis]
    if blocks * block_size < x_shape[axis] or (blocks - 1) * block_size >= x_shape[axis]:
        low, high = -(-x_shape[axis] // blocks), (-(-x_shape[axis] // (blocks - 1)) - 1 if blocks > 1 else None)
        accepted = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise OnnxValidationError(
            f"got `block_size`={block_size} for axis {axis} of `x` (size {x_shape[axis]}) and {blocks} blocks in "
            f"`{scale_name}`; the accepted range is {accepted}."
        )
    return "block", axis


def _per_tensor(value) -> bool:
    """A scalar, or a one-element 1-D tensor (onnxruntime and onnx.reference accept both)."""
    return value.ndim == 0 or (value.ndim == 1 and value.shape[0] == 1)


def spread(value, x_shape, layout, *, block_size: int = 0):
    """A scale or zero point laid out by :func:`quantization_layout`, broadcastable to ``x_shape``."""
    kind, axis = layout
    if kind == "tensor":
        return value.reshape(())
    if kind == "axis":
        return value.reshape((1,) * axis + (-1,) + (1,) * (len(x_shape) - axis - 1))
    xp = namespace(value)
    repeated = xp.repeat(value, block_size, axis=axis)
    return repeated[(slice(None),) * axis + (slice(0, x_shape[axis]),)]


@np.errstate(all="ignore")  # a zero scale gives infinities, which saturate, as in JAX
def quantize(
    x, scale, zero_point, target: str, layout, *, block_size=0, saturate=1, precision=0, straight_through=False
):
    """``saturate(round(x / scale) + zero_point)`` in the element type ``target`` (an ONNX
    name), as QuantizeLinear's text says: the division in :func:`division_dtype`, rounding
    half to even, the integer types saturated to their range (:data:`INTEGER_RANGES`), the
    float types rounded to nearest even by conversion (float8 saturating as ``saturate``
    says; float4 and float6 always). With ``straight_through``, the result is the float
    carrier described in the module docstring."""
    xp = namespace(x, scale, zero_point)
    dtype = division_dtype(x, scale, precision)
    v = true_divide(x.astype(dtype), spread(scale, x.shape, layout, block_size=block_size).astype(dtype))
    carrier = np.promote_types(dtype, np.float32)
    zero = None if zero_point is None else spread(zero_point, x.shape, layout, block_size=block_size).astype(carrier)
    if target in INTEGER_RANGES:
        low, high = INTEGER_RANGES[target]
        # In float32 at least, which holds every sum that can land inside a 16-bit range
        # exactly (a larger |r| stays outside the range whatever it rounds to).
        q = round_half_to_even(v, straight_through=straight_through).astype(carrier)
        q = _saturate(q if zero is None else q + zero, low, high, xp)
        return q if straight_through else _as_integer(q, target, xp)
    if target not in SATURATING and target not in _ALWAYS_SATURATING:
        raise OnnxTypeError(f"cannot quantize to {target}; it is no quantized type.")
    if zero is not None:  # usually 0 for the float types: adding it only where it is not keeps -0.0
        v = v.astype(carrier)
        v = xp.where(zero == 0, v, v + zero)
    if not straight_through:
        y = cast_to(v, target, saturate=1 if target in _ALWAYS_SATURATING else saturate)
        # JAX differentiates a conversion to a float type as the identity; rounding to a
        # grid of float8 values is flat almost everywhere, as to integers.
        return y if xp is np else jax.lax.stop_gradient(y)
    v = v.astype(carrier)
    if saturate or target in _ALWAYS_SATURATING:
        limit = float(ml_dtypes.finfo(numpy_dtype(TYPE_CODES[target])).max)
        v = _saturate(v, -limit, limit, xp)
    rounded = functools.partial(_round_to, target=target)
    return rounded(v) if xp is np else _straight_through(rounded, v)


def _saturate(v, low, high, xp):
    """``v`` clipped to ``[low, high]``; its gradient is 1 inside the range, the bounds
    included (as PyTorch's fake-quantize), and 0 outside (``clip`` alone gives 1/2 at a bound)."""
    return xp.where((v >= low) & (v <= high), v, xp.clip(v, low, high))


def _round_to(v, *, target):
    """``v`` rounded to the float type ``target`` (nearest, ties to even), in ``v``'s dtype."""
    return cast_to(v, target, saturate=0).astype(v.dtype)


def _as_integer(q, target: str, xp):
    """Saturated integer values ``q`` (a float array) in the integer type ``target``. NaN
    has no integer and the text leaves it open: it becomes the lowest value, as in
    onnxruntime and onnx.reference."""
    q = xp.where(xp.isnan(q), INTEGER_RANGES[target][0], q)
    return q.astype(np.int32).astype(_numpy_or_jax_dtype(target, xp))


def _numpy_or_jax_dtype(target: str, xp) -> np.dtype:
    dtype = numpy_dtype(TYPE_CODES[target])
    return dtype if xp is np else jax_dtype(dtype)


def dequantize(x, scale, zero_point, out_dtype, layout, *, block_size=0):
    """``(x - zero_point) * scale`` in ``out_dtype``, as DequantizeLinear's text says.

    The difference is exact (integers in int32, int32 inputs in int64 where JAX has it,
    float types in float32); the product is taken in float32 and rounded once to
    ``out_dtype`` (for 8-bit inputs and float16 or bfloat16 scales the float32 product is
    exact, so this equals the product in ``out_dtype``). ``x`` may also be a float carrier
    from a straight-through :func:`quantize`.
    """
    xp = namespace(x, scale, zero_point)
    if jnp.issubdtype(x.dtype, jnp.integer) and x.dtype.itemsize >= 4:
        wide = np.dtype(np.int64) if xp is np else jax_dtype(np.int64)
    elif jnp.issubdtype(x.dtype, jnp.integer):
        wide = np.dtype(np.int32)
    else:
        wide = np.dtype(np.float32) if np.dtype(x.dtype).itemsize <= 4 else np.dtype(x.dtype)
    diff = x.astype(wide)
    if zero_point is not None:
        diff = diff - spread(zero_point, x.shape, layout, block_size=block_size).astype(wide)
    compute = np.promote_types(np.float32, diff.dtype) if jnp.issubdtype(wide, jnp.floating) else np.dtype(np.float32)
    y = diff.astype(compute) * spread(scale, x.shape, layout, block_size=block_size).astype(compute)
    return y.astype(out_dtype if xp is np else jax_dtype(out_dtype))


def row_and_column_layout(value, operand, *, rows: bool, name: str):
    """The shape that lays a matrix product's zero point (or scale) ``value`` onto its
    ``operand``: ``()`` per tensor (a scalar or one element); per row of ``A``
    (``rows=True``: an ``M``-vector, or ``(..., M, 1)``) or per column of ``B`` (an
    ``N``-vector, or ``(..., 1, N)``), as MatMulInteger's and QLinearMatMul's texts say.
    None where ``value`` is None."""
    if value is None:
        return None
    if _per_tensor(value):
        return ()
    rank = operand.ndim
    what = "row of `A`" if rows else "column of `B`"
    if rank >= 2:
        length = operand.shape[-2] if rows else operand.shape[-1]
        if value.ndim == 1 and value.shape[0] == length:
            return (1,) * (rank - 2) + ((length, 1) if rows else (1, length))
        keeps = (-1, -2) if rows else (-2, -1)  # the axis of size 1, the axis that matches
        padded = (1,) * (rank - value.ndim) + tuple(value.shape)  # leading dims broadcast
        if (
            2 <= value.ndim <= rank
            and padded[keeps[0]] == 1
            and padded[keeps[1]] == operand.shape[keeps[1]]
            and all(v in (1, o) for v, o in zip(padded[:-2], operand.shape[:-2]))
        ):
            return padded
    shown = "(M,) or (..., M, 1)" if rows else "(N,) or (..., 1, N)"
    raise OnnxValidationError(
        f"got `{name}` of shape {tuple(value.shape)} for an operand of shape {tuple(operand.shape)}; it must be "
        f"a scalar (per tensor) or, per {what}, of shape {shown}."
    )


def zero_points_apart(x, zero_point, shape=None):
    """``x - zero_point`` exactly: in int16 for 8-bit integers, in float32 for float8;
    ``zero_point`` is reshaped to ``shape`` first where given. Without a zero point ``x``
    keeps its type."""
    if zero_point is None:
        return x
    zero = zero_point if shape is None else zero_point.reshape(shape)
    wide = np.int16 if jnp.issubdtype(x.dtype, jnp.integer) else np.float32
    return x.astype(wide) - zero.astype(wide)


def quantized_matmul(a, b, *, names=("A", "B")):
    """``numpy.matmul(a, b)`` of quantized values, accumulated exactly: integers in int32.

    Integer operands are 8-bit, or int16 after subtracting zero points; JAX computes the
    product with ``preferred_element_type=int32`` (no float accumulation), numpy in int32,
    and the sum wraps around only past the int32 range, as the text allows. Float8
    operands (QLinearMatMul-21) multiply in float32 at full precision.
    """
    a, b, out_shape = matmul_operands(a, b, names=names)
    integer = jnp.issubdtype(a.dtype, jnp.integer) and jnp.issubdtype(b.dtype, jnp.integer)
    accumulator = np.int32 if integer else np.float32
    if namespace(a, b) is np:
        return np.matmul(a.astype(accumulator), b.astype(accumulator)).reshape(out_shape)
    if not integer:
        a, b = a.astype(accumulator), b.astype(accumulator)
    elif a.dtype != b.dtype:  # int8 with uint8: both in int16, which holds them exactly
        a, b = a.astype(jnp.int16), b.astype(jnp.int16)
    product = jnp.matmul(a, b, preferred_element_type=accumulator, precision=jax.lax.Precision.HIGHEST)
    return product.reshape(out_shape)


def conv_int32(x, w, x_zero_point, w_zero_point, bias=None, *, auto_pad, dilations, group, kernel_shape, pads, strides):
    """Conv of ``x - x_zero_point`` with ``w - w_zero_point`` (zero points subtracted before
    padding, in int16), accumulated exactly in int32, plus the int32 ``bias``: ConvInteger,
    and QLinearConv's integer part. ``x_zero_point`` is a scalar, ``w_zero_point`` a scalar
    or one per output channel. Window attributes as Conv's."""
    _, strides, dilations, padding, auto_pad = window_attributes(
        x.shape, kernel_shape, strides, dilations, pads, auto_pad
    )
    check_weights(x, w, bias, group, kernel_shape)
    _, padding, _ = output_geometry(x.shape[2:], w.shape[2:], strides, dilations, padding, auto_pad)
    x_shape = per_channel_shape(x_zero_point, 0, w.ndim, name="x_zero_point")
    w_shape = per_channel_shape(w_zero_point, w.shape[0], w.ndim, name="w_zero_point", axis=0)
    x = zero_points_apart(x, x_zero_point, x_shape)
    w = zero_points_apart(w, w_zero_point, w_shape)
    if x.dtype != w.dtype:  # int8 with uint8: both in int16, which holds them exactly
        x, w = x.astype(jnp.int16), w.astype(jnp.int16)
    y = jax.lax.conv_general_dilated(
        x, w, strides, padding, rhs_dilation=dilations, feature_group_count=group, preferred_element_type=jnp.int32
    )
    return add_channel_bias(y, bias)


def per_channel_shape(value, channels: int, rank: int, *, name: str, axis: int = 1):
    """The shape that lays a convolution's scale or zero point onto an array of ``rank``:
    ``()`` per tensor (a scalar or one element), or ``channels`` values along ``axis`` (per
    output channel; ``channels=0`` allows per tensor only). None where ``value`` is None."""
    if value is None:
        return None
    if _per_tensor(value):
        return ()
    if channels and value.ndim == 1 and value.shape[0] == channels:
        return (1,) * axis + (channels,) + (1,) * (rank - axis - 1)
    allowed = (
        f"a scalar (per tensor) or {channels} values (per output channel)" if channels else "a scalar (per tensor)"
    )
    raise OnnxValidationError(f"got `{name}` of shape {tuple(value.shape)}; it must be {allowed}.")


def requantize(acc, multiplier, zero_point, target: str):
    """``saturate(round(acc * multiplier) + zero_point)``: an int32 accumulator brought to
    the output's quantized type, in float32 as onnxruntime computes it (rounding half to
    even; ``target`` an ONNX type name, integer or float8)."""
    xp = namespace(acc, multiplier, zero_point)
    scaled = acc.astype(np.float32) * multiplier.astype(np.float32)
    if target in INTEGER_RANGES:
        low, high = INTEGER_RANGES[target]
        return _as_integer(xp.clip(round_half_to_even(scaled) + zero_point.astype(np.float32), low, high), target, xp)
    zero = zero_point.astype(np.float32)
    return cast_to(xp.where(zero == 0, scaled, scaled + zero), target, saturate=1)


# --- onnxruntime's com.microsoft QOperator ops (QLinearAdd, QGemm, QLinearSoftmax, ...) ---
#
# onnxruntime computes these in float32 with particular instruction sequences: some steps
# fused (FMA, one rounding), others rounded after each operation. The two helpers below
# say which, and compute in float64 where it is at hand (numpy, or JAX with x64 on): a
# product of two float32 values is exact in float64, so rounding the float64 result to
# float32 gives exactly the float32 operation asked for (the fused form may round twice,
# 53 then 24 bits, which differs from one rounding in about one case in 2**29). With x64
# off JAX has no float64; the float32 expression is used, and XLA's CPU fusion may or may
# not contract it into an FMA, so a result can differ from onnxruntime's in the last bit
# of a float32 (and then rarely by one quantization step).


def _float64_at_hand(xp) -> bool:
    return xp is np or jax.config.jax_enable_x64


def fused_multiply_add(a, b, c):
    """``a * b + c`` in float32 with one rounding (an FMA instruction's result)."""
    xp = namespace(a, b, c)
    if not _float64_at_hand(xp):
        return a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)
    wide = np.float64
    return (
        a.astype(np.float32).astype(wide) * b.astype(np.float32).astype(wide) + c.astype(np.float32).astype(wide)
    ).astype(np.float32)


def rounded_multiply_add(a, b, c):
    """``a * b + c`` in float32, the product rounded to float32 before the sum (no FMA)."""
    xp = namespace(a, b, c)
    if not _float64_at_hand(xp):
        return a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)
    wide = np.float64
    product = (a.astype(np.float32).astype(wide) * b.astype(np.float32).astype(wide)).astype(np.float32)
    return (product.astype(wide) + c.astype(np.float32).astype(wide)).astype(np.float32)


def per_tensor_value(value, name: str):
    """``value`` as a scalar: the com.microsoft ops take per-tensor scales and zero points
    (a scalar or a one-element 1-D tensor, as onnxruntime accepts). None stays None."""
    if value is None:
        return None
    if not _per_tensor(value):
        raise OnnxValidationError(f"needs a scalar `{name}` (per tensor), got shape {tuple(value.shape)}.")
    return value.reshape(())


def saturate_rounded(v, target: str):
    """The float32 values ``v`` rounded half to even and saturated to the integer type
    ``target`` (an ONNX name), as onnxruntime's float-to-int conversion and saturating packs."""
    xp = namespace(v)
    low, high = INTEGER_RANGES[target]
    return _as_integer(xp.clip(round_half_to_even(v), low, high), target, xp)


def unpack_low_bits_first(packed, bits: int):
    """The ``bits``-wide unsigned values packed into the uint8 array ``packed``, the first
    value in the lowest bits of each byte (onnxruntime's MatMulNBits and
    GatherBlockQuantized layout): ``packed``'s shape with its last axis ``8 // bits`` times
    longer, as uint8.

    Example:
        >>> unpack_low_bits_first(np.array([0x21, 0xE4], np.uint8), 4)
        array([ 1,  2,  4, 14], dtype=uint8)
        >>> unpack_low_bits_first(np.array([0b11100100], np.uint8), 2)
        array([0, 1, 2, 3], dtype=uint8)
    """
    if bits == 8:
        return packed
    xp = namespace(packed)
    per_byte = 8 // bits
    shifts = xp.asarray(
        (np.arange(per_byte, dtype=np.uint8) * np.uint8(bits)).reshape((1,) * packed.ndim + (per_byte,))
    )
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(tuple(packed.shape[:-1]) + (packed.shape[-1] * per_byte,))
