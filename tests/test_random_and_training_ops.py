"""The random ops (their distributions and keys) and the ai.onnx.preview.training optimizers.

A draw of jax.random cannot equal another runtime's, so the random ops are checked by what
the operators specify: the distribution (the mean and variance of many draws within a few
standard errors, frequencies against probabilities), shapes and dtypes (against
onnxruntime), and the key rules of jaxonnx (a seed draws the same every call, the same key
the same, another key another, no key under jit is an error). The optimizers, which
onnxruntime's default build lacks, are checked against optax's Adam, Adagrad and SGD with
momentum over several steps, through a loaded model.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.test_util
import ml_dtypes
import numpy as np
import onnxruntime as ort
import optax
import pytest
from onnx import TensorProto as T
from onnx import helper

import jaxonnx

vi = helper.make_tensor_value_info
TRAINING = "ai.onnx.preview.training"
KEY = jax.random.key(0)
#: How many standard errors a statistic of many draws may stray (a false alarm is then
#: rarer than one in a million; every draw here is from a fixed key, so the test is stable).
Z = 5


def _model(nodes, inputs, outputs, *, opset=22, training=False):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(TRAINING, 1)] if training else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


def _assert_mean_and_variance(draws, mean, variance):
    draws = np.asarray(draws, np.float64).reshape(-1)
    n = draws.size
    assert abs(draws.mean() - mean) < Z * np.sqrt(variance / n), (draws.mean(), mean)
    # The sample variance's standard error is about variance * sqrt(2 / n) for these light tails.
    assert abs(draws.var() - variance) < Z * variance * np.sqrt(2.0 / n), (draws.var(), variance)


# ------------------------------------------------------------------------- distributions


@pytest.mark.parametrize("dtype", [1, 10, 11, 16])  # float, float16, double, bfloat16
def test_random_normal_has_the_mean_and_variance_it_is_given(dtype):
    draws = jaxonnx.ops.random_normal(shape=[100, 200], dtype=dtype, mean=3.0, scale=0.5, rng=KEY)
    expected = {1: np.float32, 10: np.float16, 11: np.float64, 16: ml_dtypes.bfloat16}[dtype]
    assert draws.shape == (100, 200) and draws.dtype == expected
    _assert_mean_and_variance(draws, 3.0, 0.25)


@pytest.mark.parametrize("dtype", [1, 10, 16])
def test_random_uniform_stays_in_its_interval_with_the_uniform_mean_and_variance(dtype):
    draws = jaxonnx.ops.random_uniform(shape=[20000], dtype=dtype, low=-1.0, high=3.0, rng=KEY)
    values = np.asarray(draws, np.float64)
    assert values.min() >= -1.0 and values.max() < 3.0  # half types too: a draw never rounds up to `high`
    _assert_mean_and_variance(values, 1.0, 16 / 12)


def test_the_like_ops_draw_in_the_inputs_shape_and_type_unless_dtype_says_otherwise():
    x = np.zeros((30, 400), np.float16)
    normal = jaxonnx.ops.random_normal_like(x, mean=-2.0, scale=2.0, rng=KEY)
    assert normal.shape == x.shape and normal.dtype == np.float16
    _assert_mean_and_variance(normal, -2.0, 4.0)
    uniform = jaxonnx.ops.random_uniform_like(np.zeros((30, 400), np.int64), dtype=1, low=5.0, high=6.0, rng=KEY)
    assert uniform.dtype == np.float32
    _assert_mean_and_variance(uniform, 5.5, 1 / 12)
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"RandomNormalLike-22 got an input of type int32 and no `dtype`"):
        jaxonnx.ops.random_normal_like(np.zeros(3, np.int32), rng=KEY)
    with pytest.raises(jaxonnx.OnnxTypeError, match=r"got `dtype`=6 \(int32\); it must be the code of one of"):
        jaxonnx.ops.random_uniform(shape=[2], dtype=6, rng=KEY)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"got `shape`=\[2, -1\]"):
        jaxonnx.ops.random_normal(shape=[2, -1], rng=KEY)


def test_multinomial_frequencies_match_the_softmax_of_each_row():
    probabilities = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    samples = 20000
    draws = jaxonnx.ops.multinomial(np.log(probabilities).astype(np.float32), sample_size=samples, dtype=7, rng=KEY)
    assert draws.shape == (2, samples) and draws.dtype == np.int64
    for row, p in zip(np.asarray(draws), probabilities):
        frequencies = np.bincount(row, minlength=3) / samples
        np.testing.assert_array_less(np.abs(frequencies - p), Z * np.sqrt(p * (1 - p) / samples))
    # Unnormalized log-probabilities: adding a constant to a row changes nothing.
    shifted = jaxonnx.ops.multinomial(np.log(probabilities) + 7.0, sample_size=8, rng=KEY)
    np.testing.assert_array_equal(shifted, jaxonnx.ops.multinomial(np.log(probabilities), sample_size=8, rng=KEY))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"\[batch_size, class_size\], got shape \(3,\)"):
        jaxonnx.ops.multinomial(np.zeros(3, np.float32), rng=KEY)


def test_bernoulli_draws_ones_at_the_given_rates():
    p = np.tile(np.array([0.0, 0.1, 0.5, 0.9, 1.0]), (4000, 1))
    draws = np.asarray(jaxonnx.ops.bernoulli(p, rng=KEY))
    assert draws.dtype == np.float64 and set(np.unique(draws)) <= {0.0, 1.0}
    rates = draws.mean(axis=0)
    assert rates[0] == 0 and rates[-1] == 1
    np.testing.assert_array_less(np.abs(rates[1:4] - p[0, 1:4]), Z * np.sqrt(p[0, 1:4] * (1 - p[0, 1:4]) / 4000))
    assert jaxonnx.ops.bernoulli(p.astype(np.float32), dtype=9, rng=KEY).dtype == np.bool_


# ---------------------------------------------------------------------------------- keys

_SHAPE = [64]


def _draws_model():
    """Two RandomNormal nodes without a seed, one with, a RandomUniformLike of the input and a
    Multinomial of its log-probabilities: every random op in one graph."""
    nodes = [
        helper.make_node("RandomNormal", [], ["a"], shape=_SHAPE),
        helper.make_node("RandomNormal", [], ["b"], shape=_SHAPE),
        helper.make_node("RandomNormal", [], ["seeded"], shape=_SHAPE, seed=3.0),
        helper.make_node("RandomUniformLike", ["x"], ["u"]),
        helper.make_node("Multinomial", ["logits"], ["m"], sample_size=16),
        helper.make_node("Bernoulli", ["x"], ["coin"]),
    ]
    inputs = [vi("x", T.FLOAT, _SHAPE), vi("logits", T.FLOAT, [2, 3])]
    outputs = [vi(n, T.FLOAT, _SHAPE) for n in ("a", "b", "seeded", "u")]
    outputs += [vi("m", T.INT32, [2, 16]), vi("coin", T.FLOAT, _SHAPE)]
    return jaxonnx.load(_model(nodes, inputs, outputs))


X = np.full(_SHAPE, 0.5, np.float32)
LOGITS = np.zeros((2, 3), np.float32)


def test_the_same_key_draws_the_same_eagerly_and_under_jit_and_another_key_draws_otherwise():
    model = _draws_model()
    first = [np.asarray(v) for v in model(X, LOGITS, rng=KEY)]
    again = [np.asarray(v) for v in model(X, LOGITS, rng=KEY)]
    jitted = [np.asarray(v) for v in jax.jit(lambda x, logits, k: model(x, logits, rng=k))(X, LOGITS, KEY)]
    other = [np.asarray(v) for v in model(X, LOGITS, rng=jax.random.key(1))]
    for name, f, a, j, o in zip("a b seeded u m coin".split(), first, again, jitted, other):
        np.testing.assert_array_equal(a, f, err_msg=name)
        np.testing.assert_array_equal(j, f, err_msg=name)
        assert np.array_equal(o, f) == (name == "seeded"), name  # only the seeded node ignores the key
    assert not np.array_equal(first[0], first[1])  # two nodes, two independent draws


def test_a_node_draws_from_the_callers_key_folded_with_its_position():
    # The documented split: node i of the main graph draws from jax.random.fold_in(key, i).
    a, b = _draws_model()(X, LOGITS, rng=KEY)[:2]
    np.testing.assert_array_equal(a, jaxonnx.ops.random_normal(shape=_SHAPE, rng=jax.random.fold_in(KEY, 0)))
    np.testing.assert_array_equal(b, jaxonnx.ops.random_normal(shape=_SHAPE, rng=jax.random.fold_in(KEY, 1)))


def test_a_seed_draws_the_same_on_every_call_and_needs_no_key_under_jit():
    model = jaxonnx.load(
        _model([helper.make_node("RandomUniform", [], ["y"], shape=[8], seed=11.0)], [], [vi("y", T.FLOAT, [8])])
    )
    first = np.asarray(model()[0])
    np.testing.assert_array_equal(jax.jit(model)()[0], first)
    np.testing.assert_array_equal(model(rng=jax.random.key(5))[0], first)
    np.testing.assert_array_equal(jaxonnx.ops.random_uniform(shape=[8], seed=11.0), first)
    assert not np.array_equal(jaxonnx.ops.random_uniform(shape=[8], seed=12.0), first)


def test_without_a_key_an_eager_call_draws_anew_and_a_jitted_one_raises():
    model = _draws_model()
    assert not np.array_equal(model(X, LOGITS)[0], model(X, LOGITS)[0])
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"RandomNormal-22 draws random numbers but has no `seed`"):
        jax.jit(model)(X, LOGITS)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"Bernoulli-22 draws random numbers but has no `seed`"):
        jax.jit(lambda p: jaxonnx.ops.bernoulli(p))(X)


def test_shapes_and_types_agree_with_onnxruntime():
    nodes = [
        helper.make_node("RandomNormal", [], ["n"], shape=[2, 5], dtype=T.DOUBLE, seed=1.0),
        helper.make_node("RandomUniformLike", ["ints"], ["u"], dtype=T.FLOAT),
        helper.make_node("RandomNormalLike", ["x"], ["nl"]),
        helper.make_node("Multinomial", ["logits"], ["m"], sample_size=4, dtype=T.INT64),
        helper.make_node("Bernoulli", ["x"], ["coin"], dtype=T.INT32),
    ]
    inputs = [vi("ints", T.INT64, [3, 1]), vi("x", T.FLOAT, _SHAPE), vi("logits", T.FLOAT, [2, 3])]
    outputs = [
        vi("n", T.DOUBLE, [2, 5]),
        vi("u", T.FLOAT, [3, 1]),
        vi("nl", T.FLOAT, _SHAPE),
        vi("m", T.INT64, [2, 4]),
        vi("coin", T.INT32, _SHAPE),
    ]
    proto = _model(nodes, inputs, outputs, opset=21)
    feed = {"ints": np.zeros((3, 1), np.int64), "x": X, "logits": LOGITS}
    expected = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)
    actual = jaxonnx.load(proto).run(None, feed, rng=KEY)
    for a, e in zip(actual, expected):
        assert np.asarray(a).shape == e.shape and np.asarray(a).dtype == e.dtype, (np.asarray(a).dtype, e.dtype)


# ----------------------------------------------------------------------------- training


def _optimizer_model(op_type, states, **attributes):
    """One node of ``op_type`` optimizing the tensors w (3,) and b (2, 2): inputs R, T, then
    the values, the gradients and each state of both tensors (the outputs likewise)."""
    shapes = {"w": [3], "b": [2, 2]}
    kinds = ["X", "G", *states]
    names = [f"{kind}_{t}" for kind in kinds for t in shapes]
    outs = [f"{kind}_{t}_new" for kind in ["X", *states] for t in shapes]
    node = helper.make_node(op_type, ["R", "T", *names], outs, domain=TRAINING, **attributes)
    inputs = [vi("R", T.FLOAT, []), vi("T", T.INT64, [])] + [vi(n, T.FLOAT, shapes[n[-1]]) for n in names]
    return jaxonnx.load(_model([node], inputs, [vi(o, T.FLOAT, shapes[o.split("_")[1]]) for o in outs], training=True))


def _loss(params):  # a quadratic bowl with its minimum at w = 1, b = -2
    return jnp.sum((params["w"] - 1.0) ** 2) + 0.5 * jnp.sum((params["b"] + 2.0) ** 2)


def _run_steps(model, transformation, states, steps=4, t0=0, learning_rate=0.1):
    """``steps`` steps of the ONNX optimizer model and of the optax transformation from the
    same start; returns both final parameter dicts."""
    start = {"w": jnp.array([0.5, -1.0, 2.0], jnp.float32), "b": jnp.array([[0.0, 1.0], [-3.0, 2.0]], jnp.float32)}
    ours, state = dict(start), {kind: {t: jnp.zeros_like(v) for t, v in start.items()} for kind in states}
    step = jax.jit(lambda r, t, *flat: model(r, t, *flat))
    for k in range(steps):
        grads = jax.grad(_loss)(ours)
        flat = [ours["w"], ours["b"], grads["w"], grads["b"]] + [state[s][t] for s in states for t in ("w", "b")]
        outputs = step(jnp.float32(learning_rate), jnp.int64(t0 + k), *flat)
        ours = {"w": outputs[0], "b": outputs[1]}
        state = {s: {"w": outputs[2 + 2 * i], "b": outputs[3 + 2 * i]} for i, s in enumerate(states)}
    theirs, opt_state = dict(start), transformation.init(start)
    with jax.numpy_dtype_promotion("standard"):  # optax mixes its int32 count with Python floats
        for _ in range(steps):
            updates, opt_state = transformation.update(jax.grad(_loss)(theirs), opt_state, theirs)
            theirs = optax.apply_updates(theirs, updates)
    return ours, theirs


def _assert_same_params(ours, theirs):
    for name in ("w", "b"):
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_adam_steps_are_optax_adams():
    # ONNX's bias correction at update count T equals optax's at its step T (counted from 1),
    # with epsilon 0 (ONNX adds it to the uncorrected root, optax to the corrected one).
    model = _optimizer_model("Adam", ["V", "H"], alpha=0.8, beta=0.9, epsilon=0.0)
    ours, theirs = _run_steps(model, optax.adam(0.1, b1=0.8, b2=0.9, eps=0.0), ["V", "H"], t0=1)
    _assert_same_params(ours, theirs)


def test_adagrad_steps_are_optax_adagrads():
    model = _optimizer_model("Adagrad", ["H"], epsilon=0.0)
    ours, theirs = _run_steps(model, optax.adagrad(0.1, initial_accumulator_value=0.0, eps=0.0), ["H"])
    _assert_same_params(ours, theirs)


@pytest.mark.parametrize("mode", ["standard", "nesterov"])
def test_momentum_steps_are_optax_sgd_with_momentum(mode):
    # beta 1: optax's trace adds the whole gradient (ONNX's first step, T = 0, does in any case).
    model = _optimizer_model("Momentum", ["V"], alpha=0.9, beta=1.0, mode=mode, norm_coefficient=0.0)
    sgd = optax.sgd(0.1, momentum=0.9, nesterov=mode == "nesterov")
    ours, theirs = _run_steps(model, sgd, ["V"])
    _assert_same_params(ours, theirs)


def test_regularization_and_decay_attributes_follow_the_formulas():
    r, t = jnp.float64(0.2), jnp.int64(2)
    x, g, s1, s2 = jnp.array([1.5, -0.5]), jnp.array([0.3, 0.2]), jnp.array([0.1, 0.4]), jnp.array([0.5, 0.25])
    x_new, h_new = jaxonnx.ops.adagrad(r, t, x, g, s1, decay_factor=0.5, epsilon=1e-3, norm_coefficient=0.1)
    gr = 0.1 * x + g
    np.testing.assert_allclose(h_new, s1 + gr**2, rtol=1e-12)
    np.testing.assert_allclose(x_new, x - 0.2 / (1 + 2 * 0.5) * gr / (np.sqrt(s1 + gr**2) + 1e-3), rtol=1e-12)
    x_new, v_new, h_new = jaxonnx.ops.adam(
        r, t, x, g, s1, s2, alpha=0.7, beta=0.8, epsilon=1e-3, norm_coefficient=0.1, norm_coefficient_post=0.05
    )
    v, h = 0.7 * s1 + 0.3 * gr, 0.8 * s2 + 0.2 * gr**2
    expected = 0.95 * (x - 0.2 * np.sqrt(1 - 0.8**2) / (1 - 0.7**2) * v / (np.sqrt(h) + 1e-3))
    np.testing.assert_allclose(x_new, expected, rtol=1e-12)
    x_new, v_new = jaxonnx.ops.momentum(r, t, x, g, s1, alpha=0.9, beta=0.3, mode="nesterov", norm_coefficient=0.1)
    np.testing.assert_allclose(v_new, 0.9 * s1 + 0.3 * gr, rtol=1e-12)
    np.testing.assert_allclose(x_new, x - 0.2 * (gr + 0.9 * v_new), rtol=1e-12)


def test_the_optimizers_are_differentiable_in_the_learning_rate_at_every_step_count():
    # Meta-learning differentiates through the update; at T = 0 Adam's bias correction is
    # 0/0 in the unselected branch, which must not leak a NaN into the gradient.
    x, g, v, h = jnp.array([1.0, 2.0]), jnp.array([0.5, -1.0]), jnp.array([0.1, 0.1]), jnp.array([0.2, 0.3])
    for t in (0, 3):
        grad = jax.grad(lambda r: jnp.sum(jaxonnx.ops.adam(r, jnp.int64(t), x, g, v, h)[0]))(0.1)
        assert np.isfinite(grad) and grad != 0
        jax.test_util.check_grads(lambda r: jaxonnx.ops.adam(r, jnp.int64(t), x, g, v, h)[0], (0.1,), order=1)


def test_the_optimizers_refuse_inputs_they_cannot_group():
    r, t, x = np.float32(0.1), np.int64(1), np.ones(2, np.float32)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"Adam-1 takes the inputs X, G, V, H of each tensor"):
        jaxonnx.ops.adam(r, t, x, x, x)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"needs the inputs of tensor 0 to share one shape"):
        jaxonnx.ops.adagrad(r, t, x, x, np.ones(3, np.float32))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"needs a scalar `R`, got shape \(2,\)"):
        jaxonnx.ops.adagrad(x, t, x, x, x)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"got `mode`='heavy'"):
        jaxonnx.ops.momentum(r, t, x, x, x, alpha=0.9, beta=0.1, mode="heavy", norm_coefficient=0.0)
