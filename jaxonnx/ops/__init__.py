"""ONNX operators as exact, differentiable, jit-compilable JAX functions.

Each function has the semantics of the newest ONNX version of its op; every older
version is registered in :func:`jaxonnx.get_op`.
"""

from jaxonnx.ops import _constant  # noqa: F401  (registers Constant and Identity)
from jaxonnx.ops._compress import compress as compress
from jaxonnx.ops._flatten import flatten as flatten
from jaxonnx.ops._gather_elements import gather_elements as gather_elements
from jaxonnx.ops._slice import slice as slice
from jaxonnx.ops._slice import slice_bounds as slice_bounds
from jaxonnx.ops._where import where as where

__all__ = ["compress", "flatten", "gather_elements", "slice", "slice_bounds", "where"]
