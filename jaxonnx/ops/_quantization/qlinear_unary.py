"""QLinearSigmoid and QLinearLeakyRelu (com.microsoft, version 1): an activation of a quantized
tensor, quantized, as onnxruntime computes its 256-entry lookup table (per element here,
which gives the same values)."""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.quantization import (
    dequantize,
    fused_multiply_add,
    per_tensor_value,
    quantize,
)
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_PER_TENSOR = ("tensor", None)
# onnxruntime's logistic: Eigen's rational approximation on [-18, 18] (MlasLogisticConstants).
_LOGISTIC_RANGE = 18.0
_ALPHAS = (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05, 8.51377133304701e-03, 2.48287947061529e-01)
_BETAS = (
    6.10247389755681e-13,
    5.76102136993427e-09,
    6.29106785017040e-06,
    1.70198817374094e-03,
    1.16817656904453e-01,
    9.93151921023180e-01,
)


def _schema(name: str, what: str, attributes=()):
    return contrib_schema(
        name,
        f"Y = quantize({what}(dequantize(X))), per-tensor scales and zero points.",
        inputs=[
            ("X", "T"),
            ("X_scale", "tensor(float)"),
            ("X_zero_point", "T", "optional"),
            ("Y_scale", "tensor(float)"),
            ("Y_zero_point", "T", "optional"),
        ],
        outputs=[("Y", "T")],
        type_constraints=[("T", ["tensor(uint8)", "tensor(int8)"])],
        attributes=attributes,
        differentiable=(),
    )


def _through(fn, X, X_scale, X_zero_point, Y_scale, Y_zero_point):
    """``quantize(fn(dequantize(X)))`` in float32, as onnxruntime builds its table."""
    x_scale, x_zero = per_tensor_value(X_scale, "X_scale"), per_tensor_value(X_zero_point, "X_zero_point")
    y_scale, y_zero = per_tensor_value(Y_scale, "Y_scale"), per_tensor_value(Y_zero_point, "Y_zero_point")
    values = dequantize(X, x_scale.astype(np.float32), x_zero, np.float32, _PER_TENSOR)
    return quantize(fn(values), y_scale.astype(np.float32), y_zero, onnx_type_name(X.dtype), _PER_TENSOR)


def logistic(v):
    """onnxruntime's float32 logistic (MlasComputeLogistic, its x86-64 FMA kernel): ``v``
    clamped to [-18, 18], ``0.5 + v * p(v**2) / q(v**2)`` with the polynomials evaluated
    by fused multiply-adds, clamped below at 0."""
    xp = namespace(v)
    f32 = np.float32
    v = xp.clip(v, f32(-_LOGISTIC_RANGE), f32(_LOGISTIC_RANGE))
    square = v * v
    p = xp.full_like(v, f32(_ALPHAS[0]))
    for alpha in _ALPHAS[1:]:
        p = fused_multiply_add(square, p, xp.asarray(f32(alpha)))
    q = xp.full_like(v, f32(_BETAS[0]))
    for beta in _BETAS[1:]:
        q = fused_multiply_add(square, q, xp.asarray(f32(beta)))
    return xp.maximum((v * p) / q + f32(0.5), f32(0.0))


@register("QLinearSigmoid", 1, domain="com.microsoft", schema=_schema("QLinearSigmoid", "Sigmoid"))
def qlinear_sigmoid(X, X_scale, X_zero_point, Y_scale, Y_zero_point=None):
    """Implements com.microsoft QLinearSigmoid: the logistic function of a quantized tensor, quantized.

    ``Y = saturate(round(sigmoid(X_scale * (X - X_zero_point)) / Y_scale) + Y_zero_point)``
    with onnxruntime's float32 logistic (:func:`logistic`, a rational approximation
    within 2 ulp of the true value), so that the integers agree with onnxruntime's.

    Args:
        X: uint8 or int8.
        X_scale, Y_scale: float scalars.
        X_zero_point, Y_zero_point: optional scalars of ``X``'s type (0).

    Returns:
        The quantized logistic, of ``X``'s type.

    Example:
        >>> x = jnp.array([-128, 0, 50, 127], jnp.int8)
        >>> jaxonnx.ops.qlinear_sigmoid(x, jnp.float32(0.05), jnp.int8(0), jnp.float32(1 / 256), jnp.int8(-128))
        Array([-128,    0,  109,  127], dtype=int8)
    """
    return _through(logistic, X, X_scale, X_zero_point, Y_scale, Y_zero_point)


_ALPHA = attribute("alpha", 0.01, "The slope for negative inputs.")
_LEAKY_SCHEMA = _schema("QLinearLeakyRelu", "LeakyRelu", attributes=[_ALPHA])


@register("QLinearLeakyRelu", 1, domain="com.microsoft", schema=_LEAKY_SCHEMA)
def qlinear_leaky_relu(X, X_scale, X_zero_point, Y_scale, Y_zero_point=None, *, alpha=0.01):
    """Implements com.microsoft QLinearLeakyRelu: LeakyRelu of a quantized tensor, quantized.

    ``Y = saturate(round(f(X_scale * (X - X_zero_point)) / Y_scale) + Y_zero_point)`` with
    ``f(v) = v`` for ``v >= 0`` and ``alpha * v`` below, in float32 as onnxruntime.

    Args:
        X: uint8 or int8.
        X_scale, Y_scale: float scalars.
        X_zero_point, Y_zero_point: optional scalars of ``X``'s type (0).
        alpha: the slope for negative values.

    Returns:
        The quantized result, of ``X``'s type.

    Example:
        >>> x = jnp.array([0, 100, 128, 255], jnp.uint8)
        >>> jaxonnx.ops.qlinear_leaky_relu(x, jnp.float32(0.1), jnp.uint8(128), jnp.float32(0.1), jnp.uint8(128), alpha=0.5)
        Array([ 64, 114, 128, 255], dtype=uint8)
    """
    slope = np.float32(alpha)  # float32, as onnxruntime multiplies

    def leaky(v):
        xp = namespace(v)
        return xp.where(v >= 0, v, slope * v)

    return _through(leaky, X, X_scale, X_zero_point, Y_scale, Y_zero_point)


__all__ = ["qlinear_leaky_relu", "qlinear_sigmoid"]
