"""The math, bitwise, reduction and loss ops' numerics beyond the op table: Pow's gradient in
its exponent (issue 16), BitShift beyond the bit width and its folding, stable LogSumExp,
Mish and LpNormalization, and the losses' weighted means, ignored targets and bad targets."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import optax
import pytest
from jax.test_util import check_grads
from onnx import helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
from jaxonnx import OnnxValidationError, ops

# ------------------------------------------------------------------------------ Pow


def test_pow_gradient_in_the_exponent_is_finite_at_negative_and_zero_bases():
    x = jnp.array([-2.0, -3.0, 0.0, 0.0, 2.0])
    y = jnp.array([2.0, 3.0, 2.0, 0.0, 1.5])
    value, pullback = jax.vjp(lambda y: ops.pow(x, y), y)
    np.testing.assert_array_equal(value, [4.0, -27.0, 0.0, 1.0, 2.0**1.5])
    (d_y,) = pullback(jnp.ones_like(value))
    np.testing.assert_allclose(d_y, [0.0, 0.0, 0.0, 0.0, 2.0**1.5 * np.log(2.0)], rtol=1e-12)
    # Forward mode gives the same, under jit and vmap too.
    forward = jax.jit(jax.vmap(lambda x, y: jax.jvp(lambda y: ops.pow(x, y), (y,), (jnp.ones_like(y),))[1]))
    np.testing.assert_allclose(forward(x, y), d_y, rtol=1e-12)


def test_pow_gradients_stay_exact_where_the_base_is_positive():
    x = jnp.array([0.5, 1.5, 2.0])
    y = jnp.array([0.3, -1.2, 2.5])
    check_grads(ops.pow, (x, y), order=2, modes=("fwd", "rev"))
    # The base's gradient is JAX's own rule, also at a negative base with an integral exponent.
    np.testing.assert_allclose(jax.grad(lambda x: ops.pow(x, jnp.array(3.0)))(jnp.array(-2.0)), 12.0)


def test_pow_with_a_trainable_exponent_takes_a_finite_optax_step():
    data = jnp.array([-2.0, -1.0, 0.0, 0.5, 3.0])
    params = {"p": jnp.array(2.0)}

    def loss(params):
        return jnp.mean(ops.pow(data, params["p"]) ** 2)

    optimizer = optax.sgd(1e-2)  # (adam's bias correction mixes int32 and float: refused in strict promotion)
    state = optimizer.init(params)
    grads = jax.grad(loss)(params)
    updates, state = optimizer.update(grads, state)
    new = optax.apply_updates(params, updates)
    assert np.isfinite(grads["p"]) and grads["p"] != 0  # the positive entries still drive it
    assert np.isfinite(new["p"]) and new["p"] != params["p"]


def test_pow_exponent_gradient_with_x64_off(x64_off):
    grad = jax.grad(lambda y: ops.pow(jnp.array([-2.0, 2.0], jnp.float32), y).sum())(jnp.float32(2.0))
    assert grad.dtype == jnp.float32
    np.testing.assert_allclose(grad, 4.0 * np.log(2.0), rtol=1e-6)


# ------------------------------------------------------------------------------ bitwise


def test_bit_shift_beyond_the_bit_width_gives_the_sign_extension():
    op = jaxonnx.get_op("BitShift", 28)
    x = np.array([-5, 5, -1, 7, -128], np.int8)
    y = np.array([8, 8, 100, -1, 7], np.int8)
    np.testing.assert_array_equal(op(x, y, direction="RIGHT"), [-1, 0, -1, 0, -1])
    np.testing.assert_array_equal(op(x, y, direction="LEFT"), [0, 0, 0, 0, 0])
    # Left shifts drop bits past the sign bit; right shifts of signed types are arithmetic.
    np.testing.assert_array_equal(
        op(np.array([64, -1], np.int8), np.array([1, 7], np.int8), direction="LEFT"), [-128, -128]
    )
    np.testing.assert_array_equal(op(np.array([-128], np.int8), np.array([7], np.int8), direction="RIGHT"), [-1])
    u = np.array([2**63, 1], np.uint64)
    np.testing.assert_array_equal(
        jaxonnx.get_op("BitShift", 11)(u, np.array([64, 63], np.uint64), direction="LEFT"),
        np.array([0, 2**63], np.uint64),
    )


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_bit_shift_folds_in_numpy_and_jit_agrees(dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 50, dtype=dtype, endpoint=True)
    low = -3 if info.min < 0 else 0
    y = rng.integers(low, info.bits + 3, 50).astype(dtype)
    op = jaxonnx.get_op("BitShift", 28)
    for direction in ("LEFT", "RIGHT"):
        folded = op(x, y, direction=direction)
        assert isinstance(folded, np.ndarray) and folded.dtype == dtype
        traced = jax.jit(lambda a, b: op(a, b, direction=direction))(jnp.asarray(x), jnp.asarray(y))
        np.testing.assert_array_equal(traced, folded)
        np.testing.assert_array_equal(folded, _reference("BitShift", 28, [x, y], direction=direction)[0])


def test_bitwise_ops_fold_in_numpy():
    a, b = np.array([12, -7], np.int64), np.array([10, 3], np.int64)
    for op_type, expected in [("BitwiseAnd", a & b), ("BitwiseOr", a | b), ("BitwiseXor", a ^ b)]:
        result = jaxonnx.get_op(op_type, 18)(a, b)
        assert isinstance(result, np.ndarray)
        np.testing.assert_array_equal(result, expected)
    assert isinstance(jaxonnx.get_op("BitwiseNot", 18)(a), np.ndarray)


def test_bit_shift_refuses_an_unknown_direction():
    with pytest.raises(
        OnnxValidationError, match=r'^BitShift-28 got `direction`=\'UP\'; it must be "LEFT" or "RIGHT"\.$'
    ):
        ops.bit_shift(jnp.array([1], jnp.uint8), jnp.array([1], jnp.uint8), direction="UP")


def test_shrink_of_integers_truncates_and_wraps_as_onnxruntime():
    op = jaxonnx.get_op("Shrink", 9)
    x = np.array([1, 2, 5, 127], np.uint8)
    expected = np.array([254, 255, 2, 124], np.uint8)  # onnxruntime 1.32's answer: 1 - 3 wraps
    np.testing.assert_array_equal(op(x, bias=3.0, lambd=0.5), expected)
    np.testing.assert_array_equal(jax.jit(lambda v: op(v, bias=3.0, lambd=0.5))(jnp.asarray(x)), expected)
    y = np.array([-5, -1, 0, 1, 5], np.int8)
    np.testing.assert_array_equal(op(jnp.asarray(y), bias=1.5, lambd=0.5), [-3, 0, 0, 0, 3])  # -3.5 -> -3, 3.5 -> 3


# ------------------------------------------------------------------------------ stability


def test_reduce_log_sum_exp_is_stable_and_its_gradient_is_the_softmax():
    x = jnp.array([[1e4, 1e4, 0.0], [-1e4, -3e4, -2e4], [-jnp.inf, -jnp.inf, -jnp.inf], [jnp.inf, 1.0, 2.0]])
    result = ops.reduce_log_sum_exp(x, [1], keepdims=0)
    np.testing.assert_allclose(result, [1e4 + np.log(2.0), -1e4, -np.inf, np.inf])
    finite = x[:2]
    np.testing.assert_allclose(
        jax.jit(jax.grad(lambda x: ops.reduce_log_sum_exp(x, [1]).sum()))(finite),
        jax.nn.softmax(finite, axis=1),
    )
    assert ops.reduce_log_sum_exp(jnp.zeros((2, 0)), [1], keepdims=0).tolist() == [-np.inf, -np.inf]


def test_reduce_log_ops_refuse_integers():
    with pytest.raises(OnnxValidationError, match=r"^ReduceLogSumExp-18 got integer `data` \(int32\)"):
        jaxonnx.get_op("ReduceLogSumExp", 18)(np.ones(3, np.int32))


def test_mish_and_softplus_style_ops_do_not_overflow(x64_off):
    x = jnp.array([-100.0, -20.0, 0.0, 20.0, 100.0], jnp.float32)
    assert np.all(np.isfinite(ops.mish(x)))
    np.testing.assert_allclose(ops.mish(x)[-2:], [20.0, 100.0])
    assert np.all(np.isfinite(jax.vmap(jax.grad(ops.mish))(x)))
    assert np.all(np.isfinite(jax.vmap(jax.grad(lambda v: ops.celu(v, alpha=0.5)))(x)))


def test_inverse_functions_follow_numpy_outside_their_domains():
    x = np.array([-2.0, -1.0, 0.5, 1.0, 2.0])
    with np.errstate(all="ignore"):
        for name, reference in [("atanh", np.arctanh), ("acosh", np.arccosh), ("asin", np.arcsin), ("acos", np.arccos)]:
            np.testing.assert_allclose(getattr(ops, name)(jnp.asarray(x)), reference(x), rtol=1e-12)


def test_lp_normalization_of_a_zero_slice_is_zero_with_a_finite_gradient():
    x = jnp.array([[0.0, 0.0], [3.0, -4.0], [3e200, -4e200]])
    for p, expected in [(2, [[0, 0], [0.6, -0.8], [0.6, -0.8]]), (1, [[0, 0], [3 / 7, -4 / 7], [3 / 7, -4 / 7]])]:
        np.testing.assert_allclose(ops.lp_normalization(x, p=p), expected, rtol=1e-12)
        assert np.all(np.isfinite(jax.jit(jax.jacobian(lambda x: ops.lp_normalization(x, p=p)))(x[:2])))


def test_mean_variance_normalization_of_a_constant_slice_is_zero_with_a_finite_gradient():
    x = jnp.array([[1.0, 3.0], [2.0, 2.0]])
    np.testing.assert_allclose(ops.mean_variance_normalization(x, axes=[1]), [[-1, 1], [0, 0]], atol=1e-8)
    assert np.all(np.isfinite(jax.jit(jax.jacobian(lambda x: ops.mean_variance_normalization(x, axes=[1])))(x)))


# ------------------------------------------------------------------------------ losses


def _reference(op_type, version, inputs, outputs=1, **attributes):
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    out = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op_type, names, out, **attributes)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info(o, 0, None) for o in out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
    model.ir_version = 8
    return ReferenceEvaluator(model).run(None, {n: x for n, x in zip(names, inputs) if n})


_SCORES = np.random.default_rng(3).standard_normal((4, 3, 2))
_LABELS = np.array([[0, 2], [1, 1], [2, 0], [1, 2]], np.int64)
_WEIGHTS = np.array([0.2, 3.0, 0.7])


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weights", [None, _WEIGHTS])
@pytest.mark.parametrize("ignore_index", [None, 1, 7])
def test_softmax_cross_entropy_loss_matches_onnx_reference(reduction, weights, ignore_index):
    attributes = {"reduction": reduction} | ({} if ignore_index is None else {"ignore_index": ignore_index})
    expected_loss, expected_log_prob = _reference(
        "SoftmaxCrossEntropyLoss", 13, [_SCORES, _LABELS, weights], outputs=2, **attributes
    )
    loss, log_prob = jax.jit(lambda s, labels, w: ops.softmax_cross_entropy_loss(s, labels, w, **attributes))(
        _SCORES, _LABELS, weights
    )
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-12)
    np.testing.assert_allclose(log_prob, expected_log_prob, rtol=1e-12)
    check_grads(lambda s: ops.softmax_cross_entropy_loss(s, _LABELS, weights, **attributes)[0], (_SCORES,), order=2)


def test_weighted_mean_divides_by_the_weights_of_the_targets_not_ignored():
    log_prob = jnp.log(jnp.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]))
    target = jnp.array([0, 1, 2])
    weight = jnp.array([1.0, 3.0, 5.0])
    loss = ops.negative_log_likelihood_loss(log_prob, target, weight, ignore_index=2)
    np.testing.assert_allclose(loss, -(1 * np.log(0.5) + 3 * np.log(0.8)) / 4, rtol=1e-12)
    # Without weights: the mean over the targets that are not ignored.
    loss = ops.negative_log_likelihood_loss(log_prob, target, ignore_index=2)
    np.testing.assert_allclose(loss, -(np.log(0.5) + np.log(0.8)) / 2, rtol=1e-12)
    assert np.isnan(ops.negative_log_likelihood_loss(log_prob, jnp.array([2, 2, 2]), ignore_index=2))


def test_an_ignored_target_gives_zero_even_where_its_class_0_log_probability_is_minus_inf():
    log_prob = jnp.array([[-jnp.inf, 0.0], [-0.5, -1.0]])
    loss = ops.negative_log_likelihood_loss(log_prob, jnp.array([-100, 0]), ignore_index=-100, reduction="none")
    np.testing.assert_array_equal(loss, [0.0, 0.5])
    assert np.all(
        np.isfinite(
            jax.grad(lambda p: ops.negative_log_likelihood_loss(p, jnp.array([-100, 0]), ignore_index=-100))(log_prob)
        )
    )


def test_a_target_outside_the_classes_raises_when_concrete_and_is_nan_under_jit():
    log_prob = jnp.log(jnp.full((2, 3), 1 / 3))
    with pytest.raises(
        OnnxValidationError,
        match=r"^NegativeLogLikelihoodLoss-22 got class 3 at position \(1,\) of `target`, outside \[0, 2\]",
    ):
        ops.negative_log_likelihood_loss(log_prob, jnp.array([0, 3]))
    jitted = jax.jit(lambda p, t: ops.negative_log_likelihood_loss(p, t, reduction="none"))
    loss = jitted(log_prob, jnp.array([0, 3]))
    assert np.isfinite(loss[0]) and np.isnan(loss[1])


def test_loss_shapes_are_checked():
    with pytest.raises(OnnxValidationError, match=r"^SoftmaxCrossEntropyLoss-13 needs `labels` of shape \(4, 2\)"):
        ops.softmax_cross_entropy_loss(jnp.asarray(_SCORES), jnp.zeros((4, 3), jnp.int64))
    with pytest.raises(OnnxValidationError, match=r"^SoftmaxCrossEntropyLoss-13 got `reduction`='avg'"):
        ops.softmax_cross_entropy_loss(jnp.asarray(_SCORES), jnp.asarray(_LABELS), reduction="avg")


def test_losses_with_x64_off_and_vmap(x64_off):
    scores = jnp.asarray(_SCORES, jnp.float32)
    batched = jnp.stack([scores, 2 * scores])
    loss = jax.vmap(
        lambda s: ops.softmax_cross_entropy_loss(
            s, jnp.asarray(_LABELS, jnp.int32), jnp.asarray(_WEIGHTS, jnp.float32)
        )[0]
    )(batched)
    assert loss.dtype == jnp.float32 and loss.shape == (2,)
    for k in range(2):
        expected = _reference(
            "SoftmaxCrossEntropyLoss", 13, [np.asarray(batched[k]), _LABELS, _WEIGHTS.astype(np.float32)]
        )[0]
        np.testing.assert_allclose(loss[k], expected, rtol=1e-5)


def test_every_new_op_is_registered_at_every_since_version():
    for op_type in ["Acosh", "BitShift", "Celu", "PRelu", "Hardmax", "ReduceLogSumExp", "NegativeLogLikelihoodLoss"]:
        expected = {
            s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.name == op_type and s.domain == ""
        }
        assert set(jaxonnx.supported_ops()[op_type]) == expected


# ------------------------------------------------------------------------------ onnxruntime


def _model(op_type, version, inputs, **attributes):
    names = [f"in{i}" for i in range(len(inputs))]
    node = helper.make_node(op_type, names, ["out"], **attributes)
    elem = helper.np_dtype_to_tensor_dtype(inputs[0].dtype)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
            for n, x in zip(names, inputs)
        ],
        [helper.make_tensor_value_info("out", elem, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
    model.ir_version = 9
    return model, dict(zip(names, inputs))


@pytest.mark.parametrize(
    "op_type, version, inputs, attributes",
    [
        # Where onnx.reference deviates from the text, onnxruntime follows it, and so do we:
        # the L1 norm of negative values (onnx.reference sums x, not |x|) ...
        ("LpNormalization", 22, [np.array([[1.0, -3.0], [-2.0, -2.0]], np.float32)], {"p": 1, "axis": 1}),
        # ... and the mean of an NLL loss with ignore_index=-1 and no weight (onnx.reference
        # divides by every target, the ignored ones too).
        (
            "NegativeLogLikelihoodLoss",
            22,
            [np.log(np.full((3, 2), 0.5, np.float32)) * np.float32([[1], [2], [3]]), np.array([0, -1, 1], np.int64)],
            {"ignore_index": -1},
        ),
        (
            "BitShift",
            28,
            [np.array([-8, -1, 64, -128], np.int8), np.array([9, 3, 1, -2], np.int8)],
            {"direction": "RIGHT"},
        ),
        ("BitShift", 11, [np.array([1, 128, 255], np.uint8), np.array([8, 1, 200], np.uint8)], {"direction": "LEFT"}),
    ],
)
def test_matches_onnxruntime(run_onnxruntime, op_type, version, inputs, attributes):
    model, feed = _model(op_type, version, inputs, **attributes)
    (expected,) = run_onnxruntime(model, feed)
    actual = jaxonnx.get_op(op_type, version)(*map(jnp.asarray, inputs), **attributes)
    assert np.asarray(actual).dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


@pytest.mark.parametrize("to", ["FLOAT8E4M3FNUZ", "FLOAT8E5M2FNUZ"])
def test_cast_to_fnuz_gives_plus_zero_for_negatives_that_round_to_zero(to):
    """The fnuz types have no -0 (its bits are NaN): ml_dtypes, onnx.reference and
    onnxruntime give +0 for -1e-9. XLA's classic CPU emitters gave NaN, so jaxonnx zeroes
    what rounds to zero itself; eagerly and under jit, every bit equals ml_dtypes'."""
    import ml_dtypes

    x = np.array([-0.0, -1e-9, -1e-6, -1e-3, 1e-9, -(2.0**-11), -(2.0**-18), -(2.0**-17), 3.0, -3.0], np.float32)
    op = jaxonnx.get_op("Cast", 24)
    code = getattr(onnx.TensorProto, to)
    want = x.astype(getattr(ml_dtypes, to.lower().replace("float8", "float8_"))).view(np.uint8)
    for got in (op(jnp.asarray(x), to=code), jax.jit(lambda v: op(v, to=code))(x)):
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8), want)
