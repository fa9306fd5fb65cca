"""The quantization ops beyond the op table: against onnxruntime (single ops on values with
rounding ties, and whole models written by onnxruntime's quantization tool), the versions
onnx.reference lacks (10 and 13), gradients (scales, and the straight-through estimator),
exactness of the integer products, x64 off, float6 and errors.

onnxruntime's quantizer (1.32) writes only default-domain ops for dynamic quantization
(DynamicQuantizeLinear, MatMulInteger, ConvInteger, also for Gemm), for QDQ (8- and 16-bit;
4-bit weights from opset 21), and for QOperator with Conv and MatMul (QLinearConv,
QLinearMatMul). It writes com.microsoft ops, which jaxonnx does not implement, for QOperator
Gemm (QGemm), Add, Mul, Sigmoid, GlobalAveragePool (QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearGlobalAveragePool) and for QDQ with 4-bit weights below opset 21 (com.microsoft
QuantizeLinear / DequantizeLinear); those configurations are not tested here.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import onnx
import pytest
from jax.test_util import check_grads
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import jaxonnx
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._quantization.bit_cast import bit_cast
from jaxonnx.ops._quantization.dequantize_linear import dequantize_linear
from jaxonnx.ops._quantization.dynamic_quantize_linear import dynamic_quantize_linear
from jaxonnx.ops._quantization.quantize_linear import quantize_linear
from tests.op_examples.quantization import EXAMPLES

_rng = np.random.default_rng(2024)


def _single_op_model(op_type, inputs, attributes=None, opset=21, outputs=1, widened=None):
    """A one-node model and its feed. Inputs of ml_dtypes types (which onnxruntime's Python
    API does not take) become initializers; ``widened`` (a DataType) adds a Cast of the
    outputs to it, exact for float8 to float and 4-bit to 8-bit integers."""
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    feed = {n: np.asarray(x) for n, x in zip(names, inputs) if n and np.asarray(x).dtype.isbuiltin == 1}
    initializers = [numpy_helper.from_array(np.asarray(x), n) for n, x in zip(names, inputs) if n and n not in feed]
    values = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()
    ]
    out_names = [f"out{i}" for i in range(outputs)]
    nodes = [
        helper.make_node(
            op_type, names, [f"raw{i}" if widened else o for i, o in enumerate(out_names)], **(attributes or {})
        )
    ]
    if widened:
        nodes += [helper.make_node("Cast", [f"raw{i}"], [o], to=widened) for i, o in enumerate(out_names)]
    graph = helper.make_graph(
        nodes, op_type, values, [helper.make_empty_tensor_value_info(o) for o in out_names], initializers
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model, feed


def _with_ties(scale, shape, low=-300, high=300):
    """Values whose quotient by ``scale`` is often exactly half an integer (rounding ties),
    and sometimes out of an 8-bit range."""
    halves = _rng.integers(2 * low, 2 * high, shape) / 2.0
    return (halves * scale).astype(np.float32)


def _assert_same(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, expected.dtype)
    # ml_dtypes values (float8, int4) by their bytes: NaN == NaN, and -0.0 != 0.0.
    np.testing.assert_array_equal(
        actual.view(np.uint8) if actual.dtype.isbuiltin != 1 else actual,
        expected.view(np.uint8) if expected.dtype.isbuiltin != 1 else expected,
    )


# Single ops against onnxruntime: exactly equal, rounding ties included.

_SCALE = np.float32(0.25)
_ORT_CASES = {
    "quantize_uint8": ("QuantizeLinear", [_with_ties(0.25, (4, 6)), _SCALE, np.uint8(100)], {}),
    "quantize_int8_no_zero_point": ("QuantizeLinear", [_with_ties(0.25, (4, 6)), _SCALE, np.int8(0)], {}),
    "quantize_nan_and_inf": (
        "QuantizeLinear",
        [np.array([np.nan, -np.nan, np.inf, -np.inf, 1.0], np.float32), _SCALE, np.int8(3)],
        {},
    ),
    "quantize_per_axis": (
        "QuantizeLinear",
        [_with_ties(0.5, (4, 6)), np.array([0.5, 0.25, 1.0, 0.125], np.float32), np.array([0, 10, -10, 127], np.int8)],
        {"axis": 0},
    ),
    "quantize_blocked": (
        "QuantizeLinear",
        [
            _with_ties(0.5, (4, 6)),
            np.full((4, 2), 0.5, np.float32),
            np.array([[0, 1], [2, 3], [4, 5], [6, 7]], np.uint8),
        ],
        {"axis": 1, "block_size": 3},
    ),
    "quantize_int16": ("QuantizeLinear", [_with_ties(0.25, (4, 6), -40000, 40000), _SCALE, np.int16(-7)], {}),
    "quantize_uint16": ("QuantizeLinear", [_with_ties(0.25, (4, 6), -40000, 80000), _SCALE, np.uint16(7)], {}),
    "quantize_int4": ("QuantizeLinear", [_with_ties(0.25, (4, 6), -10, 10), _SCALE, np.array(1, ml_dtypes.int4)], {}),
    "quantize_uint4": ("QuantizeLinear", [_with_ties(0.25, (4, 6), -10, 20), _SCALE, np.array(3, ml_dtypes.uint4)], {}),
    "quantize_e4m3fn_float8": (
        "QuantizeLinear",
        [_rng.standard_normal((4, 6)).astype(np.float32) * 300, np.float32(0.5), np.zeros((), ml_dtypes.float8_e4m3fn)],
        {},
    ),
    "quantize_e5m2_float8": (
        "QuantizeLinear",
        [_rng.standard_normal((4, 6)).astype(np.float32) * 1e5, np.float32(0.5), np.zeros((), ml_dtypes.float8_e5m2)],
        {},
    ),
    "dequantize_uint8": (
        "DequantizeLinear",
        [_rng.integers(0, 256, (4, 6)).astype(np.uint8), np.float32(0.1), np.uint8(3)],
        {},
    ),
    "dequantize_per_axis": (
        "DequantizeLinear",
        [
            _rng.integers(-128, 128, (4, 6)).astype(np.int8),
            np.array([0.1, 0.2, 0.3, 0.4], np.float32),
            np.array([1, 2, 3, 4], np.int8),
        ],
        {"axis": 0},
    ),
    "dequantize_int32": (
        "DequantizeLinear",
        [_rng.integers(-(2**30), 2**30, (4, 6)).astype(np.int32), np.float32(1e-3)],
        {},
    ),
    "dequantize_blocked_int4": (
        "DequantizeLinear",
        [
            _rng.integers(-8, 8, (4, 6)).astype(ml_dtypes.int4),
            np.full((4, 2), 0.3, np.float32),
            np.ones((4, 2), ml_dtypes.int4),
        ],
        {"axis": 1, "block_size": 3},
    ),
    "dequantize_float8": (
        "DequantizeLinear",
        [(_rng.standard_normal((4, 6)) * 10).astype(ml_dtypes.float8_e4m3fn), np.float32(0.7)],
        {},
    ),
    "dynamic_quantize": ("DynamicQuantizeLinear", [_rng.standard_normal((5, 7)).astype(np.float32) * 3], {}),
    # uint8 x int8 products keep B within 7 bits: onnxruntime's AVX2 kernels (vpmaddubsw) add
    # pairs of products in saturating int16, so full-range B is exact only on CPUs with VNNI;
    # 7-bit weights are what its quantization tool writes for them (reduce_range).
    "matmul_integer": (
        "MatMulInteger",
        [
            _rng.integers(0, 256, (2, 5, 9)).astype(np.uint8),
            _rng.integers(-64, 64, (9, 4)).astype(np.int8),
            np.uint8(131),
            np.array([0, 1, -3, 127], np.int8),
        ],
        {},
    ),
    "conv_integer": (
        "ConvInteger",
        [
            _rng.integers(0, 256, (2, 4, 7, 6)).astype(np.uint8),
            _rng.integers(0, 256, (6, 2, 3, 2)).astype(np.uint8),
            np.uint8(128),
            np.uint8(120),
        ],
        {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1]},
    ),
    "qlinear_matmul": (
        "QLinearMatMul",
        [
            _rng.integers(0, 256, (3, 5, 9)).astype(np.uint8),
            np.float32(0.02),
            np.uint8(120),
            _rng.integers(0, 256, (9, 4)).astype(np.uint8),
            np.float32(0.01),
            np.uint8(128),
            np.float32(0.05),
            np.uint8(125),
        ],
        {},
    ),
    "qlinear_matmul_int8": (
        "QLinearMatMul",
        [
            _rng.integers(-128, 128, (5, 9)).astype(np.int8),
            np.float32(0.02),
            np.int8(1),
            _rng.integers(-128, 128, (9, 4)).astype(np.int8),
            np.float32(0.01),
            np.int8(0),
            np.float32(0.02),
            np.int8(-5),
        ],
        {},
    ),
    "qlinear_conv": (
        "QLinearConv",
        [
            _rng.integers(0, 256, (1, 3, 8, 7)).astype(np.uint8),
            np.float32(0.02),
            np.uint8(128),
            _rng.integers(-64, 64, (4, 3, 3, 3)).astype(np.int8),
            np.array([0.01, 0.02, 0.005, 0.03], np.float32),
            np.zeros(4, np.int8),
            np.float32(0.2),
            np.uint8(130),
            _rng.integers(-3000, 3000, (4,)).astype(np.int32),
        ],
        {"pads": [1, 1, 1, 1], "strides": [1, 2]},
    ),
}


@pytest.mark.parametrize("case", sorted(_ORT_CASES))
def test_single_op_equals_onnxruntime(case, run_onnxruntime):
    op_type, inputs, attributes = _ORT_CASES[case]
    outputs = 3 if op_type == "DynamicQuantizeLinear" else 1
    widened = {"float8": TensorProto.FLOAT, "int4": TensorProto.INT8, "uint4": TensorProto.UINT8}
    widened = next(
        (code for name, code in widened.items() if op_type == "QuantizeLinear" and case.endswith(name)), None
    )
    model, feed = _single_op_model(op_type, inputs, attributes, outputs=outputs, widened=widened)
    expected = run_onnxruntime(model, feed)
    loaded = jaxonnx.load(model)
    # An eager call that compiles the whole graph is its jax.jit already: jitting it again
    # would compile the same computation twice.
    whole = loaded.eager_mode.startswith("whole graph")
    for actual in [loaded.run(feed)] if whole else [loaded.run(feed), jax.jit(loaded.run)(feed)]:
        for name, value in zip(loaded.output_names, expected):
            _assert_same(actual[name], value)


# Models written by onnxruntime's quantization tool.


def _float_model(opset=17):
    rng = np.random.default_rng(5)
    weights = {
        "W1": rng.standard_normal((4, 3, 3, 3)) * 0.3,
        "B1": rng.standard_normal(4) * 0.1,
        "W2": rng.standard_normal((4 * 6 * 6, 16)) * 0.1,
        "B2": rng.standard_normal(16) * 0.1,
        "W3": rng.standard_normal((16, 5)) * 0.3,
    }
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["conv"], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["conv"], ["relu1"]),
        helper.make_node("Flatten", ["relu1"], ["flat"]),
        helper.make_node("Gemm", ["flat", "W2", "B2"], ["gemm"]),
        helper.make_node("Relu", ["gemm"], ["relu2"]),
        helper.make_node("MatMul", ["relu2", "W3"], ["Y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


# 4-bit weights need opset 21 (below it the quantizer writes com.microsoft Q/DQ); 16-bit
# types make it raise the opset to 21 itself.
_QUANTIZATIONS = {
    "dynamic": {},
    "dynamic_per_channel_int8": {"per_channel": True, "weight_type": "QInt8"},
    "qdq": {"quant_format": "QDQ"},
    "qdq_per_channel_int8": {
        "quant_format": "QDQ",
        "per_channel": True,
        "activation_type": "QInt8",
        "weight_type": "QInt8",
    },
    "qoperator": {"quant_format": "QOperator", "op_types_to_quantize": ["Conv", "MatMul"]},
    "qoperator_per_channel": {
        "quant_format": "QOperator",
        "op_types_to_quantize": ["Conv", "MatMul"],
        "per_channel": True,
    },
    "qdq_int4_weights_opset21": {"quant_format": "QDQ", "weight_type": "QInt4"},
    "qdq_uint4_weights_per_channel_opset21": {"quant_format": "QDQ", "weight_type": "QUInt4", "per_channel": True},
    "qdq_16bit": {"quant_format": "QDQ", "activation_type": "QUInt16", "weight_type": "QInt16"},
}


def _quantized(kind, tmp_path):
    """What onnxruntime's quantization tool writes for ``kind``: made once per run (the x64
    and x32 cases read the same file), a fresh proto each call."""
    return onnx.load_from_string(_quantized_bytes(kind, tmp_path.parent / f"quantized_{kind}"))


@functools.cache
def _quantized_bytes(kind, folder):
    quantization = pytest.importorskip("onnxruntime.quantization")
    folder.mkdir(exist_ok=True)
    options = dict(_QUANTIZATIONS[kind])
    for key in ("weight_type", "activation_type"):
        if key in options:
            options[key] = getattr(quantization.QuantType, options[key])
    if "quant_format" in options:
        options["quant_format"] = getattr(quantization.QuantFormat, options["quant_format"])
    source, target = folder / "float.onnx", folder / "quantized.onnx"
    onnx.save(_float_model(21 if kind.endswith("opset21") else 17), source)
    rng = np.random.default_rng(6)

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"X": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind.startswith("dynamic"):
            quantization.quantize_dynamic(source, target, **options)
        else:
            quantization.quantize_static(source, target, Calibration(), **options)
    return target.read_bytes()


_QUANTIZATION_OPS = {
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "MatMulInteger",
    "ConvInteger",
    "QLinearMatMul",
    "QLinearConv",
}


def _with_every_value_as_output(model):
    """``model`` with every node output as a graph output too (their names, in node order)."""
    declared = {o.name for o in model.graph.output}
    extra = [name for node in model.graph.node for name in node.output if name and name not in declared]
    model.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in extra)
    return model


@pytest.mark.parametrize(
    "kind, x64",
    [(kind, True) for kind in sorted(_QUANTIZATIONS)]
    + [(kind, False) for kind in ("dynamic", "qdq_per_channel_int8", "qoperator_per_channel", "qdq_16bit")],
    ids=lambda v: v if isinstance(v, str) else ("x64" if v else "x32"),
)
def test_quantization_tool_models_equal_onnxruntime(kind, x64, tmp_path, run_onnxruntime):
    model = _with_every_value_as_output(_quantized(kind, tmp_path))
    ops = {(n.domain, n.op_type) for n in model.graph.node}
    assert all(domain in ("", "ai.onnx") for domain, _ in ops), ops
    x = np.random.default_rng(7).standard_normal((2, 3, 8, 8)).astype(np.float32)
    ort = dict(zip([o.name for o in model.graph.output], run_onnxruntime(model, {"X": x})))
    known = {**ort, **{i.name: numpy_helper.to_array(i) for i in model.graph.initializer}, "X": x}
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    # Every quantization node on onnxruntime's own inputs: exactly onnxruntime's outputs
    # (numpy, JAX eager and jit), whatever the float ops before it computed.
    checked = 0
    with jax.enable_x64(x64):
        for node in model.graph.node:
            if node.op_type not in _QUANTIZATION_OPS:
                continue
            op = jaxonnx.get_op(node.op_type, opset)
            inputs = [known[name] if name else None for name in node.input]
            attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            jitted = jax.jit(lambda *xs, op=op, attributes=attributes: op(*xs, **attributes))
            for feed in ("numpy", "jax", "jit"):
                # device_put: jnp.asarray would compile an identity program per shape and dtype.
                args = inputs if feed == "numpy" else [None if v is None else jax.device_put(v) for v in inputs]
                outputs = op(*args, **attributes) if feed != "jit" else jitted(*args)
                outputs = outputs if isinstance(outputs, tuple) else (outputs,)
                for name, value in zip(node.output, outputs):
                    _assert_same(value, ort[name])
            checked += 1
        assert checked >= 3
        # The whole model: the float ops (Conv, Gemm) may sum in another order than
        # onnxruntime's, so a value next to a rounding boundary may quantize one step
        # apart (seen with 16-bit activations); the 8-bit models here agree bit for bit.
        loaded = jaxonnx.load(model)
        # An eager call that compiles the whole graph is its jax.jit already.
        whole = loaded.eager_mode.startswith("whole graph")
        for outputs in [loaded.run({"X": x})] if whole else [loaded.run({"X": x}), jax.jit(loaded.run)({"X": x})]:
            for name, value in outputs.items():
                actual, expected = np.asarray(value), ort[name]
                if actual.dtype.kind in "iu":
                    apart = np.abs(actual.astype(np.int64) - expected.astype(np.int64))
                    assert apart.max() <= 1 and apart.sum() <= max(2, apart.size // 100), (
                        name,
                        apart.max(),
                        apart.sum(),
                    )
                    if "16" not in kind:
                        _assert_same(actual, expected)
            np.testing.assert_allclose(outputs["Y"], ort["Y"], rtol=0, atol=1e-3 * np.abs(ort["Y"]).max())


# Versions 10 and 13, which onnx.reference does not implement: as version 19.


@pytest.mark.parametrize("op_type", ["QuantizeLinear", "DequantizeLinear"])
@pytest.mark.parametrize("version", [10, 13])
def test_versions_10_and_13_equal_19(op_type, version):
    old, new = jaxonnx.get_op(op_type, version), jaxonnx.get_op(op_type, 19)
    checked = 0
    for example in EXAMPLES[op_type]:
        if 19 not in example.versions or not set(example.attributes) <= set(old.schema.attributes):
            continue
        try:
            old.check_inputs(example.inputs)
        except OnnxTypeError:
            continue  # a type this version does not take
        if version == 10 and any(np.ndim(x) > 0 for x in example.inputs[1:]):
            continue  # per tensor only
        _assert_same(old(*example.inputs, **example.attributes), new(*example.inputs, **example.attributes))
        checked += 1
    assert checked >= 2


def test_version_10_is_per_tensor_only():
    x, scale = np.ones((2, 3), np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    with pytest.raises(OnnxValidationError, match=r"QuantizeLinear-10 needs a scalar `y_scale`"):
        jaxonnx.get_op("QuantizeLinear", 10)(x, scale)
    with pytest.raises(OnnxValidationError, match=r"DequantizeLinear-10 needs a scalar `x_scale`"):
        jaxonnx.get_op("DequantizeLinear", 10)(np.ones((2, 3), np.uint8), scale)


# Rounding and saturation as the text says.


def test_rounding_is_half_to_even_and_saturates():
    x = np.array([-129.5, -128.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 126.5, 127.5, np.inf, -np.inf], np.float32)
    y = quantize_linear(jnp.asarray(x), jnp.float32(1.0), jnp.int8(0))
    np.testing.assert_array_equal(y, [-128, -128, -2, -2, 0, 0, 2, 2, 126, 127, 127, -128])
    y = quantize_linear(x, np.float32(1.0), np.uint8(3))
    np.testing.assert_array_equal(y, [0, 0, 1, 1, 3, 3, 5, 5, 129, 131, 255, 0])


def test_float8_without_saturation_overflows_to_nan_or_inf():
    x = np.array([1000.0, -1000.0, 1.0], np.float32)

    @jax.jit  # the three in one compiled program (eagerly, each primitive compiles apart)
    def quantized(x):
        return (
            quantize_linear(x, np.float32(1.0), np.zeros((), ml_dtypes.float8_e4m3fnuz), saturate=0),
            quantize_linear(x * 100, np.float32(1.0), np.zeros((), ml_dtypes.float8_e5m2), saturate=0),
            quantize_linear(x, np.float32(1.0), np.zeros((), ml_dtypes.float8_e4m3fn)),
        )

    fnuz, e5m2, saturated = (np.asarray(v) for v in quantized(x))
    assert fnuz.dtype == ml_dtypes.float8_e4m3fnuz and e5m2.dtype == ml_dtypes.float8_e5m2
    assert saturated.dtype == ml_dtypes.float8_e4m3fn
    assert np.isnan(np.asarray(fnuz[:2], np.float32)).all() and float(fnuz[2]) == 1.0
    assert list(np.asarray(e5m2, np.float32)[:2]) == [np.inf, -np.inf]
    assert list(np.asarray(saturated, np.float32)) == [448.0, -448.0, 1.0]


def test_float6_on_numpy_values_as_onnx_reference():
    x = _rng.standard_normal((3, 4)).astype(np.float32) * 10
    for dtype in (ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn):
        zero = np.zeros((), dtype)
        model, feed = _single_op_model("QuantizeLinear", [x, np.float32(0.5), zero], opset=28)
        (expected,) = ReferenceEvaluator(model).run(None, feed)
        _assert_same(jaxonnx.get_op("QuantizeLinear", 28)(x, np.float32(0.5), zero), expected)
        model, feed = _single_op_model("DequantizeLinear", [expected, np.float32(0.5)], opset=28)
        (back,) = ReferenceEvaluator(model).run(None, feed)
        _assert_same(jaxonnx.get_op("DequantizeLinear", 28)(expected, np.float32(0.5)), back)
        with pytest.raises(OnnxTypeError, match="cannot cast a JAX array to float6"):
            quantize_linear(jnp.asarray(x), jnp.float32(0.5), zero)


# Exact integer products.


def test_matmul_integer_accumulates_exactly_in_int32():
    k = 30000  # 255 * 255 * 30000 < 2**31: the exact sum fits
    a = np.full((2, k), 255, np.uint8)
    b = np.zeros((k, 2), np.uint8)
    expected = (a.astype(np.int64) - 0) @ (b.astype(np.int64) - 255)
    actual = jax.jit(jaxonnx.ops.matmul_integer)(a, b, None, np.uint8(255))
    assert actual.dtype == jnp.int32
    np.testing.assert_array_equal(actual, expected)
    assert int(actual[0, 0]) == -255 * 255 * k  # float32 would round this (> 2**24)


def test_qlinear_matmul_on_float8_dequantizes_as_the_text_says():
    # onnx.reference casts float8 values to int32 (truncating them), so the op table leaves
    # this out; the text's formula, computed here in float64.
    a = (_rng.standard_normal((3, 4)) * 4).astype(ml_dtypes.float8_e4m3fn)
    b = (_rng.standard_normal((4, 2)) * 4).astype(ml_dtypes.float8_e5m2)
    a_scale, b_scale, y_scale = np.float32(0.5), np.float32(0.25), np.float32(0.125)
    y_zero = np.zeros((), ml_dtypes.float8_e4m3fn)
    actual = jaxonnx.ops.qlinear_matmul(
        a, a_scale, np.zeros((), a.dtype), b, b_scale, np.zeros((), b.dtype), y_scale, y_zero
    )
    exact = (a.astype(np.float64) @ b.astype(np.float64)) * (0.5 * 0.25 / 0.125)
    expected = np.clip(exact, -448, 448).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    _assert_same(actual, expected)


def test_conv_integer_equals_a_numpy_convolution():
    x = _rng.integers(0, 256, (1, 2, 6, 5)).astype(np.uint8)
    w = _rng.integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
    w_zero = np.array([0, 5, -7], np.int8)
    y = jaxonnx.ops.conv_integer(x, w, np.uint8(200), w_zero, pads=[1, 1, 1, 1])
    padded = np.pad(x.astype(np.int64) - 200, ((0, 0), (0, 0), (1, 1), (1, 1)))
    kernel = w.astype(np.int64) - w_zero.reshape(3, 1, 1, 1)
    expected = np.zeros((1, 3, 6, 5), np.int64)
    for i in range(6):
        for j in range(5):
            expected[0, :, i, j] = np.einsum("chw,mchw->m", padded[0, :, i : i + 3, j : j + 3], kernel)
    assert y.dtype == jnp.int32
    np.testing.assert_array_equal(y, expected)


# Gradients.


@pytest.mark.parametrize("zero_point", [jnp.int8(0), jnp.zeros((), jnp.float8_e4m3fn)], ids=["int8", "float8"])
def test_quantize_linear_has_zero_gradient_by_default(zero_point):
    x = jnp.array([0.3, -1.2, 2.6, 100.0])

    def fake_quantize(x):
        q = quantize_linear(x, jnp.float32(0.5), zero_point)
        return dequantize_linear(q, jnp.float32(0.5), zero_point)

    # Both modes in one compiled program (eagerly, each primitive compiles apart).
    grad, tangent = jax.jit(
        lambda x: (jax.grad(lambda x: fake_quantize(x).sum())(x), jax.jvp(fake_quantize, (x,), (jnp.ones(4),))[1])
    )(x)
    np.testing.assert_array_equal(grad, 0.0)
    np.testing.assert_array_equal(tangent, 0.0)


@pytest.mark.parametrize(
    "zero_point", [np.int8(0), np.uint8(128), np.array(2, ml_dtypes.int4)], ids=["int8", "uint8", "int4"]
)
def test_straight_through_gives_the_identity_inside_the_range(zero_point):
    scale = jnp.float32(0.5)
    zero = jnp.asarray(zero_point)
    info = ml_dtypes.iinfo(zero.dtype)
    inside = np.array([0.3, -1.2, 1.1, (info.max - int(zero)) * 0.5], np.float32)  # the last on the bound
    outside = np.array([(info.max - int(zero) + 3) * 0.5, (info.min - int(zero) - 3) * 0.5], np.float32)
    x = jnp.asarray(np.concatenate([inside, outside]))

    def fake_quantize(x):
        q = quantize_linear(x, scale, zero, straight_through=True)
        return dequantize_linear(q, scale, zero)

    @jax.jit  # every value below from one compiled program (eagerly, each primitive compiles apart)
    def values(x):
        return {
            "fake": fake_quantize(x),
            # The values are the ordinary quantize-dequantize ones; only the gradient differs.
            "plain": dequantize_linear(quantize_linear(x, scale, zero), scale, zero),
            "q": quantize_linear(x, scale, zero, straight_through=True),
            "q_plain": quantize_linear(x, scale, zero).astype(jnp.float32),
            "grad": jax.grad(lambda x: fake_quantize(x).sum())(x),
            # Quantization alone: d(x / scale)/dx inside, 0 outside; also under vmap.
            "dq": jax.grad(lambda x: quantize_linear(x, scale, zero, straight_through=True).sum())(x),
            "batched": jax.vmap(jax.grad(lambda x: fake_quantize(x).sum()))(jnp.stack([x, -x])),
        }

    got = values(x)
    np.testing.assert_array_equal(got["fake"], got["plain"])
    q = got["q"]
    assert q.dtype == jnp.float32 and np.array_equal(q, got["q_plain"])
    np.testing.assert_array_equal(got["grad"], [1, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(got["dq"], [2, 2, 2, 2, 0, 0])
    np.testing.assert_array_equal(got["batched"][0], [1, 1, 1, 1, 0, 0])


def test_straight_through_for_float8_and_per_axis():
    x = np.array([[0.3, 1000.0], [-2.0, -1000.0]])
    scale = np.array([1.0, 2.0], np.float32)
    zero = np.zeros(2, ml_dtypes.float8_e4m3fn)

    @jax.jit  # one compiled program (eagerly, each primitive compiles apart)
    def values(x):
        q = quantize_linear(x, scale, zero, axis=1, straight_through=True)
        grad = jax.grad(
            lambda x: dequantize_linear(
                quantize_linear(x, scale, zero, axis=1, straight_through=True), scale, zero, axis=1
            ).sum()
        )(x)
        return q, quantize_linear(x, scale, zero, axis=1), grad

    q, plain, grad = values(x)
    np.testing.assert_array_equal(q, np.asarray(plain, np.float32))
    np.testing.assert_array_equal(grad, [[1, 0], [1, 0]])  # 1000 / 2 = 500 > 448: saturated


def test_dequantize_gradients_with_respect_to_the_scale():
    # y = (x - zero_point) * scale is linear in the scale: the gradient of sum(y) is the
    # sum of (x - zero_point) over the elements each scale covers.
    x = _rng.integers(-128, 128, (4, 6)).astype(np.int8)
    zero = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.int8)
    diff = x.astype(np.float64)
    cases = [
        (np.float32(0.1), {}, None, diff.sum()),
        (np.linspace(0.1, 0.6, 6, dtype=np.float32), {"axis": 1}, None, diff.sum(axis=0)),
        (
            np.linspace(0.1, 0.8, 8, dtype=np.float32).reshape(4, 2),
            {"axis": 1, "block_size": 3},
            zero,
            (diff - np.repeat(zero, 3, axis=1)).reshape(4, 2, 3).sum(axis=2),
        ),
    ]
    for scale, kw, z, expected in cases:
        z = None if z is None else jax.device_put(z)
        grad = jax.jit(jax.grad(lambda s: dequantize_linear(x, s, z, **kw).sum()))(scale)
        np.testing.assert_allclose(grad, expected, rtol=1e-6)
        check_grads(
            jax.jit(lambda s: dequantize_linear(x, s, z, **kw)),
            (jax.device_put(scale),),
            order=1,
            modes=("rev", "fwd"),
            eps=0.1,
            atol=1e-2,
            rtol=1e-2,
        )


def test_dynamic_quantize_linear_scale_gradient():
    x = jnp.asarray(_rng.permutation(12).reshape(3, 4).astype(np.float32) - 4.5)
    grad = jax.jit(jax.grad(lambda x: dynamic_quantize_linear(x)[1]))(x)
    expected = np.zeros((3, 4), np.float32)
    expected[np.unravel_index(np.argmax(x), x.shape)] = 1 / 255
    expected[np.unravel_index(np.argmin(x), x.shape)] = -1 / 255
    np.testing.assert_allclose(grad, expected, rtol=1e-6)


# x64 off, jit.


def test_x64_off(x64_off):
    x = jnp.asarray(_with_ties(0.25, (3, 4)))
    q = jax.jit(jaxonnx.ops.quantize_linear)(x, jnp.float32(0.25), jnp.uint8(100))
    np.testing.assert_array_equal(q, quantize_linear(np.asarray(x), np.float32(0.25), np.uint8(100)))
    y = jax.jit(jaxonnx.ops.dequantize_linear)(jnp.arange(6, dtype=jnp.int32), jnp.float32(0.5), jnp.int32(2))
    np.testing.assert_array_equal(y, (np.arange(6) - 2) * 0.5)
    assert jaxonnx.ops.matmul_integer(jnp.ones((2, 3), jnp.uint8), jnp.ones((3, 2), jnp.int8)).dtype == jnp.int32
    with pytest.raises(OnnxTypeError, match="jax_enable_x64"):
        bit_cast(jnp.zeros(2, jnp.float32), to=TensorProto.INT64)


# Errors.


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: jaxonnx.ops.quantize_linear(
                np.ones((2, 4), np.float32), np.ones(3, np.float32), np.zeros(3, np.uint8)
            ),
            r"QuantizeLinear-28 got `y_scale` of shape \(3,\) for `x` of shape \(2, 4\) and `axis`=1",
        ),
        (
            lambda: jaxonnx.ops.quantize_linear(
                np.ones((2, 4), np.float32), np.ones(4, np.float32), np.zeros(2, np.uint8)
            ),
            r"needs `y_zero_point` of the shape of `y_scale` \(4,\), got \(2,\)",
        ),
        (
            lambda: jaxonnx.ops.quantize_linear(
                np.ones((2, 4), np.float32), np.ones((2, 2), np.float32), block_size=1, axis=1
            ),
            r"got `block_size`=1 for axis 1 of `x` \(size 4\) and 2 blocks in `y_scale`; the accepted range is \[2, 3\]",
        ),
        (
            lambda: jaxonnx.ops.quantize_linear(np.ones((2, 4), np.float32), np.ones((2, 2), np.float32), axis=1),
            r"got `y_scale` of shape \(2, 2\)",
        ),
        (
            lambda: jaxonnx.ops.quantize_linear(np.ones(4, np.float32), np.float32(1), np.uint8(0), output_dtype=3),
            r"got `output_dtype`=3 \(int8\) but `y_zero_point` of type uint8",
        ),
        (
            lambda: jaxonnx.ops.quantize_linear(np.ones(4, np.float32), np.float32(1), output_dtype=1),
            r"got `output_dtype`=1 \(float\); it must be one of",
        ),
        (
            lambda: jaxonnx.get_op("QuantizeLinear", 23)(np.ones(4, np.float32), np.float32(1), output_dtype=25),
            r"QuantizeLinear-23 got `output_dtype`=25 \(uint2\)",
        ),
        (
            lambda: jaxonnx.ops.quantize_linear(np.ones(4, np.float32), np.float32(1), precision=6),
            r"got `precision`=6 \(int32\); it must name a float type",
        ),
        (
            lambda: jaxonnx.ops.quantize_linear(np.ones((2, 4), np.float32), np.ones(4, np.float32), axis=2),
            r"got `axis`=2 for an input of rank 2",
        ),
        (
            lambda: jaxonnx.ops.dequantize_linear(np.ones(4, np.uint8), np.array(1.0, ml_dtypes.float8_e8m0fnu)),
            r"needs `output_dtype` for `x_scale` of type float8e8m0",
        ),
        (
            lambda: jaxonnx.ops.dequantize_linear(np.ones(4, np.uint8), np.float32(1), output_dtype=11),
            r"got `output_dtype`=11 \(double\)",
        ),
        (
            lambda: jaxonnx.ops.matmul_integer(
                np.ones((2, 3), np.uint8), np.ones((3, 2), np.uint8), np.zeros(3, np.uint8)
            ),
            r"got `a_zero_point` of shape \(3,\) for an operand of shape \(2, 3\)",
        ),
        (
            lambda: jaxonnx.ops.matmul_integer(np.ones((2, 3), np.uint8), np.ones((2, 2), np.uint8)),
            r"cannot multiply `A` of shape \(2, 3\) by `B` of shape \(2, 2\)",
        ),
        (
            lambda: jaxonnx.ops.conv_integer(
                np.ones((1, 1, 3, 3), np.uint8), np.ones((2, 1, 2, 2), np.uint8), np.zeros(2, np.uint8)
            ),
            r"got `x_zero_point` of shape \(2,\); it must be a scalar",
        ),
        (
            lambda: jaxonnx.ops.qlinear_matmul(
                np.ones((2, 3), np.uint8),
                np.ones(2, np.float32),
                np.uint8(0),
                np.ones((3, 2), np.uint8),
                np.float32(1),
                np.uint8(0),
                np.float32(1),
                np.uint8(0),
            ),
            r"needs `a_scale` and `a_zero_point` of one shape",
        ),
        (
            lambda: jaxonnx.ops.qlinear_conv(
                np.ones((1, 1, 3, 3), np.uint8),
                np.float32(1),
                np.uint8(0),
                np.ones((2, 1, 2, 2), np.uint8),
                np.ones(3, np.float32),
                np.uint8(0),
                np.float32(1),
                np.uint8(0),
            ),
            r"got `w_scale` of shape \(3,\); it must be a scalar \(per tensor\) or 2 values",
        ),
        (
            lambda: jaxonnx.ops.bit_cast(np.ones(2, np.float32), to=TensorProto.INT16),
            r"cannot bit-cast `input` of type float \(32 bits\) to int16 \(16 bits\)",
        ),
        (lambda: jaxonnx.ops.bit_cast(np.ones(2, np.float32), to=TensorProto.STRING), r"cannot bit-cast to string"),
    ],
)
def test_errors_name_the_argument_and_value(call, message):
    with pytest.raises((OnnxValidationError, OnnxTypeError), match=message):
        call()


def test_load_straight_through_gives_quantization_aware_gradients():
    """`jaxonnx.load(..., straight_through=True)`: QuantizeLinear passes the gradient inside
    its range (as PyTorch's fake-quant); by default the true gradient, zero, flows."""
    from onnx import helper, numpy_helper

    vi = helper.make_tensor_value_info
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [vi("x", TensorProto.FLOAT, [4])],
        [vi("y", TensorProto.FLOAT, [4])],
        initializer=[
            numpy_helper.from_array(np.array(0.1, np.float32), "s"),
            numpy_helper.from_array(np.array(0, np.int8), "z"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    x = np.array([0.12, -0.3, 20.0, 1.0], np.float32)
    plain, aware = jaxonnx.load(proto), jaxonnx.load(proto, straight_through=True)

    @jax.jit  # values and gradients of both in one compiled program
    def values(x):
        return (
            aware(x)[0],
            plain(x)[0],
            jax.grad(lambda v: plain(v)[0].sum())(x),
            jax.grad(lambda v: aware(v)[0].sum())(x),
        )

    aware_y, plain_y, plain_grad, aware_grad = values(x)
    np.testing.assert_allclose(aware_y, plain_y)
    np.testing.assert_allclose(aware_y, [0.1, -0.3, 12.7, 1.0], rtol=1e-6)
    np.testing.assert_array_equal(plain_grad, [0, 0, 0, 0])
    np.testing.assert_array_equal(aware_grad, [1, 1, 0, 1])  # 20.0 saturates
