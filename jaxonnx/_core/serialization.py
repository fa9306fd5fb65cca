"""Writing a model's weights back into its ONNX proto, and saving it: what
``Model.to_proto`` and ``Model.save`` do."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from jaxonnx._errors import OnnxValidationError

#: Past this many bytes a model is saved with its tensors in a file beside it: protobuf
#: refuses messages of 2 GB, and the graph itself needs some room.
_EXTERNAL_DATA_FROM = 2**31 - 2**20


def with_weights(
    proto: onnx.ModelProto, weights: Mapping[str, np.ndarray], params: Mapping[str, Any]
) -> onnx.ModelProto:
    """A copy of ``proto`` with ``params`` written into its initializers and Constant values
    of those names, each in the element type of the model's own value in ``weights`` (a
    float16 or bfloat16 weight stays one); every other byte is kept.

    Raises:
        OnnxValidationError: for a name that is no weight of the model, or a value of
            another shape (or not a float array).

    Example:
        >>> from onnx import TensorProto, helper, numpy_helper
        >>> from jaxonnx._core.serialization import with_weights
        >>> w = numpy_helper.from_array(np.ones((2, 2), np.float16), "w")
        >>> x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT16, [2, 2]) for n in "xy")
        >>> nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
        >>> proto = helper.make_model(helper.make_graph(nodes, "linear", [x], [y], [w]))
        >>> written = with_weights(proto, {"w": np.ones((2, 2), np.float16)}, {"w": np.eye(2)})
        >>> numpy_helper.to_array(written.graph.initializer[0])  # the model's float16 kept
        array([[1., 0.],
               [0., 1.]], dtype=float16)
    """
    unknown = sorted(set(params) - set(weights))
    if unknown:
        raise OnnxValidationError(
            f"`params` names {unknown}, which are not float initializers or Constant values of the model."
        )
    arrays = {}
    for name, value in params.items():
        own = weights[name]
        array = np.asarray(value)
        if array.shape != own.shape or not np.issubdtype(array.dtype, np.inexact):
            raise OnnxValidationError(
                f"The param {name!r} is {own.dtype}{list(own.shape)} in the model but got "
                f"{array.dtype}{list(array.shape)}."
            )
        arrays[name] = array.astype(own.dtype)
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for tensor in copy.graph.initializer:
        if tensor.name in arrays:
            tensor.CopyFrom(numpy_helper.from_array(arrays[tensor.name], tensor.name))
    for node in copy.graph.node:
        if node.output and node.output[0] in arrays:  # a weight a node outputs: its tensor attribute's (Constant)
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.TENSOR:
                    attribute.t.CopyFrom(numpy_helper.from_array(arrays[node.output[0]], attribute.t.name))
    return copy


def save_proto(proto: onnx.ModelProto, path: str | os.PathLike, *, external_data: bool | None = None) -> None:
    """Writes ``proto`` to ``path``, with its tensors in ``<name>.data`` beside it where
    ``external_data`` says so (by default only when the model would exceed protobuf's 2 GB
    limit)."""
    if external_data is None:
        external_data = proto.ByteSize() > _EXTERNAL_DATA_FROM
    path = os.fspath(path)
    if external_data:
        onnx.save_model(
            proto,
            path,
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=os.path.basename(path) + ".data",
            size_threshold=0,
        )
    else:
        onnx.save_model(proto, path)
