"""ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
ReduceSumSquare, ReduceLogSum and ReduceLogSumExp: every version.

The versions differ in where ``axes`` comes from. Up to ReduceSum-11 and the others' 13 it
is an attribute (absent or empty: reduce every axis); from ReduceSum-13 and the others' 18
it is an optional input that decides the output shape (so it is static), and an absent or
empty one reduces every axis unless ``noop_with_empty_axes`` is set, when the reduction
is the identity (ReduceL2 still takes ``sqrt(x * x)``, ReduceL1 ``|x|``, ReduceSumSquare
``x * x``, ReduceLogSum ``log(x)`` and ReduceLogSumExp ``log(exp(x))``, as the text says). Version 1 of
each accepts only non-negative axes (negative ones arrived with version 11).
"""

from __future__ import annotations

import math

import jax
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis


def reduced_axes(axes, rank: int, noop_with_empty_axes: int = 0, *, allow_negative: bool = True) -> tuple[int, ...]:
    """The axes a Reduce op reduces, as sorted non-negative ints.

    ``axes`` absent or empty means every axis, or none when ``noop_with_empty_axes``.

    Example:
        >>> jaxonnx.ops.reduced_axes([-1, 0], rank=3)
        (0, 2)
    """
    axes = () if axes is None else int_list(axes, name="axes")
    if not axes:
        return () if noop_with_empty_axes else tuple(range(rank))
    normalized = [normalize_axis(a, rank, name="axes", allow_negative=allow_negative) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise OnnxValidationError(
            f"got repeated `axes` {list(axes)} for an input of rank {rank}; each axis may appear once."
        )
    return tuple(sorted(normalized))


def _sum(xp, data, axes, keepdims):
    return xp.sum(data, axis=axes, keepdims=keepdims, dtype=data.dtype)


def _prod(xp, data, axes, keepdims):
    return xp.prod(data, axis=axes, keepdims=keepdims, dtype=data.dtype)


def _mean(xp, data, axes, keepdims):
    count = math.prod(data.shape[a] for a in axes)
    if data.dtype.kind in "iu":
        total = _sum(xp, data, axes, keepdims)
        if count == 0:
            raise OnnxValidationError(
                f"reduces an empty set of integers (`data` of shape {tuple(data.shape)}, axes {list(axes)}); "
                "their mean is undefined."
            )
        # Truncated towards zero like onnx.reference (numpy's mean in the integer type), exactly.
        floor = total // count
        return xp.where((floor * count != total) & (total < 0), floor + 1, floor)
    # float16/bfloat16 sum in float32: their sums of a few thousand values, or counts past
    # 65504, would overflow to inf and the mean would read inf or 0. An empty mean is NaN.
    total = _sum(xp, data.astype(np.float32) if data.dtype.itemsize == 2 else data, axes, keepdims)
    return (total / np.asarray(count, total.dtype)).astype(data.dtype)


def _l2(xp, data, axes, keepdims):
    squares = _sum(xp, data * data, axes, keepdims)
    if data.dtype.kind in "iu":  # the root in floating point, truncated back (onnx.reference does so)
        wide = np.dtype(np.float64) if xp is np else jax.dtypes.canonicalize_dtype(np.float64)
        return xp.sqrt(squares.astype(wide)).astype(data.dtype)
    return xp.sqrt(squares)


def _l1(xp, data, axes, keepdims):
    return _sum(xp, xp.abs(data), axes, keepdims)


def _sum_square(xp, data, axes, keepdims):
    return _sum(xp, data * data, axes, keepdims)


def _refuse_integers(op_type, data):
    if data.dtype.kind in "iu":
        raise OnnxValidationError(
            f"got integer `data` ({data.dtype}); the logarithm is defined for floats only (onnx "
            f"removed the integer types from {op_type} in version 28, and onnx.reference refuses them)."
        )


def _at_least_float32(data):
    # float16/bfloat16 sums of exponentials overflow or round away quickly: float32 between the steps.
    return data.astype(np.float32) if data.dtype.itemsize == 2 else data


def _log_sum(xp, data, axes, keepdims):
    _refuse_integers("ReduceLogSum", data)
    wide = _at_least_float32(data)
    return xp.log(_sum(xp, wide, axes, keepdims)).astype(data.dtype)  # an empty set: log(0) = -inf


def _log_sum_exp(xp, data, axes, keepdims):
    _refuse_integers("ReduceLogSumExp", data)
    if data.dtype.itemsize == 2:
        return _log_sum_exp(xp, _at_least_float32(data), axes, keepdims).astype(data.dtype)
    # log(sum(exp(x - m))) + m with m the largest finite element: exp cannot overflow, the
    # largest term is exp(0) = 1 (so the log is of a sum >= 1 unless every term is -inf).
    # m = 0 where there is no finite element (empty sets, all -inf, +inf: exp gives the
    # answer). m carries no gradient: the result does not depend on it.
    finite = xp.where(xp.isfinite(data), data, xp.full_like(data, -np.inf))
    shift = xp.max(finite, axis=axes, keepdims=True, initial=np.asarray(-np.inf, data.dtype))
    shift = xp.where(xp.isfinite(shift), shift, xp.zeros_like(shift))
    if xp is not np:
        shift = jax.lax.stop_gradient(shift)
    total = _sum(xp, xp.exp(data - shift), axes, keepdims=True)
    result = xp.log(total) + shift
    return result if keepdims else result.squeeze(axis=axes)


def _extreme(largest: bool):
    def reduce(xp, data, axes, keepdims):
        extreme = xp.max if largest else xp.min
        if data.size:
            return extreme(data, axis=axes, keepdims=keepdims)
        # An empty set gives the identity of the reduction: -inf / the type's lowest (max), ...
        dtype = np.dtype(data.dtype)
        if dtype.kind == "b":
            initial = not largest
        elif dtype.kind in "iu":
            initial = np.iinfo(dtype).min if largest else np.iinfo(dtype).max
        else:
            initial = -np.inf if largest else np.inf
        return extreme(data, axis=axes, keepdims=keepdims, initial=np.asarray(initial, dtype))

    return reduce


_REDUCTIONS = {
    "ReduceSum": _sum,
    "ReduceMean": _mean,
    "ReduceMax": _extreme(largest=True),
    "ReduceMin": _extreme(largest=False),
    "ReduceProd": _prod,
    "ReduceL2": _l2,
    "ReduceL1": _l1,
    "ReduceSumSquare": _sum_square,
    "ReduceLogSum": _log_sum,
    "ReduceLogSumExp": _log_sum_exp,
}


def _reduce(op_type, data, axes, keepdims, noop_with_empty_axes=0, *, allow_negative=True):
    axes = reduced_axes(axes, data.ndim, noop_with_empty_axes, allow_negative=allow_negative)
    with np.errstate(all="ignore"):  # overflow to inf, 0/0 = NaN: silent in numpy as in JAX
        return _REDUCTIONS[op_type](namespace(data), data, axes, bool(keepdims))


@register("ReduceSum", 13, static=("axes",), padding="sum", sums=True, layout="reduces")
def reduce_sum(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceSum (version 13): the sum of ``data`` over ``axes``.

    Args:
        data: the array to reduce; a scalar is valid.
        axes: the axes to reduce (static: Python ints, numpy or concrete arrays), in
            ``[-rank, rank - 1]``, each once. Absent or empty: every axis, or none when
            ``noop_with_empty_axes`` is 1 (then ``data`` is returned as it is).
        keepdims: 1 keeps the reduced axes with size 1, 0 drops them.
        noop_with_empty_axes: see ``axes``.

    Returns:
        The sums, in the dtype of ``data`` (integers wrap as in onnx); an empty set sums to 0.

    Example:
        >>> jaxonnx.ops.reduce_sum(jnp.arange(6.0).reshape(2, 3), [1], keepdims=0)
        Array([ 3., 12.], dtype=float32)
    """
    return _reduce("ReduceSum", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceMean", 18, static=("axes",), padding="mean", layout="reduces")
def reduce_mean(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceMean (version 18): the mean of ``data`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`. The mean
    of integers is truncated towards zero in their type (as onnx.reference computes it);
    an empty set, which onnx leaves undefined, gives NaN for floats and is refused for
    integers.

    Example:
        >>> jaxonnx.ops.reduce_mean(jnp.array([[1.0, 2.0], [3.0, 5.0]]), [0])
        Array([[2. , 3.5]], dtype=float32)
    """
    return _reduce("ReduceMean", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceMax", 18, 20, static=("axes",), padding="max", layout="reduces")
def reduce_max(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceMax (version 20): the largest element of ``data`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`. For bool
    data ``False < True``. An empty set gives ``-inf`` (floats), the type's minimum
    (integers) or False. The gradient goes to the maximal elements, split equally among ties.

    Example:
        >>> jaxonnx.ops.reduce_max(jnp.array([[1, 7], [4, 2]]), keepdims=0)
        Array(7, dtype=int32)
    """
    return _reduce("ReduceMax", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceMin", 18, 20, static=("axes",), padding="min", layout="reduces")
def reduce_min(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceMin (version 20): the smallest element of ``data`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`. For bool
    data ``False < True``. An empty set gives ``inf`` (floats), the type's maximum
    (integers) or True.

    Example:
        >>> jaxonnx.ops.reduce_min(jnp.array([[1, 7], [4, 2]]), np.array([-1]))
        Array([[1],
               [2]], dtype=int32)
    """
    return _reduce("ReduceMin", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceProd", 18, static=("axes",), padding="prod", layout="reduces")
def reduce_prod(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceProd (version 18): the product of ``data`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`. The
    product is in the dtype of ``data``; an empty set gives 1.

    Example:
        >>> jaxonnx.ops.reduce_prod(jnp.array([[1.0, 2.0], [3.0, 4.0]]), [1], keepdims=0)
        Array([ 2., 12.], dtype=float32)
    """
    return _reduce("ReduceProd", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceL2", 18, static=("axes",), padding="sum", layout="reduces")
def reduce_l2(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceL2 (version 18): ``sqrt(sum(data ** 2))`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`; with no
    axes and ``noop_with_empty_axes=1`` the result is ``sqrt(data ** 2)``, i.e. ``|data|``.
    Integers: the root of the integer sum of squares, truncated. An empty set gives 0. The
    gradient at an all-zero slice is NaN (the root's derivative at 0).

    Example:
        >>> jaxonnx.ops.reduce_l2(jnp.array([[3.0, 4.0], [5.0, 12.0]]), [1], keepdims=0)
        Array([ 5., 13.], dtype=float32)
    """
    return _reduce("ReduceL2", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceL1", 18, static=("axes",), padding="sum", layout="reduces")
def reduce_l1(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceL1 (version 18): ``sum(|data|)`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`; with no
    axes and ``noop_with_empty_axes=1`` the result is ``|data|``. In the dtype of ``data``
    (integers wrap); an empty set gives 0. The gradient at 0 is 0 (``sign(0)``).

    Example:
        >>> jaxonnx.ops.reduce_l1(jnp.array([[3.0, -4.0], [-5.0, 12.0]]), [1], keepdims=0)
        Array([ 7., 17.], dtype=float32)
    """
    return _reduce("ReduceL1", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceSumSquare", 18, static=("axes",), padding="sum", layout="reduces")
def reduce_sum_square(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceSumSquare (version 18): ``sum(data ** 2)`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`; with no
    axes and ``noop_with_empty_axes=1`` the result is ``data ** 2``. In the dtype of
    ``data`` (integers wrap); an empty set gives 0.

    Example:
        >>> jaxonnx.ops.reduce_sum_square(jnp.array([[3.0, -4.0], [-5.0, 12.0]]), [1], keepdims=0)
        Array([ 25., 169.], dtype=float32)
    """
    return _reduce("ReduceSumSquare", data, axes, keepdims, noop_with_empty_axes)


# folds=False (both): numpy's and XLA's exp and log differ in the last bit; an op gives one answer.
@register("ReduceLogSum", 18, 28, static=("axes",), folds=False, padding="sum", layout="reduces")
def reduce_log_sum(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceLogSum (version 28): ``log(sum(data))`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`; with no
    axes and ``noop_with_empty_axes=1`` the result is ``log(data)``. Floats only (integer
    ``data``, which versions before 28 list, is refused as onnx.reference refuses it). An
    empty set gives ``-inf``; a negative sum gives nan.

    Example:
        >>> jaxonnx.ops.reduce_log_sum(jnp.array([[1.0, 2.0], [3.0, 4.0]]), [1], keepdims=0)
        Array([1.0986123, 1.9459102], dtype=float32)
    """
    return _reduce("ReduceLogSum", data, axes, keepdims, noop_with_empty_axes)


@register("ReduceLogSumExp", 18, 28, static=("axes",), folds=False, padding="max", layout="reduces")
def reduce_log_sum_exp(data, axes=None, *, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Implements ONNX ReduceLogSumExp (version 28): ``log(sum(exp(data)))`` over ``axes``.

    ``axes``, ``keepdims`` and ``noop_with_empty_axes`` as in :func:`reduce_sum`. Computed
    stably (shifted by the largest finite element): large ``data`` does not overflow and
    very negative ``data`` does not underflow to ``-inf``; the gradient is the softmax of
    ``data`` over ``axes``. Floats only (as :func:`reduce_log_sum`). An empty set gives ``-inf``.

    Example:
        >>> jaxonnx.ops.reduce_log_sum_exp(jnp.array([[1000.0, 1000.0], [-1000.0, -1000.0]]), [1], keepdims=0)
        Array([1000.6932, -999.3068], dtype=float32)
    """
    return _reduce("ReduceLogSumExp", data, axes, keepdims, noop_with_empty_axes)


# What each reduction leaves marked (padded) entries as: see jaxonnx/_core/padding.py.
_PADDING = {
    "ReduceSum": "sum",
    "ReduceL1": "sum",
    "ReduceL2": "sum",
    "ReduceSumSquare": "sum",
    "ReduceLogSum": "sum",
    "ReduceMean": "mean",
    "ReduceMax": "max",
    "ReduceLogSumExp": "max",
    "ReduceMin": "min",
    "ReduceProd": "prod",
}


def _with_axes_attribute(op_type, *since_versions, allow_negative=True, folds=True, layout=""):
    """Registers ``op_type``'s versions whose ``axes`` is an attribute (no ``noop_with_empty_axes``)."""

    def reduce_with_axes_attribute(data, *, axes=None, keepdims=1):
        return _reduce(op_type, data, axes, keepdims, allow_negative=allow_negative)

    padding = _PADDING[op_type]
    sums = op_type == "ReduceSum"  # the plain sum (see OpContract.sums)
    register(op_type, *since_versions, folds=folds, padding=padding, sums=sums, layout=layout)(
        reduce_with_axes_attribute
    )


for _op_type, _versions in {
    "ReduceSum": (11,),
    "ReduceMean": (11, 13),
    "ReduceMax": (11, 12, 13),
    "ReduceMin": (11, 12, 13),
    "ReduceProd": (11, 13),
    "ReduceL2": (11, 13),
    "ReduceL1": (11, 13),
    "ReduceSumSquare": (11, 13),
    "ReduceLogSum": (11, 13),
    "ReduceLogSumExp": (11, 13),
}.items():
    _folds = _op_type not in ("ReduceLogSum", "ReduceLogSumExp")
    _with_axes_attribute(_op_type, *[v for v in _versions if v < 13], folds=_folds)
    if 13 in _versions:  # the layout pass moves the axes of versions 13 on
        _with_axes_attribute(_op_type, 13, folds=_folds, layout="reduces")
    _with_axes_attribute(_op_type, 1, allow_negative=False, folds=_folds)
del _op_type, _versions, _folds

__all__ = [
    "reduce_l1",
    "reduce_l2",
    "reduce_log_sum",
    "reduce_log_sum_exp",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "reduce_sum_square",
    "reduced_axes",
]
