"""The model interpreter: multi-node graphs against onnx.reference and onnxruntime, static
propagation, traced shape-deciding inputs and size hints, strings, input checks, node errors,
retracing, named scopes, the x64 policy and the backend on top of it.

Every model is built here with ``onnx.helper`` at ``ir_version`` 10, so onnxruntime reads it.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
import jaxonnx.backend

vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, initializers=(), *, opset=21, name="g") -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tests")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def _reference(model: onnx.ModelProto, feed: dict) -> list[np.ndarray]:
    return ReferenceEvaluator(model).run(None, feed)


def _assert_exact(actual, expected):
    """Same dtype, same shape, same values (NaN-free data here, so bit-exact for floats)."""
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)


def _constant(name: str, value, form: str, opset: int) -> onnx.NodeProto:
    """A Constant node for ``value`` using the attribute ``form`` (``value`` below opset 12,
    where Constant has no value_int(s)/value_float(s))."""
    if opset < 12 and form != "value":
        form = "value"
    node_name = f"const_{name}"
    if form == "value":
        return helper.make_node(
            "Constant", [], [name], name=node_name, value=numpy_helper.from_array(np.asarray(value), name)
        )
    if form in ("value_int", "value_float"):
        return helper.make_node("Constant", [], [name], name=node_name, **{form: value.item()})
    return helper.make_node("Constant", [], [name], name=node_name, **{form: value.tolist()})


# --------------------------------------------------------------------------- a chain of all five ops


def _chain_model(opset: int) -> onnx.ModelProto:
    """x[6, 4] -> Slice (Constant-fed bounds) -> GatherElements (indices from Where with a
    value_int) -> Where (value_float / value_floats fill) -> Compress (Constant bool) -> Flatten.

    ``ends`` is itself a Slice of a Constant, and ``starts`` goes through Identity.
    """
    i64 = np.int64
    nodes = [
        _constant("starts_raw", np.array([1, 0], i64), "value_ints", opset),
        helper.make_node("Identity", ["starts_raw"], ["starts"], name="starts_identity"),
        _constant("all_ends", np.array([5, 99, 7], i64), "value", opset),
        _constant("ends_from", np.array([0], i64), "value_ints", opset),
        _constant("ends_to", np.array([2], i64), "value_ints", opset),
        helper.make_node("Slice", ["all_ends", "ends_from", "ends_to"], ["ends"], name="slice_ends"),
        _constant("axes", np.array([0, 1], i64), "value_ints", opset),
        _constant("steps", np.array([2, 1], i64), "value_ints", opset),
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["rows"], name="slice_rows"),
        _constant("zero", np.array(0, i64), "value_int", opset),
        helper.make_node("Where", ["mask", "idx", "zero"], ["safe_idx"], name="where_idx"),
        helper.make_node("GatherElements", ["rows", "safe_idx"], ["gathered"], name="gather", axis=0),
        _constant("fill", np.array(-1.5, np.float32), "value_float", opset),
        _constant("fills", np.array([10.0, 20.0, 30.0, 40.0], np.float32), "value_floats", opset),
        helper.make_node("Where", ["mask", "gathered", "fill"], ["filled"], name="where_fill"),
        helper.make_node("Where", ["column_mask", "filled", "fills"], ["mixed"], name="where_columns"),
        _constant("keep", np.array([True, False, True, True]), "value", opset),
        helper.make_node("Compress", ["mixed", "keep"], ["kept"], name="compress", axis=1),
        helper.make_node("Flatten", ["kept"], ["flat"], name="flatten", axis=0),
    ]
    return _model(
        nodes,
        [
            vi("x", TensorProto.FLOAT, [6, 4]),
            vi("idx", TensorProto.INT64, [2, 4]),
            vi("mask", TensorProto.BOOL, [2, 4]),
        ],
        [vi("flat", TensorProto.FLOAT, [1, 6]), vi("gathered", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(np.array([True, True, False, True]), "column_mask")],
        opset=opset,
        name=f"chain_{opset}",
    )


def _chain_feed(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((6, 4)).astype(np.float32),
        "idx": rng.integers(-2, 2, size=(2, 4)).astype(np.int64),
        "mask": rng.random((2, 4)) < 0.6,
    }


CHAIN_OPSETS = [11, 13, 16, 21, 25]


@pytest.mark.parametrize("opset", CHAIN_OPSETS)
def test_chain_of_all_five_ops_equals_reference_and_onnxruntime(opset, run_onnxruntime):
    proto = _chain_model(opset)
    model = jaxonnx.load(proto)
    feed = _chain_feed(opset)
    expected = _reference(proto, feed)
    for want, got in zip(expected, run_onnxruntime(proto, feed)):
        _assert_exact(got, want)  # the two references agree, so the test compares with both
    assert expected[0].shape == (1, 6)

    eager_numpy = model(*feed.values())
    eager_jax = model(*map(jax.device_put, feed.values()))
    jitted = jax.jit(model)(*map(jax.device_put, feed.values()))
    by_name = model.run(feed)
    for outputs in (eager_numpy, eager_jax, jitted, tuple(by_name.values())):
        assert all(isinstance(o, jax.Array) for o in outputs)
        for got, want in zip(outputs, expected):
            _assert_exact(got, want)
    assert list(by_name) == ["flat", "gathered"]


def test_chain_resolves_the_version_of_each_opset():
    resolved = {
        opset: {op: version for _, op, version in jaxonnx.load(_chain_model(opset)).describe_nodes()}
        for opset in CHAIN_OPSETS
    }
    assert resolved[11] == {
        "Constant": "Constant-11",
        "Identity": "Identity-1",
        "Slice": "Slice-11",
        "Where": "Where-9",
        "GatherElements": "GatherElements-11",
        "Compress": "Compress-11",
        "Flatten": "Flatten-11",
    }
    assert resolved[16]["Where"] == "Where-16" and resolved[16]["Identity"] == "Identity-16"
    assert resolved[25] == {
        "Constant": "Constant-25",
        "Identity": "Identity-25",
        "Slice": "Slice-13",
        "Where": "Where-16",
        "GatherElements": "GatherElements-13",
        "Compress": "Compress-11",
        "Flatten": "Flatten-25",
    }


@settings(max_examples=15)
@given(seed=st.integers(0, 2**32 - 1))
def test_chain_under_jit_equals_reference_for_random_inputs(seed):
    feed = _chain_feed(seed)
    expected = _reference(_CHAIN_21, feed)
    for got, want in zip(_CHAIN_21_JIT(*map(jax.device_put, feed.values())), expected):
        _assert_exact(got, want)


_CHAIN_21 = _chain_model(21)
_CHAIN_21_JIT = jax.jit(jaxonnx.load(_CHAIN_21))


@pytest.mark.parametrize("opset", [9, 10])
def test_chain_with_the_oldest_versions(opset, run_onnxruntime):
    """Opset 9: Slice-1 (bounds as attributes), Flatten-9, Compress-9, Where-9; opset 10: Slice-10."""
    if opset == 9:
        slice_node = helper.make_node(
            "Slice", ["x"], ["rows"], name="slice", starts=[1, 1], ends=[-1, 100], axes=[0, 1]
        )
        bounds = []
    else:
        slice_node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["rows"], name="slice")
        bounds = [
            _constant("starts", np.array([3, 1], np.int64), "value", opset),
            _constant("ends", np.array([-7, 100], np.int64), "value", opset),
            _constant("axes", np.array([0, 1], np.int64), "value", opset),
            _constant("steps", np.array([-1, 2], np.int64), "value", opset),
        ]
    nodes = [
        *bounds,
        slice_node,
        helper.make_node("Where", ["cond", "rows", "rows"], ["same"], name="where"),
        _constant("keep", np.array([True, False, True]), "value", opset),
        helper.make_node("Compress", ["same", "keep"], ["kept"], name="compress", axis=0),
        helper.make_node("Flatten", ["kept"], ["flat"], name="flatten", axis=2),
    ]
    proto = _model(
        nodes,
        [vi("x", TensorProto.DOUBLE, [5, 4, 2]), vi("cond", TensorProto.BOOL, [1, 1, 2])],
        [vi("flat", TensorProto.DOUBLE, ["r", 2])],
        opset=opset,
    )
    feed = {"x": np.arange(40, dtype=np.float64).reshape(5, 4, 2), "cond": np.array([[[True, False]]])}
    (expected,) = _reference(proto, feed)
    (from_ort,) = run_onnxruntime(proto, feed)
    _assert_exact(from_ort, expected)
    model = jaxonnx.load(proto)
    assert ("slice", "Slice", "Slice-1" if opset == 9 else "Slice-10") in model.describe_nodes()
    _assert_exact(model(*feed.values())[0], expected)
    _assert_exact(jax.jit(model)(*map(jax.device_put, feed.values()))[0], expected)


def test_sparse_value_constant_feeds_slice_starts(run_onnxruntime):
    # onnx.reference's Constant returns its own SparseTensor type for sparse_value and then
    # refuses it, so this model is compared with onnxruntime and with numpy slicing.
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([2], np.int64), "values"),
        numpy_helper.from_array(np.array([1], np.int64), "indices"),
        [2],
    )  # dense: [0, 2]
    proto = _model(
        [
            helper.make_node("Constant", [], ["starts"], name="sparse_starts", sparse_value=sparse),
            helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="slice"),
            helper.make_node("Flatten", ["y"], ["flat"], name="flatten", axis=1),
        ],
        [vi("x", TensorProto.FLOAT, [4, 5])],
        [vi("flat", TensorProto.FLOAT, [3, 3])],
        [numpy_helper.from_array(np.array([3, 5], np.int64), "ends")],
        opset=13,
    )
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    expected = x[0:3, 2:5]
    (from_ort,) = run_onnxruntime(proto, {"x": x})
    _assert_exact(from_ort, expected)
    model = jaxonnx.load(proto)
    _assert_exact(model(x)[0], expected)
    jaxpr = jax.make_jaxpr(model)(x)
    assert [e.primitive.name for e in jaxpr.eqns] == ["slice"]  # Flatten of a [3, 3] is the identity
    _assert_exact(jax.jit(model)(jax.device_put(x))[0], expected)


# --------------------------------------------------------------------------- static propagation


def _static_chain_model() -> onnx.ModelProto:
    """Constant -> Identity -> Slice starts; Constant -> Slice -> Slice ends; bool initializer
    -> Compress condition; the condition of a second Compress is itself a Slice of a Constant."""
    nodes = [
        helper.make_node("Constant", [], ["starts_c"], name="starts_const", value_ints=[1]),
        helper.make_node("Identity", ["starts_c"], ["starts"], name="starts_identity"),
        helper.make_node("Constant", [], ["ends_all"], name="ends_const", value_ints=[9, 4, 2]),
        helper.make_node("Constant", [], ["one"], name="one_const", value_ints=[1]),
        helper.make_node("Constant", [], ["two"], name="two_const", value_ints=[2]),
        helper.make_node("Slice", ["ends_all", "one", "two"], ["ends"], name="pick_end"),
        helper.make_node("Slice", ["x", "starts", "ends"], ["cut"], name="cut_rows"),
        helper.make_node("Compress", ["cut", "keep"], ["kept"], name="keep_columns", axis=1),
        helper.make_node(
            "Constant",
            [],
            ["flags"],
            name="flags_const",
            value=numpy_helper.from_array(np.array([False, True, True, False, True]), "flags"),
        ),
        helper.make_node("Slice", ["flags", "one", "ends"], ["row_flags"], name="flags_slice"),
        helper.make_node("Compress", ["kept", "row_flags"], ["y"], name="keep_rows", axis=0),
    ]
    return _model(
        nodes,
        [vi("x", TensorProto.FLOAT, [5, 3])],
        [vi("y", TensorProto.FLOAT, ["r", "c"])],
        [numpy_helper.from_array(np.array([True, False, True]), "keep")],
        opset=21,
    )


def test_static_values_propagate_through_constant_chains_under_jit(run_onnxruntime):
    proto = _static_chain_model()
    model = jaxonnx.load(proto)
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    (expected,) = _reference(proto, {"x": x})
    _assert_exact(expected, x[[1, 2]][:, [0, 2]])
    _assert_exact(run_onnxruntime(proto, {"x": x})[0], expected)
    _assert_exact(jax.jit(model)(jax.device_put(x))[0], expected)

    # Static Slice bounds become one static `slice`, never a gather; the constant Compress
    # conditions become static slices of their runs (the shapes are known at trace time).
    jaxpr = jax.make_jaxpr(model)(x)
    slice_eqns = [e for e in jaxpr.eqns if e.primitive.name == "slice"]
    assert not [e for e in jaxpr.eqns if e.primitive.name in ("gather", "dynamic_slice")]
    assert slice_eqns[0].params["start_indices"] == (1, 0)
    assert slice_eqns[0].params["limit_indices"] == (4, 3)
    assert str(slice_eqns[0].source_info.name_stack) == "cut_rows"
    assert jaxpr.out_avals[0].shape == (2, 2)


def test_a_static_slice_has_no_gather_in_its_jaxpr():
    proto = _model(
        [
            helper.make_node("Constant", [], ["s"], name="s", value_ints=[-1, 0]),
            helper.make_node("Constant", [], ["e"], name="e", value_ints=[-(2**63), 4]),
            helper.make_node("Constant", [], ["a"], name="a", value_ints=[0, 1]),
            helper.make_node("Constant", [], ["k"], name="k", value_ints=[-2, 3]),
            helper.make_node("Slice", ["x", "s", "e", "a", "k"], ["y"], name="reverse_every_other"),
        ],
        [vi("x", TensorProto.INT64, [5, 4])],
        [vi("y", TensorProto.INT64, [3, 2])],
    )
    model = jaxonnx.load(proto)
    x = np.arange(20, dtype=np.int64).reshape(5, 4)
    (expected,) = _reference(proto, {"x": x})
    _assert_exact(jax.jit(model)(jax.device_put(x))[0], expected)
    primitives = {e.primitive.name for e in jax.make_jaxpr(model)(x).eqns}
    assert "gather" not in primitives and "dynamic_slice" not in primitives
    assert primitives <= {"slice", "rev"}


def test_outputs_computed_only_from_constants_are_jax_arrays():
    proto = _model(
        [
            helper.make_node("Constant", [], ["c"], name="c", value_ints=[3, 1, 4, 1, 5]),
            helper.make_node("Slice", ["c", "one", "four"], ["y"], name="cut"),
            helper.make_node("Identity", ["x"], ["x_out"], name="pass_through"),
        ],
        [vi("x", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.INT64, [3]), vi("x_out", TensorProto.FLOAT, [2])],
        [
            numpy_helper.from_array(np.array([1], np.int64), "one"),
            numpy_helper.from_array(np.array([4], np.int64), "four"),
        ],
    )
    model = jaxonnx.load(proto)
    for outputs in (model(np.ones(2, np.float32)), jax.jit(model)(np.ones(2, np.float32))):
        assert all(isinstance(o, jax.Array) for o in outputs)
        _assert_exact(outputs[0], np.array([1, 4, 1], np.int64))
        _assert_exact(outputs[1], np.ones(2, np.float32))


# --------------------------------------------------------------------------- traced shape-deciding inputs


def _slice_from_input_model() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="cut_by_input")],
        [vi("x", TensorProto.FLOAT, [6]), vi("starts", TensorProto.INT64, [1]), vi("ends", TensorProto.INT64, [1])],
        [vi("y", TensorProto.FLOAT, ["n"])],
    )


def _compress_from_input_model(flatten: bool = False) -> onnx.ModelProto:
    nodes = [helper.make_node("Compress", ["x", "cond"], ["picked"], name="pick_rows", axis=0)]
    outputs = [vi("picked", TensorProto.FLOAT, ["n", 2])]
    if flatten:
        nodes.append(helper.make_node("Flatten", ["picked"], ["flat"], name="flatten", axis=0))
        outputs = [vi("flat", TensorProto.FLOAT, [1, "m"])]
    return _model(nodes, [vi("x", TensorProto.FLOAT, [5, 2]), vi("cond", TensorProto.BOOL, [5])], outputs)


X52 = np.arange(1, 11, dtype=np.float32).reshape(5, 2)


def test_traced_slice_starts_under_jit_raise_with_the_node_input_and_both_ways_out():
    model = jaxonnx.load(_slice_from_input_model())
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(jaxonnx.StaticValueError) as info:
        jax.jit(model)(x, np.array([1]), np.array([4]))
    message = str(info.value)
    assert "Node 'cut_by_input' (Slice-13" in message
    assert "the input 'starts'" in message
    assert "make it an initializer or the output of Constant nodes" in message
    assert "run the model outside `jax.jit`" in message
    # Eager calls take any values, numpy or JAX.
    for starts, ends in [(1, 4), (-2, 6), (5, 0), (-100, 100)]:
        (y,) = model(x, np.array([starts]), np.array([ends]))
        _assert_exact(y, x[starts:ends])
        (y,) = model(jax.device_put(x), jax.device_put(np.array([starts])), jax.device_put(np.array([ends])))
        _assert_exact(y, x[starts:ends])


def test_traced_compress_condition_under_jit_raises_and_suggests_a_size_hint():
    model = jaxonnx.load(_compress_from_input_model())
    cond = np.array([False, True, False, True, True])
    with pytest.raises(
        jaxonnx.StaticValueError,
        match=r"(?s)Node 'pick_rows' \(Compress-11.*the input 'cond' depends on graph inputs.*"
        r"make it an initializer or the output of Constant nodes.*size_hints=\{'picked': <length>\}",
    ):
        jax.jit(model)(X52, cond)
    # Eagerly every condition works and the output has exactly the selected rows.
    for keep in [cond, np.zeros(5, bool), np.ones(5, bool)]:
        _assert_exact(model(X52, keep)[0], X52[keep])
        _assert_exact(model(jax.device_put(X52), jax.device_put(keep))[0], X52[keep])


def test_size_hint_gives_k_rows_selected_first_then_zeros_under_jit():
    model = jaxonnx.load(_compress_from_input_model(flatten=True), size_hints={"picked": 4})
    compiled = jax.jit(model)
    cond = np.array([False, True, False, True, True])
    (flat,) = compiled(X52, cond)
    _assert_exact(flat, np.array([[3, 4, 7, 8, 9, 10, 0, 0]], np.float32))
    (flat,) = compiled(X52, np.array([True, False, False, False, True]))
    _assert_exact(flat, np.array([[1, 2, 9, 10, 0, 0, 0, 0]], np.float32))
    (flat,) = compiled(X52, np.array([True, True, False, True, True]))  # exactly k selected
    _assert_exact(flat, np.array([[1, 2, 3, 4, 7, 8, 9, 10]], np.float32))
    # Eagerly the hinted output has the same fixed length.
    (flat,) = model(X52, cond)
    _assert_exact(flat, np.array([[3, 4, 7, 8, 9, 10, 0, 0]], np.float32))


def test_size_hint_overflow_raises_at_run_time_and_never_truncates():
    model = jaxonnx.load(_compress_from_input_model(), size_hints={"picked": 4})
    compiled = jax.jit(model)
    with pytest.raises(
        jax.errors.JaxRuntimeError, match=r"selected 5 slices at run time but its output was given size=4"
    ):
        jax.block_until_ready(compiled(X52, np.ones(5, bool)))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"Node 'pick_rows'.*selected 5 slices but `size`=4"):
        model(X52, np.ones(5, bool))
    # The compiled function keeps working after the failure.
    (picked,) = compiled(X52, np.array([True, False, False, False, False]))
    _assert_exact(picked, np.array([[1, 2], [0, 0], [0, 0], [0, 0]], np.float32))


def test_a_size_hint_overflow_under_jit_shows_jaxonnxs_message_first(capfd):
    import logging

    # No logging configured, as in a plain script: Python prints records of level WARNING and
    # above to stderr. jaxonnx's one-line message comes before JAX's callback traceback.
    root = logging.getLogger()
    saved_handlers, root.handlers = root.handlers, []
    try:
        model = jax.jit(jaxonnx.load(_compress_from_input_model(), size_hints={"picked": 2}))
        with pytest.raises(jax.errors.JaxRuntimeError):
            jax.block_until_ready(model(X52, np.ones(5, bool)))
    finally:
        root.handlers = saved_handlers
    first_line = capfd.readouterr().err.splitlines()[0]
    assert first_line.startswith("jaxonnx: Compress") and "selected 5 slices at run time" in first_line


def test_backend_runs_the_size_hint_model():
    rep = jaxonnx.backend.prepare(_compress_from_input_model(), size_hints={"picked": 3})
    outputs = rep.run([X52, np.array([False, False, True, False, True])])
    assert isinstance(outputs.picked, np.ndarray)
    _assert_exact(outputs.picked, np.array([[5, 6], [9, 10], [0, 0]], np.float32))


# --------------------------------------------------------------------------- strings


def _string_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Constant", [], ["starts"], name="starts", value_ints=[1]),
        helper.make_node("Slice", ["words", "starts", "ends"], ["tail"], name="tail"),
        helper.make_node("Where", ["choose", "tail", "other"], ["mixed"], name="mix"),
        helper.make_node("GatherElements", ["mixed", "order"], ["ordered"], name="order", axis=0),
        helper.make_node("Compress", ["ordered", "keep"], ["kept"], name="keep"),
        helper.make_node("Flatten", ["kept"], ["flat"], name="flatten", axis=0),
    ]
    return _model(
        nodes,
        [
            vi("words", TensorProto.STRING, [5]),
            vi("choose", TensorProto.BOOL, [4]),
            vi("other", TensorProto.STRING, []),
        ],
        [vi("flat", TensorProto.STRING, [1, "n"])],
        [
            numpy_helper.from_array(np.array([5], np.int64), "ends"),
            numpy_helper.from_array(np.array([3, 3, 0, 1], np.int64), "order"),
            numpy_helper.from_array(np.array([True, True, False, True]), "keep"),
        ],
    )


def test_string_tensors_run_through_the_model_eagerly(run_onnxruntime):
    proto = _string_model()
    model = jaxonnx.load(proto)
    feed = {
        "words": np.array(["alpha", "beta", "gamma", "", "epsilon"], dtype=object),
        "choose": np.array([True, False, True, True]),
        "other": np.array("ω", dtype=object),
    }
    (expected,) = _reference(proto, feed)
    _assert_exact(run_onnxruntime(proto, feed)[0], expected)
    _assert_exact(expected, np.array([["epsilon", "epsilon", "ω"]], dtype=object))
    (flat,) = model(*feed.values())
    assert isinstance(flat, np.ndarray) and flat.dtype == object
    _assert_exact(flat, expected)
    # numpy unicode arrays are read as ONNX strings; a concrete JAX condition is fine eagerly.
    (flat,) = model(feed["words"].astype(str), jax.device_put(feed["choose"]), np.array("ω"))
    _assert_exact(flat, expected)
    outputs = jaxonnx.backend.prepare(proto).run(feed)
    _assert_exact(outputs["flat"], expected)


def test_string_tensors_under_jit_raise_a_clear_error():
    model = jaxonnx.load(_string_model())
    words = np.array(["a", "b", "c", "d", "e"], dtype=object)
    other = np.array("z", dtype=object)
    choose = np.array([True, False, True, True])
    with pytest.raises(
        jaxonnx.OnnxTypeError,
        match=r"Node 'mix' \(Where-16.*string tensor `X` with the traced `condition`.*only on the eager path",
    ):
        jax.jit(lambda c: model(words, c, other))(choose)
    # jax.jit itself refuses a string argument before jaxonnx sees it.
    with pytest.raises(TypeError, match="numpy.ndarray"):
        jax.jit(model)(words, choose, other)
    (flat,) = model(words, choose, other)
    _assert_exact(flat, np.array([["e", "e", "z"]], dtype=object))


def test_string_outputs_do_not_alias_the_models_initializers():
    # Slice and Flatten of a numpy string initializer give numpy views of it.
    words = numpy_helper.from_array(np.array(["a", "b", "c"], dtype=object), "words")
    proto = _model(
        [
            helper.make_node("Slice", ["words", "start", "end"], ["sliced"], name="slice"),
            helper.make_node("Flatten", ["words"], ["flat"], name="flatten", axis=0),
        ],
        [],
        [vi("sliced", TensorProto.STRING, [2]), vi("flat", TensorProto.STRING, [1, 3])],
        [
            words,
            numpy_helper.from_array(np.array([0], np.int64), "start"),
            numpy_helper.from_array(np.array([2], np.int64), "end"),
        ],
    )
    model = jaxonnx.load(proto)
    sliced, flat = model()
    sliced[0] = "HACKED"
    flat[0, 2] = "HACKED"
    model.run({})["sliced"][1] = "HACKED"
    sliced, flat = model()
    _assert_exact(sliced, np.array(["a", "b"], dtype=object))
    _assert_exact(flat, np.array([["a", "b", "c"]], dtype=object))
    _assert_exact(model.initializers["words"], np.array(["a", "b", "c"], dtype=object))


# --------------------------------------------------------------------------- input checks and node errors


def _gather_model(opset=13) -> onnx.ModelProto:
    return _model(
        [helper.make_node("GatherElements", ["data", "indices"], ["y"], name="gather_rows", axis=0)],
        [vi("data", TensorProto.FLOAT, [3, 2]), vi("indices", TensorProto.INT64, ["n", 2])],
        [vi("y", TensorProto.FLOAT, ["n", 2])],
        opset=opset,
    )


DATA = np.arange(6, dtype=np.float32).reshape(3, 2)


def test_wrong_number_of_inputs():
    model = jaxonnx.load(_gather_model())
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"takes 2 inputs \(data, indices\), got 1"):
        model(DATA)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"takes 2 inputs \(data, indices\), got 3"):
        model(DATA, np.zeros((1, 2), np.int64), DATA)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"unknown names \['bogus'\] and no value for \['indices'\]"):
        model.run({"data": DATA, "bogus": DATA})


def test_dtype_mismatch_is_refused_without_casting():
    model = jaxonnx.load(_gather_model())
    indices = np.zeros((1, 2), np.int64)
    with pytest.raises(
        jaxonnx.OnnxTypeError,
        match=r"The input 'data' is declared tensor\(float\) but got dtype float64; jaxonnx does not cast inputs",
    ):
        model(DATA.astype(np.float64), indices)
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"'indices' is declared tensor\(int64\) but got dtype int32"):
        jax.jit(model)(DATA, indices.astype(np.int32))
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"got dtype float64"):
        model([[0.0, 1.0]] * 3, indices)  # Python floats are float64


def test_rank_and_shape_mismatch_against_the_declared_shape():
    model = jaxonnx.load(_gather_model())
    indices = np.zeros((1, 2), np.int64)
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"'data' is declared with shape \[3, 2\] but got shape \[2, 2\]"
    ):
        model(DATA[:2], indices)
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"'data' is declared with shape \[3, 2\] but got shape \[1, 3, 2\]"
    ):
        jax.jit(model)(DATA[None], indices)
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"'indices' is declared with shape \['n', 2\] but got shape \[4\]"
    ):
        model(DATA, np.zeros(4, np.int64))
    # A symbolic dim takes any size.
    (y,) = model(DATA, np.zeros((7, 2), np.int64))
    assert y.shape == (7, 2)


def test_node_failure_is_re_raised_with_node_op_version_and_input_shapes():
    model = jaxonnx.load(_gather_model(opset=12))
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"Node 'gather_rows' \(GatherElements-11, inputs data: float\[3, 2\], indices: int64\[2, 2\]\) failed: "
        r"GatherElements-11 got index 3 at position \(1, 0\)",
    ) as info:
        model(DATA, np.array([[0, 1], [3, 0]], np.int64))
    assert isinstance(info.value.__cause__, jaxonnx.OnnxValidationError)  # the op's own error, chained
    where = _model(
        [helper.make_node("Where", ["c", "a", "b"], ["y"], name="bad_broadcast")],
        [vi("c", TensorProto.BOOL, [3]), vi("a", TensorProto.FLOAT, ["p"]), vi("b", TensorProto.FLOAT, ["q"])],
        [vi("y", TensorProto.FLOAT, ["r"])],
    )
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"Node 'bad_broadcast' \(Where-16, inputs c: bool\[3\] traced, a: float\[2\] traced, b: float\[3\] traced\) failed: "
        r"Where-16 cannot broadcast",
    ):
        jax.jit(jaxonnx.load(where))(np.ones(3, bool), np.ones(2, np.float32), np.ones(3, np.float32))


def test_a_model_keeps_giving_right_answers_after_failed_calls():
    model = jaxonnx.load(_gather_model())
    compiled = jax.jit(model)
    good = np.array([[2, 0], [1, 1]], np.int64)
    expected = np.array([[4, 1], [2, 3]], np.float32)
    failures = [
        lambda: model(DATA, np.array([[0, 9], [0, 0]], np.int64)),  # node failure
        lambda: model(DATA.astype(np.float64), good),  # dtype
        lambda: compiled(DATA[:2], good),  # shape, under jit
        lambda: model(DATA),  # count
    ]
    for fail in failures:
        with pytest.raises(jaxonnx.JaxOnnxError):
            fail()
        _assert_exact(model(DATA, good)[0], expected)
        _assert_exact(compiled(DATA, good)[0], expected)
    # After a failed trace, the same model still runs eagerly.
    slicer = jaxonnx.load(_slice_from_input_model())
    with pytest.raises(jaxonnx.StaticValueError):
        jax.jit(slicer)(np.arange(6, dtype=np.float32), np.array([1]), np.array([3]))
    (y,) = slicer(np.arange(6, dtype=np.float32), np.array([1]), np.array([3]))
    _assert_exact(y, np.array([1, 2], np.float32))


def _unchecked_model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    """Like ``_model`` without onnx's full check, which would refuse the wrong declared types."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def test_outputs_are_checked_against_their_declared_element_type_and_warn_on_their_shape():
    floats = numpy_helper.from_array(np.array([1.5, 2.5], np.float32), "w")
    declared_int = _unchecked_model(
        [helper.make_node("Identity", ["w"], ["y"], name="copy")], [], [vi("y", TensorProto.INT64, [5, 5])], [floats]
    )
    model = jaxonnx.load(declared_int)
    with pytest.raises(
        jaxonnx.OnnxTypeError,
        match=r"The graph output 'y' is declared tensor\(int64\)\[5, 5\] but the graph computed tensor\(float\) of shape \[2\]",
    ):
        model()
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"The graph output 'y' is declared tensor\(int64\)"):
        model.run({})
    traced = _unchecked_model(
        [helper.make_node("Identity", ["x"], ["y"], name="copy")],
        [vi("x", TensorProto.FLOAT, [2])],
        [vi("y", TensorProto.FLOAT, [5, 5])],
    )
    x = np.ones(2, np.float32)
    # Another shape is what onnxruntime warns about and returns (tests/test_declared_shapes.py).
    for run in (jaxonnx.load(traced), jax.jit(jaxonnx.load(traced))):
        with pytest.warns(
            jaxonnx.DeclaredShapeWarning,
            match=r"The graph output 'y' is declared tensor\(float\)\[5, 5\] but the graph computed shape \[2\]",
        ):
            _assert_exact(run(x)[0], x)
    # A matching element type and shape runs quietly; symbolic dims match any length.
    for shape in ([2], ["n"]):
        matching = _unchecked_model(
            [helper.make_node("Identity", ["x"], ["y"], name="copy")],
            [vi("x", TensorProto.FLOAT, [2])],
            [vi("y", TensorProto.FLOAT, shape)],
        )
        _assert_exact(jax.jit(jaxonnx.load(matching))(x)[0], x)


# --------------------------------------------------------------------------- jit: one trace, one computation, scopes


def test_jit_of_a_loaded_model_traces_once():
    model = jaxonnx.load(_chain_model(21))
    traces = []

    def counted(*inputs):
        traces.append(1)
        return model(*inputs)

    compiled = jax.jit(counted)
    checked = jax.jit(chex.assert_max_traces(lambda *inputs: model(*inputs), n=1))
    for seed in range(6):
        feed = _chain_feed(seed)
        inputs = list(feed.values()) if seed % 2 else list(map(jax.device_put, feed.values()))
        (flat, _) = compiled(*inputs)
        (flat_checked, _) = checked(*inputs)
        _assert_exact(flat, _reference(_CHAIN_21, feed)[0])
        _assert_exact(flat_checked, np.asarray(flat))
    assert len(traces) == 1


def test_jit_of_a_model_is_one_computation_with_node_named_scopes():
    model = jaxonnx.load(_chain_model(21))
    inputs = list(map(jax.device_put, _chain_feed(0).values()))
    text = jax.jit(model).lower(*inputs).as_text(debug_info=True)
    assert text.count("module @") == 1
    assert "module @jit_chain_21" in text  # the computation is named after the graph
    for node in ["slice_rows", "where_idx", "gather", "where_fill", "where_columns", "compress", "flatten"]:
        assert f"/{node}/" in text or f'/{node}"' in text, node
    # Constant nodes and the Slice of Constants ran at trace time: nothing of them is in the program.
    for node in ["const_starts_raw", "starts_identity", "slice_ends", "const_keep"]:
        assert node not in text

    jaxpr = jax.make_jaxpr(model)(*inputs)
    stacks = {str(e.source_info.name_stack).split("/")[0] for e in jaxpr.eqns}
    assert {"slice_rows", "where_idx", "gather", "where_fill", "where_columns", "compress"} <= stacks


# --------------------------------------------------------------------------- x64 policy
# (JAX's default 32-bit mode: tests/test_x64_policy.py)


# --------------------------------------------------------------------------- params


def test_params_and_apply_replace_float_initializers():
    proto = _model(
        [helper.make_node("GatherElements", ["w", "indices"], ["y"], name="gather", axis=0)],
        [vi("indices", TensorProto.INT64, [3])],
        [vi("y", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.array([1.5, -2.0, 4.0], np.float32), "w")],
    )
    model = jaxonnx.load(proto)
    indices = np.array([2, 0, 2], np.int64)
    assert list(model.params) == ["w"]
    _assert_exact(model(indices)[0], np.array([4.0, 1.5, 4.0], np.float32))
    _assert_exact(
        model.apply({"w": jax.device_put(np.array([7.0, 8.0, 9.0], np.float32))}, indices)[0],
        np.array([9, 7, 9], np.float32),
    )
    grad = jax.grad(lambda p: jnp.sum(model.apply(p, indices)[0]))(model.params)
    _assert_exact(grad["w"], np.array([1.0, 0.0, 2.0], np.float32))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"`params` names \['v'\]"):
        model.apply({"v": jax.device_put(np.zeros(3))}, indices)
    # Another float type is cast at the boundary (mixed precision); a non-float one is refused.
    _assert_exact(
        model.apply({"w": jax.device_put(np.array([7.0, 8.0, 9.0], np.float64))}, indices)[0],
        np.array([9, 7, 9], np.float32),
    )
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"The param 'w' is declared tensor\(float\) but got dtype int32"):
        model.apply({"w": jax.device_put(np.zeros(3, np.int32))}, indices)


def test_bytes_string_inputs_are_decoded_like_string_initializers():
    graph = helper.make_graph(
        [helper.make_node("Where", ["keep", "x", "z"], ["y"])],
        "strings",
        [
            helper.make_tensor_value_info("keep", TensorProto.BOOL, [2]),
            helper.make_tensor_value_info("x", TensorProto.STRING, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
        initializer=[helper.make_tensor("z", TensorProto.STRING, [1], [b"z"])],
    )
    model = jaxonnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]))
    (y,) = model(np.array([True, False]), np.array([b"a", b"b"], dtype=object))
    assert y.tolist() == ["a", "z"]


# --------------------------------------------------------------------------- calling by name


def test_inputs_can_be_given_by_keyword_as_graph_input_names():
    model = jaxonnx.load(_gather_model())
    indices = np.array([[2, 0]], np.int64)
    (expected,) = model(DATA, indices)
    for call in (
        lambda: model(data=DATA, indices=indices),
        lambda: model(indices=indices, data=DATA),
        lambda: model(DATA, indices=indices),
        lambda: jax.jit(model)(data=DATA, indices=indices),
    ):
        _assert_exact(call()[0], expected)
    grad = jax.grad(lambda d: jnp.sum(model(data=d, indices=indices)[0]))(jax.device_put(DATA))
    _assert_exact(grad, np.array([[0, 1], [0, 0], [1, 0]], np.float32))
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"takes 2 inputs \(data, indices\); got unknown names \['idx'\] and no value for \['indices'\]",
    ):
        model(DATA, idx=indices)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"got \['data'\] both positionally and by name"):
        model(DATA, data=DATA, indices=indices)
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=r"got 1; pass them in this order, by name as keywords, or as `model.run\(None, \{name: value\}\)`",
    ):
        model(DATA)


def test_static_value_error_keeps_its_argument_through_the_interpreter():
    model = jaxonnx.load(_slice_from_input_model())
    with pytest.raises(jaxonnx.StaticValueError) as info:
        jax.jit(model)(np.arange(6, dtype=np.float32), np.array([1]), np.array([4]))
    assert info.value.argument == "starts"
    assert "Node 'cut_by_input'" in str(info.value)


def test_with_context_keeps_the_errors_attributes():
    from jaxonnx._errors import with_context

    error = jaxonnx.StaticValueError("`ends` is traced.")
    error.argument = "ends"
    wrapped = with_context(error, "Node 'n' (Slice-13)")
    assert type(wrapped) is jaxonnx.StaticValueError and wrapped.argument == "ends"
    assert str(wrapped) == "Node 'n' (Slice-13): `ends` is traced."
