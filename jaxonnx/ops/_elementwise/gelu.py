"""Gelu: version 20."""

from __future__ import annotations

import jax

from jaxonnx._errors import OnnxValidationError
from jaxonnx._core.registry import register


@register("Gelu", 20, folds=False, padding="elementwise")
def gelu(X, *, approximate: str = "none"):
    """Implements ONNX Gelu: ``X * Phi(X)``, ``Phi`` the standard normal CDF.

    Args:
        X: a float array.
        approximate: ``"none"`` for the exact form ``0.5 * X * (1 + erf(X / sqrt(2)))``,
            ``"tanh"`` for ``0.5 * X * (1 + tanh(sqrt(2 / pi) * (X + 0.044715 * X**3)))``.

    Example:
        >>> jaxonnx.ops.gelu(jnp.array([-1.0, 1.0])).round(6)  # x * Phi(x)
        Array([-0.158655,  0.841345], dtype=float32)
    """
    if approximate not in ("none", "tanh"):
        raise OnnxValidationError(f"got `approximate`={approximate!r}; it must be 'none' or 'tanh'.")
    return jax.nn.gelu(X, approximate=approximate == "tanh")


__all__ = ["gelu"]
