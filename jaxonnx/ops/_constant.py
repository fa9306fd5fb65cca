"""Constant (versions 1, 9, 11, 12, 13, 19, 21, 23, 24, 25) and Identity (1 ... 25).

A Constant's value is numpy, so everything computed from it stays known at trace time.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from jaxonnx._errors import OnnxValidationError
from jaxonnx._registry import register


def tensor_to_numpy(tensor: onnx.TensorProto, base_dir: str | None = None) -> np.ndarray:
    """An ONNX tensor as an exact numpy array (string tensors as object arrays of ``str``)."""
    array = numpy_helper.to_array(tensor, base_dir or "")
    if array.dtype == object:
        array = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v, otypes=[object])(array)
    return array


def sparse_to_numpy(sparse: onnx.SparseTensorProto) -> np.ndarray:
    values = tensor_to_numpy(sparse.values)
    indices = numpy_helper.to_array(sparse.indices).astype(np.int64)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    if indices.ndim == 2:
        dense[tuple(indices.T)] = values
    else:
        dense.reshape(-1)[indices] = values
    return dense


def _constant(**attributes) -> np.ndarray:
    if len(attributes) != 1:
        raise OnnxValidationError(
            f"Constant needs exactly one of its value attributes, got {sorted(attributes) or 'none'}."
        )
    ((name, value),) = attributes.items()
    if name == "value":
        return tensor_to_numpy(value)
    if name == "sparse_value":
        return sparse_to_numpy(value)
    if name == "value_float":
        return np.array(value, dtype=np.float32)
    if name == "value_floats":
        return np.array(value, dtype=np.float32).reshape(-1)
    if name == "value_int":
        return np.array(value, dtype=np.int64)
    if name == "value_ints":
        return np.array(value, dtype=np.int64).reshape(-1)
    if name == "value_string":
        return np.array(value.decode() if isinstance(value, bytes) else value, dtype=object)
    if name == "value_strings":
        return np.array([v.decode() if isinstance(v, bytes) else v for v in value], dtype=object).reshape(-1)
    raise OnnxValidationError(f"Constant has no attribute {name!r}.")


register("Constant", 1, 9, 11, 12, 13, 19, 21, 23, 24, 25)(_constant)


@register("Identity", 1, 13, 14, 16, 19, 21, 23, 24, 25)
def _identity(x):
    return x
