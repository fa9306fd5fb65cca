"""onnx's own node test cases for our ops, run node by node through the registry.

``onnx.backend.test.case.node.collect_testcases`` builds the cases in memory (no files).
Every case whose graph uses only our ops and only tensors is run: each node resolved by
the model's opset_import, inputs fed as numpy and as JAX arrays, and every output
compared exactly (shape, dtype, bits) with onnx's expected output.
"""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from _spec import assert_exact
from onnx.backend.test.case.node import collect_testcases

import jaxonnx
from jaxonnx.ops._constant import tensor_to_numpy

FIVE_OPS = {"Compress", "Flatten", "GatherElements", "Slice", "Where"}
OUR_OPS = FIVE_OPS | {"Constant", "Identity"}


def _cases():
    # Building onnx's cases for other ops warns (divisions by zero in their expected values).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cases = collect_testcases(None)  # never filtered: the first call fixes the module-level list
    selected = []
    for case in cases:
        if case.model is None or case.kind != "node":
            continue
        graph = case.model.graph
        values = [*graph.input, *graph.output]
        if {n.op_type for n in graph.node} <= OUR_OPS and all(v.type.HasField("tensor_type") for v in values):
            selected.append(case)
    return sorted(selected, key=lambda c: c.name)


CASES = _cases()


def test_the_cases_are_all_there():
    # onnx 1.23 has 27 cases built from the five ops alone (plus Constant and Identity ones);
    # a smaller number means the selection (or onnx) lost some.
    five = [c for c in CASES if {n.op_type for n in c.model.graph.node} <= FIVE_OPS]
    assert len(five) >= 27
    used = {n.op_type for c in CASES for n in c.model.graph.node}
    assert used == OUR_OPS


def _attributes(node: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _run(model: onnx.ModelProto, feeds: dict) -> list:
    opset = {o.domain or "": o.version for o in model.opset_import}[""]
    env = dict(feeds)
    for node in model.graph.node:
        op = jaxonnx.get_op(node.op_type, opset, node.domain)
        assert op.since_version <= opset
        inputs = [env[name] if name else None for name in node.input]
        outputs = op(*inputs, **_attributes(node))
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        env.update(zip(node.output, outputs))
    return [env[o.name] for o in model.graph.output]


def _as_numpy(value):
    return tensor_to_numpy(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("feed", ["numpy", "jax"])
def test_onnx_node_case(case, feed):
    names = [i.name for i in case.model.graph.input]
    for inputs, expected in case.data_sets:
        inputs = [_as_numpy(x) for x in inputs]
        expected = [_as_numpy(x) for x in expected]
        if feed == "jax":
            inputs = [jnp.asarray(x) for x in inputs]
        outputs = _run(case.model, dict(zip(names, inputs)))
        assert len(outputs) == len(expected)
        # numpy in, numpy out; any JAX input, JAX out (a Constant's output stays numpy).
        kind = "jax" if feed == "jax" and inputs else "numpy"
        for actual, want in zip(outputs, expected):
            assert_exact(actual, want, kind=kind)
