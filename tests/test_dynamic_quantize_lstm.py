"""com.microsoft DynamicQuantizeLSTM against onnxruntime: single nodes (every input and
attribute) and torch LSTMs quantized by onnxruntime's own ``quantize_dynamic``
(``tools/export_dynamic_quantize_lstm_fixtures.py``), eagerly and under ``jax.jit``.

onnxruntime runs on one thread here: on several, it quantizes each step's hidden state in
slices of the batch (one per thread), so its codes depend on the machine. Its uint8 x int8
products on x86 CPUs without VNNI (MLAS's AVX2 kernel) add pairs of products in saturating
16 bits, so int8 weights of full range (DynamicQuantizeLSTM's, and MatMulInteger's in the files
``quantize_dynamic`` writes) are compared with onnxruntime running the same integers as
uint8 with zero point 128 (its exact uint8 x uint8 kernel); 7-bit weights
(``reduce_range``) are compared with the file as it is.
"""

import os

import jax
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "microsoft_lstm")
NAMES = [
    "X",
    "W",
    "R",
    "B",
    "sequence_lens",
    "initial_h",
    "initial_c",
    "P",
    "W_scale",
    "W_zero_point",
    "R_scale",
    "R_zero_point",
]
_rng = np.random.default_rng(2026)


def _onnxruntime(proto, feed):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def _node_model(feed, attributes, weight_type):
    node = helper.make_node(
        "DynamicQuantizeLSTM",
        [n if feed.get(n) is not None else "" for n in NAMES],
        ["Y", "Y_h", "Y_c"],
        domain="com.microsoft",
        **attributes,
    )
    types = {
        "W": weight_type,
        "R": weight_type,
        "W_zero_point": weight_type,
        "R_zero_point": weight_type,
        "sequence_lens": T.INT32,
    }
    graph = helper.make_graph(
        [node],
        "dynamic_quantize_lstm",
        [helper.make_tensor_value_info(n, types.get(n, T.FLOAT), None) for n in NAMES if feed.get(n) is not None],
        [helper.make_tensor_value_info(n, T.FLOAT, None) for n in ("Y", "Y_h", "Y_c")],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )


def _node_feed(
    direction="forward",
    signed=True,
    per_column=False,
    seq=5,
    batch=3,
    inputs=4,
    hidden=6,
    bias=True,
    lengths=None,
    states=True,
    peepholes=False,
):
    count = 2 if direction == "bidirectional" else 1
    dtype, low, high = (np.int8, -64, 65) if signed else (np.uint8, 0, 256)
    columns = (count, 4 * hidden) if per_column else (count,)
    feed = {
        "X": _rng.normal(size=(seq, batch, inputs)).astype(np.float32),
        "W": _rng.integers(low, high, (count, inputs, 4 * hidden)).astype(dtype),
        "R": _rng.integers(low, high, (count, hidden, 4 * hidden)).astype(dtype),
        "W_scale": _rng.uniform(0.001, 0.01, columns).astype(np.float32),
        "R_scale": _rng.uniform(0.001, 0.01, columns).astype(np.float32),
        # onnxruntime takes zero points that are zero (int8) or one value per direction (uint8).
        "W_zero_point": np.full(columns, 0 if signed else 128, dtype),
        "R_zero_point": np.full(columns, 0 if signed else 120, dtype),
    }
    if bias:
        feed["B"] = (_rng.normal(size=(count, 8 * hidden)) * 0.3).astype(np.float32)
    if lengths is not None:
        feed["sequence_lens"] = np.array(lengths, np.int32)
    if states:
        feed["initial_h"] = (_rng.normal(size=(count, batch, hidden)) * 0.5).astype(np.float32)
        feed["initial_c"] = (_rng.normal(size=(count, batch, hidden)) * 0.5).astype(np.float32)
    if peepholes:
        feed["P"] = (_rng.normal(size=(count, 3 * hidden)) * 0.3).astype(np.float32)
    return feed


NODE_CASES = {
    "int8": ({}, {}),
    "uint8": ({"signed": False}, {}),
    "int8 per column": ({"per_column": True}, {}),
    "reverse": ({"direction": "reverse"}, {}),
    "bidirectional uint8 per column": ({"direction": "bidirectional", "signed": False, "per_column": True}, {}),
    "sequence_lens": ({"lengths": [5, 2, 3]}, {}),
    "bidirectional sequence_lens with an empty sequence": ({"direction": "bidirectional", "lengths": [4, 0, 2]}, {}),
    "reverse uint8 sequence_lens": ({"direction": "reverse", "signed": False, "lengths": [1, 5, 3]}, {}),
    "peepholes": ({"peepholes": True}, {}),
    "clip": ({}, {"clip": 0.7}),
    "input_forget": ({}, {"input_forget": 1}),
    "no bias, no initial states": ({"bias": False, "states": False}, {}),
    "batch 8": ({"batch": 8, "hidden": 4}, {}),
    "activations": (
        {"direction": "bidirectional"},
        {
            "activations": ["HardSigmoid", "Tanh", "Softsign", "Sigmoid", "LeakyRelu", "Tanh"],
            "activation_alpha": [0.3, 0.2],
            "activation_beta": [0.4],
        },
    ),
}


@pytest.mark.parametrize("case", NODE_CASES)
def test_a_node_matches_onnxruntime_eagerly_and_jitted(case):
    options, attributes = NODE_CASES[case]
    feed = _node_feed(**options)
    hidden = feed["R"].shape[1]
    proto = _node_model(
        feed,
        {"direction": options.get("direction", "forward"), "hidden_size": hidden, **attributes},
        T.INT8 if feed["W"].dtype == np.int8 else T.UINT8,
    )
    expected = _onnxruntime(proto, feed)
    model = jaxonnx.load(proto)
    args = [feed[name] for name in model.input_names]
    for got in (model(*args), jax.jit(model)(*args)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=3e-7)


# The int8 weights, then their zero points, by op: input positions.
_WEIGHTS = {"DynamicQuantizeLSTM": ((1, 2), (9, 11)), "MatMulInteger": ((1,), (3,))}


def _as_uint8_weights(proto):
    """The model with the int8 weights of DynamicQuantizeLSTM and MatMulInteger nodes stored
    as the same integers in uint8 with zero point 128 (onnxruntime then multiplies them
    with its exact u8 x u8 kernel)."""
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    initializers = {tensor.name: tensor for tensor in proto.graph.initializer}
    shifted = set()
    for node in proto.graph.node:
        weights, zero_points = _WEIGHTS.get(node.op_type, ((), ()))
        for index in weights + zero_points:
            tensor = initializers[node.input[index]]
            value = numpy_helper.to_array(tensor)
            assert value.dtype == np.int8 and (index in weights or not value.any())  # symmetric: zero points 0
            tensor.CopyFrom(numpy_helper.from_array((value.astype(np.int16) + 128).astype(np.uint8), tensor.name))
            shifted.add(tensor.name)
    for value_info in proto.graph.input:
        if value_info.name in shifted:
            value_info.type.tensor_type.elem_type = T.UINT8
    assert shifted
    return proto


def test_full_range_int8_weights_are_exact_products(run_onnxruntime):
    feed = _node_feed()
    feed["W"] = _rng.integers(-127, 128, feed["W"].shape).astype(np.int8)
    feed["R"] = _rng.integers(-127, 128, feed["R"].shape).astype(np.int8)
    proto = _node_model(feed, {"hidden_size": 6}, T.INT8)
    initializers = [
        numpy_helper.from_array(feed.pop(name), name) for name in ("W", "R", "W_zero_point", "R_zero_point")
    ]
    proto.graph.initializer.extend(initializers)
    expected = _onnxruntime(_as_uint8_weights(proto), feed)
    got = jax.jit(jaxonnx.load(proto))(**feed)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-5, atol=3e-7)


# ------------------------------------------------------------------ quantize_dynamic's models


FIXTURE_FILES = sorted(name for name in os.listdir(FIXTURES) if name.endswith(".onnx"))


@pytest.fixture(params=[True, False], ids=["x64", "x64_off"])
def x64(request):
    with jax.enable_x64(request.param):
        yield request.param


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_quantize_dynamic_lstm_models_match_onnxruntime(name, x64):
    proto = onnx.load(os.path.join(FIXTURES, name))
    assert "DynamicQuantizeLSTM" in {node.op_type for node in proto.graph.node}
    oracle = proto if "reduced" in name or "channel" in name else _as_uint8_weights(proto)
    model = jaxonnx.load(proto)
    # One shape eagerly, the other under jax.jit (each a compile of its own; that the two paths
    # agree shape by shape is test_a_node_matches_onnxruntime_eagerly_and_jitted's).
    for (seq, batch), run in (((6, 4), model), ((3, 1), jax.jit(model))):
        feed = {"x": _rng.normal(size=(seq, batch, 8)).astype(np.float32)}
        if "lengths" in model.input_names:
            feed["lengths"] = np.array([seq, 2, 0, seq - 1][:batch], np.int32)
        expected = _onnxruntime(oracle, feed)
        np.testing.assert_allclose(np.asarray(run(**feed)[0]), expected[0], rtol=1e-5, atol=1e-6)


def test_the_reduced_range_files_hold_seven_bit_weights():
    """Why they are compared with onnxruntime as they are (see the module's docstring)."""
    for name in ("lstm_uni_s8_reduced.onnx", "lstm_bi_s8_channel.onnx"):
        proto = onnx.load(os.path.join(FIXTURES, name))
        weights = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
        for node in proto.graph.node:
            if node.op_type == "DynamicQuantizeLSTM":
                for index in (1, 2):
                    assert np.abs(weights[node.input[index]].astype(np.int16)).max() <= 64


# ------------------------------------------------------------------ gradients


def _loss_of(name, feed):
    def loss(value):
        args = dict(feed, **{name: value})
        y, y_h, y_c = jaxonnx.ops.dynamic_quantize_lstm(*[args.get(n) for n in NAMES], hidden_size=6)
        return (y * 0.5).sum() + y_h.sum() + (y_c * y_c).sum()

    return loss


def test_x_gets_gradients_only_through_its_scale():
    """The rounding of X is flat: X's gradient is the scale's, which only X's extremes move."""
    feed = _node_feed(states=False)
    x = feed["X"]
    grad = np.asarray(jax.jit(jax.grad(_loss_of("X", feed)))(x))
    extremes = {int(np.argmax(x)), int(np.argmin(x))}
    assert set(np.flatnonzero(grad)) <= extremes and np.flatnonzero(grad).size


@pytest.mark.parametrize("name", ["B", "W_scale", "initial_c"])
def test_smooth_inputs_have_exact_gradients_between_roundings(name):
    """With one step, nothing rounded depends on these inputs (X and initial_h are what is
    quantized), so a central difference agrees with jax.grad to float32 rounding."""
    feed = _node_feed(seq=1)  # one step: the hidden state is never rounded after these inputs
    loss_and_grad = jax.jit(jax.value_and_grad(_loss_of(name, feed)))  # one compiled program for all three calls
    value = feed[name]
    # A step of 1e-3 relative to each entry (the scales are about 0.005).
    direction = (_rng.normal(size=value.shape) * np.abs(value)).astype(np.float32)
    grad = np.asarray(loss_and_grad(value)[1])
    eps = np.float32(1e-3)
    with jax.enable_x64(True):
        plus, minus = (float(loss_and_grad(value + s * eps * direction)[0]) for s in (1, -1))
        numeric = (plus - minus) / (2 * float(eps))
    np.testing.assert_allclose(np.vdot(grad, direction), numeric, rtol=2e-3)
