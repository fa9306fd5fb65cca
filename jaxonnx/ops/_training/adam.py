"""Adam of ai.onnx.preview.training: version 1."""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.training import optimizer_groups, regrouped


@register("Adam", 1, domain="ai.onnx.preview.training", folds=False)
def adam(R, T, *inputs, alpha=0.9, beta=0.999, epsilon=1e-6, norm_coefficient=0.0, norm_coefficient_post=0.0):
    """Implements ONNX Adam (ai.onnx.preview.training): one Adam step of one or more tensors.

    For each tensor, with the regularized gradient ``g = norm_coefficient * X + G``:
    ``V_new = alpha * V + (1 - alpha) * g``, ``H_new = beta * H + (1 - beta) * g * g``, the
    learning rate with bias correction ``r = R * sqrt(1 - beta**T) / (1 - alpha**T)`` (``R``
    itself at ``T = 0``), ``X_new = (1 - norm_coefficient_post) * (X - r * V_new /
    (sqrt(H_new) + epsilon))``. Computed in the tensors' type; ``T`` may be traced.

    Args:
        R: the learning rate, a float scalar.
        T: the update count, an int64 scalar.
        *inputs: for ``n`` tensors, their values ``X``, then their gradients ``G``, then
            their momentums ``V``, then their second moments ``H`` (``4 * n`` tensors).
        alpha: the decay of the momentum.
        beta: the decay of the second moment.
        epsilon: added to the denominator, against division by zero.
        norm_coefficient: the L2 regularization coefficient of the gradient.
        norm_coefficient_post: the weight decay applied after the update.

    Returns:
        The new values of the ``n`` tensors, then their new ``V``, then their new ``H``.

    Example:
        >>> x, v, h = jaxonnx.ops.adam(jnp.float32(0.1), jnp.int32(0), jnp.array([1.0]), jnp.array([2.0]),
        ...                            jnp.array([0.0]), jnp.array([0.0]), alpha=0.5, beta=0.75, epsilon=0.0)
        >>> x, v, h
        (Array([0.9], dtype=float32), Array([1.], dtype=float32), Array([1.], dtype=float32))
    """
    r, t, groups = optimizer_groups(R, T, inputs, per_tensor=("X", "G", "V", "H"))
    # Bias correction from the first update on; at T = 0 the formula is 0/0, so T = 1 stands in
    # for it there (and its gradient stays finite).
    first = t <= 0
    steps = jnp.where(first, 1, t).astype(r.dtype)
    corrected = r * jnp.sqrt(1 - jnp.asarray(beta, r.dtype) ** steps) / (1 - jnp.asarray(alpha, r.dtype) ** steps)
    r = jnp.where(first, r, corrected)

    def step(x, g, v, h):
        g = norm_coefficient * x + g
        v_new = alpha * v + (1 - alpha) * g
        h_new = beta * h + (1 - beta) * g * g
        x_new = x - r * (v_new / (jnp.sqrt(h_new) + epsilon))
        return (1 - norm_coefficient_post) * x_new, v_new, h_new

    return regrouped([step(*group) for group in groups])


__all__ = ["adam"]
