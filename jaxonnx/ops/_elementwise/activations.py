"""The activation functions: Sigmoid, HardSigmoid, HardSwish, Relu, LeakyRelu, Elu, Selu,
Softplus, Celu, Mish, Softsign, ThresholdedRelu, Swish, SwiGLU, PRelu and Shrink. Version 1
of most of them only adds ``consumed_inputs`` (ignored); the others only widen the type
list (Relu-14 adds signed integers), except PRelu-7, which broadcasts ``slope`` numpy's way.

Except Shrink (which also takes integers, and is exact in numpy), they do not fold
(``folds=False``): they are never shape arithmetic, and numpy's and XLA's ``exp`` differ
in the last bit. The float attributes are Python floats, which take
the dtype of ``X`` (JAX's weak typing).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.legacy import without_consumed_inputs


@register("Sigmoid", 6, 13, folds=False, padding="elementwise", layout="elementwise")
def sigmoid(X):
    """Implements ONNX Sigmoid: ``1 / (1 + exp(-X))``.

    Example:
        >>> jaxonnx.ops.sigmoid(jnp.array([0.0, 2.0]))
        Array([0.5     , 0.880797], dtype=float32)
    """
    return jax.nn.sigmoid(X)


@register("HardSigmoid", 6, 22, folds=False, padding="elementwise", layout="elementwise")
def hard_sigmoid(X, *, alpha: float = 0.2, beta: float = 0.5):
    """Implements ONNX HardSigmoid: ``max(0, min(1, alpha * X + beta))``.

    Example:
        >>> jaxonnx.ops.hard_sigmoid(jnp.array([-5.0, 0.5, 5.0]))
        Array([0. , 0.6, 1. ], dtype=float32)
    """
    return jnp.clip(alpha * X + beta, 0, 1)


@register("HardSwish", 14, 22, folds=False, padding="elementwise", layout="elementwise")
def hard_swish(X):
    """Implements ONNX HardSwish: ``X * max(0, min(1, X / 6 + 0.5))``.

    Example:
        >>> jaxonnx.ops.hard_swish(jnp.array([-4.0, 1.5, 4.0]))
        Array([-0.   ,  1.125,  4.   ], dtype=float32)
    """
    return X * jnp.clip(X / 6 + 0.5, 0, 1)


@register("Relu", 6, 13, 14, folds=False, padding="elementwise", layout="elementwise")
def relu(X):
    """Implements ONNX Relu: ``max(0, X)`` (floats, and signed integers from version 14).

    Example:
        >>> jaxonnx.ops.relu(jnp.array([-1, 2]))
        Array([0, 2], dtype=int32)
    """
    return jax.nn.relu(X)


@register("LeakyRelu", 6, 16, folds=False, padding="elementwise", layout="elementwise")
def leaky_relu(X, *, alpha: float = 0.01):
    """Implements ONNX LeakyRelu: ``X`` where ``X > 0``, else ``alpha * X``.

    Example:
        >>> jaxonnx.ops.leaky_relu(jnp.array([-2.0, 3.0]), alpha=0.5)
        Array([-1.,  3.], dtype=float32)
    """
    return jnp.where(X > 0, X, alpha * X)


@register("Elu", 6, 22, folds=False, padding="elementwise", layout="elementwise")
def elu(X, *, alpha: float = 1.0):
    """Implements ONNX Elu: ``X`` where ``X > 0``, else ``alpha * (exp(X) - 1)``.

    Example:
        >>> jaxonnx.ops.elu(jnp.array([-1.0, 3.0]), alpha=2.0)
        Array([-1.2642411,  3.       ], dtype=float32)
    """
    return jnp.where(X > 0, X, alpha * _expm1_of_negative_part(X))


@register("Selu", 6, 22, folds=False, padding="elementwise", layout="elementwise")
def selu(X, *, alpha: float = 1.67326319217681884765625, gamma: float = 1.05070102214813232421875):
    """Implements ONNX Selu: ``gamma * X`` where ``X > 0``, else ``gamma * alpha * (exp(X) - 1)``.

    Example:
        >>> jaxonnx.ops.selu(jnp.array([-1.0, 3.0]), alpha=2.0, gamma=3.0)
        Array([-3.7927232,  9.       ], dtype=float32)
    """
    return gamma * jnp.where(X > 0, X, alpha * _expm1_of_negative_part(X))


@register("Softplus", 1, 22, folds=False, padding="elementwise", layout="elementwise")
def softplus(X):
    """Implements ONNX Softplus: ``log(exp(X) + 1)``, computed without overflow for large ``X``.

    Example:
        >>> jaxonnx.ops.softplus(jnp.array([0.0, 100.0]))
        Array([  0.6931472, 100.       ], dtype=float32)
    """
    return jax.nn.softplus(X)


@register("Celu", 12, 28, folds=False, padding="elementwise", layout="elementwise")
def celu(X, *, alpha: float = 1.0):
    """Implements ONNX Celu: ``max(0, X) + min(0, alpha * (exp(X / alpha) - 1))``.

    For ``alpha > 0`` (and also ``alpha < 0``) this is ``X`` where ``X > 0``, else
    ``alpha * expm1(X / alpha)``: the exponential only sees ``X <= 0`` (no overflow, and
    no ``0 * inf`` in the gradient).

    Example:
        >>> jaxonnx.ops.celu(jnp.array([-1.0, 3.0]), alpha=2.0)
        Array([-0.78693867,  3.        ], dtype=float32)
    """
    if alpha == 0:
        raise OnnxValidationError(f"got `alpha`={alpha}; Celu divides by it, so it must not be 0.")
    return jnp.where(X > 0, X, alpha * jnp.expm1(jnp.minimum(X, 0) / alpha))


@register("Mish", 18, 22, folds=False, padding="elementwise", layout="elementwise")
def mish(X):
    """Implements ONNX Mish: ``X * tanh(softplus(X))``, with a softplus that does not overflow.

    Example:
        >>> jaxonnx.ops.mish(jnp.array([-1.0, 0.0, 100.0]))
        Array([ -0.30340144,   0.        , 100.        ], dtype=float32)
    """
    return X * jnp.tanh(jax.nn.softplus(X))


@register("Softsign", 1, 22, folds=False, padding="elementwise", layout="elementwise")
def softsign(input):
    """Implements ONNX Softsign: ``input / (1 + |input|)``.

    Example:
        >>> jaxonnx.ops.softsign(jnp.array([-3.0, 1.0]))
        Array([-0.75,  0.5 ], dtype=float32)
    """
    return input / (1 + jnp.abs(input))


@register("ThresholdedRelu", 10, 22, folds=False, padding="elementwise", layout="elementwise")
def thresholded_relu(X, *, alpha: float = 1.0):
    """Implements ONNX ThresholdedRelu: ``X`` where ``X > alpha``, else 0.

    Example:
        >>> jaxonnx.ops.thresholded_relu(jnp.array([0.5, 1.0, 2.0]))
        Array([0., 0., 2.], dtype=float32)
    """
    return jnp.where(X > alpha, X, jnp.zeros_like(X))


@register("Swish", 24, folds=False, padding="elementwise")
def swish(X, *, alpha: float = 1.0):
    """Implements ONNX Swish: ``X * sigmoid(alpha * X)``.

    Example:
        >>> jaxonnx.ops.swish(jnp.array([-1.0, 2.0]), alpha=0.5)
        Array([-0.37754068,  1.4621172 ], dtype=float32)
    """
    return X * jax.nn.sigmoid(alpha * X)


@register("SwiGLU", 28, folds=False)
def swiglu(A, B, *, alpha: float = 1.0):
    """Implements ONNX SwiGLU: ``Swish(A) * B``, i.e. ``A * sigmoid(alpha * A) * B``.

    Args:
        A: the gate.
        B: the value, of the shape of ``A`` (SwiGLU does not broadcast).
        alpha: the Swish slope.

    Example:
        >>> jaxonnx.ops.swiglu(jnp.array([-1.0, 2.0]), jnp.array([2.0, 0.5]))
        Array([-0.53788286,  0.880797  ], dtype=float32)
    """
    if A.shape != B.shape:
        raise OnnxValidationError(
            f"needs `A` and `B` of one shape (SwiGLU does not broadcast), got {tuple(A.shape)} and {tuple(B.shape)}."
        )
    return A * jax.nn.sigmoid(alpha * A) * B


@register("PRelu", 7, 9, 16, folds=False, padding="elementwise", weights=("slope",), layout="elementwise")
def prelu(X, slope):
    """Implements ONNX PRelu: ``slope * X`` where ``X < 0``, else ``X``.

    Args:
        X: the input (floats; also int32/int64/uint32/uint64 from version 9).
        slope: of the type of ``X``, broadcastable onto ``X`` unidirectionally (numpy's
            rule, with the result of the shape of ``X``).

    Example:
        >>> jaxonnx.ops.prelu(jnp.array([[-2.0, 3.0], [-1.0, -4.0]]), jnp.array([0.5, 0.25]))
        Array([[-1. ,  3. ],
               [-0.5, -1. ]], dtype=float32)
    """
    slope = _onto(slope, X)
    return jnp.where(X < 0, slope * X, X)


def _prelu_legacy(X, slope, *, consumed_inputs=None):
    # Versions 1 and 6 come from Caffe2, where `slope` is one value per channel (dim 1):
    # a 1-D slope that does not broadcast numpy's way is laid along dim 1.
    if slope.ndim == 1 and X.ndim >= 2 and slope.shape[0] == X.shape[1] and slope.shape[0] != X.shape[-1]:
        slope = slope.reshape((-1,) + (1,) * (X.ndim - 2))
    return prelu(X, slope)


register("PRelu", 1, 6, folds=False, padding="elementwise", weights=("slope",))(_prelu_legacy)


def _onto(slope, X):
    """``slope`` of the rank of ``X``, broadcasting to exactly the shape of ``X``."""
    try:
        shape = jnp.broadcast_shapes(tuple(slope.shape), tuple(X.shape))
    except ValueError:
        shape = None
    if shape != tuple(X.shape):
        raise OnnxValidationError(
            f"cannot broadcast `slope` of shape {tuple(slope.shape)} onto `X` of shape {tuple(X.shape)} "
            "(unidirectional broadcasting: the result must have the shape of `X`)."
        )
    return slope.reshape((1,) * (X.ndim - slope.ndim) + tuple(slope.shape))


@register("Shrink", 9, padding="elementwise", layout="elementwise")
def shrink(input, *, bias: float = 0.0, lambd: float = 0.5):
    """Implements ONNX Shrink: ``input + bias`` where ``input < -lambd``, ``input - bias``
    where ``input > lambd``, else 0.

    Integer inputs give the result truncated toward zero and wrapped into their type, as
    onnx.reference and onnxruntime compute it (uint8 ``1 - 3`` is 254), exactly in integer
    arithmetic: ``trunc(x - bias)`` is ``x - ceil(bias)`` where ``x >= bias`` and
    ``x - floor(bias)`` elsewhere.

    Example:
        >>> jaxonnx.ops.shrink(jnp.array([-2.0, 0.3, 2.0]), bias=0.5, lambd=1.0)
        Array([-1.5,  0. ,  1.5], dtype=float32)
    """
    xp = namespace(input)
    if input.dtype.kind not in "iu":
        return xp.where(input < -lambd, input + bias, xp.where(input > lambd, input - bias, xp.zeros_like(input)))
    # The comparisons in float (as the text compares with float attributes).
    wide = np.float64 if xp is np else jax.dtypes.canonicalize_dtype(np.float64)
    x = input.astype(wide)
    down, up = _wrapped(math.floor(bias), input.dtype), _wrapped(math.ceil(bias), input.dtype)
    plus = xp.where(x >= -bias, input + down, input + up)  # trunc(x + bias)
    minus = xp.where(x >= bias, input - up, input - down)  # trunc(x - bias)
    return xp.where(x < -lambd, plus, xp.where(x > lambd, minus, xp.zeros_like(input)))


def _wrapped(value: int, dtype):
    """The integer ``value`` modulo the width of ``dtype``, as a scalar of that type."""
    bits = np.dtype(dtype).itemsize * 8
    return np.asarray(value % 2**bits, np.uint64).astype(dtype)


def _expm1_of_negative_part(X):
    # exp(X) - 1 only where X <= 0 is used; min(X, 0) keeps the other branch finite, so its
    # zero cotangent cannot meet an inf (0 * inf = nan) in the gradient of `where`.
    return jnp.expm1(jnp.minimum(X, 0))


for _op_type, _fn in [
    ("Sigmoid", sigmoid),
    ("HardSigmoid", hard_sigmoid),
    ("Relu", relu),
    ("LeakyRelu", leaky_relu),
    ("Elu", elu),
    ("Selu", selu),
]:
    register(_op_type, 1, folds=False, padding="elementwise", layout="elementwise")(without_consumed_inputs(_fn))
del _op_type, _fn

__all__ = [
    "sigmoid",
    "hard_sigmoid",
    "hard_swish",
    "relu",
    "leaky_relu",
    "elu",
    "selu",
    "softplus",
    "celu",
    "mish",
    "softsign",
    "thresholded_relu",
    "swish",
    "swiglu",
    "prelu",
    "shrink",
]
