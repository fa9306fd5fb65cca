"""Examples of the quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv and BitCast.

No input of these ops is marked differentiable in onnx's schemas (test_op_table checks no
gradient here); tests/test_quantization.py checks the gradients that exist (scales, the
straight-through estimator). Not here, with the reason: float6 (JAX cannot hold it; the
numpy path is tested in tests/test_quantization.py), QLinearMatMul on float8 (onnx.reference
casts float8 values to int32, truncating them; the text dequantizes them) and float8 zero
points that are not 0 in DequantizeLinear (onnx.reference refuses them; the text's formula
subtracts them).
"""

import ml_dtypes
import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(21)

# onnx.reference implements versions 19 and later; tests/test_quantization.py checks 10 and 13.
_ALL = _AXIS = (19, 21, 23, 24, 25, 28)
_FLOAT8 = (19, 21, 23, 24, 25, 28)
_BLOCKED = (21, 23, 24, 25, 28)
_PRECISION = (23, 24, 25, 28)
_SEPARATE_SCALE_TYPE = (23, 24, 25, 28)  # 19 and 21 tie the scale's type to x's

_X = (_rng.standard_normal((3, 4)) * 4).astype(np.float32)
_SCALE = np.float32(0.05)
# x / scale lands on halves: rounding must go to the even neighbour.
_TIES = (np.array([[-2.5, -1.5, -0.5, 0.5], [1.5, 2.5, 3.5, 126.5], [127.5, -127.5, -128.5, 300.0]]) * 0.5).astype(
    np.float32
)


def _u8(*values):
    return np.array(values, np.uint8).reshape(-1) if len(values) > 1 else np.uint8(values[0])


def _codes(dtype, shape, low, high):
    return _rng.integers(low, high + 1, shape).astype(dtype)


_Q_U8 = _codes(np.uint8, (3, 4), 0, 255)
_Q_I8 = _codes(np.int8, (3, 4), -128, 127)


EXAMPLES = {
    "QuantizeLinear": [
        Example([_X, _SCALE, np.uint8(128)], versions=_ALL),
        Example([_TIES, np.float32(0.5), np.int8(0)], versions=_ALL),
        Example([_X, _SCALE], versions=_ALL),  # no zero point: uint8
        Example(
            [_X, np.array([0.02, 0.05, 0.1, 0.2], np.float32), np.array([0, -3, 5, 127], np.int8)],
            {"axis": 1},
            versions=_AXIS,
        ),
        Example(
            [_X, np.array([0.05, 0.1, 0.02], np.float32), np.array([10, 128, 250], np.uint8)],
            {"axis": -2},
            versions=_AXIS,
        ),
        Example(
            [np.array([[-700, -3, 0, 5], [6, 7, 70000, 1]], np.int32), np.float32(2.0), np.int8(1)],
            versions=_SEPARATE_SCALE_TYPE,
        ),
        Example([_X, np.float32(0.01), np.zeros((), ml_dtypes.float8_e4m3fn)], versions=_FLOAT8),
        Example([_X * 1000, np.float32(0.01), np.zeros((), ml_dtypes.float8_e5m2)], versions=_FLOAT8),
        # Overflow without saturation: inf (float8e5m2); NaN (the fnuz types) is tested elsewhere (NaN != NaN).
        Example([_X * 1e4, np.float32(0.01), np.zeros((), ml_dtypes.float8_e5m2)], {"saturate": 0}, versions=_FLOAT8),
        Example([_X, np.float32(0.02), np.zeros((), ml_dtypes.float8_e4m3fnuz)], versions=_FLOAT8),
        Example([_X * 1e6, np.float32(0.01), np.zeros((), ml_dtypes.float8_e5m2fnuz)], versions=_FLOAT8),
        Example([_X.astype(np.float16), np.float16(0.25), np.int8(-2)], versions=_FLOAT8),
        Example(
            [
                _X,
                np.array([[0.1, 0.3], [0.2, 0.05], [1.0, 0.02]], np.float32),
                np.array([[0, 1], [2, 3], [200, 4]], np.uint8),
            ],
            {"axis": 1, "block_size": 2},
            versions=_BLOCKED,
        ),
        Example(
            [
                np.ones((2, 5, 2), np.float32) * np.arange(5, dtype=np.float32).reshape(1, 5, 1),
                np.array([[[0.5, 1.0]], [[2.0, 0.25]]], np.float32),
            ],
            {"axis": 1, "block_size": 8},
            versions=_BLOCKED,
        ),
        Example([_X * 1000, np.float32(0.5)], {"output_dtype": 5}, versions=_BLOCKED),  # int16
        Example([_X * 1000, np.float32(0.5), np.array(30000, np.uint16)], versions=_BLOCKED),
        Example([_X, np.float32(0.5), np.array(1, ml_dtypes.int4)], versions=_BLOCKED),
        Example([_X, np.float32(0.5), np.array(3, ml_dtypes.uint4)], versions=_BLOCKED),
        Example([_X, np.float32(2.0), np.array(0, ml_dtypes.int2)], versions=(25, 28)),
        Example([_X, np.float32(2.0)], {"output_dtype": 25}, versions=(25, 28)),  # uint2
        Example([_X, np.float32(0.5), np.zeros((), ml_dtypes.float4_e2m1fn)], versions=_PRECISION),
        Example([_X.astype(np.float16), np.float32(0.3), np.uint8(7)], {"precision": 1}, versions=_PRECISION),
        Example([_X, np.float16(0.3), np.uint8(7)], versions=_PRECISION),  # the division in float16
        Example([_X, np.array(0.25, ml_dtypes.float8_e8m0fnu), np.int8(0)], versions=(24, 25, 28)),
    ],
    "DequantizeLinear": [
        Example([_Q_U8, _SCALE, np.uint8(128)], versions=_ALL),
        Example([_Q_I8, _SCALE], versions=_ALL),
        Example([_codes(np.int32, (3, 4), -(2**20), 2**20), np.float32(0.001)], versions=_ALL),
        Example(
            [_Q_I8, np.array([0.02, 0.05, 0.1, 0.2], np.float32), np.array([0, -3, 5, 127], np.int8)],
            {"axis": 1},
            versions=_AXIS,
        ),
        Example(
            [_Q_U8, np.array([0.1, 0.2, 0.3], np.float16), np.array([1, 2, 3], np.uint8)], {"axis": 0}, versions=_FLOAT8
        ),
        Example([_X.astype(ml_dtypes.float8_e4m3fn), np.float32(2.0)], versions=_FLOAT8),
        Example(
            [_X.astype(ml_dtypes.float8_e5m2), np.float32(0.5), np.zeros((), ml_dtypes.float8_e5m2)], versions=_FLOAT8
        ),
        Example(
            [
                _codes(ml_dtypes.int4, (3, 4), -8, 7),
                np.array([[0.1, 0.3], [0.2, 0.05], [1.0, 0.02]], np.float32),
                np.array([[0, 1], [-2, 3], [7, -8]], ml_dtypes.int4),
            ],
            {"axis": 1, "block_size": 2},
            versions=_BLOCKED,
        ),
        Example(
            [_codes(ml_dtypes.uint4, (3, 4), 0, 15), np.float32(0.5), np.array(8, ml_dtypes.uint4)], versions=_BLOCKED
        ),
        Example([_codes(np.uint16, (3, 4), 0, 65535), np.float32(1e-3), np.array(32768, np.uint16)], versions=_BLOCKED),
        Example([_codes(np.int16, (3, 4), -32768, 32767), np.float32(1e-3)], versions=_BLOCKED),
        Example([_Q_U8, np.float32(0.1), np.uint8(100)], {"output_dtype": 10}, versions=_PRECISION),  # float16
        Example([_X.astype(ml_dtypes.float4_e2m1fn), np.float32(3.0)], versions=_PRECISION),
        Example(
            [_codes(ml_dtypes.int2, (3, 4), -2, 1), np.float32(3.0), np.array(-1, ml_dtypes.int2)], versions=(25, 28)
        ),
        Example([_codes(ml_dtypes.uint2, (3, 4), 0, 3), np.float32(3.0)], versions=(25, 28)),
        Example([_Q_I8, np.array(0.25, ml_dtypes.float8_e8m0fnu)], {"output_dtype": 1}, versions=(24, 25, 28)),
    ],
    "DynamicQuantizeLinear": [
        Example([_X]),
        Example([np.abs(_X) + 1]),  # all positive: the range starts at 0
        Example([-np.abs(_X) - 1]),  # all negative: the zero point saturates at 255
    ],
    "MatMulInteger": [
        Example([_codes(np.uint8, (4, 3), 0, 255), _codes(np.uint8, (3, 2), 0, 255), np.uint8(12), np.uint8(200)]),
        Example(
            [
                _codes(np.int8, (2, 4, 3), -128, 127),
                _codes(np.uint8, (3, 5), 0, 255),
                np.array([[1], [-2], [3], [127]], np.int8),
                np.array([0, 1, 2, 128, 255], np.uint8),
            ]
        ),
        Example([_codes(np.uint8, (3,), 0, 255), _codes(np.int8, (2, 3, 2), -128, 127)]),
    ],
    "ConvInteger": [
        Example(
            [
                _codes(np.uint8, (1, 2, 5, 5), 0, 255),
                _codes(np.uint8, (3, 2, 3, 3), 0, 255),
                np.uint8(100),
                np.uint8(7),
            ],
            {"pads": [1, 0, 1, 2], "strides": [2, 1]},
        ),
        Example(
            [
                _codes(np.int8, (2, 4, 6, 5), -128, 127),
                _codes(np.int8, (4, 2, 2, 2), -128, 127),
                np.int8(-3),
                np.array([0, 1, -5, 127], np.int8),
            ],
            {"group": 2, "dilations": [2, 1], "auto_pad": "SAME_UPPER"},
        ),
        Example([_codes(np.uint8, (1, 3, 7), 0, 255), _codes(np.int8, (2, 3, 3), -128, 127)], {"auto_pad": "VALID"}),
    ],
    "QLinearMatMul": [
        Example(
            [
                _codes(np.uint8, (4, 3), 0, 255),
                np.float32(0.02),
                np.uint8(113),
                _codes(np.uint8, (3, 2), 0, 255),
                np.float32(0.005),
                np.uint8(114),
                np.float32(0.03),
                np.uint8(118),
            ]
        ),
        Example(
            [
                _codes(np.int8, (2, 4, 3), -128, 127),
                np.array([[0.01], [0.02], [0.03], [0.04]], np.float32),
                np.array([[1], [0], [-1], [5]], np.int8),
                _codes(np.uint8, (3, 5), 0, 255),
                np.array([0.01, 0.02, 0.005, 0.03, 0.04], np.float32),
                np.array([100, 110, 120, 130, 140], np.uint8),
                np.float32(0.5),
                np.int8(-3),
            ]
        ),
        Example(
            [
                _codes(np.uint8, (4, 3), 0, 255),
                np.float16(0.02),
                np.uint8(113),
                _codes(np.int8, (3, 2), -128, 127),
                np.float16(0.005),
                np.int8(-4),
                np.float16(0.03),
                np.uint8(118),
            ],
            versions=(21,),
        ),
    ],
    "QLinearConv": [
        Example(
            [
                _codes(np.uint8, (1, 2, 5, 5), 0, 255),
                np.float32(0.02),
                np.uint8(120),
                _codes(np.uint8, (3, 2, 3, 3), 0, 255),
                np.float32(0.004),
                np.uint8(128),
                np.float32(0.5),
                np.uint8(100),
            ],
            {"pads": [1, 1, 1, 1]},
        ),
        Example(
            [
                _codes(np.int8, (1, 4, 6, 5), -128, 127),
                np.float32(0.01),
                np.int8(3),
                _codes(np.int8, (4, 2, 2, 2), -128, 127),
                np.array([0.01, 0.002, 0.004, 0.02], np.float32),
                np.array([0, 1, -2, 3], np.int8),
                np.float32(0.2),
                np.int8(-5),
                _codes(np.int32, (4,), -5000, 5000),
            ],
            {"group": 2, "strides": [2, 2]},
        ),
    ],
    "BitCast": [
        Example([_X], {"to": 6}),  # float32 -> int32
        Example([_Q_I8], {"to": 2}),  # int8 -> uint8
        Example([_X.astype(np.float16)], {"to": 16}),  # float16 -> bfloat16
        Example([_X > 0], {"to": 2}),  # bool -> uint8
        Example([_codes(ml_dtypes.int4, (3, 4), -8, 7)], {"to": 21}),  # int4 -> uint4
    ],
}
