"""The activation functions: Sigmoid, HardSigmoid, HardSwish, Relu, LeakyRelu, Elu, Selu,
Softplus. Version 1 of most of them only adds ``consumed_inputs`` (ignored); the others
only widen the type list (Relu-14 adds signed integers).

They do not fold (``folds=False``): they are never shape arithmetic, and numpy's and
XLA's ``exp`` differ in the last bit. The float attributes are Python floats, which take
the dtype of ``X`` (JAX's weak typing).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.legacy import without_consumed_inputs


@register("Sigmoid", 6, 13, folds=False)
def sigmoid(X):
    """Implements ONNX Sigmoid: ``1 / (1 + exp(-X))``.

    Example:
        >>> jaxonnx.ops.sigmoid(jnp.array([0.0, 2.0]))
        Array([0.5     , 0.880797], dtype=float32)
    """
    return jax.nn.sigmoid(X)


@register("HardSigmoid", 6, 22, folds=False)
def hard_sigmoid(X, *, alpha: float = 0.2, beta: float = 0.5):
    """Implements ONNX HardSigmoid: ``max(0, min(1, alpha * X + beta))``.

    Example:
        >>> jaxonnx.ops.hard_sigmoid(jnp.array([-5.0, 0.5, 5.0]))
        Array([0. , 0.6, 1. ], dtype=float32)
    """
    return jnp.clip(alpha * X + beta, 0, 1)


@register("HardSwish", 14, 22, folds=False)
def hard_swish(X):
    """Implements ONNX HardSwish: ``X * max(0, min(1, X / 6 + 0.5))``.

    Example:
        >>> jaxonnx.ops.hard_swish(jnp.array([-4.0, 1.5, 4.0]))
        Array([-0.   ,  1.125,  4.   ], dtype=float32)
    """
    return X * jnp.clip(X / 6 + 0.5, 0, 1)


@register("Relu", 6, 13, 14, folds=False)
def relu(X):
    """Implements ONNX Relu: ``max(0, X)`` (floats, and signed integers from version 14).

    Example:
        >>> jaxonnx.ops.relu(jnp.array([-1, 2]))
        Array([0, 2], dtype=int32)
    """
    return jax.nn.relu(X)


@register("LeakyRelu", 6, 16, folds=False)
def leaky_relu(X, *, alpha: float = 0.01):
    """Implements ONNX LeakyRelu: ``X`` where ``X > 0``, else ``alpha * X``.

    Example:
        >>> jaxonnx.ops.leaky_relu(jnp.array([-2.0, 3.0]), alpha=0.5)
        Array([-1.,  3.], dtype=float32)
    """
    return jnp.where(X > 0, X, alpha * X)


@register("Elu", 6, 22, folds=False)
def elu(X, *, alpha: float = 1.0):
    """Implements ONNX Elu: ``X`` where ``X > 0``, else ``alpha * (exp(X) - 1)``.

    Example:
        >>> jaxonnx.ops.elu(jnp.array([-1.0, 3.0]), alpha=2.0)
        Array([-1.2642411,  3.       ], dtype=float32)
    """
    return jnp.where(X > 0, X, alpha * _expm1_of_negative_part(X))


@register("Selu", 6, 22, folds=False)
def selu(X, *, alpha: float = 1.67326319217681884765625, gamma: float = 1.05070102214813232421875):
    """Implements ONNX Selu: ``gamma * X`` where ``X > 0``, else ``gamma * alpha * (exp(X) - 1)``.

    Example:
        >>> jaxonnx.ops.selu(jnp.array([-1.0, 3.0]), alpha=2.0, gamma=3.0)
        Array([-3.7927232,  9.       ], dtype=float32)
    """
    return gamma * jnp.where(X > 0, X, alpha * _expm1_of_negative_part(X))


@register("Softplus", 1, 22, folds=False)
def softplus(X):
    """Implements ONNX Softplus: ``log(exp(X) + 1)``, computed without overflow for large ``X``.

    Example:
        >>> jaxonnx.ops.softplus(jnp.array([0.0, 100.0]))
        Array([  0.6931472, 100.       ], dtype=float32)
    """
    return jax.nn.softplus(X)


def _expm1_of_negative_part(X):
    # exp(X) - 1 only where X <= 0 is used; min(X, 0) keeps the other branch finite, so its
    # zero cotangent cannot meet an inf (0 * inf = nan) in the gradient of `where`.
    return jnp.expm1(jnp.minimum(X, 0))


for _op_type, _fn in [
    ("Sigmoid", sigmoid), ("HardSigmoid", hard_sigmoid), ("Relu", relu), ("LeakyRelu", leaky_relu),
    ("Elu", elu), ("Selu", selu),
]:
    register(_op_type, 1, folds=False)(without_consumed_inputs(_fn))
del _op_type, _fn

__all__ = ["sigmoid", "hard_sigmoid", "hard_swish", "relu", "leaky_relu", "elu", "selu", "softplus"]
