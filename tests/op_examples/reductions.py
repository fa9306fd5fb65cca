"""Examples of the reductions: Reduce{Sum,Mean,Max,Min,Prod,L2}, ArgMax/ArgMin, TopK, CumSum,
Softmax/LogSoftmax and Einsum.

onnx.reference runs Softmax/LogSoftmax-1 and -11 with version 13's single-axis semantics,
so their examples at those versions normalize over the last axis, where coercing to 2-D
gives the same result.
"""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(7)
_X = _rng.standard_normal((3, 4, 5)).astype(np.float32)  # distinct values: no ties, no kinks
_M = _rng.standard_normal((3, 4)).astype(np.float32)
_P = (_rng.uniform(0.5, 1.5, (2, 3, 4)) * _rng.choice([-1, 1], (2, 3, 4))).astype(np.float32)  # away from 0
_I = _rng.integers(-9, 9, (3, 4, 5)).astype(np.int32)  # many ties
_B = _rng.integers(0, 2, (4, 3)).astype(bool)
_EMPTY = np.zeros((2, 0, 3), np.float32)
_AXES_INPUT = {"ReduceSum": 13}  # the first version with `axes` as an input; 18 for the others


def _reduce_examples(op_type, data=_X):
    first_input = _AXES_INPUT.get(op_type, 18)
    attribute_versions = tuple(v for v in (1, 11, 12, 13) if v < first_input)
    return [
        Example([data]),  # every axis, at every version
        Example([data], {"axes": [0, 2], "keepdims": 0}, versions=attribute_versions),
        Example([data], {"axes": [-1]}, versions=attribute_versions[1:]),
        Example([data, np.array([1, -1])], {"keepdims": 0}),
        Example([data, np.array([], np.int64)], {"keepdims": 1}),
        Example([data, np.array([], np.int64)], {"noop_with_empty_axes": 1}),
        Example([_I, np.array([0, 2])], {"keepdims": 0}),
        Example([_EMPTY, np.array([1])], grad=False),
    ]


EXAMPLES = {
    "ReduceSum": _reduce_examples("ReduceSum"),
    # An empty mean is undefined in onnx (numpy's mean warns, and the warning is an error here).
    "ReduceMean": _reduce_examples("ReduceMean")[:-1],
    "ReduceMax": _reduce_examples("ReduceMax") + [Example([_B, np.array([1])], versions=(20,))],
    "ReduceMin": _reduce_examples("ReduceMin") + [Example([_B, np.array([0])], {"keepdims": 0}, versions=(20,))],
    "ReduceProd": _reduce_examples("ReduceProd", _P),
    "ReduceL2": _reduce_examples("ReduceL2", _P),
    "ReduceL1": _reduce_examples("ReduceL1", _P),
    # int64 data: onnx.reference's sum of int32 squares is int64 (numpy's promotion), not T.
    "ReduceSumSquare": [
        Example([_I.astype(np.int64), *e.inputs[1:]], e.attributes) if e.inputs[0] is _I else e
        for e in _reduce_examples("ReduceSumSquare")
    ],
    # Floats only (onnx.reference refuses integers); LogSum of positive data.
    "ReduceLogSum": [e for e in _reduce_examples("ReduceLogSum", np.abs(_P)) if e.inputs[0] is not _I],
    "ReduceLogSumExp": [
        *[e for e in _reduce_examples("ReduceLogSumExp") if e.inputs[0] is not _I],
        Example([np.array([[1e4, 1e4, 0.0], [-1e4, -3e4, -2e4]], np.float32), np.array([1])]),  # no overflow
    ],
    "ArgMax": [
        Example([_X], {"axis": 1, "keepdims": 0}),
        Example([_I], {"axis": -1}, versions=(11, 12, 13)),
        Example([_I], {"axis": 2, "select_last_index": 1}),
        Example([_I], {"axis": 0, "keepdims": 0, "select_last_index": 0}),
    ],
    "ArgMin": [
        Example([_X], {"axis": 2}),
        Example([_I], {"axis": -2, "keepdims": 0}, versions=(11, 12, 13)),
        Example([_I], {"axis": 1, "keepdims": 0, "select_last_index": 1}),
    ],
    "TopK": [
        Example([_X], {"k": 3, "axis": 1}, versions=(1,)),
        Example([_X, np.array([2])]),
        Example([_X, np.array([3])], {"axis": 0}),
        Example([_X, np.array([3])], {"axis": -2, "largest": 0, "sorted": 1}),
        Example([_I, np.array([4])], {"axis": 2, "largest": 1}),  # ties: lower index first
        Example([_I, np.array([3])], {"axis": 0, "largest": 0}),
        Example([_X, np.array([0])], {"axis": 2}, grad=False),
    ],
    "CumSum": [
        Example([_X, np.array(1)]),
        Example([_X, np.array(-1, np.int64)], {"exclusive": 1}),
        Example([_X, np.array(0)], {"reverse": 1}),
        Example([_X, np.array(2)], {"exclusive": 1, "reverse": 1}),
        Example([_I, np.array(1, np.int64)], {"exclusive": 1}),
    ],
    "CumProd": [
        Example([_P, np.array(1)]),
        Example([_P, np.array(-1, np.int64)], {"exclusive": 1}),
        Example([_P, np.array(0)], {"reverse": 1}),
        Example([_P, np.array(2)], {"exclusive": 1, "reverse": 1}),
        Example([np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]], np.float32), np.array(1)]),  # zeros: exact gradient
        Example([_I, np.array(1, np.int64)], {"exclusive": 1}),
    ],
    "Softmax": [
        Example([_M]),
        Example([_X], {"axis": 2}),
        Example([_X], {"axis": -1}, versions=(11, 13)),
        Example([_X], {"axis": 0}, versions=(13,)),
        Example([np.array([[1e4, 0.0, -1e4], [3.0, 3.0, 3.0]], np.float32)], grad=False),
    ],
    "LogSoftmax": [
        Example([_M]),
        Example([_X], {"axis": 2}),
        Example([_X], {"axis": -1}, versions=(11, 13)),
        Example([_X], {"axis": 1}, versions=(13,)),
    ],
    "Hardmax": [
        Example([_M]),
        Example([_X], {"axis": 2}),
        Example([_X], {"axis": -1}, versions=(11, 13)),
        Example([_X], {"axis": 0}, versions=(13,)),
        Example([np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], np.float32)], grad=False),  # ties: the first maximum
    ],
    "Det": [
        Example([_rng.standard_normal((3, 3)).astype(np.float32)]),
        Example([_rng.standard_normal((2, 4, 4)).astype(np.float32)]),
        Example([_rng.standard_normal((2, 1, 2, 2)).astype(np.float64)]),
    ],
    "Einsum": [
        Example([_X, _rng.standard_normal((3, 5, 2)).astype(np.float32)], {"equation": "bij, bjk -> bik"}),
        Example([_M, _M], {"equation": "ij,kj"}),  # implicit output: "ik"
        Example([_rng.standard_normal((2, 3, 3)).astype(np.float32)], {"equation": "...ii->...i"}),
        Example([_X, _rng.standard_normal((5,)).astype(np.float32)], {"equation": "...j,j->..."}),
        Example([_M], {"equation": "ij->"}),
        Example([_I, _I], {"equation": "abc,abd->cd"}),
    ],
}
