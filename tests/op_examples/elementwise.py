"""Examples of the elementwise ops: arithmetic, math, activations, comparisons, logic.

Float values stay away from the kinks (0 for Relu/Abs, ties for Max/Min, halves for Round,
integers for Floor/Ceil, the jumps of Mod) so numeric gradients are meaningful; divisors
and logarithm arguments stay away from 0. Versions 1 and 6 of the binary ops take the
second input broadcast onto the first only with ``broadcast=1`` (onnx.reference knows no
``axis``, so the legacy examples use suffix matching).
"""

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(7)


def _away_from_zero(shape, low=0.3, high=2.0):
    magnitude = _rng.uniform(low, high, shape)
    return (magnitude * _rng.choice([-1.0, 1.0], shape)).astype(np.float32)


_A = _away_from_zero((3, 4))
_B = _away_from_zero((4,))
_B34 = _away_from_zero((3, 4))
_POSITIVE = _rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
_I = _rng.integers(-20, 20, (3, 4)).astype(np.int64)
_J = np.array([3, -4, 5, -7], np.int64)  # no zeros: integer division by zero has no reference answer
_HALVES = np.array([[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]], np.float32)
_OFF_INTEGERS = np.array([[-2.7, -1.2, -0.4], [0.3, 1.6, 2.2]], np.float32)
_SPECIAL = np.array([-np.inf, -1.5, np.nan, 0.0, 2.0, np.inf], np.float32)
_UNIT = _rng.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)  # inside (-1, 1)
_MASK_A = _rng.random((3, 4)) > 0.5
_MASK_B = _rng.random((4,)) > 0.5


def _binary_arithmetic():
    return [
        Example([_A, _B], versions=(7, 13, 14)),  # numpy broadcasting
        Example([_A, _B], {"broadcast": 1}, versions=(1, 6)),  # the legacy suffix match
        Example([_A, _B34], versions=(1, 6)),  # equal shapes need no attribute
        Example([_I, _J], versions=(7, 13, 14)),
        Example([_I, _J], {"broadcast": 1}, versions=(6,)),
    ]


def _comparison(modern_versions, integer_versions):
    return [
        Example([_A, _B], versions=modern_versions),
        Example([_A, _B], {"broadcast": 1}, versions=(1,)),
        Example([_I, _J], versions=integer_versions),
    ]


def _logical():
    return [Example([_MASK_A, _MASK_B], versions=(7,)), Example([_MASK_A, _MASK_B], {"broadcast": 1}, versions=(1,))]


EXAMPLES = {
    "Add": _binary_arithmetic(),
    "Sub": _binary_arithmetic(),
    "Mul": _binary_arithmetic(),
    "Div": [
        *_binary_arithmetic(),
        Example(
            [np.array([-7, 7, -7, 7, 6, -6], np.int32), np.array([2, 2, -2, -2, 3, 4], np.int32)], versions=(7, 13, 14)
        ),
    ],
    "Pow": [
        Example([_POSITIVE, _A]),  # equal shapes: also Pow-1 (onnx.reference's Pow-1 has no `broadcast`)
        Example([_POSITIVE, _B], versions=(7, 12, 13, 15)),
        Example([_A, np.array([2, 3, -1, 0], np.int64)], versions=(12, 13, 15)),
        Example([_POSITIVE.astype(np.float64), np.float32(1.5) * np.ones(4, np.float32)], versions=(12, 13, 15)),
        # Negative integer exponents: numpy (so onnx.reference) refuses them; see `pow`'s docstring.
        Example(
            [np.array([2, -3, 4, 1, -1, 5], np.int64), np.array([3, 3, 2, 7, 3, 0], np.int64)], versions=(12, 13, 15)
        ),
        Example(
            [np.array([2, 3, 9], np.int32), np.array([0.5, 2.0, 0.5], np.float32)], versions=(12, 13, 15), grad=False
        ),
    ],
    "Mod": [
        Example([_I, _J]),
        Example([_I, _J], {"fmod": 1}),
        Example([np.array([250, 7, 9], np.uint8), np.array([3, 4, 5], np.uint8)]),
        Example([_A * np.float32(3.1), _B], {"fmod": 1}),
        Example([_A * np.float32(3.1), _B], {"fmod": 0}, versions=(28,)),
    ],
    "Neg": [Example([_A]), Example([_I], versions=(6, 13))],
    "Abs": [Example([_A]), Example([_I], versions=(6, 13))],
    "Sqrt": [Example([_POSITIVE])],
    "Reciprocal": [Example([_A])],
    "Exp": [Example([_A])],
    "Log": [Example([_POSITIVE])],
    "Sin": [Example([_A])],
    "Cos": [Example([_A])],
    "Floor": [Example([_OFF_INTEGERS])],
    "Ceil": [Example([_OFF_INTEGERS])],
    "Round": [Example([_HALVES], grad=False), Example([_OFF_INTEGERS])],
    "Sign": [Example([_A]), Example([np.array([-3, 0, 5], np.int32)])],
    "Erf": [Example([_A]), Example([np.array([-2, 0, 3], np.int32)], versions=(9,))],
    "Tanh": [Example([_A])],
    "Sigmoid": [Example([_A])],
    "HardSigmoid": [Example([_A]), Example([_A * np.float32(3)], {"alpha": 0.3, "beta": 0.4})],
    "HardSwish": [Example([_A * np.float32(2)])],
    "Relu": [Example([_A]), Example([np.array([-3, 0, 5], np.int32)], versions=(14,))],
    "LeakyRelu": [Example([_A]), Example([_A], {"alpha": 0.2})],
    "Elu": [Example([_A]), Example([_A], {"alpha": 0.7})],
    # onnx.reference gives Selu-1 the defaults of Selu-6 (Selu-1's own differ in the 6th digit).
    "Selu": [Example([_A], versions=(6, 22)), Example([_A], {"alpha": 1.5, "gamma": 2.0})],
    "Softplus": [Example([_A])],
    "Gelu": [Example([_A]), Example([_A], {"approximate": "tanh"})],
    "Clip": [
        Example([_A], {"min": -0.5, "max": 0.8}, versions=(6,)),
        Example([_A, np.float32(-0.5), np.float32(0.8)], versions=(11, 12, 13)),
        Example([_A, None, np.float32(0.8)], versions=(11, 12, 13)),
        Example([_A, np.float32(1.0), np.float32(-1.0)], versions=(11, 12, 13)),  # min > max: all max
        Example([_I, np.int64(-5), np.int64(5)], versions=(12, 13)),
    ],
    "Max": [
        Example([_A, _B34, _A * np.float32(0.5)], versions=(1, 6, 8, 12, 13)),
        Example([_A, _B, np.float32(0.1) * np.ones((3, 1), np.float32)], versions=(8, 12, 13)),
        Example([_I, _J], versions=(12, 13)),
        Example([_A]),
    ],
    "Min": [
        Example([_A, _B34, _A * np.float32(0.5)], versions=(1, 6, 8, 12, 13)),
        Example([_A, _B, np.float32(0.1) * np.ones((3, 1), np.float32)], versions=(8, 12, 13)),
        Example([_I, _J], versions=(12, 13)),
    ],
    "Sum": [
        Example([_A, _B34, _A], versions=(1, 6, 8, 13)),
        Example([_A, _B, np.ones((3, 1), np.float32)], versions=(8, 13)),
        Example([_A]),
    ],
    "Mean": [
        Example([_A, _B34, _A], versions=(1, 6, 8, 13)),
        Example([_A, _B, np.ones((3, 1), np.float32)], versions=(8, 13)),
    ],
    "Equal": [
        Example([_I, _I[0]], versions=(7, 11, 13, 19)),  # row 0 equals itself
        Example([_A, np.where(_MASK_A, _A, _B34)], versions=(11, 13, 19)),  # equal where the mask is
        Example([_I, _I], {"broadcast": 0}, versions=(1,)),
        Example([_I, _J], {"broadcast": 1}, versions=(1,)),
        Example([_MASK_A, _MASK_B], versions=(7, 11, 13, 19)),
    ],
    "Less": _comparison((7, 9, 13), (9, 13)),
    "LessOrEqual": [Example([_A, _B]), Example([_I, _J])],
    "Greater": _comparison((7, 9, 13), (9, 13)),
    "GreaterOrEqual": [Example([_A, _B]), Example([_I, _J])],
    "And": _logical(),
    "Or": _logical(),
    "Xor": _logical(),
    "Not": [Example([_MASK_A])],
    "IsNaN": [Example([_SPECIAL])],
    "IsInf": [
        Example([_SPECIAL]),
        Example([_SPECIAL], {"detect_negative": 0}),
        Example([_SPECIAL], {"detect_positive": 0}),
    ],
    # The inverse functions inside their domains (numeric gradients need a neighbourhood).
    "Tan": [Example([_A * np.float32(0.6)])],
    "Asin": [Example([_UNIT])],
    "Acos": [Example([_UNIT])],
    "Atan": [Example([_A])],
    "Sinh": [Example([_A])],
    "Cosh": [Example([_A])],
    "Asinh": [Example([_A])],
    "Acosh": [Example([_POSITIVE + np.float32(1)])],
    "Atanh": [Example([_UNIT])],
    # Integer ops: no gradient (the test only differentiates float inputs).
    "BitShift": [
        Example([np.array([16, 255, 7, 1], np.uint8), np.array([1, 7, 8, 9], np.uint8)], {"direction": "RIGHT"}),
        Example([np.array([16, 255, 7, 1], np.uint8), np.array([1, 7, 8, 9], np.uint8)], {"direction": "LEFT"}),
        Example([np.array([[3], [70000]], np.uint32), np.array([0, 4, 31, 32], np.uint32)], {"direction": "LEFT"}),
        Example(
            [np.array([-8, -1, 64, -128, 5], np.int8), np.array([1, 3, 1, 8, 0], np.int8)],
            {"direction": "RIGHT"},
            versions=(28,),
        ),
        Example(
            [np.array([-8, -1, 64, -128, 5], np.int8), np.array([1, 3, 1, 8, -1], np.int8)],
            {"direction": "LEFT"},
            versions=(28,),
        ),
        Example(
            [np.array([-(2**40), 3], np.int64), np.array([63, 64], np.int64)], {"direction": "RIGHT"}, versions=(28,)
        ),
    ],
    "BitwiseAnd": [Example([_I, _J]), Example([np.array([200, 15], np.uint8), np.array([[255], [7]], np.uint8)])],
    "BitwiseOr": [Example([_I, _J]), Example([np.array([200, 15], np.uint8), np.array([[255], [7]], np.uint8)])],
    "BitwiseXor": [Example([_I, _J]), Example([np.array([200, 15], np.uint8), np.array([[255], [7]], np.uint8)])],
    "BitwiseNot": [Example([_I]), Example([np.array([0, 200, 255], np.uint8)])],
    "Celu": [Example([_A]), Example([_A], {"alpha": 2.0})],
    "Mish": [Example([_A]), Example([np.array([-30.0, -5.0, 5.0, 30.0], np.float32)])],
    "Softsign": [Example([_A])],
    "ThresholdedRelu": [Example([_A]), Example([_A], {"alpha": 0.5})],
    "Swish": [Example([_A]), Example([_A], {"alpha": 0.7})],
    "SwiGLU": [Example([_A, _B34]), Example([_A, _B34], {"alpha": 1.702})],
    "PRelu": [
        Example([_A, _B]),  # slope along the last dim: every version
        Example([_A, _B34]),
        Example([_A, np.float32([0.25])]),
        Example([_A.reshape(3, 4, 1), np.array([[0.1], [0.2], [0.3], [0.4]], np.float32)], versions=(7, 9, 16)),
        Example([np.array([-3, 4, -5], np.int32), np.array([2], np.int32)], versions=(9, 16)),
    ],
    "Shrink": [
        Example([_A]),
        Example([_A], {"bias": 0.3, "lambd": 1.0}),
        Example([_I], {"bias": 1.5, "lambd": 2.0}),
    ],
}
