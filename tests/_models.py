"""Small ONNX models for the transformation tests, built with ``onnx.helper``."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MIN = np.iinfo(np.int64).min


def mixed_model(opset: int = 13, *, batch: int | str = "N") -> onnx.ModelProto:
    """All five ops on the non-batch axes, with float, int64 and bool graph inputs.

    Graph inputs: ``x`` double ``[batch, 6, 4]``, ``idx`` int64 ``[batch, 5, 4]`` (values in
    ``[-6, 5]``), ``cond`` bool ``[batch, 5, 1]``. Initializers: ``y`` double ``[5, 4]`` (a
    trainable weight), ``scale`` double ``[4]`` (another one, fed through Where's broadcast),
    and the static int64 Slice bounds and bool Compress condition ``keep``.

    Outputs:
        ``flat`` ``[batch, 15]`` = Flatten(Compress(Where(cond, GatherElements(Slice(x)), y), keep, axis=2), 1)
        ``gathered`` ``[batch, 5, 4]`` = GatherElements(Slice(x), idx, axis=1), Slice reversing axis 1,
        ``picked`` ``[batch, 6, 4]`` = Where(cond6, x, scale) with a constant ``cond6``.
    """
    rng = np.random.default_rng(0)
    initializers = [
        numpy_helper.from_array(rng.normal(size=(5, 4)), "y"),
        numpy_helper.from_array(rng.normal(size=(4,)), "scale"),
        numpy_helper.from_array(np.array([-1], np.int64), "starts"),
        numpy_helper.from_array(np.array([INT64_MIN], np.int64), "ends"),
        numpy_helper.from_array(np.array([1], np.int64), "axes"),
        numpy_helper.from_array(np.array([-1], np.int64), "steps"),
        numpy_helper.from_array(np.array([True, False, True, True]), "keep"),
        numpy_helper.from_array(np.array([[True], [False], [True], [True], [False], [True]]), "cond6"),
    ]
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["reversed"], name="slice"),
        helper.make_node("GatherElements", ["reversed", "idx"], ["gathered"], axis=1, name="gather"),
        helper.make_node("Where", ["cond", "gathered", "y"], ["chosen"], name="where"),
        helper.make_node("Compress", ["chosen", "keep"], ["kept"], axis=2, name="compress"),
        helper.make_node("Flatten", ["kept"], ["flat"], axis=1, name="flatten"),
        helper.make_node("Where", ["cond6", "x", "scale"], ["picked"], name="where_const"),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [
            helper.make_tensor_value_info("x", TensorProto.DOUBLE, [batch, 6, 4]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [batch, 5, 4]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, [batch, 5, 1]),
        ],
        [
            helper.make_tensor_value_info("flat", TensorProto.DOUBLE, [batch, 15]),
            helper.make_tensor_value_info("gathered", TensorProto.DOUBLE, [batch, 5, 4]),
            helper.make_tensor_value_info("picked", TensorProto.DOUBLE, [batch, 6, 4]),
        ],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def mixed_inputs(batch: int, seed: int = 0):
    """Inputs for :func:`mixed_model`: ``x`` (float64), ``idx`` (int64, repeats and negatives), ``cond`` (bool)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, 6, 4))
    idx = rng.integers(-6, 6, size=(batch, 5, 4)).astype(np.int64)
    cond = rng.random(size=(batch, 5, 1)) < 0.5
    return x, idx, cond
