"""Graphs inside graphs: If, Loop, Scan and the sequence ops, eagerly, under jax.jit, with
gradients and vmap, against onnxruntime; and the errors of bad subgraphs."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import onnxruntime as ort
import pytest
from _node_cases import node_cases
from jax.test_util import check_grads
from onnx import TensorProto as T
from onnx import helper

import jaxonnx
import jaxonnx.backend

vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ort(proto, feed):
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)


# ------------------------------------------------------------------------------ If


def _if_model(same_shapes: bool):
    then = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [], [vi("t", T.FLOAT, None)])
    other = (
        [helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)]
        if not same_shapes
        else [helper.make_node("Sin", ["x"], ["e"])]
    )
    otherwise = helper.make_graph(other, "else", [], [vi("e", T.FLOAT, None)])
    return _model(
        [
            helper.make_node("Greater", ["rate", "limit"], ["c"]),
            helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=otherwise, name="choose"),
        ],
        [vi("x", T.FLOAT, [3]), vi("rate", T.INT64, [])],
        [vi("y", T.FLOAT, None)],
        [helper.make_tensor("limit", T.INT64, [], [8000])],
    )


X = np.array([0.5, -1.0, 2.0], np.float32)


def test_if_with_a_static_condition_picks_a_branch_of_any_shape():
    proto = _if_model(same_shapes=False)
    model = jaxonnx.load(proto)
    for rate in (16000, 8000):
        expected = _ort(proto, {"x": X, "rate": np.array(rate)})[0]
        np.testing.assert_allclose(model(X, np.array(rate))[0], expected, rtol=1e-6)
        # A numpy value passed inside the jitted function is known at trace time.
        jitted = jax.jit(lambda x, r=rate: model(x, np.int64(r)))
        np.testing.assert_allclose(jitted(X)[0], expected, rtol=1e-6)
    grad = jax.grad(lambda x: model(x, np.int64(16000))[0].sum())(X)
    np.testing.assert_allclose(grad, 2 * X, rtol=1e-6)


def test_if_with_a_traced_condition_runs_lax_cond_with_exact_gradients():
    proto = _if_model(same_shapes=True)
    model = jaxonnx.load(proto)
    for rate in (16000, 8000):
        expected = _ort(proto, {"x": X, "rate": np.array(rate)})[0]
        np.testing.assert_allclose(jax.jit(model)(X, np.array(rate))[0], expected, rtol=1e-6)
        grad = jax.grad(lambda x, r=rate: jax.jit(model)(x, jnp.asarray(r))[0].sum())(X)
        np.testing.assert_allclose(grad, 2 * X if rate > 8000 else np.cos(X), rtol=1e-6)
    text = str(jax.make_jaxpr(model)(X, np.array(5)))
    assert "cond[" in text


def test_if_branches_that_differ_under_a_traced_condition_are_a_clear_error():
    model = jaxonnx.load(_if_model(same_shapes=False))
    with pytest.raises(
        jaxonnx.OnnxTypeError,
        match=r"Node 'choose' \(If-16.*traced `cond` and branches whose outputs "
        r"differ \(output 0: float32\[3\] against float32\[\]\).*Make `cond` known at trace time",
    ):
        jax.jit(model)(X, np.array(16000))


def test_if_exports_with_jax_export():
    model = jaxonnx.load(_if_model(same_shapes=True))
    exported = jax.export.export(jax.jit(model))(X, np.array(3))
    restored = jax.export.deserialize(exported.serialize())
    np.testing.assert_allclose(restored.call(X, np.array(3))[0], model(X, np.array(3))[0], rtol=1e-6)


# ------------------------------------------------------------------------------ Loop


def _loop_model(trip: bool, cond: bool, exit_at: float | None = None, scan_output: bool = True):
    """acc += x * i per iteration; with `exit_at`, the body's condition is acc.sum() < exit_at."""
    body_nodes = [
        helper.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
        helper.make_node("Mul", ["x", "fi"], ["xi"]),
        helper.make_node("Add", ["acc", "xi"], ["acc2"]),
        helper.make_node("Identity", ["acc"], ["s"]),
    ]
    if exit_at is None:
        body_nodes.append(helper.make_node("Identity", ["c"], ["c2"]))
    else:
        body_nodes += [
            helper.make_node("ReduceSum", ["acc2"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "bound"], ["c2"]),
        ]
    outputs = [vi("c2", T.BOOL, []), vi("acc2", T.FLOAT, [3])] + ([vi("s", T.FLOAT, [3])] if scan_output else [])
    body = helper.make_graph(
        body_nodes, "body", [vi("i", T.INT64, []), vi("c", T.BOOL, []), vi("acc", T.FLOAT, [3])], outputs
    )
    initializers = [helper.make_tensor("bound", T.FLOAT, [], [exit_at or 0.0])]
    inputs = [vi("x", T.FLOAT, [3]), vi("a0", T.FLOAT, [3])]
    if trip:
        initializers.append(helper.make_tensor("M", T.INT64, [], [5]))
    if cond:
        inputs.append(vi("c0", T.BOOL, []))
    node = helper.make_node(
        "Loop",
        ["M" if trip else "", "c0" if cond else "", "a0"],
        ["y", "ys"] if scan_output else ["y"],
        body=body,
        name="loop",
    )
    graph_outputs = [vi("y", T.FLOAT, [3])] + ([vi("ys", T.FLOAT, None)] if scan_output else [])
    return _model([node], inputs, graph_outputs, initializers)


A0 = np.ones(3, np.float32)


@pytest.mark.parametrize(
    "trip, cond, exit_at", [(True, False, None), (False, True, 20.0), (True, True, 20.0), (True, True, None)]
)
def test_loop_forms_match_onnxruntime_eagerly_and_jitted(trip, cond, exit_at):
    proto = _loop_model(trip, cond, exit_at)
    feed = {"x": X, "a0": A0} | ({"c0": np.array(True)} if cond else {})
    expected = _ort(proto, feed)
    model = jaxonnx.load(proto)
    for got, expect in zip(model.run(None, feed), expected):
        np.testing.assert_allclose(got, expect, rtol=1e-6)
    if exit_at is None:  # a static trip count, no early exit: lax.scan (the condition passed as numpy)
        jitted = jax.jit(lambda x, a: model(x, a, *([np.array(True)] if cond else [])))
        for got, expect in zip(jitted(X, A0), expected):
            np.testing.assert_allclose(got, expect, rtol=1e-6)
        assert "scan[" in str(jax.make_jaxpr(lambda x, a: model(x, a, *([np.array(True)] if cond else [])))(X, A0))


def test_loop_with_neither_trip_count_nor_condition_runs_until_the_body_says_stop():
    proto = _loop_model(False, False, 20.0)
    expected = _ort(proto, {"x": X, "a0": A0})
    got = jaxonnx.load(proto)(X, A0)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_loop_as_scan_has_exact_gradients_and_vmaps():
    model = jaxonnx.load(_loop_model(True, False))
    f = lambda x: model(x, A0)[0]  # noqa: E731
    # Under jax.jit: one program each, not one per primitive of the scan's derivative.
    check_grads(jax.jit(f), (X,), order=1, modes=["rev"], eps=1e-2, atol=1e-2, rtol=1e-2)
    grad = jax.jit(jax.grad(lambda x: f(x).sum()))(X)
    np.testing.assert_allclose(grad, np.full(3, 0 + 1 + 2 + 3 + 4, np.float32))
    xs = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(jax.jit(jax.vmap(f))(xs), np.stack([f(x) for x in xs]), rtol=1e-6)


def test_loop_with_a_traced_exit_needs_a_bound_for_scan_outputs_and_gradients():
    proto = _loop_model(False, True, 20.0)
    feed = (X, A0, np.array(True))
    expected = _ort(proto, dict(zip(["x", "a0", "c0"], feed)))
    with pytest.raises(
        jaxonnx.StaticValueError, match=r"Node 'loop' \(Loop-16.*scan outputs.*Give a bound.*loop_bounds=\{'loop': N\}"
    ):
        jax.jit(jaxonnx.load(proto))(*feed)
    bounded = jaxonnx.load(proto, size_hints={"y": 8})
    y, ys = jax.jit(bounded)(*feed)
    np.testing.assert_allclose(y, expected[0], rtol=1e-6)
    rows = expected[1].shape[0]
    np.testing.assert_allclose(ys[:rows], expected[1], rtol=1e-6)
    assert ys.shape[0] == 8 and not np.any(ys[rows:])  # padding rows are zeros, as documented
    grad = jax.grad(lambda x: jax.jit(bounded)(x, A0, np.array(True))[0].sum())(X)
    assert np.all(np.isfinite(grad))
    too_small = jaxonnx.load(proto, size_hints={"y": 2})
    with pytest.raises(Exception, match="Loop node 'loop' needs more than its bound of 2 iterations"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            jax.block_until_ready(jax.jit(too_small)(*feed))


def test_loop_without_scan_outputs_and_a_traced_exit_runs_a_while_loop():
    proto = _loop_model(False, True, 20.0, scan_output=False)
    feed = (X, A0, np.array(True))
    expected = _ort(proto, dict(zip(["x", "a0", "c0"], feed)))
    model = jaxonnx.load(proto)
    np.testing.assert_allclose(jax.jit(model)(*feed)[0], expected[0], rtol=1e-6)
    assert "while[" in str(jax.make_jaxpr(model)(*feed))


# ------------------------------------------------------------------------------ Scan


def _scan_model():
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "xt"], ["s2"]), helper.make_node("Mul", ["s2", "xt"], ["yt"])],
        "body",
        [vi("s", T.FLOAT, [2]), vi("xt", T.FLOAT, [2])],
        [vi("s2", T.FLOAT, [2]), vi("yt", T.FLOAT, [2])],
    )
    return _model(
        [
            helper.make_node(
                "Scan",
                ["s0", "xs"],
                ["s", "ys"],
                body=body,
                num_scan_inputs=1,
                scan_input_directions=[1],
                scan_output_axes=[1],
            )
        ],
        [vi("s0", T.FLOAT, [2]), vi("xs", T.FLOAT, [4, 2])],
        [vi("s", T.FLOAT, [2]), vi("ys", T.FLOAT, [2, 4])],
    )


def test_scan_matches_onnxruntime_with_gradients_and_vmap():
    proto = _scan_model()
    s0, xs = np.array([0.5, 1.0], np.float32), np.arange(8, dtype=np.float32).reshape(4, 2) / 4
    expected = _ort(proto, {"s0": s0, "xs": xs})
    model = jaxonnx.load(proto)
    for got in (model(s0, xs), jax.jit(model)(s0, xs)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    # Gradients and vmap under jax.jit: a few programs, not one per primitive of the scan's derivative.
    check_grads(jax.jit(lambda s, x: model(s, x)[1]), (s0, xs), order=1, modes=["rev"], eps=1e-2, atol=1e-2, rtol=1e-2)
    batch = np.stack([xs, 2 * xs])
    np.testing.assert_allclose(
        jax.jit(jax.vmap(lambda x: model(s0, x)[1]))(batch), np.stack([model(s0, x)[1] for x in batch]), rtol=1e-6
    )


# ------------------------------------------------------------------------------ sequences


def test_a_loop_that_appends_to_a_sequence_gives_the_expected_sequence():
    # onnx's test_loop16_seq_none case, whose output onnx's runner cannot compare (see the skip);
    # node_cases() shares the run's one build of onnx's cases (collecting them here took ~10 s).
    case = next(c for c in node_cases() if c.name == "test_loop16_seq_none")
    inputs, outputs = case.data_sets[0]
    (got,) = jaxonnx.backend.run_model(case.model, inputs)
    assert len(got) == len(outputs[0]) == 6
    for g, e in zip(got, outputs[0]):
        np.testing.assert_array_equal(g, e)


def test_sequence_ops_build_split_and_join():
    nodes = [
        helper.make_node("SplitToSequence", ["x", "two"], ["seq"], axis=0),
        helper.make_node("SequenceLength", ["seq"], ["n"]),
        helper.make_node("SequenceAt", ["seq", "last"], ["tail"]),
        helper.make_node("ConcatFromSequence", ["seq"], ["back"], axis=0),
    ]
    proto = _model(
        nodes,
        [vi("x", T.FLOAT, [5, 2])],
        [
            vi("n", T.INT64, []),
            vi("tail", T.FLOAT, None),
            vi("back", T.FLOAT, [5, 2]),
            helper.make_tensor_sequence_value_info("seq", T.FLOAT, None),
        ],
        [helper.make_tensor("two", T.INT64, [], [2]), helper.make_tensor("last", T.INT64, [], [-1])],
    )
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    expected = _ort(proto, {"x": x})
    model = jaxonnx.load(proto)
    for got in (model(x), jax.jit(model)(x)):
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])
        np.testing.assert_array_equal(got[2], expected[2])
        assert [np.shape(s) for s in got[3]] == [(2, 2), (2, 2), (1, 2)]


# ------------------------------------------------------------------------------ errors


def test_unsupported_ops_inside_subgraphs_are_named_with_their_path():
    then = helper.make_graph(
        [helper.make_node("Frobnicate", ["x"], ["t"], name="decode")], "then", [], [vi("t", T.UINT8, None)]
    )
    otherwise = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [vi("e", T.UINT8, None)])
    proto = _model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=otherwise, name="pick")],
        [vi("c", T.BOOL, []), vi("x", T.UINT8, [4])],
        [vi("y", T.UINT8, None)],
    )
    with pytest.raises(jaxonnx.UnsupportedOpError, match=r"Frobnicate \(1 node\).*node '/pick/then_branch/decode'"):
        jaxonnx.load(proto)
    assert jaxonnx.unsupported_nodes(proto) == ["node '/pick/then_branch/decode' (Frobnicate): not supported"]


def test_a_subgraph_reading_a_name_no_scope_defines_is_refused_at_load():
    then = helper.make_graph([helper.make_node("Identity", ["nowhere"], ["t"])], "then", [], [vi("t", T.FLOAT, None)])
    otherwise = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [vi("e", T.FLOAT, None)])
    proto = _model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=otherwise, name="pick")],
        [vi("c", T.BOOL, []), vi("x", T.FLOAT, [4])],
        [vi("y", T.FLOAT, None)],
    )
    with pytest.raises(jaxonnx.ModelLoadError, match=r"The subgraph /pick/then_branch reads 'nowhere', which no node"):
        jaxonnx.load(proto)


def _loop_with_a_counter_declared(iteration_shape, condition_shape, *, early_exit: bool):
    """As onnxruntime's crop-and-resize and fp16 transform test files write the body (built
    with onnx.helper): the iteration number and the condition declared ``[1]`` (the IR says
    scalar), the number used as Gather indices and stacked as a scan output."""
    from onnx import numpy_helper

    keep_going = (
        [
            helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["below"]),
            helper.make_node("Reshape", ["below", "condition_shape"], ["cond_out"]),
        ]
        if early_exit
        else [helper.make_node("Identity", ["cond"], ["cond_out"])]
    )
    body = helper.make_graph(
        [
            helper.make_node("Gather", ["rows", "i"], ["row"], axis=0),
            helper.make_node("Add", ["acc", "row"], ["acc_out"]),
            *keep_going,
            helper.make_node("Identity", ["i"], ["i_scan"]),
            helper.make_node("Identity", ["cond"], ["cond_scan"]),
        ],
        "body",
        [vi("i", T.INT64, iteration_shape), vi("cond", T.BOOL, condition_shape), vi("acc", T.FLOAT, [1, 2])],
        [
            vi("cond_out", T.BOOL, condition_shape),
            vi("acc_out", T.FLOAT, [1, 2]),
            vi("i_scan", T.INT64, iteration_shape),
            vi("cond_scan", T.BOOL, condition_shape),
        ],
    )
    from_array = numpy_helper.from_array
    return _model(
        [helper.make_node("Loop", ["trips", "", "acc0"], ["acc", "iterations", "conditions"], name="loop", body=body)],
        [vi("rows", T.FLOAT, [4, 2]), vi("acc0", T.FLOAT, [1, 2])],
        [vi("acc", T.FLOAT, None), vi("iterations", T.INT64, None), vi("conditions", T.BOOL, None)],
        [
            from_array(np.array(4, np.int64), "trips"),
            from_array(np.array(9.0, np.float32), "limit"),
            from_array(np.array(condition_shape, np.int64), "condition_shape"),
        ],
        opset=13,
    )


@pytest.mark.parametrize("early_exit", [False, True], ids=["all_trips", "traced_exit"])
@pytest.mark.parametrize(("iteration_shape", "condition_shape"), [([1], [1]), ([1], []), ([], [1]), ([], [])])
def test_loop_counter_and_condition_as_the_body_declares_them(iteration_shape, condition_shape, early_exit):
    # Issue 41 §4: a body declaring them [1] got scalars; onnxruntime follows the declaration.
    proto = _loop_with_a_counter_declared(iteration_shape, condition_shape, early_exit=early_exit)
    feed = {"rows": np.arange(8, dtype=np.float32).reshape(4, 2), "acc0": np.zeros((1, 2), np.float32)}
    expected = _ort(proto, feed)
    assert expected[1].shape == (3 if early_exit else 4, *iteration_shape)
    assert expected[2].shape == expected[1].shape[:1] + tuple(condition_shape)
    model = jaxonnx.load(proto)
    for jitted, run in ((False, model), (True, jax.jit(model))):
        final, *scans = (np.asarray(value) for value in run(**feed))
        np.testing.assert_array_equal(final, expected[0])
        for actual, want in zip(scans, expected[1:], strict=True):
            if jitted and early_exit:  # a traced exit: the scan outputs are the trip count long, zeros past the exit
                assert actual.shape == (4, *want.shape[1:]) and not actual[3:].any()
                actual = actual[:3]
            assert actual.shape == want.shape
            np.testing.assert_array_equal(actual, want)
