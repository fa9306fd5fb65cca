"""Gradient (ai.onnx.preview.training): the gradient of part of a graph, in the graph.

The oracle is independent of jaxonnx: onnx.reference runs the forward graph (the nodes
that compute ``y``) in float64, and central differences of it give the gradient. The
graphs are the operator text's own examples: a Conv and Gemm chain with ``xs`` and ``zs``,
the gradient with respect to an intermediate value fed another value, and a second
derivative (a Gradient of a Gradient's output).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.test_util
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper
from onnx.reference import ReferenceEvaluator

import jaxonnx

TRAINING = "ai.onnx.preview.training"
vi = helper.make_tensor_value_info
_rng = np.random.default_rng(0)


def _model(nodes, inputs, outputs, initializers=(), *, opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(TRAINING, 1)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def _gradient(inputs, outputs, *, xs, y, zs=None):
    attributes = {"xs": xs, "y": y} | ({"zs": zs} if zs else {})
    return helper.make_node("Gradient", inputs, outputs, domain=TRAINING, **attributes)


def _numeric_gradient(forward: onnx.ModelProto, feed: dict, wrt: str, eps=1e-6) -> np.ndarray:
    """d sum(first output) / d feed[wrt] by central differences, onnx.reference in float64."""
    session = ReferenceEvaluator(forward)
    point = feed[wrt]
    grad = np.zeros_like(point)
    for index in np.ndindex(point.shape):
        values = []
        for step in (eps, -eps):
            moved = point.copy()
            moved[index] += step
            values.append(np.sum(session.run(None, {**feed, wrt: moved})[0]))
        grad[index] = (values[0] - values[1]) / (2 * eps)
    return grad


# The operator text's first example: H = Conv(X, W), Y = Gemm(H, Z) (flattened), with
# Gradient(xs=["W", "Z"], zs=["X"], y="Y").
_FORWARD = [
    helper.make_node("Conv", ["X", "W"], ["H"], pads=[1, 1, 1, 1]),
    helper.make_node("Flatten", ["H"], ["F"]),
    helper.make_node("Tanh", ["F"], ["A"]),
    helper.make_node("Gemm", ["A", "Z"], ["Y"]),
]
_X = _rng.standard_normal((2, 2, 4, 4))
_W = _rng.standard_normal((3, 2, 3, 3)) * 0.3
_Z = _rng.standard_normal((48, 5)) * 0.3


def _conv_gemm(dtype, initialized_w=True):
    inputs = [
        vi("X", T.DOUBLE if dtype == np.float64 else T.FLOAT, [2, 2, 4, 4]),
        vi("Z", T.DOUBLE if dtype == np.float64 else T.FLOAT, [48, 5]),
    ]
    initializers = []
    if initialized_w:
        initializers = [onnx.numpy_helper.from_array(_W.astype(dtype), "W")]
    else:
        inputs.append(vi("W", T.DOUBLE if dtype == np.float64 else T.FLOAT, [3, 2, 3, 3]))
    elem = T.DOUBLE if dtype == np.float64 else T.FLOAT
    nodes = [*_FORWARD, _gradient(["W", "Z", "X"], ["dW", "dZ"], xs=["W", "Z"], zs=["X"], y="Y")]
    outputs = [vi("Y", elem, [2, 5]), vi("dW", elem, [3, 2, 3, 3]), vi("dZ", elem, [48, 5])]
    return _model(nodes, inputs, outputs, initializers)


def _forward_only(dtype=np.float64):
    elem = T.DOUBLE if dtype == np.float64 else T.FLOAT
    inputs = [vi("X", elem, [2, 2, 4, 4]), vi("Z", elem, [48, 5]), vi("W", elem, [3, 2, 3, 3])]
    return _model(list(_FORWARD), inputs, [vi("Y", elem, [2, 5])])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_gradient_equals_central_differences_of_the_forward_graph(jit):
    model = jaxonnx.load(_conv_gemm(np.float64))
    run = jax.jit(model) if jit else model
    y, dw, dz = run(_X, _Z)
    feed = {"X": _X, "Z": _Z, "W": _W}
    np.testing.assert_allclose(dw, _numeric_gradient(_forward_only(), feed, "W"), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dz, _numeric_gradient(_forward_only(), feed, "Z"), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(y, ReferenceEvaluator(_forward_only()).run(None, feed)[0], rtol=1e-12)


def test_gradient_in_float32_with_x64_off(x64_off):
    model = jaxonnx.load(_conv_gemm(np.float32))
    _, dw, dz = jax.jit(model)(_X.astype(np.float32), _Z.astype(np.float32))
    assert dw.dtype == np.float32 and dz.dtype == np.float32
    feed = {"X": _X, "Z": _Z, "W": _W}
    np.testing.assert_allclose(dw, _numeric_gradient(_forward_only(), feed, "W"), rtol=1e-4, atol=1e-5)


def test_the_inputs_of_gradient_are_the_point_where_it_differentiates():
    # W as a graph input fed to the Gradient node under its own name, and the params of a
    # loaded model (W an initializer) replacing it: both differentiate at the given value.
    other_w = _W * -0.5
    by_input = jaxonnx.load(_conv_gemm(np.float64, initialized_w=False))(_X, _Z, other_w)
    model = jaxonnx.load(_conv_gemm(np.float64))
    by_params = model.apply({**model.params, "W": other_w}, _X, _Z)
    expected = _numeric_gradient(_forward_only(), {"X": _X, "Z": _Z, "W": other_w}, "W")
    np.testing.assert_allclose(by_input[1], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(by_params[1], expected, rtol=1e-6, atol=1e-8)


def test_gradient_with_respect_to_an_intermediate_value_fed_another_value():
    # The text's "dY/dH when H = H_1": H is computed by the Conv, but the Gradient node is
    # fed H_1 (a graph input); the computation restarts from H_1, not from X.
    elem = T.DOUBLE
    h1 = _rng.standard_normal((2, 3, 4, 4))
    nodes = [*_FORWARD, _gradient(["H_1", "Z"], ["dH", ""], xs=["H", "Z"], y="Y")]
    model = _model(
        nodes,
        [vi("X", elem, [2, 2, 4, 4]), vi("Z", elem, [48, 5]), vi("H_1", elem, [2, 3, 4, 4])],
        [vi("dH", elem, [2, 3, 4, 4])],
        [onnx.numpy_helper.from_array(_W, "W")],
    )
    (dh,) = jaxonnx.load(model)(_X, _Z, h1)
    tail = _model(_FORWARD[1:], [vi("H", elem, [2, 3, 4, 4]), vi("Z", elem, [48, 5])], [vi("Y", elem, [2, 5])])
    np.testing.assert_allclose(dh, _numeric_gradient(tail, {"H": h1, "Z": _Z}, "H"), rtol=1e-6, atol=1e-8)


def test_second_derivative_through_a_gradient_of_a_gradient():
    # The text's last example: O = Loss(Gemm(X, W), L); the second Gradient differentiates
    # the first one's dO/dW, giving d(dO/dW)/dX and d2O/dW2 (summed over dO/dW's elements).
    elem = T.DOUBLE
    x, w, target = _rng.standard_normal((3, 4)), _rng.standard_normal((4, 2)), _rng.standard_normal((3, 2))
    forward = [
        helper.make_node("Gemm", ["X", "W"], ["Yhat"]),
        helper.make_node("Sub", ["Yhat", "L"], ["E"]),
        helper.make_node("Mul", ["E", "E"], ["E2"]),
        helper.make_node("Mul", ["E2", "E"], ["E3"]),  # a cubic loss: the second derivative is not constant
        helper.make_node("ReduceSum", ["E3"], ["O"], keepdims=0),
    ]
    nodes = [
        *forward,
        _gradient(["X", "W", "L"], ["dO_dX", "dO_dW"], xs=["X", "W"], zs=["L"], y="O"),
        _gradient(["X", "W", "L"], ["d2_dX", "d2_dW"], xs=["X", "W"], zs=["L"], y="dO_dW"),
    ]
    inputs = [vi("X", elem, [3, 4]), vi("W", elem, [4, 2]), vi("L", elem, [3, 2])]
    model = _model(nodes, inputs, [vi("dO_dW", elem, [4, 2]), vi("d2_dX", elem, [3, 4]), vi("d2_dW", elem, [4, 2])])
    dw, d2x, d2w = jaxonnx.load(model)(x, w, target)
    first = jaxonnx.load(_model([*forward, nodes[5]], inputs, [vi("dO_dW", elem, [4, 2])]))
    feed = {"X": x, "W": w, "L": target}
    forward_model = _model(forward, inputs, [vi("O", elem, [])])
    np.testing.assert_allclose(dw, _numeric_gradient(forward_model, feed, "W"), rtol=1e-6, atol=1e-7)

    def summed_first(name, value):  # sum(dO/dW) at feed with `name` moved, by jaxonnx's first Gradient
        return float(np.sum(first(**{**feed, name: value})[0]))

    for name, actual in (("X", d2x), ("W", d2w)):
        expected = np.zeros_like(feed[name])
        for index in np.ndindex(expected.shape):
            up, down = feed[name].copy(), feed[name].copy()
            up[index] += 1e-6
            down[index] -= 1e-6
            expected[index] = (summed_first(name, up) - summed_first(name, down)) / 2e-6
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_gradient_sees_the_same_random_draws_as_the_forward_pass():
    # Dropout in training mode inside the differentiated computation: the gradient is the
    # forward pass's mask times 1 / (1 - ratio), so the computation must draw as the graph did.
    nodes = [
        helper.make_node("Dropout", ["X", "ratio", "training"], ["Y"]),
        _gradient(["X"], ["dX"], xs=["X"], y="Y"),
    ]
    initializers = [
        onnx.numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
        onnx.numpy_helper.from_array(np.array(True), "training"),
    ]
    model = jaxonnx.load(
        _model(
            nodes, [vi("X", T.FLOAT, [64])], [vi("Y", T.FLOAT, [64]), vi("dX", T.FLOAT, [64])], initializers, opset=13
        )
    )
    x = np.abs(_rng.standard_normal(64)).astype(np.float32) + 0.1
    for key in (jax.random.key(1), jax.random.key(2)):
        y, dx = jax.jit(model)(x, rng=key)
        kept = np.asarray(y) != 0
        assert 0 < kept.sum() < 64
        np.testing.assert_array_equal(np.asarray(dx), np.where(kept, 2.0, 0.0).astype(np.float32))


def test_gradient_inside_a_subgraph_reads_the_enclosing_scope():
    # A Gradient in an If branch whose computation reads W from the main graph.
    branch_nodes = [
        helper.make_node("Mul", ["X", "W"], ["P"]),
        helper.make_node("Sin", ["P"], ["S"]),
        _gradient(["X"], ["dX"], xs=["X"], y="S"),
    ]
    then_branch = helper.make_graph(branch_nodes, "then", [], [vi("dX", T.FLOAT, [3])])
    else_branch = helper.make_graph([helper.make_node("Identity", ["X"], ["X0"])], "else", [], [vi("X0", T.FLOAT, [3])])
    nodes = [helper.make_node("If", ["c"], ["out"], then_branch=then_branch, else_branch=else_branch)]
    w = np.array([1.0, 2.0, -3.0], np.float32)
    model = jaxonnx.load(
        _model(
            nodes,
            [vi("c", T.BOOL, []), vi("X", T.FLOAT, [3])],
            [vi("out", T.FLOAT, [3])],
            [onnx.numpy_helper.from_array(w, "W")],
        )
    )
    x = np.array([0.1, 0.2, 0.3], np.float32)
    (out,) = jax.jit(model)(np.array(True), x)
    np.testing.assert_allclose(out, np.cos(x * w) * w, rtol=1e-6)


def test_jax_differentiates_through_a_model_with_a_gradient_node():
    # jax.grad over the outputs of Gradient: the second derivative, checked by jax's own
    # numerical check against the model as a function of the params.
    model = jaxonnx.load(_conv_gemm(np.float64))

    def loss(w):
        return jnp.sum(model.apply({**model.params, "W": w}, _X, _Z)[1] ** 2)

    jax.test_util.check_grads(loss, (jnp.asarray(_W),), order=1, modes=("rev",), atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------- errors


def _load_error(nodes, inputs, outputs, initializers=()):
    with pytest.raises(jaxonnx.JaxOnnxError) as info:
        model = jaxonnx.load(_model(nodes, inputs, outputs, initializers))
        model(*[np.ones([d.dim_value for d in i.type.tensor_type.shape.dim], np.float32) for i in inputs])
    return str(info.value)


def test_a_name_nothing_defines_is_refused_at_load():
    message = _load_error(
        [helper.make_node("Sin", ["X"], ["Y"]), _gradient(["X"], ["dX"], xs=["X"], y="Nope")],
        [vi("X", T.FLOAT, [2])],
        [vi("dX", T.FLOAT, [2])],
    )
    assert "Gradient_1" in message and "'Nope'" in message and "defines" in message


def test_an_integer_x_is_refused_with_its_name():
    nodes = [
        helper.make_node("Cast", ["X"], ["N"], to=T.INT64),
        helper.make_node("Cast", ["N"], ["F"], to=T.FLOAT),
        helper.make_node("Sin", ["F"], ["Y"]),
        _gradient(["N"], ["dN"], xs=["N"], y="Y"),
    ]
    message = _load_error(nodes, [vi("X", T.FLOAT, [2])], [vi("dN", T.FLOAT, [2])])
    assert "Gradient-1" in message and "'N'" in message and "float" in message and "Gradient_3" in message


def test_the_input_count_must_match_xs_and_zs():
    nodes = [helper.make_node("Sin", ["X"], ["Y"]), _gradient(["X", "X"], ["dX"], xs=["X"], y="Y")]
    message = _load_error(nodes, [vi("X", T.FLOAT, [2])], [vi("dX", T.FLOAT, [2])])
    assert "Gradient-1" in message and "2 inputs" in message and "`xs`" in message


def test_a_gradient_of_its_own_output_is_a_cycle():
    nodes = [
        helper.make_node("Sin", ["X"], ["Y"]),
        _gradient(["X"], ["dX"], xs=["X"], y="Z"),
        helper.make_node("Add", ["dX", "Y"], ["Z"]),
    ]
    message = _load_error(nodes, [vi("X", T.FLOAT, [2])], [vi("dX", T.FLOAT, [2])])
    assert "cycle" in message and "Gradient_1" in message
