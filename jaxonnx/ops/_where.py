"""Where: versions 9 and 16 (16 only adds bfloat16)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxonnx._errors import OnnxTypeError, OnnxValidationError
from jaxonnx.ops._common import common_namespace, public_array
from jaxonnx._registry import register

_OP = "Where"


def _where(condition, x, y):
    if condition.dtype != np.bool_:
        raise OnnxTypeError(f"{_OP} needs a bool `condition`, got dtype {condition.dtype}.")
    if x.dtype != y.dtype and not (x.dtype.kind in "OUS" and y.dtype.kind in "OUS"):
        raise OnnxTypeError(f"{_OP} needs `X` and `Y` of one dtype, got {x.dtype} and {y.dtype}.")
    try:
        # jnp's version also takes the symbolic dims of `jax.export` (shape polymorphism).
        shape = jnp.broadcast_shapes(condition.shape, x.shape, y.shape)
    except ValueError:
        raise OnnxValidationError(
            f"{_OP} cannot broadcast `condition` {tuple(condition.shape)}, `X` {tuple(x.shape)} "
            f"and `Y` {tuple(y.shape)} to one shape."
        ) from None
    # Mixed numpy/JAX inputs become JAX exactly (64-bit numpy values are not narrowed).
    xp, (condition, x, y) = common_namespace(("condition", condition), ("X", x), ("Y", y), op=_OP)
    out = xp.where(condition, x, y)
    return out if out.shape == shape else xp.broadcast_to(out, shape)


def where(condition, x, y):
    """Implements ONNX Where: elements of ``x`` where ``condition`` is true, else of ``y``.

    Args:
        condition: a bool array.
        x: values where ``condition`` is true.
        y: values where it is false; same dtype as ``x`` (no type promotion).

    Returns:
        An array of the broadcast shape of the three inputs and the dtype of ``x``.

    Example:
        >>> jaxonnx.ops.where(jnp.array([True, False]), jnp.array([1, 2]), jnp.array([[9], [8]]))
        Array([[1, 9],
               [1, 8]], dtype=int32)
    """
    return _where(
        public_array(condition, op=_OP, name="condition"),
        public_array(x, op=_OP, name="X"),
        public_array(y, op=_OP, name="Y"),
    )


register(_OP, 9, 16)(_where)

__all__ = ["where"]
