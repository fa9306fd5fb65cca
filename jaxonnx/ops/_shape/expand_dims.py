"""ExpandDims (com.microsoft, version 1): a size-1 dim inserted at an axis given as an input."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.schemas import contrib_schema

_SCHEMA = contrib_schema(
    "ExpandDims",
    "Y = X with a size-1 dim inserted at `axis` (negative counts from the end of Y).",
    inputs=[("X", "T"), ("axis", "tensor(int32)")],
    outputs=[("Y", "T")],
    type_constraints=[
        (
            "T",
            [
                "tensor(float)",
                "tensor(double)",
                "tensor(int32)",
                "tensor(int64)",
                "tensor(bool)",
                "tensor(float16)",
                "tensor(int8)",
                "tensor(uint8)",
            ],
        )
    ],
)


@register("ExpandDims", 1, domain="com.microsoft", schema=_SCHEMA, static=("axis",))
def expand_dims(X, axis):
    """Implements com.microsoft ExpandDims: ``X`` with a size-1 dim inserted at ``axis``.

    As onnxruntime's CPU kernel, ``axis`` is a scalar in ``[-rank(X) - 1, rank(X)]``; a
    negative one counts from the end of the output. It decides the output's shape, so it must
    be known when the graph is traced (a constant or initializer of the file).

    Args:
        X: an array of any rank.
        axis: a scalar int32, the place of the new dim in the output.

    Returns:
        ``X`` reshaped to one more dim.

    Example:
        >>> jaxonnx.ops.expand_dims(jnp.ones((2, 3)), np.array(-1, np.int32)).shape
        (2, 3, 1)
    """
    axis = np.asarray(axis)
    if axis.size != 1:
        raise OnnxValidationError(f"needs a scalar `axis`, got shape {tuple(axis.shape)}.")
    position = int(axis.reshape(-1)[0])
    if not -X.ndim - 1 <= position <= X.ndim:
        raise OnnxValidationError(
            f"got `axis`={position} for `X` of rank {X.ndim}; it must be in [{-X.ndim - 1}, {X.ndim}]."
        )
    return jnp.expand_dims(X, position)


__all__ = ["expand_dims"]
