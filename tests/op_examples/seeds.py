"""Examples of the seed ops (Compress, Flatten, GatherElements, Where, Slice) and Constant/Identity."""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((3, 4, 5)).astype(np.float32)

EXAMPLES = {
    "Compress": [
        Example([_X, np.array([True, False, True])], {"axis": 0}),
        Example([_X, np.array([False, True, True, False])], {"axis": -2}, versions=(11, 28)),
        Example([_X, np.array([True, False] * 5)]),
    ],
    "Flatten": [Example([_X], {"axis": 2}), Example([_X], {"axis": 0})],
    "GatherElements": [
        Example([_X, _rng.integers(-5, 5, (3, 4, 2)).astype(np.int64)], {"axis": 2}),
        Example([_X, _rng.integers(0, 3, (2, 4, 5)).astype(np.int32)], {"axis": 0}),
    ],
    "Where": [Example([_X > 0, _X, np.float32(-1.0) * np.ones((4, 1), np.float32)])],
    "Slice": [
        Example([_X], {"starts": [1, 0], "ends": [3, -1], "axes": [0, 2]}, versions=(1,)),
        Example([_X, np.array([1, 0]), np.array([3, -1]), np.array([0, 2])], versions=(10,)),
        Example(
            [_X, np.array([-1, 4]), np.array([-(2**63), 0]), np.array([1, -1]), np.array([-2, -1])], versions=(11, 13)
        ),
    ],
    "Constant": [
        Example([], {"value_floats": [1.0, 2.5]}, versions=(12, 13, 19, 21, 23, 24, 25), grad=False, vmap=False)
    ],
    "Identity": [Example([_X])],
}
