"""Softmax, LogSoftmax and Hardmax: versions 1, 11 and 13.

Versions 1 and 11 normalize over all the dims from ``axis`` on (the input coerced to a
matrix ``[prod(shape[:axis]), prod(shape[axis:])]``); 13 over the single dim ``axis``.
Version 1 accepts only non-negative axes.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace, normalize_axis


@register("Softmax", 13)
def softmax(input, *, axis: int = -1):
    """Implements ONNX Softmax (version 13): ``exp(input)`` normalized to sum 1 along ``axis``.

    Args:
        input: a float array of rank >= 1.
        axis: the axis to normalize over, in ``[-rank, rank - 1]``.

    Returns:
        An array of the shape and dtype of ``input``.

    Example:
        >>> jaxonnx.ops.softmax(jnp.array([[0.0, 1.0], [2.0, 2.0]]))
        Array([[0.26894143, 0.7310586 ],
               [0.5       , 0.5       ]], dtype=float32)
    """
    return _normalized(input, axis, log=False)


@register("LogSoftmax", 13)
def log_softmax(input, *, axis: int = -1):
    """Implements ONNX LogSoftmax (version 13): ``log(softmax(input))`` along ``axis``, computed stably.

    Arguments and result as in :func:`softmax`.

    Example:
        >>> jaxonnx.ops.log_softmax(jnp.array([0.0, 0.0]))
        Array([-0.6931472, -0.6931472], dtype=float32)
    """
    return _normalized(input, axis, log=True)


@register("Hardmax", 13)
def hardmax(input, *, axis: int = -1):
    """Implements ONNX Hardmax (version 13): 1 at the first maximum along ``axis``, 0 elsewhere.

    Arguments and result as in :func:`softmax`. nan counts as the maximum (numpy's
    ``argmax``). The gradient is zero (the output is piecewise constant).

    Example:
        >>> jaxonnx.ops.hardmax(jnp.array([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]]))
        Array([[1., 0., 0.],
               [0., 1., 0.]], dtype=float32)
    """
    return _hardmax(input, axis)


def _hardmax(data, axis):
    if data.ndim == 0:
        raise OnnxValidationError("needs `input` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, data.ndim)
    if data.size == 0:
        return data
    xp = namespace(data)
    first = xp.argmax(data, axis=axis, keepdims=True)
    positions = xp.arange(data.shape[axis]).reshape([-1 if d == axis else 1 for d in range(data.ndim)])
    return (positions == first).astype(data.dtype)


def _coerced_to_2d(fn, *, allow_negative):
    """Versions 1 and 11 of ``fn``'s op: ``fn`` over dim 1 of ``input`` seen as the matrix
    ``[prod(shape[:axis]), prod(shape[axis:])]``."""

    def coerced(input, *, axis=1):
        axis = normalize_axis(axis, input.ndim, allow_negative=allow_negative)
        matrix = input.reshape(math.prod(input.shape[:axis]), math.prod(input.shape[axis:]))
        return fn(matrix, axis=1).reshape(input.shape)

    coerced.__name__ = coerced.__qualname__ = f"_{fn.__name__}_coerced_to_2d"
    return coerced


def _normalized(data, axis, *, log):
    if data.ndim == 0:
        raise OnnxValidationError("needs `input` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, data.ndim)
    if data.size == 0:
        return data
    xp = namespace(data)
    # Step by step in the input type, as the Softmax-13 text defines it (Exp, ReduceSum, Div):
    # bfloat16/float16 results then round as onnx.reference's do (jax.nn.softmax keeps float32
    # between steps and differs from onnx's bfloat16 attention cases by one unit). The shift
    # by the maximum only guards exp from overflow; its gradient is zero, so it is held out.
    if data.dtype == np.float16:
        # float16 keeps float32 between the steps (as onnx.reference's float16 cases round);
        # bfloat16 below rounds at every step, as its cases do.
        return _normalized(data.astype(np.float32), axis, log=log).astype(np.float16)
    shift = xp.max(data, axis=axis, keepdims=True)
    shift = shift if xp is np else jax.lax.stop_gradient(shift)
    with np.errstate(invalid="ignore", divide="ignore"):  # rows of -inf give NaN, as in JAX
        shifted = data - shift
        exp = xp.exp(shifted)
        total = xp.sum(exp, axis=axis, keepdims=True, dtype=data.dtype)
        return shifted - xp.log(total) if log else exp / total


for _op_type, _fn in (("Softmax", softmax), ("LogSoftmax", log_softmax), ("Hardmax", hardmax)):
    register(_op_type, 11)(_coerced_to_2d(_fn, allow_negative=True))
    register(_op_type, 1)(_coerced_to_2d(_fn, allow_negative=False))
del _op_type, _fn


__all__ = ["hardmax", "log_softmax", "softmax"]
