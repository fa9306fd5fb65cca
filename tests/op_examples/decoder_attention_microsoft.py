"""Examples of com.microsoft DecoderMaskedMultiHeadAttention, the decode-step attention of
onnxruntime's generation files, with a numpy oracle written from onnxruntime's CPU kernel
(key by key, with the beam each past key came from); tests/test_generation_ops.py checks the
op against onnxruntime's kernel itself."""

import numpy as np

from tests.op_examples._example import Example

DOMAIN = "com.microsoft"

_rng = np.random.default_rng(61)
_BATCH, _HEADS, _HEAD, _MAX = 4, 2, 4, 5
_HIDDEN = _HEADS * _HEAD


def _normal(*shape):
    return _rng.normal(size=shape).astype(np.float32)


def _reference(
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
    num_heads,
    scale=0.0,
    mask_filter_value=-10000.0,
    **_,
):
    batch, _, width = query.shape
    if past_key is None:  # cross attention over BNSH caches
        head = width // num_heads
        q = (query if bias is None else query + bias[:width]).reshape(batch, num_heads, head)
        scores = np.einsum("bnh,bnth->bnt", q, key) * (scale or 1 / np.sqrt(head))
        if mask_index is not None:
            scores = scores + np.where(mask_index == 0, mask_filter_value, 0)[:, None, :]
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return [np.einsum("bnt,bnth->bnh", p, value).reshape(batch, 1, width).astype(np.float32)]
    if key is None:
        width //= 3
        query, key, value = query[..., :width], query[..., width : 2 * width], query[..., 2 * width :]
    if bias is not None:
        query, key, value = query + bias[:width], key + bias[width : 2 * width], value + bias[2 * width :]
    head = width // num_heads
    q, k, v = (x.reshape(batch, num_heads, head) for x in (query, key, value))
    position = int(np.asarray(past_sequence_length).reshape(()))
    present_key, present_value = past_key.copy(), past_value.copy()
    present_key[:, :, position], present_value[:, :, position] = k, v
    beams = 1 if cache_indirection is None else cache_indirection.shape[1]
    out = np.zeros((batch, num_heads, head), np.float64)
    for b in range(batch):
        for h in range(num_heads):
            rows = [
                b
                if cache_indirection is None or j == position
                else (b // beams) * beams + cache_indirection[b // beams, b % beams, j]
                for j in range(position + 1)
            ]
            keys = np.array([present_key[r, h, j] for j, r in enumerate(rows)])
            values = np.array([present_value[r, h, j] for j, r in enumerate(rows)])
            scores = keys @ q[b, h] * (scale or 1 / np.sqrt(head))
            if attention_bias is not None:
                scores = scores + attention_bias[b % attention_bias.shape[0], h, 0, : position + 1]
            if mask_index is not None:
                scores = scores + np.where(mask_index[b, : position + 1] == 0, mask_filter_value, 0)
            p = np.exp(scores - scores.max())
            out[b, h] = p / p.sum() @ values
    return [out.reshape(batch, 1, width).astype(np.float32), present_key, present_value]


_Q, _K, _V = _normal(_BATCH, 1, _HIDDEN), _normal(_BATCH, 1, _HIDDEN), _normal(_BATCH, 1, _HIDDEN)
_PAST_K, _PAST_V = _normal(_BATCH, _HEADS, _MAX, _HEAD), _normal(_BATCH, _HEADS, _MAX, _HEAD)
_MASK = np.ones((_BATCH, 4), np.int32)
_MASK[1, 0] = _MASK[3, 2] = 0
_INDIRECTION = np.array([[[0, 1, 1, 0, 0], [1, 1, 0, 0, 0]], [[1, 0, 0, 0, 0], [0, 0, 1, 0, 0]]], np.int32)
_SHARED = {"num_heads": _HEADS, "past_present_share_buffer": 1}

EXAMPLES = {
    "DecoderMaskedMultiHeadAttention": [
        # The fourth token into a buffer of 5, with a padding mask and an attention bias.
        Example(
            [_Q, _K, _V, _MASK, _normal(_BATCH, _HEADS, 1, 4), _PAST_K, _PAST_V, np.array([3], np.int32)],
            {**_SHARED, "scale": 0.4},
            outputs=3,
            reference=_reference,
            rtol=1e-5,
            atol=1e-5,
        ),
        # Two entries of two beams: past keys read through the cache indirection.
        Example(
            [_Q, _K, _V, _MASK, None, _PAST_K, _PAST_V, np.array([3], np.int32), np.array([2], np.int32), _INDIRECTION],
            dict(_SHARED),
            outputs=3,
            reference=_reference,
            rtol=1e-5,
            atol=1e-5,
        ),
        # Q, K and V packed, with the projection's bias.
        Example(
            [
                np.concatenate([_Q, _K, _V], -1),
                None,
                None,
                None,
                None,
                _PAST_K,
                _PAST_V,
                np.array([2], np.int32),
                None,
                None,
                _normal(3 * _HIDDEN),
            ],
            dict(_SHARED),
            outputs=3,
            reference=_reference,
            rtol=1e-5,
            atol=1e-5,
        ),
        # Cross attention over BNSH caches of the encoder's length.
        Example(
            [_Q, _normal(_BATCH, _HEADS, 6, _HEAD), _normal(_BATCH, _HEADS, 6, _HEAD), np.ones((_BATCH, 6), np.int32)],
            {"num_heads": _HEADS},
            outputs=1,
            reference=_reference,
            rtol=1e-5,
            atol=1e-5,
        ),
    ],
}
