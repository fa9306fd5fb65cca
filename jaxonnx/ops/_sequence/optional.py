"""Optional (15, 28), OptionalHasElement and OptionalGetElement (15, 18, 28).

An optional value is None (empty) or its value, a tensor or a sequence.
"""

from __future__ import annotations

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError


@register("Optional", 15, 28)
def optional(input=None, *, type=None):
    """Implements ONNX Optional: ``input`` as an optional value; None (empty) without it.

    Example:
        >>> jaxonnx.ops.optional(np.ones(2))
        Array([1., 1.], dtype=float32)
    """
    if input is None and type is None:
        raise OnnxValidationError("needs `input` or the `type` attribute of an empty optional.")
    return input


@register("OptionalHasElement", 15, 18, 28)
def optional_has_element(input=None):
    """Implements ONNX OptionalHasElement: whether the optional holds a value (a bool scalar,
    known at trace time). From 18 an omitted input counts as an empty optional.

    Example:
        >>> jaxonnx.ops.optional_has_element(None)
        array(False)
    """
    return np.array(input is not None)


@register("OptionalGetElement", 15, 18, 28)
def optional_get_element(input):
    """Implements ONNX OptionalGetElement: the value of a non-empty optional (from 18 a
    plain tensor or sequence passes through).

    Example:
        >>> jaxonnx.ops.optional_get_element(np.ones(2))
        Array([1., 1.], dtype=float32)
    """
    if input is None:
        raise OnnxValidationError("got an empty optional; it has no element to get.")
    return input


__all__ = ["optional", "optional_get_element", "optional_has_element"]
