"""onnxruntime's weight-quantized com.microsoft ops against onnxruntime itself: MatMulNBits,
MatMulBnb4, GatherBlockQuantized, DynamicQuantizeMatMul, MatMulIntegerToFloat and the
com.microsoft QuantizeLinear / DequantizeLinear. Single nodes on random shapes for each
option (eager, under jit, and the op on numpy values), models written by onnxruntime's own
quantizers, and gradients against finite differences of a float64 copy.

Floats agree within float32 rounding: ``|actual - expected| <= 1e-5 * (|A| @ |W|^T)``
elementwise (a sum of K float32 products differs by a few units in the last place of its
largest terms), integers exactly.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx
from jaxonnx._errors import JaxOnnxError

_rng = np.random.default_rng(32)
_MS = "com.microsoft"


def _node_model(op_type, inputs, attributes, output_type, *, opset=21):
    """A one-node model: every non-None input a graph input, ``y`` its output."""
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    while names and not names[-1]:
        names.pop()
    feed = {n: np.asarray(x) for n, x in zip(names, inputs) if n}
    node = helper.make_node(op_type, names, ["y"], domain=_MS, **attributes)
    graph = helper.make_graph(
        [node],
        "node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()],
        [helper.make_tensor_value_info("y", output_type, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(_MS, 1)])
    model.ir_version = 10
    return model, feed


def _eagerly_and_jitted(loaded, function, call):
    """``call(function)`` for ``function`` (``loaded`` or ``loaded.run``) eagerly, and under
    ``jax.jit`` where the eager call runs op by op (where it compiles the whole graph, it is
    ``jax.jit`` of the graph already: a second jit would compile the same computation twice)."""
    if loaded.eager_mode.startswith("whole graph"):
        return [call(function)]
    return [call(function), call(jax.jit(function))]


def _three_ways(model, feed, op_type, inputs, attributes):
    """The node's output through `load` eagerly, under jit (see `_eagerly_and_jitted`), and the
    op on numpy values (last)."""
    loaded = jaxonnx.load(model)
    op = jaxonnx.get_op(op_type, 1, _MS)
    return [
        *_eagerly_and_jitted(loaded, loaded.run, lambda run: np.asarray(run(feed)["y"])),
        np.asarray(op(*inputs, **attributes)),
    ]


def _assert_within_rounding(actual, expected, magnitude):
    """``actual`` equals ``expected`` up to float32 rounding of sums whose terms have the
    absolute values summed in ``magnitude``."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (
        actual.shape,
        actual.dtype,
        expected.shape,
        expected.dtype,
    )
    diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    bound = 1e-5 * magnitude + 1e-30
    assert np.all(diff <= bound), f"max excess {np.max(diff - bound)} (max |diff| {diff.max()})"


# --- MatMulNBits -------------------------------------------------------------------------


def _pack_low_bits_first(values, bits):
    """Packs unsigned ``bits``-wide ``values`` along the last axis, first value lowest."""
    per_byte = 8 // bits
    values = values.astype(np.uint8).reshape(values.shape[:-1] + (-1, per_byte))
    packed = np.zeros(values.shape[:-1], np.uint8)
    for i in range(per_byte):
        packed |= values[..., i] << np.uint8(bits * i)
    return packed


def _nbits_case(
    *, lead=(3,), K=40, N=6, bits=4, block_size=16, zero="packed", g_idx=False, bias=False, dtype=np.float32
):
    """Random MatMulNBits inputs, attributes and the float64 weights ``W`` (N x K)."""
    k_blocks = -(-K // block_size)
    codes = _rng.integers(0, 1 << bits, (N, k_blocks * block_size))
    scales = _rng.uniform(0.01, 0.1, (N, k_blocks)).astype(dtype)
    B = _pack_low_bits_first(codes, bits).reshape(N, k_blocks, block_size * bits // 8)
    if zero == "packed":
        zero_codes = _rng.integers(0, 1 << bits, (N, k_blocks))
        width = -(-k_blocks * bits // 8)
        padded = np.zeros((N, width * 8 // bits), np.int64)
        padded[:, :k_blocks] = zero_codes
        zero_points, zero_values = _pack_low_bits_first(padded, bits), zero_codes.astype(np.float64)
    elif zero == "float":
        zero_points = _rng.uniform(0, (1 << bits) - 1, (N, k_blocks)).astype(dtype)
        zero_values = zero_points.astype(np.float64)
    else:
        zero_points, zero_values = None, np.full((N, k_blocks), float(1 << (bits - 1)))
    groups = np.arange(K) // block_size
    g = None
    if g_idx:
        # A permutation of whole blocks (GPTQ act-order groups rows so; onnxruntime's CPU
        # kernel reads g_idx once per 8 rows, which such a permutation keeps exact).
        permutation = _rng.permutation(k_blocks)
        groups = permutation[np.arange(K) // block_size]
        g = groups.astype(np.int32)
    W = (codes[:, :K] - zero_values[:, groups]) * scales.astype(np.float64)[:, groups]
    A = _rng.standard_normal(lead + (K,)).astype(dtype)
    b = _rng.standard_normal(N).astype(dtype) if bias else None
    inputs = [A, B, scales, zero_points, g, b]
    while inputs[-1] is None:
        inputs.pop()
    return inputs, {"K": K, "N": N, "bits": bits, "block_size": block_size}, W


_NBITS_CASES = {
    **{f"bits{bits}_{zero}": dict(bits=bits, zero=zero) for bits in (2, 4, 8) for zero in ("packed", "absent")},
    "bits4_float_zero": dict(zero="float"),
    "bits2_block32_odd_k_bias": dict(bits=2, block_size=32, K=77, bias=True),
    "bits8_block64_batched": dict(bits=8, block_size=64, K=130, lead=(2, 3)),
    "bits4_block128_decode": dict(block_size=128, K=256, N=33, lead=(1,), bias=True),
    "bits4_block16_k_one_block": dict(K=9, N=3, lead=(5,)),
    "bits4_g_idx": dict(g_idx=True, K=64, zero="absent"),
    "bits4_g_idx_float_zero_bias": dict(g_idx=True, zero="float", K=48, bias=True),
    "bits4_float16": dict(dtype=np.float16, bias=True),
    "bits8_float16_absent": dict(bits=8, zero="absent", dtype=np.float16),
}


@pytest.mark.parametrize("case", sorted(_NBITS_CASES))
def test_matmul_nbits_equals_onnxruntime(case, run_onnxruntime):
    inputs, attributes, W = _nbits_case(**_NBITS_CASES[case])
    A = inputs[0]
    model, feed = _node_model("MatMulNBits", inputs, attributes, helper.np_dtype_to_tensor_dtype(A.dtype))
    (expected,) = run_onnxruntime(model, feed)
    magnitude = np.abs(A.astype(np.float64)) @ np.abs(W).T
    if len(inputs) > 5:
        magnitude = magnitude + np.abs(inputs[5].astype(np.float64))
    if A.dtype == np.float16:  # one float16 rounding of the float32 result
        magnitude = magnitude * 100
    for actual in _three_ways(model, feed, "MatMulNBits", inputs, attributes):
        _assert_within_rounding(actual, expected, magnitude)
    # And the float64 text: within float32 rounding too.
    exact = A.astype(np.float64) @ W.T + (inputs[5].astype(np.float64) if len(inputs) > 5 else 0)
    _assert_within_rounding(actual.astype(np.float64), exact.astype(np.float64), magnitude)


def test_matmul_nbits_g_idx_with_packed_zero_points(run_onnxruntime):
    """The zero points apply with `g_idx` as without it (the text). onnxruntime 1.32's CPU
    kernel drops packed uint8 zero points when `g_idx` is given and subtracts the default
    2**(bits-1) instead: its result then equals this op's without `zero_points`."""
    inputs, attributes, W = _nbits_case(g_idx=True, K=64, lead=(4,))
    A = inputs[0]
    model, feed = _node_model("MatMulNBits", inputs, attributes, TensorProto.FLOAT)
    (expected,) = run_onnxruntime(model, feed)
    magnitude = np.abs(A.astype(np.float64)) @ np.abs(W).T
    exact = (A.astype(np.float64) @ W.T).astype(np.float32)
    for actual in _three_ways(model, feed, "MatMulNBits", inputs, attributes):
        _assert_within_rounding(actual, exact, magnitude)
    without_zero_points = np.asarray(
        jaxonnx.get_op("MatMulNBits", 1, _MS)(A, *inputs[1:3], None, inputs[4], **attributes)
    )
    assert not np.allclose(without_zero_points, exact)
    if not np.allclose(expected, exact, rtol=1e-4, atol=1e-4):  # onnxruntime 1.32
        _assert_within_rounding(
            expected, without_zero_points, magnitude + 8 * np.abs(A) @ np.abs(inputs[2]).repeat(16, 1).T
        )


def test_matmul_nbits_accuracy_level_4_computes_in_float32(run_onnxruntime):
    """Level 4 lets onnxruntime quantize A to int8 per block; jaxonnx keeps float32: it
    equals onnxruntime's level-0 result, and onnxruntime's level-4 result lies within A's
    int8 rounding of it (the bound the op's docstring gives)."""
    inputs, attributes, W = _nbits_case(lead=(4,), K=256, N=16, block_size=32)
    A = inputs[0]
    model, feed = _node_model("MatMulNBits", inputs, attributes, TensorProto.FLOAT)
    (float32_expected,) = run_onnxruntime(model, feed)
    model4, _ = _node_model("MatMulNBits", inputs, {**attributes, "accuracy_level": 4}, TensorProto.FLOAT)
    (int8_expected,) = run_onnxruntime(model4, feed)
    magnitude = np.abs(A.astype(np.float64)) @ np.abs(W).T
    for actual in _three_ways(model4, feed, "MatMulNBits", inputs, {**attributes, "accuracy_level": 4}):
        _assert_within_rounding(actual, float32_expected, magnitude)
    block_max = np.abs(A.astype(np.float64)).reshape(4, -1, 32).max(axis=2)  # (M, k_blocks)
    int8_bound = (block_max / 254) @ np.abs(W).reshape(16, -1, 32).sum(axis=2).T
    assert np.all(np.abs(int8_expected - float32_expected) <= int8_bound * 1.01 + 1e-5 * magnitude)


def test_matmul_nbits_omitted_projection_is_the_bias(run_onnxruntime):
    inputs, attributes, _ = _nbits_case(bias=True)
    inputs[1] = np.zeros((0, inputs[1].shape[1], inputs[1].shape[2]), np.uint8)
    model, feed = _node_model("MatMulNBits", inputs, attributes, TensorProto.FLOAT)
    (expected,) = run_onnxruntime(model, feed)
    for actual in _three_ways(model, feed, "MatMulNBits", inputs, attributes):
        np.testing.assert_array_equal(actual, expected)
    np.testing.assert_array_equal(expected, np.broadcast_to(inputs[5], expected.shape))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"weight_prepacked": 1}, "weight_prepacked"),
        ({"bits": 3}, "2, 4 or 8 bits"),
        ({"block_size": 20}, "block_size"),
    ],
)
def test_matmul_nbits_refuses_what_it_cannot_read(change, message):
    inputs, attributes, _ = _nbits_case()
    with pytest.raises(JaxOnnxError, match=message):
        jaxonnx.get_op("MatMulNBits", 1, _MS)(*inputs, **{**attributes, **change})


def test_matmul_nbits_refuses_g_idx_out_of_range():
    inputs, attributes, _ = _nbits_case(g_idx=True, K=64)
    inputs[4] = inputs[4].copy()
    inputs[4][5] = 4
    with pytest.raises(JaxOnnxError, match=r"g_idx`\[5\]=4"):
        jaxonnx.get_op("MatMulNBits", 1, _MS)(*inputs, **attributes)


def _float64_nbits(A, scales, zero, bias, W_codes, groups):
    """The float64 text of MatMulNBits, for finite differences."""
    W = (W_codes - zero[:, groups]) * scales[:, groups]
    return A @ W.T + bias


@pytest.mark.parametrize("zero", ["packed", "float"])
@pytest.mark.parametrize("rows", [1, 12], ids=["decode", "prefill"])
def test_matmul_nbits_gradients_match_finite_differences(zero, rows):
    """QLoRA-style fine-tuning: exact gradients w.r.t. the scales (and the activations, float
    zero points and bias), checked against central differences of a float64 copy along
    random directions; the packed weights have none."""
    K, N, block_size = 64, 5, 16
    inputs, attributes, _ = _nbits_case(lead=(rows,), K=K, N=N, block_size=block_size, zero=zero, bias=True)
    A, B, scales, zero_points, _, bias = inputs
    unpacked = np.zeros((N, K))
    for j in range(K // 2):  # 4 bits: value 2j in the low nibble, 2j+1 in the high one
        byte = B.reshape(N, -1)[:, j]
        unpacked[:, 2 * j], unpacked[:, 2 * j + 1] = byte & 15, byte >> 4
    groups = np.arange(K) // block_size
    if zero == "packed":
        zero_values = np.stack(
            [zero_points[:, j // 2] >> (4 * (j % 2)) & 15 for j in range(K // block_size)], 1
        ).astype(np.float64)
    else:
        zero_values = zero_points.astype(np.float64)
    cotangent = _rng.standard_normal((rows, N)).astype(np.float32)

    def loss(A, scales, zero_points, bias):
        y = jaxonnx.ops.matmul_nbits(A, B, scales, zero_points, None, bias, **attributes)
        return jnp.sum(y * cotangent)

    differentiable = (0, 1, 2, 3) if zero == "float" else (0, 1, 3)
    # One compiled program (an eager grad would compile each of its primitives apart).
    grads = jax.jit(jax.grad(loss, argnums=differentiable))(A, scales, zero_points, bias)
    primal = [A.astype(np.float64), scales.astype(np.float64), zero_values, bias.astype(np.float64)]

    def loss64(values):
        return np.sum(_float64_nbits(values[0], values[1], values[2], values[3], unpacked, groups) * cotangent)

    for argnum, grad in zip(differentiable, grads):
        assert grad.dtype == np.float32
        direction = _rng.standard_normal(primal[argnum].shape)
        step = 1e-3
        plus = [p + step * direction if i == argnum else p for i, p in enumerate(primal)]
        minus = [p - step * direction if i == argnum else p for i, p in enumerate(primal)]
        numeric = (loss64(plus) - loss64(minus)) / (2 * step)
        analytic = float(np.sum(np.asarray(grad, np.float64) * direction))
        scale = np.sum(np.abs(np.asarray(grad, np.float64) * direction)) + 1e-12
        assert abs(analytic - numeric) <= 1e-5 * scale, (argnum, analytic, numeric)


# --- MatMulBnb4 ----------------------------------------------------------------------------

_NF4 = np.array(
    [
        -1.0,
        -0.6961928009986877,
        -0.5250730514526367,
        -0.39491748809814453,
        -0.28444138169288635,
        -0.18477343022823334,
        -0.09105003625154495,
        0.0,
        0.07958029955625534,
        0.16093020141124725,
        0.24611230194568634,
        0.33791524171829224,
        0.44070982933044434,
        0.5626170039176941,
        0.7229568362236023,
        1.0,
    ],
    np.float32,
)
# FP4: sign, 2 exponent bits (bias 3), 1 mantissa bit; the values over 12, the largest.
_FP4 = np.array([0, 0.0625, 8, 12, 4, 6, 2, 3], np.float64) / 12
_FP4 = np.concatenate([_FP4, -_FP4]).astype(np.float32)


def _bnb4_case(*, lead=(3,), K=24, N=5, block_size=16, quant_type=1, transB=1):
    size = N * K
    codes = _rng.integers(0, 16, size + size % 2)
    B = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8)  # the first code in the high nibble
    absmax = _rng.uniform(0.5, 2.0, -(-size // block_size)).astype(np.float32)
    table = _NF4 if quant_type else _FP4
    W = (table[codes[:size]].astype(np.float64) * np.repeat(absmax.astype(np.float64), block_size)[:size]).reshape(N, K)
    A = _rng.standard_normal(lead + ((K if transB else N),)).astype(np.float32)
    attributes = {"K": K, "N": N, "block_size": block_size, "quant_type": quant_type, "transB": transB}
    return [A, B, absmax], attributes, W


_BNB4_CASES = {
    "nf4": dict(),
    "fp4": dict(quant_type=0),
    "nf4_odd_size_block64_batched": dict(K=21, N=7, block_size=64, lead=(2, 3)),
    "fp4_block32_decode": dict(K=96, N=40, block_size=32, lead=(1,), quant_type=0),
}


@pytest.mark.parametrize("case", sorted(_BNB4_CASES))
def test_matmul_bnb4_equals_onnxruntime(case, run_onnxruntime):
    inputs, attributes, W = _bnb4_case(**_BNB4_CASES[case])
    model, feed = _node_model("MatMulBnb4", inputs, attributes, TensorProto.FLOAT)
    (expected,) = run_onnxruntime(model, feed)
    magnitude = np.abs(inputs[0].astype(np.float64)) @ np.abs(W).T
    for actual in _three_ways(model, feed, "MatMulBnb4", inputs, attributes):
        _assert_within_rounding(actual, expected, magnitude)
    _assert_within_rounding(actual.astype(np.float64), inputs[0].astype(np.float64) @ W.T, magnitude)


def test_matmul_bnb4_untransposed_follows_the_text(run_onnxruntime):
    """transB=0 (the backward pass): Y = A @ W. onnxruntime's CPU kernel multiplies by the
    transposed weight whatever transB says (its GEMM call is hard-wired to CblasTrans) and
    reads it with the wrong stride; this follows the text."""
    inputs, attributes, W = _bnb4_case(transB=0, K=16, N=16)
    magnitude = np.abs(inputs[0].astype(np.float64)) @ np.abs(W)
    model, feed = _node_model("MatMulBnb4", inputs, attributes, TensorProto.FLOAT)
    for actual in _three_ways(model, feed, "MatMulBnb4", inputs, attributes):
        _assert_within_rounding(actual, (inputs[0].astype(np.float64) @ W).astype(np.float32), magnitude)


# --- GatherBlockQuantized ------------------------------------------------------------------


def _initializer_model(op_type, inputs, constant, attributes, output_type):
    """A one-node model whose inputs at the positions in ``constant`` are initializers (the
    sub-byte and float8 types onnxruntime's Python feeds do not take)."""
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    while names and not names[-1]:
        names.pop()
    feed = {n: np.asarray(x) for i, (n, x) in enumerate(zip(names, inputs)) if n and i not in constant}
    initializers = [numpy_helper.from_array(np.asarray(inputs[i]), names[i]) for i in constant if inputs[i] is not None]
    node = helper.make_node(op_type, names, ["y"], domain=_MS, **attributes)
    graph = helper.make_graph(
        [node],
        "node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape) for n, x in feed.items()],
        [helper.make_tensor_value_info("y", output_type, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(_MS, 1)])
    model.ir_version = 10
    return model, feed


def _gather_case(
    *,
    kind="int4",
    shape=(7, 40),
    gather_axis=0,
    quantize_axis=1,
    block_size=16,
    zero=True,
    bits=4,
    index_shape=(2, 3),
    index_type=np.int64,
    scale_type=np.float32,
    broadcast_axis=None,
):
    """Random GatherBlockQuantized inputs, attributes, and the float64 dequantized table."""
    import ml_dtypes

    rank = len(shape)
    q = quantize_axis % rank
    length = shape[q]
    block = block_size or length
    scale_shape = list(shape)
    scale_shape[q] = -(-length // block)
    if broadcast_axis is not None:
        scale_shape[broadcast_axis] = 1
    scales = _rng.uniform(0.05, 1.0, scale_shape).astype(scale_type)
    spread = np.repeat(scales.astype(np.float64), block, axis=q)[(slice(None),) * q + (slice(0, length),)]
    zero_points = None
    if kind in ("int4", "uint4"):
        low, high = (-8, 7) if kind == "int4" else (0, 15)
        dtype = getattr(ml_dtypes, kind)
        values = _rng.integers(low, high + 1, shape)
        data = values.astype(dtype)
        zero_values = np.zeros(scale_shape, np.int64)
        if zero:
            zero_values = _rng.integers(low, high + 1, scale_shape)
            zero_points = zero_values.astype(dtype)
        table = (values - np.repeat(zero_values, block, axis=q)[(slice(None),) * q + (slice(0, length),)]) * spread
    elif kind == "uint8":
        values = _rng.integers(0, 1 << bits, shape)
        data = _pack_low_bits_first(values, bits) if bits < 8 else values.astype(np.uint8)
        zero_values = np.full(scale_shape, 1 << (bits - 1))
        if zero:
            zero_values = _rng.integers(0, 1 << bits, scale_shape)
            per_byte = 8 // bits
            width = -(-scale_shape[-1] // per_byte) * per_byte
            padded = np.zeros(scale_shape[:-1] + [width], np.int64)
            padded[..., : scale_shape[-1]] = zero_values
            zero_points = _pack_low_bits_first(padded, bits) if bits < 8 else zero_values.astype(np.uint8)
        table = (values - np.repeat(zero_values, block, axis=q)[(slice(None),) * q + (slice(0, length),)]) * spread
    else:
        dtype = getattr(ml_dtypes, kind)
        data = _rng.uniform(-4, 4, shape).astype(dtype)
        table = data.astype(np.float64) * spread
    size = shape[gather_axis % rank]
    indices = _rng.integers(-size - 2, size + 2, index_shape).astype(index_type)
    attributes = {"gather_axis": gather_axis, "quantize_axis": quantize_axis, "block_size": block_size}
    if kind == "uint8":
        attributes["bits"] = bits
    return [data, indices, scales, zero_points], attributes, table


def _gathered(table, indices, axis):
    axis %= table.ndim
    size = table.shape[axis]
    valid = (indices >= -size) & (indices < size)
    out = np.take(table, np.where(valid, indices % size, 0), axis=axis)
    mask = valid.reshape((1,) * axis + valid.shape + (1,) * (table.ndim - axis - 1))
    return np.where(mask, out, 0.0)


_GATHER_CASES = {
    "int4": dict(),
    "int4_no_zero_int32_indices": dict(zero=False, index_type=np.int32),
    "uint4_quantize_axis0_gather_axis1": dict(kind="uint4", gather_axis=1, quantize_axis=0, shape=(48, 5)),
    "int4_rank3_same_axes": dict(shape=(3, 40, 4), gather_axis=1, quantize_axis=1, block_size=16, index_shape=(5,)),
    "int4_rank3_negative_axes_float16": dict(
        shape=(6, 3, 32), gather_axis=-3, quantize_axis=-1, block_size=32, scale_type=np.float16
    ),
    **{
        f"uint8_bits{bits}_{'zero' if zero else 'default'}": dict(
            kind="uint8", bits=bits, zero=zero, shape=(9, 64), block_size=16
        )
        for bits in (2, 4, 8)
        for zero in (True, False)
    },
    "uint8_bits4_odd_blocks": dict(kind="uint8", bits=4, shape=(5, 48), block_size=32),
    "float8e4m3fn": dict(kind="float8_e4m3fn", zero=False),
    "float8e5m2_whole_axis_broadcast": dict(kind="float8_e5m2", zero=False, block_size=0, broadcast_axis=0),
    "float4e2m1": dict(kind="float4_e2m1fn", zero=False, shape=(6, 32), block_size=16),
}


@pytest.mark.parametrize("case", sorted(_GATHER_CASES))
def test_gather_block_quantized_equals_onnxruntime(case, run_onnxruntime):
    inputs, attributes, table = _gather_case(**_GATHER_CASES[case])
    scales = inputs[2]
    model, feed = _initializer_model(
        "GatherBlockQuantized", inputs, (0, 3), attributes, helper.np_dtype_to_tensor_dtype(scales.dtype)
    )
    (expected,) = run_onnxruntime(model, feed)
    text = _gathered(table, inputs[1], attributes["gather_axis"]).astype(scales.dtype)
    np.testing.assert_array_equal(expected, text)  # one rounding of an exact product: exact
    for actual in _three_ways(model, feed, "GatherBlockQuantized", inputs, attributes):
        assert actual.dtype == expected.dtype
        np.testing.assert_array_equal(actual, expected)


def test_gather_block_quantized_gradient_flows_to_scales():
    inputs, attributes, _ = _gather_case(zero=True)
    data, indices, scales, zero_points = inputs
    op = jaxonnx.get_op("GatherBlockQuantized", 1, _MS)
    cotangent = _rng.standard_normal(indices.shape + (40,)).astype(np.float32)
    direction = _rng.standard_normal(scales.shape).astype(np.float32)

    @jax.jit
    def grad_and_along(scales, direction):  # one compiled program for both
        grad = jax.grad(lambda s: jnp.sum(op(data, indices, s, zero_points, **attributes) * cotangent))(scales)
        return grad, op(data, indices, direction, zero_points, **attributes)

    grad, along = grad_and_along(scales, direction)
    # Linear in the scales: the gradient is the sum over the gathered rows of (q - z) times the cotangent.
    numeric = np.sum(np.asarray(along, np.float64) * cotangent)
    np.testing.assert_allclose(float(np.sum(np.asarray(grad, np.float64) * direction)), numeric, rtol=1e-5)


# --- MatMulIntegerToFloat, DynamicQuantizeMatMul -------------------------------------------


def _codes(dtype, shape, *, half=False):
    info = np.iinfo(dtype)
    low, high = (info.min // 2, info.max // 2) if half else (info.min, info.max)
    return _rng.integers(low, high + 1, shape).astype(dtype)


def _integer_to_float_case(
    *, a_type=np.uint8, b_type=np.int8, lead=(3,), K=11, N=4, per_column=True, zero=True, bias=True, batched_b=False
):
    # uint8 by int8 in 7 bits: onnxruntime's AVX2 u8s8 kernel saturates pairs of products in int16 beyond that.
    A = _codes(a_type, lead + (K,))
    B = _codes(b_type, ((2,) if batched_b else ()) + (K, N), half=a_type != b_type)
    a_scale = np.float32(_rng.uniform(0.01, 0.1))
    b_scale = _rng.uniform(0.01, 0.1, (N,) if per_column else ()).astype(np.float32)
    a_zero = _codes(a_type, ()) if zero else None
    b_zero = (_codes(b_type, (N,) if per_column else (), half=a_type != b_type)) if zero else None
    b = _rng.standard_normal(N).astype(np.float32) if bias else None
    return [A, B, a_scale, b_scale, a_zero, b_zero, b]


_ITF_CASES = {
    "u8u8_per_column": dict(b_type=np.uint8),
    "u8s8_per_column": dict(),
    "s8s8_per_tensor": dict(a_type=np.int8, per_column=False),
    "u8s8_no_zero_no_bias_batched": dict(zero=False, bias=False, lead=(2, 3)),
    "u8u8_batched_b": dict(b_type=np.uint8, batched_b=True, lead=(2, 5), per_column=False),
}


@pytest.mark.parametrize("case", sorted(_ITF_CASES))
def test_matmul_integer_to_float_equals_onnxruntime(case, run_onnxruntime):
    inputs = _integer_to_float_case(**_ITF_CASES[case])
    A, B, a_scale, b_scale, a_zero, b_zero, bias = inputs
    model, feed = _node_model("MatMulIntegerToFloat", inputs, {}, TensorProto.FLOAT)
    (expected,) = run_onnxruntime(model, feed)
    acc = (A.astype(np.int64) - (0 if a_zero is None else int(a_zero))) @ (
        B.astype(np.int64) - (0 if b_zero is None else b_zero.astype(np.int64))
    )
    magnitude = np.abs(acc) * float(a_scale) * b_scale.astype(np.float64) + (0 if bias is None else np.abs(bias))
    for actual in _three_ways(model, feed, "MatMulIntegerToFloat", inputs, {}):
        _assert_within_rounding(actual, expected, magnitude)


@pytest.mark.parametrize("case", ["int8_per_column_bias", "uint8_per_tensor", "int8_batched_zero_column"])
def test_dynamic_quantize_matmul_equals_onnxruntime(case, run_onnxruntime):
    b_type = np.uint8 if "uint8" in case else np.int8
    per_column = "per_column" in case or "zero_column" in case
    lead = (2, 5) if "batched" in case else (4,)
    K, N = 13, 6
    A = (_rng.standard_normal(lead + (K,)) * 3).astype(np.float32)
    if "zero_column" in case:
        A[..., 0] = 0.0
    # int8 weights in 7 bits: A is uint8 here, and onnxruntime's AVX2 u8s8 kernel saturates beyond that.
    B = _codes(b_type, (K, N), half=b_type == np.int8)
    b_scale = _rng.uniform(0.01, 0.1, (N,) if per_column else ()).astype(np.float32)
    b_zero = _codes(b_type, (N,) if per_column else (), half=b_type == np.int8) if "bias" not in case else None
    bias = _rng.standard_normal(N).astype(np.float32) if "bias" in case else None
    inputs = [A, B, b_scale, b_zero, bias]
    model, feed = _node_model("DynamicQuantizeMatMul", inputs, {}, TensorProto.FLOAT)
    (expected,) = run_onnxruntime(model, feed)
    zero = 0 if b_zero is None else b_zero.astype(np.float64)
    magnitude = np.abs(A.astype(np.float64)) @ np.abs(B - zero) * b_scale + (0 if bias is None else np.abs(bias))
    for actual in _three_ways(model, feed, "DynamicQuantizeMatMul", inputs, {}):
        _assert_within_rounding(actual, expected, magnitude)
    # The float product, within A's uint8 rounding (half a step of a_scale per element).
    a_scale = (max(A.max(), 0) - min(A.min(), 0)) / 255
    exact = A.astype(np.float64) @ ((B - zero) * b_scale) + (0 if bias is None else bias)
    assert np.all(np.abs(actual - exact) <= a_scale / 2 * np.abs(B - zero).sum(0) * b_scale * 1.0001 + 1e-5 * magnitude)


def test_matmul_integer_to_float_swapped_scales_as_onnxruntime(run_onnxruntime):
    """onnxruntime's fusions may write a per-column scale as `a_scale`; its kernel swaps it back."""
    A, B, a_scale, b_scale, a_zero, b_zero, bias = _integer_to_float_case(zero=False)
    inputs = [A, B, b_scale, np.asarray(a_scale), None, None, bias]
    model, feed = _node_model("MatMulIntegerToFloat", inputs, {}, TensorProto.FLOAT)
    (expected,) = run_onnxruntime(model, feed)
    acc = A.astype(np.int64) @ B.astype(np.int64)
    magnitude = np.abs(acc) * float(a_scale) * b_scale.astype(np.float64) + np.abs(bias)
    for actual in _three_ways(model, feed, "MatMulIntegerToFloat", inputs, {}):
        _assert_within_rounding(actual, expected, magnitude)


# --- com.microsoft QuantizeLinear / DequantizeLinear ---------------------------------------


def _typed_codes(name, shape):
    import ml_dtypes

    dtype = getattr(ml_dtypes, name) if name in ("int4", "uint4") else np.dtype(name)
    info = ml_dtypes.iinfo(dtype)
    return _rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype)


_QDQ_CASES = [
    (name, layout)
    for name in ("int8", "uint8", "int16", "uint16", "int4", "uint4")
    for layout in ("tensor", "axis", "axis_negative", "no_zero")
]


@pytest.mark.parametrize("name, layout", _QDQ_CASES)
def test_microsoft_quantize_linear_equals_onnxruntime(name, layout, run_onnxruntime):
    import ml_dtypes

    shape = (3, 4, 5)
    axis = {"axis": None, "axis_negative": -1}.get(layout)
    channels = shape[1 if axis is None else axis]
    per_axis = layout.startswith("axis")
    zero = None if layout == "no_zero" else _typed_codes(name, (channels,) if per_axis else ())
    info = ml_dtypes.iinfo(zero.dtype if zero is not None else np.uint8)
    scale = _rng.uniform(0.01, 0.1, (channels,) if per_axis else ()).astype(np.float32)
    span = float(info.max - info.min) * 0.06
    x = _rng.uniform(-span, span, shape).astype(np.float32)
    x.flat[:3] = [1e6, -1e6, 0.0]  # saturation
    attributes = {} if axis is None else {"axis": axis}
    inputs = [x, scale, zero]
    out_type = helper.np_dtype_to_tensor_dtype(np.dtype(zero.dtype if zero is not None else np.uint8))
    model, feed = _initializer_model("QuantizeLinear", inputs, (2,), attributes, out_type)
    if zero is not None and name in (
        "int4",
        "uint4",
    ):  # onnxruntime's Python API returns no 4-bit arrays: a Cast to 8 bits after
        graph = model.graph
        graph.node[0].output[0] = "q"
        graph.node.append(helper.make_node("Cast", ["q"], ["y"], to=TensorProto.INT8))
        graph.output[0].type.tensor_type.elem_type = TensorProto.INT8
    (expected,) = run_onnxruntime(model, feed)
    loaded = jaxonnx.load(model)
    op = jaxonnx.get_op("QuantizeLinear", 1, _MS)
    direct = np.asarray(op(*inputs, **attributes))
    assert direct.dtype == np.dtype(zero.dtype if zero is not None else np.uint8)
    for actual in [*_eagerly_and_jitted(loaded, loaded.run, lambda run: np.asarray(run(feed)["y"])), direct]:
        np.testing.assert_array_equal(actual.astype(np.int64), expected.astype(np.int64))


@pytest.mark.parametrize("name, layout", _QDQ_CASES + [("int32", "tensor"), ("int8", "float16")])
def test_microsoft_dequantize_linear_equals_onnxruntime(name, layout, run_onnxruntime):
    shape = (3, 4, 5)
    axis = {"axis": None, "axis_negative": -1}.get(layout)
    channels = shape[1 if axis is None else axis]
    per_axis = layout.startswith("axis")
    x = _typed_codes(name, shape) if name != "int32" else _rng.integers(-(2**20), 2**20, shape).astype(np.int32)
    zero = (
        None
        if layout in ("no_zero", "float16") or name == "int32"
        else _typed_codes(name, (channels,) if per_axis else ())
    )
    scale = _rng.uniform(0.01, 0.1, (channels,) if per_axis else ()).astype(
        np.float16 if layout == "float16" else np.float32
    )
    attributes = {} if axis is None else {"axis": axis}
    inputs = [x, scale, zero]
    model, feed = _initializer_model(
        "DequantizeLinear", inputs, (0, 2), attributes, helper.np_dtype_to_tensor_dtype(scale.dtype)
    )
    (expected,) = run_onnxruntime(model, feed)
    for actual in _three_ways(model, feed, "DequantizeLinear", inputs, attributes):
        assert actual.dtype == expected.dtype
        np.testing.assert_array_equal(actual, expected)


# --- Models written by onnxruntime's quantizers --------------------------------------------


def _float_mlp():
    """A small float model: an embedding Gather and three MatMuls (K = 64, 96 and 64: the
    middle one is no whole number of 64-blocks), a residual and a bias."""
    rng = np.random.default_rng(12)
    weights = {
        "E": rng.standard_normal((50, 64)),
        "W1": rng.standard_normal((64, 96)) * 0.2,
        "B1": rng.standard_normal(96) * 0.1,
        "W2": rng.standard_normal((96, 64)) * 0.2,
        "W3": rng.standard_normal((64, 40)) * 0.2,
    }
    nodes = [
        helper.make_node("Gather", ["E", "ids"], ["x"]),
        helper.make_node("MatMul", ["x", "W1"], ["h"]),
        helper.make_node("Add", ["h", "B1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "W2"], ["o"]),
        helper.make_node("Add", ["o", "x"], ["res"]),
        helper.make_node("MatMul", ["res", "W3"], ["Y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", "seq", 40])],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def _nbits_quantized(bits, symmetric, quant_format, accuracy_level, block_size):
    quantization = pytest.importorskip("onnxruntime.quantization")
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    fmt = getattr(quantization.QuantFormat, quant_format)
    ops = ("MatMul", "Gather") if bits == 4 and quant_format == "QOperator" else ("MatMul",)
    config = DefaultWeightOnlyQuantConfig(
        block_size=block_size,
        is_symmetric=symmetric,
        accuracy_level=accuracy_level,
        quant_format=fmt,
        op_types_to_quantize=ops,
        bits=bits,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantizer = MatMulNBitsQuantizer(_float_mlp(), algo_config=config)
        quantizer.process()
    return quantizer.model.model


def _without_accuracy_level(model):
    """The same file with `accuracy_level` 0 on every MatMulNBits (onnxruntime then computes
    in float32, as jaxonnx does at every level)."""
    plain = onnx.ModelProto()
    plain.CopyFrom(model)
    for node in plain.graph.node:
        for attribute in node.attribute:
            if node.op_type == "MatMulNBits" and attribute.name == "accuracy_level":
                attribute.i = 0
    return plain


def _assert_model_close(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * float(np.max(np.abs(expected))))


_QUANTIZER_CASES = {
    f"bits{bits}_{'sym' if symmetric else 'asym'}_{fmt}_level{level}_block{block}": (bits, symmetric, fmt, level, block)
    for bits, symmetric, fmt, level, block in [
        (4, False, "QOperator", None, 32),
        (4, True, "QOperator", 4, 64),
        (2, False, "QOperator", None, 32),
        (2, True, "QOperator", None, 64),
        (8, False, "QOperator", 4, 32),
        (8, True, "QOperator", None, 64),
        (4, False, "QDQ", None, 32),
        (4, True, "QDQ", None, 64),
    ]
}


@pytest.mark.parametrize("case", sorted(_QUANTIZER_CASES))
def test_matmul_nbits_quantizer_models_equal_onnxruntime(case, run_onnxruntime):
    bits, symmetric, fmt, level, block = _QUANTIZER_CASES[case]
    model = _nbits_quantized(bits, symmetric, fmt, level, block)
    written = {(n.domain or "ai.onnx", n.op_type) for n in model.graph.node}
    expected_ops = {("com.microsoft", "MatMulNBits")} if fmt == "QOperator" else {("ai.onnx", "DequantizeLinear")}
    if bits == 4 and fmt == "QOperator":
        expected_ops.add(("com.microsoft", "GatherBlockQuantized"))
    assert expected_ops <= written, written
    ids = np.random.default_rng(3).integers(0, 50, (2, 7)).astype(np.int64)
    if fmt == "QDQ":
        # onnxruntime fuses DequantizeLinear + MatMul into MatMulNBits at accuracy level 4
        # unless told otherwise: level 0 computes in float32, as jaxonnx does.
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "0")
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        (expected,) = session.run(None, {"ids": ids})
    else:
        (expected,) = run_onnxruntime(_without_accuracy_level(model), {"ids": ids})
    loaded = jaxonnx.load(model)
    for actual in _eagerly_and_jitted(loaded, loaded, lambda run: run(ids)[0]):
        _assert_model_close(actual, expected)
    if level == 4:  # onnxruntime's own int8-activation result: close, not equal (A's int8 rounding)
        (int8_activations,) = run_onnxruntime(model, {"ids": ids})
        assert np.max(np.abs(int8_activations - expected)) < 0.05 * np.max(np.abs(expected))


@pytest.mark.parametrize("quant_type", [0, 1], ids=["fp4", "nf4"])
def test_bnb4_quantizer_models_equal_onnxruntime(quant_type, run_onnxruntime):
    pytest.importorskip("onnxruntime.quantization")
    from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer

    quantizer = MatMulBnb4Quantizer(_float_mlp(), quant_type, 64)
    quantizer.process()
    model = quantizer.model.model
    assert sum(n.op_type == "MatMulBnb4" for n in model.graph.node) == 3
    ids = np.random.default_rng(4).integers(0, 50, (3, 5)).astype(np.int64)
    (expected,) = run_onnxruntime(model, {"ids": ids})
    loaded = jaxonnx.load(model)
    for actual in _eagerly_and_jitted(loaded, loaded, lambda run: run(ids)[0]):
        _assert_model_close(actual, expected)


def test_quantized_mlp_scales_fine_tune():
    """QLoRA-style: the gradient of a loss w.r.t. a 4-bit model's scales, through `load`,
    against central differences of the same model along a random direction."""
    model = _nbits_quantized(4, False, "QOperator", None, 32)
    loaded = jaxonnx.load(model)
    scale_names = [n.input[2] for n in model.graph.node if n.op_type == "MatMulNBits"]
    params = {
        name: numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == name)) for name in scale_names
    }
    ids = np.random.default_rng(5).integers(0, 50, (2, 4)).astype(np.int64)
    cotangent = np.random.default_rng(6).standard_normal((2, 4, 40)).astype(np.float32)

    def loss(params):
        return jnp.sum(loaded.apply(params, ids)[0] * cotangent)

    # The gradient and both losses in one compiled program; numpy for the rest (eager jnp
    # would compile a program per operation and shape).
    rng = np.random.default_rng(7)
    direction = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
    step = 1e-3
    plus = {k: v + step * direction[k] * np.abs(v) for k, v in params.items()}
    minus = {k: v - step * direction[k] * np.abs(v) for k, v in params.items()}
    grads, loss_plus, loss_minus = jax.jit(lambda p, a, b: (jax.grad(loss)(p), loss(a), loss(b)))(params, plus, minus)
    grads = {k: np.asarray(g) for k, g in grads.items()}
    numeric = (float(loss_plus) - float(loss_minus)) / (2 * step)
    analytic = sum(float(np.sum(grads[k] * direction[k] * np.abs(params[k]))) for k in params)
    assert any(float(np.max(np.abs(g))) > 0 for g in grads.values())
    # The loss is linear in each layer's scales but not jointly (the Relu, the next layer):
    # a central difference of step 1e-3 agrees to about 1e-5 relative, float32 rounding aside.
    assert abs(analytic - numeric) <= 2e-3 * abs(analytic), (analytic, numeric)


def _float_two_heads():
    """Two MatMuls reading one input (as attention's projections do), then a third."""
    rng = np.random.default_rng(13)
    weights = {
        "Wq": rng.standard_normal((32, 24)) * 0.3,
        "Wk": rng.standard_normal((32, 24)) * 0.3,
        "Bq": rng.standard_normal(24) * 0.1,
        "Wo": rng.standard_normal((24, 16)) * 0.3,
    }
    nodes = [
        helper.make_node("MatMul", ["X", "Wq"], ["q"]),
        helper.make_node("Add", ["q", "Bq"], ["qb"]),
        helper.make_node("MatMul", ["X", "Wk"], ["k"]),
        helper.make_node("Mul", ["qb", "k"], ["qk"]),
        helper.make_node("MatMul", ["qk", "Wo"], ["Y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "heads",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 32])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 16])],
        [numpy_helper.from_array(v.astype(np.float32), n) for n, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("weights", ["uint8", "int8_reduce_range", "uint8_per_channel"])
def test_quantize_dynamic_fused_models_equal_onnxruntime(weights, tmp_path, run_onnxruntime):
    """quantize_dynamic's file, then onnxruntime's own graph fusions written out (its
    `optimized_model_filepath`): DynamicQuantizeMatMul, and MatMulIntegerToFloat where one
    quantized input feeds several products. (int8 weights in 7 bits: uint8 activations by
    int8 weights saturate in onnxruntime's AVX2 kernel beyond that.)"""
    quantization = pytest.importorskip("onnxruntime.quantization")
    import onnxruntime

    onnx.save(_float_two_heads(), tmp_path / "float.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantization.quantize_dynamic(
            tmp_path / "float.onnx",
            tmp_path / "dynamic.onnx",
            per_channel="per_channel" in weights,
            weight_type=quantization.QuantType.QUInt8 if weights.startswith("uint8") else quantization.QuantType.QInt8,
            reduce_range="reduce_range" in weights,
        )
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "fused.onnx")
    onnxruntime.InferenceSession(str(tmp_path / "dynamic.onnx"), options, providers=["CPUExecutionProvider"])
    model = onnx.load(tmp_path / "fused.onnx")
    written = {n.op_type for n in model.graph.node if n.domain == _MS}
    assert {"DynamicQuantizeMatMul", "MatMulIntegerToFloat"} <= written, written
    x = np.random.default_rng(8).standard_normal((6, 32)).astype(np.float32)
    (expected,) = run_onnxruntime(model, {"X": x})
    loaded = jaxonnx.load(model)
    for actual in _eagerly_and_jitted(loaded, loaded, lambda run: run(x)[0]):
        _assert_model_close(actual, expected)


@pytest.mark.parametrize("activation, weight", [("QUInt16", "QInt8"), ("QInt16", "QInt4"), ("QUInt8", "QUInt4")])
def test_qdq_contrib_ops_models_equal_onnxruntime(activation, weight, tmp_path, run_onnxruntime):
    """quantize_static's QDQ format with `UseQDQContribOps`: com.microsoft QuantizeLinear and
    DequantizeLinear, 16-bit activations and 4-bit weights (per channel)."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    onnx.save(_float_two_heads(), tmp_path / "float.onnx")
    rng = np.random.default_rng(9)

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"X": rng.standard_normal((4, 32)).astype(np.float32)} for _ in range(3)])

        def get_next(self):
            return next(self.batches, None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantization.quantize_static(
            tmp_path / "float.onnx",
            tmp_path / "qdq.onnx",
            Calibration(),
            quant_format=quantization.QuantFormat.QDQ,
            activation_type=getattr(quantization.QuantType, activation),
            weight_type=getattr(quantization.QuantType, weight),
            per_channel=True,
            extra_options={"UseQDQContribOps": True},
        )
    model = onnx.load(tmp_path / "qdq.onnx")
    written = {n.op_type for n in model.graph.node if n.domain == _MS}
    assert {"QuantizeLinear", "DequantizeLinear"} <= written, written
    # Every value as an output too, to compare each node's result.
    declared = {o.name for o in model.graph.output}
    model.graph.output.extend(
        helper.make_empty_tensor_value_info(name)
        for node in model.graph.node
        for name in node.output
        if name not in declared
    )
    x = np.random.default_rng(10).standard_normal((5, 32)).astype(np.float32)
    names = [o.name for o in model.graph.output]
    expected = dict(zip(names, run_onnxruntime(model, {"X": x})))
    loaded = jaxonnx.load(model)
    for actual in _eagerly_and_jitted(loaded, loaded.run, lambda run: run({"X": x})):
        for name in names:
            got, want = np.asarray(actual[name]), expected[name]
            if want.dtype.kind in "iu":
                np.testing.assert_array_equal(got, want, err_msg=name)
            else:
                np.testing.assert_allclose(
                    got, want, rtol=1e-5, atol=1e-6 * float(np.max(np.abs(want)) + 1), err_msg=name
                )
