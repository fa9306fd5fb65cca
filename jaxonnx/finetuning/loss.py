"""The next-token cross-entropy of a causal language model file, through its own graph."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.model import Model
from jaxonnx._errors import OnnxValidationError
from jaxonnx.generation import CacheLayout, find_cache

#: Hugging Face's label of a position that adds nothing to the loss.
IGNORE_INDEX = -100
_REDUCTIONS = ("mean", "sum", "per_sequence")


def causal_lm_loss(
    model: Model,
    input_ids,
    attention_mask=None,
    labels=None,
    *,
    reduction: str = "mean",
    cache: Mapping[str, str] | CacheLayout | None = None,
):
    """The mean next-token cross-entropy of a decoder file on a batch, as Hugging Face's
    ``model(input_ids, attention_mask=..., labels=...).loss`` computes it.

    The model runs its own graph once over the whole sequences with an empty KV cache
    (past length 0): Optimum and dynamo exports (with ``position_ids``, or positions from
    the cache's length) and onnxruntime-genai's builder files (GroupQueryAttention, which
    derives ``seqlens_k`` and ``total_sequence_length`` from the attention mask inside the
    graph) alike; the cache is found as :func:`jaxonnx.generate` finds it. Each row's tokens
    are first moved to the left, in order (a stable sort of the mask), so left and right
    padding give the same loss: the one layout every exporter's first step reads, with
    positions ``0, 1, ...`` for the tokens.

    The logits at position ``t`` predict ``labels[t + 1]``; labels of ``-100`` and
    positions where ``attention_mask`` is 0 add nothing. It is a pure function of JAX
    values: ``jax.jit``, ``jax.grad`` (with respect to the model, a pytree), ``jax.vmap``
    (over rows given 1-D) and sharded batches work on it.

    Args:
        model: a :class:`jaxonnx.Model` of a causal LM with a KV cache (a
            :class:`~jaxonnx.finetuning.LoraModel` too).
        input_ids: ``(batch, sequence)`` token ids (or one sequence, ``(sequence,)``).
        attention_mask: 1 on tokens and 0 on padding, left or right; all ones by default.
        labels: the targets in the tokens' positions, ``-100`` where ignored; by default
            ``input_ids`` (language modelling).
        reduction: ``"mean"`` over every counted token of the batch (Hugging Face's),
            ``"sum"``, or ``"per_sequence"``: each row's mean, ``(batch,)``.
        cache: a :class:`~jaxonnx.generation.CacheLayout` or ``{past input: present
            output}``, as :func:`jaxonnx.generate` takes it, for graphs it does not read by
            itself.

    Returns:
        The loss, float32 (a scalar, or ``(batch,)`` with ``"per_sequence"``). A batch
        without a counted token gives 0.

    Example:
        >>> model = jaxonnx.load("tests/fixtures/generation/llama_optimum/model.onnx")
        >>> loss = jaxonnx.causal_lm_loss(model, jnp.array([[5, 6, 7, 8]]))
        >>> loss.shape, bool(loss > 0)
        ((), True)
    """
    if reduction not in _REDUCTIONS:
        raise OnnxValidationError(f"`reduction` is one of {', '.join(map(repr, _REDUCTIONS))}, got {reduction!r}.")
    layout = cache if isinstance(cache, CacheLayout) else find_cache(model, cache)
    input_ids = jnp.asarray(input_ids)
    one_sequence = input_ids.ndim == 1
    if one_sequence:
        input_ids = input_ids[None]
    if input_ids.ndim != 2 or not jnp.issubdtype(input_ids.dtype, jnp.integer) or input_ids.shape[1] < 2:
        raise OnnxValidationError(
            "`input_ids` must be integer token ids of shape (batch, sequence) with at least 2 tokens, got "
            f"{input_ids.dtype}{list(input_ids.shape)}."
        )
    mask = jnp.ones(input_ids.shape, jnp.int32) if attention_mask is None else jnp.asarray(attention_mask)
    labels = input_ids if labels is None else jnp.asarray(labels)
    if one_sequence:
        mask = mask[None] if mask.ndim == 1 else mask
        labels = labels[None] if labels.ndim == 1 else labels
    for name, value in (("attention_mask", mask), ("labels", labels)):
        if value.shape != input_ids.shape:
            raise OnnxValidationError(
                f"`{name}` has shape {list(value.shape)}, `input_ids` {list(input_ids.shape)}; they must agree."
            )
    present = mask != 0
    labels = jnp.where(present, labels, IGNORE_INDEX)
    # Right padding, the tokens in order: what every exporter's first step reads.
    order = jnp.argsort(~present, axis=1, stable=True)
    input_ids, present, labels = (jnp.take_along_axis(v, order, axis=1) for v in (input_ids, present, labels))
    logits = _logits(model, layout, input_ids, present)
    targets = labels[:, 1:]
    counted = targets != IGNORE_INDEX
    log_probs = jax.nn.log_softmax(logits[:, :-1].astype(jnp.float32), axis=-1)
    picked = jnp.take_along_axis(log_probs, jnp.where(counted, targets, 0)[..., None].astype(jnp.int32), axis=-1)
    losses = jnp.where(counted, -picked[..., 0], 0.0)
    if reduction == "sum":
        return jnp.sum(losses)
    if reduction == "per_sequence":
        per_row = jnp.sum(losses, axis=1) / jnp.maximum(jnp.sum(counted, axis=1), 1).astype(losses.dtype)
        return per_row[0] if one_sequence else per_row
    return jnp.sum(losses) / jnp.maximum(jnp.sum(counted), 1).astype(losses.dtype)


def _logits(model: Model, layout: CacheLayout, input_ids, present):
    """The graph's logits for right-padded rows with an empty KV cache."""
    batch, _ = input_ids.shape
    dtypes = {info.name: info.dtype for info in model.inputs}
    feed = {layout.input_ids: input_ids.astype(_canonical(dtypes[layout.input_ids]))}
    for (past, _), shape, dtype in zip(layout.pairs, layout.empty_shape, layout.dtypes):
        feed[past] = jnp.zeros(tuple(batch if d == -1 else d for d in shape), dtype)
    if layout.attention_mask:
        feed[layout.attention_mask] = present.astype(_canonical(dtypes[layout.attention_mask]))
    if layout.position_ids:
        # Padding's positions are any in range: its logits are never counted.
        positions = jnp.maximum(jnp.cumsum(present, axis=1) - 1, 0)
        feed[layout.position_ids] = positions.astype(_canonical(dtypes[layout.position_ids]))
    return model.run([layout.logits], feed)[0]


def _canonical(dtype):
    return jax.dtypes.canonicalize_dtype(np.dtype(dtype))


__all__ = ["IGNORE_INDEX", "causal_lm_loss"]
