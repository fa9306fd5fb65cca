"""ai.onnx.ml lookups on constants of the file (issue 41 §5): a value computed only from
initializers and ``Constant`` outputs is known at trace time and stays numpy, so a
LabelEncoder or CategoryMapper from integers to strings on one runs under ``jax.jit``, and a
numeric lookup of a constant can decide a shape."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx

ML = "ai.onnx.ml"


def _model(nodes, initializers=(), output="y", output_type=TensorProto.FLOAT):
    graph = helper.make_graph(
        nodes,
        "ml_constants",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(output, output_type, None)],
        list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 2)])


def _ids_node_or_initializer(source):
    ids = numpy_helper.from_array(np.array([1, 3, 7, 2], np.int64), "ids")
    if source == "constant":
        return [helper.make_node("Constant", [], ["ids"], value=ids)], []
    return [], [ids]


def _to_strings(kind):
    if kind == "LabelEncoder":
        return helper.make_node(
            "LabelEncoder",
            ["ids"],
            ["labels"],
            domain=ML,
            keys_int64s=[1, 2, 3],
            values_strings=["a", "b", "c"],
            default_string="?",
        )
    return helper.make_node(
        "CategoryMapper",
        ["ids"],
        ["labels"],
        domain=ML,
        cats_int64s=[1, 2, 3],
        cats_strings=["a", "b", "c"],
        default_string="?",
    )


@pytest.mark.parametrize("kind", ["LabelEncoder", "CategoryMapper"])
@pytest.mark.parametrize("source", ["constant", "initializer"])
def test_int_to_string_lookup_of_a_constant_runs_under_jit(kind, source, run_onnxruntime):
    head, initializers = _ids_node_or_initializer(source)
    nodes = head + [
        _to_strings(kind),
        helper.make_node(
            "LabelEncoder",
            ["labels"],
            ["weights"],
            domain=ML,
            keys_strings=["a", "b", "?"],
            values_floats=[0.5, 2.0, 4.0],
            default_float=-1.0,
        ),
        helper.make_node("Mul", ["x", "weights"], ["y"]),
    ]
    proto = _model(nodes, initializers)
    x = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    (expected,) = run_onnxruntime(proto, {"x": x})
    model = jaxonnx.load(proto)
    assert model.eager_mode == "whole graph compiled per input signature"
    for run in (model, jax.jit(model)):
        (got,) = run(x)
        np.testing.assert_array_equal(np.asarray(got), expected)
    gradient = jax.grad(lambda x: model(x)[0].sum())(x)
    np.testing.assert_array_equal(gradient, [0.5, -1.0, 4.0, 2.0])  # d(x * w)/dx = w


def test_strings_of_a_constant_as_an_output_run_eagerly(run_onnxruntime):
    head, initializers = _ids_node_or_initializer("constant")
    proto = _model(head + [_to_strings("LabelEncoder")], initializers, "labels", TensorProto.STRING)
    (expected,) = run_onnxruntime(proto, {"x": np.zeros(4, np.float32)})
    (got,) = jaxonnx.load(proto)(np.zeros(4, np.float32))
    assert got.tolist() == expected.tolist() == ["a", "c", "?", "b"]


def test_numeric_lookup_of_a_constant_decides_a_shape_under_jit(run_onnxruntime):
    # LabelEncoder maps the constant [0, 1] to the shape [2, 2]: known at trace time.
    nodes = [
        helper.make_node("LabelEncoder", ["codes"], ["shape"], domain=ML, keys_int64s=[0, 1], values_int64s=[2, 2]),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    proto = _model(nodes, [numpy_helper.from_array(np.array([0, 1], np.int64), "codes")])
    x = np.arange(4, dtype=np.float32)
    (expected,) = run_onnxruntime(proto, {"x": x})
    for run in (jaxonnx.load(proto), jax.jit(jaxonnx.load(proto))):
        (got,) = run(x)
        np.testing.assert_array_equal(np.asarray(got), expected)
        assert got.shape == (2, 2)


def test_int_to_string_lookup_of_an_input_is_refused_under_jit():
    nodes = [
        helper.make_node("Cast", ["x"], ["ids"], to=TensorProto.INT64),
        _to_strings("LabelEncoder"),
        helper.make_node("LabelEncoder", ["labels"], ["y"], domain=ML, keys_strings=["a"], values_floats=[1.0]),
    ]
    model = jaxonnx.load(_model(nodes))
    assert model.eager_mode.startswith("op by op")
    np.testing.assert_array_equal(model(np.array([1, 2, 3, 1], np.float32))[0], [1, -0.0, -0.0, 1])
    with pytest.raises(jaxonnx.JaxOnnxError, match="LabelEncoder.*strings"):
        jax.jit(model)(np.array([1, 2, 3, 1], np.float32))
