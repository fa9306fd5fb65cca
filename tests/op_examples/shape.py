"""Examples of the shape ops: Shape, Size, Reshape, Concat, Split, Squeeze, Unsqueeze,
Transpose, Expand, Tile, Range, ConstantOfShape, EyeLike, Cast and CastLike.

onnx.reference has no Reshape-1, Split-1 or Tile-1, reads Cast-1's `to` as a code (not the
type name that version takes) and refuses Concat-1 without `axis`, so no example targets them.
Casts from and to string are not here: the table feeds every input to JAX as well, and
onnx.reference returns numpy `<U` strings where jaxonnx returns object arrays of `str`.
"""

import numpy as np
from onnx import TensorProto
from onnx.numpy_helper import from_array

from tests.op_examples._example import Example

_rng = np.random.default_rng(7)
_X = _rng.standard_normal((3, 4, 5)).astype(np.float32)
_Y = _rng.standard_normal((2, 3)).astype(np.float32)
_ONES = _rng.standard_normal((3, 1, 5, 1)).astype(np.float32)
_NOT_1 = tuple(range(2, 29))  # every version but the first
_FLOAT8 = tuple(range(19, 29))  # the versions with float8 types

EXAMPLES = {
    "Shape": [
        Example([_X], grad=False),
        Example([_X], {"start": -2}, grad=False),
        Example([_X], {"start": 1, "end": -1}, grad=False),
    ],
    "Size": [Example([_X], grad=False)],
    "Reshape": [
        Example([_X, np.array([0, -1])], versions=_NOT_1),
        Example([_X, np.array([5, 1, 12])], versions=_NOT_1),
        Example([np.zeros((0, 3), np.float32), np.array([3, 0])], {"allowzero": 1}, grad=False),
    ],
    "Concat": [
        Example([_X, _X[:, :2], _X[:, :1]], {"axis": 1}),
        Example([_Y, _Y * 2], {"axis": -1}, versions=(11, 13)),
    ],
    "Split": [
        Example([_X, np.array([1, 2])], {"axis": 0}, versions=(13, 18)),
        Example([_X], {"axis": -1, "num_outputs": 2}),
        Example([_X], {"axis": 2, "split": [2, 0, 3]}, versions=(2, 11)),
    ],
    "Squeeze": [
        Example([_ONES, np.array([1, -1])], versions=(13, 21, 23, 24, 25)),
        Example([_ONES], {"axes": [3]}),
        Example([_ONES]),
    ],
    "Unsqueeze": [
        Example([_Y, np.array([-1, 0])], versions=(13, 21, 23, 24, 25)),
        Example([_Y], {"axes": [0, 3]}),
    ],
    "Transpose": [Example([_X], {"perm": [1, 2, 0]}), Example([_X])],
    "Expand": [
        Example([_X[:, :1], np.array([2, 1, 1, 5])]),
        Example([_Y, np.array([3])]),
    ],
    "Tile": [Example([_Y, np.array([2, 3])], versions=(6, 13))],
    "Range": [
        Example([np.float32(1.0), np.float32(5.0), np.float32(0.75)]),
        Example([np.int64(10), np.int64(-3), np.int64(-4)]),
        Example([np.float16(1.0), np.float16(9.0), np.float16(1.5)], versions=(27,)),
    ],
    "ConstantOfShape": [
        Example([np.array([2, 3])], {"value": from_array(np.array([2.5], np.float32))}),
        Example([np.array([4])], {"value": from_array(np.array([-7], np.int64))}),
        Example([np.array([], np.int64)]),
    ],
    "EyeLike": [
        Example([_Y]),
        Example([np.zeros((4, 3), np.int32)], {"k": -1, "dtype": TensorProto.DOUBLE}),
        Example([_Y], {"k": 2, "dtype": TensorProto.BOOL}),
        Example([_Y], {"k": 5}),  # past the last column: all zeros
    ],
    "Cast": [
        Example([_Y], {"to": TensorProto.DOUBLE}, versions=_NOT_1),
        Example([_Y * 3], {"to": TensorProto.INT32}, versions=_NOT_1, grad=False),
        Example([_Y], {"to": TensorProto.FLOAT16}, versions=_NOT_1, grad=False),
        Example([_Y * 300], {"to": TensorProto.FLOAT8E4M3FN}, versions=_FLOAT8, grad=False),
        Example([_Y * 1e5], {"to": TensorProto.FLOAT8E5M2, "saturate": 0}, versions=_FLOAT8, grad=False),
        Example([np.abs(_Y) * 3], {"to": TensorProto.FLOAT8E8M0, "round_mode": "nearest"}, grad=False),
        Example([np.array([-20, -3, 0, 7, 200], np.int16)], {"to": TensorProto.INT8}, versions=_NOT_1),
    ],
    "CastLike": [
        Example([_Y, np.zeros(1, np.float64)]),
        Example([_Y * 3, np.zeros(1, np.int8)], grad=False),
        Example([_Y * 300, np.zeros(1, np.dtype("float8_e4m3fnuz"))], versions=_FLOAT8, grad=False),
        Example([_Y * 1e5, np.zeros(1, np.dtype("float8_e5m2"))], {"saturate": 0}, versions=_FLOAT8, grad=False),
    ],
}
