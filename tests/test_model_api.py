"""What users of onnxruntime and of JAX reach for: params, saving, the pytree, pickling,
onnxruntime's run, mixed precision; and fine-tuning every fixture export with optax."""

from __future__ import annotations

import pathlib
import pickle
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import optax
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "models"
vi = helper.make_tensor_value_info


def _load(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxonnx.X64Warning)
        return jaxonnx.load(FIXTURES / f"{name}.onnx")


def _inputs(name):
    data = np.load(FIXTURES / f"{name}.npz")
    return [data[f"inputs.{i}"] for i in range(len([k for k in data.files if k.startswith("inputs.")]))]


def _mlp(dtype=T.FLOAT):
    rng = np.random.default_rng(0)
    numpy_type = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    w = rng.standard_normal((4, 3)).astype(numpy_type)
    b = rng.standard_normal(3).astype(numpy_type)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [vi("x", dtype, ["batch", 4])],
        [vi("y", dtype, ["batch", 3])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.metadata_props.add(key="author", value="tests")
    return proto


X = np.arange(8, dtype=np.float32).reshape(2, 4) / 8


def test_the_model_is_a_pytree_of_its_params():
    model = jaxonnx.load(_mlp())
    leaves, _ = jax.tree.flatten(model)
    assert len(leaves) == 2
    loss = lambda m, x: jnp.sum(m(x)[0] ** 2)  # noqa: E731
    grads = jax.grad(loss)(model, X)
    expected = jax.grad(lambda p: jnp.sum(model.apply(p, X)[0] ** 2))(model.params)
    for got, want in zip(jax.tree.leaves(grads), [expected[name] for name in model.params]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # jit with the model as an argument, and optax over the model itself.
    np.testing.assert_allclose(jax.jit(lambda m, x: m(x))(model, X)[0], model(X)[0], rtol=1e-6)
    optimizer = optax.adam(1e-2)
    state = optimizer.init(model)
    with jax.numpy_dtype_promotion("standard"):  # optax's bias correction mixes a Python float and int32
        updates, state = optimizer.update(jax.grad(loss)(model, X), state, model)
    trained = optax.apply_updates(model, updates)
    assert loss(trained, X) < loss(model, X)


def test_pickling_keeps_the_graph_and_the_params():
    model = jaxonnx.load(_mlp())
    trained = jax.tree.map(lambda p: p * 2, model)
    restored = pickle.loads(pickle.dumps(trained))
    np.testing.assert_allclose(restored(X)[0], trained(X)[0], rtol=1e-6)
    assert not np.allclose(restored(X)[0], model(X)[0])


def test_saved_params_run_in_onnxruntime_and_keep_everything_else(tmp_path):
    for dtype in (T.FLOAT, T.FLOAT16):
        proto = _mlp(dtype)
        model = jaxonnx.load(proto)
        params = {k: v * 1.5 for k, v in model.params.items()}
        path = tmp_path / f"finetuned_{dtype}.onnx"
        model.save(path, params)
        saved = onnx.load(path)
        assert saved.metadata_props[0].value == "tests" and saved.opset_import == proto.opset_import
        assert [t.data_type for t in saved.graph.initializer] == [dtype, dtype]
        x = X.astype(onnx.helper.tensor_dtype_to_np_dtype(dtype))
        (expected,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        np.testing.assert_allclose(model.apply(params, x)[0], expected, rtol=2e-3)
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"The param 'w' is float16\[4, 3\] in the model but got float32\[3\]"
    ):
        model.to_proto({"w": np.ones(3, np.float32)})
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"`params` names \['nope'\]"):
        model.to_proto({"nope": np.ones(3)})


def test_external_data_for_large_models(tmp_path):
    model = jaxonnx.load(_mlp())
    model.save(tmp_path / "big.onnx", external_data=True)
    assert (tmp_path / "big.onnx.data").exists()
    np.testing.assert_allclose(jaxonnx.load(tmp_path / "big.onnx")(X)[0], model(X)[0], rtol=1e-6)


def test_onnxruntime_style_run_and_feeds():
    model = jaxonnx.load(_mlp())
    (y,) = model.run(None, {"x": X})
    np.testing.assert_allclose(y, model(X)[0])
    assert model.run(["y"], {"x": X})[0].shape == (2, 3)
    np.testing.assert_allclose(model({"x": X})[0], y)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"`output_names` names \['z'\]"):
        model.run(["z"], {"x": X})
    assert [(i.name, i.type, i.shape) for i in model.get_inputs()] == [("x", "tensor(float)", ["batch", 4])]
    # Float64 inputs are narrowed eagerly as jax.jit narrows them, while x64 is off.
    with jax.enable_x64(False):
        np.testing.assert_allclose(model(X.astype(np.float64))[0], jax.jit(model)(X.astype(np.float64))[0], rtol=1e-6)


def test_mixed_precision_params_are_cast_at_the_boundary():
    model = jaxonnx.load(_mlp())
    half = jax.tree.map(lambda p: p.astype(jnp.bfloat16), model.params)
    y = model.apply(half, X)[0]
    assert y.dtype == np.float32
    grads = jax.grad(lambda p: jnp.sum(model.apply(p, X)[0]))(half)
    assert all(g.dtype == jnp.bfloat16 for g in grads.values())
    optimizer = optax.adam(1e-2)
    state = optimizer.init(half)
    with jax.numpy_dtype_promotion("standard"):
        updates, state = optimizer.update(grads, state, half)
    assert optax.apply_updates(half, updates)["w"].dtype == jnp.bfloat16
    assert ml_dtypes.bfloat16 == jnp.bfloat16


def test_a_one_element_weight_read_by_a_layer_is_a_param_and_a_scalar_constant_is_not():
    # Linear(8, 1) exports a bias of one element (Gemm's C, or an Add after MatMul): a weight
    # torch trains. A GELU's 0.5 or a Pow exponent read by Mul/Pow is the exporter's constant.
    inits = [
        numpy_helper.from_array(np.ones((1, 8), np.float32), "head.weight"),
        numpy_helper.from_array(np.array([0.3], np.float32), "head.bias"),
        numpy_helper.from_array(np.ones((8, 1), np.float32), "proj.weight"),
        numpy_helper.from_array(np.array([0.1], np.float32), "proj.bias"),
        numpy_helper.from_array(np.array([0.5], np.float32), "half"),
        numpy_helper.from_array(np.array(3.0, np.float32), "three"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "head.weight", "head.bias"], ["g"], transB=1),
        helper.make_node("MatMul", ["x", "proj.weight"], ["m"]),
        helper.make_node("Identity", ["proj.bias"], ["bias_copy"]),
        helper.make_node("Add", ["m", "bias_copy"], ["a"]),
        helper.make_node("Mul", ["a", "half"], ["h"]),
        helper.make_node("Pow", ["h", "three"], ["c"]),
        helper.make_node("Add", ["g", "c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 1])],
        inits,
    )
    model = jaxonnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert set(model.params) == {"head.weight", "head.bias", "proj.weight", "proj.bias"}
    assert set(model.all_params) == set(model.params) | {"half", "three"}
    grads = jax.grad(lambda p: model.apply(p, np.ones((2, 8), np.float32))[0].sum())(model.params)
    assert float(grads["head.bias"][0]) == 2.0


def test_constant_node_weights_are_params_and_shape_deciding_ones_are_not():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w, "w")),  # paddle2onnx style
        helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.array(0.5, np.float32))),
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Mul", ["h", "half"], ["m"]),
        helper.make_node("Unsqueeze", ["m", "axes"], ["m4"]),
        helper.make_node("Resize", ["m4", "", "scales"], ["y"], mode="nearest"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [vi("x", T.FLOAT, [2, 4])],
        [vi("y", T.FLOAT, None)],
        initializer=[
            numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
            numpy_helper.from_array(np.array([0, 1], np.int64), "axes"),
        ],
    )
    model = jaxonnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    assert list(model.params) == ["w"]
    assert set(model.all_params) == {"w", "half", "scales"}
    grad = jax.grad(lambda p: jnp.sum(model.apply(p, X)[0]))(model.params)
    assert grad["w"].shape == (4, 3) and np.any(grad["w"])
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"The param 'scales' decides a shape .*input `scales` of node"
    ):
        jax.grad(lambda p: jnp.sum(model.apply(p, X)[0]))(model.all_params)
    # The saved Constant weight is the fine-tuned one.
    saved = jaxonnx.load(model.to_proto({"w": 2 * w}))
    np.testing.assert_allclose(saved(X)[0], model.apply({"w": 2 * w}, X)[0], rtol=1e-6)


def test_a_negative_dim_means_unknown():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", T.FLOAT, [-1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", T.FLOAT, [-1, 3, "h", "w"])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = jaxonnx.load(proto)
    assert model.inputs[0].shape == [None, 3, "h", "w"]
    x = np.ones((1, 3, 48, 192), np.float32)
    np.testing.assert_array_equal(model(x)[0], x)
    assert "x: tensor(float)[?, 3, h, w]" in repr(model)


FINETUNE = sorted(p.stem for p in FIXTURES.glob("*_static.onnx") if not p.stem.startswith("indexing"))


@pytest.mark.parametrize("name", FINETUNE)
def test_twenty_adam_steps_on_every_export_stay_finite_and_lower_the_loss(name):
    model = _load(name)
    inputs = _inputs(name)

    def loss(p):  # the mean square of every float output (its target: zeros)
        return sum(
            jnp.mean((y.astype(jnp.float32) - jnp.zeros_like(y)) ** 2)
            for y in model.apply(p, *inputs)
            if jnp.issubdtype(y.dtype, jnp.floating)
        )

    optimizer = optax.adam(1e-3)

    @jax.jit
    def step(p, s):
        """The loss at `p`, and one Adam step from it: one compiled program for the whole
        loop (an eager update or finiteness check compiles a program per param shape)."""
        value, grads = jax.value_and_grad(loss)(p)
        updates, s = optimizer.update(grads, s, p)
        p = optax.apply_updates(p, updates)
        return p, s, value, jnp.all(jnp.stack([jnp.all(jnp.isfinite(v)) for v in jax.tree.leaves(p)]))

    params = model.params
    state = jax.jit(optimizer.init)(params)
    losses = []
    with jax.numpy_dtype_promotion("standard"):  # optax's bias correction mixes a Python float and int32
        for number in range(21):  # the 21st call gives the loss after 20 steps
            params, state, value, finite = step(params, state)
            losses.append(float(value))
            assert number == 20 or bool(finite), f"a param is not finite after step {number + 1}"
    assert losses[-1] < losses[0]
