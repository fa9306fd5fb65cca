"""GroupQueryAttention (com.microsoft, version 1): onnxruntime's grouped-query attention
with a key/value cache, as onnxruntime-genai's model builder writes it for every LLM.

The cache is BNSH, ``(batch, kv_num_heads, cache_length, head_size)``; each batch entry
holds ``seqlens_k[b] + 1`` valid positions after the step, and ``seqlens_k`` may be traced:
that is how a decode loop runs under one ``jax.jit`` over a fixed-size cache
(onnxruntime-genai's shared buffer: past and present of one maximal length, positions from
``seqlens_k``). The scalar ``total_sequence_length`` decides the present cache's length,
``max(total_sequence_length, past length)``. The builder's graphs take it from the attention
mask's shape, so it is known at trace time; where it is traced, the present cache is taken
to be as long as the past (the shared buffer, where it never exceeds the past's length) or,
with no past, as the prompt; a cache that grows step by step needs it known at trace time.
With ``sliding_window_cache`` (what the builder writes for sliding-window layers) the
buffers are window-sized instead and evict as onnxruntime's text defines, which traced
positions follow too.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx.defs
import onnx.helper

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.attention import (
    check_cache_rows,
    grouped_attention,
    merge_heads,
    rms_normalize,
    rotate,
    split_heads,
)
from jaxonnx.ops._helpers.common import is_traced
from jaxonnx.ops._helpers.schemas import attribute, attribute_without_default, contrib_schema

_INT = onnx.defs.OpSchema.AttrType.INT
_FLOAT = onnx.defs.OpSchema.AttrType.FLOAT
_FLOATS = ["tensor(float16)", "tensor(bfloat16)", "tensor(float)"]


_SCHEMA = contrib_schema(
    "GroupQueryAttention",
    "Grouped-query self attention with a BNSH key/value cache, rotary embedding, local window, "
    "soft cap, smooth softmax or head sinks, attention bias and per-head Q/K RMS norms.",
    inputs=[
        ("query", "T"),
        ("key", "T", "optional"),
        ("value", "T", "optional"),
        ("past_key", "T_CACHE", "optional"),
        ("past_value", "T_CACHE", "optional"),
        ("seqlens_k", "M"),
        ("total_sequence_length", "M"),
        ("cos_cache", "T", "optional"),
        ("sin_cache", "T", "optional"),
        ("position_ids", "tensor(int64)", "optional"),
        ("attention_bias", "T", "optional"),
        ("head_sink", "T", "optional"),
        ("k_scale", "T_KV_SCALE", "optional"),
        ("v_scale", "T_KV_SCALE", "optional"),
        ("q_norm_weight", "T", "optional"),
        ("k_norm_weight", "T", "optional"),
        ("query_seqlens", "M", "optional"),
    ],
    outputs=[
        ("output", "T"),
        ("present_key", "T_CACHE", "optional"),
        ("present_value", "T_CACHE", "optional"),
        ("output_qk", "T", "optional"),
    ],
    type_constraints=[
        ("T", _FLOATS),
        ("T_CACHE", _FLOATS + ["tensor(uint8)", "tensor(int8)", "tensor(float8e4m3fn)"]),
        ("T_KV_SCALE", ["tensor(float)"]),
        ("M", ["tensor(int32)"]),
    ],
    attributes=[
        attribute_without_default("num_heads", _INT, "Number of query heads.", required=True),
        attribute_without_default("kv_num_heads", _INT, "Number of key/value heads.", required=True),
        attribute_without_default("scale", _FLOAT, "Scale of Q K^T (default 1 / sqrt(head_size))."),
        attribute_without_default("softcap", _FLOAT, "Soft cap of the scores (0: none)."),
        attribute("local_window_size", -1, "Keys a query attends behind it (-1: all)."),
        attribute_without_default("do_rotary", _INT, "Rotary embedding of Q and K from the caches."),
        attribute_without_default("rotary_interleaved", _INT, "Interleaved rotary pairs."),
        attribute("smooth_softmax", -1, "A zero logit in every softmax denominator."),
        attribute("qk_output", 0, "output_qk holds the scores (1) or the probabilities (2)."),
        attribute("causal", 1, "Causal attention (0: bidirectional)."),
        attribute("sliding_window_cache", 0, "Window-sized past/present buffers (not supported)."),
        attribute_without_default("kv_cache_bit_width", _INT, "Bit width of a quantized cache (not supported)."),
        attribute("k_quant_type", "NONE", "Quantization of the key cache (only NONE is supported)."),
        attribute("v_quant_type", "NONE", "Quantization of the value cache (only NONE is supported)."),
        attribute("qk_norm_epsilon", 1e-6, "Epsilon of the per-head Q/K RMS norms."),
        attribute_without_default("q_norm_epsilon", _FLOAT, "Epsilon of the Q norm (overrides qk_norm_epsilon)."),
        attribute_without_default("k_norm_epsilon", _FLOAT, "Epsilon of the K norm (overrides qk_norm_epsilon)."),
    ],
    differentiable=(
        "query",
        "key",
        "value",
        "past_key",
        "past_value",
        "cos_cache",
        "sin_cache",
        "attention_bias",
        "head_sink",
        "q_norm_weight",
        "k_norm_weight",
    ),
)


@register(
    "GroupQueryAttention",
    1,
    domain="com.microsoft",
    schema=_SCHEMA,
    folds=False,
    concrete=("total_sequence_length", "seqlens_k", "query_seqlens", "position_ids"),
    # Read while known only to check them: a builder file computes `seqlens_k` from the
    # attention mask, and still compiles whole for an eager call. Not `total_sequence_length`,
    # whose value decides the present cache's length.
    checked=("seqlens_k", "query_seqlens", "position_ids"),
)
def group_query_attention(
    query,
    key=None,
    value=None,
    past_key=None,
    past_value=None,
    seqlens_k=None,
    total_sequence_length=None,
    cos_cache=None,
    sin_cache=None,
    position_ids=None,
    attention_bias=None,
    head_sink=None,
    k_scale=None,
    v_scale=None,
    q_norm_weight=None,
    k_norm_weight=None,
    query_seqlens=None,
    *,
    num_heads=None,
    kv_num_heads=None,
    scale=None,
    softcap=None,
    local_window_size=-1,
    do_rotary=None,
    rotary_interleaved=None,
    smooth_softmax=-1,
    qk_output=0,
    causal=1,
    sliding_window_cache=0,
    kv_cache_bit_width=None,
    k_quant_type="NONE",
    v_quant_type="NONE",
    qk_norm_epsilon=1e-6,
    q_norm_epsilon=None,
    k_norm_epsilon=None,
    checks=None,
):
    """Implements com.microsoft GroupQueryAttention: attention with ``kv_num_heads`` key/value
    heads shared by groups of the ``num_heads`` query heads, and a BNSH cache.

    Each batch entry ``b`` holds ``T = seqlens_k[b] + 1`` positions after the step; its new
    tokens sit at positions ``P .. P + S - 1`` with ``P = T - S`` (``P = T - query_seqlens[b]``
    with right-padded chunks), or ``P = 0`` for a first prompt (``S`` equal to
    ``total_sequence_length``: the batch's prompts right-padded to ``S``). The present cache
    holds the past's first ``P`` positions, then the new keys and values, then zeros, as
    onnxruntime's CPU kernel writes it. Query ``s`` (at position ``p = P + s``) attends the
    keys ``j <= p`` (``j < T`` without ``causal``), and with ``local_window_size`` ``W`` only
    ``j >= p - W``. Scores are ``scale * q k^T``, soft-capped, plus ``attention_bias``;
    the softmax takes a zero logit (``smooth_softmax``) or the head's ``head_sink`` into its
    denominator. With ``do_rotary``, Q and K rotate at their positions (``position_ids``
    where given) after the optional per-head RMS norms ``q_norm_weight``, ``k_norm_weight``.

    Args:
        query: ``(batch, S, num_heads * head_size)``, or packed QKV ``(batch, S, (num_heads
            + 2 * kv_num_heads) * head_size)`` without ``key`` and ``value``.
        key: ``(batch, S, kv_num_heads * head_size)``; ``value`` likewise.
        past_key: ``(batch, kv_num_heads, past_length, head_size)``; ``past_value`` likewise.
            With onnxruntime-genai's shared buffer it is the whole maximal cache.
        seqlens_k: int32 ``(batch,)``: the positions held after the step, minus one. May be traced.
        total_sequence_length: int32 scalar, the batch's largest ``seqlens_k + 1``: it
            decides the present length, ``max(total, past_length)`` (traced: see above).
        cos_cache: ``(max_position, rotary_dim / 2)`` with ``do_rotary``; ``sin_cache`` likewise.
        position_ids: optional int64 ``(batch, S)``: the rotary positions (of a first prompt,
            only the very first one, every entry's following it, as onnxruntime reads them).
        attention_bias: optional, broadcastable to ``(batch, num_heads, S, total_sequence_length)``.
        head_sink: optional ``(num_heads,)``: one logit per head in the softmax denominator.
        k_scale, v_scale: the scales of a quantized cache (see ``k_quant_type``).
        q_norm_weight, k_norm_weight: optional ``(head_size,)``: per-head RMS norms of Q and K.
        query_seqlens: optional int32 ``(batch,)``: the valid rows of a right-padded chunk
            (only those enter the cache; the others' outputs are unspecified).
        num_heads, kv_num_heads: the query and key/value heads.
        scale: the factor of ``q k^T``; ``1 / sqrt(head_size)`` when absent or 0.
        softcap: when > 0, scores become ``softcap * tanh(scores / softcap)``.
        local_window_size: when > 0, how many keys behind its own a query attends.
        do_rotary, rotary_interleaved: rotary embedding of Q and K, pairs interleaved or halves.
        smooth_softmax: 1 adds a zero logit to every softmax denominator.
        qk_output: 1 returns the scores (scaled, capped, biased), 2 the probabilities, as
            ``output_qk`` ``(batch, num_heads, S, present_length)``.
        causal: 0 lets every query attend every valid key.
        sliding_window_cache: 1: ``past_key`` holds ``C >= local_window_size`` rows, of which
            the first ``L(T')`` hold the latest positions before the step (``T' = T - S``), in
            order; the present caches (``C`` rows) hold the latest ``L(T)``, with ``L(T) = T``
            up to ``C``, then ``T - G * ceil((T - C) / G)``, ``G = C - local_window_size + 1``
            (rows past ``L`` are zeros here, unspecified in onnxruntime). Attention and
            ``attention_bias`` (indexed by absolute key position) are as with a whole cache.
        kv_cache_bit_width, k_quant_type, v_quant_type: an int8 cache (bit width 8) quantized
            ``PER_TENSOR`` or ``PER_CHANNEL`` with ``k_scale``, ``v_scale``: the past is
            dequantized, the new keys and values quantized (round half to even, saturate),
            and attention reads the cache's values, as onnxruntime's CPU kernel does; or a
            4-bit cache (bit width 4): uint8 of ``ceil(head_size / 2)`` bytes a row, codes
            ``c + 8`` (``c`` in [-8, 7]) with the even feature in the low nibble. Float8
            caches are not supported (an error; onnxruntime's CPU kernel has none either).
        qk_norm_epsilon, q_norm_epsilon, k_norm_epsilon: the norms' epsilons.
        checks: where the range checks of traced ``seqlens_k``, ``query_seqlens`` and
            rotary positions go, to be made after the computation (an eager call's
            compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        ``(output, present_key, present_value)``: ``(batch, S, num_heads * head_size)`` and
        the two caches ``(batch, kv_num_heads, max(total, past_length), head_size)`` (``past_length``
        with ``sliding_window_cache``); with
        ``qk_output``, ``output_qk`` too: the scores (0 where masked) or the probabilities,
        ``(batch, num_heads, S, total_sequence_length)``.

    Example:
        >>> q = k = v = jnp.ones((1, 2, 8))   # one head of size 8, a prompt of 2 tokens
        >>> out, present_key, _ = jaxonnx.ops.group_query_attention(
        ...     q, k, v, None, None, np.array([1], np.int32), np.array(2, np.int32), num_heads=1, kv_num_heads=1)
        >>> out.shape, present_key.shape
        ((1, 2, 8), (1, 1, 2, 8))
    """
    if num_heads is None or kv_num_heads is None or num_heads <= 0 or kv_num_heads <= 0 or num_heads % kv_num_heads:
        raise OnnxValidationError(
            f"needs `num_heads` > 0 a multiple of `kv_num_heads` > 0, got {num_heads} and {kv_num_heads}."
        )
    if causal not in (0, 1) or (not causal and local_window_size not in (-1, None)):
        raise OnnxValidationError(
            f"got `causal`={causal} with `local_window_size`={local_window_size}; causal is 0 or 1, and a local "
            "window needs causal attention."
        )
    q, k, v = _heads(query, key, value, num_heads, kv_num_heads)
    batch, _, length, head_size = q.shape
    past_key_dtype = None if past_key is None else past_key.dtype
    past_value_dtype = None if past_value is None else past_value.dtype
    key_codec = _cache_codec("k", k_quant_type, k_scale, past_key, kv_cache_bit_width, kv_num_heads, head_size, q.dtype)
    value_codec = _cache_codec(
        "v", v_quant_type, v_scale, past_value, kv_cache_bit_width, kv_num_heads, head_size, q.dtype
    )
    if key_codec is not None:
        # Computed in float: the past as its codes say, the new keys and values as the cache
        # will hold them; the present caches are quantized at the end.
        past_key, k = key_codec[0](past_key), key_codec[0](key_codec[1](k))
    if value_codec is not None:
        past_value, v = value_codec[0](past_value), value_codec[0](value_codec[1](v))
    past_length = _checked_past(past_key, past_value, batch, kv_num_heads, head_size)
    total = _total(total_sequence_length, past_length, length, attention_bias, qk_output)
    windowed = bool(sliding_window_cache)
    if windowed:
        _check_windowed(past_key, local_window_size, causal, qk_output)
        present_length = past_length  # the window's capacity; positions may run past it
    else:
        present_length = max(total, past_length)
        if not is_traced(total_sequence_length) and query_seqlens is None:
            _check_step(total, length, batch, present_length, past_length)
    totals = _checked_lengths(
        seqlens_k, "seqlens_k", batch, 1, None if windowed else present_length, offset=1, checks=checks
    )
    if query_seqlens is not None:
        valid = _checked_lengths(query_seqlens, "query_seqlens", batch, 0, length, offset=0, checks=checks)
        starts = totals - valid
    else:
        # onnxruntime's rule: a first prompt (S == total) starts at 0, a later step at T - S;
        # T <= S exactly in a first prompt, so this is one formula that needs no total.
        valid = None
        starts = jnp.maximum(totals - length, 0)
    positions = starts[:, None] + jnp.arange(length, dtype=starts.dtype)[None, :]  # (batch, S)

    dtype = q.dtype
    if (q_norm_weight is None) != (k_norm_weight is None):
        raise OnnxValidationError("needs `q_norm_weight` and `k_norm_weight` together, got only one of them.")
    if q_norm_weight is not None:
        for name, weight in (("q_norm_weight", q_norm_weight), ("k_norm_weight", k_norm_weight)):
            if tuple(weight.shape) != (head_size,):
                raise OnnxValidationError(
                    f"needs `{name}` of shape (head_size,) = ({head_size},), got {tuple(weight.shape)}."
                )
        q = rms_normalize(q, q_norm_weight, q_norm_epsilon if q_norm_epsilon is not None else qk_norm_epsilon)
        k = rms_normalize(k, k_norm_weight, k_norm_epsilon if k_norm_epsilon is not None else qk_norm_epsilon)
    if do_rotary:
        rotary_positions = positions
        if position_ids is not None:
            rotary_positions = _checked_position_ids(position_ids, batch, length)
            # A first prompt reads only the first position id (of the first entry), the others
            # following it, as onnxruntime does.
            first_prompt = (
                query_seqlens is None and length == total and (past_key is None or not is_traced(total_sequence_length))
            )
            if first_prompt:
                rotary_positions = jnp.broadcast_to(
                    rotary_positions[:1, :1] + jnp.arange(length, dtype=rotary_positions.dtype)[None, :],
                    (batch, length),
                )
        q, k = _rotary(q, k, cos_cache, sin_cache, rotary_positions, head_size, total, rotary_interleaved, checks)

    if windowed:
        keys_k, keys_v, key_at, present_key, present_value = _windowed(
            past_key, past_value, k, v, totals, starts, valid, local_window_size
        )
        key_valid = key_at >= 0
    else:
        present_key = _present(past_key, k, starts, valid, present_length)
        present_value = _present(past_value, v, starts, valid, present_length)
        keys_k, keys_v = present_key, present_value
        key_at = jnp.broadcast_to(jnp.arange(present_length, dtype=jnp.int32), (batch, present_length))
        key_valid = key_at < totals[:, None]
    # The absolute position of each key (batch, 1, 1, keys) and query (batch, 1, S, 1); a
    # first prompt's padding rows (past a batch entry's T) attend as its last valid row does.
    key_at = key_at.reshape(batch, 1, 1, -1)
    query_at = jnp.minimum(positions, totals[:, None] - 1).reshape(batch, 1, length, 1)
    allowed = key_valid.reshape(batch, 1, 1, -1)
    if causal:
        allowed = allowed & (key_at <= query_at)
        if local_window_size is not None and local_window_size > 0:
            allowed = allowed & (key_at > query_at - local_window_size)
    # Quantized, the rows past the held positions are zero bytes (onnxruntime clears the
    # buffer), not the code of 0.
    held_rows = (jnp.arange(present_length, dtype=jnp.int32)[None, :] < totals[:, None]).reshape(batch, 1, -1, 1)
    if key_codec is not None:
        present_key = jnp.where(held_rows, key_codec[1](present_key), jnp.zeros((), past_key_dtype))
    if value_codec is not None:
        present_value = jnp.where(held_rows, value_codec[1](present_value), jnp.zeros((), past_value_dtype))
    bias = None
    if attention_bias is not None:
        bias = _checked_bias(attention_bias, batch, num_heads, length, total, key_at)
    sink = None
    if head_sink is not None:
        if tuple(head_sink.shape) != (num_heads,):
            raise OnnxValidationError(
                f"needs `head_sink` of shape (num_heads,) = ({num_heads},), got {tuple(head_sink.shape)}."
            )
        sink = head_sink.astype(dtype).reshape(1, num_heads, 1, 1)
    elif smooth_softmax == 1:
        sink = jnp.zeros((), dtype)
    scale = float(scale) if scale else 1.0 / np.sqrt(head_size)
    if qk_output not in (0, 1, 2):
        raise OnnxValidationError(f"got `qk_output`={qk_output}; it is 0, 1 (scores) or 2 (probabilities).")
    result = grouped_attention(
        q,
        keys_k,
        keys_v,
        scale=scale,
        allowed=allowed,
        bias=bias,
        softcap=float(softcap or 0.0),
        sink=sink,
        probabilities=bool(qk_output),
    )
    if not qk_output:
        return merge_heads(result), present_key, present_value
    y, scores, weights = result
    qk = jnp.where(allowed, scores, jnp.zeros((), dtype)) if qk_output == 1 else weights
    return merge_heads(y), present_key, present_value, qk[..., :total]


def _cache_codec(which, quant_type, scale, past, bit_width, kv_heads, head_size, dtype):
    """``(dequantize, quantize)`` of a quantized cache, or None for a float one: int8 codes
    (``kv_cache_bit_width`` 8), or 4-bit codes ``c + 8`` two a byte in uint8 (the even
    feature in the low nibble; the last axis ``ceil(head_size / 2)``), times a scale per
    tensor (``[1]``) or per channel (``[1, kv_num_heads, 1, head_size]``), rounded half to
    even and saturated."""
    quant_type = quant_type or "NONE"
    if quant_type == "NONE":
        if scale is not None or (past is not None and not jnp.issubdtype(past.dtype, jnp.floating)):
            raise OnnxValidationError(
                f"got `{which}_scale` or an integer cache with `{which}_quant_type`='NONE'; a quantized cache names its "
                "quantization type."
            )
        return None
    if quant_type not in ("PER_TENSOR", "PER_CHANNEL") or scale is None or past is None:
        raise OnnxValidationError(
            f"needs `{which}_quant_type` 'PER_TENSOR' or 'PER_CHANNEL' with `{which}_scale` and a past cache, got "
            f"{quant_type!r} (scale given: {scale is not None}, past given: {past is not None})."
        )
    bits = bit_width or 8
    if not ((past.dtype == jnp.int8 and bits == 8) or (past.dtype == jnp.uint8 and bits == 4)):
        raise OnnxValidationError(
            f"got a {np.dtype(past.dtype).name} cache with `kv_cache_bit_width`={bit_width}; the quantized caches "
            "supported are int8 (8 bits) and 4-bit codes packed in uint8 (not float8, which onnxruntime's CPU kernel lacks)."
        )
    want = (1,) if quant_type == "PER_TENSOR" else (1, kv_heads, 1, head_size)
    if scale.size != int(np.prod(want)):
        raise OnnxValidationError(f"needs `{which}_scale` of shape {want} for {quant_type}, got {tuple(scale.shape)}.")
    scale = jnp.asarray(scale, jnp.float32).reshape((1, 1, 1, 1) if quant_type == "PER_TENSOR" else want)

    def dequantize(x):
        if bits == 4:  # two codes a byte, the even feature in the low nibble, offset by 8
            x = jnp.stack([x & 15, x >> 4], axis=-1).reshape(x.shape[:-1] + (2 * x.shape[-1],))[..., :head_size]
            x = x.astype(jnp.int8) - 8
        return x.astype(jnp.float32) * scale

    def quantize(x):
        low, high = (-8, 7) if bits == 4 else (-128, 127)
        codes = jnp.clip(jnp.round(x.astype(jnp.float32) / scale), low, high).astype(jnp.int8)
        if bits == 8:
            return codes
        codes = (codes + 8).astype(jnp.uint8)
        if head_size % 2:
            codes = jnp.pad(codes, [(0, 0)] * 3 + [(0, 1)])
        return codes[..., 0::2] | (codes[..., 1::2] << 4)

    return (lambda x: dequantize(x).astype(dtype)), quantize


def _heads(query, key, value, num_heads, kv_num_heads):
    """Q, K and V as ``(batch, heads, S, head_size)``, from separate or packed inputs."""
    if query.ndim != 3:
        raise OnnxValidationError(f"needs a 3-D `query`, got shape {tuple(query.shape)}.")
    if key is None and value is None:
        width = num_heads + 2 * kv_num_heads
        if query.shape[2] % width:
            raise OnnxValidationError(
                f"needs a packed `query` (no `key`, `value`) of hidden size (num_heads + 2 * kv_num_heads) * head_size, "
                f"got shape {tuple(query.shape)} with {num_heads} + 2 * {kv_num_heads} heads."
            )
        size = query.shape[2] // width
        q, k, v = jnp.split(query, [num_heads * size, (num_heads + kv_num_heads) * size], axis=2)
    elif key is None or value is None:
        raise OnnxValidationError("needs `key` and `value` together (or neither, for packed QKV), got one of them.")
    else:
        q, k, v = query, key, value
    q = split_heads(q, num_heads, "query", "num_heads")
    k = split_heads(k, kv_num_heads, "key", "kv_num_heads")
    v = split_heads(v, kv_num_heads, "value", "kv_num_heads")
    if k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[2] != q.shape[2] or k.shape[3] != q.shape[3]:
        raise OnnxValidationError(
            f"needs `key` and `value` of one shape, with the batch, sequence and head size of `query`; got (as heads) "
            f"`query` {tuple(q.shape)}, `key` {tuple(k.shape)}, `value` {tuple(v.shape)}."
        )
    return q, k, v


def _total(total_sequence_length, past_length, length, attention_bias, qk_output):
    """The value of ``total_sequence_length``; traced, what the shapes say it is."""
    if total_sequence_length.size != 1:
        raise OnnxValidationError(
            f"needs a one-element `total_sequence_length`, got shape {tuple(total_sequence_length.shape)}."
        )
    if not is_traced(total_sequence_length):
        return int(np.asarray(total_sequence_length).reshape(()))
    if attention_bias is not None and attention_bias.ndim == 4:
        return attention_bias.shape[3]
    if qk_output:
        raise OnnxValidationError(
            f"needs the value of `total_sequence_length` for `qk_output`={qk_output} (the scores' last dim), but it "
            "is traced; pass it as a Python value or a numpy array."
        )
    # Traced: the present cache is as long as the past (onnxruntime-genai's shared buffer,
    # where total <= past length), or, with no past, as the prompt.
    return past_length if past_length else length


def _check_step(total, length, batch, present_length, past_length):
    """onnxruntime's checks of the step's kind: a first prompt (S == total), one more token
    (S == 1), or a later chunk of a batch of one."""
    if length > 1 and length != total and batch != 1:
        raise OnnxValidationError(
            f"got a chunk of {length} tokens with `total_sequence_length`={total} (past context) for a batch of "
            f"{batch}; a chunk after the first prompt needs batch 1 (or `query_seqlens`)."
        )
    if length > present_length:
        raise OnnxValidationError(
            f"got {length} new tokens for a present cache of {present_length} (`total_sequence_length`={total}, "
            f"past {past_length})."
        )


def _checked_past(past_key, past_value, batch, kv_heads, head_size):
    if (past_key is None) != (past_value is None):
        raise OnnxValidationError("needs `past_key` and `past_value` together, got only one of them.")
    if past_key is None:
        return 0
    want = (batch, kv_heads, past_key.shape[2] if past_key.ndim == 4 else -1, head_size)
    if tuple(past_key.shape) != want or tuple(past_value.shape) != want:
        raise OnnxValidationError(
            f"needs `past_key` and `past_value` of shape (batch, kv_num_heads, past_length, head_size) = "
            f"{(batch, kv_heads, 'past_length', head_size)}, got {tuple(past_key.shape)} and {tuple(past_value.shape)}."
        )
    return past_key.shape[2]


def _checked_lengths(lengths, name, batch, low, high, *, offset, checks=None):
    """``lengths + offset`` as int32 ``(batch,)``, each checked in ``[low, high]``: when
    known, else by ``checks`` after the computation where given."""
    if lengths is None or tuple(lengths.shape) != (batch,):
        raise OnnxValidationError(
            f"needs `{name}` of shape (batch,) = ({batch},), got {None if lengths is None else tuple(lengths.shape)}."
        )
    message = f"got `{name}`={{given}}; each {name}{' + 1' if offset else ''} is in [{low}, {'inf' if high is None else high}]."
    shifted = jnp.asarray(lengths).astype(jnp.int32) + offset
    if not is_traced(lengths):
        values = np.asarray(lengths).astype(np.int64) + offset
        if values.size and (values.min() < low or (high is not None and values.max() > high)):
            raise OnnxValidationError(message.format(given=np.asarray(lengths).tolist()))
    elif checks is not None and batch:
        out_of_range = (shifted < low) if high is None else (shifted < low) | (shifted > high)
        checks.fail_where(out_of_range, lengths, message, given=lengths)
    return shifted


def _checked_position_ids(position_ids, batch, length):
    if tuple(position_ids.shape) != (batch, length):
        raise OnnxValidationError(
            f"needs `position_ids` of shape (batch, sequence) = {(batch, length)}, got {tuple(position_ids.shape)}."
        )
    return jnp.asarray(position_ids)


def _rotary(q, k, cos_cache, sin_cache, positions, head_size, total, interleaved, checks=None):
    if cos_cache is None or sin_cache is None:
        raise OnnxValidationError("needs `cos_cache` and `sin_cache` with `do_rotary`=1.")
    if cos_cache.ndim != 2 or cos_cache.shape != sin_cache.shape or 2 * cos_cache.shape[1] > head_size:
        raise OnnxValidationError(
            f"needs `cos_cache` and `sin_cache` of one shape (max_position, rotary_dim / 2) with rotary_dim up to the "
            f"head size {head_size}, got {tuple(cos_cache.shape)} and {tuple(sin_cache.shape)}."
        )
    if cos_cache.shape[0] < total:
        raise OnnxValidationError(
            f"needs caches of at least `total_sequence_length`={total} rows, got {tuple(cos_cache.shape)}."
        )
    message = f"got rotary positions from {{low}} to {{high}}; each is in [0, {cos_cache.shape[0]})."
    check_cache_rows(positions, cos_cache.shape[0], message, checks)
    positions = jnp.clip(positions, 0, cos_cache.shape[0] - 1)  # traced positions: no out-of-range reads
    cos = jnp.take(cos_cache, positions, axis=0)[:, None].astype(q.dtype)  # (batch, 1, S, rotary_dim / 2)
    sin = jnp.take(sin_cache, positions, axis=0)[:, None].astype(q.dtype)
    return rotate(q, cos, sin, interleaved=interleaved), rotate(k, cos, sin, interleaved=interleaved)


def _present(past, new, starts, valid, present_length):
    """The present cache: the past's first ``starts[b]`` rows, the new rows from there (the
    first ``valid[b]`` of them where given), zeros elsewhere."""
    batch, heads, length, size = new.shape
    rows = jnp.arange(present_length, dtype=jnp.int32).reshape(1, 1, present_length, 1)
    start = starts.reshape(batch, 1, 1, 1)
    offset = rows - start  # the new row each present row would take
    # A gather of the new rows, so that the positions may be traced (a decode loop under jit).
    picked = jnp.take_along_axis(
        new, jnp.broadcast_to(jnp.clip(offset, 0, length - 1), (batch, heads, present_length, 1)), axis=2
    )
    limit = length if valid is None else valid.reshape(batch, 1, 1, 1)
    present = jnp.where((offset >= 0) & (offset < limit), picked, jnp.zeros((), new.dtype))
    if past is not None:
        past = past.astype(new.dtype)
        if past.shape[2] < present_length:
            past = jnp.pad(past, [(0, 0), (0, 0), (0, present_length - past.shape[2]), (0, 0)])
        present = jnp.where(rows < start, past[:, :, :present_length], present)
    return present


def _checked_bias(bias, batch, heads, length, total, key_at):
    """``attention_bias`` at each key's absolute position (its last axis is
    ``total_sequence_length`` long, indexed by position): ``(batch or 1, heads or 1, S, keys)``."""
    target = (batch, heads, length, total)
    if (
        bias.ndim != 4
        or any(b not in (1, t) for b, t in zip(bias.shape[:2], target[:2]))
        or tuple(bias.shape[2:]) != target[2:]
    ):
        raise OnnxValidationError(
            f"needs `attention_bias` of shape (batch or 1, num_heads or 1, sequence, total_sequence_length) = "
            f"{target}, got {tuple(bias.shape)}."
        )
    # Keys past the total (or none) are never attended: any column will do for them.
    shape = (batch, bias.shape[1], length)
    columns = jnp.broadcast_to(jnp.clip(key_at, 0, total - 1), shape + (key_at.shape[3],))
    return jnp.take_along_axis(jnp.broadcast_to(bias, shape + (total,)), columns, axis=3)


def _check_windowed(past_key, local_window_size, causal, qk_output):
    if past_key is None or local_window_size is None or local_window_size <= 0 or not causal or qk_output:
        raise OnnxValidationError(
            f"needs `past_key` (the window's buffer), `local_window_size` > 0 and causal attention with "
            f"`sliding_window_cache`=1, and no `qk_output`; got local_window_size={local_window_size}, causal={causal}, "
            f"qk_output={qk_output}."
        )
    if past_key.shape[2] < local_window_size:
        raise OnnxValidationError(
            f"needs a window cache of at least `local_window_size`={local_window_size} rows, got {past_key.shape[2]}."
        )


def _resident(held, capacity, window):
    """How many positions a window cache of ``capacity`` keeps after ``held`` tokens:
    ``held`` while it fits, then ``held - G * ceil((held - capacity) / G)`` with ``G =
    capacity - window + 1`` (onnxruntime evicts ``G`` positions at once)."""
    evict = capacity - window + 1
    over = jnp.maximum(held - capacity, 0)
    return jnp.where(held <= capacity, held, held - evict * ((over + evict - 1) // evict))


def _windowed(past_key, past_value, k, v, totals, starts, valid, window):
    """onnxruntime's window cache (``sliding_window_cache``): rows ``[0, L)`` of a buffer of
    ``C`` rows hold the ``L`` latest positions in order. Returns the keys and values to
    attend (the past rows, then the new ones), each key's absolute position (-1 for none),
    and the present caches."""
    batch, heads, length, size = k.shape
    capacity = past_key.shape[2]
    new_count = length if valid is None else valid
    before = _resident(starts, capacity, window)  # resident before the step: positions starts - before ..
    after = _resident(starts + new_count, capacity, window)
    rows = jnp.arange(capacity, dtype=jnp.int32)[None, :]
    news = jnp.arange(length, dtype=jnp.int32)[None, :]
    past_at = jnp.where(rows < before[:, None], starts[:, None] - before[:, None] + rows, -1)
    new_count = jnp.broadcast_to(jnp.asarray(new_count, jnp.int32), (batch,))
    new_at = jnp.where(news < new_count[:, None], starts[:, None] + news, -1)
    key_at = jnp.concatenate([past_at, new_at], axis=1)  # (batch, capacity + S)
    keys_k = jnp.concatenate([past_key.astype(k.dtype), k], axis=2)
    keys_v = jnp.concatenate([past_value.astype(v.dtype), v], axis=2)
    # Present row r holds position T - L + r: a past row or a new one.
    ends = starts + new_count
    wanted = ends[:, None] - after[:, None] + rows  # (batch, capacity)
    source = jnp.where(
        wanted < starts[:, None], wanted - (starts[:, None] - before[:, None]), capacity + wanted - starts[:, None]
    )
    source = jnp.clip(source, 0, capacity + length - 1)
    index = jnp.broadcast_to(source.reshape(batch, 1, capacity, 1), (batch, heads, capacity, 1))
    keep = (rows < after[:, None]).reshape(batch, 1, capacity, 1)
    present_key = jnp.where(keep, jnp.take_along_axis(keys_k, index, axis=2), jnp.zeros((), k.dtype))
    present_value = jnp.where(keep, jnp.take_along_axis(keys_v, index, axis=2), jnp.zeros((), v.dtype))
    return keys_k, keys_v, key_at, present_key, present_value


__all__ = ["group_query_attention"]
