"""Examples of the random ops (RandomNormal, RandomUniform, their Like forms, Multinomial, Bernoulli).

A draw cannot equal onnx.reference's (numpy's generator), so these examples take
distributions with one value (``scale=0``, ``low == high``, probabilities 0 and 1, one
class per row): they check the shape, the dtype and the affine part exactly. Every example
has a ``seed``, so that vmap draws what a loop of calls draws. The distributions themselves
are checked in tests/test_random_and_training_ops.py.
"""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(0)
_INTS = _rng.integers(-3, 3, (2, 3)).astype(np.int64)
_FLOATS = _rng.standard_normal((3, 2))
_PROBABILITIES = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], np.float32)
_ONE_CLASS = np.where(np.eye(4, dtype=bool)[[1, 3, 0]], np.float32(0.5), np.float32(-np.inf))  # log-probabilities


def _one_class_reference(input, *, sample_size=1, dtype=6, seed=None):
    """Multinomial of rows with one class of nonzero probability: that class, every draw."""
    classes = np.argmax(input, axis=1)[:, None]
    return [np.repeat(classes, sample_size, axis=1).astype(np.int64 if dtype == 7 else np.int32)]


EXAMPLES = {
    "RandomNormal": [
        Example([], {"shape": [2, 3], "mean": 2.5, "scale": 0.0, "seed": 1.0}),
        Example([], {"shape": [4], "mean": -1.0, "scale": 0.0, "dtype": 11, "seed": 2.0}),
        Example([], {"shape": [1, 2, 1], "mean": 0.5, "scale": 0.0, "dtype": 10, "seed": 3.0}),
        Example([], {"shape": [3], "mean": 0.5, "scale": 0.0, "dtype": 16, "seed": 3.0}, versions=(22,)),
    ],
    "RandomNormalLike": [
        Example([_INTS], {"dtype": 1, "mean": -1.0, "scale": 0.0, "seed": 0.0}),
        Example([_FLOATS], {"mean": 3.0, "scale": 0.0, "seed": 5.0}),  # the input's type: double
        Example([_FLOATS.astype(np.float16)], {"scale": 0.0, "seed": 5.0}),
    ],
    "RandomUniform": [
        Example([], {"shape": [2, 3], "low": 1.5, "high": 1.5, "seed": 1.0}),
        Example([], {"shape": [2], "low": -2.0, "high": -2.0, "dtype": 11, "seed": 4.0}),
        Example([], {"shape": [2, 2], "low": 0.25, "high": 0.25, "dtype": 16, "seed": 4.0}, versions=(22,)),
    ],
    "RandomUniformLike": [
        Example([_INTS], {"dtype": 11, "low": 7.0, "high": 7.0, "seed": 0.0}),
        Example([_FLOATS.astype(np.float32)], {"low": -0.5, "high": -0.5, "seed": 9.0}),
    ],
    "Multinomial": [
        Example([_ONE_CLASS], {"sample_size": 5, "seed": 0.0}, reference=_one_class_reference),
        Example([_ONE_CLASS.astype(np.float64)], {"dtype": 7, "seed": 1.0}, reference=_one_class_reference),
    ],
    "Bernoulli": [
        Example([_PROBABILITIES], {"seed": 0.0}),
        Example([_PROBABILITIES.astype(np.float64)], {"dtype": 9, "seed": 1.0}),
        Example([_PROBABILITIES.astype(np.float16)], {"dtype": 6, "seed": 2.0}),
    ],
}
