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

from jaxonnx._core.contract import OpContract
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
        >>> from onnx import TensorProto, helper, numpy_helper
        >>> from jaxonnx._core.params import float_tensors
        >>> two = numpy_helper.from_array(np.array(2.0, np.float32))
        >>> shape = numpy_helper.from_array(np.array([2], np.int64), "shape")
        >>> nodes = [
        ...     helper.make_node("Constant", [], ["scale"], value=two),
        ...     helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        ...     helper.make_node("Mul", ["flat", "scale"], ["y"]),
        ... ]
        >>> x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in "xy")
        >>> model = jaxonnx.load(helper.make_model(helper.make_graph(nodes, "scaled", [x], [y], [shape])))
        >>> float_tensors(model.graph, model.graph.initializers)  # the int64 shape is no param
        {'scale': array(2., dtype=float32)}
        >>> model.params  # one element, read as no layer's weight: the exporter's constant
        {}
    """
    weights = {name: value for name, value in initializers.items() if np.issubdtype(value.dtype, np.inexact)}
    for node in graph.nodes:
        held = _traits(node).outputs_attribute  # the attribute whose tensor is the output (Constant's)
        value = node.attributes.get(held) if held else None
        if isinstance(value, onnx.TensorProto):
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


_NO_TRAITS = OpContract()


def _traits(node) -> OpContract:
    """The contract the node's op declares, or one with no traits (a model's local function)."""
    return getattr(node.op, "contract", _NO_TRAITS)


def _read_as_weights(graph) -> set[str]:
    """The names read in a layer's weight inputs (its contract's ``weights``, through
    ``identity`` nodes), and the operand added (``adds``) to a ``linear`` op's output (the
    bias of ``x @ W + b``): where a one-element tensor is a learned weight (the bias of a
    single output unit, a one-channel normalization's scale), while one-element tensors
    elsewhere are the exporter's constants (0.5, a Pow exponent)."""
    produced_by = {out: node for node in graph.nodes for out in node.outputs}
    sources = {}  # an Identity's output -> the name it copies
    for node in graph.nodes:
        if _traits(node).identity and node.inputs:
            sources[node.outputs[0]] = node.inputs[0]

    def origin(name):
        while name in sources:
            name = sources[name]
        return name

    names = set()
    for node in graph.nodes:
        contract = _traits(node)
        if contract.weights:
            for formal, name in zip(node.op.formal_names(len(node.inputs)), node.inputs):
                if name and formal in contract.weights:
                    names.add(origin(name))
        if contract.adds and len(node.inputs) == 2:
            for mine, other in (node.inputs, node.inputs[::-1]):
                if other in produced_by and _traits(produced_by[other]).linear:
                    names.add(origin(mine))
    return names
