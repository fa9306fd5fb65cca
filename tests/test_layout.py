"""Channels-last activations between convolutions (``jaxonnx/_core/layout.py``).

Every op kind the runner hands channels-last values to (elementwise ops with constants of
every rank, Conv of each CPU formulation, the pools, BatchNormalization, Concat, Split,
reductions, Resize) sits in one graph: its outputs with ``channels_last`` on equal those
with it off and onnxruntime's, eagerly and under jit, with equal gradients. The compiled
graph keeps its transposes at the edges, and what cannot run channels-last (MaxPool's
Indices, a random op, an output) sees ONNX's layout.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx
from tests._eager import eager_and_jitted

_RNG = np.random.default_rng(0)


def _init(name, shape, scale=0.3):
    return numpy_helper.from_array((_RNG.standard_normal(shape) * scale).astype(np.float32), name)


def _const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(values, dtype), name)


def _layout_model():
    """A small network that passes through every channels-last rule."""
    c = 8
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),  # stem
        helper.make_node("BatchNormalization", ["c0", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"]),
        helper.make_node("HardSwish", ["bn"], ["a0"]),
        helper.make_node("Conv", ["a0", "wd"], ["dw"], group=c, pads=[2, 2, 2, 2], kernel_shape=[5, 5]),  # depthwise
        helper.make_node("PRelu", ["dw", "slope"], ["a1"]),
        helper.make_node("ReduceMean", ["a1", "spatial"], ["se_in"], keepdims=1),  # squeeze-and-excitation
        helper.make_node("Conv", ["se_in", "w_se"], ["se"]),
        helper.make_node("HardSigmoid", ["se"], ["gate"]),
        helper.make_node("Mul", ["a1", "gate"], ["a2"]),
        helper.make_node("Add", ["a2", "bias_c11"], ["a3"]),  # a (C, 1, 1) constant
        helper.make_node("Add", ["a3", "bias_w"], ["a4"]),  # a (W,) constant: broadcast along W
        helper.make_node("MaxPool", ["a4"], ["p0"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        helper.make_node("AveragePool", ["p0"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node("Conv", ["p1", "w_g"], ["g"], group=4, pads=[1, 1, 1, 1]),  # grouped, 2 per group
        helper.make_node("Concat", ["g", "p1"], ["cat"], axis=1),
        helper.make_node("Split", ["cat", "halves"], ["s0", "s1"], axis=1),
        helper.make_node("Sub", ["s0", "s1"], ["d"]),
        helper.make_node("Resize", ["d", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Relu", ["up"], ["r"]),
        helper.make_node("Less", ["r", "half"], ["small"]),
        helper.make_node("Where", ["small", "r", "up"], ["w"]),
        helper.make_node("Conv", ["w", "w_wide"], ["wide"]),  # 1x1, to the 64 channels Winograd needs
        helper.make_node("Conv", ["wide", "w_wino"], ["wino"], pads=[1, 1, 1, 1]),  # Winograd
        helper.make_node("Conv", ["wino", "w_pw"], ["pw"]),  # 1x1
        helper.make_node("GlobalMaxPool", ["pw"], ["gmax"]),
        helper.make_node("GlobalAveragePool", ["pw"], ["gavg"]),
        helper.make_node("Add", ["gmax", "gavg"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["y"]),
    ]
    initializers = [
        _init("w0", (c, 3, 3, 3)),
        _init("b0", (c,)),
        _init("bn_s", (c,)),
        _init("bn_b", (c,)),
        _init("bn_m", (c,)),
        numpy_helper.from_array(_RNG.uniform(0.5, 1.5, c).astype(np.float32), "bn_v"),
        _init("wd", (c, 1, 5, 5)),
        _init("slope", (c, 1, 1)),
        _const("spatial", [2, 3]),
        _init("w_se", (c, c, 1, 1)),
        _init("bias_c11", (c, 1, 1)),
        _init("bias_w", (8,)),
        _init("w_g", (c, 2, 3, 3)),
        _const("halves", [c, c]),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        _init("w_wide", (64, c, 1, 1)),
        _init("w_wino", (64, 64, 3, 3), 0.05),
        _init("w_pw", (16, 64, 1, 1), 0.1),
    ]
    graph = helper.make_graph(
        nodes,
        "layout",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 16, 16])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("a4", TensorProto.FLOAT, None),
        ],  # an inner output too
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.fixture(scope="module")
def model_proto():
    return _layout_model()


@pytest.fixture(scope="module")
def image():
    return np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype(np.float32)


def test_channels_last_equals_onnx_layout_and_onnxruntime(model_proto, image, run_onnxruntime):
    expected = run_onnxruntime(model_proto, {"x": image})
    on, off = jaxonnx.load(model_proto), jaxonnx.load(model_proto, channels_last=False)
    assert on.options["channels_last"] and not off.options["channels_last"]
    runs = [*eager_and_jitted(on), *eager_and_jitted(off)]
    for run in runs:
        for got, want in zip(run(image), expected):
            assert got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


def test_channels_last_gradients_equal_those_in_onnx_layout(model_proto, image):
    on, off = jaxonnx.load(model_proto), jaxonnx.load(model_proto, channels_last=False)

    def loss(model):
        return lambda params, x: sum(jnp.sum(y * y) for y in model.apply(params, x))

    grads = [jax.jit(jax.grad(loss(m), argnums=(0, 1)))(m.params, image) for m in (on, off)]
    (p_on, x_on), (p_off, x_off) = grads
    np.testing.assert_allclose(x_on, x_off, rtol=1e-4, atol=1e-5)
    assert set(p_on) == set(p_off) and "w_wino" in p_on
    for name in p_on:
        np.testing.assert_allclose(p_on[name], p_off[name], rtol=1e-4, atol=1e-5, err_msg=name)


def _activation_transposes(model, image) -> int:
    """The transposes of 4-D activations that XLA keeps in the compiled model (fused ones
    too), leaving out those that only move size-1 axes (bitcasts). Counted after XLA's
    simplifier, which cancels a transpose and its inverse (the stem reads the image
    channels-first: ``conv_cpu._stem_sum``). Compiled for the CPU, whose
    formulations these are, also where a GPU is the default device."""
    with jax.default_device(jax.devices("cpu")[0]):
        text = jax.jit(model).lower(jax.device_put(image, jax.devices("cpu")[0])).compile().as_text()
    shapes = re.findall(r"= f32\[(\d+),(\d+),(\d+),(\d+)\]\{[\d,]+\} transpose\(", text)
    return sum(1 for shape in shapes if sum(int(d) > 1 for d in shape[1:]) > 1)


def test_channels_last_keeps_transposes_at_the_edges(model_proto, image):
    # Channels-last: at most one into the stem and one out to the inner output `a4`.
    assert _activation_transposes(jaxonnx.load(model_proto), image) <= 2
    assert _activation_transposes(jaxonnx.load(model_proto, channels_last=False), image) > 2


def test_maxpool_indices_and_random_ops_see_onnx_layout(run_onnxruntime):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Dropout", ["c", "ratio", "train"], ["d", "mask"], seed=3),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 6])],
        [
            helper.make_tensor_value_info(n, t, None)
            for n, t in (
                ("y", TensorProto.FLOAT),
                ("i", TensorProto.INT64),
                ("d", TensorProto.FLOAT),
                ("mask", TensorProto.BOOL),
            )
        ],
        [
            _init("w", (3, 2, 3, 3)),
            numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
            numpy_helper.from_array(np.array(True), "train"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.random.default_rng(2).standard_normal((1, 2, 4, 6)).astype(np.float32)
    y, i = run_onnxruntime(proto, {"x": x})[:2]
    key = jax.random.key(0)
    on, off = jaxonnx.load(proto)(x, rng=key), jaxonnx.load(proto, channels_last=False)(x, rng=key)
    np.testing.assert_allclose(np.asarray(on[0]), y, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(on[1]), i)
    for a, b in zip(on, off):  # the same mask: drawn over ONNX's shape either way
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_an_error_after_a_convolution_names_onnx_shapes(image):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Reshape", ["c", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_init("w", (5, 3, 1, 1)), _const("shape", [7, -1])],
    )
    model = jaxonnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    with pytest.raises(Exception, match=r"float\[2, 5, 16, 16\]"):
        model(image)
