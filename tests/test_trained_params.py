"""After a training step, every reader of a model's weights gives the values the model
computes with (its pytree leaves), not the file's: ``params``, ``all_params``,
``initializers``, ``apply`` with no params, ``to_proto`` / ``save`` without params, pickling
and ``jax.jit``; on exports of both PyTorch exporters and a paddle2onnx-style model whose
weights are Constant nodes."""

from __future__ import annotations

import functools
import pathlib
import pickle
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import optax
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import jaxonnx

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "models"
# One TorchScript export (its first conv's weights are named by the exporter) and one dynamo export.
EXPORTS = ["cnn_torchscript_static", "mlp_dynamo_dynamic"]


def _constant_weights_model() -> onnx.ModelProto:
    """An MLP whose weights are Constant nodes, as paddle2onnx writes them."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [
        helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(w, "w")),
        helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(b, "b")),
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "paddle_like",
        [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["n", 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _source(name):
    if name == "paddle_like":
        return _constant_weights_model(), np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    return FIXTURES / f"{name}.onnx", np.load(FIXTURES / f"{name}.npz")["inputs.0"]


def _load(source):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxonnx.X64Warning)
        return jaxonnx.load(source)


def _train(model, x):
    """One Adam step on the model itself (the pytree), as a user writes it."""
    loss = lambda m: jnp.sum(m(x)[0] ** 2)  # noqa: E731
    optimizer = optax.adam(1e-2)
    state = optimizer.init(model)
    grads = jax.grad(loss)(model)
    with jax.numpy_dtype_promotion("standard"):  # optax's bias correction mixes a Python float and int32
        updates, _ = optimizer.update(grads, state, model)
    return optax.apply_updates(model, updates), grads


def _trained(name):
    """The model, one Adam step on it, the input and the weights the step moved: made once
    per export and x64 mode and shared by the tests (the step's eager grad dispatches op by
    op, most of each test's time); no test changes a model."""
    return _trained_in_mode(name, jax.config.jax_enable_x64)


@functools.cache
def _trained_in_mode(name, x64):
    source, x = _source(name)
    original = _load(source)
    trained, grads = _train(original, x)
    moved = {k for k, g in grads.params.items() if np.any(np.asarray(g) != 0)}
    assert moved, "the step must change some weight"
    return original, trained, x, moved


def _leaves_by_name(model) -> dict[str, np.ndarray]:
    leaves = jax.tree.leaves(model)
    assert len(leaves) == len(model.params)
    return dict(zip(model.params, (np.asarray(leaf) for leaf in leaves)))


def _assert_same(actual: dict, expected: dict):
    assert set(actual) == set(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(np.asarray(actual[name]), np.asarray(value), err_msg=name)


ALL = EXPORTS + ["paddle_like"]


@pytest.mark.parametrize("name", ALL)
def test_params_all_params_and_initializers_are_the_trained_leaves(name):
    original, trained, _, moved = _trained(name)
    leaves = _leaves_by_name(trained)
    _assert_same(trained.params, leaves)
    _assert_same({k: v for k, v in trained.all_params.items() if k in leaves}, leaves)
    for k in moved:
        assert not np.array_equal(leaves[k], np.asarray(original.params[k])), k
    # The file's tensors as the model computes with them: the params trained, the rest as read.
    for k, value in trained.initializers.items():
        expected = leaves.get(k, original.initializers[k])
        np.testing.assert_array_equal(np.asarray(value), np.asarray(expected), err_msg=k)
    # The model it was trained from keeps its own weights.
    _assert_same(original.params, {k: v for k, v in original.all_params.items() if k in original.params})


@pytest.mark.parametrize("name", ALL)
def test_calls_compute_with_the_trained_weights(name):
    original, trained, x, _ = _trained(name)
    expected = original.apply(trained.params, x)[0]
    for actual in (
        trained(x)[0],
        trained.apply({}, x)[0],
        trained.run(None, {trained.input_names[0]: x})[0],
        jax.jit(lambda m, v: m(v))(trained, x)[0],
        jax.jit(lambda v: trained.apply({}, v))(x)[0],
    ):
        np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-6, atol=1e-6)
    assert not np.allclose(np.asarray(trained(x)[0]), np.asarray(original(x)[0]))
    # Under jit, `params` of the traced model are its leaves (the tracers it computes with).
    jitted = jax.jit(lambda m: m.params)(trained)
    _assert_same(jitted, _leaves_by_name(trained))


@pytest.mark.parametrize("name", ALL)
def test_save_and_to_proto_write_the_trained_weights(name, tmp_path, run_onnxruntime):
    original, trained, x, moved = _trained(name)
    leaves = _leaves_by_name(trained)
    path = tmp_path / "trained.onnx"
    trained.save(path)
    loaded = _load(path)
    _assert_same(loaded.params, leaves)
    np.testing.assert_allclose(np.asarray(loaded(x)[0]), np.asarray(trained(x)[0]), rtol=1e-6, atol=1e-6)
    _assert_same(_load(trained.to_proto()).params, leaves)
    # onnxruntime reads the trained weights from the saved file too.
    (ort_y,) = run_onnxruntime(path.read_bytes(), {loaded.input_names[0]: x})
    np.testing.assert_allclose(ort_y, np.asarray(trained(x)[0]), rtol=1e-4, atol=1e-5)
    # Params given explicitly replace those names; every other weight stays trained.
    chosen = sorted(moved)[0]
    given = np.zeros_like(leaves[chosen])
    partial = _load(trained.to_proto({chosen: given})).params
    _assert_same(partial, {**leaves, chosen: given})


@pytest.mark.parametrize("name", ALL)
def test_pickle_keeps_the_trained_weights(name):
    _, trained, x, _ = _trained(name)
    leaves = _leaves_by_name(trained)
    restored = pickle.loads(pickle.dumps(trained))
    _assert_same(restored.params, leaves)
    _assert_same(_leaves_by_name(restored), leaves)
    np.testing.assert_allclose(np.asarray(restored(x)[0]), np.asarray(trained(x)[0]), rtol=1e-6, atol=1e-6)
    twice = pickle.loads(pickle.dumps(restored))
    _assert_same(twice.params, leaves)
    _assert_same(_load(restored.to_proto()).params, leaves)


@pytest.mark.parametrize("name", EXPORTS)
def test_trained_weights_with_x64_off(name, x64_off, tmp_path):
    original, trained, x, moved = _trained(name)
    leaves = _leaves_by_name(trained)
    assert all(v.dtype == np.float32 for v in leaves.values())
    _assert_same(trained.params, leaves)
    np.testing.assert_allclose(
        np.asarray(jax.jit(lambda m, v: m(v))(trained, x)[0]),
        np.asarray(original.apply(leaves, x)[0]),
        rtol=1e-6,
        atol=1e-6,
    )
    trained.save(tmp_path / "trained.onnx")
    _assert_same(_load(tmp_path / "trained.onnx").params, leaves)
    _assert_same(pickle.loads(pickle.dumps(trained)).params, leaves)


def test_a_second_training_step_starts_from_the_first():
    original, trained, x, _ = _trained("mlp_dynamo_dynamic")
    again, _ = _train(trained, x)
    by_hand, _ = _train(_load(trained.to_proto()), x)
    _assert_same(again.params, _leaves_by_name(by_hand))
