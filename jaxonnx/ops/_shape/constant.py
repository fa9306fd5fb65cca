"""Constant (versions 1, 9, 11, 12, 13, 19, 21, 23, 24, 25) and Identity (1 ... 25).

A Constant's value is numpy, so everything computed from it stays known at trace time.
The registry decodes ``value`` and ``sparse_value`` (TensorProtos) to numpy.
"""

from __future__ import annotations

import numpy as np

from jaxonnx._core.dtypes import as_str_array
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError

_FORMS = {
    "value": lambda v: v,
    "sparse_value": lambda v: v,
    "value_float": lambda v: np.array(v, dtype=np.float32),
    "value_floats": lambda v: np.array(v, dtype=np.float32).reshape(-1),
    "value_int": lambda v: np.array(v, dtype=np.int64),
    "value_ints": lambda v: np.array(v, dtype=np.int64).reshape(-1),
    "value_string": lambda v: as_str_array(np.array(v, dtype=object)),
    "value_strings": lambda v: as_str_array(np.array(list(v), dtype=object).reshape(-1)),
}


@register("Constant", 1, 9, 11, 12, 13, 19, 21, 23, 24, 25, outputs_attribute="value")
def constant(**attributes) -> np.ndarray:
    """Implements ONNX Constant: the one value attribute that is given, as a numpy array.

    Example:
        >>> jaxonnx.ops.constant(value_ints=[1, 2])
        array([1, 2])
    """
    given = {name: value for name, value in attributes.items() if value is not None}
    if len(given) != 1:
        raise OnnxValidationError(f"needs exactly one of its value attributes, got {sorted(given) or 'none'}.")
    ((name, value),) = given.items()
    return _FORMS[name](value)


@register(
    "Identity",
    1,
    13,
    14,
    16,
    19,
    21,
    23,
    24,
    25,
    padding="moves",
    identity=True,
    keeps_non_zeros=True,
    layout="elementwise",
)
def identity(input):
    """Implements ONNX Identity: ``input`` itself.

    Example:
        >>> jaxonnx.ops.identity(jnp.ones(2))
        Array([1., 1.], dtype=float32)
    """
    return input


__all__ = ["constant", "identity"]
