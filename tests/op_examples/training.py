"""Examples of the ops of ai.onnx.preview.training: the optimizers (Adagrad, Adam, Momentum)
and Gradient, whose computation comes as a function (as the graph runner hands it over)."""

import jax.numpy as jnp
import numpy as np

from tests.op_examples._example import Example

DOMAIN = "ai.onnx.preview.training"

_rng = np.random.default_rng(0)


def _tensors(*shapes, dtype=np.float32):
    return [_rng.standard_normal(shape).astype(dtype) for shape in shapes]


def _states(*shapes, dtype=np.float32):  # second moments are not negative
    return [np.abs(x) for x in _tensors(*shapes, dtype=dtype)]


_R = np.array(0.1, np.float32)
_STEP_0, _STEP_3 = np.array(0, np.int64), np.array(3, np.int64)


def _computation(x, w, z):  # y = sum(tanh(x @ w) * z), a function of xs = (x, w) and zs = (z,)
    return (jnp.sum(jnp.tanh(x @ w) * z),)


def _gradient_reference(x, w, z, **_):
    a = np.tanh(x @ w)
    upstream = z * (1 - a * a)
    return [upstream @ w.T, x.T @ upstream]


EXAMPLES = {
    "Gradient": [
        Example(
            [*_tensors((2, 3), (3, 4)), _tensors((2, 4))[0]],
            {"xs": ["x", "w"], "zs": ["z"], "y": "y", "computation": _computation},
            reference=_gradient_reference,
            rtol=1e-5,
            atol=1e-6,
        ),
    ],
    "Adagrad": [
        Example([_R, _STEP_0, *_tensors((3,), (3,)), *_states((3,))]),
        Example(
            [_R, _STEP_3, *_tensors((2, 2), (3,), (2, 2), (3,)), *_states((2, 2), (3,))],
            {"decay_factor": 0.1, "epsilon": 1e-4, "norm_coefficient": 0.01},
        ),
        Example(
            [_R.astype(np.float64), _STEP_3, *_tensors((4,), (4,), dtype=np.float64), *_states((4,), dtype=np.float64)],
            {"decay_factor": 0.5},
        ),
    ],
    "Momentum": [
        Example(
            [_R, _STEP_0, *_tensors((3,), (3,), (3,))],
            {"alpha": 0.9, "beta": 0.5, "mode": "standard", "norm_coefficient": 0.01},
        ),
        Example(
            [_R, _STEP_3, *_tensors((2,), (3, 1), (2,), (3, 1), (2,), (3, 1))],
            {"alpha": 0.9, "beta": 0.5, "mode": "standard", "norm_coefficient": 0.0},
        ),
        Example(
            [_R, _STEP_3, *_tensors((2, 3), (2, 3), (2, 3))],
            {"alpha": 0.8, "beta": 0.7, "mode": "nesterov", "norm_coefficient": 0.1},
        ),
        Example(
            [_R.astype(np.float64), _STEP_0, *_tensors((3,), (3,), (3,), dtype=np.float64)],
            {"alpha": 0.8, "beta": 0.7, "mode": "nesterov", "norm_coefficient": 0.1},
        ),
    ],
    "Adam": [
        Example([_R, _STEP_0, *_tensors((3,), (3,), (3,)), *_states((3,))]),
        Example(
            [_R, _STEP_3, *_tensors((2,), (1, 3), (2,), (1, 3), (2,), (1, 3)), *_states((2,), (1, 3))],
            {"alpha": 0.8, "beta": 0.9, "epsilon": 1e-3, "norm_coefficient": 0.01, "norm_coefficient_post": 0.1},
        ),
        Example(
            [
                _R.astype(np.float64),
                _STEP_3,
                *_tensors((4,), (4,), (4,), dtype=np.float64),
                *_states((4,), dtype=np.float64),
            ],
            {"alpha": 0.5, "norm_coefficient_post": 0.2},
        ),
    ],
}
