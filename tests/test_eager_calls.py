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
