"""Examples of the recurrent ops (LSTM, GRU, RNN), checked against onnx.reference (which
runs the default activations; sequence_lens, clip and other activations are checked against
onnxruntime in tests/test_recurrent.py)."""

from __future__ import annotations

import numpy as np

from tests.op_examples._example import Example

_rng = np.random.default_rng(11)


def _f(*shape):
    return (_rng.standard_normal(shape) * 0.5).astype(np.float32)


def _examples(gates: int, *, peepholes: bool = False, states: int = 1):
    seq, batch, inputs, hidden = 4, 2, 3, 5
    x = _f(seq, batch, inputs)
    one = [x, _f(1, gates * hidden, inputs), _f(1, gates * hidden, hidden)]
    two = [x, _f(2, gates * hidden, inputs), _f(2, gates * hidden, hidden), _f(2, 2 * gates * hidden), None]
    two += [_f(2, batch, hidden)] * states
    if peepholes:
        two.append(_f(2, 3 * hidden))
    return [
        Example(one, {"hidden_size": hidden}, rtol=1e-4, atol=1e-5),
        Example(two, {"hidden_size": hidden, "direction": "bidirectional"}, rtol=1e-4, atol=1e-5),
        Example([np.swapaxes(x, 0, 1), *one[1:]], {"hidden_size": hidden, "layout": 1}, rtol=1e-4, atol=1e-5),
    ]


EXAMPLES = {
    "LSTM": _examples(4, peepholes=True, states=2),
    "GRU": _examples(3)
    + [
        Example(
            _examples(3)[0].inputs,
            {"hidden_size": 5, "linear_before_reset": 1},
            versions={3, 7, 14, 22},
            rtol=1e-4,
            atol=1e-5,
        )
    ],
    # onnx.reference has no RNN-1 (version 1 only adds `output_sequence`, which changes nothing here).
    "RNN": [Example(e.inputs, e.attributes, versions={7, 14, 22}, rtol=e.rtol, atol=e.atol) for e in _examples(1)],
}
