"""The ``ignores_unknown_attributes`` trait: loading reads it, never an op's name.

onnxruntime runs its former contrib LayerNormalization and SimplifiedLayerNormalization
with attributes their schemas lack (``tests/test_leniencies.py`` runs those). Here an op of
the test's own, registered in the default domain of a copy of the registry, is lenient
exactly when it declares the trait.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import jaxonnx
from jaxonnx._core.registry import REGISTRY
from jaxonnx.ops._helpers.schemas import attribute, contrib_schema


def _scale_model():
    node = helper.make_node("ScratchScale", ["x"], ["y"], "scale", factor=3.0, epsion=1e-5)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _registry_with_scale(**declared):
    schema = contrib_schema(
        "ScratchScale",
        "y = x * factor, a test op.",
        inputs=[("x", "T")],
        outputs=[("y", "T")],
        type_constraints=[("T", ["tensor(float)"])],
        attributes=[attribute("factor", 1.0, "The factor.")],
        domain="",
    )
    registry = REGISTRY.copy()
    registry.register("ScratchScale", 1, schema=schema, **declared)(lambda x, *, factor=1.0: x * factor)
    return registry


def test_an_op_that_ignores_unknown_attributes_drops_them_with_a_warning():
    registry = _registry_with_scale(ignores_unknown_attributes=True)
    with pytest.warns(jaxonnx.LeniencyWarning, match=r"node 'scale' \(ScratchScale\): attribute 'epsion' ignored"):
        model = jaxonnx.load(_scale_model(), registry=registry)
    np.testing.assert_allclose(np.asarray(model(np.array([1.0, 2.0], np.float32))[0]), [3.0, 6.0])


def test_an_op_without_the_trait_refuses_an_unknown_attribute():
    registry = _registry_with_scale()
    with pytest.raises(jaxonnx.JaxOnnxError, match="epsion"):
        jaxonnx.load(_scale_model(), registry=registry)(np.array([1.0, 2.0], np.float32))
