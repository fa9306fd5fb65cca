"""The padding contract of size hints (jaxonnx/_core/padding.py): eager and jax.jit agree,
and padding never reaches a result silently. The graphs are written as PyTorch's exporters
write boolean and integer indexing: ``x[mask]`` (NonZero, Transpose, GatherND), ``x[r, c]``
through flat-index arithmetic (TorchScript: Split, Squeeze, Mul, Add, Gather), their sums
and means."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

vi = helper.make_tensor_value_info
X = np.arange(12, dtype=np.float32).reshape(3, 4)
MASK = X % 3 == 0
INTS = {"one": np.array([1], np.int64), "four": np.array(4, np.int64), "minus1": np.array([-1], np.int64)}


def _model(nodes, outputs):
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        outputs,
        initializer=[numpy_helper.from_array(v, k) for k, v in INTS.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


BOOLEAN_INDEX = [
    helper.make_node("NonZero", ["mask"], ["nz"]),
    helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
    helper.make_node("GatherND", ["x", "nzt"], ["selected"]),
]
FLAT_INDEX = [  # x[r, c] with (r, c) = mask.nonzero(), as flat indices
    helper.make_node("NonZero", ["mask"], ["nz"]),
    helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
    helper.make_node("Split", ["nzt"], ["r2", "c2"], axis=1, num_outputs=2),
    helper.make_node("Squeeze", ["r2", "one"], ["r"]),
    helper.make_node("Squeeze", ["c2", "one"], ["c"]),
    helper.make_node("Mul", ["r", "four"], ["rf"]),
    helper.make_node("Add", ["rf", "c"], ["flat"]),
    helper.make_node("Reshape", ["x", "minus1"], ["xf"]),
    helper.make_node("Gather", ["xf", "flat"], ["selected"]),
]


def _both(model):
    return [model, jax.jit(model)]


def test_a_boolean_index_and_its_sum_are_the_same_eagerly_and_jitted():
    proto = _model(
        BOOLEAN_INDEX + [helper.make_node("ReduceSum", ["selected"], ["total"], keepdims=0)],
        [vi("selected", T.FLOAT, None), vi("total", T.FLOAT, [])],
    )
    exact = jaxonnx.load(proto)(X, MASK)
    np.testing.assert_array_equal(exact[0], X[MASK])
    hinted = jaxonnx.load(proto, size_hints={"nz": 8})
    for model in _both(hinted):
        selected, total = model(X, MASK)
        np.testing.assert_array_equal(selected, [0, 3, 6, 9, 0, 0, 0, 0])  # the real rows, then zero padding
        assert float(total) == float(X[MASK].sum())
    for grad in (jax.grad(lambda x: hinted(x, MASK)[1])(X), jax.jit(jax.grad(lambda x, m: hinted(x, m)[1]))(X, MASK)):
        np.testing.assert_array_equal(grad, MASK.astype(np.float32))


@pytest.mark.parametrize("reduce", ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin"])
def test_a_reduction_over_the_padded_axis_leaves_the_padding_out(reduce):
    # Shifted so that the padding (zeros after the gather, then -5) would win every one of these.
    nodes = BOOLEAN_INDEX + [
        helper.make_node("Sub", ["selected", "five"], ["shifted"]),
        helper.make_node(reduce, ["shifted"], ["total"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        [vi("total", T.INT64 if reduce.startswith("Arg") else T.FLOAT, [])],
        initializer=[numpy_helper.from_array(np.array(5, np.float32), "five")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    exact = jaxonnx.load(proto)(X, MASK)[0]
    np.testing.assert_allclose(
        exact, getattr(np, reduce[6:].lower() if reduce.startswith("Reduce") else reduce.lower())(X[MASK] - 5)
    )
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        np.testing.assert_allclose(model(X, MASK)[0], exact, rtol=1e-6)


def test_flat_index_arithmetic_keeps_the_padding_marked():
    # TorchScript's x[r, c].sum(): Mul and Add compute on the padded indices; the mark stays.
    proto = _model(
        FLAT_INDEX + [helper.make_node("ReduceSum", ["selected"], ["total"], keepdims=0)],
        [vi("selected", T.FLOAT, None), vi("total", T.FLOAT, [])],
    )
    assert float(jaxonnx.load(proto)(X, MASK)[1]) == float(X[MASK].sum())
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        selected, total = model(X, MASK)
        np.testing.assert_array_equal(selected, [0, 3, 6, 9, 0, 0, 0, 0])
        assert float(total) == float(X[MASK].sum())


def test_a_sum_of_padded_indices_counts_the_real_ones_only():
    proto = _model(
        [helper.make_node("NonZero", ["mask"], ["nz"]), helper.make_node("ReduceSum", ["nz"], ["total"], keepdims=0)],
        [vi("total", T.INT64, [])],
    )
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        assert int(model(X, MASK)[0]) == int(np.nonzero(MASK)[0].sum() + np.nonzero(MASK)[1].sum())


def test_gather_and_scatter_treat_padded_indices_as_nothing():
    nodes = [
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Reshape", ["x", "minus1"], ["xf"]),
        helper.make_node("Reshape", ["mask", "minus1"], ["mf"]),
        helper.make_node("NonZero", ["mf"], ["flat_nz"]),
        helper.make_node("Squeeze", ["flat_nz", "zero"], ["flat"]),
        helper.make_node("Gather", ["xf", "flat"], ["picked"]),
        helper.make_node("Unsqueeze", ["flat", "one"], ["flat_column"]),
        helper.make_node("ScatterND", ["xf", "flat_column", "picked"], ["written"], reduction="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        [vi("picked", T.FLOAT, None), vi("written", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in {**INTS, "zero": np.array([0], np.int64)}.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    hinted = jaxonnx.load(proto, size_hints={"nz": 8, "flat_nz": 6})
    for model in _both(hinted):
        picked, written = model(X, MASK)
        np.testing.assert_array_equal(picked, [0, 3, 6, 9, 0, 0])
        np.testing.assert_array_equal(written, np.where(MASK, 2 * X, X).reshape(-1))


def test_a_product_keeps_padded_rows_marked_and_leaves_them_out_of_a_contraction():
    # A Mixture-of-Experts layer as Optimum exports it: the rows routed to an expert (NonZero),
    # gathered, through the expert's MatMul, scattered back with add; and a product over the
    # padded axis (shifted^T @ shifted), which must leave the padding out.
    weight = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    nodes = [
        helper.make_node("NonZero", ["routed"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "zero"], ["rows"]),
        helper.make_node("Gather", ["x", "rows"], ["picked"]),
        helper.make_node("MatMul", ["picked", "w"], ["expert"]),
        helper.make_node("Shape", ["expert"], ["expert_shape"]),
        helper.make_node("Unsqueeze", ["rows", "one"], ["rows_column"]),
        helper.make_node("Expand", ["rows_column", "expert_shape"], ["indices"]),
        helper.make_node("ScatterElements", ["zeros", "indices", "expert"], ["out"], axis=0, reduction="add"),
        helper.make_node("Add", ["picked", "half"], ["shifted"]),  # padded rows are 0.5 now, not 0
        helper.make_node("Transpose", ["shifted"], ["shifted_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["shifted_t", "shifted"], ["gram"]),
    ]
    initializer = {
        **INTS,
        "zero": np.array([0], np.int64),
        "w": weight,
        "zeros": np.zeros((3, 2), np.float32),
        "half": np.array(0.5, np.float32),
    }
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("routed", T.BOOL, [3])],
        [vi("out", T.FLOAT, None), vi("gram", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in initializer.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    routed = np.array([True, False, True])
    picked = X[routed]
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 3})):
        out, gram = model(X, routed)
        np.testing.assert_array_equal(out, np.where(routed[:, None], X @ weight, 0))
        np.testing.assert_array_equal(gram, (picked + 0.5).T @ (picked + 0.5))


def test_a_product_of_a_value_with_itself_keeps_its_rows_and_columns_marked():
    # MatMul(M, M) passes one array as both operands: its rows stay rows and its columns
    # columns (the rule tells the operands apart by position, not by identity).
    nodes = [
        helper.make_node("NonZero", ["routed"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "zero"], ["rows"]),
        helper.make_node("Gather", ["x", "rows"], ["picked"]),
        helper.make_node("Gather", ["picked", "first"], ["column"], axis=1),
        helper.make_node("Add", ["column", "half"], ["v"]),  # padded entries are 0.5, not 0
        helper.make_node("Unsqueeze", ["v", "one"], ["v_column"]),
        helper.make_node("Unsqueeze", ["v", "zero"], ["v_row"]),
        helper.make_node("Mul", ["v_column", "v_row"], ["outer"]),
        helper.make_node("MatMul", ["outer", "outer"], ["square"]),
        helper.make_node("ReduceSum", ["square", "zero"], ["column_sums"], keepdims=0),  # over the marked rows
    ]
    initializer = {
        **INTS,
        "zero": np.array([0], np.int64),
        "first": np.array(0, np.int64),
        "half": np.array(0.5, np.float32),
    }
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("routed", T.BOOL, [3])],
        [vi("column_sums", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in initializer.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    routed = np.array([True, False, True])
    v = X[routed, 0] + 0.5
    outer = np.outer(v, v)
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 3})):
        (column_sums,) = model(X, routed)  # 3 long: the output keeps its padding, past the 2 real entries
        np.testing.assert_allclose(np.asarray(column_sums)[:2], (outer @ outer).sum(0), rtol=1e-6)


def test_the_shape_of_a_padded_value_builds_marked_values():
    # n = x[mask].shape[0]: ConstantOfShape([n]) and Range(0, n) are n long, of which the real
    # count are real; their sums and the graph output `n` itself are the real values.
    nodes = BOOLEAN_INDEX + [
        helper.make_node("Shape", ["selected"], ["n"]),
        helper.make_node(
            "ConstantOfShape", ["n"], ["ones"], value=numpy_helper.from_array(np.array([1.0], np.float32))
        ),
        helper.make_node("ReduceSum", ["ones"], ["count"], keepdims=0),
        helper.make_node("Squeeze", ["n"], ["n_scalar"]),
        helper.make_node("Range", ["start", "n_scalar", "step"], ["positions"]),
        helper.make_node("ReduceSum", ["positions"], ["position_sum"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        [vi("n", T.INT64, [1]), vi("count", T.FLOAT, []), vi("position_sum", T.INT64, [])],
        initializer=[
            numpy_helper.from_array(np.array(0, np.int64), "start"),
            numpy_helper.from_array(np.array(1, np.int64), "step"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    real = int(MASK.sum())
    for model in [jaxonnx.load(proto), *_both(jaxonnx.load(proto, size_hints={"nz": 8}))]:
        n, count, position_sum = model(X, MASK)
        assert list(np.asarray(n)) == [real] and float(count) == real and int(position_sum) == sum(range(real))


def test_top_k_ranks_the_padding_last():
    nodes = BOOLEAN_INDEX + [
        helper.make_node("Neg", ["selected"], ["negated"]),  # the padding (0) would rank first
        helper.make_node("TopK", ["negated", "three"], ["values", "indices"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        [vi("values", T.FLOAT, None), vi("indices", T.INT64, None)],
        initializer=[numpy_helper.from_array(np.array([3], np.int64), "three")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        values, indices = model(X, MASK)
        np.testing.assert_array_equal(values, [-0.0, -3.0, -6.0])
        np.testing.assert_array_equal(indices, [0, 1, 2])


@pytest.mark.parametrize(
    "node, message",
    [
        (
            helper.make_node("Softmax", ["selected"], ["out"], axis=0),
            r"has no rule for padded entries \(its contract sets no `padding`\)",
        ),
        (
            helper.make_node("CumSum", ["selected", "zero"], ["out"]),
            r"has no rule for padded entries \(its contract sets no `padding`\)",
        ),
    ],
)
def test_an_op_without_a_padding_rule_is_refused_naming_the_node(node, message):
    graph = helper.make_graph(
        BOOLEAN_INDEX + [node],
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        [vi("out", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array(0, np.int64), "zero")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        with pytest.raises(
            jaxonnx.OnnxValidationError,
            match=rf"The size-hinted output 'nz' \(of node 'NonZero_0'\) is "
            rf"padded past its real length, and its padding reaches node '{node.op_type}_3' "
            rf"\({node.op_type}-\d+\), which {message}: the result would be silently wrong",
        ):
            model(X, MASK)


def _if_model(condition, then_nodes, else_nodes, outputs, initializers=(), before=()):
    branches = {
        name: helper.make_graph(nodes, name, [], [vi("inner", T.FLOAT, None)])
        for name, nodes in (("then_branch", then_nodes), ("else_branch", else_nodes))
    }
    nodes = (
        BOOLEAN_INDEX
        + list(before)
        + [
            helper.make_node("If", [condition], ["out"], **branches),
            helper.make_node("ReduceSum", ["out"], ["total"], keepdims=0),
        ]
    )
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4]), vi("flag", T.BOOL, [])],
        [vi(o, T.FLOAT, None) for o in outputs],
        initializer=list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("flag", [True, False])
def test_marks_follow_a_padded_value_into_an_if_and_out_of_it(flag):
    # then: the selected values doubled; else: their maximum, broadcast (a reduction inside
    # the branch leaves the padding out). Under jit the flag is traced (lax.cond).
    proto = _if_model(
        "flag",
        [helper.make_node("Add", ["selected", "selected"], ["inner"])],
        [
            helper.make_node("ReduceMax", ["selected"], ["top"], keepdims=1),
            helper.make_node("Mul", ["selected", "top"], ["inner"]),
        ],
        ["out", "total"],
    )
    want = X[MASK] * 2 if flag else X[MASK] * X[MASK].max()
    exact, exact_total = jaxonnx.load(proto)(X, MASK, np.array(flag))
    np.testing.assert_array_equal(exact, want)
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        out, total = model(X, MASK, np.array(flag))
        np.testing.assert_array_equal(np.asarray(out)[: len(want)], want)
        assert float(total) == float(exact_total) == float(want.sum())


def test_an_if_on_a_padded_length_follows_the_real_length():
    # TorchScript's `if x.numel() == 0: empty else: x` (torchvision's batched_nms): the hinted
    # length is never 0, the real one is when nothing is selected.
    empty = numpy_helper.from_array(np.zeros(0, np.float32))
    nodes_before = [
        helper.make_node("Size", ["selected"], ["numel"]),
        helper.make_node("Equal", ["numel", "zero"], ["none"]),
    ]
    proto = _if_model(
        "none",
        [helper.make_node("Constant", [], ["inner"], value=empty)],
        [helper.make_node("Mul", ["selected", "selected"], ["inner"])],
        ["out", "total"],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")],
        before=nodes_before,
    )
    models = _both(jaxonnx.load(proto, size_hints={"nz": 8}))  # one jax.jit program for both masks
    for mask in (MASK, np.zeros_like(MASK)):
        want = X[mask] ** 2
        for model in models:
            out, total = model(X, mask, np.array(True))
            assert np.shape(out) == (8,)
            np.testing.assert_array_equal(np.asarray(out)[: len(want)], want)
            assert float(total) == float(want.sum())


def test_a_loop_body_reads_a_padded_value_marked_and_its_reduction_leaves_the_padding_out():
    # Each iteration adds the selected values' maximum (ReduceMax inside the body, over the
    # outer padded value) to the carried total; under jit the body runs as a lax.scan.
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("ReduceMax", ["negated"], ["top"], keepdims=0),
            helper.make_node("Add", ["total_in", "top"], ["total_out"]),
        ],
        "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("total_in", T.FLOAT, [])],
        [vi("cond_out", T.BOOL, []), vi("total_out", T.FLOAT, [])],
    )
    nodes = BOOLEAN_INDEX + [
        helper.make_node("Neg", ["selected"], ["negated"]),
        helper.make_node("Loop", ["trips", "", "start"], ["total"], body=body),
    ]
    # The maximum of negative values: never the padding's 0.
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        [vi("total", T.FLOAT, None)],
        initializer=[
            numpy_helper.from_array(np.array(3, np.int64), "trips"),
            numpy_helper.from_array(np.array(0, np.float32), "start"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    want = 3 * (-X[MASK]).max()
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        np.testing.assert_allclose(model(X + 1, MASK)[0], 3 * (-(X + 1)[MASK]).max())
    assert float(jaxonnx.load(proto)(X, MASK)[0]) == want


def test_a_loop_whose_body_returns_a_padded_value_is_refused():
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Identity", ["selected"], ["scan_out"]),
        ],
        "body",
        [vi("i", T.INT64, []), vi("cond_in", T.BOOL, [])],
        [vi("cond_out", T.BOOL, []), vi("scan_out", T.FLOAT, None)],
    )
    nodes = BOOLEAN_INDEX + [helper.make_node("Loop", ["trips", ""], ["out"], body=body)]
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [3, 4]), vi("mask", T.BOOL, [3, 4])],
        [vi("out", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array(2, np.int64), "trips")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    np.testing.assert_array_equal(jaxonnx.load(proto)(X, MASK)[0], np.stack([X[MASK]] * 2))
    for model in _both(jaxonnx.load(proto, size_hints={"nz": 8})):
        with pytest.raises(
            jaxonnx.OnnxValidationError,
            match=r"reaches node 'Loop_3' \(Loop-\d+\), which computes its "
            r"outputs from its subgraph's padded outputs",
        ):
            model(X, MASK)


def _ssdlite_postprocess():
    """SSDlite's post-processing as torchvision writes it: the boxes whose score passes the
    threshold (NonZero, a size hint), then ``batched_nms``'s coordinate trick, which
    ``torch.jit._script_if_tracing`` exports as an If on ``boxes.numel() == 0`` whose
    else-branch offsets each class's boxes by ``boxes.max() + 1`` and runs NonMaxSuppression
    (a size hint of its own), its box column cut by Slice and Squeeze as torchvision's
    symbolic writes it."""
    ints = {"ax0": [0], "ax1": [1], "ax01": [0, 1], "max_out": [10], "col": [2], "col_end": [3], "zero": 0}
    initializers = [numpy_helper.from_array(np.asarray(v, np.int64), k) for k, v in ints.items()]
    initializers += [
        numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in {"thr": 0.3, "iou": [0.2], "one": 1.0}.items()
    ]
    else_branch = helper.make_graph(
        [
            helper.make_node("ReduceMax", ["boxes"], ["max_coordinate"], keepdims=0),
            helper.make_node("Add", ["max_coordinate", "one"], ["step"]),
            helper.make_node("Cast", ["labels"], ["label_values"], to=T.FLOAT),
            helper.make_node("Mul", ["label_values", "step"], ["offsets"]),
            helper.make_node("Unsqueeze", ["offsets", "ax1"], ["offset_columns"]),
            helper.make_node("Add", ["boxes", "offset_columns"], ["boxes_for_nms"]),
            helper.make_node("Unsqueeze", ["boxes_for_nms", "ax0"], ["boxes3"]),
            helper.make_node("Unsqueeze", ["scores", "ax01"], ["scores3"]),
            helper.make_node("NonMaxSuppression", ["boxes3", "scores3", "max_out", "iou"], ["selected_rows"]),
            helper.make_node("Slice", ["selected_rows", "col", "col_end", "ax1"], ["box_column"]),
            helper.make_node("Squeeze", ["box_column", "ax1"], ["picked"]),
        ],
        "nms",
        [],
        [vi("picked", T.INT64, None)],
    )
    then_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["none"], value=numpy_helper.from_array(np.zeros(0, np.int64)))],
        "empty",
        [],
        [vi("none", T.INT64, None)],
    )
    nodes = [
        helper.make_node("Greater", ["scores_all", "thr"], ["keep"]),
        helper.make_node("NonZero", ["keep"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "ax0"], ["idx"]),
        helper.make_node("Gather", ["boxes_all", "idx"], ["boxes"], axis=0),
        helper.make_node("Gather", ["scores_all", "idx"], ["scores"], axis=0),
        helper.make_node("Gather", ["labels_all", "idx"], ["labels"], axis=0),
        helper.make_node("Size", ["boxes"], ["numel"]),
        helper.make_node("Equal", ["numel", "zero"], ["empty"]),
        helper.make_node("If", ["empty"], ["kept"], then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Gather", ["boxes", "kept"], ["kept_boxes"], axis=0),
        helper.make_node("Gather", ["scores", "kept"], ["kept_scores"], axis=0),
        helper.make_node("ReduceSum", ["kept_scores"], ["total"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "ssdlite_postprocess",
        [vi("boxes_all", T.FLOAT, [8, 4]), vi("scores_all", T.FLOAT, [8]), vi("labels_all", T.INT64, [8])],
        [vi(n, T.FLOAT, None) for n in ("kept_boxes", "kept_scores", "total")],
        initializer=initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_ssdlite_postprocessing_runs_nms_in_an_if_on_padded_boxes_as_onnxruntime():
    onnxruntime = pytest.importorskip("onnxruntime")
    proto = _ssdlite_postprocess()
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    rng = np.random.default_rng(0)
    corners = rng.uniform(0, 0.5, (8, 2)).astype(np.float32)  # overlapping: NMS suppresses some
    boxes = np.concatenate([corners, corners + 0.5], axis=1)
    scores = rng.uniform(0, 1, 8).astype(np.float32)
    labels = np.array([0, 1, 0, 0, 1, 0, 0, 1], np.int64)  # two classes: NMS runs per class
    cases = [scores, np.where(scores > 0.5, 0.1, scores).astype(np.float32), np.full(8, 0.1, np.float32)]
    suppressed = 0
    # Loaded once: jax.jit compiles one program for the three cases (a model per case compiled three).
    models = _both(jaxonnx.load(proto, size_hints={"nz": 8, "selected_rows": 8}))
    without_nms_hint = jaxonnx.load(proto, size_hints={"nz": 8})
    for case in cases:
        want = session.run(None, {"boxes_all": boxes, "scores_all": case, "labels_all": labels})
        suppressed += int((case > 0.3).sum()) - len(want[1])
        for model in models:
            kept_boxes, kept_scores, total = model(boxes, case, labels)
            assert np.shape(kept_scores) == (8,)
            np.testing.assert_array_equal(np.asarray(kept_boxes)[: len(want[0])], want[0])
            np.testing.assert_array_equal(np.asarray(kept_scores)[: len(want[1])], want[1])
            assert not np.asarray(kept_scores)[len(want[1]) :].any()  # the padding never reads a real box
            np.testing.assert_allclose(total, want[2], rtol=1e-6)
        # Eagerly without a hint on NMS: its exact rows, those naming a padded box dropped.
        kept_boxes, kept_scores, total = without_nms_hint(boxes, case, labels)
        np.testing.assert_array_equal(np.asarray(kept_scores)[: len(want[1])], want[1])
        np.testing.assert_allclose(total, want[2], rtol=1e-6)
    empty = session.run(None, {"boxes_all": boxes, "scores_all": cases[-1], "labels_all": labels})
    assert suppressed > 0 and len(empty[1]) == 0


# Unique: a size hint sets the length of Y, indices and counts; inverse_indices keeps the
# input's length. Y and counts pad with zeros, indices with an out-of-range index (x.size).
LABELS = np.array([3, 1, 3, 7, 1, 3], np.int64)


def _unique_model(extra_nodes, outputs, sorted=0):
    nodes = [helper.make_node("Unique", ["labels"], ["y", "first", "inverse", "counts"], sorted=sorted), *extra_nodes]
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("labels", T.INT64, [6])],
        outputs,
        initializer=[numpy_helper.from_array(np.arange(10, 70, 10, dtype=np.float32), "table")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_unique_with_a_hint_is_the_same_eagerly_and_jitted():
    proto = _unique_model([], [vi(n, T.INT64, None) for n in ("y", "first", "inverse", "counts")])
    exact = jaxonnx.load(proto)(LABELS)
    for got, want in zip(exact, ([3, 1, 7], [0, 1, 3], [0, 1, 0, 2, 1, 0], [3, 2, 1])):
        np.testing.assert_array_equal(got, want)
    for model in _both(jaxonnx.load(proto, size_hints={"y": 5})):
        y, first, inverse, counts = model(LABELS)
        np.testing.assert_array_equal(y, [3, 1, 7, 0, 0])
        np.testing.assert_array_equal(first, [0, 1, 3, 6, 6])  # 6 = the input's size: out of range
        np.testing.assert_array_equal(inverse, exact[2])  # never padded
        np.testing.assert_array_equal(counts, [3, 2, 1, 0, 0])


def test_unique_without_a_hint_under_jit_says_how_to_give_one():
    model = jaxonnx.load(_unique_model([], [vi("y", T.INT64, None)]))
    with pytest.raises(
        jaxonnx.StaticValueError,
        match=r"Unique-11.*number of unique values is unknown at trace time"
        r".*size_hints=\{'y': <length>\}",
    ):
        jax.jit(model)(LABELS)


def test_unique_padding_is_left_out_of_sums_and_reads_zeros():
    nodes = [
        helper.make_node("ReduceSum", ["y"], ["y_sum"], keepdims=0),
        helper.make_node("ReduceSum", ["counts"], ["count_sum"], keepdims=0),
        helper.make_node("Gather", ["table", "first"], ["picked"]),  # padded indices read zeros
        helper.make_node("ReduceSum", ["picked"], ["picked_sum"], keepdims=0),
        helper.make_node("Gather", ["table", "inverse"], ["per_label"]),  # inverse_indices is not padded
        helper.make_node("Add", ["inverse", "inverse"], ["twice"]),
        helper.make_node("ReduceSum", ["first"], ["first_sum"], keepdims=0),  # padding: out-of-range indices, left out
        helper.make_node("ReduceMean", ["counts"], ["count_mean"], keepdims=0),  # divides by the real count
        helper.make_node("Gather", ["table", "counts"], ["by_count"]),  # zero padding as indices: marked, reads zeros
    ]
    proto = _unique_model(
        nodes,
        [
            vi("y_sum", T.INT64, []),
            vi("count_sum", T.INT64, []),
            vi("picked_sum", T.FLOAT, []),
            vi("per_label", T.FLOAT, None),
            vi("twice", T.INT64, None),
            vi("first_sum", T.INT64, []),
            vi("count_mean", T.INT64, []),
            vi("by_count", T.FLOAT, None),
        ],
    )
    for model in [jaxonnx.load(proto), *_both(jaxonnx.load(proto, size_hints={"counts": 5}))]:
        y_sum, count_sum, picked_sum, per_label, twice, first_sum, count_mean, by_count = model(LABELS)
        assert int(y_sum) == 11 and int(count_sum) == 6 and float(picked_sum) == 10 + 20 + 40
        np.testing.assert_array_equal(per_label, [10, 20, 10, 30, 20, 10])
        np.testing.assert_array_equal(twice, [0, 2, 0, 4, 2, 0])
        assert int(first_sum) == 0 + 1 + 3 and int(count_mean) == 2
        np.testing.assert_array_equal(np.asarray(by_count)[:3], [40, 30, 20])  # table[3], table[2], table[1]
        assert not np.asarray(by_count)[3:].any()  # not table[0], where the padding 0 points


# --------------------------------------------------------------------------- exports
# Boolean and integer indexing as torch.onnx.export writes it, with both exporters
# (tools/export_size_hint_fixtures.py): two input sets with different selection counts,
# and torch's outputs for each.

FIXTURES = Path(__file__).parent / "fixtures" / "size_hints"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())


def _real_part(got, want):
    """``got``'s real entries (the leading ones, as many as torch computed) and the rest."""
    got = np.asarray(got)
    if got.shape == want.shape:
        return got, None
    assert got.shape[1:] == want.shape[1:] and got.shape[0] >= want.shape[0], (got.shape, want.shape)
    return got[: want.shape[0]], got[want.shape[0] :]


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_exports_run_eagerly_and_jitted_as_torch_computes_them(name, x64):
    entry = MANIFEST[name]
    arrays = np.load(FIXTURES / f"{name}.npz")
    with jax.enable_x64(x64):
        model = jaxonnx.load(str(FIXTURES / f"{name}.onnx"), size_hints=entry["size_hints"])
        jitted = jax.jit(model)
        for index in (0, 1):
            inputs = [arrays[f"in{index}_{n}"] for n in entry["inputs"]]
            for run in (model, jitted):
                for output, got in zip(entry["outputs"], run(*inputs)):
                    want = arrays[f"out{index}_{output}"]
                    real, padding = _real_part(got, want)
                    np.testing.assert_allclose(real, want, rtol=1e-6, atol=0, err_msg=f"{name} {output} set {index}")
                    if padding is not None and name.startswith(("select", "index_pairs")):
                        assert not padding.any()  # a gather reads zeros at padded indices
