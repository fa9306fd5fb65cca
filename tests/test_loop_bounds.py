"""Loops whose end depends on data, and the bound (``loop_bounds=`` of ``jaxonnx.load``)
that makes them a masked ``lax.scan``, which reverse mode differentiates.

The fixture is a real export: ``torch._higher_order_ops.while_loop`` through torch's dynamo
exporter (``tools/export_loop_fixtures.py``), whose Loop has no trip count and a condition
computed from the inputs. torch's outputs and autograd gradients are stored beside it.
"""

import functools
import os
import pickle
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

import jaxonnx

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "loops")
MODEL = os.path.join(FIXTURES, "while_loop_dynamo.onnx")
MODEL_F64 = os.path.join(FIXTURES, "while_loop_dynamo_f64.onnx")
DATA = np.load(os.path.join(FIXTURES, "while_loop_dynamo.npz"))
LOOP = "node_while_loop__2"  # the Loop node's name in the export
SETS = (0, 1)  # 3 and 8 iterations


def _load(path=MODEL, **kwargs):
    """The model; a fixture file's is loaded once per x64 mode and options, so that tests
    calling ``jax.jit`` of it at the same inputs share one compiled program."""
    if isinstance(path, str):
        frozen = tuple(sorted((key, tuple(sorted(value.items()))) for key, value in kwargs.items()))
        return _load_file(path, frozen, jax.config.jax_enable_x64)
    return _load_uncached(path, **kwargs)


def _load_uncached(path, **kwargs):
    # With x64 off, the int64 iteration count narrows to int32, which load announces.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxonnx.X64Warning)
        return jaxonnx.load(path, **kwargs)


@functools.cache
def _load_file(path: str, frozen: tuple, x64: bool) -> jaxonnx.Model:
    return _load_uncached(path, **{key: dict(value) for key, value in frozen})


def _inputs(k):
    return DATA[f"x_{k}"], DATA[f"limit_{k}"]


def _loss(model, k):
    ct_h, ct_total = DATA[f"ct_h_{k}"], DATA[f"ct_total_{k}"]

    def loss(params, x):
        _, h, total = model.apply(params, x, DATA[f"limit_{k}"])
        return (h * ct_h).sum() + (total * ct_total).sum()

    return loss


@pytest.fixture(params=[True, False], ids=["x64", "x64_off"])
def x64(request):
    with jax.enable_x64(request.param):
        yield request.param


def test_the_export_is_a_loop_ended_by_a_traced_condition():
    proto = onnx.load(MODEL)
    (loop,) = [node for node in proto.graph.node if node.op_type == "Loop"]
    assert loop.name == LOOP and loop.input[0] == "" and loop.input[1] != ""  # no trip count, a condition


@pytest.mark.parametrize("k", SETS)
def test_values_match_onnxruntime_and_torch_eagerly_and_jitted_with_and_without_a_bound(x64, k, run_onnxruntime):
    x, limit = _inputs(k)
    expected = run_onnxruntime(onnx.load(MODEL), {"x": x, "limit": limit})
    np.testing.assert_array_equal(expected[0], DATA[f"iterations_{k}"])
    for stored, ort in zip((DATA[f"h_{k}"], DATA[f"total_{k}"]), expected[1:]):
        np.testing.assert_allclose(ort, stored, rtol=1e-5, atol=1e-6)
    unbounded, bounded = _load(), _load(loop_bounds={LOOP: 12})
    results = {}
    for name, model in (("unbounded", unbounded), ("bounded", bounded)):
        for mode, run in (("eager", model), ("jit", jax.jit(model))):
            got = run(x, limit)
            assert int(got[0]) == int(expected[0]) and got[0].dtype == (np.int64 if x64 else np.int32)
            for g, e in zip(got[1:], expected[1:]):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
            results[name, mode] = got
    # The masked scan runs the same body on the same values as the while loop: the same floats.
    for g, e in zip(results["bounded", "jit"], results["unbounded", "jit"]):
        np.testing.assert_array_equal(g, e)
    assert "while[" in str(jax.make_jaxpr(unbounded)(x, limit))
    jaxpr = str(jax.make_jaxpr(bounded)(x, limit))
    assert "scan[" in jaxpr and "while[" not in jaxpr


@pytest.mark.parametrize("k", SETS)
def test_reverse_mode_through_the_bounded_loop_matches_torch_autograd(x64, k):
    model = _load(loop_bounds={LOOP: 12})
    loss = _loss(model, k)
    x = DATA[f"x_{k}"]
    for grad in (jax.grad(loss, argnums=(0, 1)), jax.jit(jax.grad(loss, argnums=(0, 1)))):
        grad_params, grad_x = grad(model.params, x)
        np.testing.assert_allclose(grad_x, DATA[f"grad_x_{k}"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(grad_params["lin.bias"], DATA[f"grad_bias_{k}"], rtol=1e-4, atol=1e-6)
    # Gradients through the jitted model itself, as a user writes them.
    grad_x = jax.grad(lambda x: _loss_of(jax.jit(model), x, k))(x)
    np.testing.assert_allclose(grad_x, DATA[f"grad_x_{k}"], rtol=1e-4, atol=1e-6)


def _loss_of(run, x, k):
    _, h, total = run(x, DATA[f"limit_{k}"])
    return (h * DATA[f"ct_h_{k}"]).sum() + (total * DATA[f"ct_total_{k}"]).sum()


@pytest.mark.parametrize("k", SETS)
def test_gradients_agree_with_central_differences_of_the_float64_export(k):
    """A central difference of the float64 export (step 1e-6, error ~1e-10) checks jax.grad of
    that export to 1e-7, and the float32 export's gradient to float32 rounding."""
    model64 = _load(MODEL_F64, loop_bounds={LOOP: 12})
    x, limit = (v.astype(np.float64) for v in _inputs(k))
    ct_h, ct_total = DATA[f"ct_h_{k}"].astype(np.float64), DATA[f"ct_total_{k}"].astype(np.float64)

    def loss(x):
        _, h, total = model64(x, limit)
        return (h * ct_h).sum() + (total * ct_total).sum()

    # Under jax.jit (eager gradients through the bounded loop: the test above): one program
    # for the loss at every point, one for its gradient.
    grad = jax.jit(jax.grad(loss))(x)
    direction = np.random.default_rng(k).normal(size=x.shape)
    eps = 1e-6
    jitted = jax.jit(model64)
    for sign in (1, -1):  # the steps do not change the number of iterations
        assert int(jitted(x + sign * eps * direction, limit)[0]) == int(DATA[f"iterations_{k}"])
    loss = jax.jit(loss)
    numeric = (loss(x + eps * direction) - loss(x - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(np.vdot(grad, direction), numeric, rtol=1e-7)
    grad32 = jax.jit(jax.grad(lambda x: _loss_of(_load(loop_bounds={LOOP: 12}), x, k)))(DATA[f"x_{k}"])
    np.testing.assert_allclose(grad32, grad, rtol=1e-4, atol=1e-6)


def test_forward_mode_needs_no_bound(x64):
    x, limit = _inputs(1)
    tangent = np.ones_like(x)
    unbounded, bounded = _load(), _load(loop_bounds={LOOP: 12})
    _, jvp_while = jax.jvp(lambda x: jax.jit(unbounded)(x, limit)[1], (x,), (tangent,))
    _, jvp_scan = jax.jvp(lambda x: jax.jit(bounded)(x, limit)[1], (x,), (tangent,))
    np.testing.assert_allclose(jvp_while, jvp_scan, rtol=1e-5, atol=1e-6)
    # And both are the reverse-mode gradient's directional derivative.
    grad = jax.grad(lambda x: (jax.jit(bounded)(x, limit)[1] * DATA["ct_h_1"]).sum())(x)
    np.testing.assert_allclose(np.vdot(jvp_while, DATA["ct_h_1"]), np.vdot(grad, tangent), rtol=1e-5)


def test_reverse_mode_without_a_bound_names_the_node_and_the_option(x64):
    model = _load()
    x, limit = _inputs(0)
    for run in (model, jax.jit(model)):
        with pytest.raises(
            jaxonnx.StaticValueError,
            match=rf"Loop node '{LOOP}' ends at a point only known at run "
            rf"time.*forward mode only.*loop_bounds=\{{'{LOOP}': N\}}",
        ):
            jax.grad(lambda x: run(x, limit)[1].sum())(x)  # noqa: B023
    with pytest.raises(jaxonnx.StaticValueError, match=f"Loop node '{LOOP}'"):
        jax.jit(jax.grad(lambda x: model(x, limit)[2].sum()))(x)


def test_a_loop_that_needs_more_iterations_than_its_bound_is_refused(x64):
    x, limit = _inputs(1)  # 8 iterations
    exact = _load(loop_bounds={LOOP: 8})
    np.testing.assert_allclose(jax.jit(exact)(x, limit)[1], DATA["h_1"], rtol=1e-5, atol=1e-6)
    short = _load(loop_bounds={LOOP: 7})
    message = rf"needs more than its bound of 7 iterations.*loop_bounds=\{{'{LOOP}': N\}}"
    with pytest.raises(jaxonnx.OnnxValidationError, match=rf"Node '{LOOP}' \(Loop-19.*{message}"):
        short(x, limit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JAX warns as the callback's error travels back
        with pytest.raises(Exception, match=f"Loop node '{LOOP}' {message}"):
            jax.block_until_ready(jax.jit(short)(x, limit))
    # Differentiated eagerly, the iterations are concrete inside the call: refused there.
    with pytest.raises(jaxonnx.OnnxValidationError, match=rf"Node '{LOOP}' \(Loop-19.*{message}"):
        jax.grad(lambda x: short(x, limit)[1].sum())(x)
    # The same bound suffices for the input set that stops after 3 iterations.
    np.testing.assert_allclose(jax.jit(short)(*_inputs(0))[1], DATA["h_0"], rtol=1e-5, atol=1e-6)


def test_a_bound_is_keyed_by_the_node_or_an_output_and_kept_by_pickling():
    x, limit = _inputs(0)
    by_output = _load(loop_bounds={"getitem_1": 12})
    grad = jax.grad(lambda x: by_output(x, limit)[1].sum())(x)
    restored = pickle.loads(pickle.dumps(by_output))
    np.testing.assert_array_equal(jax.grad(lambda x: restored(x, limit)[1].sum())(x), grad)
    with pytest.raises(
        jaxonnx.OnnxValidationError,
        match=rf"Loop bounds were given for \['node_abs_1'\], which name "
        rf"no Loop node.*\['{LOOP}'\]",
    ):
        _load(loop_bounds={"node_abs_1": 3})
    with pytest.raises(jaxonnx.OnnxValidationError, match="two bounds on its iterations"):
        _load(loop_bounds={LOOP: 4}, size_hints={"getitem": 5})
    with pytest.raises(jaxonnx.OnnxValidationError, match="must be a non-negative int, got -1"):
        _load(loop_bounds={LOOP: -1})


def test_a_size_hint_on_the_first_output_is_the_same_bound():
    x, limit = _inputs(1)
    hinted, bounded = _load(size_hints={"getitem": 12}), _load(loop_bounds={LOOP: 12})
    loss = lambda model: lambda x: model(x, limit)[1].sum()  # noqa: E731
    np.testing.assert_array_equal(jax.grad(loss(hinted))(x), jax.grad(loss(bounded))(x))


# ------------------------------------------------------------------ scan outputs under a bound


def _counting_loop():
    """s <- s * x while s.sum() < stop; scan output: each iteration's s."""
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["s", "x"], ["s2"]),
            helper.make_node("ReduceSum", ["s2"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "stop"], ["c2"]),
            helper.make_node("Identity", ["s2"], ["out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", T.INT64, []),
            helper.make_tensor_value_info("c", T.BOOL, []),
            helper.make_tensor_value_info("s", T.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info(n, t, shape)
            for n, t, shape in (("c2", T.BOOL, []), ("s2", T.FLOAT, [2]), ("out", T.FLOAT, [2]))
        ],
    )
    node = helper.make_node("Loop", ["", "c0", "s0"], ["s", "outs"], body=body, name="grow")
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, t, s)
            for n, t, s in (("x", T.FLOAT, [2]), ("stop", T.FLOAT, []), ("c0", T.BOOL, []), ("s0", T.FLOAT, [2]))
        ],
        [helper.make_tensor_value_info("s", T.FLOAT, [2]), helper.make_tensor_value_info("outs", T.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])


def test_scan_outputs_are_padded_to_the_bound_eagerly_and_jitted(x64, run_onnxruntime):
    proto = _counting_loop()
    feed = {
        "x": np.array([1.5, 2.0], np.float32),
        "stop": np.array(40.0, np.float32),
        "c0": np.array(True),
        "s0": np.array([1.0, 1.0], np.float32),
    }
    expected_s, expected_outs = run_onnxruntime(proto, feed)
    rows = expected_outs.shape[0]
    model = _load(proto, loop_bounds={"grow": 10})
    for run in (model, jax.jit(model)):
        s, outs = run(**feed)
        np.testing.assert_allclose(s, expected_s, rtol=1e-6)
        assert outs.shape == (10, 2)
        np.testing.assert_allclose(outs[:rows], expected_outs, rtol=1e-6)
        assert not np.any(np.asarray(outs[rows:]))
    grad = jax.grad(lambda x: model(x, feed["stop"], feed["c0"], feed["s0"])[1].sum())(feed["x"])
    # d/dx of sum_k prod(x)^k-style terms: s_k = x^k elementwise, so d sum_k x^k = sum_k k x^(k-1).
    powers = np.arange(1, rows + 1)
    expected_grad = (powers[:, None] * feed["x"][None, :] ** (powers[:, None] - 1)).sum(0)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-5)
    with pytest.raises(jaxonnx.OnnxValidationError, match="needs more than its bound of 3 iterations"):
        _load(proto, loop_bounds={"grow": 3})(**feed)


def test_a_bound_below_a_static_trip_count_without_an_exit_is_refused_at_trace_time():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Add", ["a", "a"], ["a2"])],
        "body",
        [
            helper.make_tensor_value_info("i", T.INT64, []),
            helper.make_tensor_value_info("c", T.BOOL, []),
            helper.make_tensor_value_info("a", T.FLOAT, []),
        ],
        [helper.make_tensor_value_info("c2", T.BOOL, []), helper.make_tensor_value_info("a2", T.FLOAT, [])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "a0"], ["a"], body=body, name="doubling")],
        "g",
        [helper.make_tensor_value_info("a0", T.FLOAT, [])],
        [helper.make_tensor_value_info("a", T.FLOAT, [])],
        [helper.make_tensor("M", T.INT64, [], [5])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    np.testing.assert_allclose(jax.jit(jaxonnx.load(proto, loop_bounds={"doubling": 5}))(np.float32(1))[0], 32.0)
    for run in (
        jaxonnx.load(proto, loop_bounds={"doubling": 4}),
        jax.jit(jaxonnx.load(proto, loop_bounds={"doubling": 4})),
    ):
        with pytest.raises(jaxonnx.OnnxValidationError, match="needs more than its bound of 4 iterations"):
            run(np.float32(1))


def test_the_bounded_loop_vmaps_as_a_python_loop_over_examples():
    model = _load(loop_bounds={LOOP: 12})
    xs = np.stack([DATA["x_0"], DATA["x_1"]])
    limit = DATA["limit_1"]
    batched = jax.vmap(lambda x: model(x, limit)[1])(xs)
    np.testing.assert_allclose(batched, np.stack([jax.jit(model)(x, limit)[1] for x in xs]), rtol=1e-6)
    assert jnp.shape(batched) == (2, 2, 4)


def test_a_loop_inside_a_branch_is_bounded_by_its_path():
    body = _counting_loop().graph.node[0].attribute[0].g
    body.output.pop()  # no scan output: the loop's only result is s
    then_branch = helper.make_graph(
        [helper.make_node("Loop", ["", "c0", "s0"], ["s_loop"], body=body, name="grow")],
        "then",
        [],
        [helper.make_tensor_value_info("s_loop", T.FLOAT, [2])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["s0"], ["s_same"])],
        "else",
        [],
        [helper.make_tensor_value_info("s_same", T.FLOAT, [2])],
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["c0"], ["s"], then_branch=then_branch, else_branch=else_branch, name="choose")],
        "g",
        [
            helper.make_tensor_value_info(n, t, s)
            for n, t, s in (("x", T.FLOAT, [2]), ("stop", T.FLOAT, []), ("c0", T.BOOL, []), ("s0", T.FLOAT, [2]))
        ],
        [helper.make_tensor_value_info("s", T.FLOAT, [2])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    x, stop, s0 = np.array([1.5, 2.0], np.float32), np.array(40.0, np.float32), np.array([1.0, 1.0], np.float32)

    def loss(model):
        return lambda x: jax.jit(model)(x, stop, np.array(True), s0)[0].sum()

    with pytest.raises(jaxonnx.StaticValueError, match=r"Loop node '/choose/then_branch/grow'.*loop_bounds="):
        jax.grad(loss(jaxonnx.load(proto)))(x)
    grad = jax.grad(loss(jaxonnx.load(proto, loop_bounds={"/choose/then_branch/grow": 8})))(x)
    np.testing.assert_allclose(grad, 6 * x**5, rtol=1e-5)  # six iterations: s = x ** 6
