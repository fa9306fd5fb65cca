"""What onnxruntime runs although the IR or the operator text is stricter, and jaxonnx runs
the same way (docs/guide/loading.md, "Leniencies onnxruntime allows"): nodes out of topological order
(in the main graph; jaxonnx sorts Loop bodies and function bodies too), an initializer that an IR 3
file does not list as a graph input, a graph output whose type sets no case, Expand with a 0-D shape, and com.microsoft
nodes whose domain the file does not import. (STFT's 2-D signal: tests/test_stft_exports.py.) Each against onnxruntime,
eager and under jax.jit."""

from __future__ import annotations

import jax
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

vi = helper.make_tensor_value_info
X = np.arange(12, dtype=np.float32).reshape(3, 4) - 5


def _model(nodes, inputs, outputs, initializers=(), *, opset=17, ir_version=8, functions=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("local", 1)] if functions else [])
    model = helper.make_model(graph, opset_imports=imports, functions=list(functions))
    model.ir_version = ir_version
    return model


def _assert_runs_as_onnxruntime(proto, feed, run_onnxruntime):
    expected = run_onnxruntime(proto, feed)
    model = jaxonnx.load(proto)
    for run in (model, jax.jit(model)):
        actual = run(**feed)
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    return model


def _unsorted_model(*, sorted_inside: bool) -> onnx.ModelProto:
    body_nodes = [helper.make_node("Add", ["acc_in", "step"], ["acc_out"], name="accumulate"),
                  helper.make_node("Mul", ["h", "half"], ["step"], name="step"),
                  helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going")]
    function_nodes = [helper.make_node("Add", ["c", "c"], ["b"], name="add"),
                      helper.make_node("Identity", ["a"], ["c"], name="copy")]
    if sorted_inside:
        body_nodes = body_nodes[1:2] + body_nodes[:1] + body_nodes[2:]
        function_nodes = function_nodes[::-1]
    body = helper.make_graph(
        # Unsorted: `acc_out` reads `step`, which the node after it computes.
        body_nodes,
        "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", T.FLOAT, [3, 4])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3, 4])])
    twice = helper.make_function("local", "Twice", ["a"], ["b"], function_nodes, [helper.make_opsetid("", 17)])
    nodes = [
        helper.make_node("Twice", ["looped"], ["y"], name="twice", domain="local"),
        helper.make_node("Loop", ["trips", "yes", "h"], ["looped"], name="loop", body=body),
        helper.make_node("Relu", ["x"], ["h"], name="relu"),
    ]
    return _model(nodes, [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, [3, 4])],
                  [numpy_helper.from_array(np.array(3, np.int64), "trips"), numpy_helper.from_array(np.array(True), "yes"),
                   numpy_helper.from_array(np.array(0.5, np.float32), "half")], functions=[twice])


def test_nodes_out_of_topological_order_run_as_onnxruntime_sorts_them(run_onnxruntime):
    proto = _unsorted_model(sorted_inside=True)  # the main graph's nodes are out of order
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(proto)
    model = _assert_runs_as_onnxruntime(proto, {"x": X}, run_onnxruntime)
    # onnxruntime refuses a Loop body or a function body out of order; jaxonnx sorts them too.
    unsorted_inside = _unsorted_model(sorted_inside=False)
    with pytest.raises(Exception, match="topologically sorted|expected to have type"):
        ort.InferenceSession(unsorted_inside.SerializeToString(), providers=["CPUExecutionProvider"])
    for run in (jaxonnx.load(unsorted_inside), jax.jit(jaxonnx.load(unsorted_inside))):
        np.testing.assert_array_equal(np.asarray(run(X)[0]), np.asarray(model(X)[0]))
    # The caller's proto is not changed; the model saves its nodes in order.
    assert [n.name for n in proto.graph.node] == ["twice", "loop", "relu"]
    saved = model.to_proto()
    assert [n.name for n in saved.graph.node] == ["relu", "loop", "twice"]
    onnx.checker.check_model(saved)


def test_a_cycle_is_still_refused():
    proto = _model([helper.make_node("Relu", ["b"], ["a"], name="one"), helper.make_node("Relu", ["a"], ["b"], name="two")],
                   [vi("x", T.FLOAT, [3])], [vi("a", T.FLOAT, [3])])
    with pytest.raises(jaxonnx.ModelLoadError, match="topologically sorted"):
        jaxonnx.load(proto)


def test_an_ir3_initializer_that_is_no_graph_input(run_onnxruntime):
    proto = _model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", T.FLOAT, [3, 4])],
                   [vi("y", T.FLOAT, [3, 4])], [numpy_helper.from_array(np.linspace(0, 1, 4, dtype=np.float32), "w")],
                   opset=8, ir_version=3)
    with pytest.raises(onnx.checker.ValidationError, match="in initializer but not in graph input"):
        onnx.checker.check_model(proto)
    model = _assert_runs_as_onnxruntime(proto, {"x": X}, run_onnxruntime)
    assert model.input_names == ("x",) and list(model.params) == ["w"]
    assert [i.name for i in model.to_proto().graph.input] == ["x"]  # the check's stand-in is not kept


def test_a_graph_output_whose_type_sets_no_case(run_onnxruntime):
    proto = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", T.FLOAT, [3, 4])],
                   [helper.make_value_info("y", onnx.TypeProto())])
    model = _assert_runs_as_onnxruntime(proto, {"x": X}, run_onnxruntime)
    assert model.outputs[0].type == "any"
    assert model.to_proto().graph.output[0] == proto.graph.output[0]


def test_expand_with_a_zero_dimensional_shape(run_onnxruntime):
    proto = _model([helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")], [vi("x", T.FLOAT, [3, 1])],
                   [vi("y", T.FLOAT, [3, 4])], [numpy_helper.from_array(np.array(4, np.int64), "shape")])
    _assert_runs_as_onnxruntime(proto, {"x": X[:, :1]}, run_onnxruntime)
    np.testing.assert_array_equal(np.asarray(jaxonnx.ops.expand(np.ones((2, 1), np.float32), np.array(3))), np.ones((2, 3)))


@pytest.mark.parametrize("case", ["dft_2d", "unknown_attribute"])
def test_what_onnxruntime_refuses_stays_refused(case):
    """Not every departure from the text is a leniency: these onnxruntime refuses too."""
    if case == "dft_2d":
        proto = _model([helper.make_node("DFT", ["x"], ["y"], name="dft")], [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, None)])
        feed, error = {"x": X}, jaxonnx.JaxOnnxError
    else:
        proto = _model([helper.make_node("Relu", ["x"], ["y"], name="relu", foo=1)], [vi("x", T.FLOAT, [3, 4])],
                       [vi("y", T.FLOAT, None)])
        feed, error = {"x": X}, jaxonnx.ModelLoadError
    with pytest.raises(Exception):  # noqa: B017  (onnxruntime's own error types)
        ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)
    with pytest.raises(error):
        jaxonnx.load(proto)(**feed)


def test_a_com_microsoft_node_without_its_domain_imported(run_onnxruntime):
    # onnxruntime's transformer optimizer at opt_level 0 writes such files (only "" imported).
    node = helper.make_node("FusedMatMul", ["x", "w"], ["y"], domain="com.microsoft", alpha=0.5, transB=1)
    weight = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(2, 4), "w")
    proto = _model([node], [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, [3, 2])], [weight])
    assert [o.domain for o in proto.opset_import] == [""]
    model = _assert_runs_as_onnxruntime(proto, {"x": X}, run_onnxruntime)
    assert model.opsets["com.microsoft"] == max(jaxonnx.supported_ops("com.microsoft")["FusedMatMul"])
    unknown = helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example")
    with pytest.raises(jaxonnx.ModelLoadError, match=r"\['com.example'\] but its opset_import names no version"):
        jaxonnx.load(_model([unknown], [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, [3, 4])]))
