"""QLinearSoftmax (com.microsoft, version 1): Softmax of a quantized tensor, quantized, as
onnxruntime computes it (an exponential table over the 256 input steps)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.broadcasting import true_divide
from jaxonnx.ops._helpers.common import namespace, normalize_axis
from jaxonnx.ops._helpers.quantization import (
    per_tensor_value,
    round_half_to_even,
    saturate_rounded,
)
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_SCHEMA = contrib_schema(
    "QLinearSoftmax",
    "Y = quantize(Softmax(dequantize(X), axis)), with Softmax's semantics of opset `opset`.",
    inputs=[
        ("X", "T"),
        ("X_scale", "tensor(float)"),
        ("x_zero_point", "T", "optional"),
        ("y_scale", "tensor(float)"),
        ("y_zero_point", "T"),
    ],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(uint8)", "tensor(int8)"])],
    attributes=[
        attribute_without_default(
            "opset", onnx.defs.OpSchema.AttrType.INT, "The opset of the Softmax it replaces.", required=True
        ),
        # -1 at every opset: onnxruntime's schema default, which its kernel then always sees
        # (its own fallback to 1 before opset 13 never applies).
        attribute("axis", -1, "The softmax axis."),
    ],
    differentiable=(),
)


@register("QLinearSoftmax", 1, domain="com.microsoft", schema=_SCHEMA)
def qlinear_softmax(X, X_scale, x_zero_point, y_scale, y_zero_point, *, opset, axis=-1):
    """Implements com.microsoft QLinearSoftmax: Softmax of a quantized tensor, quantized.

    Softmax's semantics of opset ``opset``: before 13 over the matrix coerced at ``axis``
    (every axis from ``axis`` on), from 13 over ``axis`` alone; ``axis`` is -1 by default
    at every opset, as in onnxruntime. As
    onnxruntime: ``e[k] = float32(exp((k - 255 + shift) * X_scale))`` for the 256 input
    steps ``k = X - max(X) + 255`` (in float64; the shift keeps the sum of a row finite and
    cancels out; ``x_zero_point`` cancels too), the row sums added in order in float32,
    and ``Y = saturate(round(e * floor(1 / y_scale) / sum) + y_zero_point)``. Where
    onnxruntime's int8 kernel wraps a value above 127 around (a probability of nearly 1
    with ``y_zero_point`` -128), this saturates to 127.

    Args:
        X: uint8 or int8.
        X_scale, y_scale: float scalars.
        x_zero_point: optional scalar of ``X``'s type (not needed: it cancels).
        y_zero_point: scalar of ``X``'s type.
        opset: the opset of the Softmax the node replaces.
        axis: the softmax axis.

    Returns:
        The quantized probabilities, of ``X``'s type.

    Example:
        >>> x = jnp.array([[0, 10, 20]], jnp.uint8)
        >>> jaxonnx.ops.qlinear_softmax(x, jnp.float32(0.1), None, jnp.float32(1 / 256), jnp.uint8(0), opset=13)
        Array([[ 23,  63, 170]], dtype=uint8)
    """
    per_tensor_value(x_zero_point, "x_zero_point")
    x_scale = per_tensor_value(X_scale, "X_scale").astype(np.float32)
    y_scale = per_tensor_value(y_scale, "y_scale").astype(np.float32)
    y_zero = per_tensor_value(y_zero_point, "y_zero_point")
    xp = namespace(X, x_scale, y_scale)
    axis = normalize_axis(axis, X.ndim)
    moved = X if opset < 13 else xp.moveaxis(X, axis, -1)
    length = int(np.prod(X.shape[axis:])) if opset < 13 else X.shape[axis]
    rows = moved.reshape((-1, length)).astype(np.int32)
    steps = rows - rows.max(axis=-1, keepdims=True) + 255
    exps = xp.take(_exponential_table(x_scale, length, xp), steps)
    sums = _sum_in_order(exps)
    numerator = exps * xp.floor(true_divide(np.float32(1.0), y_scale))
    # Rounded before the zero point is added, as onnxruntime (integers: the sum is exact).
    rounded = round_half_to_even(true_divide(numerator, sums[:, None])) + y_zero.astype(np.float32)
    y = saturate_rounded(rounded, onnx_type_name(X.dtype)).reshape(moved.shape)
    return y if opset < 13 else xp.moveaxis(y, -1, axis)


def _exponential_table(x_scale, length: int, xp):
    """onnxruntime's table: ``float32(exp((k - 255 + shift) * x_scale))`` for k in 0..255,
    with ``shift = max(0, log(FLT_MAX / length) - 5) / x_scale``, in float64 where at hand."""
    wide = np.float64 if xp is np or jax.config.jax_enable_x64 else np.float32
    headroom = np.float32(np.finfo(np.float32).max) / np.float32(length)
    shift = max(0.0, float(np.log(np.float64(headroom))) - 5.0)
    scale = x_scale.astype(wide)
    steps = xp.arange(256, dtype=wide) - wide(255)
    return xp.exp((steps + shift / scale) * scale).astype(np.float32)


def _sum_in_order(values):
    """The float32 sums of the rows of ``values``, added left to right (onnxruntime's order:
    the rounding of each step is part of the result)."""
    if namespace(values) is np:
        return np.add.accumulate(values, axis=-1)[:, -1]
    total, _ = jax.lax.scan(
        lambda acc, column: (acc + column, None), jnp.zeros(values.shape[:1], values.dtype), values.T
    )
    return total


__all__ = ["qlinear_softmax"]
