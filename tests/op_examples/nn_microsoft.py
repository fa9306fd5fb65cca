"""Examples of onnxruntime's com.microsoft normalizations and fusions: SkipLayerNormalization,
SkipSimplifiedLayerNormalization, EmbedLayerNormalization, QEmbedLayerNormalization,
GroupNorm, SkipGroupNorm, the Gelus, BiasAdd, FusedMatMul, FusedGemm, FusedConv and NhwcConv.

onnx.reference has none of them, so each example carries a numpy oracle written from the
text of onnxruntime's ``docs/ContribOperators.md`` and its CPU kernels, in float64.
tests/test_microsoft_fused_ops.py checks the ops against onnxruntime itself (the ops that
have CPU kernels there).
"""

import numpy as np
from scipy.special import erf

from tests.op_examples._example import Example

DOMAIN = "com.microsoft"

_rng = np.random.default_rng(32)


def _normal(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _ids(high, *shape):
    return _rng.integers(0, high, shape).astype(np.int32)


def _layer_norm(s, axes, epsilon, simplified=False):
    s = np.asarray(s, np.float64)
    if simplified:
        inv = 1 / np.sqrt((s * s).mean(axis=axes, keepdims=True) + epsilon)
        return s * inv, np.zeros_like(inv), inv
    mean = s.mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(((s - mean) ** 2).mean(axis=axes, keepdims=True) + epsilon)
    return (s - mean) * inv, mean, inv


def _skip_layer_norm(x, skip, gamma, beta=None, bias=None, epsilon=1e-12, simplified=False):
    s = x.astype(np.float64) + skip + (0 if bias is None else bias)
    y, mean, inv = _layer_norm(s, -1, epsilon, simplified)
    y = y * gamma + (0 if beta is None else beta)
    f32 = np.float32
    return [y.astype(x.dtype), mean.astype(f32), inv.astype(f32), s.astype(x.dtype)]


def _skip_simplified(x, skip, gamma, bias=None, epsilon=1e-12):
    return _skip_layer_norm(x, skip, gamma, None, bias, epsilon, simplified=True)


def _embed(input_ids, segment_ids, word, position, segment, gamma, beta, mask=None, position_ids=None,
           epsilon=1e-12, mask_index_type=None):
    batch, sequence = input_ids.shape
    positions = np.arange(sequence)[None] if position_ids is None else position_ids
    s = word[input_ids].astype(np.float64) + position[np.broadcast_to(positions, (batch, sequence))]
    if segment_ids is not None:
        s = s + segment[segment_ids]
    y, _, _ = _layer_norm(s, -1, epsilon)
    mask_index = np.zeros(batch, np.int32) if mask is None else (mask == 1).sum(axis=1).astype(np.int32)
    return [(y * gamma + beta).astype(word.dtype), mask_index, s.astype(word.dtype)]


def _real(q, scale, zero):
    return (q.astype(np.float64) - zero.astype(np.float64)) * scale


def _qembed(ids, segment_ids, word, position, segment, gamma, beta, mask, s_word, s_position, s_segment, s_gamma,
            s_beta, z_word, z_position, z_segment, z_gamma, z_beta, epsilon=1e-12):
    segment_table = None if segment is None else _real(segment, s_segment, z_segment)
    out, mask_index, _ = _embed(ids, segment_ids, _real(word, s_word, z_word), _real(position, s_position, z_position),
                                segment_table, _real(gamma, s_gamma, z_gamma), _real(beta, s_beta, z_beta), mask,
                                epsilon=epsilon)
    return [out.astype(np.float32), mask_index]


def _group_norm(x, gamma, beta, skip=None, bias=None, epsilon=1e-5, groups=1, activation=0, channels_last=1):
    s = x.astype(np.float64)
    if skip is not None:
        s = s + (skip[:, None, None, :] if channels_last and skip.ndim == 2 else
                 skip[:, :, None, None] if skip.ndim == 2 else skip) + (0 if bias is None else bias.reshape(
                     (-1,) if channels_last else (-1, 1, 1)))
    nchw = s if not channels_last else s.transpose(0, 3, 1, 2)
    n, c = nchw.shape[:2]
    grouped = nchw.reshape(n, groups, -1)
    y, _, _ = _layer_norm(grouped, -1, epsilon)
    y = y.reshape(nchw.shape) * gamma.reshape(-1, 1, 1) + beta.reshape(-1, 1, 1)
    if activation:
        y = y / (1 + np.exp(-y))
    if channels_last:
        y = y.transpose(0, 2, 3, 1)
    return [y.astype(x.dtype), s.astype(x.dtype)]


def _one(fn):
    return lambda *args, **kwargs: [fn(*args, **kwargs)[0]]


_X = _normal(2, 3, 8)
_HALF = _normal(2, 3, 8, dtype=np.float16)
_Q = np.random.default_rng(5)


def _codes(dtype, *shape):
    info = np.iinfo(dtype)
    return _Q.integers(info.min, info.max + 1, shape).astype(dtype)


def _qembed_inputs(dtype, segments=True, mask=True):
    tables = [_codes(dtype, 11, 8), _codes(dtype, 6, 8), _codes(dtype, 2, 8), _codes(dtype, 8), _codes(dtype, 8)]
    scales = [np.array(s, np.float32) for s in (0.02, 0.05, 0.1, 0.01, 0.03)]
    zeros = [np.array(z, dtype) for z in ((3, -5, 0, 7, -2) if dtype == np.int8 else (128, 120, 131, 126, 129))]
    inputs = [_ids(11, 2, 5), _ids(2, 2, 5), *tables[:3], tables[3], tables[4],
              np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], np.int32), *scales, *zeros]
    if not segments:
        for i in (1, 4, 10, 15):
            inputs[i] = None
    if not mask:
        inputs[7] = None
    return inputs


#: SkipLayerNormalization's `mean` and `inv_std_var` are float32 whatever the data (as
#: onnxruntime's), too coarse for the float64 finite differences of tests/test_op_table.py;
#: tests/test_microsoft_fused_ops.py checks the gradients of `output` and the sum instead.
_STATISTICS_IN_FLOAT32 = {"grad": False}

EXAMPLES = {
    "SkipLayerNormalization": [
        Example([_X, _normal(2, 3, 8), _normal(8), _normal(8), _normal(8)], reference=_skip_layer_norm,
                **_STATISTICS_IN_FLOAT32),
        Example([_X, _normal(1, 3, 8), _normal(8)], {"epsilon": 1e-3}, reference=_skip_layer_norm,
                **_STATISTICS_IN_FLOAT32),
        Example([_normal(5, 8), _normal(5, 8), _normal(8), None, _normal(8)], reference=_skip_layer_norm,
                **_STATISTICS_IN_FLOAT32),
        Example([_X, _normal(3, 8), _normal(8), _normal(8)], reference=_skip_layer_norm, **_STATISTICS_IN_FLOAT32),
        Example([_HALF, _normal(3, 8, dtype=np.float16), _normal(8, dtype=np.float16)], grad=False,
                rtol=2e-3, atol=2e-3, reference=_skip_layer_norm),
    ],
    "SkipSimplifiedLayerNormalization": [
        Example([_X, _normal(2, 3, 8), _normal(8), _normal(8)], reference=_skip_simplified, **_STATISTICS_IN_FLOAT32),
        Example([_normal(4, 8), _normal(4, 8), _normal(8)], {"epsilon": 1e-5}, reference=_skip_simplified,
                **_STATISTICS_IN_FLOAT32),
        Example([_X, _normal(1, 3, 8), _normal(8)], reference=_skip_simplified, **_STATISTICS_IN_FLOAT32),
    ],
    "EmbedLayerNormalization": [
        Example([_ids(11, 2, 5), _ids(2, 2, 5), _normal(11, 8), _normal(6, 8), _normal(2, 8), _normal(8), _normal(8),
                 np.array([[1, 1, 0, 1, 0], [1, 1, 1, 1, 1]], np.int32)], reference=_embed),
        Example([_ids(11, 2, 5), None, _normal(11, 8), _normal(6, 8), None, _normal(8), _normal(8)],
                {"epsilon": 1e-5, "mask_index_type": 0}, reference=_embed),
        Example([_ids(11, 2, 5), _ids(2, 2, 5), _normal(11, 8), _normal(9, 8), _normal(2, 8), _normal(8), _normal(8),
                 None, _ids(9, 2, 5)], reference=_embed),
        Example([_ids(11, 2, 5), None, _normal(11, 8), _normal(9, 8), None, _normal(8), _normal(8),
                 None, _ids(9, 1, 5)], {"mask_index_type": 1}, reference=_embed),
    ],
    "QEmbedLayerNormalization": [
        Example(_qembed_inputs(np.uint8), reference=_qembed, rtol=1e-4, atol=1e-4),
        Example(_qembed_inputs(np.int8, segments=False), {"epsilon": 1e-5}, reference=_qembed, rtol=1e-4, atol=1e-4),
        Example(_qembed_inputs(np.uint8, mask=False), reference=_qembed, rtol=1e-4, atol=1e-4),
    ],
    "GroupNorm": [
        Example([_normal(2, 3, 4, 6), _normal(6), _normal(6)], {"groups": 3, "activation": 0}, reference=_one(_group_norm)),
        Example([_normal(2, 3, 4, 6), _normal(6), _normal(6)], {"groups": 2, "activation": 1, "epsilon": 1e-3},
                reference=_one(_group_norm)),
        Example([_normal(2, 6, 3, 4), _normal(6), _normal(6)], {"groups": 3, "activation": 1, "channels_last": 0},
                reference=_one(_group_norm)),
        Example([_normal(1, 2, 2, 4, dtype=np.float16), _normal(4), _normal(4)], {"groups": 2, "activation": 0},
                grad=False, rtol=2e-3, atol=2e-3, reference=_one(_group_norm)),
    ],
    "SkipGroupNorm": [
        Example([_normal(2, 3, 4, 6), _normal(6), _normal(6), _normal(2, 3, 4, 6), _normal(6)],
                {"groups": 3, "activation": 1}, reference=_group_norm),
        Example([_normal(2, 3, 4, 6), _normal(6), _normal(6), _normal(2, 1, 1, 6)], {"groups": 2, "activation": 0},
                reference=_group_norm),
        Example([_normal(2, 3, 4, 6), _normal(6), _normal(6), _normal(2, 6), _normal(6)], {"groups": 6, "activation": 0},
                reference=_group_norm),
        Example([_normal(2, 6, 3, 4), _normal(6), _normal(6), _normal(2, 6), _normal(6)],
                {"groups": 3, "activation": 1, "channels_last": 0}, reference=_group_norm),
    ],
}
