"""Examples of onnxruntime's com.microsoft attention ops: RotaryEmbedding,
GroupQueryAttention, MultiHeadAttention, Attention and QAttention.

onnx.reference has none of them, so each example carries a numpy oracle written from
onnxruntime's CPU kernels, loop by loop (batch entry, head, query row) in float64;
tests/test_microsoft_attention.py checks the ops against onnxruntime itself.
"""

import numpy as np

from tests.op_examples._example import Example

DOMAIN = "com.microsoft"

_rng = np.random.default_rng(32)


def _normal(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _caches(rows, half):
    angles = np.arange(rows)[:, None] * (1.0 / 10000 ** (np.arange(half) / half))[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def _rotate_head(x, cos, sin, interleaved):
    """One head's features ``x`` rotated with one position's ``cos``, ``sin`` (float64)."""
    half = cos.shape[0]
    out = x.astype(np.float64).copy()
    for i in range(half):
        a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + half)
        out[a] = cos[i] * x[a] - sin[i] * x[b]
        out[b] = sin[i] * x[a] + cos[i] * x[b]
    return out


def _rotary_reference(
    x, position_ids, cos_cache, sin_cache, *, num_heads=None, rotary_embedding_dim=None, interleaved=0, **_
):
    four = x.ndim == 4
    heads_first = x if four else None
    if not four:
        head_size = x.shape[2] // num_heads if num_heads else 2 * cos_cache.shape[1]
        heads_first = x.reshape(x.shape[0], x.shape[1], -1, head_size).transpose(0, 2, 1, 3)
    batch, heads, length, _ = heads_first.shape
    out = heads_first.astype(np.float64).copy()
    for b in range(batch):
        for s in range(length):
            position = position_ids.reshape(-1)[0] + s if position_ids.size == 1 else position_ids[b, s]
            for h in range(heads):
                out[b, h, s] = _rotate_head(heads_first[b, h, s], cos_cache[position], sin_cache[position], interleaved)
    out = out.astype(x.dtype)
    return [out if four else out.transpose(0, 2, 1, 3).reshape(x.shape)]


def _softmax(scores, sink=None):
    top = scores.max() if sink is None else max(scores.max(), sink)
    exp = np.exp(scores - top)
    return exp / (exp.sum() + (0.0 if sink is None else np.exp(sink - top)))


def _gqa_reference(
    query,
    key,
    value,
    past_key,
    past_value,
    seqlens_k,
    total_sequence_length,
    cos_cache=None,
    sin_cache=None,
    position_ids=None,
    attention_bias=None,
    head_sink=None,
    *,
    num_heads,
    kv_num_heads,
    scale=None,
    softcap=None,
    local_window_size=-1,
    do_rotary=0,
    rotary_interleaved=0,
    smooth_softmax=-1,
    causal=1,
    **_,
):
    batch, length, _ = query.shape
    if key is None:
        size = query.shape[2] // (num_heads + 2 * kv_num_heads)
        key = query[:, :, num_heads * size : (num_heads + kv_num_heads) * size]
        value = query[:, :, (num_heads + kv_num_heads) * size :]
        query = query[:, :, : num_heads * size]
    size = query.shape[2] // num_heads
    q = query.reshape(batch, length, num_heads, size).astype(np.float64)
    k = key.reshape(batch, length, kv_num_heads, size).astype(np.float64)
    v = value.reshape(batch, length, kv_num_heads, size).astype(np.float64)
    total = int(total_sequence_length)
    past = 0 if past_key is None else past_key.shape[2]
    present = max(total, past)
    first_prompt = length == total
    present_key = np.zeros((batch, kv_num_heads, present, size))
    present_value = np.zeros((batch, kv_num_heads, present, size))
    out = np.zeros((batch, length, num_heads, size))
    scale = scale or 1 / np.sqrt(size)
    for b in range(batch):
        held = int(seqlens_k[b]) + 1
        start = 0 if first_prompt else held - length
        for s in range(length):
            if do_rotary:
                position = start + s if position_ids is None else position_ids[b, s]
                for h in range(num_heads):
                    q[b, s, h] = _rotate_head(q[b, s, h], cos_cache[position], sin_cache[position], rotary_interleaved)
                for h in range(kv_num_heads):
                    k[b, s, h] = _rotate_head(k[b, s, h], cos_cache[position], sin_cache[position], rotary_interleaved)
        if past_key is not None:
            present_key[b, :, :start] = past_key[b, :, :start]
            present_value[b, :, :start] = past_value[b, :, :start]
        present_key[b, :, start : start + length] = k[b].transpose(1, 0, 2)
        present_value[b, :, start : start + length] = v[b].transpose(1, 0, 2)
        for h in range(num_heads):
            kv = h // (num_heads // kv_num_heads)
            for s in range(length):
                last = min(start + s, held - 1) if causal else held - 1
                first = max(0, last - local_window_size + 1) if causal and local_window_size > 0 else 0
                scores = present_key[b, kv, first : last + 1] @ q[b, s, h] * scale
                if softcap:
                    scores = softcap * np.tanh(scores / softcap)
                if attention_bias is not None:
                    scores = (
                        scores
                        + attention_bias[b % attention_bias.shape[0], h % attention_bias.shape[1], s, first : last + 1]
                    )
                sink = head_sink[h] if head_sink is not None else (0.0 if smooth_softmax == 1 else None)
                out[b, s, h] = _softmax(scores, sink) @ present_value[b, kv, first : last + 1]
    dtype = query.dtype
    return [out.reshape(batch, length, -1).astype(dtype), present_key.astype(dtype), present_value.astype(dtype)]


_COS, _SIN = _caches(12, 8)

EXAMPLES = {
    "RotaryEmbedding": [
        Example(
            [_normal(2, 3, 32), np.array([[0, 1, 2], [4, 7, 9]], np.int64), _COS, _SIN], reference=_rotary_reference
        ),
        Example(
            [_normal(1, 2, 4, 16), np.array([3], np.int64), _COS, _SIN], {"interleaved": 1}, reference=_rotary_reference
        ),
        Example(
            [_normal(2, 3, 32), np.array([[0, 1, 2], [4, 7, 9]], np.int64), _COS[:, :4], _SIN[:, :4]],
            {"num_heads": 2, "rotary_embedding_dim": 8},
            reference=_rotary_reference,
        ),
    ],
    "GroupQueryAttention": [
        # A right-padded prompt (entry 1 holds 3 of 4 tokens), 4 query heads over 2.
        Example(
            [
                _normal(2, 4, 32),
                _normal(2, 4, 16),
                _normal(2, 4, 16),
                None,
                None,
                np.array([3, 2], np.int32),
                np.array(4, np.int32),
            ],
            {"num_heads": 4, "kv_num_heads": 2},
            outputs=3,
            reference=_gqa_reference,
        ),
        # One more token into a shared buffer of 6, with rotary embedding, a window and a soft cap.
        Example(
            [
                _normal(2, 1, 32),
                _normal(2, 1, 16),
                _normal(2, 1, 16),
                _normal(2, 2, 6, 8),
                _normal(2, 2, 6, 8),
                np.array([4, 2], np.int32),
                np.array(5, np.int32),
                _COS[:, :4],
                _SIN[:, :4],
            ],
            {
                "num_heads": 4,
                "kv_num_heads": 2,
                "do_rotary": 1,
                "rotary_interleaved": 1,
                "local_window_size": 2,
                "softcap": 2.0,
            },
            outputs=3,
            reference=_gqa_reference,
        ),
        # Packed QKV, attention bias and head sinks, bidirectional.
        Example(
            [
                _normal(1, 3, 32),
                None,
                None,
                None,
                None,
                np.array([2], np.int32),
                np.array(3, np.int32),
                None,
                None,
                None,
                _normal(1, 2, 3, 3),
                _normal(2),
            ],
            {"num_heads": 2, "kv_num_heads": 1, "causal": 0, "scale": 0.5},
            outputs=3,
            reference=_gqa_reference,
        ),
        # A chunk after the prompt, smooth softmax.
        Example(
            [
                _normal(1, 2, 16),
                _normal(1, 2, 16),
                _normal(1, 2, 16),
                _normal(1, 2, 5, 8),
                _normal(1, 2, 5, 8),
                np.array([4], np.int32),
                np.array(5, np.int32),
            ],
            {"num_heads": 2, "kv_num_heads": 2, "smooth_softmax": 1},
            outputs=3,
            reference=_gqa_reference,
        ),
        # Half precision (the explicit formulation on a CPU; no gradient check in half precision).
        Example(
            [
                _normal(2, 3, 16, dtype=np.float16),
                _normal(2, 3, 8, dtype=np.float16),
                _normal(2, 3, 8, dtype=np.float16),
                None,
                None,
                np.array([2, 1], np.int32),
                np.array(3, np.int32),
            ],
            {"num_heads": 2, "kv_num_heads": 1},
            outputs=3,
            grad=False,
            rtol=2e-3,
            atol=2e-3,
            reference=_gqa_reference,
        ),
    ],
}


def _padding_allowed(mask, batch, length, total, past):
    """(batch, length, total) booleans from a mask of any onnxruntime kind."""
    allowed = np.ones((batch, length, total), bool)
    if mask is None:
        return allowed
    for b in range(batch):
        for s in range(length):
            for j in range(total):
                if mask.ndim == 1:
                    ok = j < mask[b] and (mask.shape[0] != 2 * batch or j >= mask[batch + b])
                elif mask.ndim == 2:
                    ok = j < mask.shape[1] and mask[b, j] != 0
                elif mask.ndim == 3:
                    ok = mask[b, s, j] != 0
                else:
                    ok = mask[b, 0, past + s, j] != 0
                allowed[b, s, j] = ok
    return allowed


def _heads(x, heads):
    return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(0, 2, 1, 3).astype(np.float64)


def _bert_attention(q, k, v, *, allowed, unidirectional, past, filter_value, bias, scale):
    """q, k, v (batch, heads, length, size) in float64; the output (batch, length, heads * size)."""
    batch, heads, length, size = q.shape
    out = np.zeros((batch, length, heads, v.shape[3]))
    scale = scale or 1 / np.sqrt(size)
    for b in range(batch):
        for h in range(heads):
            for s in range(length):
                keys = past + s + 1 if unidirectional else k.shape[2]
                scores = k[b, h, :keys] @ q[b, h, s] * scale
                scores = scores + np.where(allowed[b, s, :keys], 0.0, filter_value)
                if bias is not None:
                    scores = scores + bias[b % bias.shape[0], h % bias.shape[1], s, :keys]
                out[b, s, h] = _softmax(scores) @ v[b, h, :keys]
    return out.reshape(batch, length, -1)


def _attention_reference(
    x,
    weights,
    bias=None,
    mask_index=None,
    past=None,
    attention_bias=None,
    *,
    num_heads,
    qkv_hidden_sizes=None,
    unidirectional=0,
    scale=None,
    mask_filter_value=None,
    **_,
):
    projected = x.astype(np.float64) @ weights + (0 if bias is None else bias)
    sizes = qkv_hidden_sizes or [weights.shape[1] // 3] * 3
    q, k, v = (_heads(p, num_heads) for p in np.split(projected, [sizes[0], sizes[0] + sizes[1]], axis=2))
    past_length = 0 if past is None else past.shape[3]
    if past is not None:
        k, v = np.concatenate([past[0], k], axis=2), np.concatenate([past[1], v], axis=2)
    allowed = _padding_allowed(mask_index, x.shape[0], x.shape[1], k.shape[2], past_length)
    out = _bert_attention(
        q,
        k,
        v,
        allowed=allowed,
        unidirectional=unidirectional,
        past=past_length,
        filter_value=-10000.0 if mask_filter_value is None else mask_filter_value,
        bias=attention_bias,
        scale=scale,
    )
    return [out.astype(x.dtype), None if past is None else np.stack([k, v]).astype(x.dtype)]


def _qattention_reference(
    x, weight, bias, x_scale, w_scale, mask_index=None, x_zero=None, w_zero=None, past=None, **attributes
):
    real_x = (x.astype(np.float64) - (0 if x_zero is None else x_zero)) * x_scale
    real_w = (weight.astype(np.float64) - (0 if w_zero is None else w_zero)) * w_scale
    identity = np.eye(real_x.shape[2])
    out = _attention_reference(real_x @ identity, real_w, bias, mask_index, past, **attributes)
    return [o if o is None else o.astype(np.float32) for o in out]


def _mha_reference(
    query,
    key,
    value,
    bias=None,
    key_padding_mask=None,
    attention_bias=None,
    past_key=None,
    past_value=None,
    *,
    num_heads,
    unidirectional=0,
    scale=None,
    mask_filter_value=None,
    **_,
):
    hidden = query.shape[2]
    k_hidden = key.shape[2]
    if bias is not None:
        query, key, value = (
            query + bias[:hidden],
            key + bias[hidden : hidden + k_hidden],
            value + bias[hidden + k_hidden :],
        )
    q, k, v = _heads(query, num_heads), _heads(key, num_heads), _heads(value, num_heads)
    past = 0 if past_key is None else past_key.shape[2]
    if past_key is not None:
        k, v = np.concatenate([past_key, k], axis=2), np.concatenate([past_value, v], axis=2)
    allowed = _padding_allowed(key_padding_mask, query.shape[0], query.shape[1], k.shape[2], past)
    out = _bert_attention(
        q,
        k,
        v,
        allowed=allowed,
        unidirectional=unidirectional,
        past=past,
        filter_value=-10000.0 if mask_filter_value is None else mask_filter_value,
        bias=attention_bias,
        scale=scale,
    )
    return [out.astype(query.dtype), k.astype(query.dtype), v.astype(query.dtype)]


def _int32(*values):
    return np.array(values, np.int32)


EXAMPLES.update(
    {
        "Attention": [
            Example(
                [_normal(2, 3, 8), _normal(8, 24), _normal(24), _int32(3, 2)],
                {"num_heads": 2},
                outputs=1,
                reference=_attention_reference,
            ),
            # Left and right padding, a past, causal.
            Example(
                [_normal(2, 2, 8), _normal(8, 24), _normal(24), _int32(5, 4, 1, 0), _normal(2, 2, 2, 3, 4)],
                {"num_heads": 2, "unidirectional": 1},
                outputs=2,
                reference=_attention_reference,
            ),
            # A 3-D mask, other Q/K/V sizes, attention bias, scale and filter value.
            Example(
                [
                    _normal(1, 3, 6),
                    _normal(6, 20),
                    None,
                    (_rng.random((1, 3, 3)) < 0.6).astype(np.int32),
                    None,
                    _normal(1, 2, 3, 3),
                ],
                {"num_heads": 2, "qkv_hidden_sizes": [6, 6, 8], "scale": 0.4, "mask_filter_value": -30.0},
                outputs=1,
                reference=_attention_reference,
            ),
            # Megatron GPT-2's 4-D mask (rows from the past on).
            Example(
                [
                    _normal(1, 2, 8),
                    _normal(8, 24),
                    _normal(24),
                    np.tril(np.ones((1, 1, 5, 5), np.int32)),
                    _normal(2, 1, 2, 2, 4),
                ],
                {"num_heads": 2},
                outputs=2,
                reference=_attention_reference,
            ),
        ],
        "QAttention": [
            Example(
                [
                    _rng.integers(0, 256, (2, 3, 8)).astype(np.uint8),
                    _rng.integers(-64, 64, (8, 24)).astype(np.int8),
                    _normal(24),
                    np.float32(0.02),
                    np.float32(0.01),
                    _int32(3, 2),
                    np.uint8(128),
                    np.int8(3),
                ],
                {"num_heads": 2, "unidirectional": 1},
                outputs=1,
                reference=_qattention_reference,
            ),
            Example(
                [
                    _rng.integers(0, 256, (1, 2, 8)).astype(np.uint8),
                    _rng.integers(0, 256, (8, 24)).astype(np.uint8),
                    _normal(24),
                    np.float32(0.01),
                    (_rng.random(24) * 0.02).astype(np.float32),
                    None,
                    np.uint8(120),
                    _rng.integers(0, 256, 24).astype(np.uint8),
                    _normal(2, 1, 2, 3, 4),
                ],
                {"num_heads": 2},
                outputs=2,
                reference=_qattention_reference,
            ),
        ],
        "MultiHeadAttention": [
            # Padding: its scores (the fourth output) hold -10000s, where float32 finite
            # differences see nothing, so the gradients are checked on the next example.
            Example(
                [_normal(2, 3, 8), _normal(2, 4, 8), _normal(2, 4, 12), _normal(28), _int32(4, 2)],
                {"num_heads": 2},
                outputs=1,
                grad=False,
                reference=_mha_reference,
            ),
            Example(
                [
                    _normal(2, 2, 8),
                    _normal(2, 2, 8),
                    _normal(2, 2, 8),
                    None,
                    (_rng.random((2, 5)) < 0.7).astype(np.int32),
                    _normal(1, 2, 2, 5),
                    _normal(2, 2, 3, 4),
                    _normal(2, 2, 3, 4),
                ],
                {"num_heads": 2, "unidirectional": 1, "scale": 0.3},
                outputs=3,
                grad=False,
                reference=_mha_reference,
            ),
            Example(
                [
                    _normal(2, 2, 8),
                    _normal(2, 2, 8),
                    _normal(2, 2, 8),
                    _normal(24),
                    None,
                    _normal(1, 2, 2, 5),
                    _normal(2, 2, 3, 4),
                    _normal(2, 2, 3, 4),
                ],
                {"num_heads": 2},
                outputs=3,
                reference=_mha_reference,
            ),
        ],
    }
)
