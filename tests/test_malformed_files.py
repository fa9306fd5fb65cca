"""Malformed files give only jaxonnx's errors: randomly mutated copies of models with If,
Loop and Scan bodies, a model-local function and sequence-typed inputs and outputs (one
hand-made, one TorchScript export) either load or raise a ModelLoadError (or, for an op
type mutated into another valid name, UnsupportedOpError); text that is not UTF-8 (which
protobuf hands over as bytes) is a ModelLoadError naming the node, wherever it sits."""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

vi = helper.make_tensor_value_info
FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "models"


def _control_flow_model() -> onnx.ModelProto:
    """If, Loop and Scan bodies, a model-local function, a sequence input and output."""
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["then_out"], name="then_relu")], "then", [], [vi("then_out", T.FLOAT, [2, 3])]
    )
    else_branch = helper.make_graph(
        [helper.make_node("LeakyRelu", ["x"], ["else_out"], name="else_leaky", alpha=0.2)],
        "else",
        [],
        [vi("else_out", T.FLOAT, [2, 3])],
    )
    loop_body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="loop_add"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="loop_cond"),
        ],
        "loop_body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", T.FLOAT, [2, 3])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [2, 3])],
    )
    scan_body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "row"], ["s_out"], name="scan_add"),
            helper.make_node("Identity", ["s_out"], ["row_out"], name="scan_copy"),
        ],
        "scan_body",
        [vi("s_in", T.FLOAT, [3]), vi("row", T.FLOAT, [3])],
        [vi("s_out", T.FLOAT, [3]), vi("row_out", T.FLOAT, [3])],
    )
    twice = helper.make_function(
        "local.fns",
        "Twice",
        ["a"],
        ["b"],
        [helper.make_node("Add", ["a", "a"], ["b"], name="fn_add")],
        [helper.make_opsetid("", 17)],
    )
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], name="total", keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["positive"], name="is_positive"),
        helper.make_node(
            "If", ["positive"], ["branch"], name="branch", then_branch=then_branch, else_branch=else_branch
        ),
        helper.make_node("Loop", ["trips", "yes", "branch"], ["looped"], name="loop", body=loop_body),
        helper.make_node(
            "Scan", ["init", "looped"], ["scanned", "rows"], name="scan", body=scan_body, num_scan_inputs=1
        ),
        helper.make_node("Twice", ["rows"], ["doubled"], name="twice", domain="local.fns"),
        helper.make_node("SequenceAt", ["seq", "zero_i"], ["first"], name="seq_at"),
        helper.make_node("Add", ["doubled", "first"], ["y"], name="final_add"),
        helper.make_node("Unsqueeze", ["scanned", "zero_axes"], ["scanned_2d"], name="unsqueeze"),
        helper.make_node("SequenceConstruct", ["y", "scanned_2d"], ["seq_out"], name="seq_make"),
    ]
    graph = helper.make_graph(
        nodes,
        "control_flow",
        [vi("x", T.FLOAT, [2, 3]), helper.make_tensor_sequence_value_info("seq", T.FLOAT, [2, 3])],
        [vi("y", T.FLOAT, [2, 3]), helper.make_tensor_sequence_value_info("seq_out", T.FLOAT, None)],
        initializer=[
            numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
            numpy_helper.from_array(np.array(2, np.int64), "trips"),
            numpy_helper.from_array(np.array(True), "yes"),
            numpy_helper.from_array(np.zeros(3, np.float32), "init"),
            numpy_helper.from_array(np.array(0, np.int64), "zero_i"),
            numpy_helper.from_array(np.array([0], np.int64), "zero_axes"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local.fns", 1)], functions=[twice]
    )
    model.ir_version = 9
    return model


X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2


def test_the_control_flow_model_runs_as_in_onnxruntime(run_onnxruntime):
    expected = run_onnxruntime(_control_flow_model(), {"x": X, "seq": [X, X]})
    y, seq_out = jaxonnx.load(_control_flow_model())(X, [X, X])
    np.testing.assert_allclose(np.asarray(y), expected[0], rtol=1e-6)
    for actual, want in zip(seq_out, expected[1]):
        np.testing.assert_allclose(np.asarray(actual), want, rtol=1e-6)


def _corrupt(data: bytes, text: bytes, replacement: bytes, occurrence: int = 0) -> bytes:
    """``data`` with one occurrence of ``text`` replaced by bytes of the same length (so
    every protobuf length stays right and only the text goes bad)."""
    assert len(text) == len(replacement)
    start = -1
    for _ in range(occurrence + 1):
        start = data.index(text, start + 1)
    return data[:start] + replacement + data[start + len(text) :]


# (the text to corrupt, which occurrence, the field and the node the error must name)
_CORRUPTIONS = [
    (b"ReduceSum", 0, "op_type", "node 0 ('total') of the main graph"),
    (
        b"LeakyRelu",
        0,
        "op_type",
        "node 0 ('else_leaky') of the subgraph ('else') of the attribute ('else_branch') of node 2 ('branch') of the main graph",
    ),
    (
        b"loop_add",
        0,
        "name",
        "node 0 (b'l\\xffop_ad\\xfe') of the subgraph ('loop_body') of the attribute ('body') of node 3 ('loop')",
    ),
    (
        b"scan_copy",
        0,
        "name",
        "node 1 (b's\\xffan_cop\\xfe') of the subgraph ('scan_body') of the attribute ('body') of node 4",
    ),
    (b"fn_add", 0, "name", "node 0 (b'f\\xff_ad\\xfe') of the function 0 ('Twice', domain 'local.fns')"),
    (b"local.fns", 0, "domain", "node 5 ('twice') of the main graph"),
    (b"alpha", 0, "name", "the attribute (b'a\\xffph\\xfe') of node 0 ('else_leaky') of the subgraph ('else')"),
    (b"num_scan_inputs", 0, "name", "of node 4 ('scan') of the main graph"),
    (b"seq_out", 0, "output[0]", "node 9 ('seq_make') of the main graph"),
    (b"seq_out", 1, "name", "the output 1 (b's\\xffq_ou\\xfe') of the main graph"),
    (b"row_out", 1, "name", "the output 1 (b'r\\xffw_ou\\xfe') of the subgraph ('scan_body')"),
]


@pytest.mark.parametrize(
    "text, occurrence, field, where", _CORRUPTIONS, ids=[f"{c[0].decode()}-{c[1]}" for c in _CORRUPTIONS]
)
def test_text_that_is_not_utf8_is_a_model_load_error_naming_the_node(text, occurrence, field, where):
    data = _control_flow_model().SerializeToString()
    bad = text[:1] + b"\xff" + text[2:-1] + b"\xfe"
    corrupt = _corrupt(data, text, bad, occurrence)
    proto = onnx.ModelProto()
    proto.ParseFromString(corrupt)  # protobuf accepts it: the text arrives as bytes
    for load in (jaxonnx.load, lambda source: jaxonnx.load(proto), lambda source: jaxonnx.unsupported_nodes(proto)):
        with pytest.raises(jaxonnx.ModelLoadError, match="is not valid UTF-8 text") as info:
            load(corrupt)
        message = str(info.value)
        assert f"The {field} of " in message and where in message, message


def test_an_op_type_that_is_not_utf8_in_a_torchscript_export():
    data = (FIXTURES / "looped_cell_torchscript_static.onnx").read_bytes()
    corrupt = _corrupt(data, b"ConcatFromSequence", b"Concat\xffromSequenc\xfe", occurrence=1)  # 0: the node's name
    with pytest.raises(
        jaxonnx.ModelLoadError,
        match=r"The op_type of node 7 \('/ConcatFromSequence'\) of the main graph is not valid UTF-8 text",
    ):
        jaxonnx.load(corrupt)


def _mutations(data: bytes, count: int, seed: int, *, text_only: bool):
    """``count`` copies of ``data``, each with 1 to 3 random bytes replaced (only bytes of
    text, letters, with ``text_only``: those become invalid UTF-8)."""
    rng = np.random.default_rng(seed)
    letters = [i for i, byte in enumerate(data) if 0x41 <= byte <= 0x7A]
    for _ in range(count):
        mutated = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            if text_only:
                mutated[letters[rng.integers(len(letters))]] = rng.integers(0x80, 0x100)
            else:
                mutated[rng.integers(len(mutated))] = rng.integers(0x100)
        yield bytes(mutated)


def _load_outcome(data: bytes) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jaxonnx.X64Warning)
            jaxonnx.load(data)
    except (jaxonnx.ModelLoadError, jaxonnx.UnsupportedOpError) as error:
        return type(error).__name__ + (" utf8" if "UTF-8" in str(error) else "")
    return "loaded"  # anything else (a raw TypeError, ValueError, ...) fails the test


@pytest.mark.parametrize("source", ["control_flow", "looped_cell_torchscript_static"])
def test_random_mutations_give_only_jaxonnx_errors(source):
    data = (
        _control_flow_model().SerializeToString()
        if source == "control_flow"
        else (FIXTURES / f"{source}.onnx").read_bytes()
    )
    outcomes = [_load_outcome(m) for m in _mutations(data, 600, seed=31, text_only=False)]
    assert outcomes.count("ModelLoadError") > 250, sorted(set(outcomes))  # most mutations break the file
    text_outcomes = [_load_outcome(m) for m in _mutations(data, 300, seed=32, text_only=True)]
    # Text made invalid is refused as such wherever it is (a mutated tensor byte may load).
    assert text_outcomes.count("ModelLoadError utf8") > 200, sorted(set(text_outcomes))
