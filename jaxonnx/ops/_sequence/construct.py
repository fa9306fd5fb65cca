"""SequenceConstruct and SequenceEmpty (11): making a sequence, a Python list of tensors."""

from __future__ import annotations

import numpy as np
import onnx

from jaxonnx._core.dtypes import numpy_dtype
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxTypeError


@register("SequenceConstruct", 11)
def sequence_construct(*inputs):
    """Implements ONNX SequenceConstruct: a sequence (a list) of ``inputs``, all of one type.

    Example:
        >>> len(jaxonnx.ops.sequence_construct(np.zeros(2), np.ones(3)))
        2
    """
    dtypes = {np.dtype(x.dtype) for x in inputs}
    if len(dtypes) > 1:
        raise OnnxTypeError(f"needs inputs of one element type, got {sorted(map(str, dtypes))}.")
    return list(inputs)


@register("SequenceEmpty", 11)
def sequence_empty(*, dtype=None):
    """Implements ONNX SequenceEmpty: an empty sequence (its element type, ``dtype``, float
    by default, is a declaration only: a Python list holds no type).

    Example:
        >>> jaxonnx.ops.sequence_empty()
        []
    """
    numpy_dtype(onnx.TensorProto.FLOAT if dtype is None else dtype)  # refuses an unknown type code
    return []


__all__ = ["sequence_construct", "sequence_empty"]
