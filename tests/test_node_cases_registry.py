"""onnx's own node test cases for our ops, run node by node through the registry.

``onnx.backend.test.case.node.collect_testcases`` builds the cases in memory (no files).
Every case whose graph uses only our ops and only tensors is run: each node resolved by
the model's opset_import, inputs fed as numpy and as JAX arrays, and every output
compared exactly (shape, dtype, bits) with onnx's expected output.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import onnx
import pytest
from _node_cases import case_ops, node_cases, tensor_graph
from _spec import assert_exact

import jaxonnx
from jaxonnx._core.loading import tensor_to_numpy

OUR_OPS = set(jaxonnx.supported_ops())  # the registry decides which cases run
SEED_OPS = {"Compress", "Flatten", "GatherElements", "Slice", "Where"}
# The seed ops, node by node through the registry, fed numpy and JAX (every registered op's
# cases run through onnx's own BackendTest in test_backend.py).
CASES = [c for c in node_cases() if case_ops(c) <= SEED_OPS | {"Constant", "Identity"} and tensor_graph(c)]


def test_the_cases_are_all_there():
    # onnx 1.23 has 27 cases built from the five seed ops alone (plus Constant and Identity
    # ones); a smaller number means the selection (or onnx) lost some.
    seeds = [c for c in CASES if case_ops(c) <= SEED_OPS]
    assert len(seeds) >= 27


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


def _all_fold(model: onnx.ModelProto) -> bool:
    opset = {o.domain or "": o.version for o in model.opset_import}[""]
    return all(jaxonnx.get_op(n.op_type, opset, n.domain).contract.folds for n in model.graph.node)


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
        if not _all_fold(case.model):
            kind = "jax"  # ops written with jax.lax take and give JAX arrays
        for actual, want in zip(outputs, expected):
            if want.dtype.kind in "fc" and not case_ops(case) <= SEED_OPS | {"Constant", "Identity"}:
                # Arithmetic ops: onnx's own tolerance for the case (the seed ops only move values: exact).
                np.testing.assert_allclose(np.asarray(actual), want, rtol=case.rtol, atol=case.atol)
                assert np.asarray(actual).dtype == want.dtype
            else:
                assert_exact(actual, want, kind=kind)
