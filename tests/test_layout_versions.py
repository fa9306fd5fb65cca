"""Every rewrite the layout pass makes is valid at the node's own version.

For each op version whose contract declares a layout trait (``layout=`` or
``prefers_channels_last``, enumerated from the registry), one small model runs a Conv into
the op at an opset where the op resolves to that version (its since_version, or the first
opset that has the ops feeding it). With the layout pass on (the default), the op must
receive the Conv's output channels-last, and its outputs must equal those with
``channels_last=False`` and onnxruntime's (where onnxruntime runs that opset). Inputs and
attributes are made per trait kind; an elementwise op takes its attributes and scalar
inputs from its first float example in ``tests/op_examples``.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import jaxonnx
import jaxonnx.ops  # noqa: F401  (registers the ops)
from jaxonnx._core import layout
from jaxonnx._core.registry import REGISTRY
from tests.op_examples import all_examples

_BATCH, _IN_CHANNELS, _CHANNELS, _HEIGHT, _WIDTH = 2, 3, 4, 3, 5
#: The first opset whose Greater (which turns the Conv's output into a bool operand) is
#: elementwise numpy-style, so that it hands its result on channels-last.
_BOOL_FEEDER_OPSET = min(
    since for since, op in REGISTRY._versions["", "Greater"].items() if op.contract.layout == "elementwise"
)
#: onnxruntime runs models of opset 7 on (and warns of older ones, whose kernels it mostly lacks).
_ONNXRUNTIME_OLDEST_OPSET = 7


def _traited_versions():
    for (domain, op_type), versions in sorted(REGISTRY._versions.items()):
        for since, op in sorted(versions.items()):
            if op.contract.layout or op.contract.prefers_channels_last:
                yield pytest.param(op, id=f"{domain + '.' if domain else ''}{op_type}-{since}")


def _allowed_types(op, formal) -> list[str]:
    constraints = {c.type_param_str: list(c.allowed_type_strs) for c in op.schema.type_constraints}
    return constraints.get(formal.type_str, [formal.type_str])


class _ModelBuilder:
    """The nodes and initializers of a model whose input ``x`` runs through a 1x1 Conv."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes = [helper.make_node("Conv", ["x", "conv_w"], ["conv"])]
        self.initializers: list[onnx.TensorProto] = []
        self.constant("conv_w", (_CHANNELS, _IN_CHANNELS, 1, 1), np.float32)

    def constant(self, name, shape, dtype):
        values = self.rng.standard_normal(shape)
        array = (values > 0) if dtype == np.bool_ else values.astype(dtype)
        tensor = numpy_helper.from_array(np.asarray(array), name)
        self.initializers.append(tensor)
        return tensor

    def bool_from_conv(self) -> str:
        self.initializers.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero"))
        self.nodes.append(helper.make_node("Greater", ["conv", "zero"], ["conv_positive"]))
        return "conv_positive"


def _example_for(op):
    """The op's first example valid at its version whose inputs are float32 or bool."""
    for example in all_examples().get((op.domain, op.op_type), []):
        if example.versions is not None and op.since_version not in example.versions:
            continue
        if not set(example.attributes) <= set(op.schema.attributes):
            continue
        if all(v is None or np.asarray(v).dtype in (np.float32, np.bool_) for v in example.inputs):
            return example
    return None


def _elementwise(op, builder):
    example = _example_for(op)
    formals = op.schema.inputs
    values = example.inputs if example else [None] * len(formals)
    attributes = dict(example.attributes) if example else {}
    count = (
        len(values) if example else sum(f.option != onnx.defs.OpSchema.FormalParameterOption.Optional for f in formals)
    )
    first = _allowed_types(op, formals[0])
    float_input = "tensor(float)" in first and (values[0] is None or np.asarray(values[0]).dtype == np.float32)
    assert float_input or "tensor(bool)" in first, f"{op.name}: no float or bool input 0 to feed from a Conv"
    names = ["conv" if float_input else builder.bool_from_conv()]
    for index in range(1, count):
        value = values[index]
        if value is None and example is not None:
            names.append("")
        elif value is not None and np.ndim(value) == 0:  # a scalar operand (Clip's bounds) as the example has it
            builder.initializers.append(numpy_helper.from_array(np.asarray(value), f"in{index}"))
            names.append(f"in{index}")
        else:  # (C, 1, 1): broadcast numpy-style along the channels, moved last by the pass
            dtype = np.asarray(value).dtype if value is not None else np.float32
            names.append(builder.constant(f"in{index}", (_CHANNELS, 1, 1), dtype).name)
    while names and names[-1] == "":
        names.pop()
    return [helper.make_node(op.op_type, names, ["y"], **attributes)], ["y"]


def _along_axis(op, builder):
    output_type = op.schema.outputs[0].type_str
    nodes, outputs = [], []
    for axis, size in ((1, _CHANNELS), (2, _HEIGHT)):
        names = []
        joined = 0
        for formal in op.schema.inputs:
            if formal.type_str == output_type:  # the values joined or cut
                names.append("conv")
                if formal.option == onnx.defs.OpSchema.FormalParameterOption.Variadic:  # joined with another
                    shape = [_BATCH, _CHANNELS, _HEIGHT, _WIDTH]
                    shape[axis] = 2
                    names.append(builder.constant(f"other{axis}", shape, np.float32).name)
                    joined = 1
            else:  # the sizes cut off
                names.append(builder.constant(f"sizes{axis}", (2,), np.int64).name)
                builder.initializers[-1].CopyFrom(numpy_helper.from_array(np.array([1, size - 1]), f"sizes{axis}"))
        node_outputs = [f"y{axis}"] if joined else [f"y{axis}_0", f"y{axis}_1"]
        nodes.append(helper.make_node(op.op_type, names, node_outputs, axis=axis))
        outputs += node_outputs
    return nodes, outputs


def _reduces(op, builder):
    axes = np.array([1, 3], np.int64)
    if any(formal.name == "axes" for formal in op.schema.inputs):
        builder.initializers.append(numpy_helper.from_array(axes, "axes"))
        return [helper.make_node(op.op_type, ["conv", "axes"], ["y"])], ["y"]
    return [helper.make_node(op.op_type, ["conv"], ["y"], axes=[int(a) for a in axes])], ["y"]


def _per_axis(op, builder):
    # Per-axis values that differ per axis: a misplaced one changes the output's shape.
    roi = numpy_helper.from_array(np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32), "roi")
    scales = numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales")
    builder.initializers += [roi, scales]
    given = {"roi": "roi", "scales": "scales"}
    names = [given.get(formal.name, "") for formal in op.schema.inputs[1:]]
    while names and names[-1] == "":
        names.pop()
    return [helper.make_node(op.op_type, ["conv", *names], ["y"])], ["y"]


def _channels_last_op(op, builder):
    builder.constant("w", (3, _CHANNELS, 3, 3), np.float32)
    return [helper.make_node(op.op_type, ["conv", "w"], ["y"], pads=[1, 1, 1, 1])], ["y"]


def _model(op):
    builder = _ModelBuilder(seed=op.since_version)
    kind = op.contract.layout
    make = {"elementwise": _elementwise, "along_axis": _along_axis, "reduces": _reduces, "": _channels_last_op}.get(
        kind if isinstance(kind, str) else "per_axis", _per_axis
    )
    nodes, outputs = make(op, builder)
    for node in nodes:
        node.domain = op.domain
    needs_bool_feeder = any(n.op_type == "Greater" for n in builder.nodes)
    opset = max(op.since_version, _BOOL_FEEDER_OPSET if needs_bool_feeder else 1)
    assert REGISTRY.get_op(op.op_type, opset, op.domain) is op, f"{op.name} does not run at opset {opset}"
    graph = helper.make_graph(
        builder.nodes + nodes,
        op.name,
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [_BATCH, _IN_CHANNELS, _HEIGHT, _WIDTH])],
        [onnx.ValueInfoProto(name=name) for name in outputs],
        builder.initializers,
    )
    opsets = [helper.make_opsetid("", opset)] + (
        [helper.make_opsetid(op.domain, op.since_version)] if op.domain else []
    )
    return helper.make_model(graph, opset_imports=opsets, ir_version=8), opset


def _onnxruntime_outputs(proto, opset, feed):
    """onnxruntime's outputs, or None for an opset older than it runs."""
    import onnxruntime

    if opset < _ONNXRUNTIME_OLDEST_OPSET:
        return None
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def _record_rewrites(monkeypatch, watched) -> list[bool]:
    """Whether the layout pass rewrote each node it saw whose op is ``watched(op)``, in order."""
    rewritten: list[bool] = []
    layout_run = layout.run

    def recording_run(node, *args, **kwargs):
        results = layout_run(node, *args, **kwargs)
        if watched(node.op):
            rewritten.append(results is not None)
        return results

    monkeypatch.setattr(layout, "run", recording_run)
    return rewritten


@pytest.mark.parametrize("op", list(_traited_versions()))
def test_rewritten_op_runs_at_its_oldest_version(op, monkeypatch):
    proto, opset = _model(op)
    x = np.random.default_rng(0).standard_normal((_BATCH, _IN_CHANNELS, _HEIGHT, _WIDTH)).astype(np.float32)
    rewritten = _record_rewrites(monkeypatch, lambda node_op: node_op is op)
    channels_last = jaxonnx.load(proto)(x)
    assert rewritten and all(rewritten), f"{op.name}: the layout pass did not hand it channels-last values"
    onnx_layout = jaxonnx.load(proto, channels_last=False)(x)
    expected = _onnxruntime_outputs(proto, opset, {"x": x})
    for index, (got, want) in enumerate(zip(channels_last, onnx_layout)):
        message = f"{op.name}, output {index}"
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6, err_msg=message)
        if expected is not None:
            np.testing.assert_allclose(np.asarray(got), expected[index], rtol=1e-4, atol=1e-5, err_msg=message)


@pytest.mark.parametrize("declared", [True, False])
def test_an_op_of_another_domain_is_rewritten_by_its_trait_alone(declared, monkeypatch):
    """An op of the test's own (in a copy of the registry) gets channels-last values exactly
    when it declares ``layout="elementwise"``: the pass reads the trait, not the op's name."""
    from jaxonnx.ops._helpers.schemas import contrib_schema

    schema = contrib_schema(
        "ScratchHalve", "y = x / 2.", [("x", "T")], [("y", "T")], [("T", ["tensor(float)"])], domain="com.example"
    )
    registry = REGISTRY.copy()
    declared_layout = {"layout": "elementwise"} if declared else {}
    registry.register("ScratchHalve", 1, domain="com.example", schema=schema, **declared_layout)(lambda x: x / 2)
    builder = _ModelBuilder(seed=0)
    graph = helper.make_graph(
        [*builder.nodes, helper.make_node("ScratchHalve", ["conv"], ["y"], domain="com.example")],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [_BATCH, _IN_CHANNELS, _HEIGHT, _WIDTH])],
        [onnx.ValueInfoProto(name="y")],
        builder.initializers,
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.example", 1)]
    proto = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    rewritten = _record_rewrites(monkeypatch, lambda node_op: node_op.op_type == "ScratchHalve")
    x = np.random.default_rng(0).standard_normal((_BATCH, _IN_CHANNELS, _HEIGHT, _WIDTH)).astype(np.float32)
    got = jaxonnx.load(proto, registry=registry)(x)[0]
    assert rewritten == [declared]
    want = jaxonnx.load(proto, registry=registry, channels_last=False)(x)[0]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
