"""Examples of onnxruntime's com.microsoft QOperator ops: QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearGlobalAveragePool,
QLinearAveragePool, QLinearSoftmax and QGemm.

onnx.reference has none of them, so each example carries a numpy oracle of the operator's
text: dequantize in float64, the float op, requantize (round half to even, saturate).
The scales are powers of two, where onnxruntime's float32 arithmetic is exact too, and the
output zero points even: onnxruntime's QLinearAdd, QLinearMul and QLinearAveragePool add
the zero point before rounding, which differs from the text's order only on exact ties
with an odd zero point. So the text and the kernels agree to the integer here; tests/test_quantization_microsoft.py checks
the ops against onnxruntime itself with arbitrary scales, and in QOperator models.
"""

import numpy as np
from onnx import helper
from onnx.reference import ReferenceEvaluator

from tests.op_examples._example import Example

DOMAIN = "com.microsoft"

_rng = np.random.default_rng(31)
_RANGES = {np.uint8: (0, 255), np.int8: (-128, 127)}


def _codes(dtype, shape):
    low, high = _RANGES[dtype]
    return _rng.integers(low, high + 1, shape).astype(dtype)


def _real(x, scale, zero=None):
    return np.float64(scale) * (x.astype(np.float64) - (0 if zero is None else np.float64(zero)))


def _quantized(v, scale, zero, dtype):
    low, high = _RANGES[dtype]
    return np.clip(np.rint(v / np.float64(scale)) + (0 if zero is None else int(zero)), low, high).astype(dtype)


def _add(a, sa, za, b, sb, zb, sc, zc=None):
    return [_quantized(_real(a, sa, za) + _real(b, sb, zb), sc, zc, a.dtype.type)]


def _mul(a, sa, za, b, sb, zb, sc, zc=None):
    return [_quantized(_real(a, sa, za) * _real(b, sb, zb), sc, zc, a.dtype.type)]


def _sigmoid(x, sx, zx, sy, zy=None):
    return [_quantized(1 / (1 + np.exp(-_real(x, sx, zx))), sy, zy, x.dtype.type)]


def _leaky_relu(x, sx, zx, sy, zy=None, *, alpha=0.01):
    v = _real(x, sx, zx)
    return [_quantized(np.where(v >= 0, v, np.float64(np.float32(alpha)) * v), sy, zy, x.dtype.type)]


def _concat(sy, zy, *inputs, axis):
    parts = [
        _quantized(_real(x, s, z), sy, zy, zy.dtype.type) for x, s, z in zip(inputs[::3], inputs[1::3], inputs[2::3])
    ]
    return [np.concatenate(parts, axis=axis)]


def _global_average(x, sx, zx, sy, zy, *, channels_last=0):
    axes = tuple(range(1, x.ndim - 1)) if channels_last else tuple(range(2, x.ndim))
    return [_quantized(_real(x, sx, zx).mean(axis=axes, keepdims=True), sy, zy, x.dtype.type)]


def _average_pool(x, sx, zx, sy, zy, **attributes):
    """onnx.reference's AveragePool of the dequantized values, quantized."""
    node = helper.make_node("AveragePool", ["x"], ["y"], **attributes)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", 11, None)], [helper.make_tensor_value_info("y", 11, None)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    (pooled,) = ReferenceEvaluator(model).run(None, {"x": _real(x, sx, zx)})
    return [_quantized(pooled, sy, zy, x.dtype.type)]


def _softmax(x, sx, zx, sy, zy, *, opset, axis=-1):
    v = _real(x, sx)
    if opset < 13:
        rows = v.reshape(int(np.prod(v.shape[: axis % v.ndim])), -1)
        e = np.exp(rows - rows.max(axis=1, keepdims=True))
        p = (e / e.sum(axis=1, keepdims=True)).reshape(v.shape)
    else:
        e = np.exp(v - v.max(axis=axis, keepdims=True))
        p = e / e.sum(axis=axis, keepdims=True)
    return [_quantized(p, sy, zy, x.dtype.type)]


def _qgemm(a, sa, za, b, sb, zb, c=None, sy=None, zy=None, *, alpha=1.0, transA=0, transB=0):
    a, b = (a.T if transA else a), (b.T if transB else b)
    acc = (a.astype(np.int64) - np.int64(za)) @ (b.astype(np.int64) - zb.astype(np.int64))
    acc = acc + (0 if c is None else c)
    real = acc * np.float64(np.float32(alpha)) * np.float64(sa) * sb.astype(np.float64)
    if zy is None:
        return [(real / (1 if sy is None else np.float64(sy))).astype(np.float32)]
    return [_quantized(real, sy, zy, zy.dtype.type)]


_F = np.float32
_U8, _I8 = np.uint8, np.int8
_X_U8, _X_I8 = _codes(_U8, (2, 3, 4, 4)), _codes(_I8, (2, 3, 4, 4))
_ROW_I8 = _codes(_I8, (1, 3, 1, 1))


EXAMPLES = {
    "QLinearAdd": [
        Example(
            [_X_U8, _F(0.125), _U8(128), _codes(_U8, (2, 3, 4, 4)), _F(0.25), _U8(100), _F(0.25), _U8(120)],
            reference=_add,
        ),
        Example([_X_I8, _F(0.0625), _I8(-3), _ROW_I8, _F(0.125), _I8(0), _F(0.125), _I8(6)], reference=_add),
        Example([_X_U8, _F(0.5), None, _codes(_U8, (4,)), _F(0.5), None, _F(0.5)], reference=_add),  # no zero points
    ],
    "QLinearMul": [
        Example(
            [_X_U8, _F(0.0625), _U8(128), _codes(_U8, (2, 3, 4, 4)), _F(0.0625), _U8(100), _F(0.125), _U8(120)],
            reference=_mul,
        ),
        Example([_X_I8, _F(0.125), _I8(-3), _ROW_I8, _F(0.0625), _I8(1), _F(0.0625), _I8(-6)], reference=_mul),
    ],
    "QLinearSigmoid": [
        Example([_X_U8, _F(0.03125), _U8(128), _F(1 / 256), _U8(0)], reference=_sigmoid),
        Example([_X_I8, _F(0.0625), _I8(0), _F(1 / 256), _I8(-128)], reference=_sigmoid),
    ],
    "QLinearLeakyRelu": [
        Example([_X_U8, _F(0.125), _U8(128), _F(0.0625), _U8(64)], {"alpha": 0.25}, reference=_leaky_relu),
        Example([_X_I8, _F(0.125), _I8(10), _F(0.125), _I8(-100)], reference=_leaky_relu),
    ],
    "QLinearConcat": [
        Example(
            [_F(0.125), _I8(0), _X_I8, _F(0.125), _I8(0), _codes(_I8, (2, 3, 4, 2)), _F(0.0625), _I8(-7)],
            {"axis": -1},
            reference=_concat,
        ),
    ],
    "QLinearGlobalAveragePool": [
        Example([_X_U8, _F(0.125), _U8(128), _F(0.0625), _U8(100)], reference=_global_average),
        Example([_X_I8, _F(0.25), _I8(-2), _F(0.125), _I8(4)], {"channels_last": 1}, reference=_global_average),
    ],
    "QLinearAveragePool": [
        Example(
            [_X_I8, _F(0.25), _I8(-2), _F(0.125), _I8(4)],
            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
            reference=_average_pool,
        ),
        Example(
            [_X_I8, _F(0.25), _I8(-2), _F(0.125), _I8(4)],
            {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
            reference=_average_pool,
        ),
    ],
    "QLinearSoftmax": [
        Example([_X_I8, _F(0.03125), _I8(0), _F(1 / 256), _I8(-128)], {"opset": 13, "axis": 1}, reference=_softmax),
        Example([_X_U8, _F(0.0625), None, _F(1 / 256), _U8(0)], {"opset": 12, "axis": 2}, reference=_softmax),
    ],
    "QGemm": [
        Example(
            [
                _codes(_U8, (3, 5)),
                _F(0.0625),
                _U8(128),
                _codes(_U8, (5, 4)),
                _F(0.03125),
                _U8(120),
                _rng.integers(-500, 500, (4,)).astype(np.int32),
                _F(0.5),
                _U8(100),
            ],
            reference=_qgemm,
        ),
        Example(
            [
                _codes(_I8, (5, 3)),
                _F(0.0625),
                _I8(1),
                _codes(_I8, (4, 5)),
                np.array([0.125, 0.25, 0.0625, 0.5], _F),
                np.zeros(4, _I8),
                None,
                _F(1.0),
                _I8(0),
            ],
            {"transA": 1, "transB": 1, "alpha": 0.5},
            reference=_qgemm,
        ),
        Example(
            [_codes(_U8, (3, 5)), _F(0.0625), _U8(128), _codes(_I8, (5, 4)), _F(0.03125), _I8(0)], reference=_qgemm
        ),
    ],
}


# --- Weight-quantized products and gathers (MatMulNBits, MatMulBnb4, GatherBlockQuantized,
# DynamicQuantizeMatMul, MatMulIntegerToFloat) and com.microsoft QuantizeLinear /
# DequantizeLinear. The oracles follow onnxruntime's docs/ContribOperators.md in float64;
# tests/test_microsoft_quantized_matmul.py checks the ops against onnxruntime itself.


def _unpack(packed, bits):
    """Unsigned ``bits``-wide values packed along the last axis, the first in the lowest bits."""
    per_byte = 8 // bits
    values = [(packed >> np.uint8(bits * i)) & np.uint8((1 << bits) - 1) for i in range(per_byte)]
    return np.stack(values, axis=-1).reshape(packed.shape[:-1] + (-1,)).astype(np.int64)


def _pack(values, bits):
    per_byte = 8 // bits
    values = np.asarray(values, np.uint8).reshape(values.shape[:-1] + (-1, per_byte))
    return np.bitwise_or.reduce([values[..., i] << np.uint8(bits * i) for i in range(per_byte)], axis=0).astype(
        np.uint8
    )


def _matmul_nbits(
    A,
    B,
    scales,
    zero_points=None,
    g_idx=None,
    bias=None,
    *,
    K,
    N,
    block_size,
    bits=4,
    accuracy_level=0,
    weight_prepacked=0,
):
    k_blocks = -(-K // block_size)
    codes = _unpack(B, bits).reshape(N, -1)[:, :K]
    scales = scales.astype(np.float64).reshape(N, k_blocks)
    if zero_points is None:
        zero = np.full((N, k_blocks), 2.0 ** (bits - 1))
    elif zero_points.dtype == np.uint8:
        zero = _unpack(zero_points.reshape(N, -1), bits)[:, :k_blocks].astype(np.float64)
    else:
        zero = zero_points.astype(np.float64).reshape(N, k_blocks)
    groups = np.arange(K) // block_size if g_idx is None else g_idx[:K]
    W = (codes - zero[:, groups]) * scales[:, groups]
    y = A.astype(np.float64) @ W.T + (0 if bias is None else bias.astype(np.float64))
    return [y.astype(A.dtype)]


def _nbits_inputs(lead, K, N, bits, block_size, zero):
    k_blocks = -(-K // block_size)
    B = _pack(_rng.integers(0, 1 << bits, (N, k_blocks * block_size)), bits).reshape(N, k_blocks, -1)
    scales = _rng.uniform(0.01, 0.1, (N, k_blocks)).astype(_F)
    if zero == "packed":
        width = -(-k_blocks * bits // 8) * (8 // bits)
        zero_points = _pack(_rng.integers(0, 1 << bits, (N, width)), bits)
    else:
        zero_points = _rng.uniform(0, (1 << bits) - 1, (N, k_blocks)).astype(_F) if zero == "float" else None
    return [_rng.standard_normal(lead + (K,)).astype(_F), B, scales, zero_points]


EXAMPLES.update(
    {
        "MatMulNBits": [
            Example(
                _nbits_inputs((3,), 40, 5, 4, 16, "packed"),
                {"K": 40, "N": 5, "block_size": 16},
                reference=_matmul_nbits,
                rtol=1e-5,
                atol=1e-5,
            ),
            Example(
                _nbits_inputs((2, 2), 70, 3, 2, 32, None) + [None, _rng.standard_normal(3).astype(_F)],
                {"K": 70, "N": 3, "bits": 2, "block_size": 32},
                reference=_matmul_nbits,
                rtol=1e-5,
                atol=1e-5,
            ),
            # g_idx: the blocks in another order (GPTQ's act-order), with float zero points (HQQ).
            Example(
                _nbits_inputs((1,), 64, 4, 8, 16, "float") + [np.repeat(np.array([2, 0, 3, 1], np.int32), 16)],
                {"K": 64, "N": 4, "bits": 8, "block_size": 16},
                reference=_matmul_nbits,
                rtol=1e-5,
                atol=1e-5,
            ),
        ],
    }
)


_BNB4_VALUES = {  # onnxruntime's tables: FP4 (sign, 2 exponent bits, 1 mantissa bit, over 12) and NF4
    0: np.concatenate([v := np.array([0, 0.0625, 8, 12, 4, 6, 2, 3]) / 12, -v]),
    1: np.array(
        [
            -1.0,
            -0.6961928009986877,
            -0.5250730514526367,
            -0.39491748809814453,
            -0.28444138169288635,
            -0.18477343022823334,
            -0.09105003625154495,
            0.0,
            0.07958029955625534,
            0.16093020141124725,
            0.24611230194568634,
            0.33791524171829224,
            0.44070982933044434,
            0.5626170039176941,
            0.7229568362236023,
            1.0,
        ]
    ),
}


def _matmul_bnb4(A, B, absmax, *, K, N, block_size, quant_type, transB=1, training_mode=0):
    size = N * K
    codes = np.stack([B >> 4, B & 15], axis=-1).reshape(-1)[:size]  # the first code in the high nibble
    W = (_BNB4_VALUES[quant_type][codes] * np.repeat(absmax.astype(np.float64), block_size)[:size]).reshape(N, K)
    return [(A.astype(np.float64) @ (W.T if transB else W)).astype(A.dtype)]


EXAMPLES.update(
    {
        "MatMulBnb4": [
            Example(
                [_rng.standard_normal((3, 20)).astype(_F), _codes(_U8, (50,)), _rng.uniform(0.5, 2, 7).astype(_F)],
                {"K": 20, "N": 5, "block_size": 16, "quant_type": 1},
                reference=_matmul_bnb4,
            ),
            Example(
                [_rng.standard_normal((2, 2, 5)).astype(_F), _codes(_U8, (53,)), _rng.uniform(0.5, 2, 4).astype(_F)],
                {"K": 21, "N": 5, "block_size": 32, "quant_type": 0, "transB": 0},
                reference=_matmul_bnb4,
            ),
        ],
    }
)


def _gather_block_quantized(
    data, indices, scales, zero_points=None, *, bits=4, block_size=128, quantize_axis=1, gather_axis=0
):
    rank = data.ndim
    q, g = quantize_axis % rank, gather_axis % rank
    packed = data.dtype == np.uint8
    values = _unpack(data, bits) if packed else data.astype(np.int64)
    if zero_points is None:
        zero = np.full(scales.shape, 2 ** (bits - 1) if packed else 0)
    else:
        zero = _unpack(zero_points, bits)[..., : scales.shape[-1]] if packed else zero_points.astype(np.int64)
    length = values.shape[q]

    def spread(v):
        return np.repeat(v, block_size, axis=q)[(slice(None),) * q + (slice(0, length),)]

    table = (values - spread(zero)) * spread(scales.astype(np.float64))
    size = table.shape[g]
    valid = (indices >= -size) & (indices < size)
    out = np.take(table, np.where(valid, indices % size, 0), axis=g)
    mask = valid.reshape((1,) * g + valid.shape + (1,) * (rank - g - 1))
    return [np.where(mask, out, 0).astype(scales.dtype)]


def _int4_table(shape, dtype_name):
    import ml_dtypes

    low, high = (-8, 7) if dtype_name == "int4" else (0, 15)
    return _rng.integers(low, high + 1, shape).astype(getattr(ml_dtypes, dtype_name))


EXAMPLES.update(
    {
        "GatherBlockQuantized": [
            # int4 embeddings, quantized along the hidden axis, with zero points; indices out of range read zeros.
            Example(
                [
                    _int4_table((6, 40), "int4"),
                    np.array([[0, 5, -1], [7, -7, 2]], np.int64),
                    _rng.uniform(0.1, 1, (6, 3)).astype(_F),
                    _int4_table((6, 3), "int4"),
                ],
                {"block_size": 16},
                reference=_gather_block_quantized,
            ),
            Example(
                [_int4_table((32, 3), "uint4"), np.array([1, 0], np.int32), _rng.uniform(0.1, 1, (2, 3)).astype(_F)],
                {"block_size": 16, "quantize_axis": 0, "gather_axis": 1},
                reference=_gather_block_quantized,
            ),
            # uint8 packed two 4-bit values a byte, zero points packed likewise.
            Example(
                [
                    _codes(_U8, (5, 24)),
                    np.array([4, 0, 9], np.int64),
                    _rng.uniform(0.1, 1, (5, 3)).astype(_F),
                    _codes(_U8, (5, 2)),
                ],
                {"block_size": 16},
                reference=_gather_block_quantized,
            ),
        ],
    }
)


def _matmul_integer_to_float(A, B, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    acc = (A.astype(np.int64) - (0 if a_zero_point is None else np.int64(a_zero_point))) @ (
        B.astype(np.int64) - (0 if b_zero_point is None else b_zero_point.astype(np.int64))
    )
    multiplier = (np.float32(a_scale) * b_scale.astype(np.float32)).astype(np.float64)  # rounded once, as onnxruntime
    return [(acc * multiplier + (0 if bias is None else bias.astype(np.float64))).astype(np.float32)]


def _dynamic_quantize_matmul(A, B, b_scale, b_zero_point=None, bias=None):
    low, high = np.float32(min(A.min(), 0)), np.float32(max(A.max(), 0))
    scale = np.float32(1) if low == high else (high - low) / np.float32(255)
    zero = np.uint8(np.rint(np.clip(-low / scale, 0, 255)))
    q = np.clip(np.rint(A / scale) + np.float32(zero), 0, 255).astype(np.uint8)
    return _matmul_integer_to_float(q, B, scale, b_scale, zero, b_zero_point, bias)


EXAMPLES.update(
    {
        "MatMulIntegerToFloat": [
            Example(
                [
                    _codes(_U8, (3, 7)),
                    _codes(_I8, (7, 4)),
                    _F(0.05),
                    _rng.uniform(0.01, 0.1, 4).astype(_F),
                    _U8(128),
                    _codes(_I8, (4,)),
                    _rng.standard_normal(4).astype(_F),
                ],
                reference=_matmul_integer_to_float,
            ),
            Example(
                [_codes(_I8, (2, 3, 5)), _codes(_I8, (5, 2)), _F(0.125), _F(0.0625)], reference=_matmul_integer_to_float
            ),
        ],
        "DynamicQuantizeMatMul": [
            # Gradients checked w.r.t. b_scale and bias (A's rounding is flat almost everywhere).
            Example(
                [
                    np.array([[-1.3, 0.4, 2.2], [0.7, -0.2, 1.1]], _F),
                    _codes(_I8, (3, 4)),
                    _rng.uniform(0.01, 0.1, 4).astype(_F),
                    None,
                    _rng.standard_normal(4).astype(_F),
                ],
                reference=_dynamic_quantize_matmul,
            ),
            Example(
                [_rng.standard_normal((2, 2, 6)).astype(_F), _codes(_U8, (6, 3)), _F(0.03), _U8(120)],
                reference=_dynamic_quantize_matmul,
            ),
        ],
    }
)


def _per_axis(v, ndim, axis):
    return v if v.ndim == 0 else v.reshape((1,) * (axis % ndim) + (-1,) + (1,) * (ndim - axis % ndim - 1))


def _quantize_linear(x, y_scale, y_zero_point=None, *, axis=1):
    import ml_dtypes

    dtype = np.dtype(np.uint8) if y_zero_point is None else y_zero_point.dtype
    info = ml_dtypes.iinfo(dtype)
    zero = 0 if y_zero_point is None else _per_axis(y_zero_point.astype(np.float64), x.ndim, axis)
    q = np.rint(x / _per_axis(y_scale, x.ndim, axis)).astype(np.float64) + zero  # divided in the scale's type
    return [np.clip(q, int(info.min), int(info.max)).astype(dtype)]


def _dequantize_linear(x, x_scale, x_zero_point=None, *, axis=1):
    zero = 0 if x_zero_point is None else _per_axis(x_zero_point.astype(np.int64), x.ndim, axis)
    return [((x.astype(np.int64) - zero) * _per_axis(x_scale.astype(np.float64), x.ndim, axis)).astype(x_scale.dtype)]


EXAMPLES.update(
    {
        "QuantizeLinear": [
            Example(
                [
                    _rng.uniform(-3000, 3000, (2, 3, 4)).astype(_F),
                    _rng.uniform(0.05, 0.2, 3).astype(_F),
                    np.array([-5, 0, 7], np.int16),
                ],
                reference=_quantize_linear,
                grad=False,
            ),
            Example(
                [_rng.uniform(-1, 1, (4, 5)).astype(_F), _F(0.125), _int4_table((), "int4")],
                reference=_quantize_linear,
                grad=False,
            ),
            Example(
                [_rng.uniform(-1, 30, (4, 5)).astype(_F), _rng.uniform(0.05, 0.2, 5).astype(_F)],
                {"axis": -1},
                reference=_quantize_linear,
                grad=False,
            ),
        ],
        "DequantizeLinear": [
            Example(
                [_codes(_U8, (2, 3, 4)), _rng.uniform(0.05, 0.2, 3).astype(_F), _codes(_U8, (3,))],
                reference=_dequantize_linear,
            ),
            # float16 scales: the values are checked; check_grads' numerical differences in float16
            # are too coarse (the first example checks the gradient w.r.t. float32 scales).
            Example(
                [
                    _int4_table((4, 6), "uint4"),
                    _rng.uniform(0.05, 0.2, 6).astype(np.float16),
                    _int4_table((6,), "uint4"),
                ],
                {"axis": -1},
                reference=_dequantize_linear,
                rtol=1e-3,
                atol=1e-3,
                grad=False,
            ),
            Example([_rng.integers(-30000, 30000, (3, 4)).astype(np.int16), _F(0.01)], reference=_dequantize_linear),
        ],
    }
)
