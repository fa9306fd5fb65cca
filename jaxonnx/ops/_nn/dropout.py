"""Dropout: versions 1, 6, 7, 10 (inference only), 12, 13 and 22 (`ratio`, `training_mode` inputs)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced, namespace
from jaxonnx.ops._helpers.random import draw_key


@register("Dropout", 12, 13, 22, concrete=("ratio", "training_mode"))
def dropout(data, ratio=None, training_mode=None, *, seed=None, rng=None):
    """Implements ONNX Dropout: ``data`` itself in inference; random zeros in training mode.

    In training mode (``training_mode`` true) each element is kept with probability
    ``1 - ratio`` and scaled by ``1 / (1 - ratio)``. The mask is drawn with
    ``jax.random``: from ``seed`` when the node has one (the same mask on every call),
    else from ``rng``, the caller's key (``model(x, rng=key)``); eagerly without either,
    from a fresh key per call; under ``jax.jit`` without either, an error. It is not the
    mask another runtime draws.

    Args:
        data: the input.
        ratio: the drop probability, a scalar in ``[0, 1)`` (default 0.5).
        training_mode: a bool scalar (default false); it may be traced.
        seed: the random seed of training mode.
        rng: a ``jax.random`` key, used when there is no ``seed``.

    Returns:
        ``(output, mask)``: the result (dtype of ``data``) and the bool mask of kept elements
        (all true in inference).

    Example:
        >>> out, mask = jaxonnx.ops.dropout(jnp.array([1.0, 2.0]))
        >>> out, mask
        (Array([1., 2.], dtype=float32), Array([ True,  True], dtype=bool))
    """
    xp = namespace(data)
    keep_all = xp.ones(data.shape, dtype=bool)
    training = training_mode is not None and (is_traced(training_mode) or bool(np.asarray(training_mode)))
    if not training:
        return data, keep_all
    for name, value in (("ratio", ratio), ("training_mode", training_mode)):
        if value is not None and value.ndim != 0:
            raise OnnxValidationError(f"needs a scalar `{name}`, got shape {tuple(value.shape)}.")
    ratio = np.asarray(0.5, dtype=data.dtype) if ratio is None else ratio
    if not is_traced(ratio) and not 0 <= float(ratio) < 1:
        raise OnnxValidationError(f"got `ratio`={float(ratio)} in training mode; it must be in [0, 1).")
    ratio = jnp.asarray(ratio).astype(data.dtype)
    key = draw_key(seed, rng)
    keep = jax.random.uniform(key, data.shape, dtype=jnp.float32) >= ratio.astype(jnp.float32)
    output = jnp.where(keep, data / (1 - ratio), jnp.zeros((), data.dtype))
    if is_traced(training_mode):
        output = jnp.where(training_mode, output, data)
        keep = keep | ~training_mode.astype(bool)
    if xp is np:  # numpy in, numpy out: the values are concrete here
        return np.asarray(output), np.asarray(keep)
    return output, keep


@register("Dropout", 10)
def _dropout_10(data, *, ratio=0.5):
    return data, namespace(data).ones(data.shape, dtype=bool)


@register("Dropout", 1, 6, 7)
def _dropout_1(data, *, consumed_inputs=None, is_test=None, ratio=0.5):
    # Before 10 the mask has the type of `data`. Inference only: the output is `data`.
    return data, namespace(data).ones(data.shape, dtype=data.dtype)


__all__ = ["dropout"]
