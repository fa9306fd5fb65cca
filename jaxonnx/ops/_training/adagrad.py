"""Adagrad of ai.onnx.preview.training: version 1."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.training import optimizer_groups, regrouped


@register("Adagrad", 1, domain="ai.onnx.preview.training", folds=False)
def adagrad(R, T, *inputs, decay_factor=0.0, epsilon=1e-6, norm_coefficient=0.0):
    """Implements ONNX Adagrad (ai.onnx.preview.training): one ADAGRAD step of one or more tensors.

    For each tensor, with ``r = R / (1 + T * decay_factor)`` and the regularized gradient
    ``g = norm_coefficient * X + G``: ``H_new = H + g * g`` and
    ``X_new = X - r * g / (sqrt(H_new) + epsilon)``. Computed in the tensors' type; ``T``
    may be traced.

    Args:
        R: the learning rate, a float scalar.
        T: the update count, an int64 scalar.
        *inputs: for ``n`` tensors, their values ``X``, then their gradients ``G``, then
            their accumulated squared gradients ``H`` (``3 * n`` tensors).
        decay_factor: how fast the learning rate decays with ``T``.
        epsilon: added to the denominator, against division by zero.
        norm_coefficient: the L2 regularization coefficient (``0.5 * norm_coefficient * ||X||²``).

    Returns:
        The new values of the ``n`` tensors, then their new ``H``.

    Example:
        >>> x_new, h_new = jaxonnx.ops.adagrad(jnp.float32(0.1), jnp.int32(0), jnp.array([1.0]), jnp.array([2.0]),
        ...                                    jnp.array([0.0]), epsilon=0.0)
        >>> x_new, h_new
        (Array([0.9], dtype=float32), Array([4.], dtype=float32))
    """
    r, t, groups = optimizer_groups(R, T, inputs, per_tensor=("X", "G", "H"))
    r = r / (1 + t.astype(r.dtype) * decay_factor)

    def step(x, g, h):
        g = norm_coefficient * x + g
        h_new = h + g * g
        return x - r * g / (jnp.sqrt(h_new) + epsilon), h_new

    return regrouped([step(*group) for group in groups])


__all__ = ["adagrad"]
