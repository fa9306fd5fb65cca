"""MultiHeadAttention (com.microsoft, version 1): onnxruntime's self or cross attention of
projected Q, K and V, with the projection's bias, padding masks, attention bias and a
key/value cache."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.attention import (
    attention_bias_padded,
    mask_index_allowed,
    masked_attention,
    merge_heads,
    split_heads,
)
from jaxonnx.ops._helpers.common import is_traced
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT
_FLOAT = onnx.defs.OpSchema.AttrType.FLOAT
_FLOATS = ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]
_SCHEMA = contrib_schema(
    "MultiHeadAttention",
    "Multi-head self or cross attention of projected Q, K, V with bias, key padding mask, attention bias and cache.",
    inputs=[
        ("query", "T"),
        ("key", "T", "optional"),
        ("value", "T", "optional"),
        ("bias", "T", "optional"),
        ("key_padding_mask", "M", "optional"),
        ("attention_bias", "T", "optional"),
        ("past_key", "T", "optional"),
        ("past_value", "T", "optional"),
        ("past_sequence_length", "M", "optional"),
        ("cache_indirection", "M", "optional"),
    ],
    outputs=[
        ("output", "T"),
        ("present_key", "T", "optional"),
        ("present_value", "T", "optional"),
        ("qk", "QK", "optional"),
    ],
    type_constraints=[("T", _FLOATS), ("QK", _FLOATS), ("M", ["tensor(int32)"])],
    attributes=[
        attribute_without_default("num_heads", _INT, "Number of attention heads.", required=True),
        attribute("unidirectional", 0, "Causal attention."),
        attribute_without_default("scale", _FLOAT, "Scale of Q K^T (default 1 / sqrt(head_size))."),
        attribute_without_default("mask_filter_value", _FLOAT, "Added to masked scores (default -10000)."),
    ],
    differentiable=("query", "key", "value", "bias", "attention_bias", "past_key", "past_value"),
)


@register(
    "MultiHeadAttention",
    1,
    domain="com.microsoft",
    schema=_SCHEMA,
    folds=False,
    concrete=("key_padding_mask", "past_sequence_length", "cache_indirection"),
)
def multi_head_attention(
    query,
    key=None,
    value=None,
    bias=None,
    key_padding_mask=None,
    attention_bias=None,
    past_key=None,
    past_value=None,
    past_sequence_length=None,
    cache_indirection=None,
    *,
    num_heads=None,
    unidirectional=0,
    scale=None,
    mask_filter_value=None,
    output_count=None,
):
    """Implements com.microsoft MultiHeadAttention: ``softmax(scale * Q K^T + masks) V`` by
    heads, for projected Q, K and V.

    K and V come as 3-D ``(batch, L, hidden)`` (projected, before the projection's bias),
    packed with Q ``(batch, S, num_heads, 3, head_size)`` or together ``(batch, L,
    num_heads, 2, head_size)``, or as a 4-D ``(batch, num_heads, L, head_size)`` cache of a
    cross attention (used as is: no bias, no past). A 3-D or packed K and V follow
    ``past_key`` and ``past_value``, or, with ``past_sequence_length``, are written into
    them at that position (onnxruntime's shared buffer, the present being the whole buffer).
    Padding (``key_padding_mask``) adds ``mask_filter_value`` to a key's score; keys after
    the causal frontier (``unidirectional``) are left out.

    Args:
        query: ``(batch, S, hidden)``, or packed QKV ``(batch, S, num_heads, 3, head_size)``.
        key: optional, see above; ``value`` likewise (``v_hidden`` may differ).
        bias: optional ``(hidden + hidden + v_hidden,)``, added to Q, K and V.
        key_padding_mask: optional int32: ``(batch,)`` key lengths, ``(3 * batch + 2,)`` (its
            first ``batch`` values are the lengths), ``(batch, L)`` or ``(batch, total)`` of 1
            and 0, or ``(batch, S, total)``.
        attention_bias: optional ``(batch or 1, num_heads or 1, S, total)``, added to the scores.
        past_key: optional ``(batch, num_heads, past, head_size)``; ``past_value`` likewise.
        past_sequence_length: optional int32 scalar: the shared buffer's past rows (may be traced).
        cache_indirection: optional int32 ``(batch, beam, max_length)`` of beam search: the
            beam whose cache row each past position is read from; ``query``'s batch is
            ``batch * beam``.
        num_heads: the heads.
        unidirectional: 1: query ``s`` attends the keys up to ``past + s``.
        scale: the factor of ``Q K^T``; ``1 / sqrt(head_size)`` when absent or 0.
        mask_filter_value: what masked scores get added; -10000 when absent.
        output_count: the node's outputs; the scores are computed only when it asks for
            ``qk`` (4 or None), and otherwise the attention may lower to
            :func:`jax.nn.dot_product_attention`'s fused kernels.

    Returns:
        ``(output, present_key, present_value, qk)``: ``(batch, S, v_hidden)``, the caches
        ``(batch, num_heads, total, head_size)`` (the past and the new keys and values; the
        given 4-D ones for a cross attention), and the scores before softmax ``(batch,
        num_heads, S, total)``: ``scale * Q K^T`` plus the padding's filter value and the
        attention bias, the lowest float where a key is left out.

    Example:
        >>> q = k = v = jnp.ones((1, 2, 4))
        >>> y, *_ = jaxonnx.ops.multi_head_attention(q, k, v, num_heads=2)
        >>> y.shape
        (1, 2, 4)
    """
    if not num_heads or num_heads <= 0:
        raise OnnxValidationError(f"needs `num_heads` > 0, got {num_heads}.")
    q, k, v, cross = _projected(query, key, value, bias, num_heads)
    batch, _, length, head_size = q.shape
    past_length = 0
    valid_keys = None
    if not cross and (past_key is not None or past_value is not None):
        if past_key is None or past_value is None:
            raise OnnxValidationError("needs `past_key` and `past_value` together, got only one of them.")
        for name, past, new in (("past_key", past_key, k), ("past_value", past_value, v)):
            if past.ndim != 4 or tuple(past.shape[:2]) != new.shape[:2] or past.shape[3] != new.shape[3]:
                raise OnnxValidationError(
                    f"needs `{name}` of shape (batch, num_heads, past, head_size) = {new.shape[:2] + ('past', new.shape[3])}, "
                    f"got {tuple(past.shape)}."
                )
        if past_sequence_length is not None:
            past_length, valid_keys = _shared_position(past_sequence_length, past_key.shape[2], length)
            zero = jnp.zeros((), jnp.int32)
            k = jax.lax.dynamic_update_slice(past_key.astype(k.dtype), k, (zero, zero, past_length, zero))
            v = jax.lax.dynamic_update_slice(past_value.astype(v.dtype), v, (zero, zero, past_length, zero))
        else:
            past_length = past_key.shape[2]
            k = jnp.concatenate([past_key.astype(k.dtype), k], axis=2)
            v = jnp.concatenate([past_value.astype(v.dtype), v], axis=2)
    present_key, present_value = k, v
    if cache_indirection is not None and not cross and past_key is not None:
        # Beam search reads each past row from the beam the indirection names; the present
        # caches stay as written.
        k, v = _beams(k, v, cache_indirection, past_length)
    total = k.shape[2]
    allowed = mask_index_allowed(
        key_padding_mask, batch=batch, length=length, total=total, past=past_length, name="key_padding_mask"
    )
    bias_scores = (
        None if attention_bias is None else attention_bias_padded(attention_bias, batch, num_heads, length, total)
    )
    scale = float(scale) if scale else 1.0 / np.sqrt(head_size)
    with_scores = output_count is None or output_count >= 4
    result = masked_attention(
        q,
        k,
        v,
        scale=scale,
        allowed=allowed,
        filter_value=-10000.0 if mask_filter_value is None else mask_filter_value,
        unidirectional=unidirectional,
        past=past_length,
        valid_keys=valid_keys,
        bias=bias_scores,
        probabilities=with_scores,
    )
    if not with_scores:
        return merge_heads(result), present_key, present_value
    y, scores, _ = result
    # The keys left out (causal, or a shared buffer's tail) hold the lowest float, as onnxruntime's.
    scores = jnp.where(jnp.isneginf(scores), jnp.asarray(jnp.finfo(scores.dtype).min, scores.dtype), scores)
    return merge_heads(y), present_key, present_value, scores


def _projected(query, key, value, bias, heads):
    """Q, K, V as ``(batch, heads, length, size)``, the bias added; and whether K and V are
    a cross attention's given cache (4-D)."""
    if query.ndim == 5:
        if key is not None or value is not None or query.shape[2] != heads or query.shape[3] != 3:
            raise OnnxValidationError(
                f"needs packed QKV (batch, sequence, num_heads={heads}, 3, head_size) with no `key` or `value`, got "
                f"`query` {tuple(query.shape)}."
            )
        q, k, v = (query[:, :, :, i].reshape(query.shape[0], query.shape[1], -1) for i in range(3))
        cross = False
    elif query.ndim != 3:
        raise OnnxValidationError(f"needs a 3-D or 5-D (packed) `query`, got shape {tuple(query.shape)}.")
    elif key is not None and key.ndim == 5:
        if value is not None or key.shape[2] != heads or key.shape[3] != 2:
            raise OnnxValidationError(
                f"needs packed KV (batch, kv_sequence, num_heads={heads}, 2, head_size) with no `value`, got "
                f"`key` {tuple(key.shape)}."
            )
        q = query
        k, v = (key[:, :, :, i].reshape(key.shape[0], key.shape[1], -1) for i in range(2))
        cross = False
    elif key is None or value is None or key.ndim != value.ndim or key.ndim not in (3, 4):
        raise OnnxValidationError(
            f"needs `key` and `value` both 3-D (batch, kv_sequence, hidden) or both 4-D (batch, num_heads, kv_sequence, "
            f"head_size), got {None if key is None else tuple(key.shape)} and {None if value is None else tuple(value.shape)}."
        )
    else:
        q, k, v = query, key, value
        cross = key.ndim == 4
    hidden = q.shape[2]
    k_hidden = k.shape[1] * k.shape[3] if cross else k.shape[2]
    v_hidden = v.shape[1] * v.shape[3] if cross else v.shape[2]
    if bias is not None:
        if tuple(bias.shape) != (hidden + k_hidden + v_hidden,):
            raise OnnxValidationError(
                f"needs `bias` of shape (hidden + hidden + v_hidden,) = ({hidden + k_hidden + v_hidden},), got {tuple(bias.shape)}."
            )
        q = q + bias[:hidden].reshape(1, 1, -1)
        if not cross:
            k = k + bias[hidden : hidden + k_hidden].reshape(1, 1, -1)
            v = v + bias[hidden + k_hidden :].reshape(1, 1, -1)
    q = split_heads(q, heads, "query", "num_heads")
    if not cross:
        k = split_heads(k, heads, "key", "num_heads")
        v = split_heads(v, heads, "value", "num_heads")
    if k.shape[:3] != v.shape[:3] or k.shape[0] != q.shape[0] or k.shape[1] != heads or k.shape[3] != q.shape[3]:
        raise OnnxValidationError(
            f"needs `key` and `value` of `query`'s batch, num_heads={heads} and one length, `key` of the query's head "
            f"size; got (as heads) `query` {tuple(q.shape)}, `key` {tuple(k.shape)}, `value` {tuple(v.shape)}."
        )
    return q, k, v, cross


def _shared_position(past_sequence_length, capacity, length):
    """The shared buffer's past rows (int32, maybe traced) and the keys held after the step."""
    if past_sequence_length.size != 1:
        raise OnnxValidationError(
            f"needs a one-element `past_sequence_length`, got shape {tuple(past_sequence_length.shape)}."
        )
    if not is_traced(past_sequence_length):
        value = int(np.asarray(past_sequence_length).reshape(()))
        if not 0 <= value <= capacity - length:
            raise OnnxValidationError(
                f"got `past_sequence_length`={value}; with {length} new tokens it is in [0, {capacity - length}] for a "
                f"buffer of {capacity}."
            )
    past = jnp.asarray(past_sequence_length).reshape(()).astype(jnp.int32)
    return past, past + length


def _beams(keys, values, cache_indirection, past_length):
    """The keys and values each beam reads: past row ``t`` (``t < past_length``) of beam
    ``j`` of batch ``i`` from beam ``cache_indirection[i, j, t]``, the new rows its own."""
    entries, _, rows, _ = keys.shape
    if (
        cache_indirection.ndim != 3
        or cache_indirection.shape[0] * cache_indirection.shape[1] != entries
        or cache_indirection.shape[2] < rows
    ):
        raise OnnxValidationError(
            f"needs `cache_indirection` of shape (batch, beam, max_length) with batch * beam = {entries} and "
            f"max_length >= {rows}, got {tuple(cache_indirection.shape)}."
        )
    batch, beam, _ = cache_indirection.shape
    source = jnp.asarray(cache_indirection)[:, :, :rows].astype(jnp.int32)
    source = source + (jnp.arange(batch, dtype=jnp.int32) * beam).reshape(batch, 1, 1)
    own = jnp.arange(entries, dtype=jnp.int32).reshape(entries, 1)
    row = jnp.arange(rows, dtype=jnp.int32).reshape(1, rows)
    source = jnp.where(row < past_length, source.reshape(entries, rows), own)  # the entry each (entry, row) reads

    def pick(cache):
        moved = cache.transpose(0, 2, 1, 3)  # (entries, rows, heads, size)
        return moved[source, jnp.broadcast_to(row, source.shape)].transpose(0, 2, 1, 3)

    return pick(keys), pick(values)


__all__ = ["multi_head_attention"]
