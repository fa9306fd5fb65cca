"""Bernoulli: versions 15 and 22 (22 adds bfloat16 inputs)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.registry import register
from jaxonnx.ops._helpers.casting import schema_types
from jaxonnx.ops._helpers.random import draw_dtype, draw_key, float_output_dtype

_OUTPUT_TYPES = schema_types("Bernoulli", 22, "T2")


@register("Bernoulli", 15, 22)
def bernoulli(input, *, dtype=None, seed=None, rng=None):
    """Implements ONNX Bernoulli: 1 with probability ``input``, else 0, element by element.

    Each element is 1 where a uniform draw from [0, 1) is below its probability (as onnx's
    function body of the op computes it), so probabilities at or below 0 give 0 and at or
    above 1 give 1. The uniform draw is made with ``jax.random`` (in float32, or float64 for
    double probabilities) from the node's ``seed``'s key, else the caller's ``rng``
    (``model(x, rng=key)``); eagerly without either a fresh one, under ``jax.jit`` without
    either an error.

    Args:
        input: the probabilities, a float tensor.
        dtype: the ``onnx.TensorProto`` code of the output type (any number type or bool);
            by default ``input``'s type.
        seed: a seed for a deterministic draw.
        rng: a ``jax.random`` key, used when there is no ``seed``.

    Returns:
        The draws, zeros and ones of ``input``'s shape.

    Example:
        >>> jaxonnx.ops.bernoulli(jnp.array([0.0, 1.0, 1.0]), dtype=9, seed=0.0)
        Array([False,  True,  True], dtype=bool)
    """
    output_dtype = float_output_dtype(dtype, input, allowed=_OUTPUT_TYPES)
    probabilities = jnp.asarray(input).astype(draw_dtype(input.dtype))
    uniform = jax.random.uniform(draw_key(seed, rng), input.shape, probabilities.dtype)
    return (uniform < probabilities).astype(jax_dtype(output_dtype))


__all__ = ["bernoulli"]
