"""Classic model-zoo CNNs at opset 7-9, and each op the channels-last pass rewrites at every
registered version (``jaxonnx/_core/layout.py``).

onnx's model zoo ships AlexNet, VGG, ResNet-50, Inception v1/v2, DenseNet-121, SqueezeNet,
ShuffleNet and ZFNet at opsets 7-9; they once failed at load with default options because
the layout pass wrote ``Concat(axis=-1)``, which Concat before version 11 refuses. Here each
family's characteristic blocks are built with ``onnx.helper`` at tiny sizes with random
weights, loaded with default options, and compared to onnxruntime; and every op the pass
moves runs at each of its versions with ``channels_last`` on, equal to it off.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import jaxonnx
from jaxonnx._core.registry import REGISTRY
from tests._eager import eager_and_jitted


class _Net:
    """A graph under construction: ``node`` appends a node and returns its output name."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.initializers, self._count = [], [], 0

    def name(self, stem: str) -> str:
        self._count += 1
        return f"{stem}{self._count}"

    def weight(self, shape, scale=None, positive=False) -> str:
        name = self.name("w")
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        scale = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        values = self.rng.uniform(0.5, 1.5, shape) if positive else self.rng.standard_normal(shape) * scale
        self.initializers.append(numpy_helper.from_array(values.astype(np.float32), name))
        return name

    def const(self, values, dtype=np.int64) -> str:
        name = self.name("k")
        self.initializers.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def node(self, op_type, inputs, outputs=1, **attributes):
        names = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attributes))
        return names[0] if outputs == 1 else names

    def conv(self, x, c_in, c_out, k=3, stride=1, pad=None, group=1, bias=True):
        pad = k // 2 if pad is None else pad
        inputs = [x, self.weight((c_out, c_in // group, k, k))] + ([self.weight((c_out,), 0.1)] if bias else [])
        return self.node("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4, group=group)

    def batch_norm(self, x, c, opset):
        inputs = [
            x,
            self.weight((c,), positive=True),
            self.weight((c,), 0.1),
            self.weight((c,), 0.1),
            self.weight((c,), positive=True),
        ]
        # BatchNormalization-1..6 require consumed_inputs / take is_test; 7+ take neither.
        extra = {"consumed_inputs": [0, 0, 0, 1, 1]} if opset < 6 else {"is_test": 1} if opset < 7 else {}
        return self.node("BatchNormalization", inputs, epsilon=1e-5, **extra)

    def model(self, x_shape, output, opset):
        graph = helper.make_graph(
            self.nodes,
            "zoo",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
            self.initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 3 if opset <= 8 else 4
        return model


# -- the zoo families ----------------------------------------------------------------------


def _classifier(net, x, c, classes=10):
    """Global pooling, Flatten and Gemm: the zoo's classifier heads."""
    pooled = net.node("GlobalAveragePool", [x])
    flat = net.node("Flatten", [pooled], axis=1)
    logits = net.node("Gemm", [flat, net.weight((classes, c)), net.weight((classes,), 0.1)], transB=1)
    return net.node("Softmax", [logits], axis=1)


def alexnet(opset):
    """AlexNet (bvlc): large-stride stem, LRN after the early convolutions, Dropout and a
    Gemm classifier over the flattened features."""
    net = _Net(1)
    x = net.node("Relu", [net.conv("x", 3, 8, k=5, stride=2, pad=2)])
    x = net.node("LRN", [x], size=5, alpha=1e-4, beta=0.75, bias=1.0)
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    x = net.node("Relu", [net.conv(x, 8, 12, k=3, group=2)])
    x = net.node("LRN", [x], size=3, alpha=1e-4, beta=0.75, bias=1.0)
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    x = net.node("Flatten", [x], axis=1)
    x = net.node("Relu", [net.node("Gemm", [x, net.weight((16, 12 * 3 * 3)), net.weight((16,), 0.1)], transB=1)])
    x = net.node("Dropout", [x], ratio=0.5) if opset >= 7 else x
    x = net.node("Gemm", [x, net.weight((10, 16)), net.weight((10,), 0.1)], transB=1)
    return net.model((2, 3, 33, 33), net.node("Softmax", [x]), opset)


def zfnet(opset):
    """ZFNet-512: a 7x7 stride-2 stem, LRN, padded max pools, a Reshape to a Gemm."""
    net = _Net(2)
    x = net.node("Relu", [net.conv("x", 3, 8, k=7, stride=2, pad=1)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = net.node("LRN", [x], size=3, alpha=1e-4, beta=0.75, bias=1.0)
    x = net.node("Relu", [net.conv(x, 8, 12, k=5, stride=2, pad=2)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = net.node("Reshape", [x, net.const([2, -1])])
    x = net.node("Gemm", [x, net.weight((10, 12 * 2 * 2)), net.weight((10,), 0.1)], transB=1)
    return net.model((2, 3, 29, 29), x, opset)


def vgg(opset):
    """VGG-16 with batch norm: stacks of 3x3 convolutions, BatchNormalization, max pools."""
    net = _Net(3)
    x, c = "x", 3
    for width in (8, 16):
        for _ in range(2):
            x = net.node("Relu", [net.batch_norm(net.conv(x, c, width), width, opset)])
            c = width
        x = net.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    return net.model((2, 3, 16, 16), _classifier(net, x, c), opset)


def resnet50(opset):
    """ResNet-50 v1: bottlenecks (1x1, 3x3, 1x1 with BatchNormalization), a projection
    shortcut with stride, the residual Add, Relu."""
    net = _Net(4)
    x = net.node("Relu", [net.batch_norm(net.conv("x", 3, 8, k=7, stride=2, pad=3, bias=False), 8, opset)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 8
    for width, stride in ((4, 1), (8, 2)):
        y = net.node("Relu", [net.batch_norm(net.conv(x, c, width, k=1, bias=False), width, opset)])
        y = net.node("Relu", [net.batch_norm(net.conv(y, width, width, stride=stride, bias=False), width, opset)])
        y = net.batch_norm(net.conv(y, width, 4 * width, k=1, bias=False), 4 * width, opset)
        shortcut = net.batch_norm(net.conv(x, c, 4 * width, k=1, stride=stride, bias=False), 4 * width, opset)
        x, c = net.node("Relu", [net.node("Add", [y, shortcut])]), 4 * width
    return net.model((2, 3, 32, 32), _classifier(net, x, c), opset)


def _inception(net, x, c, widths, opset, batch_norm=False):
    """An inception module: 1x1, 1x1-3x3, 1x1-5x5 (or two 3x3), pool-1x1, concatenated."""

    def unit(y, c_in, c_out, k=1):
        y = net.conv(y, c_in, c_out, k=k, bias=not batch_norm)
        return net.node("Relu", [net.batch_norm(y, c_out, opset) if batch_norm else y])

    a, b, d, e = widths
    branch_1 = unit(x, c, a)
    branch_3 = unit(unit(x, c, b), b, b, k=3)
    branch_5 = unit(unit(unit(x, c, d), d, d, k=3), d, d, k=3) if batch_norm else unit(unit(x, c, d), d, d, k=5)
    pool = net.node(
        "AveragePool" if batch_norm else "MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]
    )
    branch_pool = unit(pool, c, e)
    return net.node("Concat", [branch_1, branch_3, branch_5, branch_pool], axis=1), a + b + d + e


def inception_v1(opset):
    """Inception v1 (GoogLeNet): LRN stem, two inception modules with 5x5 branches."""
    net = _Net(5)
    x = net.node("Relu", [net.conv("x", 3, 8, k=7, stride=2, pad=3)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1])
    x = net.node("LRN", [x], size=5, alpha=1e-4, beta=0.75, bias=1.0)
    x, c = _inception(net, x, 8, (4, 6, 2, 2), opset)
    x, c = _inception(net, x, c, (6, 4, 4, 2), opset)
    return net.model((2, 3, 24, 24), _classifier(net, x, c), opset)


def inception_v2(opset):
    """Inception v2 (BN-Inception): BatchNormalization after each conv, 5x5 as two 3x3,
    average-pool branch."""
    net = _Net(6)
    x = net.node("Relu", [net.batch_norm(net.conv("x", 3, 8, k=7, stride=2, pad=3, bias=False), 8, opset)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    x, c = _inception(net, x, 8, (4, 4, 4, 2), opset, batch_norm=True)
    x, c = _inception(net, x, c, (2, 4, 2, 4), opset, batch_norm=True)
    return net.model((2, 3, 24, 24), _classifier(net, x, c), opset)


def densenet121(opset):
    """DenseNet-121: dense blocks (BN-Relu-1x1-BN-Relu-3x3, Concat onto the input), a
    transition (BN-Relu-1x1-AveragePool)."""
    net = _Net(7)
    x = net.node("Relu", [net.batch_norm(net.conv("x", 3, 8, k=7, stride=2, pad=3, bias=False), 8, opset)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c, growth = 8, 4
    for block in range(2):
        for _ in range(3):
            y = net.conv(net.node("Relu", [net.batch_norm(x, c, opset)]), c, 2 * growth, k=1, bias=False)
            y = net.conv(net.node("Relu", [net.batch_norm(y, 2 * growth, opset)]), 2 * growth, growth, bias=False)
            x, c = net.node("Concat", [x, y], axis=1), c + growth
        if block == 0:
            x = net.conv(net.node("Relu", [net.batch_norm(x, c, opset)]), c, c // 2, k=1, bias=False)
            x, c = net.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2]), c // 2
    x = net.node("Relu", [net.batch_norm(x, c, opset)])
    return net.model((2, 3, 32, 32), _classifier(net, x, c), opset)


def squeezenet(opset):
    """SqueezeNet 1.1: fire modules (squeeze 1x1, expand 1x1 and 3x3, Concat), Dropout, a
    1x1 conv classifier and GlobalAveragePool."""
    net = _Net(8)
    x = net.node("Relu", [net.conv("x", 3, 8, stride=2, pad=0)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])
    c = 8
    for squeeze, expand in ((2, 4), (3, 6)):
        s = net.node("Relu", [net.conv(x, c, squeeze, k=1)])
        e1 = net.node("Relu", [net.conv(s, squeeze, expand, k=1)])
        e3 = net.node("Relu", [net.conv(s, squeeze, expand)])
        x, c = net.node("Concat", [e1, e3], axis=1), 2 * expand
    x = net.node("Dropout", [x], ratio=0.5)
    x = net.node("Relu", [net.conv(x, c, 10, k=1)])
    x = net.node("GlobalAveragePool", [x])
    x = net.node("Reshape", [x, net.const([2, 10])])
    return net.model((2, 3, 23, 23), net.node("Softmax", [x]), opset)


def shufflenet(opset):
    """ShuffleNet v1: grouped 1x1 convolutions, a channel shuffle (Reshape, Transpose,
    Reshape), a depthwise 3x3, and stride-2 units that Concat an AveragePool shortcut."""
    net = _Net(9)
    x = net.node("Relu", [net.conv("x", 3, 8, stride=2)])
    x = net.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c, groups, size = 8, 2, 8
    for stride in (2, 1):
        out = 8 if stride == 2 else c
        y = net.node("Relu", [net.batch_norm(net.conv(x, c, 8, k=1, group=groups, bias=False), 8, opset)])
        y = net.node("Reshape", [y, net.const([2, groups, 8 // groups, size, size])])
        y = net.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
        y = net.node("Reshape", [y, net.const([2, 8, size, size])])
        y = net.batch_norm(net.conv(y, 8, 8, stride=stride, group=8, bias=False), 8, opset)
        size //= stride
        y = net.batch_norm(net.conv(y, 8, out, k=1, group=groups, bias=False), out, opset)
        if stride == 2:
            shortcut = net.node("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
            x, c = net.node("Relu", [net.node("Concat", [shortcut, y], axis=1)]), c + out
        else:
            x = net.node("Relu", [net.node("Add", [x, y])])
    return net.model((2, 3, 32, 32), _classifier(net, x, c), opset)


_FAMILIES = [alexnet, zfnet, vgg, resnet50, inception_v1, inception_v2, densenet121, squeezenet, shufflenet]


@pytest.mark.parametrize("opset", [7, 8, 9])
@pytest.mark.parametrize("family", _FAMILIES, ids=lambda f: f.__name__)
def test_zoo_cnn_with_default_options_equals_onnxruntime(family, opset, run_onnxruntime):
    proto = family(opset)
    shape = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    image = np.random.default_rng(opset).standard_normal(shape).astype(np.float32)
    (expected,) = run_onnxruntime(proto, {"x": image})
    model = jaxonnx.load(proto)
    assert model.options["channels_last"]
    runs = eager_and_jitted(model)
    for run in runs:
        (got,) = run(image)
        assert got.shape == expected.shape
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)


# -- each op the layout pass rewrites, at every registered version --------------------------


def _versions(op_type):
    return REGISTRY.supported_ops()[op_type]


def _after_convs(version, build):
    """A graph at opset ``version``: two convolutions (whose outputs the runner holds
    channels-last) and ``build(net, a, b)``'s op on them."""
    net = _Net(version)
    a = net.conv("x", 3, 4)
    b = net.conv("x", 3, 4, k=1)
    outputs = build(net, a, b)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    graph = helper.make_graph(
        net.nodes,
        "op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 5])],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs],
        net.initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])


def _split(net, a, b, version):
    if version >= 18:
        return net.node("Split", [a], outputs=2, axis=1, num_outputs=2)
    if version >= 13:
        return net.node("Split", [a, net.const([1, 3])], outputs=2, axis=1)
    return net.node("Split", [a], outputs=2, axis=1, split=[1, 3])


def _resize(net, a, b, version):
    scales = net.const([1, 1, 2, 1.5], np.float32)
    if version == 10:
        return net.node("Resize", [a, scales], mode="nearest")
    roi = net.const([], np.float32) if version == 11 else ""
    return net.node("Resize", [a, roi, scales], mode="linear")


def _reduction(op_type):
    def build(net, a, b, version):
        outputs = []
        for axes, keepdims in (([2, 3], 1), ([1], 1), ([3], 0)):
            if version >= 18 or (op_type == "ReduceSum" and version >= 13):
                outputs.append(net.node(op_type, [a, net.const(axes)], keepdims=keepdims))
            else:
                outputs.append(net.node(op_type, [a], axes=axes, keepdims=keepdims))
        return outputs

    return build


def _pools(op_type):
    def build(net, a, b, version):
        if op_type.startswith("Global"):
            return net.node(op_type, [a])
        return net.node(op_type, [a], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1])

    return build


_REWRITTEN = {
    "Conv": lambda net, a, b, v: net.conv(a, 4, 6, k=3, group=2),
    "BatchNormalization": lambda net, a, b, v: net.batch_norm(a, 4, v),
    "Concat": lambda net, a, b, v: net.node("Concat", [a, b, a], axis=1),
    "Split": _split,
    "Resize": _resize,
    **{op: _pools(op) for op in ("MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool")},
    **{
        op: _reduction(op)
        for op in (
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceProd",
            "ReduceSum",
            "ReduceSumSquare",
        )
    },
}
# Ops the pass hands back in ONNX's layout (an axis it does not move): they must see it so.
_HANDED_BACK = {
    "Softmax": lambda net, a, b, v: net.node("Softmax", [a], axis=1),
    "LogSoftmax": lambda net, a, b, v: net.node("LogSoftmax", [a], axis=1),
    "LRN": lambda net, a, b, v: net.node("LRN", [a], size=3),
    "Flatten": lambda net, a, b, v: net.node("Flatten", [a], axis=2),
    "Transpose": lambda net, a, b, v: net.node("Transpose", [a], perm=[0, 2, 3, 1]),
    "Pad": lambda net, a, b, v: (
        net.node("Pad", [a], paddings=[0, 1, 0, 2, 0, 0, 1, 0])
        if v < 2
        else net.node("Pad", [a], pads=[0, 1, 0, 2, 0, 0, 1, 0])
        if v < 11
        else net.node("Pad", [a, net.const([0, 1, 0, 2, 0, 0, 1, 0])])
    ),
}


def _elementwise(op_type):
    """Unary ops on a channels-last value; binary and variadic ones on two of them, and from
    their numpy-broadcasting version on also against constants of ranks 1 and 3."""

    def build(net, a, b, version):
        logical = op_type in ("And", "Or", "Xor") or (op_type == "Equal" and version < 11)  # bool/int only
        if logical:
            a, b = net.node("Greater", [a, b]), net.node("Greater", [b, net.conv("x", 3, 4, k=3)])
        if op_type == "Where":
            condition = net.node("Greater", [a, b])
            return [net.node("Where", [condition, a, b]), net.node("Where", [condition, a, net.weight((4, 1, 1))])]
        if op_type == "Clip":
            if version < 11:
                return net.node("Clip", [a], min=-0.5, max=0.5)
            return net.node("Clip", [a, net.const(-0.5, np.float32), net.const(0.5, np.float32)])
        attributes = {"fmod": 1} if op_type == "Mod" else {}
        if op_type in (
            "Abs",
            "Relu",
            "Sigmoid",
            "Tanh",
            "Exp",
            "Neg",
            "Floor",
            "Ceil",
            "Reciprocal",
            "Sqrt",
            "Log",
            "LeakyRelu",
            "Elu",
            "Selu",
            "HardSigmoid",
            "Softsign",
            "Softplus",
            "Identity",
        ):
            if version < 6 and op_type not in ("Identity", "Softsign", "Softplus"):
                attributes["consumed_inputs"] = [0]
            return net.node(op_type, [a], **attributes)
        if op_type in ("Sum", "Mean", "Max", "Min"):
            inputs = [a, b, a]
        else:
            inputs = [a, b]
        if version < 6 and op_type in ("Add", "Sub", "Mul", "Div", "Sum", "Mean", "Max", "Min", "PRelu"):
            attributes["consumed_inputs"] = [0] * len(inputs) if op_type not in ("PRelu",) else [0]
        outputs = [net.node(op_type, inputs, **attributes)]
        if version >= _BROADCASTS_FROM[op_type]:
            for shape in ((4, 1, 1), (5,)):
                other = net.weight(shape)
                if logical:
                    other = net.node("Greater", [other, net.const(0.0, np.float32)])
                outputs.append(net.node(op_type, [a, other], **attributes))
        return outputs

    return build


_BROADCASTS_FROM = {
    "Add": 7,
    "Sub": 7,
    "Mul": 7,
    "Div": 7,
    "Pow": 7,
    "Max": 8,
    "Min": 8,
    "Sum": 8,
    "Mean": 8,
    "PRelu": 7,
    "Equal": 7,
    "Greater": 7,
    "Less": 7,
    "GreaterOrEqual": 12,
    "LessOrEqual": 12,
    "And": 7,
    "Or": 7,
    "Xor": 7,
    "Mod": 10,
}
_UNARY = (
    "Abs",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Neg",
    "Floor",
    "Ceil",
    "Reciprocal",
    "Sqrt",
    "Log",
    "LeakyRelu",
    "Elu",
    "Selu",
    "HardSigmoid",
    "Softsign",
    "Softplus",
    "Identity",
)
_ELEMENTWISE = {op: _elementwise(op) for op in (*_BROADCASTS_FROM, *_UNARY, "Where", "Clip")}


def _cases():
    for table in (_REWRITTEN, _HANDED_BACK, _ELEMENTWISE):
        for op_type, build in table.items():
            for version in _versions(op_type):
                yield pytest.param(op_type, version, build, id=f"{op_type}-{version}")


@pytest.mark.parametrize(("op_type", "version", "build"), list(_cases()))
def test_op_at_each_version_channels_last_equals_onnx_layout(op_type, version, build):
    proto = _after_convs(version, lambda net, a, b: build(net, a, b, version))
    assert any(node.op_type == op_type for node in proto.graph.node)
    image = np.random.default_rng(version).standard_normal((2, 3, 6, 5)).astype(np.float32)
    on, off = jaxonnx.load(proto), jaxonnx.load(proto, channels_last=False)
    expected = off(image)
    for got, want in zip(on(image), expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
