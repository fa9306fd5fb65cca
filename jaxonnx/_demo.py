"""The demo model bundled with jaxonnx (``data/demo.onnx``): the five seed ops in one graph.

Regenerate the file with ``python -m jaxonnx._demo``.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DEMO_PATH = os.path.join(os.path.dirname(__file__), "data", "demo.onnx")

#: The demo's constants (initializers and a Constant node), printed by the demo command so
#: that a reader can check its output by hand.
DEMO_INDICES = np.array([[2, 0, 1], [1, 1, 0], [0, 2, 2], [2, 1, 0]], dtype=np.int64)
DEMO_KEEP = np.array([[True, False, True], [False, True, True], [True, True, False], [True, False, False]])
DEMO_ROWS = np.array([True, False, True, True])


def demo_model_path() -> str:
    """The path of the demo model bundled with jaxonnx: five ops (Slice, GatherElements, Where,
    Compress, Flatten) in one small graph.

    Example:
        >>> model = jaxonnx.load(jaxonnx.demo_model_path())
        >>> model.input_names, model.output_names
        (('x',), ('y',))
    """
    return DEMO_PATH


def make_demo_model() -> onnx.ModelProto:
    """x[4, 6] -> Slice (every other column) -> GatherElements -> Where -> Compress -> Flatten."""

    def constant(name, array):
        return helper.make_node(
            "Constant", [], [name], name=f"const_{name}", value=numpy_helper.from_array(array, name)
        )

    indices, keep = DEMO_INDICES, DEMO_KEEP
    nodes = [
        constant("starts", np.array([0, 1], np.int64)),
        constant("ends", np.array([4, 6], np.int64)),
        constant("axes", np.array([0, 1], np.int64)),
        constant("steps", np.array([1, 2], np.int64)),
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["odd_columns"], name="slice_odd_columns"),
        helper.make_node("GatherElements", ["odd_columns", "indices"], ["permuted"], name="permute_rows", axis=1),
        helper.make_node("Where", ["keep", "permuted", "odd_columns"], ["mixed"], name="mix"),
        constant("rows", DEMO_ROWS),
        helper.make_node("Compress", ["mixed", "rows"], ["selected"], name="drop_row_1", axis=0),
        helper.make_node("Flatten", ["selected"], ["y"], name="flatten", axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "jaxonnx_demo",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 9])],
        initializer=[numpy_helper.from_array(indices, "indices"), numpy_helper.from_array(keep, "keep")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], producer_name="jaxonnx")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    onnx.save(make_demo_model(), DEMO_PATH)
    print(f"wrote {DEMO_PATH}")
