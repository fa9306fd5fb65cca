"""Examples of the com.microsoft recurrent op DynamicQuantizeLSTM, with a numpy oracle
written from onnxruntime's CPU kernel (onnx.reference has no com.microsoft ops):
``tests/test_dynamic_quantize_lstm.py`` checks the op against onnxruntime itself.

The oracle computes in float32 in onnxruntime's order, so that its integer codes are the
op's: each direction quantizes X's first ``max(sequence_lens)`` steps to uint8 as one
matrix, then at each step the previous outputs of the batch (zeros where a sequence has
ended), each product exact in integers and scaled by ``a_scale * w_scale``.
"""

import numpy as np

from tests.op_examples._example import Example

DOMAIN = "com.microsoft"

_rng = np.random.default_rng(32)
_F = np.float32


def _quantized(values):
    high, low = _F(max(values.max(initial=0), 0)), _F(min(values.min(initial=0), 0))
    scale = _F(1) if high == low else _F((high - low) / _F(255))
    zero = np.rint(np.clip(-low / scale, 0, 255))
    return np.clip(np.rint(values / scale) + zero, 0, 255).astype(np.int64) - zero.astype(np.int64), scale


def _sigmoid(x):
    return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(_F)


def _dynamic_quantize_lstm(
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    W_scale=None,
    W_zero_point=None,
    R_scale=None,
    R_zero_point=None,
    *,
    hidden_size,
    direction="forward",
    clip=None,
    input_forget=0,
):
    steps, batch, _ = X.shape
    count, hidden = W.shape[0], hidden_size
    lengths = np.full(batch, steps) if sequence_lens is None else sequence_lens.astype(np.int64)
    x_codes, x_scale = _quantized(X[: lengths.max(initial=0)])
    ys, finals_h, finals_c = [], [], []
    for d in range(count):
        reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
        w = W[d].astype(np.int64) - W_zero_point[d].astype(np.int64)
        r = R[d].astype(np.int64) - R_zero_point[d].astype(np.int64)
        projection = np.zeros((steps, batch, 4 * hidden), _F)
        projection[: len(x_codes)] = (x_codes @ w).astype(_F) * _F(x_scale * W_scale[d])
        h = np.zeros((batch, hidden), _F) if initial_h is None else initial_h[d].copy()
        c = np.zeros((batch, hidden), _F) if initial_c is None else initial_c[d].copy()
        y = np.zeros((steps, batch, hidden), _F)
        bias = np.zeros(4 * hidden, _F) if B is None else B[d, : 4 * hidden] + B[d, 4 * hidden :]
        clipped = (lambda v: v) if clip is None else (lambda v: np.clip(v, -clip, clip))
        ended = np.zeros(batch, bool)
        for t in range(steps):
            h_codes, h_scale = _quantized(np.where(ended[:, None], _F(0), h))
            rows = [(lengths[b] - 1 - t if reverse else t) if t < lengths[b] else t for b in range(batch)]
            x_part = projection[rows, np.arange(batch)]
            gates = x_part + (h_codes @ r).astype(_F) * _F(h_scale * R_scale[d]) + bias
            gi, go, gf, gc = np.split(gates, 4, axis=-1)
            if P is not None:
                gi, gf = gi + P[d, :hidden] * c, gf + P[d, 2 * hidden :] * c
            i = _sigmoid(clipped(gi))
            forget = 1 - i if input_forget else _sigmoid(clipped(gf))
            new_c = forget * c + i * np.tanh(clipped(gc))
            if P is not None:
                go = go + P[d, hidden : 2 * hidden] * new_c
            new_h = _sigmoid(clipped(go)) * np.tanh(new_c)
            valid = t < lengths
            h, c = np.where(valid[:, None], new_h, h), np.where(valid[:, None], new_c, c)
            for b in np.flatnonzero(valid):
                y[rows[b], b] = new_h[b]
            ended = ~valid
        empty = (lengths == 0)[:, None]
        ys.append(y)
        finals_h.append(np.where(empty, _F(0), h))
        finals_c.append(np.where(empty, _F(0), c))
    return [np.stack(ys, axis=1), np.stack(finals_h), np.stack(finals_c)]


def _example(
    seq,
    batch,
    inputs,
    hidden,
    *,
    count=1,
    signed=True,
    per_column=False,
    bias=True,
    states=True,
    lengths=None,
    peepholes=False,
):
    columns = (count, 4 * hidden) if per_column else (count,)
    per_direction = _rng.integers(100, 150, (count,) + (1,) * (len(columns) - 1))  # onnxruntime: one per direction
    zero = np.zeros(columns, np.int8) if signed else np.broadcast_to(per_direction, columns).astype(np.uint8)
    # Codes within 32 of the zero point: the products stay moderate when test_op_table's vmap
    # check scales the scales up 25-fold, so float32 cancellation stays below its tolerance.
    first = np.asarray(zero).reshape(count, 1, -1).astype(np.int64)

    def codes(rows):
        return (first + _rng.integers(-32, 33, (count, rows, 4 * hidden))).astype(zero.dtype)

    return [
        _rng.standard_normal((seq, batch, inputs)).astype(_F),
        codes(inputs),
        codes(hidden),
        (_rng.standard_normal((count, 8 * hidden)) * 0.3).astype(_F) if bias else None,
        None if lengths is None else np.array(lengths, np.int32),
        (_rng.standard_normal((count, batch, hidden)) * 0.5).astype(_F) if states else None,
        (_rng.standard_normal((count, batch, hidden)) * 0.5).astype(_F) if states else None,
        (_rng.standard_normal((count, 3 * hidden)) * 0.3).astype(_F) if peepholes else None,
        _rng.uniform(0.002, 0.01, columns).astype(_F),
        zero,
        _rng.uniform(0.002, 0.01, columns).astype(_F),
        zero.copy(),
    ]


EXAMPLES = {
    "DynamicQuantizeLSTM": [
        # One step: the differentiable inputs (B, initial_c, P and the scales) enter smoothly
        # (the hidden state is quantized only for the next step), so gradients are checked.
        Example(
            _example(1, 2, 3, 4, peepholes=True),
            {"hidden_size": 4},
            rtol=1e-5,
            atol=1e-6,
            reference=_dynamic_quantize_lstm,
        ),
        # Several steps: each step's hidden state is rounded, so no gradient check.
        Example(
            _example(5, 3, 4, 5, count=2, per_column=True),
            {"hidden_size": 5, "direction": "bidirectional"},
            grad=False,
            rtol=1e-5,
            atol=1e-6,
            reference=_dynamic_quantize_lstm,
        ),
        Example(
            _example(4, 3, 3, 4, signed=False, lengths=[4, 0, 2]),
            {"hidden_size": 4, "direction": "reverse"},
            grad=False,
            rtol=1e-5,
            atol=1e-6,
            reference=_dynamic_quantize_lstm,
        ),
        Example(
            _example(3, 2, 3, 4, bias=False, states=False),
            {"hidden_size": 4, "clip": 0.5, "input_forget": 1},
            grad=False,
            rtol=1e-5,
            atol=1e-6,
            reference=_dynamic_quantize_lstm,
        ),
    ],
}
