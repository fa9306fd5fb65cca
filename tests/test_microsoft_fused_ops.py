"""onnxruntime's normalizations and fusions against onnxruntime: SimplifiedLayerNormalization
and LayerNormalization-1 (which onnxruntime declares in the default domain),
SkipLayerNormalization, SkipSimplifiedLayerNormalization, EmbedLayerNormalization,
QEmbedLayerNormalization, the Gelus, FusedMatMul, FusedGemm, FusedConv and MoE (com.microsoft).

Each case is one node on random shapes, run by onnxruntime's CPU provider and by jaxonnx
(loaded as a model, eagerly and under ``jax.jit``), every output compared. GroupNorm,
SkipGroupNorm, BiasSplitGelu, BiasAdd and NhwcConv have only CUDA kernels in onnxruntime:
tests/op_examples/nn_microsoft.py checks them against numpy references of the text, and
here against onnxruntime's CPU kernels of the standard ops their text is made of (NhwcConv
against Conv on the transposed operands).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from jax.test_util import check_grads
from onnx import helper

import jaxonnx
from tests._eager import eager_and_jitted

_rng = np.random.default_rng(32)
MS = "com.microsoft"


def _normal(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _ids(high, *shape):
    return _rng.integers(0, high, shape).astype(np.int32)


def _dims(count, low=2, high=7):
    return [int(d) for d in _rng.integers(low, high, count)]


def _node_model(op_type, inputs, attributes, outputs, *, domain=MS, opset=17):
    """One node; ``outputs``: how many the node declares, or a list of bools (False: left out)."""
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    feed = {n: np.asarray(x) for n, x in zip(names, inputs) if n}
    wanted = [True] * outputs if isinstance(outputs, int) else outputs
    output_names = [f"out{i}" if keep else "" for i, keep in enumerate(wanted)]
    node = helper.make_node(op_type, names, output_names, domain=domain, **attributes)
    graph = helper.make_graph(
        [node],
        "node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()],
        [onnx.ValueInfoProto(name=n) for n in output_names if n],
    )
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model, feed, [n for n in output_names if n]


def _tolerance(dtype):
    # float32: a few float32 roundings of values of order 1 (the kernels sum in other orders);
    # float16: a few float16 roundings.
    return {"rtol": 2e-3, "atol": 2e-3} if np.dtype(dtype).itemsize == 2 else {"rtol": 1e-5, "atol": 2e-6}


def _assert_matches_onnxruntime(run_onnxruntime, op_type, inputs, attributes=None, outputs=1, *, domain=MS, opset=17):
    model, feed, names = _node_model(op_type, inputs, attributes or {}, outputs, domain=domain, opset=opset)
    expected = run_onnxruntime(model, feed)
    loaded = jaxonnx.load(model)
    for run in eager_and_jitted(loaded, loaded.run):
        actual = run(feed)
        for name, want in zip(names, expected):
            got = np.asarray(actual[name])
            assert got.shape == want.shape and got.dtype == want.dtype, (
                name,
                got.shape,
                got.dtype,
                want.shape,
                want.dtype,
            )
            if want.dtype.kind == "f":
                np.testing.assert_allclose(
                    got.astype(np.float64), want.astype(np.float64), err_msg=name, **_tolerance(want.dtype)
                )
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)
    return expected


# ------------------------------------------------------------------------------ the norms


def _norm_cases():
    cases = {}
    for dtype in (np.float32, np.float16):
        batch, sequence, hidden = _dims(3)
        x = _normal(batch, sequence, hidden * 4, dtype=dtype)
        h = x.shape[-1]
        name = np.dtype(dtype).name
        cases[f"skip_layer_norm_{name}"] = (
            "SkipLayerNormalization",
            [
                x,
                _normal(*x.shape, dtype=dtype),
                _normal(h, dtype=dtype),
                _normal(h, dtype=dtype),
                _normal(h, dtype=dtype),
            ],
            {},
            4,
        )
        cases[f"skip_simplified_{name}"] = (
            "SkipSimplifiedLayerNormalization",
            [x, _normal(*x.shape, dtype=dtype), _normal(h, dtype=dtype), _normal(h, dtype=dtype)],
            {"epsilon": 1e-6},
            4,
        )
    x = _normal(*_dims(3))
    h = x.shape[-1]
    cases["skip_layer_norm_skip_without_batch"] = (
        "SkipLayerNormalization",
        [x, _normal(*x.shape[1:]), _normal(h)],
        {"epsilon": 1e-5},
        4,
    )
    cases["skip_layer_norm_skip_of_batch_one"] = (
        "SkipLayerNormalization",
        [x, _normal(1, *x.shape[1:]), _normal(h), _normal(h)],
        {},
        4,
    )
    cases["skip_layer_norm_2d_bias_without_beta"] = (
        "SkipLayerNormalization",
        [x[0], _normal(*x.shape[1:]), _normal(h), None, _normal(h)],
        {},
        4,
    )
    cases["skip_layer_norm_output_and_sum"] = (
        "SkipLayerNormalization",
        [x, _normal(*x.shape), _normal(h)],
        {},
        [True, False, False, True],
    )
    cases["skip_simplified_2d"] = ("SkipSimplifiedLayerNormalization", [x[0], _normal(*x.shape[1:]), _normal(h)], {}, 4)
    cases["skip_simplified_skip_without_batch"] = (
        "SkipSimplifiedLayerNormalization",
        [x, _normal(*x.shape[1:]), _normal(h)],
        {},
        [True, False, True, False],
    )
    batch, sequence, hidden = _dims(3, 2, 9)
    vocab, positions = 13, sequence + 3
    tables = [_normal(vocab, hidden), _normal(positions, hidden), _normal(3, hidden), _normal(hidden), _normal(hidden)]
    ids, segments = _ids(vocab, batch, sequence), _ids(3, batch, sequence)
    mask = (_rng.random((batch, sequence)) < 0.7).astype(np.int32)
    cases["embed_layer_norm"] = ("EmbedLayerNormalization", [ids, segments, *tables, mask], {}, 3)
    cases["embed_layer_norm_no_segment_no_mask"] = (
        "EmbedLayerNormalization",
        [ids, None, tables[0], tables[1], None, tables[3], tables[4]],
        {"epsilon": 1e-5},
        2,
    )
    cases["embed_layer_norm_position_ids"] = (
        "EmbedLayerNormalization",
        [ids, segments, *tables, mask, _ids(positions, batch, sequence)],
        {},
        3,
    )
    cases["embed_layer_norm_position_ids_of_batch_one"] = (
        "EmbedLayerNormalization",
        [ids, segments, *tables, None, _ids(positions, 1, sequence)],
        {"mask_index_type": 0},
        3,
    )
    cases["embed_layer_norm_output_only"] = (
        "EmbedLayerNormalization",
        [ids, segments, *tables],
        {"mask_index_type": 0},
        1,
    )
    for dtype in (np.uint8, np.int8):
        info = np.iinfo(dtype)

        def codes(*shape):
            return _rng.integers(info.min, info.max + 1, shape).astype(dtype)

        quantized = [codes(vocab, hidden), codes(positions, hidden), codes(3, hidden), codes(hidden), codes(hidden)]
        scales = [np.array(s, np.float32) for s in _rng.uniform(0.005, 0.1, 5)]
        zeros = [np.array(z, dtype) for z in _rng.integers(info.min // 4, info.max // 4, 5)]
        inputs = [ids, segments, *quantized, mask, *scales, *zeros]
        cases[f"qembed_layer_norm_{np.dtype(dtype).name}"] = ("QEmbedLayerNormalization", inputs, {}, 2)
        without_segments = list(inputs)
        for i in (1, 4, 10, 15):
            without_segments[i] = None
        without_segments[7] = None
        cases[f"qembed_layer_norm_no_segment_no_mask_{np.dtype(dtype).name}"] = (
            "QEmbedLayerNormalization",
            without_segments,
            {"epsilon": 1e-5},
            2,
        )
    return cases


_NORM_CASES = _norm_cases()


@pytest.mark.parametrize("case", sorted(_NORM_CASES))
def test_norm_equals_onnxruntime(case, run_onnxruntime):
    op_type, inputs, attributes, outputs = _NORM_CASES[case]
    _assert_matches_onnxruntime(run_onnxruntime, op_type, inputs, attributes, outputs)


def _default_domain_cases():
    cases = {}
    for x_type, scale_type in (
        (np.float32, np.float32),
        (np.float16, np.float16),
        (np.float16, np.float32),
        (np.float32, np.float16),
        (np.float64, np.float64),
    ):
        shape = _dims(3)
        name = f"{np.dtype(x_type).name}_{np.dtype(scale_type).name}"
        x, scale, bias = (
            _normal(*shape, dtype=x_type),
            _normal(shape[-1], dtype=scale_type),
            _normal(shape[-1], dtype=scale_type),
        )
        cases[f"simplified_{name}"] = ("SimplifiedLayerNormalization", [x, scale], {}, 2)
        cases[f"layer_norm_1_{name}"] = ("LayerNormalization", [x, scale, bias], {}, 3)
    x = _normal(*_dims(4))
    cases["simplified_axis_1"] = (
        "SimplifiedLayerNormalization",
        [x, _normal(*x.shape[1:])],
        {"axis": 1, "epsilon": 1e-3},
        2,
    )
    cases["simplified_axis_-2"] = ("SimplifiedLayerNormalization", [x, _normal(*x.shape[2:])], {"axis": -2}, 2)
    cases["layer_norm_1_axis_2_no_bias"] = (
        "LayerNormalization",
        [x, _normal(*x.shape[2:])],
        {"axis": 2, "epsilon": 1e-3},
        3,
    )
    return cases


_DEFAULT_DOMAIN_CASES = _default_domain_cases()


@pytest.mark.parametrize("case", sorted(_DEFAULT_DOMAIN_CASES))
def test_default_domain_norm_equals_onnxruntime(case, run_onnxruntime):
    # onnxruntime declares both in the default domain at version 1; a model of opset 16
    # resolves LayerNormalization to onnxruntime's version (onnx's starts at 17).
    op_type, inputs, attributes, outputs = _DEFAULT_DOMAIN_CASES[case]
    _assert_matches_onnxruntime(run_onnxruntime, op_type, inputs, attributes, outputs, domain="", opset=16)


def test_layer_normalization_resolves_to_onnxruntimes_version_below_opset_17():
    assert jaxonnx.get_op("LayerNormalization", 16).since_version == 1
    assert jaxonnx.get_op("LayerNormalization", 16).schema.inputs[1].type_str == "V"  # Scale of its own type
    assert jaxonnx.get_op("LayerNormalization", 17).since_version == 17
    assert jaxonnx.get_op("SimplifiedLayerNormalization", 21).since_version == 1


def test_skip_simplified_writes_a_zero_mean_as_onnxruntime(run_onnxruntime):
    x = _normal(3, 5, 16) + 2.0  # a mean far from zero: an RMS norm still has no mean output
    mean = _assert_matches_onnxruntime(
        run_onnxruntime, "SkipSimplifiedLayerNormalization", [x, _normal(3, 5, 16), _normal(16)], {}, 4
    )[1]
    np.testing.assert_array_equal(mean, np.zeros((3, 5, 1), np.float32))


def test_embed_layer_norm_refuses_ids_outside_a_table():
    word, position, gamma = _normal(5, 4), _normal(3, 4), _normal(4)
    op = jaxonnx.get_op("EmbedLayerNormalization", 1, MS)
    with pytest.raises(
        jaxonnx.OnnxValidationError, match=r"input_ids\[0, 1\]=5, outside the 5 rows of `word_embedding`"
    ):
        op(np.array([[0, 5]], np.int32), None, word, position, None, gamma, gamma)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"position_ids\[0, 0\]=-1, outside the 3 rows"):
        op(np.array([[0, 1]], np.int32), None, word, position, None, gamma, gamma, None, np.array([[-1, 0]], np.int32))
    with pytest.raises(jaxonnx.OnnxValidationError, match="`segment_ids` and `segment_embedding` both or neither"):
        op(np.array([[0, 1]], np.int32), np.array([[0, 1]], np.int32), word, position, None, gamma, gamma)


@pytest.mark.parametrize(
    "op_type, beta", [("SkipLayerNormalization", True), ("SkipSimplifiedLayerNormalization", False)]
)
def test_skip_norm_gradients_are_exact(op_type, beta):
    # The output and the sum, in float64 (the float32 statistics are left out: their rounding
    # would swamp the finite differences).
    x, skip, gamma, bias = _normal(2, 3, 6), _normal(3, 6), _normal(6), _normal(6)
    op = jaxonnx.get_op(op_type, 1, MS)
    extra = [_normal(6)] if beta else []

    def outputs(x, skip, gamma, bias):
        y, _, _, total = op(x, skip, gamma, *[jnp.asarray(e, jnp.float64) for e in extra], bias, epsilon=1e-5)
        return y, total

    args = [jnp.asarray(a, jnp.float64) for a in (x, skip, gamma, bias)]
    check_grads(jax.jit(outputs), args, order=1, modes=("rev", "fwd"), atol=1e-6, rtol=1e-6)


def test_onnxs_checker_checks_onnxruntimes_default_domain_nodes_and_onnx_is_left_unchanged():
    # The registry's own default-domain schemas are declared to onnx's checker while it checks
    # (so a wrong attribute is still refused, as for onnx's ops), and removed afterwards.
    x, scale = _normal(2, 4), _normal(4)
    model, feed, _ = _node_model("SimplifiedLayerNormalization", [x, scale], {"epsilon": 1e-3}, 1, domain="", opset=14)
    jaxonnx.load(model)
    assert not onnx.defs.has("SimplifiedLayerNormalization")
    assert not onnx.defs.has("LayerNormalization", 16)  # onnx defines it from 17 only, as before
    # An attribute of the wrong type (onnxruntime refuses it too; an unknown attribute it ignores
    # on this op, and so does jaxonnx: tests/test_leniencies.py).
    wrong, _, _ = _node_model("SimplifiedLayerNormalization", [x, scale], {"epsilon": [1, 2]}, 1, domain="", opset=14)
    with pytest.raises(jaxonnx.ModelLoadError, match="onnx's checker.*Mismatched attribute type.*epsilon"):
        jaxonnx.load(wrong)


# ------------------------------------------------------------------------------ the fusions


def _fusion_cases():
    cases = {}
    for dtype in (np.float32, np.float16, np.float64):
        name = np.dtype(dtype).name
        shape = _dims(3)
        x, bias = _normal(*shape, dtype=dtype) * 2, _normal(shape[-1], dtype=dtype)
        cases[f"gelu_{name}"] = ("Gelu", [x], {})
        cases[f"bias_gelu_{name}"] = ("BiasGelu", [x, bias], {})
        cases[f"fast_gelu_{name}"] = ("FastGelu", [x], {})
        cases[f"fast_gelu_bias_{name}"] = ("FastGelu", [x, bias], {})
        cases[f"quick_gelu_{name}"] = ("QuickGelu", [x], {})
        cases[f"quick_gelu_alpha_{name}"] = ("QuickGelu", [x], {"alpha": 0.6})
        if dtype != np.float64:  # ScaledSiLU takes float32, float16 and bfloat16
            cases[f"scaled_silu_{name}"] = ("ScaledSiLU", [x], {"alpha": 1.702})
            cases[f"scaled_silu_scale_input_{name}"] = ("ScaledSiLU", [x, np.array(0.75, np.float32)], {"alpha": 3.0})
    batch, m, k, n = _dims(4)
    cases["fused_matmul"] = ("FusedMatMul", [_normal(batch, m, k), _normal(batch, k, n)], {"alpha": 0.125})
    cases["fused_matmul_trans"] = ("FusedMatMul", [_normal(batch, k, m), _normal(n, k)], {"transA": 1, "transB": 1})
    cases["fused_matmul_broadcast"] = ("FusedMatMul", [_normal(2, 1, m, k), _normal(batch, k, n)], {"alpha": -0.5})
    cases["fused_matmul_vector"] = ("FusedMatMul", [_normal(k), _normal(batch, n, k)], {"transB": 1})
    cases["fused_matmul_trans_batch_a"] = (
        "FusedMatMul",
        [_normal(m, batch, 3, k), _normal(batch, 3, k, n)],
        {"transBatchA": 1},
    )
    cases["fused_matmul_trans_batch_a_trans_a"] = (
        "FusedMatMul",
        [_normal(k, batch, 3, m), _normal(batch, 3, k, n)],
        {"transBatchA": 1, "transA": 1, "alpha": 2.0},
    )
    cases["fused_matmul_trans_batch_b"] = (
        "FusedMatMul",
        [_normal(batch, 3, m, k), _normal(k, batch, 3, n)],
        {"transBatchB": 1},
    )
    cases["fused_matmul_trans_batch_both"] = (
        "FusedMatMul",
        [_normal(k, batch, m), _normal(n, batch, k)],
        {"transBatchA": 1, "transA": 1, "transBatchB": 1, "transB": 1},
    )
    a, b, c = _normal(m, k), _normal(k, n), _normal(n)
    activations = {
        "Relu": {},
        "Sigmoid": {},
        "Tanh": {},
        "Softsign": {},
        "Softplus": {},
        "LeakyRelu": {"activation_alpha": 0.1},
        "Elu": {"activation_alpha": 0.7},
        "ThresholdedRelu": {"activation_alpha": 0.3},
        "HardSigmoid": {"activation_alpha": 0.2, "activation_beta": 0.5},
        "ScaledTanh": {"activation_alpha": 1.5, "activation_beta": 0.5},
        "ParametricSoftplus": {"activation_alpha": 0.5, "activation_beta": 2.0},
        "Selu": {"activation_alpha": 1.6, "activation_gamma": 1.05},
    }
    for activation, parameters in activations.items():
        cases[f"fused_gemm_{activation}"] = (
            "FusedGemm",
            [a, b, c],
            {"activation": activation, "alpha": 0.5, "beta": 2.0, **parameters},
        )
    cases["fused_gemm_trans_no_c"] = (
        "FusedGemm",
        [a.T.copy(), b.T.copy()],
        {"activation": "Relu", "transA": 1, "transB": 1},
    )
    cases["fused_gemm_column_c"] = ("FusedGemm", [a, b, _normal(m, 1)], {"activation": "Tanh"})
    x, w = _normal(2, 3, 9, 8), _normal(4, 3, 3, 3)
    z = _normal(2, 4, 7, 6)
    conv_activations = {
        "Relu": [],
        "Tanh": [],
        "Sigmoid": [],
        "LeakyRelu": [0.2],
        "Clip": [-0.5, 0.7],
        "HardSigmoid": [0.3, 0.4],
    }
    for activation, params in conv_activations.items():
        attributes = {"activation": activation, **({"activation_params": params} if params else {})}
        cases[f"fused_conv_{activation}"] = ("FusedConv", [x, w, _normal(4)], attributes)
        cases[f"fused_conv_{activation}_sum"] = ("FusedConv", [x, w, _normal(4), z], attributes)
    cases["fused_conv_no_activation"] = ("FusedConv", [x, w, _normal(4)], {"pads": [1, 0, 1, 2]})
    cases["fused_conv_sum_without_bias"] = ("FusedConv", [x, w, None, z], {"activation": "Relu"})
    cases["fused_conv_grouped_strided"] = (
        "FusedConv",
        [_normal(1, 6, 9, 8), _normal(6, 2, 3, 2), _normal(6)],
        {"group": 3, "strides": [2, 1], "dilations": [1, 2], "activation": "Relu"},
    )
    cases["fused_conv_depthwise_same"] = (
        "FusedConv",
        [_normal(1, 4, 7, 7), _normal(4, 1, 3, 3), _normal(4)],
        {
            "group": 4,
            "auto_pad": "SAME_UPPER",
            "strides": [2, 2],
            "activation": "Clip",
            "activation_params": [0.0, 6.0],
        },
    )
    cases["fused_conv_1d"] = (
        "FusedConv",
        [_normal(2, 3, 11), _normal(5, 3, 4)],
        {"pads": [2, 1], "activation": "Tanh"},
    )
    cases["fused_conv_3d"] = (
        "FusedConv",
        [_normal(1, 2, 4, 5, 5), _normal(3, 2, 2, 3, 3), _normal(3)],
        {"activation": "Sigmoid"},
    )
    return cases


_FUSION_CASES = _fusion_cases()


@pytest.mark.parametrize("case", sorted(_FUSION_CASES))
def test_fusion_equals_onnxruntime(case, run_onnxruntime):
    op_type, inputs, attributes = _FUSION_CASES[case]
    _assert_matches_onnxruntime(run_onnxruntime, op_type, inputs, attributes, 1)


@pytest.mark.parametrize(
    "attributes",
    [
        {
            "k": 2,
            "activation_type": "swiglu",
            "swiglu_fusion": 1,
            "normalize_routing_weights": 1,
            "activation_alpha": 1.702,
            "activation_beta": 1.0,
            "swiglu_limit": 1.5,
        },  # GPT-OSS's, as onnxruntime-genai's builder writes it
        {"k": 2, "activation_type": "swiglu", "swiglu_fusion": 1},
        {"k": 1, "activation_type": "relu", "normalize_routing_weights": 1},
        {"k": 3, "activation_type": "gelu"},
        {"k": 2, "activation_type": "silu"},
        {"k": 4, "activation_type": "identity", "normalize_routing_weights": 1},
    ],
    ids=lambda a: f"{a['activation_type']}-k{a['k']}-{a.get('normalize_routing_weights', 0)}",
)
def test_mixture_of_experts_equals_onnxruntime(attributes, run_onnxruntime):
    """MoE: 4 experts of inner size 6 on 8 features, a batch of sequences (rows of both shapes)."""
    width = 12 if attributes["activation_type"] == "swiglu" else 6
    for x in (_normal(2, 3, 8), _normal(5, 8)):
        rows = x.size // 8
        _assert_matches_onnxruntime(
            run_onnxruntime,
            "MoE",
            [x, _normal(rows, 4), _normal(4, width, 8), _normal(4, width), _normal(4, 8, 6), _normal(4, 8)],
            attributes,
        )


def test_an_expert_the_router_left_out_adds_nothing_even_overflowing():
    # Every expert runs on every row; one the router did not pick must not leak inf or NaN
    # (0 * inf) into the row's output. In float16 expert 1 overflows; in float32 it is inf.
    x = np.ones((2, 4), np.float32)
    logits = np.array([[1.0, 0.0], [1.0, 0.0]], np.float32)  # both rows pick expert 0
    for dtype, big in ((np.float32, 1e30), (np.float16, 6e4)):
        w1 = np.stack([np.eye(4), np.full((4, 4), big)]).astype(dtype)
        w2 = np.stack([np.eye(4), np.full((4, 4), big)]).astype(dtype)
        # One compiled program per dtype (eagerly, each of the op's primitives compiles apart).
        out = jax.jit(lambda *args: jaxonnx.ops.mixture_of_experts(*args, k=1, normalize_routing_weights=1))(
            x.astype(dtype), logits.astype(dtype), w1, None, w2
        )
        assert out.dtype == dtype
        np.testing.assert_array_equal(np.asarray(out, np.float32), x)


def test_mixture_of_experts_refuses_what_it_does_not_implement():
    x, logits, w1, w2 = _normal(3, 8), _normal(3, 4), _normal(4, 6, 8), _normal(4, 8, 6)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"got `use_sparse_mixer`=1 \(PhiMoE's routing\)"):
        jaxonnx.ops.mixture_of_experts(x, logits, w1, None, w2, use_sparse_mixer=1, k=2)
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"got `fc3_experts_weights`: a gated first layer"):
        jaxonnx.ops.mixture_of_experts(x, logits, w1, None, w2, None, _normal(4, 6, 8))
    with pytest.raises(jaxonnx.OnnxValidationError, match=r"needs `fc1_experts_weights` of shape \(4, 12, 8\)"):
        jaxonnx.ops.mixture_of_experts(x, logits, w1, None, w2, activation_type="swiglu", swiglu_fusion=1)


@pytest.mark.parametrize(
    "window",
    [{}, {"pads": [1, 1, 1, 1], "strides": [2, 1]}, {"group": 2, "dilations": [2, 1]}, {"auto_pad": "SAME_LOWER"}],
)
def test_nhwc_conv_is_onnxruntimes_conv_channels_last(window, run_onnxruntime):
    # onnxruntime runs NhwcConv on CUDA only; its optimizer writes it from a Conv, with the
    # weights transposed by (0, 2, 3, 1). So it must equal onnxruntime's Conv on the channels-
    # first operands, moved channels-last.
    x, w, b = _normal(2, 4, 7, 6), _normal(6, 4 // window.get("group", 1), 3, 2), _normal(6)
    model, feed, _ = _node_model("Conv", [x, w, b], window, 1, domain="")
    (expected,) = run_onnxruntime(model, feed)
    nhwc = [np.moveaxis(x, 1, -1), np.moveaxis(w, 1, -1), b]
    model, feed, _ = _node_model("NhwcConv", nhwc, window, 1)
    loaded = jaxonnx.load(model)
    for run in eager_and_jitted(loaded, loaded.run):
        np.testing.assert_allclose(np.asarray(run(feed)["out0"]), np.moveaxis(expected, 1, -1), rtol=1e-5, atol=2e-6)


def test_fused_ops_refuse_what_onnxruntime_refuses():
    conv = jaxonnx.get_op("FusedConv", 1, MS)
    x, w = _normal(1, 2, 4, 4), _normal(3, 2, 3, 3)
    with pytest.raises(jaxonnx.OnnxValidationError, match="needs 1 `activation_params` for the activation 'LeakyRelu'"):
        conv(x, w, activation="LeakyRelu")
    with pytest.raises(jaxonnx.OnnxValidationError, match="got `activation`='Elu'; it is one of"):
        conv(x, w, activation="Elu", activation_params=[1.0])
    gemm = jaxonnx.get_op("FusedGemm", 1, MS)
    with pytest.raises(
        jaxonnx.OnnxValidationError, match="needs the attribute `activation_alpha` for the activation 'LeakyRelu'"
    ):
        gemm(_normal(2, 3), _normal(3, 2), activation="LeakyRelu")
    with pytest.raises(jaxonnx.OnnxValidationError, match="needs the attribute `activation`"):
        gemm(_normal(2, 3), _normal(3, 2))
    matmul = jaxonnx.get_op("FusedMatMul", 1, MS)
    with pytest.raises(jaxonnx.OnnxValidationError, match="of one rank >= 3 with `transBatchA`"):
        matmul(_normal(3, 4), _normal(4, 3), transBatchA=1)
    with pytest.raises(jaxonnx.OnnxValidationError, match="needs `bias` 1-D"):
        jaxonnx.get_op("FastGelu", 1, MS)(_normal(2, 4), _normal(2, 4))


def test_layer_normalization_1_gradients_are_exact():
    # onnxruntime's LayerNormalization-1 (the op table checks the gradients of the newest
    # version only): Y, and the statistics in double with stash_type 11.
    op = jaxonnx.get_op("LayerNormalization", 1)
    args = [jnp.asarray(a, jnp.float64) for a in (_normal(2, 3, 5), _normal(3, 5), _normal(5))]
    check_grads(
        jax.jit(lambda x, s, b: op(x, s, b, axis=1, epsilon=1e-3, stash_type=11)),
        args,
        order=1,
        modes=("rev", "fwd"),
        atol=1e-6,
        rtol=1e-6,
    )


def test_double_statistics_are_float32_with_x64_off(x64_off):
    # stash_type 11 asks for double statistics; JAX's 32-bit mode computes them in float32,
    # without a warning (pytest makes warnings errors).
    x, scale = jnp.asarray(_normal(2, 4)), jnp.asarray(_normal(4))
    _, inv_std = jaxonnx.get_op("SimplifiedLayerNormalization", 1)(x, scale, stash_type=11)
    _, mean, _ = jaxonnx.get_op("LayerNormalization", 1)(x, scale, stash_type=11)
    assert inv_std.dtype == mean.dtype == jnp.float32


# ------------------------------------------------------------------------------ CUDA-only ops


def _graph_model(nodes, inputs, output="Y", opset=21):
    feed = {f"in{i}": x for i, x in enumerate(inputs)}
    graph = helper.make_graph(
        nodes,
        "graph",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()],
        [onnx.ValueInfoProto(name=output)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 10
    return model, feed


@pytest.mark.parametrize("activation", [0, 1])
@pytest.mark.parametrize("skip", [None, "full", "per_channel"])
def test_group_norm_is_onnxruntimes_group_normalization(activation, skip, run_onnxruntime):
    # onnxruntime runs GroupNorm and SkipGroupNorm on CUDA only. Their text is Add, then onnx's
    # GroupNormalization-21 (per-channel scale and bias) channels-first, then SiLU: onnxruntime's
    # CPU kernels of those, on the channels-first operands, are the oracle.
    n, h, w, groups, per_group = 2, 3, 4, 3, 2
    channels = groups * per_group
    x, gamma, beta, bias = _normal(n, h, w, channels), _normal(channels), _normal(channels), _normal(channels)
    skip_value = {None: None, "full": _normal(n, h, w, channels), "per_channel": _normal(n, channels)}[skip]
    nodes, inputs, source = [], [np.moveaxis(x, -1, 1), gamma, beta], "in0"
    if skip is not None:
        moved = np.moveaxis(skip_value, -1, 1) if skip == "full" else skip_value[:, :, None, None]
        inputs += [moved, bias[:, None, None]]
        nodes += [helper.make_node("Add", ["in0", "in3"], ["s0"]), helper.make_node("Add", ["s0", "in4"], ["s"])]
        source = "s"
    nodes.append(helper.make_node("GroupNormalization", [source, "in1", "in2"], ["g"], num_groups=groups, epsilon=1e-5))
    if activation:
        nodes += [helper.make_node("Sigmoid", ["g"], ["sig"]), helper.make_node("Mul", ["g", "sig"], ["Y"])]
    else:
        nodes.append(helper.make_node("Identity", ["g"], ["Y"]))
    model, feed = _graph_model(nodes, inputs)
    (expected,) = run_onnxruntime(model, feed)
    attributes = {"groups": groups, "activation": activation, "epsilon": 1e-5}
    if skip is None:
        op_inputs, op_type = [x, gamma, beta], "GroupNorm"
    else:
        op_inputs, op_type = [x, gamma, beta, skip_value, bias], "SkipGroupNorm"
    model, feed, names = _node_model(op_type, op_inputs, attributes, 1)
    loaded = jaxonnx.load(model)
    for run in eager_and_jitted(loaded, loaded.run):
        np.testing.assert_allclose(np.asarray(run(feed)[names[0]]), np.moveaxis(expected, 1, -1), rtol=1e-5, atol=2e-6)
    # channels_last=0 takes the channels-first operands themselves.
    first = [np.moveaxis(x, -1, 1), gamma, beta] + (
        [] if skip is None else [np.moveaxis(skip_value, -1, 1) if skip == "full" else skip_value, bias]
    )
    actual = jaxonnx.get_op(op_type, 1, MS)(*first, **attributes, channels_last=0)
    actual = actual[0] if isinstance(actual, tuple) else actual
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-5, atol=2e-6)


def test_bias_split_gelu_and_bias_add_are_onnxruntimes_graphs_of_their_text(run_onnxruntime):
    # CUDA-only in onnxruntime; their text as a graph of onnxruntime's CPU kernels is the oracle.
    x, bias, skip = _normal(2, 5, 12), _normal(12), _normal(2, 5, 12)
    nodes = [
        helper.make_node("Add", ["in0", "in1"], ["h"]),
        helper.make_node("Split", ["h"], ["left", "right"], axis=-1, num_outputs=2),
        helper.make_node("Gelu", ["right"], ["gelu"]),
        helper.make_node("Mul", ["left", "gelu"], ["Y"]),
    ]
    model, feed = _graph_model(nodes, [x, bias])
    (expected,) = run_onnxruntime(model, feed)
    model, feed, names = _node_model("BiasSplitGelu", [x, bias], {}, 1)
    loaded = jaxonnx.load(model)
    for run in eager_and_jitted(loaded, loaded.run):
        np.testing.assert_allclose(np.asarray(run(feed)[names[0]]), expected, rtol=1e-5, atol=2e-6)
    nodes = [helper.make_node("Add", ["in0", "in1"], ["h"]), helper.make_node("Add", ["h", "in2"], ["Y"])]
    model, feed = _graph_model(nodes, [x, bias, skip])
    (expected,) = run_onnxruntime(model, feed)
    model, feed, names = _node_model("BiasAdd", [x, bias, skip], {}, 1)
    np.testing.assert_array_equal(np.asarray(jax.jit(jaxonnx.load(model).run)(feed)[names[0]]), expected)
