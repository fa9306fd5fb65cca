"""LSTM, GRU and RNN against onnxruntime for what onnx.reference does not run (sequence_lens,
clip, other activations, input_forget, layout 1), under jax.jit, with gradients, and the
shape of the computation (one scan per direction)."""

from __future__ import annotations

import jax
import numpy as np
import onnxruntime as ort
import pytest
from jax.test_util import check_grads
from onnx import TensorProto as T
from onnx import helper

import jaxonnx

vi = helper.make_tensor_value_info
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6


def _case(op, direction="forward", layout=0, lengths=True, states=True, peepholes=False, **attributes):
    rng = np.random.default_rng(sum(map(ord, op + direction)) + layout)
    d = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x = rng.standard_normal((BATCH, SEQ, INPUT) if layout else (SEQ, BATCH, INPUT)).astype(np.float32)
    feed = {
        "X": x,
        "W": rng.standard_normal((d, g * HIDDEN, INPUT)).astype(np.float32) * 0.5,
        "R": rng.standard_normal((d, g * HIDDEN, HIDDEN)).astype(np.float32) * 0.5,
        "B": rng.standard_normal((d, 2 * g * HIDDEN)).astype(np.float32) * 0.5,
    }
    names = ["X", "W", "R", "B", ""]
    if lengths:
        feed["sequence_lens"] = np.array([5, 2, 4], np.int32)
        names[4] = "sequence_lens"
    state_shape = (BATCH, d, HIDDEN) if layout else (d, BATCH, HIDDEN)
    if states:
        feed["initial_h"] = rng.standard_normal(state_shape).astype(np.float32)
        names.append("initial_h")
        if op == "LSTM":
            feed["initial_c"] = rng.standard_normal(state_shape).astype(np.float32)
            names.append("initial_c")
    if peepholes:
        feed["P"] = rng.standard_normal((d, 3 * HIDDEN)).astype(np.float32) * 0.5
        names += [""] * (7 - len(names)) + ["P"]
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outputs, hidden_size=HIDDEN, direction=direction, layout=layout, **attributes)
    inputs = [vi(n, T.INT32 if n == "sequence_lens" else T.FLOAT, list(feed[n].shape)) for n in names if n]
    graph = helper.make_graph([node], "rnn", inputs, [vi(o, T.FLOAT, None) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), feed


CASES = [
    ("LSTM", {"direction": "bidirectional"}),
    ("LSTM", {"direction": "reverse", "peepholes": True}),
    ("LSTM", {"direction": "bidirectional", "input_forget": 1}),
    (
        "LSTM",
        {
            "clip": 0.7,
            "activations": ["HardSigmoid", "Relu", "Softsign"],
            "activation_alpha": [0.3],
            "activation_beta": [0.4],
        },
    ),
    ("GRU", {"direction": "bidirectional", "linear_before_reset": 1}),
    ("GRU", {"direction": "reverse"}),
    ("GRU", {"activations": ["Sigmoid", "LeakyRelu"], "activation_alpha": [1.0, 0.2], "clip": 1.5}),
    ("RNN", {"direction": "bidirectional"}),
    ("RNN", {"activations": ["ScaledTanh"], "activation_alpha": [0.9], "activation_beta": [1.1]}),
]


@pytest.mark.parametrize("op, options", CASES, ids=[f"{op}-{i}" for i, (op, _) in enumerate(CASES)])
def test_matches_onnxruntime_eagerly_and_jitted(op, options):
    proto, feed = _case(op, **options)
    expected = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)
    model = jaxonnx.load(proto)
    # The eager call runs jax.jit of the whole graph (its eager_mode): a second jax.jit here
    # would compile the same computation again.
    assert model.eager_mode == "whole graph compiled per input signature"
    for g, e in zip(model.run(None, feed), expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", list(GATES))
def test_layout_1_is_layout_0_batch_first(op):
    # onnxruntime refuses layout 1 ("Batchwise recurrent operations ... are not supported").
    proto0, feed0 = _case(op, direction="bidirectional")
    proto1, feed1 = _case(op, direction="bidirectional", layout=1)
    feed1 = {k: v for k, v in feed1.items()}
    feed1.update({k: np.swapaxes(feed0[k], 0, 1) for k in feed0 if k in ("X", "initial_h", "initial_c")})
    for k in ("W", "R", "B", "sequence_lens"):
        feed1[k] = feed0[k]
    out0 = jaxonnx.load(proto0).run(None, feed0)
    out1 = jaxonnx.load(proto1).run(None, feed1)
    np.testing.assert_allclose(out1[0], np.transpose(np.asarray(out0[0]), (2, 0, 1, 3)), rtol=1e-6)
    for a, b in zip(out1[1:], out0[1:]):
        np.testing.assert_allclose(a, np.swapaxes(np.asarray(b), 0, 1), rtol=1e-6)


def test_outputs_past_each_length_are_zero_and_the_final_state_is_the_last_valid_step():
    proto, feed = _case("LSTM", direction="bidirectional", states=False)
    y, y_h, _ = jaxonnx.load(proto).run(None, feed)
    y = np.asarray(y)
    assert not y[2:, :, 1].any() and not y[4:, :, 2].any()  # lengths 2 and 4
    np.testing.assert_allclose(y_h[0, 1], y[1, 0, 1])  # forward: at step length - 1
    np.testing.assert_allclose(y_h[1, 1], y[0, 1, 1])  # reverse: at step 0


def test_one_scan_per_direction_and_exact_gradients():
    proto, feed = _case("LSTM", direction="bidirectional")
    model = jaxonnx.load(proto)
    args = [feed[i.name] for i in model.inputs]
    text = str(jax.make_jaxpr(model)(*args))
    assert text.count("scan[") == 2
    x_index = model.input_names.index("X")

    def f(x):
        values = list(args)
        values[x_index] = x
        return model(*values)[0]

    # Under jax.jit: one program for the values, one for each derivative (eagerly, each
    # primitive of the linearized scan compiled on its own: 46 programs).
    check_grads(jax.jit(f), (feed["X"].astype(np.float32),), order=1, modes=["rev"], eps=1e-2, atol=2e-2, rtol=2e-2)


def test_lstm_step_computes_the_i_o_f_activations_as_one_array():
    # benchmarks/recurrent.py: with the sigmoids of the i, o and f gates as one array, apart
    # from the update of c, XLA:CPU vectorizes them (fused into the update they ran as a scalar
    # loop, 1.4x slower). Without peepholes the step has one logistic, of all three gates.
    proto, feed = _case("LSTM", lengths=False, states=False)
    model = jaxonnx.load(proto)
    text = str(jax.make_jaxpr(model)(*[feed[i.name] for i in model.inputs]))
    logistics = [line for line in text.splitlines() if "logistic" in line]
    assert len(logistics) == 1 and f"f32[{BATCH},{3 * HIDDEN}]" in logistics[0]
