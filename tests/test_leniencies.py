"""What onnxruntime runs although the IR or the operator text is stricter, and jaxonnx runs
the same way (docs/guide/loading.md, "Leniencies onnxruntime allows"): nodes out of topological order
(in the main graph; jaxonnx sorts Loop bodies and function bodies too), an initializer that an IR 3
file does not list as a graph input, a graph output whose type sets no case, Expand with a 0-D shape, com.microsoft
nodes whose domain the file does not import, an attribute LayerNormalization's schema does not know (onnxruntime's
fusion test files) and a node domain written "ai.onnx" (both warn: jaxonnx.LeniencyWarning). (STFT's 2-D signal: tests/test_stft_exports.py.) Each against onnxruntime,
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
    body_nodes = [
        helper.make_node("Add", ["acc_in", "step"], ["acc_out"], name="accumulate"),
        helper.make_node("Mul", ["h", "half"], ["step"], name="step"),
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
    ]
    function_nodes = [
        helper.make_node("Add", ["c", "c"], ["b"], name="add"),
        helper.make_node("Identity", ["a"], ["c"], name="copy"),
    ]
    if sorted_inside:
        body_nodes = body_nodes[1:2] + body_nodes[:1] + body_nodes[2:]
        function_nodes = function_nodes[::-1]
    body = helper.make_graph(
        # Unsorted: `acc_out` reads `step`, which the node after it computes.
        body_nodes,
        "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("acc_in", T.FLOAT, [3, 4])],
        [vi("cond_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3, 4])],
    )
    twice = helper.make_function("local", "Twice", ["a"], ["b"], function_nodes, [helper.make_opsetid("", 17)])
    nodes = [
        helper.make_node("Twice", ["looped"], ["y"], name="twice", domain="local"),
        helper.make_node("Loop", ["trips", "yes", "h"], ["looped"], name="loop", body=body),
        helper.make_node("Relu", ["x"], ["h"], name="relu"),
    ]
    return _model(
        nodes,
        [vi("x", T.FLOAT, [3, 4])],
        [vi("y", T.FLOAT, [3, 4])],
        [
            numpy_helper.from_array(np.array(3, np.int64), "trips"),
            numpy_helper.from_array(np.array(True), "yes"),
            numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        ],
        functions=[twice],
    )


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
    proto = _model(
        [helper.make_node("Relu", ["b"], ["a"], name="one"), helper.make_node("Relu", ["a"], ["b"], name="two")],
        [vi("x", T.FLOAT, [3])],
        [vi("a", T.FLOAT, [3])],
    )
    with pytest.raises(jaxonnx.ModelLoadError, match="topologically sorted"):
        jaxonnx.load(proto)


def test_an_ir3_initializer_that_is_no_graph_input(run_onnxruntime):
    proto = _model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x", T.FLOAT, [3, 4])],
        [vi("y", T.FLOAT, [3, 4])],
        [numpy_helper.from_array(np.linspace(0, 1, 4, dtype=np.float32), "w")],
        opset=8,
        ir_version=3,
    )
    with pytest.raises(onnx.checker.ValidationError, match="in initializer but not in graph input"):
        onnx.checker.check_model(proto)
    model = _assert_runs_as_onnxruntime(proto, {"x": X}, run_onnxruntime)
    assert model.input_names == ("x",) and list(model.params) == ["w"]
    assert [i.name for i in model.to_proto().graph.input] == ["x"]  # the check's stand-in is not kept


def test_a_graph_output_whose_type_sets_no_case(run_onnxruntime):
    proto = _model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", T.FLOAT, [3, 4])],
        [helper.make_value_info("y", onnx.TypeProto())],
    )
    model = _assert_runs_as_onnxruntime(proto, {"x": X}, run_onnxruntime)
    assert model.outputs[0].type == "any"
    assert model.to_proto().graph.output[0] == proto.graph.output[0]


def test_expand_with_a_zero_dimensional_shape(run_onnxruntime):
    proto = _model(
        [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")],
        [vi("x", T.FLOAT, [3, 1])],
        [vi("y", T.FLOAT, [3, 4])],
        [numpy_helper.from_array(np.array(4, np.int64), "shape")],
    )
    _assert_runs_as_onnxruntime(proto, {"x": X[:, :1]}, run_onnxruntime)
    np.testing.assert_array_equal(
        np.asarray(jaxonnx.ops.expand(np.ones((2, 1), np.float32), np.array(3))), np.ones((2, 3))
    )


@pytest.mark.parametrize(
    "case",
    [
        "dft_2d",
        "unknown_attribute",
        "unknown_com_microsoft_attribute",
        "output_produced_twice",
        "output_produced_twice_in_a_branch",
    ],
)
def test_what_onnxruntime_refuses_stays_refused(case):
    """Not every departure from the text is a leniency: these onnxruntime 1.32 refuses too (an
    unknown attribute on any op but LayerNormalization and SimplifiedLayerNormalization, of the
    default domain or com.microsoft; one name produced by two nodes: "Duplicate definition of name")."""
    if case == "dft_2d":
        proto = _model(
            [helper.make_node("DFT", ["x"], ["y"], name="dft")], [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, None)]
        )
        feed, error = {"x": X}, jaxonnx.JaxOnnxError
    elif case == "unknown_com_microsoft_attribute":
        scale, bias = (
            numpy_helper.from_array(np.ones(4, np.float32), "s"),
            numpy_helper.from_array(np.zeros(4, np.float32), "b"),
        )
        node = helper.make_node(
            "SkipLayerNormalization", ["x", "x", "s", "b"], ["y"], name="skip_ln", domain="com.microsoft", epsion=1e-5
        )
        proto = _model([node], [vi("x", T.FLOAT, [1, 3, 4])], [vi("y", T.FLOAT, None)], [scale, bias])
        proto.opset_import.append(helper.make_opsetid("com.microsoft", 1))
        feed, error = {"x": X[None]}, jaxonnx.JaxOnnxError
    elif case.startswith("output_produced_twice"):
        twice = [
            helper.make_node("Relu", ["x"], ["t"], name="first"),
            helper.make_node("Neg", ["x"], ["t"], name="last"),
        ]
        if case == "output_produced_twice":
            nodes = [*twice, helper.make_node("Abs", ["t"], ["y"], name="abs")]
        else:
            branch = helper.make_graph(twice, "then", [], [vi("t", T.FLOAT, None)])
            other = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [], [vi("e", T.FLOAT, None)])
            nodes = [helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch, else_branch=other)]
        proto = _model(nodes, [vi("x", T.FLOAT, [3, 4]), vi("c", T.BOOL, [])], [vi("y", T.FLOAT, None)])
        feed, error = {"x": X, "c": np.array(True)}, jaxonnx.ModelLoadError
    else:
        proto = _model(
            [helper.make_node("Relu", ["x"], ["y"], name="relu", foo=1)],
            [vi("x", T.FLOAT, [3, 4])],
            [vi("y", T.FLOAT, None)],
        )
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


def _layer_norm_with_a_misspelled_epsilon(op_type: str, opset: int) -> onnx.ModelProto:
    """As onnxruntime's own fusion test files write it (test_data/models, built with onnx.helper):
    LayerNormalization with `epsion`, at opset 11-13 beside com.microsoft."""
    inputs = ["sum", "ln_weight"] + (["ln_bias"] if op_type == "LayerNormalization" else [])
    nodes = [
        helper.make_node("Add", ["x", "x"], ["sum"], "add"),
        helper.make_node(op_type, inputs, ["y"], "layernorm", axis=-1, epsion=0.000009999999747378752),
    ]
    weights = [
        numpy_helper.from_array(np.linspace(0.5, 1.5, 4, dtype=np.float32), "ln_weight"),
        numpy_helper.from_array(np.linspace(-1, 1, 4, dtype=np.float32), "ln_bias"),
    ]
    proto = _model(
        nodes,
        [vi("x", T.FLOAT, [2, 3, 4])],
        [vi("y", T.FLOAT, [2, 3, 4])],
        weights[: len(inputs) - 1],
        opset=opset,
        ir_version=7,
    )
    proto.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return proto


@pytest.mark.parametrize(
    ("op_type", "opset"), [("LayerNormalization", 11), ("LayerNormalization", 17), ("SimplifiedLayerNormalization", 13)]
)
def test_an_attribute_layer_normalization_does_not_know_is_ignored(op_type, opset, run_onnxruntime):
    # onnxruntime leaves the attributes of its (former contrib) LayerNormalization and
    # SimplifiedLayerNormalization unchecked; every other op refuses (test_what_onnxruntime_refuses_...).
    proto = _layer_norm_with_a_misspelled_epsilon(op_type, opset)
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    expected = run_onnxruntime(proto, {"x": x})[0]
    with pytest.warns(
        jaxonnx.LeniencyWarning, match=rf"node 'layernorm' \({op_type}\): attribute 'epsion' ignored"
    ) as caught:
        model = jaxonnx.load(proto)
    assert len(caught) == 1
    for run in (model, jax.jit(model)):
        # float32 normalization: onnxruntime's and XLA's sums differ in the last bits.
        np.testing.assert_allclose(np.asarray(run(x)[0]), expected, rtol=1e-6, atol=1e-6)
    assert [a.name for a in proto.graph.node[1].attribute] == ["axis", "epsion"]  # the caller's proto is not changed


def _nodes_in_the_domain_ai_onnx(*, inside: bool) -> onnx.ModelProto:
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["c"], ["c_out"]),
            helper.make_node("Relu", ["acc"], ["acc_out"], name="inner_relu", domain="ai.onnx" if inside else ""),
        ],
        "body",
        [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("acc", T.FLOAT, [3, 4])],
        [vi("c_out", T.BOOL, []), vi("acc_out", T.FLOAT, [3, 4])],
    )
    nodes = [
        helper.make_node("Neg", ["x"], ["n"], name="neg", domain="ai.onnx"),
        helper.make_node("Abs", ["n"], ["a"], domain="ai.onnx"),
        helper.make_node("Loop", ["trips", "", "a"], ["y"], name="loop", body=body),
    ]
    return _model(
        nodes,
        [vi("x", T.FLOAT, [3, 4])],
        [vi("y", T.FLOAT, [3, 4])],
        [numpy_helper.from_array(np.array(2, np.int64), "trips")],
    )


@pytest.mark.parametrize("imported_as", ["", "ai.onnx"])
def test_the_default_domain_written_ai_onnx(imported_as, run_onnxruntime):
    proto = _nodes_in_the_domain_ai_onnx(inside=False)
    proto.opset_import[0].domain = imported_as  # "ai.onnx" in opset_import is in the IR: no warning for it
    with pytest.raises(onnx.checker.ValidationError, match="No Op registered|No opset import"):
        onnx.checker.check_model(proto)
    with pytest.warns(jaxonnx.LeniencyWarning) as caught:
        _assert_runs_as_onnxruntime(proto, {"x": X}, run_onnxruntime)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("2 departures from the ONNX text")
    for named in ("node 'neg' (Neg)", "unnamed node #1 of the main graph (Abs)"):
        assert f"{named}: domain 'ai.onnx' read as the default domain ''" in message
    # onnxruntime reads "ai.onnx" so in the main graph only: in a body it refuses it, as jaxonnx does.
    inside = _nodes_in_the_domain_ai_onnx(inside=True)
    with pytest.raises(Exception, match="No opset import for domain 'ai.onnx'"):  # noqa: B017  (onnxruntime's own error types)
        ort.InferenceSession(inside.SerializeToString(), providers=["CPUExecutionProvider"])
    with (
        pytest.warns(jaxonnx.LeniencyWarning),
        pytest.raises(jaxonnx.ModelLoadError, match="No opset import for domain 'ai.onnx'"),
    ):
        jaxonnx.load(inside)
