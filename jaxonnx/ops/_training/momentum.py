"""Momentum of ai.onnx.preview.training: version 1 (modes "standard" and "nesterov")."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.training import optimizer_groups, regrouped


@register("Momentum", 1, domain="ai.onnx.preview.training", folds=False)
def momentum(R, T, *inputs, alpha, beta, mode, norm_coefficient):
    """Implements ONNX Momentum (ai.onnx.preview.training): one step of SGD with momentum.

    For each tensor, with the regularized gradient ``g = norm_coefficient * X + G`` and
    ``b = beta`` after the first step (``T > 0``) and 1 at it: ``V_new = alpha * V + b * g``,
    and ``X_new = X - R * V_new`` in "standard" mode or ``X_new = X - R * (g + alpha *
    V_new)`` in "nesterov" mode. Computed in the tensors' type; ``T`` may be traced.

    Args:
        R: the learning rate, a float scalar.
        T: the update count, an int64 scalar.
        *inputs: for ``n`` tensors, their values ``X``, then their gradients ``G``, then
            their momentums ``V`` (``3 * n`` tensors).
        alpha: the decay of the accumulated momentum.
        beta: the coefficient of the gradient in the momentum.
        mode: "standard" or "nesterov".
        norm_coefficient: the L2 regularization coefficient (``0.5 * norm_coefficient * ||X||²``).

    Returns:
        The new values of the ``n`` tensors, then their new ``V``.

    Example:
        >>> x_new, v_new = jaxonnx.ops.momentum(jnp.float32(0.5), jnp.int32(3), jnp.array([1.0]), jnp.array([2.0]),
        ...                                     jnp.array([1.0]), alpha=0.5, beta=0.5, mode="standard",
        ...                                     norm_coefficient=0.0)
        >>> x_new, v_new
        (Array([0.25], dtype=float32), Array([1.5], dtype=float32))
    """
    if mode not in ("standard", "nesterov"):
        raise OnnxValidationError(f"got `mode`={mode!r}; it is 'standard' or 'nesterov'.")
    r, t, groups = optimizer_groups(R, T, inputs, per_tensor=("X", "G", "V"))
    # The first step takes the gradient whole: the momentum starts as the gradient itself.
    b = jnp.where(t > 0, jnp.asarray(beta, r.dtype), jnp.asarray(1, r.dtype))

    def step(x, g, v):
        g = norm_coefficient * x + g
        v_new = alpha * v + b * g
        direction = v_new if mode == "standard" else g + alpha * v_new
        return x - r * direction, v_new

    return regrouped([step(*group) for group in groups])


__all__ = ["momentum"]
