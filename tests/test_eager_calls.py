"""Eager calls, ``model(x)`` as onnxruntime's users write ``session.run``: the whole graph's
executable, reached without per-call work that costs more than a small model runs (a
computation to see whether a trace is in progress; the input checks again for arrays of a
shape and type already checked), and without skipping a check that a new input needs."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxonnx

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "models"


@pytest.fixture(scope="module")
def mlp():
    model = jaxonnx.load(FIXTURES / "mlp_dynamo_dynamic.onnx")
    x = np.asarray(np.load(FIXTURES / "mlp_dynamo_dynamic.npz")["inputs.0"], np.float32)
    return model, x


def _primitives_run_eagerly(fn) -> int:
    """How many primitives JAX evaluated one at a time, outside any trace, while ``fn`` ran
    (a compiled executable called from Python is not among them)."""
    from jax._src import core

    count = 0
    original = core.EvalTrace.process_primitive

    def counting(self, primitive, tracers, params):
        nonlocal count
        count += 1
        return original(self, primitive, tracers, params)

    core.EvalTrace.process_primitive = counting
    try:
        jax.block_until_ready(fn())
    finally:
        core.EvalTrace.process_primitive = original
    return count


def test_a_warm_eager_call_runs_only_the_compiled_graph(mlp):
    model, x = mlp
    x = jnp.asarray(x)
    model(x)  # compiles
    assert _primitives_run_eagerly(lambda: model(x)) == 0
    assert _primitives_run_eagerly(lambda: model(x=x)) == 0  # by name: checked, no computation either


def test_repeated_eager_calls_equal_the_jitted_model(mlp):
    model, x = mlp
    expected = jax.jit(model)(x)
    for value in (x, jnp.asarray(x), jnp.asarray(x), jnp.asarray(np.concatenate([x, x]))):
        got = model(value)
        rows = len(value)
        np.testing.assert_allclose(np.asarray(got[0])[: len(x)], np.asarray(expected[0]), rtol=1e-6, atol=1e-6)
        assert got[0].shape[0] == rows


def test_arrays_of_a_new_shape_or_type_are_checked_again(mlp):
    model, x = mlp
    model(jnp.asarray(x))
    model(jnp.asarray(x))  # the signature is known now
    with pytest.raises(jaxonnx.OnnxTypeError, match="'x'.*int32"):
        model(jnp.asarray(x).astype(jnp.int32))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"'x' is declared with shape"):
        model(jnp.ones((x.shape[0], x.shape[1] + 1), jnp.float32))


def test_a_model_on_constants_inside_a_trace_is_traced(mlp):
    # No input is a tracer, yet the call is traced: the model must be staged into the
    # caller's computation, not run eagerly at trace time.
    model, x = mlp
    constant = jnp.asarray(x)
    model(constant)
    jaxpr = jax.make_jaxpr(lambda: model(constant))()
    assert any(eq.primitive.name in ("pjit", "jit", "dot_general") for eq in jaxpr.jaxpr.eqns)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda: model(constant))()[0]), np.asarray(model(constant)[0]),
                               rtol=1e-6, atol=1e-6)
    grads = jax.grad(lambda scale: model(constant * scale)[0].sum())(1.0)
    assert np.isfinite(float(grads))


def test_small_computations_compile_their_products_single_threaded(mlp):
    from jaxonnx import _xla_cpu

    model, x = mlp
    small = jax.jit(model).lower(jnp.asarray(x))
    large = jax.jit(lambda a: a @ a).lower(jnp.ones((256, 256)))  # 33 million flops
    expected = dict(_xla_cpu._SMALL_COMPUTATION_OPTIONS) if _xla_cpu.TOOK_CONVOLUTIONS_OUT else {}
    assert jaxonnx.compiler_options(small) == expected
    assert jaxonnx.compiler_options(large) == {}
    compiled = model.compile(jnp.asarray(x))
    if expected:  # the products are Eigen's, not YNNPACK's
        assert "__ynn_fusion" in jax.jit(model).lower(jnp.asarray(x)).compile().as_text()
        assert "__ynn_fusion" not in compiled.as_text()
    np.testing.assert_allclose(np.asarray(compiled(jnp.asarray(x))[0]), np.asarray(jax.jit(model)(x)[0]),
                               rtol=1e-6, atol=1e-6)


def test_compile_takes_shapes_and_refuses_other_inputs(mlp):
    model, x = mlp
    run = model.compile(jax.ShapeDtypeStruct((5, x.shape[1]), jnp.float32))
    assert run(jnp.ones((5, x.shape[1]), jnp.float32))[0].shape[0] == 5
    with pytest.raises(TypeError):
        run(jnp.ones((6, x.shape[1]), jnp.float32))


@pytest.fixture(scope="module")
def gpt2():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxonnx.X64Warning)
        model = jaxonnx.load(FIXTURES / "gpt2_dynamo_dynamic.onnx")
    data = np.load(FIXTURES / "gpt2_dynamo_dynamic.npz")
    return model, [data["inputs.0"], data["inputs.1"]]


def test_an_embedding_model_compiles_whole_and_still_checks_its_ids(gpt2):
    # The token ids reach a Gather: the eager call compiles the graph with the bounds check
    # deferred, instead of running op by op (27-35 ms a call before, against ~0.1 ms).
    model, (ids, mask) = gpt2
    assert model.eager_mode == "whole graph compiled per input signature"
    expected = jax.jit(model)(ids, mask)
    for _ in range(2):
        got = model(ids, mask)
        np.testing.assert_allclose(np.asarray(got[0]), np.asarray(expected[0]), rtol=1e-5, atol=1e-5)
    assert _primitives_run_eagerly(lambda: model(ids, mask)) == 0
    bad = ids.copy()
    bad[0, 1] = 10**6
    with pytest.raises(jaxonnx.OnnxValidationError,
                       match=r"Node 'node_embedding' \(Gather-13\) failed: Gather-13 got index 1000000 at position \(0, 1\) "
                             r"of `indices`, outside \[-100, 99\]"):
        model(bad, mask)
    bad[0, 1] = -101  # one below the negative range
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"got index -101 at position \(0, 1\)"):
        model(bad, mask)
    bad[0, 1] = -100  # in range: counts from the back
    np.testing.assert_allclose(np.asarray(model(bad, mask)[0]),
                               np.asarray(jax.jit(model)(bad, mask)[0]), rtol=1e-5, atol=1e-5)


def test_under_jit_out_of_range_ids_are_clamped_as_documented(gpt2):
    model, (ids, mask) = gpt2
    bad = ids.copy()
    bad[0, 1] = 10**6
    clamped = bad.copy()
    clamped[0, 1] = 99
    np.testing.assert_array_equal(np.asarray(jax.jit(model)(bad, mask)[0]),
                                  np.asarray(jax.jit(model)(clamped, mask)[0]))


# --------------------------------------------------------------------------- indices from the inputs
# Every op that reads input-derived indices at trace time to raise on one out of range defers
# that check as Gather does: the eager call compiles the graph whole and still raises.


def _scatter_elements_reference(data, indices, updates, axis):
    """ScatterElements with ``reduction="add"`` in a loop; an index out of range writes nothing."""
    out = data.copy()
    for position in np.ndindex(indices.shape):
        dim = data.shape[axis]
        if -dim <= indices[position] < dim:
            target = list(position)
            target[axis] = indices[position] % dim
            out[tuple(target)] += updates[position]
    return out


def _scatter_nd_reference(data, indices, updates):
    """ScatterND with ``reduction="add"`` in a loop; a row with an index out of range writes nothing."""
    out = data.copy()
    for row in np.ndindex(indices.shape[:-1]):
        if all(-n <= i < n for i, n in zip(indices[row], data.shape)):
            out[tuple(int(i) % n for i, n in zip(indices[row], data.shape))] += updates[row]
    return out


def _gather_nd_zero_rows(data, indices):
    """GatherND of ``data`` (3, 4) by pairs; a pair out of range reads zero."""
    inside = (indices >= -np.array(data.shape)) & (indices < np.array(data.shape))
    rows = [data[tuple(pair)] if ok.all() else 0 for pair, ok in zip(indices, inside)]
    return np.array(rows, data.dtype)


_DATA = np.arange(12, dtype=np.float32).reshape(3, 4)
_UPDATES_23 = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
_UPDATES_24 = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)

#: op, opset, attributes, data, in-range indices, updates (or None), one bad (position, value),
#: the op's error after "failed: ", and what jax.jit computes with the bad indices.
_INDEX_CASES = {
    "GatherElements": (
        "GatherElements", 13, {"axis": 0}, _DATA, np.array([[0, 2, -1, 1], [2, -3, 0, 1]]), None, ((1, 2), 3),
        "GatherElements-13 got index 3 at position (1, 2) of `indices`, outside [-3, 2] for axis 0 of `data` "
        "with shape (3, 4).",
        # Negative indices wrapped, then clamped.
        lambda data, indices, updates: np.take_along_axis(data, np.clip(np.where(indices < 0, indices + 3, indices), 0, 2), 0),
    ),
    "GatherND": (
        "GatherND", 13, {}, _DATA, np.array([[1, 2], [0, -1]]), None, ((1, 1), 7),
        "GatherND-13 got index 7 at position (1, 1) of `indices`, outside [-4, 3] for dim 1 of `data` "
        "with shape (3, 4).",
        lambda data, indices, updates: _gather_nd_zero_rows(data, indices),  # zeros
    ),
    "ScatterElements": (
        "ScatterElements", 18, {"axis": 1, "reduction": "add"}, _DATA, np.array([[3, 0, 3], [-1, 1, 2]]),
        _UPDATES_23, ((1, 0), -5),
        "ScatterElements-18 got index -5 at position (1, 0) of `indices`, outside [-4, 3] for dim 1 of `data` "
        "with shape (3, 4).",
        lambda data, indices, updates: _scatter_elements_reference(data, indices, updates, 1),  # dropped
    ),
    "ScatterND": (
        "ScatterND", 18, {"reduction": "add"}, _DATA, np.array([[2], [-3]]), _UPDATES_24, ((1, 0), 3),
        "ScatterND-18 got index 3 at position (1, 0) of `indices`, outside [-3, 2] for dim 0 of `data` "
        "with shape (3, 4).",
        lambda data, indices, updates: _scatter_nd_reference(data, indices, updates),  # dropped
    ),
    "Scatter": (
        "Scatter", 10, {"axis": 0}, _DATA, np.array([[2, 0, 1], [0, 1, 2]]), _UPDATES_23, ((0, 1), 9),
        "Scatter-9 got index 9 at position (0, 1) of `indices`, outside [-3, 2] for dim 0 of `data` "
        "with shape (3, 4).",
        # Distinct targets, so "add" onto zeroed targets is writing: the dropped one keeps `data`.
        lambda data, indices, updates: _scatter_elements_reference(
            np.where(_scatter_elements_reference(np.zeros_like(data), indices, np.ones_like(updates), 0) > 0, 0, data),
            indices, updates, 0),
    ),
}


def _indices_model(case):
    """A model whose node takes its indices (and updates) from the graph inputs."""
    from onnx import TensorProto, helper

    op_type, opset, attributes, data, indices, updates, *_ = case
    names = ["data", "indices"] + ([] if updates is None else ["updates"])
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, data.shape),
              helper.make_tensor_value_info("indices", TensorProto.INT64, indices.shape)]
    if updates is not None:
        inputs.append(helper.make_tensor_value_info("updates", TensorProto.FLOAT, updates.shape))
    node = helper.make_node(op_type, names, ["y"], name=f"node_{op_type}", **attributes)
    graph = helper.make_graph([node], op_type, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _feed(case, indices):
    _, _, _, data, _, updates, *_ = case
    return [data, indices] + ([] if updates is None else [updates])


@pytest.mark.parametrize("name", sorted(_INDEX_CASES))
def test_indices_from_the_inputs_compile_whole_and_equal_onnxruntime(name, run_onnxruntime):
    case = _INDEX_CASES[name]
    proto = _indices_model(case)
    model = jaxonnx.load(proto)
    assert model.eager_mode == "whole graph compiled per input signature"
    inputs = _feed(case, case[4])
    expected = run_onnxruntime(proto, dict(zip(("data", "indices", "updates"), inputs)))[0]
    op_by_op = model.graph.run(dict(zip(model.input_names, map(jnp.asarray, inputs))))[0]
    for _ in range(2):
        got = model(*inputs)[0]
        np.testing.assert_array_equal(np.asarray(got), expected)
    np.testing.assert_array_equal(np.asarray(op_by_op), expected)
    assert _primitives_run_eagerly(lambda: model(*inputs)) == 0


@pytest.mark.parametrize("name", sorted(_INDEX_CASES))
def test_out_of_range_indices_from_the_inputs_raise_as_op_by_op(name):
    import re

    case = _INDEX_CASES[name]
    op_type, opset, _, data, indices, _, (position, value), message, _ = case
    model = jaxonnx.load(_indices_model(case))
    model(*_feed(case, indices))  # compiled and checked for this signature
    bad = indices.copy()
    bad[position] = value
    with pytest.raises(jaxonnx.OnnxValidationError) as deferred:
        model(*_feed(case, bad))
    with pytest.raises(jaxonnx.OnnxValidationError) as op_by_op:
        model.graph.run(dict(zip(model.input_names, map(jnp.asarray, _feed(case, bad)))))
    version = model.graph.nodes[0].op.name
    assert str(deferred.value) == f"Node 'node_{op_type}' ({version}) failed: {message}"
    # Op by op, the node's label also lists its inputs' shapes; the op's error is the same.
    assert re.sub(r", inputs [^)]*\)", ")", str(op_by_op.value)) == str(deferred.value)
    # The failed call leaves the model usable: the next in-range call computes.
    np.testing.assert_array_equal(np.asarray(model(*_feed(case, indices))[0]),
                                  np.asarray(jax.jit(model)(*_feed(case, indices))[0]))


@pytest.mark.parametrize("name", sorted(_INDEX_CASES))
def test_under_jit_out_of_range_indices_from_the_inputs_behave_as_documented(name):
    case = _INDEX_CASES[name]
    _, _, _, data, indices, updates, (position, value), _, documented = case
    model = jaxonnx.load(_indices_model(case))
    bad = indices.copy()
    bad[position] = value
    got = jax.jit(model)(*_feed(case, bad))[0]
    np.testing.assert_array_equal(np.asarray(got), documented(data, bad, updates))
    # The reference agrees with onnxruntime where every index is in range.
    np.testing.assert_array_equal(np.asarray(jax.jit(model)(*_feed(case, indices))[0]),
                                  documented(data, indices, updates))


def test_every_version_of_the_index_checking_ops_defers_its_checks():
    from jaxonnx._core.registry import get_op, supported_ops

    versions = supported_ops()
    for op_type in ("Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND"):
        for since in versions[op_type]:
            assert get_op(op_type, since).contract.checks, f"{op_type}-{since}"
