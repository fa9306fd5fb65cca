"""onnxruntime's com.microsoft QOperator ops (QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool,
QLinearSoftmax, QGemm) against onnxruntime: single nodes with arbitrary scales, and models
written by onnxruntime's quantization tool in the QOperator format."""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx
from tests._eager import eager_and_jitted

_rng = np.random.default_rng(41)
_F = np.float32
_TYPES = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def _codes(dtype, shape, *, half=False):
    info = np.iinfo(dtype)
    low, high = (info.min // 2, info.max // 2) if half else (info.min, info.max)
    return _rng.integers(low, high + 1, shape).astype(dtype)


def _zero(dtype):
    return _codes(dtype, ())


def _scales(count):
    return [_F(s) for s in _rng.uniform(0.005, 0.1, count)]


def _node_cases():
    cases = {}
    for dtype in (np.uint8, np.int8):
        name = np.dtype(dtype).name
        x = _codes(dtype, (2, 3, 5, 6))
        sa, sb, sc = _scales(3)
        cases[f"add_{name}"] = (
            "QLinearAdd",
            [x, sa, _zero(dtype), _codes(dtype, (2, 3, 5, 6)), sb, _zero(dtype), sc, _zero(dtype)],
            {},
        )
        cases[f"add_broadcast_{name}"] = (
            "QLinearAdd",
            [x, sa, _zero(dtype), _codes(dtype, (3, 1, 1)), sb, _zero(dtype), sc, _zero(dtype)],
            {},
        )
        cases[f"mul_{name}"] = (
            "QLinearMul",
            [x, sa, _zero(dtype), _codes(dtype, (6,)), sb, _zero(dtype), _F(sa * sb * 30), _zero(dtype)],
            {},
        )
        cases[f"sigmoid_{name}"] = ("QLinearSigmoid", [x, sa, _zero(dtype), _F(1 / 256), _zero(dtype)], {})
        cases[f"leaky_relu_{name}"] = ("QLinearLeakyRelu", [x, sa, _zero(dtype), sb, _zero(dtype)], {"alpha": 0.2})
        cases[f"concat_{name}"] = (
            "QLinearConcat",
            [sc, _zero(dtype), x, sa, _zero(dtype), _codes(dtype, (2, 1, 5, 6)), sb, _zero(dtype)],
            {"axis": 1},
        )
        cases[f"global_average_pool_{name}"] = ("QLinearGlobalAveragePool", [x, sa, _zero(dtype), sb, _zero(dtype)], {})
        cases[f"global_average_pool_channels_last_{name}"] = (
            "QLinearGlobalAveragePool",
            [x, sa, _zero(dtype), sb, _zero(dtype)],
            {"channels_last": 1},
        )
        pool = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
        cases[f"average_pool_{name}"] = ("QLinearAveragePool", [x, sa, _zero(dtype), sb, _zero(dtype)], pool)
        cases[f"average_pool_count_pad_ceil_{name}"] = (
            "QLinearAveragePool",
            [x, sa, _zero(dtype), sb, _zero(dtype)],
            {**pool, "count_include_pad": 1, "ceil_mode": 1},
        )
        cases[f"average_pool_channels_last_{name}"] = (
            "QLinearAveragePool",
            [x, sa, _zero(dtype), sb, _zero(dtype)],
            {"kernel_shape": [2, 3], "channels_last": 1},
        )
        # Probabilities below 255.5 / 256: onnxruntime's int8 kernel wraps the value above
        # 127 around (to -128) where this saturates.
        soft = _codes(dtype, (2, 3, 7), half=True)
        cases[f"softmax_{name}"] = (
            "QLinearSoftmax",
            [soft, _F(0.02), _zero(dtype), _F(1 / 256), dtype(np.iinfo(dtype).min)],
            {"opset": 13},
        )
        cases[f"softmax_opset12_{name}"] = (
            "QLinearSoftmax",
            [soft, _F(0.03), None, _F(1 / 256), dtype(np.iinfo(dtype).min)],
            {"opset": 12, "axis": 1},
        )
        # uint8 with int8 weights in 7 bits: onnxruntime's AVX2 u8s8 kernel saturates
        # pairs of products in int16 beyond that (why its tool offers reduce_range).
        b = _codes(np.int8 if dtype == np.int8 else np.uint8, (4, 7), half=False)
        cases[f"qgemm_{name}"] = (
            "QGemm",
            [
                _codes(dtype, (7, 5)),
                sa,
                _zero(dtype),
                b,
                np.array(_scales(4)),
                _codes(b.dtype.type, (4,)),
                _rng.integers(-2000, 2000, (4,)).astype(np.int32),
                _F(0.3),
                _zero(dtype),
            ],
            {"transA": 1, "transB": 1, "alpha": 0.5},
        )
        cases[f"qgemm_float_{name}"] = (
            "QGemm",
            [_codes(dtype, (5, 7)), sa, _zero(dtype), b.T.copy(), sb, _zero(b.dtype.type)],
            {},
        )
    cases["qgemm_u8s8"] = (
        "QGemm",
        [
            _codes(np.uint8, (5, 7)),
            sa,
            _zero(np.uint8),
            _codes(np.int8, (7, 4), half=True),
            sb,
            np.int8(0),
            None,
            sc,
            _zero(np.uint8),
        ],
        {},
    )
    return cases


_NODE_CASES = _node_cases()


def _node_model(op_type, inputs, attributes, output_type):
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    feed = {n: np.asarray(x) for n, x in zip(names, inputs) if n}
    node = helper.make_node(op_type, names, ["y"], domain="com.microsoft", **attributes)
    graph = helper.make_graph(
        [node],
        "node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()],
        [helper.make_tensor_value_info("y", output_type, None)],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    return model, feed


@pytest.mark.parametrize("case", sorted(_NODE_CASES))
def test_node_equals_onnxruntime(case, run_onnxruntime):
    op_type, inputs, attributes = _NODE_CASES[case]
    output = (
        inputs[8]
        if op_type == "QGemm" and len(inputs) > 8
        else (inputs[1] if op_type == "QLinearConcat" else inputs[0])
    )
    output_type = TensorProto.FLOAT if op_type == "QGemm" and len(inputs) <= 8 else _TYPES[output.dtype.type]
    model, feed = _node_model(op_type, inputs, attributes, output_type)
    (expected,) = run_onnxruntime(model, feed)
    # Through `load` (a model importing com.microsoft), eagerly and under jit; and the op on numpy.
    loaded = jaxonnx.load(model)
    op = jaxonnx.get_op(op_type, 1, "com.microsoft")
    runs = eager_and_jitted(loaded, loaded.run)
    for actual in [*(run(feed)["y"] for run in runs), op(*inputs, **attributes)]:
        actual = np.asarray(actual)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, (
            actual.dtype,
            actual.shape,
            expected.shape,
        )
        np.testing.assert_array_equal(actual, expected)


def test_softmax_saturates_where_onnxruntime_wraps_int8(run_onnxruntime):
    # A near-certain row: probability 255.5/256 or more is 256 steps above -128; onnxruntime
    # writes -128 (the int8 wraparound of 128), the text's saturation 127.
    x = np.array([[-128, -128, 127]], np.int8)
    inputs = [x, _F(0.1), np.int8(0), _F(1 / 256), np.int8(-128)]
    actual = jaxonnx.get_op("QLinearSoftmax", 1, "com.microsoft")(*inputs, opset=13)
    np.testing.assert_array_equal(actual, [[-128, -128, 127]])
    model, feed = _node_model("QLinearSoftmax", inputs, {"opset": 13}, TensorProto.INT8)
    (wrapped,) = run_onnxruntime(model, feed)
    assert wrapped[0, 2] in (-128, 127)  # -128 in onnxruntime 1.32; 127 if it ever saturates


def _float_model():
    """A small net with every op the QOperator format writes as a com.microsoft op."""
    rng = np.random.default_rng(8)
    weights = {
        "W1": rng.standard_normal((4, 3, 3, 3)) * 0.3,
        "B1": rng.standard_normal(4) * 0.1,
        "W2": rng.standard_normal((4, 4, 3, 3)) * 0.2,
        "B2": rng.standard_normal(4) * 0.1,
        "W3": rng.standard_normal((8, 5)) * 0.5,
        "B3": rng.standard_normal(5) * 0.1,
    }
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c1", "W2", "B2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "c2"], ["residual"]),
        helper.make_node("Sigmoid", ["residual"], ["sigmoid"]),
        helper.make_node("LeakyRelu", ["residual"], ["leaky"], alpha=0.1),
        helper.make_node("Mul", ["sigmoid", "leaky"], ["gated"]),
        helper.make_node("Concat", ["sigmoid", "gated"], ["joined"], axis=1),
        helper.make_node("AveragePool", ["joined"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["pooled"], ["global"]),
        helper.make_node("Flatten", ["global"], ["flat"]),
        helper.make_node("Gemm", ["flat", "W3", "B3"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["Y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "qoperator",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _quantized(activation, weight, tmp_path):
    """What onnxruntime's quantization tool writes: made once per run (the x64 and x32 cases
    read the same file), a fresh proto each call."""
    folder = tmp_path.parent / f"qoperator_{activation}_{weight}"
    return onnx.load_from_string(_quantized_bytes(activation, weight, folder))


@functools.cache
def _quantized_bytes(activation, weight, folder):
    quantization = pytest.importorskip("onnxruntime.quantization")
    folder.mkdir(exist_ok=True)
    source, target = folder / "float.onnx", folder / "quantized.onnx"
    onnx.save(_float_model(), source)
    rng = np.random.default_rng(9)

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"X": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)} for _ in range(3)])

        def get_next(self):
            return next(self.batches, None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantization.quantize_static(
            source,
            target,
            Calibration(),
            quant_format=quantization.QuantFormat.QOperator,
            activation_type=getattr(quantization.QuantType, activation),
            weight_type=getattr(quantization.QuantType, weight),
        )
    return target.read_bytes()


_MICROSOFT_OPS = {
    "QLinearAdd",
    "QLinearMul",
    "QLinearSigmoid",
    "QLinearLeakyRelu",
    "QLinearConcat",
    "QLinearAveragePool",
    "QLinearGlobalAveragePool",
    "QLinearSoftmax",
    "QGemm",
}


@pytest.mark.parametrize(
    "activation, weight, x64",
    [("QUInt8", "QUInt8", True), ("QInt8", "QInt8", True), ("QInt8", "QInt8", False)],
    ids=["uint8", "int8", "int8-x32"],
)
def test_qoperator_models_equal_onnxruntime(activation, weight, x64, tmp_path, run_onnxruntime):
    model = _quantized(activation, weight, tmp_path)
    written = {node.op_type for node in model.graph.node if node.domain == "com.microsoft"}
    assert _MICROSOFT_OPS <= written, sorted(_MICROSOFT_OPS - written)
    # Every value as an output too, to compare each node's result.
    declared = {o.name for o in model.graph.output}
    model.graph.output.extend(
        helper.make_empty_tensor_value_info(name)
        for node in model.graph.node
        for name in node.output
        if name not in declared
    )
    x = np.random.default_rng(10).standard_normal((2, 3, 8, 8)).astype(np.float32)
    expected = dict(zip([o.name for o in model.graph.output], run_onnxruntime(model, {"X": x})))
    # With x64 off the float32 steps that onnxruntime fuses or rounds apart are left to
    # XLA (no float64 to emulate them in); these models still agree to the integer.
    with jax.enable_x64(x64):
        loaded = jaxonnx.load(model)
        runs = eager_and_jitted(loaded, loaded.run)
        for outputs in (run({"X": x}) for run in runs):
            for name, value in outputs.items():
                actual = np.asarray(value)
                assert actual.dtype == expected[name].dtype, name
                if actual.dtype.kind in "iu":
                    np.testing.assert_array_equal(actual, expected[name], err_msg=name)
            # The float probabilities: dequantized from equal integers, so equal up to the
            # last float32 bit (well within one quantization step, 1/256).
            np.testing.assert_allclose(np.asarray(outputs["Y"]), expected["Y"], rtol=0, atol=1e-6)


def test_jit_and_vmap_of_a_node_agree_with_the_loop():
    op = jaxonnx.ops.qlinear_add
    a = jnp.asarray(_codes(np.uint8, (3, 4, 5)))
    b = jnp.asarray(_codes(np.uint8, (3, 4, 5)))
    scales = jnp.asarray([0.03, 0.05, 0.02], jnp.float32)
    batched = jax.jit(
        jax.vmap(
            lambda a, b, s: op(
                a, s, jnp.uint8(3), b, jnp.float32(0.04), jnp.uint8(9), jnp.float32(0.06), jnp.uint8(128)
            )
        )
    )
    one = jax.jit(
        lambda a, b, s: op(a, s, jnp.uint8(3), b, jnp.float32(0.04), jnp.uint8(9), jnp.float32(0.06), jnp.uint8(128))
    )
    looped = [one(a[i], b[i], scales[i]) for i in range(3)]
    np.testing.assert_array_equal(batched(a, b, scales), np.stack(looped))
