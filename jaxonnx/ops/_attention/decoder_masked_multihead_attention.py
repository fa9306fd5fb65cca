"""DecoderMaskedMultiHeadAttention (com.microsoft, version 1): onnxruntime's one-token decode
attention over a shared key/value buffer, with beams read through a cache indirection, as
onnxruntime's CPU kernel computes it (``contrib_ops/cpu/bert/decoder_masked_multihead_attention.cc``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import is_traced
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT


_SCHEMA = contrib_schema(
    "DecoderMaskedMultiHeadAttention",
    "One decode step of multi-head self attention over a shared key/value buffer (or cross attention).",
    inputs=[
        ("query", "T"),
        ("key", "T", "optional"),
        ("value", "T", "optional"),
        ("mask_index", "M", "optional"),
        ("attention_bias", "T", "optional"),
        ("past_key", "T", "optional"),
        ("past_value", "T", "optional"),
        ("past_sequence_length", "M", "optional"),
        ("beam_width", "M", "optional"),
        ("cache_indirection", "M", "optional"),
        ("bias", "T", "optional"),
    ],
    outputs=[
        ("output", "T"),
        ("present_key", "T", "optional"),
        ("present_value", "T", "optional"),
        ("qk", "QK", "optional"),
    ],
    type_constraints=[
        ("T", ["tensor(float)", "tensor(float16)"]),
        ("QK", ["tensor(float)", "tensor(float16)"]),
        ("M", ["tensor(int32)"]),
    ],
    attributes=[
        attribute_without_default("num_heads", _INT, "Number of attention heads.", required=True),
        attribute(
            "past_present_share_buffer", 0, "past_key/past_value are the max_length buffers present writes into."
        ),
        attribute("scale", 0.0, "Scale of Q K^T (0: 1 / sqrt(head_size))."),
        attribute("mask_filter_value", -10000.0, "Added to the scores of masked keys."),
        attribute("output_qk", 0, "Output the scaled scores (not supported)."),
    ],
    differentiable=("query", "key", "value", "attention_bias", "past_key", "past_value", "bias"),
)


@register(
    "DecoderMaskedMultiHeadAttention",
    1,
    domain="com.microsoft",
    schema=_SCHEMA,
    folds=False,
    concrete=("beam_width",),
)
def decoder_masked_multihead_attention(
    query,
    key=None,
    value=None,
    mask_index=None,
    attention_bias=None,
    past_key=None,
    past_value=None,
    past_sequence_length=None,
    beam_width=None,
    cache_indirection=None,
    bias=None,
    *,
    num_heads=None,
    past_present_share_buffer=0,
    scale=0.0,
    mask_filter_value=-10000.0,
    output_qk=0,
    output_count=None,
):
    """Implements com.microsoft DecoderMaskedMultiHeadAttention: one query token attending to
    the keys of a shared ``(batch, heads, max_length, head_size)`` buffer up to
    ``past_sequence_length``, and to its own key, which the present outputs hold at that
    position.

    Self attention (``past_key`` given, ``past_present_share_buffer=1``): the new key and
    value (``key``/``value``, or packed after Q in ``query`` when both are omitted) are written
    at ``past_sequence_length``, which may be traced, so a decode loop keeps one shape. With
    ``cache_indirection`` ``(batch / beams, beams, max_length)``, the past key and value at
    position ``j`` of row ``b`` come from the row of beam ``cache_indirection[b // beams, b %
    beams, j]`` of the same batch entry (the beam each token was generated on). Cross attention
    (no ``past_key``): ``key``/``value`` are ``(batch, heads, length, head_size)`` caches.

    Args:
        query: ``(batch, 1, hidden)``, or ``(batch, 1, 3 * hidden)`` packed with K and V.
        key, value: ``(batch, 1, hidden)`` for self attention, BNSH caches for cross attention.
        mask_index: ``(batch, total_length)`` int32 key padding mask (0: masked).
        attention_bias: ``(batch or 1, heads, 1, total_length)`` added to the scores.
        past_key, past_value: the ``(batch, heads, max_length, head_size)`` buffers.
        past_sequence_length: a one-element int32 tensor, the tokens already in the buffers.
        beam_width, cache_indirection: beams inside BeamSearch (see above).
        bias: ``(3 * hidden,)`` projection bias of Q, K and V.
        num_heads, scale, mask_filter_value: as onnxruntime's schema has them.

    Returns:
        ``output`` ``(batch, 1, hidden)``, and for self attention ``present_key`` and
        ``present_value`` (the buffers with the new key and value written in).

    Example:
        >>> q = k = v = np.ones((1, 1, 4), np.float32)
        >>> past = np.zeros((1, 2, 3, 2), np.float32)
        >>> out, present_key, _ = jaxonnx.ops.decoder_masked_multihead_attention(
        ...     q, k, v, None, None, past, past, np.array([1], np.int32), num_heads=2,
        ...     past_present_share_buffer=1)
        >>> present_key[0, 0]  # the new key written at position 1
        Array([[0., 0.],
               [1., 1.],
               [0., 0.]], dtype=float32)
    """
    if output_qk:
        raise OnnxValidationError("does not support `output_qk`=1 (the scaled scores output).")
    query = jnp.asarray(query)
    batch, length, width = query.shape
    if length != 1:
        raise OnnxValidationError(
            f"decodes one token at a time: needs a query of sequence length 1, got shape {query.shape}."
        )
    dtype = query.dtype
    if past_key is None:
        return _cross_attention(
            query,
            key,
            value,
            mask_index,
            attention_bias,
            bias,
            num_heads=num_heads,
            scale=scale,
            mask_filter_value=mask_filter_value,
            output_count=output_count,
        )
    if not past_present_share_buffer:
        raise OnnxValidationError(
            "needs `past_present_share_buffer`=1 for self attention with `past_key`, as onnxruntime's kernel does."
        )
    if past_value is None or past_sequence_length is None:
        raise OnnxValidationError("needs `past_value` and `past_sequence_length` with `past_key`.")
    if key is None and value is None:
        hidden = width // 3
        query, key, value = query[..., :hidden], query[..., hidden : 2 * hidden], query[..., 2 * hidden :]
    elif key is None or value is None:
        raise OnnxValidationError("needs both `key` and `value`, or neither (Q, K and V packed in `query`).")
    hidden = query.shape[-1]
    if hidden % num_heads:
        raise OnnxValidationError(f"got a hidden size {hidden} that `num_heads`={num_heads} does not divide.")
    head_size = hidden // num_heads
    q, k, v = (jnp.asarray(x) for x in (query, key, value))
    if bias is not None:
        bias = jnp.asarray(bias).reshape(1, 1, -1)
        q, k, v = q + bias[..., :hidden], k + bias[..., hidden : 2 * hidden], v + bias[..., 2 * hidden :]
    q, k, v = (x.reshape(batch, num_heads, head_size) for x in (q, k, v))
    past_key, past_value = jnp.asarray(past_key), jnp.asarray(past_value)
    max_length = past_key.shape[2]
    position = jnp.asarray(past_sequence_length).reshape(()).astype(jnp.int32)
    zero = jnp.int32(0)
    present_key = jax.lax.dynamic_update_slice(
        past_key, k[:, :, None, :].astype(past_key.dtype), (zero, zero, position, zero)
    )
    present_value = jax.lax.dynamic_update_slice(
        past_value, v[:, :, None, :].astype(past_value.dtype), (zero, zero, position, zero)
    )

    keys, values = present_key, present_value
    if cache_indirection is not None:
        if attention_bias is not None:
            raise OnnxValidationError(
                "does not support `attention_bias` with `cache_indirection`: onnxruntime's CPU kernel reads the "
                "bias at the source beam's offset, which its operator text does not describe."
            )
        keys, values = _through_beams(present_key, present_value, jnp.asarray(cache_indirection), position)
    elif beam_width is not None and not is_traced(beam_width) and int(np.asarray(beam_width).reshape(())) > 1:
        raise OnnxValidationError(
            f"got `beam_width`={int(np.asarray(beam_width).reshape(()))} without `cache_indirection`; "
            "beams need it, as onnxruntime's kernel says."
        )
    step_scale = scale if scale else 1.0 / float(np.sqrt(head_size))
    scores = jnp.einsum("bnh,bnth->bnt", q.astype(jnp.float32), keys.astype(jnp.float32)) * step_scale
    scores = _biased_and_masked(scores, attention_bias, mask_index, mask_filter_value, batch)
    visible = jnp.arange(max_length, dtype=jnp.int32)[None, None, :] <= position
    scores = jnp.where(visible, scores, -jnp.inf)
    probabilities = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bnt,bnth->bnh", probabilities, values.astype(jnp.float32)).astype(dtype)
    results = (out.reshape(batch, 1, hidden), present_key, present_value)
    wanted = 3 if output_count is None else output_count
    return results[:wanted] + (None,) * max(0, wanted - 3)


def _through_beams(present_key, present_value, cache_indirection, position):
    """Each row's past keys and values read from the beam that made them: position ``j < position``
    of row ``b`` from row ``(b // beams) * beams + cache_indirection[b // beams, b % beams, j]``."""
    batch, _, max_length, _ = present_key.shape
    entries, beams, _ = cache_indirection.shape
    if entries * beams != batch:
        raise OnnxValidationError(
            f"got `cache_indirection` of shape {tuple(cache_indirection.shape)} for {batch} rows; it needs "
            "(rows / beams, beams, max_length)."
        )
    source_beam = cache_indirection.reshape(batch, -1)[:, :max_length]
    row = jnp.arange(batch, dtype=jnp.int32)[:, None]
    source = (row // beams) * beams + source_beam
    source = jnp.where(
        jnp.arange(max_length, dtype=jnp.int32)[None, :] < position, source, row
    )  # its own key at the end
    step = jnp.arange(max_length, dtype=jnp.int32)[None, :]
    keys = present_key[source, :, step].transpose(0, 2, 1, 3)
    values = present_value[source, :, step].transpose(0, 2, 1, 3)
    return keys, values


def _biased_and_masked(scores, attention_bias, mask_index, mask_filter_value, batch):
    """``scores`` ``(batch, heads, keys)`` plus the attention bias and the padding mask's
    ``mask_filter_value``, over as many keys as each gives (the rest are past the step)."""
    keys = scores.shape[-1]
    if attention_bias is not None:
        bias = jnp.asarray(attention_bias, jnp.float32)[:, :, 0, :]
        bias = jnp.pad(bias, ((0, 0), (0, 0), (0, max(0, keys - bias.shape[-1]))))[..., :keys]
        scores = scores + jnp.broadcast_to(bias, (batch, *bias.shape[1:]))
    if mask_index is not None:
        mask = jnp.asarray(mask_index)
        if mask.ndim != 2 or mask.shape[0] != batch:
            raise OnnxValidationError(
                f"supports a 2-D key padding `mask_index` of shape (batch, total_length), "
                f"got shape {tuple(mask.shape)}."
            )
        mask = jnp.pad(mask, ((0, 0), (0, max(0, keys - mask.shape[1]))), constant_values=1)[:, :keys]
        scores = scores + jnp.where(mask == 0, jnp.float32(mask_filter_value), 0.0)[:, None, :]
    return scores


def _cross_attention(
    query, key, value, mask_index, attention_bias, bias, *, num_heads, scale, mask_filter_value, output_count
):
    """The query against BNSH key and value caches of the encoder's length."""
    if key is None or value is None:
        raise OnnxValidationError("needs `key` and `value` (the BNSH caches) for cross attention (no `past_key`).")
    if attention_bias is not None:
        raise OnnxValidationError("does not support `attention_bias` for cross attention, as onnxruntime's kernel.")
    batch, _, hidden = query.shape
    key, value = jnp.asarray(key), jnp.asarray(value)
    if key.ndim != 4 or key.shape[1] != num_heads:
        raise OnnxValidationError(
            f"needs BNSH `key` (batch, {num_heads}, length, head_size) for cross attention, "
            f"got shape {tuple(key.shape)}."
        )
    head_size = hidden // num_heads
    q = query if bias is None else query + jnp.asarray(bias).reshape(1, 1, -1)[..., :hidden]
    q = q.reshape(batch, num_heads, head_size).astype(jnp.float32)
    step_scale = scale if scale else 1.0 / float(np.sqrt(head_size))
    scores = jnp.einsum("bnh,bnth->bnt", q, key.astype(jnp.float32)) * step_scale
    scores = _biased_and_masked(scores, None, mask_index, mask_filter_value, batch)
    out = jnp.einsum("bnt,bnth->bnh", jax.nn.softmax(scores, axis=-1), value.astype(jnp.float32)).astype(query.dtype)
    wanted = 1 if output_count is None else output_count
    return (out.reshape(batch, 1, hidden),) + (None,) * (wanted - 1)


__all__ = ["decoder_masked_multihead_attention"]
