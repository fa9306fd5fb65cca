"""ConstantOfShape: versions 9, 20, 21, 23, 24 and 25 (each widens the types of `value`)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.dtypes import onnx_type_name
from jaxonnx._core.padding import Call, Marks, as_tuple, with_count
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._helpers.casting import schema_types
from jaxonnx.ops._helpers.common import int_list


def _on_padding(call: Call):
    """ConstantOfShape's rule on padding: a shape that holds padded lengths gives a value marked
    at the real lengths."""
    results = as_tuple(call.run(call.args))
    shape_marks = call.marks[0]
    if shape_marks is None or shape_marks.lengths is None:
        call.refuse("takes it as its value")
    flags = shape_marks.lengths
    real = jnp.asarray(shape_marks.real).reshape(-1)
    axes = {int(i): with_count(call.length_origin(), real[i]) for i in np.flatnonzero(flags.reshape(-1))}
    return results, [Marks(axes)]


@register("ConstantOfShape", 25, static=("input",), padding=_on_padding)
def constant_of_shape(input, *, value=None):
    """Implements ONNX ConstantOfShape: an array of shape ``input`` filled with ``value``.

    The result is numpy: it depends only on ``input`` (known at trace time) and ``value``,
    so everything computed from it stays known at trace time too.

    Args:
        input: 1-D non-negative integers, the output shape (empty for a scalar).
        value: a one-element ``onnx.TensorProto`` whose value and element type the output
            takes; defaults to float32 0.

    Returns:
        A numpy array of shape ``input``.

    Example:
        >>> from onnx.numpy_helper import from_array
        >>> jaxonnx.ops.constant_of_shape([2, 3], value=from_array(np.array([7])))
        array([[7, 7, 7],
               [7, 7, 7]])
    """
    return _constant_of_shape(input, value, version=25)


def _constant_of_shape(input, value, *, version: int):
    dims = int_list(input, name="input")
    if np.ndim(input) != 1 or min(dims, default=0) < 0:
        raise OnnxValidationError(f"needs `input` as 1-D non-negative dims, got {np.asarray(input).tolist()}.")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value)
    if value.size != 1:
        raise OnnxValidationError(f"needs a one-element `value`, got shape {value.shape}.")
    allowed = schema_types("ConstantOfShape", version, "T2")
    if onnx_type_name(value.dtype) not in allowed:
        raise OnnxTypeError(
            f"does not accept a `value` of tensor({onnx_type_name(value.dtype)}); it accepts "
            f"{', '.join(sorted(allowed))}."
        )
    return np.full(dims, value.reshape(()), dtype=value.dtype)


def _older(version: int):
    @register("ConstantOfShape", version, static=("input",), padding=_on_padding)
    def constant_of_shape_before_25(input, *, value=None):
        return _constant_of_shape(input, value, version=version)


for _version in (9, 20, 21, 23, 24):
    _older(_version)


__all__ = ["constant_of_shape"]
