"""onnxruntime's com.microsoft ScaledSiLU: SiLU of a scaled input, rounded to the input's type
after each step."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema

_FLOATS = ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]
_SCHEMA = contrib_schema(
    "ScaledSiLU",
    "Z = cast_T(scale * X), Y = cast_T(Z * cast_T(sigmoid(Z))); scale is the scalar input, else alpha.",
    [("X", "T"), ("scale", "M", "optional")],
    [("Y", "T")],
    [("T", _FLOATS), ("M", _FLOATS)],
    [attribute("alpha", 1.0, "The scale used when the `scale` input is absent.")],
)


@register(
    "ScaledSiLU",
    1,
    domain="com.microsoft",
    schema=_SCHEMA,
    folds=False,
    padding="elementwise",
    layout="elementwise",
)
def scaled_silu(X, scale=None, *, alpha=1.0):
    """Implements com.microsoft ScaledSiLU: ``Z * sigmoid(Z)`` with ``Z = scale * X``.

    As onnxruntime's kernel, each step is rounded to the type of ``X``: ``Z = cast(scale *
    X)``, ``S = cast(sigmoid(Z))``, ``Y = cast(Z * S)``, computed in float32 between the
    roundings (so float16 and bfloat16 inputs round three times, float32 ones never).

    Args:
        X: the input, float32, float16 or bfloat16.
        scale: optional scalar (one element) that overrides ``alpha``.
        alpha: the scale when ``scale`` is absent.

    Returns:
        The shape and type of ``X``.

    Example:
        >>> jaxonnx.ops.scaled_silu(jnp.array([-1.0, 0.0, 2.0]), alpha=0.5).round(6)
        Array([-0.18877 ,  0.      ,  0.731059], dtype=float32)
    """
    if scale is not None and np.size(scale) != 1:
        raise OnnxValidationError(f"needs a scalar `scale` (one element), got shape {tuple(np.shape(scale))}.")
    factor = jnp.float32(alpha) if scale is None else jnp.reshape(scale, ()).astype(jnp.float32)
    z = (factor * X.astype(jnp.float32)).astype(X.dtype)
    s = jax.nn.sigmoid(z.astype(jnp.float32)).astype(X.dtype)
    return (z.astype(jnp.float32) * s.astype(jnp.float32)).astype(X.dtype)


__all__ = ["scaled_silu"]
