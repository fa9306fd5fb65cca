"""Multinomial: versions 7 and 22 (22 adds bfloat16)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.random import draw_dtype, draw_key

_OUTPUT_TYPES = {6: jnp.int32, 7: jnp.int64}


@register("Multinomial", 7, 22)
def multinomial(input, *, dtype=6, sample_size=1, seed=None, rng=None):
    """Implements ONNX Multinomial: ``sample_size`` class indices per row of log-probabilities.

    Row ``i`` of ``input`` holds unnormalized log-probabilities of ``class_size`` classes;
    row ``i`` of the output holds ``sample_size`` independent draws of a class index from
    their softmax, made with ``jax.random.categorical`` (half types drawn in float32). The
    key is the node's ``seed``'s, else the caller's ``rng`` (``model(x, rng=key)``);
    eagerly without either a fresh one, under ``jax.jit`` without either an error.

    Args:
        input: log-probabilities of shape ``[batch_size, class_size]``.
        dtype: the output type, 6 (int32, the default) or 7 (int64).
        sample_size: the number of draws per row.
        seed: a seed for a deterministic draw.
        rng: a ``jax.random`` key, used when there is no ``seed``.

    Returns:
        The class indices, of shape ``[batch_size, sample_size]``.

    Example:
        >>> logits = jnp.log(jnp.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
        >>> jaxonnx.ops.multinomial(logits, sample_size=4, seed=0.0)
        Array([[0, 0, 0, 0],
               [2, 2, 2, 2]], dtype=int32)
    """
    if input.ndim != 2:
        raise OnnxValidationError(f"needs `input` of shape [batch_size, class_size], got shape {tuple(input.shape)}.")
    if dtype not in _OUTPUT_TYPES:
        raise OnnxTypeError(f"got `dtype`={dtype}; it must be 6 (int32) or 7 (int64).")
    if sample_size < 0:
        raise OnnxValidationError(f"got `sample_size`={sample_size}; it must not be negative.")
    logits = jnp.asarray(input).astype(draw_dtype(input.dtype))
    key = draw_key(seed, rng)
    # categorical's `shape` ends with the batch dimensions: draw [sample_size, batch], then transpose.
    draws = jax.random.categorical(key, logits, axis=-1, shape=(sample_size, input.shape[0]))
    return draws.T.astype(jax_dtype(_OUTPUT_TYPES[dtype]))


__all__ = ["multinomial"]
