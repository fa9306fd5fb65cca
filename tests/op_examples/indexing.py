"""Examples of the indexing ops: Gather, GatherND, ScatterND, ScatterElements, Scatter, NonZero,
Unique, Pad, OneHot, Trilu, DepthToSpace, SpaceToDepth and ReverseSequence.

Float values are distinct and scattered updates never tie with the data, so max/min
scatters have meaningful gradients; duplicate indices appear only with a reduction (with
``none`` ONNX leaves them unspecified). Pads are non-negative here: ``onnx.reference``
refuses negative pads (jaxonnx cuts them, as onnxruntime does).
"""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(7)
_X = _rng.permutation(np.arange(1, 13, dtype=np.float32)).reshape(3, 4) / 4  # distinct, no ties
_X3 = _rng.standard_normal((2, 3, 4)).astype(np.float32)
_I64 = np.int64

_ND_UPDATES = np.array([[10.5, 11.5, 12.5, 13.5], [-7.5, -8.5, -9.5, -6.5], [20.25, 0.125, -0.375, 5.5]], np.float32)
_EL_UPDATES = np.array([[4.5, -3.5, 7.25], [-2.25, 6.75, 9.5]], np.float32)


def _scatter_by_loop(data, indices, updates, axis=0):
    """An oracle for Scatter, which onnx.reference lacks: one write per element of `updates`."""
    out = data.copy()
    for position in np.ndindex(indices.shape):
        target = list(position)
        target[axis] = indices[position]
        out[tuple(target)] = updates[position]
    return [out]


def _unique_by_numpy(x, axis=None, sorted=1):
    """An oracle for Unique: onnx.reference's order of first occurrence (`sorted=0`) takes
    along axis 0 of the unflattened input, which is wrong without `axis` or off axis 0."""
    y, indices, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sorted:
        order = np.argsort(indices, kind="stable")
        position = np.argsort(order)
        indices, inverse, counts = indices[order], position[inverse], counts[order]
        y = np.take(x.reshape(-1), indices) if axis is None else np.take(x, indices, axis=axis)
    return [y, indices.astype(_I64), inverse.astype(_I64), counts.astype(_I64)]


EXAMPLES = {
    "Gather": [
        Example([_X, np.array([[2, -1], [0, 0]], _I64)], {"axis": 0}),
        Example([_X3, np.array([3, -4, 1], np.int32)], {"axis": -1}),
        Example([_X3, np.array(1, _I64)], {"axis": 1}),
    ],
    "GatherND": [
        Example([_X3, np.array([[1, -2], [0, 2], [1, 0]], _I64)]),
        Example([_X3, np.array([[[2], [0]], [[-1], [1]]], _I64)], {"batch_dims": 1}),
    ],
    "ScatterND": [
        Example([_X, np.array([[2], [0]], _I64), _ND_UPDATES[:2]]),
        Example([_X, np.array([[1, -1], [2, 0]], _I64), np.array([30.5, -40.5], np.float32)]),
        *(
            Example([_X, np.array([[0], [2], [0]], _I64), _ND_UPDATES], {"reduction": reduction}, versions=versions)
            for reduction, versions in [("add", (16, 18)), ("mul", (16, 18)), ("max", (18,)), ("min", (18,))]
        ),
    ],
    "ScatterElements": [
        Example([_X, np.array([[1, 0, 2], [2, 1, 0]], _I64), _EL_UPDATES], {"axis": 0}),
        Example([_X, np.array([[3, -4, 1], [0, 2, -1]], _I64), _EL_UPDATES], {"axis": -1}),
        *(
            Example(
                [_X, np.array([[1, 1, 0], [1, 2, 2]], _I64), _EL_UPDATES],
                {"axis": 1, "reduction": reduction},
                versions=versions,
            )
            for reduction, versions in [("add", (16, 18)), ("mul", (16, 18)), ("max", (18,)), ("min", (18,))]
        ),
    ],
    "Scatter": [
        Example([_X, np.array([[1, 0, 2], [2, 1, 0]], _I64), _EL_UPDATES], {"axis": 0}, reference=_scatter_by_loop),
        Example(
            [_X, np.array([[3, -4, 1], [0, 2, -1]], np.int32), _EL_UPDATES], {"axis": -1}, reference=_scatter_by_loop
        ),
    ],
    "NonZero": [
        Example([np.where(_X3 > 0.3, _X3, np.float32(0))]),
        Example([np.array([[True, False, True], [False, False, True]])]),
    ],
    "Unique": [
        Example([np.array([[2.5, -1.0, 2.5], [0.0, -1.0, 7.0]], np.float32)]),
        Example([np.array([[1, 3, 1, 3], [0, 2, 0, 5]], np.int32)], {"axis": 1}),
        Example([np.array([[1, 3, 1, 3], [0, 2, 0, 5]], _I64)], {"axis": -1, "sorted": 0}, reference=_unique_by_numpy),
        Example([np.array([[[4, 1], [4, 1]], [[0, 9], [4, 1]]], np.int8)], {"sorted": 0}, reference=_unique_by_numpy),
        Example([np.array([[5, 5], [1, 2], [5, 5]], np.uint16)], {"axis": 0, "sorted": 0}, reference=_unique_by_numpy),
    ],
    "Pad": [
        Example([_X], {"paddings": [1, 0, 2, 3], "value": 1.5}, versions=(1,)),
        Example([_X], {"pads": [0, 2, 1, 1], "mode": "reflect"}, versions=(2,)),
        Example([_X3, np.array([0, 1, 2, 1, 0, 3], _I64), np.array(-2.5, np.float32)]),
        Example([_X3, np.array([1, 0, 2, 2, 3, 1], _I64)], {"mode": "edge"}),
        Example([_X3, np.array([1, 2, 3, 1, 1, 2], _I64)], {"mode": "reflect"}, versions=(11, 13)),
        Example([_X3, np.array([3, 1, 2, 1], _I64), None, np.array([-1, 1], _I64)], {"mode": "reflect"}),
        Example(
            [_X3, np.array([5, 2], _I64), None, np.array([2], _I64)], {"mode": "wrap"}, versions=(19, 21, 23, 24, 25)
        ),
    ],
    "OneHot": [
        Example([np.array([[0, 3], [4, 1]], _I64), np.array(5, _I64), np.array([-1.5, 2.5], np.float32)], {"axis": 1}),
        Example(
            [np.array([1, -1, 7, -9], np.int32), np.array(4.0, np.float32), np.array([0, 3], _I64)], versions=(11, 28)
        ),
        Example(
            [np.array([[2.0, 0.0, 5.0]], np.float32), np.array(3, _I64), np.array([0.25, 1.5], np.float32)], {"axis": 0}
        ),
    ],
    "Trilu": [
        Example([_X]),
        Example([_X3, np.array(-1, _I64)], {"upper": 0}),
        Example([_X3, np.array(2, _I64)], {"upper": 1}),
    ],
    "DepthToSpace": [
        Example([_rng.standard_normal((1, 8, 2, 3)).astype(np.float32)], {"blocksize": 2}),
        Example([_rng.standard_normal((2, 4, 3, 2)).astype(np.float32)], {"blocksize": 2, "mode": "CRD"}),
    ],
    "SpaceToDepth": [
        Example([_rng.standard_normal((1, 2, 4, 6)).astype(np.float32)], {"blocksize": 2}),
        Example([_rng.standard_normal((2, 1, 3, 3)).astype(np.float32)], {"blocksize": 3, "mode": "CRD"}),
    ],
    "ReverseSequence": [
        Example([_X3, np.array([2, 0, 1], _I64)]),  # time 0, batch 1; a length of 0 keeps its entry
        Example([_X, np.array([4, 1, 3], _I64)], {"batch_axis": 0, "time_axis": 1}),
    ],
}
