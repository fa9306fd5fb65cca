"""Range (com.microsoft, version 1): onnxruntime's Range from before ONNX's Range-11."""

from __future__ import annotations

import math

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import contrib_schema

_SCHEMA = contrib_schema(
    "Range",
    "Y = [start, start + delta, ...] below `limit` (above it for a negative delta).",
    inputs=[("start", "T"), ("limit", "T"), ("delta", "T", "optional")],
    outputs=[("Y", "T")],
    type_constraints=[("T", ["tensor(float)", "tensor(double)", "tensor(int16)", "tensor(int32)", "tensor(int64)"])],
)


@register("Range", 1, domain="com.microsoft", schema=_SCHEMA, static=("start", "limit", "delta"))
def range_microsoft(start, limit, delta=None):
    """Implements com.microsoft Range: ``start, start + delta, ...`` while below ``limit``.

    As ONNX's Range, but ``delta`` is optional (1 by default). The three scalars decide the
    output's length, so they must be known at trace time.

    Args:
        start, limit: scalars of one type.
        delta: a scalar of that type (default 1), not 0.

    Returns:
        A 1-D numpy array of ``max(ceil((limit - start) / delta), 0)`` values of the type of ``start``.

    Example:
        >>> jaxonnx.ops.range_microsoft(np.float32(1.0), np.float32(3.5))
        array([1., 2., 3.], dtype=float32)
    """
    values = [np.asarray(v) for v in (start, limit, delta) if v is not None]
    if any(v.size != 1 for v in values):
        raise OnnxValidationError(f"needs scalar `start`, `limit` and `delta`, got shapes {[v.shape for v in values]}.")
    dtype = np.asarray(start).dtype
    first, stop = (np.asarray(v).reshape(()).item() for v in (start, limit))
    step = 1 if delta is None else np.asarray(delta).reshape(()).item()
    if step == 0:
        raise OnnxValidationError("got `delta`=0; it must not be 0.")
    count = max(math.ceil((stop - first) / step), 0)
    # start + i * delta, as ONNX Range here: no error accumulates along a long float range.
    return (np.asarray(first, dtype) + np.arange(count).astype(dtype) * np.asarray(step, dtype)).astype(dtype)


__all__ = ["range_microsoft"]
