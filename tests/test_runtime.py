"""The runtime around the ops: the op context (random keys), model-local functions and onnx's
function bodies, sequences and optionals through the backend, and JAX's 32-bit mode."""

from __future__ import annotations

import jax
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx
import jaxonnx.backend

vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, initializers=(), opset=17, functions=(), domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets, functions=list(functions))


# ------------------------------------------------------------------------------ random keys


def _dropout_model(seed=None):
    attributes = {} if seed is None else {"seed": seed}
    nodes = [helper.make_node("Dropout", ["x", "ratio", "training"], ["y", "mask"], **attributes)]
    return _model(
        nodes,
        [vi("x", T.FLOAT, [64])],
        [vi("y", T.FLOAT, [64]), vi("mask", T.BOOL, [64])],
        [
            numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
            numpy_helper.from_array(np.array(True), "training"),
        ],
    )


X = np.ones(64, np.float32)


def test_training_dropout_draws_from_the_callers_key():
    model = jaxonnx.load(_dropout_model())
    key, other = jax.random.key(0), jax.random.key(1)
    same = [np.asarray(model(X, rng=key)[1]) for _ in range(2)]
    np.testing.assert_array_equal(same[0], same[1])
    assert not np.array_equal(same[0], np.asarray(model(X, rng=other)[1]))
    jitted = jax.jit(lambda x, k: model(x, rng=k))
    np.testing.assert_array_equal(jitted(X, key)[1], same[0])  # the same key draws the same under jit
    assert not np.array_equal(jitted(X, other)[1], same[0])
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"no `seed` attribute and got no key; under jax.jit"):
        jax.jit(model)(X)
    # Eagerly without a key: a fresh draw per call, as onnxruntime draws anew per run.
    draws = {np.asarray(model(X)[1]).tobytes() for _ in range(4)}
    assert len(draws) > 1


def test_a_seed_attribute_draws_the_same_mask_every_call():
    model = jaxonnx.load(_dropout_model(seed=7))
    first = np.asarray(jax.jit(model)(X)[1])
    np.testing.assert_array_equal(model(X)[1], first)
    np.testing.assert_array_equal(model(X, rng=jax.random.key(3))[1], first)
    assert 10 < first.sum() < 54  # about half are kept


# ------------------------------------------------------------------------------ functions


def test_a_model_with_local_functions_runs_like_onnxruntime():
    import onnxruntime as ort

    function = onnx.FunctionProto()
    function.name, function.domain = "ScaledAdd", "local.math"
    function.input.extend(["a", "b"])
    function.output.extend(["y"])
    function.opset_import.extend([helper.make_opsetid("", 17)])
    function.attribute_proto.extend([helper.make_attribute("scale", 2.0)])  # a default
    scale = onnx.AttributeProto(name="value_float", type=onnx.AttributeProto.FLOAT, ref_attr_name="scale")
    constant = helper.make_node("Constant", [], ["k"])
    constant.attribute.extend([scale])
    function.node.extend(
        [helper.make_node("Add", ["a", "b"], ["s"]), constant, helper.make_node("Mul", ["s", "k"], ["y"])]
    )
    nodes = [
        helper.make_node("ScaledAdd", ["x", "x"], ["t"], domain="local.math", scale=3.0),
        helper.make_node("ScaledAdd", ["t", "x"], ["y"], domain="local.math"),
    ]
    proto = _model(
        nodes, [vi("x", T.FLOAT, [3])], [vi("y", T.FLOAT, [3])], functions=[function], domains=["local.math"]
    )
    x = np.array([1.0, -2.0, 0.5], np.float32)
    (expected,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )
    model = jaxonnx.load(proto)
    np.testing.assert_allclose(model(x)[0], expected, rtol=1e-6)  # ((x + x) * 3 + x) * 2
    np.testing.assert_allclose(jax.jit(model)(x)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda v: model(v)[0].sum())(x), np.full(3, 14.0), rtol=1e-6)
    assert [row[2] for row in model.describe_nodes()][:1] == ["ScaledAdd (local function of domain 'local.math')"]


def test_an_op_without_its_own_module_runs_through_onnxs_function_body():
    # MeanVarianceNormalization is defined in onnx by a function body; a registered op would win.
    proto = _model(
        [helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 1])],
        [vi("x", T.FLOAT, [2, 3])],
        [vi("y", T.FLOAT, [2, 3])],
        opset=18,
    )
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = jaxonnx.load(proto)
    expected = (x - x.mean()) / x.std()
    np.testing.assert_allclose(model(x)[0], expected, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(model)(x)[0], expected, rtol=1e-5)
    assert jaxonnx.unsupported_nodes(proto) == []


# ------------------------------------------------------------------------------ values beyond tensors


def test_sequence_and_optional_values_round_trip_through_the_backend():
    nodes = [helper.make_node("Identity", ["s"], ["t"]), helper.make_node("OptionalHasElement", ["o"], ["has"])]
    optional = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(T.FLOAT, [2])))
    proto = _model(
        nodes,
        [helper.make_tensor_sequence_value_info("s", T.FLOAT, None), optional],
        [helper.make_tensor_sequence_value_info("t", T.FLOAT, None), vi("has", T.BOOL, [])],
        opset=18,
    )
    items = [np.zeros(2, np.float32), np.ones((1, 3), np.float32)]
    t, has = jaxonnx.backend.run_model(proto, [items, None])
    assert isinstance(t, list) and [a.shape for a in t] == [(2,), (1, 3)] and not has
    t, has = jaxonnx.backend.run_model(proto, [items, np.ones(2, np.float32)])
    assert has


# ------------------------------------------------------------------------------ 32-bit mode


def test_int64_constants_and_float64_inputs_agree_eagerly_and_jitted_with_x64_off(x64_off):
    nodes = [
        helper.make_node("Constant", [], ["one"], value=helper.make_tensor("v", T.INT64, [], [1])),
        helper.make_node("Equal", ["ids", "one"], ["hit"]),
        helper.make_node("Mod", ["ids", "two"], ["odd"]),
        helper.make_node("Mul", ["x", "x"], ["sq"]),
    ]
    proto = _model(
        nodes,
        [vi("ids", T.INT64, [4]), vi("x", T.FLOAT, [2])],
        [vi("hit", T.BOOL, [4]), vi("odd", T.INT64, [4]), vi("sq", T.FLOAT, [2])],
        [numpy_helper.from_array(np.array(2, np.int64), "two")],
    )
    with pytest.warns(jaxonnx.X64Warning):
        model = jaxonnx.load(proto)
    ids, x = np.array([1, 2, 3, 1]), np.random.default_rng(0).random(2)  # int64 and float64, as numpy makes them
    eager, jitted = model(ids, x), jax.jit(model)(ids, x)
    for a, b in zip(eager, jitted):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    np.testing.assert_array_equal(eager[0], [True, False, False, True])
    with pytest.raises(jaxonnx.OnnxTypeError, match="does not fit in int32"):
        model(np.array([2**40, 1, 1, 1]), x)
