"""The attention family beyond the op table: jit with traced values, x64 off, fully masked
rows (values and gradients), the text where onnx.reference differs, and error messages."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest

import jaxonnx
from jaxonnx import OnnxValidationError, ops

_rng = np.random.default_rng(5)


def _normal(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


Q, K, V = _normal(2, 2, 3, 4), _normal(2, 2, 5, 4), _normal(2, 2, 5, 3)


def test_attention_jit_with_traced_nonpad_equals_eager():
    nonpad = np.array([5, 2], np.int64)
    eager = ops.attention(Q, K, V, None, None, None, nonpad, is_causal=1, left_window_size=1)
    jitted = jax.jit(lambda *a: ops.attention(*a, is_causal=1, left_window_size=1))(
        *jax.device_put((Q, K, V)), None, None, None, jax.device_put(nonpad)
    )
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-6, atol=1e-6)


def test_attention_fully_masked_rows_are_zero_with_finite_gradients():
    mask = np.ones((3, 5), bool)
    mask[1] = False
    # Under jax.jit (the eager path: test_attention_jit_with_traced_nonpad_equals_eager): one
    # program each for the values and the gradients, not one per primitive.
    y, _, _, probabilities = jax.jit(lambda q, k, v: ops.attention(q, k, v, mask, qk_matmul_output_mode=3))(Q, K, V)
    assert np.all(np.asarray(y)[:, :, 1] == 0) and np.all(np.asarray(probabilities)[:, :, 1] == 0)
    assert np.all(np.asarray(y)[:, :, [0, 2]] != 0)
    grads = jax.jit(jax.grad(lambda q, k, v: ops.attention(q, k, v, mask)[0].sum(), argnums=(0, 1, 2)))(Q, K, V)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g)))
    assert np.all(np.asarray(grads[0])[:, :, 1] == 0)  # a masked query row has no effect


def test_attention_without_keys_gives_zeros():
    y, key, value, probabilities = jax.jit(lambda *a: ops.attention(*a, qk_matmul_output_mode=3))(
        Q, K[:, :, :0], V[:, :, :0]
    )
    assert y.shape == (2, 2, 3, 3) and probabilities.shape == (2, 2, 3, 0) and key.shape == (2, 2, 0, 4)
    assert np.all(np.asarray(y) == 0)


def test_attention_mode_0_is_the_raw_scores_with_a_softcap():
    # The text and the function body: mode 0 is Q K^T * scale, before the soft cap
    # (onnx.reference returns the soft-capped scores).
    *_, scores = ops.attention(Q, K, V, softcap=0.5, scale=0.25)
    expected = np.einsum("bhqd,bhkd->bhqk", Q * np.float32(0.5), K * np.float32(0.5))
    np.testing.assert_allclose(np.asarray(scores), expected, rtol=1e-6, atol=1e-6)
    *_, capped = ops.attention(Q, K, V, softcap=0.5, scale=0.25, qk_matmul_output_mode=1)
    np.testing.assert_allclose(np.asarray(capped), 0.5 * np.tanh(expected / 0.5), rtol=1e-5, atol=1e-6)


def test_attention_grouped_query_heads_share_key_value_heads():
    q = _normal(1, 4, 3, 4)
    attention = jax.jit(ops.attention)  # one program per shape, not one per primitive and shape
    y = np.asarray(attention(q, K[:1], V[:1])[0])
    for head in range(4):
        alone = attention(q[:, head : head + 1], K[:1, head // 2 : head // 2 + 1], V[:1, head // 2 : head // 2 + 1])[0]
        np.testing.assert_allclose(y[:, head : head + 1], np.asarray(alone), rtol=1e-6, atol=1e-6)


def test_attention_softmax_precision_double_with_x64_off(x64_off):
    y, *_ = jax.jit(lambda *a: ops.attention(*a, softmax_precision=11))(Q, K, V)
    assert y.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(y), np.asarray(jax.jit(ops.attention)(Q, K, V)[0]), rtol=1e-6, atol=1e-6)


def test_attention_float16_softmax_precision_keeps_float16_outputs():
    half = [x.astype(np.float16) for x in (Q, K, V)]
    outputs = jax.jit(lambda *a: ops.attention(*a, softmax_precision=1, qk_matmul_output_mode=3))(*half)
    assert all(o.dtype == jnp.float16 for o in outputs)
    np.testing.assert_allclose(
        np.asarray(outputs[0], np.float32), np.asarray(jax.jit(ops.attention)(Q, K, V)[0]), atol=5e-3
    )


def test_tensor_scatter_traced_write_indices_under_jit():
    cache, update = _normal(2, 6, 3), _normal(2, 2, 3)
    f = jax.jit(lambda c, u, w: ops.tensor_scatter(c, u, w, axis=1, mode="circular"))
    out = np.asarray(f(cache, update, np.array([5, 1])))
    expected = cache.copy()
    expected[0, [5, 0]] = update[0]
    expected[1, [1, 2]] = update[1]
    np.testing.assert_array_equal(out, expected)
    # Traced linear writes past the end are dropped (a concrete one is refused, below).
    out = np.asarray(jax.jit(lambda c, u, w: ops.tensor_scatter(c, u, w, axis=1))(cache, update, np.array([5, 0])))
    np.testing.assert_array_equal(out[0, :5], cache[0, :5])
    np.testing.assert_array_equal(out[0, 5], update[0, 0])


def test_tensor_scatter_strings_on_the_eager_path():
    cache = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    out = ops.tensor_scatter(cache, np.array([["x"], ["y"]], dtype=object), np.array([2, 0]), axis=1)
    assert out.tolist() == [["a", "b", "x"], ["y", "e", "f"]]


def test_linear_attention_jit_and_chunk_size_has_no_effect():
    q, k, v = _normal(1, 5, 8), _normal(1, 5, 4), _normal(1, 5, 6)
    decay, beta = -np.abs(_normal(1, 5, 2)), np.full((1, 5, 2), 0.5, np.float32)
    f = jax.jit(lambda *a: ops.linear_attention(*a, q_num_heads=4, kv_num_heads=2, chunk_size=2))
    jitted = f(q, k, v, None, decay, beta)
    eager = ops.linear_attention(q, k, v, None, decay, beta, q_num_heads=4, kv_num_heads=2)
    for j, e in zip(jitted, eager):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: ops.attention(Q[0], K[0], V[0]),
            "Attention-25 needs `q_num_heads` > 0 dividing the hidden size of the 3-D `Q`",
        ),
        (
            lambda: ops.attention(Q, K, V, q_num_heads=2, kv_num_heads=2),
            "Attention-25 got `q_num_heads`=2 and `kv_num_heads`=2 with 4-D inputs",
        ),
        (
            lambda: ops.attention(_normal(1, 3, 3, 4), K[:1], V[:1]),
            "Attention-25 needs the query heads (3) to be a multiple of the key/value heads (2).",
        ),
        (
            lambda: ops.attention(Q, K, V, None, _normal(2, 2, 1, 4)),
            "Attention-25 needs `past_key` and `past_value` together",
        ),
        (
            lambda: ops.attention(Q, K, V, None, None, None, np.array([6, 1])),
            "Attention-25 got `nonpad_kv_seqlen`=[6, 1]; each is in [0, 5]",
        ),
        (
            lambda: ops.attention(Q, K, V, np.ones((3, 6), bool)),
            "Attention-25 needs `attn_mask` broadcastable to (batch, q_num_heads",
        ),
        (lambda: ops.attention(Q, K, V, softmax_precision=7), "Attention-25 got `softmax_precision`=7"),
        (
            lambda: ops.attention(Q, K, V, scale=-1.0),
            "Attention-25 got `scale`=-1.0; `Q` and `K` are each scaled by sqrt(scale)",
        ),
        (
            lambda: ops.attention(Q, K, V, np.ones((3, 3), bool), None, None, np.array([4, 2])),
            "Attention-25 got `attn_mask` of shape (3, 3) with `nonpad_kv_seqlen`=[4, 2]",
        ),
        (
            lambda: ops.tensor_scatter(_normal(2, 4, 3), _normal(2, 2, 3), np.array([3, 0])),
            "TensorScatter-24 got `write_indices`=[3, 0]",
        ),
        (
            lambda: ops.tensor_scatter(_normal(2, 4, 3), _normal(2, 2, 3), axis=0),
            "TensorScatter-24 got `axis` naming dim 0",
        ),
        (
            lambda: ops.rotary_embedding(Q, _normal(4, 2), _normal(4, 2), np.array([[0, 1, 4], [0, 1, 2]])),
            "RotaryEmbedding-23 got `position_ids` from 0 to 4; each is in [0, 4)",
        ),
        (
            lambda: ops.rotary_embedding(
                Q, _normal(4, 1), _normal(4, 1), np.zeros((2, 3), np.int64), rotary_embedding_dim=3
            ),
            "RotaryEmbedding-23 got `rotary_embedding_dim`=3",
        ),
        (lambda: ops.rms_normalization(Q, _normal(3)), "RMSNormalization-23 cannot broadcast `scale` of shape (3,)"),
        (
            lambda: ops.linear_attention(
                _normal(1, 2, 4), _normal(1, 2, 4), _normal(1, 2, 4), q_num_heads=1, kv_num_heads=1, update_rule="gated"
            ),
            "LinearAttention-27 needs `decay` with `update_rule`='gated'",
        ),
        (
            lambda: ops.causal_conv_with_state(_normal(1, 2, 4), _normal(2, 1, 3), None, _normal(1, 2, 1)),
            "CausalConvWithState-27 needs `past_state` of shape (batch, channels, k - 1) = (1, 2, 2)",
        ),
    ],
)
def test_errors_name_the_argument_and_value(call, message):
    with pytest.raises(OnnxValidationError, match="^" + re.escape(message)):
        call()


def test_every_attention_family_version_is_registered():
    ops_ = jaxonnx.supported_ops()
    assert list(ops_["Attention"]) == [23, 24, 25]
    for name, version in (
        ("RMSNormalization", 23),
        ("RotaryEmbedding", 23),
        ("TensorScatter", 24),
        ("LinearAttention", 27),
        ("CausalConvWithState", 27),
    ):
        assert list(ops_[name]) == [version]


# FlexAttention (ai.onnx.preview): a model whose score_mod is a causal-mask subgraph built from
# the scores' own shape (Shape, Gather, Range, ...) and whose prob_mod is a Mul, against
# onnx.reference on shapes of none of onnx's cases (grouped heads, L != S, v_head_size != E).


def _flex_model(*, dtype=onnx.TensorProto.FLOAT, **attributes):
    from onnx import helper

    def value(name):
        return helper.make_tensor_value_info(name, dtype, ["B", "H", "L", "S"])

    causal = helper.make_graph(
        [
            helper.make_node("Shape", ["scores"], ["shape"]),
            helper.make_node("Gather", ["shape", "two"], ["L"]),
            helper.make_node("Gather", ["shape", "three"], ["S"]),
            helper.make_node("Range", ["zero", "L", "one"], ["q_range"]),
            helper.make_node("Unsqueeze", ["q_range", "last"], ["q_idx"]),
            helper.make_node("Range", ["zero", "S", "one"], ["k_idx"]),
            helper.make_node("GreaterOrEqual", ["q_idx", "k_idx"], ["mask"]),
            helper.make_node("Where", ["mask", "scores", "neg_inf"], ["scores_out"]),
        ],
        "causal",
        [value("scores")],
        [value("scores_out")],
        [
            helper.make_tensor(n, onnx.TensorProto.INT64, [], [v])
            for n, v in (("zero", 0), ("one", 1), ("two", 2), ("three", 3))
        ]
        + [
            helper.make_tensor("last", onnx.TensorProto.INT64, [1], [1]),
            helper.make_tensor("neg_inf", dtype, [], [-np.inf]),
        ],
    )
    halve = helper.make_graph(
        [helper.make_node("Mul", ["probs", "half"], ["probs_out"])],
        "halve",
        [value("probs")],
        [value("probs_out")],
        [helper.make_tensor("half", dtype, [], [0.5])],
    )
    node = helper.make_node(
        "FlexAttention",
        ["Q", "K", "V"],
        ["Y"],
        domain="ai.onnx.preview",
        score_mod=causal,
        prob_mod=halve,
        **attributes,
    )
    graph = helper.make_graph(
        [node],
        "flex",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in "QKV"],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid("ai.onnx.preview", 1)]
    )
    model.ir_version = 11
    return model


FQ, FK, FV = _normal(2, 6, 5, 4), _normal(2, 3, 7, 4), _normal(2, 3, 7, 2)


def test_flex_attention_model_matches_onnx_reference_eager_and_jitted():
    from onnx.reference import ReferenceEvaluator

    proto = _flex_model(scale=0.7)
    expected = ReferenceEvaluator(proto).run(None, {"Q": FQ, "K": FK, "V": FV})[0]
    model = jaxonnx.load(proto)
    eager = np.asarray(model(FQ, FK, FV)[0])
    jitted = np.asarray(jax.jit(model)(FQ, FK, FV)[0])
    np.testing.assert_allclose(eager, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jitted, expected, rtol=1e-5, atol=1e-6)
    # The mask is causal (the first query sees the first key only): Y's first row is half V's first row.
    np.testing.assert_allclose(eager[:, :, 0], 0.5 * np.repeat(FV[:, :, 0], 2, axis=1), rtol=1e-6)


def test_flex_attention_gradients_and_vmap_through_modifiers():
    from jax.test_util import check_grads

    causal = np.where(np.tril(np.ones((1, 1, 5, 7), bool)), 0.0, -np.inf)

    def f(q, k, v):
        return ops.flex_attention(q, k, v, score_mod=lambda s: s + causal.astype(s.dtype), prob_mod=lambda p: p * p)

    # Under jax.jit: a few programs, not every primitive of the modifiers' gradients on its own.
    q, k, v = (x.astype(np.float64) for x in (FQ, FK, FV))
    jitted = jax.jit(f)
    check_grads(jitted, (q, k, v), order=1, modes=("rev",), atol=1e-5, rtol=1e-5)
    batched = jax.jit(jax.vmap(f))(
        q[None].repeat(2, 0) * np.array([1.0, -2.0])[:, None, None, None, None],
        k[None].repeat(2, 0),
        v[None].repeat(2, 0),
    )
    np.testing.assert_allclose(np.asarray(batched[0]), np.asarray(jitted(q, k, v)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(batched[1]), np.asarray(jitted(-2.0 * q, k, v)), rtol=1e-12)


def test_flex_attention_negative_scale_is_the_texts_product():
    # The text computes (Q @ K^T) * scale; onnx.reference's sqrt(scale) pre-scaling gives NaN.
    y = np.asarray(ops.flex_attention(FQ[:, :3], FK, FV, scale=-0.5), np.float64)
    scores = np.einsum("bhqd,bhkd->bhqk", FQ[:, :3].astype(np.float64), FK.astype(np.float64)) * -0.5
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    expected = np.einsum("bhqk,bhkd->bhqd", probs / probs.sum(-1, keepdims=True), FV.astype(np.float64))
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_flex_attention_modifiers_see_the_softmax_precision():
    seen = []
    half = [x.astype(np.float16) for x in (FQ, FK, FV)]
    y = ops.flex_attention(*half, score_mod=lambda s: seen.append(s.dtype) or s)
    assert y.dtype == jnp.float16 and seen == [jnp.float32]
    ops.flex_attention(*half, softmax_precision=10, prob_mod=lambda p: seen.append(p.dtype) or p)
    assert seen[-1] == jnp.float16


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ops.flex_attention(FQ[0], FK, FV), "FlexAttention-1 needs a 4-D `Q`"),
        (
            lambda: ops.flex_attention(FQ[:, :5], FK, FV),
            "FlexAttention-1 needs the query heads (5) to be a multiple of the key/value heads (3).",
        ),
        (
            lambda: ops.flex_attention(FQ, FK, FV[:, :, :6]),
            "FlexAttention-1 needs `K` and `V` of `Q`'s batch, with one number of heads and one sequence length",
        ),
        (lambda: ops.flex_attention(FQ, FK, FV, softmax_precision=7), "FlexAttention-1 got `softmax_precision`=7"),
        (
            lambda: ops.flex_attention(FQ, FK, FV, score_mod=lambda s: s[..., :3]),
            "FlexAttention-1 needs a `score_mod` that keeps the shape and element type of its input float32[2, 6, 5, 7], got float32[2, 6, 5, 3].",
        ),
        (
            lambda: ops.flex_attention(FQ, FK, FV, prob_mod=lambda p: (p, p)),
            "FlexAttention-1 needs a `prob_mod` with one output, got 2 outputs.",
        ),
    ],
)
def test_flex_attention_errors_name_the_argument_and_value(call, message):
    with pytest.raises(OnnxValidationError, match="^" + re.escape(message)):
        call()
