"""Examples of the ops that take subgraphs (If, Loop, Scan): the subgraphs as Python
functions, as the graph runner hands them to the ops, with numpy oracles."""

from __future__ import annotations

import numpy as np

from tests.op_examples._example import Example

_x = np.array([0.5, -1.0, 2.0], np.float32)


def _then():
    return (np.array([1.0, 2.0], np.float32),)


def _else():
    return (np.array([3.0, 4.0], np.float32),)


def _loop_body(i, cond, value):
    return cond, value * np.float32(1.5) + i.astype(np.float32)


def _loop_reference(M, cond, value, *, body):
    for i in range(int(M)):
        _, value = body(np.array(i, np.int64), np.array(True), value)
    return [value]


def _scan_body(state, x):
    return state + x, state * x


def _scan_reference(state, xs, **_):
    ys = []
    for x in xs:
        state, y = _scan_body(state, x)
        ys.append(y)
    return [state, np.stack(ys)]


EXAMPLES = {
    "If": [
        Example(
            [np.array(True)],
            {"then_branch": _then, "else_branch": _else},
            grad=False,
            reference=lambda cond, **a: list((a["then_branch"] if cond else a["else_branch"])()),
        ),
        Example(
            [np.array([False])],
            {"then_branch": _then, "else_branch": _else},
            grad=False,
            reference=lambda cond, **a: list((a["then_branch"] if cond.all() else a["else_branch"])()),
        ),
    ],
    "Loop": [
        Example([np.array(3, np.int64), None, _x], {"body": _loop_body}, reference=_loop_reference, vmap=False),
    ],
    "Scan": [
        Example(
            [_x, np.stack([_x, 2 * _x, -_x])],
            {"body": _scan_body, "num_scan_inputs": 1},
            versions={9, 11, 16, 19, 21, 23, 24, 25},
            reference=_scan_reference,
        ),
    ],
}
