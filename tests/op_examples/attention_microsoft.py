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


def _rotary_reference(x, position_ids, cos_cache, sin_cache, *, num_heads=None, rotary_embedding_dim=None,
                      interleaved=0, **_):
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


def _gqa_reference(query, key, value, past_key, past_value, seqlens_k, total_sequence_length, cos_cache=None,
                   sin_cache=None, position_ids=None, attention_bias=None, head_sink=None, *, num_heads, kv_num_heads,
                   scale=None, softcap=None, local_window_size=-1, do_rotary=0, rotary_interleaved=0, smooth_softmax=-1,
                   causal=1, **_):
    batch, length, _ = query.shape
    if key is None:
        size = query.shape[2] // (num_heads + 2 * kv_num_heads)
        key = query[:, :, num_heads * size:(num_heads + kv_num_heads) * size]
        value = query[:, :, (num_heads + kv_num_heads) * size:]
        query = query[:, :, :num_heads * size]
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
        present_key[b, :, start:start + length] = k[b].transpose(1, 0, 2)
        present_value[b, :, start:start + length] = v[b].transpose(1, 0, 2)
        for h in range(num_heads):
            kv = h // (num_heads // kv_num_heads)
            for s in range(length):
                last = min(start + s, held - 1) if causal else held - 1
                first = max(0, last - local_window_size + 1) if causal and local_window_size > 0 else 0
                scores = present_key[b, kv, first:last + 1] @ q[b, s, h] * scale
                if softcap:
                    scores = softcap * np.tanh(scores / softcap)
                if attention_bias is not None:
                    scores = scores + attention_bias[b % attention_bias.shape[0], h % attention_bias.shape[1], s, first:last + 1]
                sink = head_sink[h] if head_sink is not None else (0.0 if smooth_softmax == 1 else None)
                out[b, s, h] = _softmax(scores, sink) @ present_value[b, kv, first:last + 1]
    dtype = query.dtype
    return [out.reshape(batch, length, -1).astype(dtype), present_key.astype(dtype), present_value.astype(dtype)]


_COS, _SIN = _caches(12, 8)

EXAMPLES = {
    "RotaryEmbedding": [
        Example([_normal(2, 3, 32), np.array([[0, 1, 2], [4, 7, 9]], np.int64), _COS, _SIN], reference=_rotary_reference),
        Example([_normal(1, 2, 4, 16), np.array([3], np.int64), _COS, _SIN], {"interleaved": 1},
                reference=_rotary_reference),
        Example([_normal(2, 3, 32), np.array([[0, 1, 2], [4, 7, 9]], np.int64), _COS[:, :4], _SIN[:, :4]],
                {"num_heads": 2, "rotary_embedding_dim": 8}, reference=_rotary_reference),
    ],
    "GroupQueryAttention": [
        # A right-padded prompt (entry 1 holds 3 of 4 tokens), 4 query heads over 2.
        Example([_normal(2, 4, 32), _normal(2, 4, 16), _normal(2, 4, 16), None, None, np.array([3, 2], np.int32),
                 np.array(4, np.int32)], {"num_heads": 4, "kv_num_heads": 2}, outputs=3, reference=_gqa_reference),
        # One more token into a shared buffer of 6, with rotary embedding, a window and a soft cap.
        Example([_normal(2, 1, 32), _normal(2, 1, 16), _normal(2, 1, 16), _normal(2, 2, 6, 8), _normal(2, 2, 6, 8),
                 np.array([4, 2], np.int32), np.array(5, np.int32), _COS[:, :4], _SIN[:, :4]],
                {"num_heads": 4, "kv_num_heads": 2, "do_rotary": 1, "rotary_interleaved": 1, "local_window_size": 2,
                 "softcap": 2.0}, outputs=3, reference=_gqa_reference),
        # Packed QKV, attention bias and head sinks, bidirectional.
        Example([_normal(1, 3, 32), None, None, None, None, np.array([2], np.int32), np.array(3, np.int32), None, None,
                 None, _normal(1, 2, 3, 3), _normal(2)], {"num_heads": 2, "kv_num_heads": 1, "causal": 0, "scale": 0.5},
                outputs=3, reference=_gqa_reference),
        # A chunk after the prompt, smooth softmax.
        Example([_normal(1, 2, 16), _normal(1, 2, 16), _normal(1, 2, 16), _normal(1, 2, 5, 8), _normal(1, 2, 5, 8),
                 np.array([4], np.int32), np.array(5, np.int32)], {"num_heads": 2, "kv_num_heads": 2, "smooth_softmax": 1},
                outputs=3, reference=_gqa_reference),
    ],
}
