"""Examples of onnxruntime's com.microsoft normalizations and fusions: SkipLayerNormalization,
SkipSimplifiedLayerNormalization, EmbedLayerNormalization, QEmbedLayerNormalization,
GroupNorm, SkipGroupNorm, the Gelus, BiasAdd, FusedMatMul, FusedGemm, FusedConv, NhwcConv and MoE.

onnx.reference has none of them, so each example carries a numpy oracle written from the
text of onnxruntime's ``docs/ContribOperators.md`` and its CPU kernels, in float64.
tests/test_microsoft_fused_ops.py checks the ops against onnxruntime itself (the ops that
have CPU kernels there).
"""

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator
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


def _embed(
    input_ids,
    segment_ids,
    word,
    position,
    segment,
    gamma,
    beta,
    mask=None,
    position_ids=None,
    epsilon=1e-12,
    mask_index_type=None,
):
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


def _qembed(
    ids,
    segment_ids,
    word,
    position,
    segment,
    gamma,
    beta,
    mask,
    s_word,
    s_position,
    s_segment,
    s_gamma,
    s_beta,
    z_word,
    z_position,
    z_segment,
    z_gamma,
    z_beta,
    epsilon=1e-12,
):
    segment_table = None if segment is None else _real(segment, s_segment, z_segment)
    out, mask_index, _ = _embed(
        ids,
        segment_ids,
        _real(word, s_word, z_word),
        _real(position, s_position, z_position),
        segment_table,
        _real(gamma, s_gamma, z_gamma),
        _real(beta, s_beta, z_beta),
        mask,
        epsilon=epsilon,
    )
    return [out.astype(np.float32), mask_index]


def _group_norm(x, gamma, beta, skip=None, bias=None, epsilon=1e-5, groups=1, activation=0, channels_last=1):
    s = x.astype(np.float64)
    if skip is not None:
        s = (
            s
            + (
                skip[:, None, None, :]
                if channels_last and skip.ndim == 2
                else skip[:, :, None, None]
                if skip.ndim == 2
                else skip
            )
            + (0 if bias is None else bias.reshape((-1,) if channels_last else (-1, 1, 1)))
        )
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
    inputs = [
        _ids(11, 2, 5),
        _ids(2, 2, 5),
        *tables[:3],
        tables[3],
        tables[4],
        np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], np.int32),
        *scales,
        *zeros,
    ]
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


def _gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def _tanh_gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _ms_gelu(x):
    return [_gelu(x).astype(x.dtype)]


def _bias_gelu(a, b):
    return [_gelu(a.astype(np.float64) + b).astype(a.dtype)]


def _fast_gelu(x, bias=None):
    return [_tanh_gelu(x.astype(np.float64) + (0 if bias is None else bias)).astype(x.dtype)]


def _quick_gelu(x, alpha=1.702):
    v = x.astype(np.float64)
    return [(v * _sigmoid(alpha * v)).astype(x.dtype)]


def _scaled_silu(x, scale=None, alpha=1.0):
    # Rounded to x's type after the product and after the sigmoid, as onnxruntime's kernel.
    factor = alpha if scale is None else float(np.asarray(scale).reshape(()))
    z = (factor * x.astype(np.float64)).astype(x.dtype).astype(np.float64)
    s = _sigmoid(z).astype(x.dtype).astype(np.float64)
    return [(z * s).astype(x.dtype)]


def _bias_split_gelu(x, bias):
    h = x.astype(np.float64) + bias
    half = h.shape[-1] // 2
    return [(h[..., :half] * _gelu(h[..., half:])).astype(x.dtype)]


def _bias_add(x, bias, skip):
    return [x + bias + skip]


def _moved(x, trans, trans_batch):
    if trans_batch:
        x = np.transpose(x, (*range(1, x.ndim - 1), 0, x.ndim - 1))
    return np.swapaxes(x, -1, -2) if trans and x.ndim >= 2 else x


def _fused_matmul(a, b, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    product = np.matmul(_moved(a, transA, transBatchA).astype(np.float64), _moved(b, transB, transBatchB))
    return [(alpha * product).astype(a.dtype)]


_ACTIVATIONS = {
    "Relu": lambda y, a, b, g: np.maximum(y, 0),
    "Sigmoid": lambda y, a, b, g: _sigmoid(y),
    "Tanh": lambda y, a, b, g: np.tanh(y),
    "Softsign": lambda y, a, b, g: y / (1 + np.abs(y)),
    "Softplus": lambda y, a, b, g: np.log1p(np.exp(y)),
    "Silu": lambda y, a, b, g: y * _sigmoid(y),
    "LeakyRelu": lambda y, a, b, g: np.where(y >= 0, y, a * y),
    "Elu": lambda y, a, b, g: np.where(y >= 0, y, a * np.expm1(y)),
    "ThresholdedRelu": lambda y, a, b, g: np.where(y > a, y, 0),
    "HardSigmoid": lambda y, a, b, g: np.clip(a * y + b, 0, 1),
    "Clip": lambda y, a, b, g: np.clip(y, a, b),
    "ScaledTanh": lambda y, a, b, g: a * np.tanh(b * y),
    "ParametricSoftplus": lambda y, a, b, g: a * np.log1p(np.exp(b * y)),
    "Selu": lambda y, a, b, g: g * np.where(y > 0, y, a * np.expm1(y)),
}


def _fused_gemm(
    a,
    b,
    c=None,
    alpha=1.0,
    beta=1.0,
    transA=0,
    transB=0,
    activation=None,
    activation_alpha=None,
    activation_beta=None,
    activation_gamma=None,
):
    a, b = a.T if transA else a, b.T if transB else b
    y = alpha * (a.astype(np.float64) @ b) + (0 if c is None else beta * c)
    return [_ACTIVATIONS[activation](y, activation_alpha, activation_beta, activation_gamma).astype(a.dtype)]


def _onnx_conv(x, w, b=None, **window):
    names = ["x", "w"] + (["b"] if b is not None else [])
    node = helper.make_node("Conv", names, ["y"], **window)
    graph = helper.make_graph([node], "conv", [], [helper.make_tensor_value_info("y", 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {
        "x": x.astype(np.float64),
        "w": w.astype(np.float64),
        **({"b": b.astype(np.float64)} if b is not None else {}),
    }
    return ReferenceEvaluator(model).run(None, feeds)[0]


def _fused_conv(x, w, b=None, z=None, activation=None, activation_params=(), **window):
    y = _onnx_conv(x, w, b, **window) + (0 if z is None else z)
    if activation:
        y = _ACTIVATIONS[activation](y, *(list(activation_params) + [None] * 3)[:3])
    return [y.astype(x.dtype)]


def _nhwc_conv(x, w, b=None, **window):
    y = _onnx_conv(np.moveaxis(x, -1, 1), np.moveaxis(w, -1, 1), b, **window)
    return [np.moveaxis(y, 1, -1).astype(x.dtype)]


def _mixture_of_experts(
    x,
    logits,
    w1,
    b1=None,
    w2=None,
    b2=None,
    w3=None,
    b3=None,
    *,
    k=1,
    activation_type="relu",
    normalize_routing_weights=0,
    use_sparse_mixer=0,
    swiglu_fusion=0,
    activation_alpha=1.0,
    activation_beta=0.0,
    swiglu_limit=0.0,
):
    """Row by row, as onnxruntime's CPU kernel (moe_cpu.cc) runs it, in float64."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    out = np.zeros_like(rows)
    for r, row in enumerate(rows):
        chosen = np.argsort(-logits[r], kind="stable")[:k]
        z = np.exp(logits[r].astype(np.float64) - logits[r].max())
        weights = z[chosen] / z[chosen].sum() if normalize_routing_weights else (z / z.sum())[chosen]
        for e, weight in zip(chosen, weights):
            h = w1[e] @ row + (0 if b1 is None else b1[e])
            if activation_type == "swiglu":
                gate, linear = (h[0::2], h[1::2]) if swiglu_fusion == 1 else np.split(h, 2)
                if swiglu_limit:
                    gate, linear = np.minimum(gate, swiglu_limit), np.clip(linear, -swiglu_limit, swiglu_limit)
                h = gate * _sigmoid(activation_alpha * gate) * (linear + activation_beta)
            else:
                h = {
                    "relu": lambda v: np.maximum(v, 0),
                    "gelu": _tanh_gelu,
                    "silu": lambda v: v * _sigmoid(v),
                    "identity": lambda v: v,
                }[activation_type](h)
            out[r] += weight * (w2[e] @ h + (0 if b2 is None else b2[e]))
    return [out.reshape(x.shape).astype(x.dtype)]


_A2 = _normal(3, 5)
_IMAGE = _normal(2, 3, 6, 5)
_CONV_W = _normal(4, 3, 3, 3)

EXAMPLES = {
    "SkipLayerNormalization": [
        Example(
            [_X, _normal(2, 3, 8), _normal(8), _normal(8), _normal(8)],
            reference=_skip_layer_norm,
            **_STATISTICS_IN_FLOAT32,
        ),
        Example(
            [_X, _normal(1, 3, 8), _normal(8)], {"epsilon": 1e-3}, reference=_skip_layer_norm, **_STATISTICS_IN_FLOAT32
        ),
        Example(
            [_normal(5, 8), _normal(5, 8), _normal(8), None, _normal(8)],
            reference=_skip_layer_norm,
            **_STATISTICS_IN_FLOAT32,
        ),
        Example([_X, _normal(3, 8), _normal(8), _normal(8)], reference=_skip_layer_norm, **_STATISTICS_IN_FLOAT32),
        Example(
            [_HALF, _normal(3, 8, dtype=np.float16), _normal(8, dtype=np.float16)],
            grad=False,
            rtol=2e-3,
            atol=2e-3,
            reference=_skip_layer_norm,
        ),
    ],
    "SkipSimplifiedLayerNormalization": [
        Example([_X, _normal(2, 3, 8), _normal(8), _normal(8)], reference=_skip_simplified, **_STATISTICS_IN_FLOAT32),
        Example(
            [_normal(4, 8), _normal(4, 8), _normal(8)],
            {"epsilon": 1e-5},
            reference=_skip_simplified,
            **_STATISTICS_IN_FLOAT32,
        ),
        Example([_X, _normal(1, 3, 8), _normal(8)], reference=_skip_simplified, **_STATISTICS_IN_FLOAT32),
    ],
    "EmbedLayerNormalization": [
        Example(
            [
                _ids(11, 2, 5),
                _ids(2, 2, 5),
                _normal(11, 8),
                _normal(6, 8),
                _normal(2, 8),
                _normal(8),
                _normal(8),
                np.array([[1, 1, 0, 1, 0], [1, 1, 1, 1, 1]], np.int32),
            ],
            reference=_embed,
        ),
        Example(
            [_ids(11, 2, 5), None, _normal(11, 8), _normal(6, 8), None, _normal(8), _normal(8)],
            {"epsilon": 1e-5, "mask_index_type": 0},
            reference=_embed,
        ),
        Example(
            [
                _ids(11, 2, 5),
                _ids(2, 2, 5),
                _normal(11, 8),
                _normal(9, 8),
                _normal(2, 8),
                _normal(8),
                _normal(8),
                None,
                _ids(9, 2, 5),
            ],
            reference=_embed,
        ),
        Example(
            [_ids(11, 2, 5), None, _normal(11, 8), _normal(9, 8), None, _normal(8), _normal(8), None, _ids(9, 1, 5)],
            {"mask_index_type": 1},
            reference=_embed,
        ),
    ],
    "QEmbedLayerNormalization": [
        Example(_qembed_inputs(np.uint8), reference=_qembed, rtol=1e-4, atol=1e-4),
        Example(_qembed_inputs(np.int8, segments=False), {"epsilon": 1e-5}, reference=_qembed, rtol=1e-4, atol=1e-4),
        Example(_qembed_inputs(np.uint8, mask=False), reference=_qembed, rtol=1e-4, atol=1e-4),
    ],
    "GroupNorm": [
        Example(
            [_normal(2, 3, 4, 6), _normal(6), _normal(6)], {"groups": 3, "activation": 0}, reference=_one(_group_norm)
        ),
        Example(
            [_normal(2, 3, 4, 6), _normal(6), _normal(6)],
            {"groups": 2, "activation": 1, "epsilon": 1e-3},
            reference=_one(_group_norm),
        ),
        Example(
            [_normal(2, 6, 3, 4), _normal(6), _normal(6)],
            {"groups": 3, "activation": 1, "channels_last": 0},
            reference=_one(_group_norm),
        ),
        Example(
            [_normal(1, 2, 2, 4, dtype=np.float16), _normal(4), _normal(4)],
            {"groups": 2, "activation": 0},
            grad=False,
            rtol=2e-3,
            atol=2e-3,
            reference=_one(_group_norm),
        ),
    ],
    "SkipGroupNorm": [
        Example(
            [_normal(2, 3, 4, 6), _normal(6), _normal(6), _normal(2, 3, 4, 6), _normal(6)],
            {"groups": 3, "activation": 1},
            reference=_group_norm,
        ),
        Example(
            [_normal(2, 3, 4, 6), _normal(6), _normal(6), _normal(2, 1, 1, 6)],
            {"groups": 2, "activation": 0},
            reference=_group_norm,
        ),
        Example(
            [_normal(2, 3, 4, 6), _normal(6), _normal(6), _normal(2, 6), _normal(6)],
            {"groups": 6, "activation": 0},
            reference=_group_norm,
        ),
        Example(
            [_normal(2, 6, 3, 4), _normal(6), _normal(6), _normal(2, 6), _normal(6)],
            {"groups": 3, "activation": 1, "channels_last": 0},
            reference=_group_norm,
        ),
    ],
    "Gelu": [
        Example([_X * 2], reference=_ms_gelu),
        Example([_HALF], grad=False, rtol=2e-3, atol=2e-3, reference=_ms_gelu),
    ],
    "BiasGelu": [Example([_X, _normal(8)], reference=_bias_gelu)],
    "FastGelu": [
        Example([_X * 2], reference=_fast_gelu),
        Example([_X, _normal(8)], reference=_fast_gelu),
        Example([_HALF, _normal(8, dtype=np.float16)], grad=False, rtol=2e-3, atol=2e-3, reference=_fast_gelu),
    ],
    "QuickGelu": [Example([_X * 2], reference=_quick_gelu), Example([_X], {"alpha": 0.8}, reference=_quick_gelu)],
    "ScaledSiLU": [
        Example([_X * 2], {"alpha": 1.702}, reference=_scaled_silu),
        Example([_X, np.array(0.5, np.float32)], reference=_scaled_silu),
    ],
    "BiasSplitGelu": [
        Example([_normal(2, 3, 8), _normal(8)], reference=_bias_split_gelu),
        Example(
            [_normal(1, 4, 6, dtype=np.float16), _normal(6, dtype=np.float16)],
            grad=False,
            rtol=2e-3,
            atol=2e-3,
            reference=_bias_split_gelu,
        ),
    ],
    "BiasAdd": [Example([_normal(2, 3, 4), _normal(4), _normal(2, 3, 4)], reference=_bias_add)],
    "FusedMatMul": [
        Example([_normal(2, 3, 4), _normal(2, 4, 5)], {"alpha": 0.125}, reference=_fused_matmul),
        Example([_normal(2, 4, 3), _normal(5, 4)], {"transA": 1, "transB": 1}, reference=_fused_matmul),
        Example(
            [_normal(3, 2, 4, 5), _normal(3, 2, 4, 6)],
            {"transBatchA": 1, "transA": 1, "transBatchB": 1, "alpha": 2.0},
            reference=_fused_matmul,
        ),
        Example([_normal(3, 2, 4, 5), _normal(2, 4, 6, 5)], {"transBatchA": 1, "transB": 1}, reference=_fused_matmul),
        Example([_normal(4), _normal(2, 5, 4)], {"transB": 1}, reference=_fused_matmul),
    ],
    "FusedGemm": [
        Example(
            [_A2, _normal(5, 4), _normal(4)], {"activation": "Relu", "alpha": 0.5, "beta": 2.0}, reference=_fused_gemm
        ),
        Example(
            [_A2.T.copy(), _normal(4, 5)],
            {"activation": "LeakyRelu", "activation_alpha": 0.1, "transA": 1, "transB": 1},
            reference=_fused_gemm,
        ),
        Example(
            [_A2, _normal(5, 4), _normal(3, 1)],
            {"activation": "Selu", "activation_alpha": 1.6, "activation_gamma": 1.05},
            reference=_fused_gemm,
        ),
        Example(
            [_A2, _normal(5, 4)],
            {"activation": "ParametricSoftplus", "activation_alpha": 0.5, "activation_beta": 2.0},
            reference=_fused_gemm,
        ),
        Example(
            [_A2, _normal(5, 4)],
            {"activation": "ScaledTanh", "activation_alpha": 1.5, "activation_beta": 0.5},
            reference=_fused_gemm,
        ),
        Example([_A2, _normal(5, 4)], {"activation": "Elu", "activation_alpha": 0.7}, reference=_fused_gemm),
    ],
    "FusedConv": [
        Example([_IMAGE, _CONV_W, _normal(4)], {"activation": "Relu", "pads": [1, 1, 1, 1]}, reference=_fused_conv),
        Example(
            [_IMAGE, _CONV_W, _normal(4), _normal(2, 4, 4, 3)],
            {"activation": "LeakyRelu", "activation_params": [0.2]},
            reference=_fused_conv,
        ),
        Example(
            [_IMAGE, _normal(6, 1, 2, 2)],
            {"group": 3, "strides": [2, 1], "activation": "HardSigmoid", "activation_params": [0.2, 0.5]},
            reference=_fused_conv,
        ),
        Example([_IMAGE, _CONV_W, None, _normal(2, 4, 4, 3)], {"activation": "Sigmoid"}, reference=_fused_conv),
        Example([_IMAGE, _CONV_W], {"auto_pad": "SAME_UPPER", "activation": "Silu"}, reference=_fused_conv),
        Example([_IMAGE, _CONV_W], {"dilations": [2, 1]}, reference=_fused_conv),
    ],
    "MoE": [  # 4 experts of inner size 3 on 8 features
        Example(
            [_normal(5, 8), _normal(5, 4), _normal(4, 6, 8), _normal(4, 6), _normal(4, 8, 3), _normal(4, 8)],
            {
                "k": 2,
                "activation_type": "swiglu",
                "swiglu_fusion": 1,
                "normalize_routing_weights": 1,
                "activation_alpha": 1.702,
                "activation_beta": 1.0,
                "swiglu_limit": 7.0,
            },
            reference=_mixture_of_experts,
        ),
        Example(
            [_normal(2, 3, 8), _normal(6, 4), _normal(4, 3, 8), None, _normal(4, 8, 3), None],
            {"k": 1, "activation_type": "gelu"},
            reference=_mixture_of_experts,
        ),
        Example(
            [_normal(5, 8), _normal(5, 4), _normal(4, 3, 8), _normal(4, 3), _normal(4, 8, 3), _normal(4, 8)],
            {"k": 3, "activation_type": "silu"},
            reference=_mixture_of_experts,
        ),
        Example(
            [_normal(5, 8), _normal(5, 4), _normal(4, 6, 8), None, _normal(4, 8, 3)],
            {"k": 2, "activation_type": "swiglu", "swiglu_fusion": 2, "normalize_routing_weights": 1},
            reference=_mixture_of_experts,
        ),
    ],
    "NhwcConv": [
        Example([_normal(2, 6, 5, 3), _normal(4, 3, 3, 3), _normal(4)], {"pads": [1, 1, 1, 1]}, reference=_nhwc_conv),
        Example([_normal(1, 7, 6, 4), _normal(6, 2, 2, 2)], {"group": 2, "strides": [2, 2]}, reference=_nhwc_conv),
        Example(
            [_normal(1, 5, 6, 3), _normal(2, 3, 3, 3)],
            {"auto_pad": "SAME_LOWER", "dilations": [1, 2]},
            reference=_nhwc_conv,
        ),
    ],
}
