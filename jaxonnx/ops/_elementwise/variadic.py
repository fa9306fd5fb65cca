"""The variadic elementwise ops Max, Min, Sum and Mean. Versions 1 (with
``consumed_inputs``, ignored) and 6 need inputs of one shape; version 8 brings numpy
broadcasting; Max/Min-12 and -13 and Sum/Mean-13 only widen the types.

They fold: Max and Min of shape values stay numpy at trace time.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.broadcasting import broadcast_together, true_divide, variadic_names
from jaxonnx.ops._helpers.common import namespace


@register("Max", 8, 12, 13, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")  # numpy warns on nan in bfloat16 (ml_dtypes) comparisons
def max(*data_0):
    """Implements ONNX Max: the elementwise maximum of one or more arrays, with numpy
    broadcasting; nan wins (as in ``np.maximum``).

    Example:
        >>> jaxonnx.ops.max(jnp.array([1, 5]), jnp.array([[3], [4]]))
        Array([[3, 5],
               [4, 5]], dtype=int32)
    """
    arrays = broadcast_together(*data_0, names=variadic_names(len(data_0)))
    return functools.reduce(namespace(*arrays).maximum, arrays)


@register("Min", 8, 12, 13, padding="elementwise", layout="elementwise")
@np.errstate(invalid="ignore")
def min(*data_0):
    """Implements ONNX Min: the elementwise minimum of one or more arrays, with numpy
    broadcasting; nan wins (as in ``np.minimum``).

    Example:
        >>> jaxonnx.ops.min(jnp.array([1.0, 5.0]), jnp.array([3.0, 4.0]), jnp.array(2.0))
        Array([1., 2.], dtype=float32)
    """
    arrays = broadcast_together(*data_0, names=variadic_names(len(data_0)))
    return functools.reduce(namespace(*arrays).minimum, arrays)


@register("Sum", 8, 13, padding="elementwise", layout="elementwise")
@np.errstate(over="ignore")  # a folded float overflow gives inf, as in JAX, without a warning
def sum(*data_0):
    """Implements ONNX Sum: the elementwise sum of one or more arrays, with numpy
    broadcasting, added left to right.

    Example:
        >>> jaxonnx.ops.sum(jnp.array([1.0, 2.0]), jnp.array([10.0, 20.0]), jnp.array(0.5))
        Array([11.5, 22.5], dtype=float32)
    """
    arrays = broadcast_together(*data_0, names=variadic_names(len(data_0)))
    return functools.reduce(operator.add, arrays)


@register("Mean", 8, 13, padding="elementwise", layout="elementwise")
@np.errstate(over="ignore")
def mean(*data_0):
    """Implements ONNX Mean: the elementwise mean of one or more arrays, with numpy
    broadcasting: their sum (left to right) divided by their count.

    Example:
        >>> jaxonnx.ops.mean(jnp.array([1.0, 2.0]), jnp.array([2.0, 4.0]))
        Array([1.5, 3. ], dtype=float32)
    """
    total = sum(*data_0)
    # A true division: XLA would multiply by a rounded 1/count (see `true_divide`).
    return true_divide(total, namespace(total).asarray(len(data_0), dtype=total.dtype))


def _same_shapes(fn):
    """Versions 1 and 6: every input of one shape (no broadcasting before version 8)."""

    def same_shapes(*data_0, consumed_inputs=None):
        shapes = [tuple(x.shape) for x in data_0]
        if len(set(shapes)) > 1:
            raise OnnxValidationError(
                f"got inputs of shapes {', '.join(map(str, shapes))}; versions before 8 need "
                "inputs of one shape (broadcasting came in version 8)."
            )
        return fn(*data_0)

    same_shapes.__name__ = same_shapes.__qualname__ = f"_{fn.__name__}_6"
    return same_shapes


for _op_type, _fn in [("Max", max), ("Min", min), ("Sum", sum), ("Mean", mean)]:
    register(_op_type, 1, 6, padding="elementwise")(_same_shapes(_fn))
del _op_type, _fn

__all__ = ["max", "min", "sum", "mean"]
