"""What the optimizers of ``ai.onnx.preview.training`` share: their inputs' layout.

Adagrad, Adam and Momentum take ``R`` (the learning rate) and ``T`` (the update count),
then, for ``n`` tensors to optimize, ``n`` values ``X``, ``n`` gradients ``G`` and ``n`` of
each optimizer state (Adagrad: ``H``; Momentum: ``V``; Adam: ``V``, ``H``). The outputs are
the new values and the new states in the same order.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxonnx._errors import OnnxValidationError


def optimizer_groups(R, T, inputs, *, per_tensor: tuple[str, ...]):
    """``R`` and ``T`` checked and cast, and the variadic ``inputs`` regrouped per tensor.

    Args:
        per_tensor: the names of the inputs each tensor has (``("X", "G", "H")``).

    Returns:
        ``(r, t, groups)``: ``r`` in the values' dtype, ``t`` (an integer scalar) and one
        tuple of ``len(per_tensor)`` arrays per tensor.

    Raises:
        OnnxValidationError: for non-scalar ``R`` or ``T``, an input count that is not a
            multiple of ``len(per_tensor)``, or a tensor whose inputs differ in shape.
    """
    for name, value in (("R", R), ("T", T)):
        if value.ndim != 0:
            raise OnnxValidationError(f"needs a scalar `{name}`, got shape {tuple(value.shape)}.")
    width = len(per_tensor)
    if not inputs or len(inputs) % width:
        raise OnnxValidationError(
            f"takes the inputs {', '.join(per_tensor)} of each tensor it optimizes ({width} per tensor, grouped "
            f"by kind: all {per_tensor[0]}, then all {per_tensor[1]}, ...) after R and T, got {len(inputs)} inputs."
        )
    count = len(inputs) // width
    groups = [tuple(inputs[k * count + i] for k in range(width)) for i in range(count)]
    for i, group in enumerate(groups):
        shapes = {tuple(a.shape) for a in group}
        if len(shapes) > 1:
            described = ", ".join(f"{name} {tuple(a.shape)}" for name, a in zip(per_tensor, group))
            raise OnnxValidationError(f"needs the inputs of tensor {i} to share one shape, got {described}.")
    dtype = inputs[0].dtype
    return jnp.asarray(R).astype(dtype), jnp.asarray(T), groups


def regrouped(outputs_per_tensor) -> tuple:
    """The per-tensor results ``[(x_new, state_new, ...), ...]`` in the outputs' order:
    all new values, then all of each new state."""
    return tuple(output for kind in zip(*outputs_per_tensor) for output in kind)
