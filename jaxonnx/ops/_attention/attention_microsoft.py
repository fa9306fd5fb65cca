"""Attention (com.microsoft, version 1): onnxruntime's fused BERT / GPT-2 self attention,
with its input projection, ``mask_index`` kinds and stacked past; not onnx's Attention-23."""

from __future__ import annotations

import jax.numpy as jnp
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.attention import stacked_self_attention
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT
_FLOAT = onnx.defs.OpSchema.AttrType.FLOAT
_SCHEMA = contrib_schema(
    "Attention",
    "Multi-head self attention with the Q/K/V input projection, mask_index, a stacked past and attention bias.",
    inputs=[
        ("input", "T"),
        ("weights", "T"),
        ("bias", "T", "optional"),
        ("mask_index", "M", "optional"),
        ("past", "T", "optional"),
        ("attention_bias", "T", "optional"),
        ("past_sequence_length", "M", "optional"),
    ],
    outputs=[("output", "T"), ("present", "T", "optional")],
    type_constraints=[("T", ["tensor(float)", "tensor(float16)", "tensor(bfloat16)"]), ("M", ["tensor(int32)"])],
    attributes=[
        attribute_without_default("num_heads", _INT, "Number of attention heads.", required=True),
        attribute_without_default("qkv_hidden_sizes", onnx.defs.OpSchema.AttrType.INTS, "Hidden sizes of Q, K and V."),
        attribute("unidirectional", 0, "Causal attention."),
        attribute_without_default("scale", _FLOAT, "Scale of Q K^T (default 1 / sqrt(head_size))."),
        attribute_without_default("mask_filter_value", _FLOAT, "Added to masked scores (default -10000)."),
        attribute_without_default("do_rotary", _INT, "Rotary embedding (not supported)."),
        attribute_without_default("rotary_embedding_dim", _INT, "Rotary embedding dimension."),
        attribute_without_default("past_present_share_buffer", _INT, "past and present are one maximal buffer."),
    ],
    differentiable=("input", "weights", "bias", "past", "attention_bias"),
)


@register("Attention", 1, domain="com.microsoft", schema=_SCHEMA, folds=False, concrete=("past_sequence_length",))
def attention_microsoft(
    input,
    weights,
    bias=None,
    mask_index=None,
    past=None,
    attention_bias=None,
    past_sequence_length=None,
    *,
    num_heads=None,
    qkv_hidden_sizes=None,
    unidirectional=0,
    scale=None,
    mask_filter_value=None,
    do_rotary=None,
    rotary_embedding_dim=None,
    past_present_share_buffer=None,
):
    """Implements com.microsoft Attention: ``input @ weights + bias`` split into Q, K and V,
    then multi-head attention with onnxruntime's masks.

    Masked keys get ``mask_filter_value`` added to their scores (not -inf), as onnxruntime's
    kernels do; ``mask_index`` is one of: ``(batch,)`` ends (right padding), ``(2 * batch,)``
    ends then starts (left padding too), ``(3 * batch + 2,)`` (its ends are used),
    ``(batch, total)`` or ``(batch, S, total)`` of 1 (attend) and 0, or ``(batch, 1,
    max_length, max_length)`` (Megatron GPT-2: rows ``past ..``, first ``total`` columns).

    Args:
        input: ``(batch, S, input_hidden)``.
        weights: ``(input_hidden, q_hidden + k_hidden + v_hidden)``.
        bias: optional ``(q_hidden + k_hidden + v_hidden,)``.
        mask_index: optional int32 mask, as above.
        past: optional ``(2, batch, num_heads, past_length, head_size)``: keys, then values,
            put before the new ones; with ``past_present_share_buffer`` the whole buffer.
        attention_bias: optional, ``(batch or 1, num_heads or 1, S, total)``, added to the scores.
        past_sequence_length: int32 scalar, the past rows of a shared buffer (may be traced).
        num_heads: the heads.
        qkv_hidden_sizes: ``[q_hidden, k_hidden, v_hidden]``; thirds of the weights' width when absent.
        unidirectional: 1 masks the keys after each query's position.
        scale: the factor of ``Q K^T``; ``1 / sqrt(head_size)`` when absent or 0.
        mask_filter_value: what masked scores get added; -10000 when absent.
        do_rotary, rotary_embedding_dim: not supported (onnxruntime's CPU kernel refuses them too).
        past_present_share_buffer: 1: ``past`` is ``(2, batch, num_heads, max_length,
            head_size)`` whose first ``past_sequence_length`` rows hold the past; the new rows
            are written after them and the buffer is returned as ``present``.

    Returns:
        ``(output, present)``: ``(batch, S, v_hidden)``, and the keys and values stacked
        ``(2, batch, num_heads, total, head_size)``. Without ``past`` the present holds this
        call's keys and values (``total`` = S), as onnxruntime computes it: Whisper decoder
        files without ``past`` declare ``present`` all the same. A node that declares
        ``output`` alone gets ``output`` alone; so does a call whose values' width differs
        from the keys' (``qkv_hidden_sizes``) without ``past``.

    Example:
        >>> x = jnp.ones((1, 2, 4))
        >>> w = jnp.concatenate([jnp.eye(4)] * 3, axis=1)   # Q = K = V = x
        >>> output, present = jaxonnx.ops.attention_microsoft(x, w, num_heads=2)
        >>> output.shape, present.shape   # no past: the present is this call's keys and values
        ((1, 2, 4), (2, 1, 2, 2, 2))
    """
    if do_rotary:
        raise OnnxValidationError(
            "got `do_rotary`=1; rotary embedding inside Attention is not supported (onnxruntime's CPU kernel refuses "
            "it too): apply RotaryEmbedding to Q and K with MultiHeadAttention."
        )
    if input.ndim != 3 or weights.ndim != 2 or weights.shape[0] != input.shape[2]:
        raise OnnxValidationError(
            f"needs a 3-D `input` (batch, sequence, input_hidden) and 2-D `weights` (input_hidden, ...), got "
            f"{tuple(input.shape)} and {tuple(weights.shape)}."
        )
    sizes = _hidden_sizes(qkv_hidden_sizes, weights.shape[1], num_heads)
    projected = jnp.einsum("bsi,io->bso", input, weights, preferred_element_type=input.dtype)
    if bias is not None:
        if tuple(bias.shape) != (weights.shape[1],):
            raise OnnxValidationError(f"needs `bias` of shape ({weights.shape[1]},), got {tuple(bias.shape)}.")
        projected = projected + bias.reshape(1, 1, -1)
    q, k, v = jnp.split(projected, [sizes[0], sizes[0] + sizes[1]], axis=2)
    return stacked_self_attention(
        q,
        k,
        v,
        num_heads=num_heads,
        mask_index=mask_index,
        past=past,
        attention_bias=attention_bias,
        past_sequence_length=past_sequence_length,
        unidirectional=unidirectional,
        scale=scale,
        filter_value=-10000.0 if mask_filter_value is None else mask_filter_value,
        share_buffer=bool(past_present_share_buffer),
    )


def _hidden_sizes(qkv_hidden_sizes, width, num_heads):
    sizes = list(qkv_hidden_sizes) if qkv_hidden_sizes else [width // 3] * 3
    if (
        not num_heads
        or num_heads <= 0
        or len(sizes) != 3
        or sum(sizes) != width
        or any(s <= 0 or s % num_heads for s in sizes)
        or sizes[0] != sizes[1]
    ):
        raise OnnxValidationError(
            f"needs Q, K and V hidden sizes (`qkv_hidden_sizes`={qkv_hidden_sizes}, or thirds of the weights' width "
            f"{width}) that are positive multiples of `num_heads`={num_heads}, Q's equal to K's, summing to the width."
        )
    return sizes


__all__ = ["attention_microsoft"]
