"""Gradient of ai.onnx.preview.training: version 1."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError


@register("Gradient", 1, domain="ai.onnx.preview.training")
def gradient(*inputs, xs, y, zs=None, computation):
    """Implements ONNX Gradient (ai.onnx.preview.training): the gradient of the graph value
    named ``y`` with respect to the values named ``xs``, at the values given as inputs.

    The interpreter cuts the computation out of the graph (the nodes that compute ``y``
    from ``xs`` and ``zs``; anything else they read, such as initializers, stays constant)
    and hands it over as ``computation``, a function of the ``xs`` then ``zs`` values, as
    ``jax.grad`` takes a function. This op is ``jax.vjp`` of it: for a ``y`` with more
    than one element, the gradient of the sum of its elements (a cotangent of ones), the
    seed onnxruntime's training graphs use for a loss. The computation may hold another
    Gradient node, which gives second derivatives.

    Args:
        *inputs: the values at which to differentiate: one per name of ``xs``, then one
            per name of ``zs``.
        xs: the names of the values to differentiate with respect to (float tensors).
        y: the name of the value to differentiate (a float tensor).
        zs: the names of other values the computation takes, not differentiated.
        computation: the function from the ``xs`` and ``zs`` values to ``(y,)``.

    Returns:
        The gradient of ``y`` with respect to each of ``xs``, each of its ``x``'s shape
        and type.

    Example:
        >>> jaxonnx.ops.gradient(jnp.array([1.0, 2.0]), xs=["x"], y="y", computation=lambda x: (x * x,))
        (Array([2., 4.], dtype=float32),)
    """
    zs = list(zs or [])
    if len(inputs) != len(xs) + len(zs):
        raise OnnxValidationError(
            f"got {len(inputs)} inputs for {len(xs)} names in `xs` and {len(zs)} in `zs`; it takes one input "
            "per name of `xs`, then one per name of `zs`."
        )
    points, others = inputs[: len(xs)], inputs[len(xs) :]
    for name, point in zip(xs, points):
        if not jnp.issubdtype(point.dtype, jnp.floating):
            raise OnnxTypeError(
                f"differentiates with respect to {name!r} (in `xs`), whose type is {point.dtype}; only float "
                "tensors have gradients. Name integer and bool values in `zs`."
            )

    def of_xs(*values):
        (value,) = computation(*values, *others)
        return value

    value, pullback = jax.vjp(of_xs, *(jnp.asarray(p) for p in points))
    if not jnp.issubdtype(value.dtype, jnp.floating):
        raise OnnxTypeError(f"differentiates {y!r} (its `y`), whose type is {value.dtype}; it must be a float tensor.")
    return tuple(pullback(jnp.ones_like(value)))


__all__ = ["gradient"]
