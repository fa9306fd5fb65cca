"""Constant (versions 1, 9, 11, 12, 13, 19, 21, 23, 24, 25) and Identity (1 ... 25).

A Constant's value is numpy, so everything computed from it stays known at trace time.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import external_data_helper, helper, numpy_helper

from jaxonnx._dtypes import as_str_array
from jaxonnx._errors import ModelLoadError, OnnxValidationError
from jaxonnx._loading import external_location
from jaxonnx._registry import register


#: Limits on the dense array that a sparse tensor expands to (see :func:`sparse_to_numpy`).
#: A sparse tensor stores only its nonzero values, so a few bytes of model can name a
#: dense shape of any size; these keep a tiny file from forcing a huge allocation.
MAX_SPARSE_DENSE_ELEMENTS = 2**31
MAX_SPARSE_DENSE_BYTES = 16 * 2**30
#: Dense elements allowed per stored value (plus one): at most 2**20 times the sparse data,
#: above a floor of 64 MiB that any sparse tensor may expand to (all-zero tensors are common).
MAX_SPARSE_EXPANSION = 2**20
SPARSE_EXPANSION_FLOOR_BYTES = 64 * 2**20


def tensor_to_numpy(tensor: onnx.TensorProto) -> np.ndarray:
    """An ONNX tensor as an exact numpy array (string tensors as object arrays of ``str``).

    External data is never read here: :func:`jaxonnx.load` reads it (checking that it stays
    inside the model's folder) before any tensor is converted, so a tensor that still points
    at a file was not loaded through a model with a known folder.
    """
    if external_data_helper.uses_external_data(tensor):
        raise ModelLoadError(
            f"The tensor {tensor.name!r} keeps its data in the external file {external_location(tensor)!r}, which "
            "jaxonnx reads only while loading a model: load the model from its path or pass "
            "`base_dir=` (the folder of the file) to `jaxonnx.load`."
        )
    array = numpy_helper.to_array(tensor)
    if array.dtype == object:
        array = as_str_array(array)
    return array


def check_sparse(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """Checks a sparse tensor's dims, values and indices without building the dense array;
    returns its indices as int64.

    Raises OnnxValidationError for negative dims, values that are not 1-D, indices that are
    not ``[NNZ]`` (linear) or ``[NNZ, rank]`` integers or fall outside the dims, and a dense
    size above the limits: more than ``MAX_SPARSE_DENSE_ELEMENTS`` elements, more than
    ``MAX_SPARSE_DENSE_BYTES`` bytes, or (above ``SPARSE_EXPANSION_FLOOR_BYTES``) more than
    ``MAX_SPARSE_EXPANSION * (NNZ + 1)`` elements.
    """
    name = sparse.values.name
    dims = [int(d) for d in sparse.dims]
    if any(d < 0 for d in dims):
        raise OnnxValidationError(f"The sparse tensor {name!r} has negative dims {dims}.")
    if len(sparse.values.dims) != 1:
        raise OnnxValidationError(
            f"The values of the sparse tensor {name!r} must be 1-D ([NNZ]), got dims {list(sparse.values.dims)}."
        )
    nnz = int(sparse.values.dims[0])
    size = math.prod(dims)
    itemsize = max(_itemsize(sparse.values.data_type), 1)
    if (
        size > MAX_SPARSE_DENSE_ELEMENTS
        or size * itemsize > MAX_SPARSE_DENSE_BYTES
        or (size * itemsize > SPARSE_EXPANSION_FLOOR_BYTES and size > MAX_SPARSE_EXPANSION * (nnz + 1))
    ):
        raise OnnxValidationError(
            f"The sparse tensor {name!r} with dims {dims} would expand to {size} dense elements "
            f"({size * itemsize} bytes) from {nnz} stored values; jaxonnx refuses more than "
            f"{MAX_SPARSE_DENSE_ELEMENTS} elements, {MAX_SPARSE_DENSE_BYTES} bytes or "
            f"{MAX_SPARSE_EXPANSION} elements per stored value plus one above {SPARSE_EXPANSION_FLOOR_BYTES} bytes."
        )
    return _sparse_indices(sparse, dims, nnz, size)


def _itemsize(elem_type: int) -> int:
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, ValueError, TypeError):
        raise OnnxValidationError(
            f"The element type {elem_type} of a sparse tensor's values has no numpy dtype."
        ) from None
    return 8 if dtype == object else dtype.itemsize


def _sparse_indices(sparse: onnx.SparseTensorProto, dims: list[int], nnz: int, size: int) -> np.ndarray:
    name = sparse.values.name
    indices = tensor_to_numpy(sparse.indices)
    if indices.dtype.kind not in "iu":
        raise OnnxValidationError(f"The indices of the sparse tensor {name!r} must be integers, got {indices.dtype}.")
    indices = indices.astype(np.int64)
    if indices.shape not in ((nnz,), (nnz, len(dims))):
        raise OnnxValidationError(
            f"The indices of the sparse tensor {name!r} have shape {list(indices.shape)}; with {nnz} values "
            f"and dims {dims} they must be [{nnz}] (linear) or [{nnz}, {len(dims)}]."
        )
    if indices.ndim == 2:
        outside = np.any((indices < 0) | (indices >= np.array(dims, np.int64)), axis=1)
    else:
        outside = (indices < 0) | (indices >= size)
    if outside.any():
        first = indices[np.argmax(outside)].tolist()
        kind = "index" if indices.ndim == 2 else f"linear index (dense size {size})"
        raise OnnxValidationError(f"The sparse tensor {name!r} has the {kind} {first} outside its dims {dims}.")
    return indices


def sparse_to_numpy(sparse: onnx.SparseTensorProto) -> np.ndarray:
    """A sparse ONNX tensor as a dense numpy array, after the checks of :func:`check_sparse`.

    Positions without a stored value are zero ("" for string tensors).
    """
    indices = check_sparse(sparse)
    dims = tuple(int(d) for d in sparse.dims)
    values = tensor_to_numpy(sparse.values)
    if values.dtype == object:
        dense = np.full(dims, "", dtype=object)
    else:
        dense = np.zeros(dims, dtype=values.dtype)
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
        return as_str_array(np.array(value, dtype=object))
    if name == "value_strings":
        return as_str_array(np.array(list(value), dtype=object).reshape(-1))
    raise OnnxValidationError(f"Constant has no attribute {name!r}.")


register("Constant", 1, 9, 11, 12, 13, 19, 21, 23, 24, 25)(_constant)


@register("Identity", 1, 13, 14, 16, 19, 21, 23, 24, 25)
def _identity(x):
    return x
