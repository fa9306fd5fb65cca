"""Which tensors of a model are its params, and the checks of a param passed to a call.

A param is a float initializer or ``Constant`` value that a call may replace
(:func:`float_tensors`); the trainable ones (:func:`trainable_names`) are ``Model.params``
and its pytree leaves. ``Model.params`` states the rule.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import onnx

from jaxonnx._core.dtypes import jax_dtype
from jaxonnx._core.graph import Graph
from jaxonnx._core.loading import decode_attribute
from jaxonnx._core.registry import is_traced
from jaxonnx._core.types import ValueType
from jaxonnx._errors import OnnxValidationError


def float_tensors(graph: Graph, initializers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float tensors a param may replace, by name: the float initializers, then the
    float values of ``Constant`` nodes (paddle2onnx stores weights that way), named by the
    node's output.

    Example:
        >>> from jaxonnx._core.params import float_tensors
        >>> model = jaxonnx.load(jaxonnx.demo_model_path())
        >>> sorted(float_tensors(model.graph, model.graph.initializers)) == sorted(model.all_params)
        True
    """
    weights = {name: value for name, value in initializers.items() if np.issubdtype(value.dtype, np.inexact)}
    for node in graph.nodes:
        value = node.attributes.get("value")
        if getattr(node.op, "op_type", None) == "Constant" and isinstance(value, onnx.TensorProto):
            array = decode_attribute(value)
            if np.issubdtype(array.dtype, np.inexact):
                weights[node.outputs[0]] = array
    return weights


def trainable_names(graph: Graph, weights: dict[str, np.ndarray], shape_deciding: dict[str, str]) -> list[str]:
    """The names of ``weights`` that train: more than one element, or one element read as a
    layer's weight (:func:`_read_as_weights`), and no value that decides a shape."""
    weight_slots = _read_as_weights(graph)
    return [
        name
        for name, value in weights.items()
        if (value.size > 1 or (value.ndim and name in weight_slots)) and name not in shape_deciding
    ]


def checked_param(name: str, value, own: np.ndarray, shape_deciding: dict[str, str]) -> Any:
    """``value`` passed for the param ``name`` (the file's value ``own``), checked against
    its declared type and cast to it where it is another float type.

    Raises:
        OnnxValidationError: for a traced value of a param that decides a shape (it names
            the node it reaches), or a value of another shape or kind.
    """
    if name in shape_deciding and any(is_traced(v) for v in jax.tree.leaves(value)):
        raise OnnxValidationError(
            f"The param {name!r} decides a shape (it reaches {shape_deciding[name]}), so its value must "
            "be known at trace time and it cannot be traced (differentiated or passed through jax.jit as an "
            "argument); it is not in `model.params`. Leave it out of the params you pass."
        )
    dtype = getattr(value, "dtype", None)
    if (
        dtype is not None
        and np.issubdtype(own.dtype, np.inexact)
        and jnp.issubdtype(dtype, jnp.inexact)
        and np.dtype(dtype) != own.dtype
    ):
        # Mixed precision: a param kept in another float type (bfloat16 master weights,
        # or float32 ones for a float16 model) is cast to the model's type at the boundary;
        # gradients flow back through the cast in the param's own type.
        value = jnp.asarray(value).astype(jax_dtype(own.dtype))
    return ValueType.of_array(name, own).checked_input(value, kind="param")


# The inputs that hold a layer's learned weights (by position): a one-element tensor read
# there (the bias of a single output unit, a one-channel normalization's scale) is a param,
# while one-element tensors elsewhere are the exporter's constants (0.5, a Pow exponent).
_WEIGHT_INPUTS = {
    "Gemm": (1, 2),
    "MatMul": (1,),
    "Conv": (1, 2),
    "ConvTranspose": (1, 2),
    "PRelu": (1,),
    "BatchNormalization": (1, 2),
    "InstanceNormalization": (1, 2),
    "LayerNormalization": (1, 2),
    "GroupNormalization": (1, 2),
    "RMSNormalization": (1,),
    "LSTM": (1, 2, 3),
    "GRU": (1, 2, 3),
    "RNN": (1, 2, 3),
}
# Ops whose output a bias is added to (``x @ W + b`` as MatMul then Add).
_LINEAR_OPS = {"MatMul", "Gemm", "Conv", "ConvTranspose"}


def _read_as_weights(graph) -> set[str]:
    """The names read in a layer's weight inputs (through Identity nodes), and the operand
    added to a linear op's output: where a one-element tensor is a learned weight."""
    produced_by = {out: node for node in graph.nodes for out in node.outputs}
    sources = {}  # an Identity's output -> the name it copies
    for node in graph.nodes:
        if getattr(node.op, "op_type", None) == "Identity" and node.inputs:
            sources[node.outputs[0]] = node.inputs[0]

    def origin(name):
        while name in sources:
            name = sources[name]
        return name

    names = set()
    for node in graph.nodes:
        op_type = getattr(node.op, "op_type", "")
        for index in _WEIGHT_INPUTS.get(op_type, ()):
            if index < len(node.inputs) and node.inputs[index]:
                names.add(origin(node.inputs[index]))
        if op_type == "Add" and len(node.inputs) == 2:
            for mine, other in (node.inputs, node.inputs[::-1]):
                if getattr(getattr(produced_by.get(other), "op", None), "op_type", None) in _LINEAR_OPS:
                    names.add(origin(mine))
    return names
