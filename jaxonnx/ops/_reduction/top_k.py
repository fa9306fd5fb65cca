"""TopK: versions 1 (``k`` attribute), 10 (``K`` input), 11 (``largest``, ``sorted``) and 24."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, Marks, as_tuple, filled, merge, with_count
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis


def _on_padding(call: Call):
    """TopK's rule on padding: marked entries rank last, so the outputs are marked past
    ``min(count, K)``; a ``K`` that is a padded length marks them at the real ``K``."""
    data, k = call.args[0], call.args[1] if len(call.args) > 1 else None
    axis = call.attributes.get("axis", -1)
    axis = axis + data.ndim if axis < 0 else axis
    largest = call.attributes.get("largest", 1)
    if call.length_flags(0) is not None:
        call.refuse("ranks padded lengths")
    axes = dict(call.axis_marks(0))
    args = list(call.args)
    if axis in axes:  # marked entries rank last
        args[0] = filled(data, {axis: axes[axis]}, "lowest" if largest else "highest")
    results = as_tuple(call.run(args))
    length = np.shape(results[0])[axis]
    if axis in axes:
        axes[axis] = with_count(axes[axis], jnp.minimum(axes[axis].count, length))
    if k is not None and call.marks[1] is not None:
        real_k = jnp.asarray(call.marks[1].real).reshape(-1)[0]
        merge(axes, axis, with_count(call.length_origin(), real_k))
    return results, [Marks(dict(axes)) if axes else None for _ in results]


@register("TopK", 11, 24, static=("K",), padding=_on_padding)
def top_k(X, K, *, axis: int = -1, largest: int = 1, sorted: int = 1):
    """Implements ONNX TopK (version 24): the ``K`` largest (or smallest) elements along ``axis``.

    Equal values keep their order along the axis: the lower index comes first, as the
    text demands. The outputs are always sorted (``sorted=0`` leaves the order to the
    implementation). The gradient with respect to ``X`` goes to the selected elements.

    Args:
        X: the array to select from.
        K: how many elements (static: a Python int or a one-element integer array), in
            ``[0, X.shape[axis]]``.
        axis: the axis to select along, in ``[-rank, rank - 1]``.
        largest: 1 selects the largest elements, in decreasing order; 0 the smallest, increasing.
        sorted: accepted; the result is sorted either way.

    Returns:
        ``(values, indices)``: ``X``'s dtype and int64 (int32 when ``jax_enable_x64`` is
        off), both with ``K`` in place of ``X.shape[axis]``.

    Example:
        >>> values, indices = jaxonnx.ops.top_k(jnp.array([3.0, 7.0, 3.0, 9.0]), [3])
        >>> values, indices
        (Array([9., 7., 3.], dtype=float32), Array([3, 1, 0], dtype=int32))
    """
    del sorted  # the order is defined either way
    values = int_list(K, name="K")
    if len(values) != 1:
        raise OnnxValidationError(f"needs a single value `K`, got {list(values)}.")
    return _top_k(X, values[0], axis, largest=bool(largest))


@register("TopK", 10, static=("K",), padding=_on_padding)
def _top_k_10(X, K, *, axis=-1):
    return top_k(X, K, axis=axis)


@register("TopK", 1, padding=_on_padding)
def _top_k_1(X, *, k, axis=-1):
    return _top_k(X, k, axis, largest=True)


def _top_k(x, k: int, axis: int, *, largest: bool):
    if x.ndim == 0:
        raise OnnxValidationError("needs `X` of rank >= 1, got a scalar.")
    axis = normalize_axis(axis, x.ndim)
    dim = x.shape[axis]
    if not 0 <= k <= dim:
        raise OnnxValidationError(
            f"got K={k} for axis {axis} of size {dim} (`X` of shape {tuple(x.shape)}); K must be in [0, {dim}]."
        )
    xp = namespace(x)
    # Sort keys: -0.0 and 0.0 are equal values, but XLA orders them.
    keys = xp.where(x == 0, xp.zeros_like(x), x) if x.dtype.kind == "f" else x
    if xp is np:
        if largest:  # a stable sort of the reversed axis, reversed back: ties by lower index
            indices = dim - 1 - np.flip(np.argsort(np.flip(keys, axis), axis=axis, stable=True), axis)
        else:
            indices = np.argsort(keys, axis=axis, stable=True)
        indices = indices[(slice(None),) * axis + (slice(0, k),)]
    else:
        # lax.top_k (largest first, ties by lower index) selects without sorting the whole axis,
        # which a sort on CPU does. The smallest are the largest of an order-reversing key: -x for floats (NaN
        # stays the largest, as in numpy's sort), ~x for integers (no overflow).
        if not largest:
            keys = -keys if x.dtype.kind == "f" else ~keys
        _, indices = jax.lax.top_k(jnp.moveaxis(keys, axis, -1), k)
        indices = jnp.moveaxis(indices, -1, axis).astype(jax.dtypes.canonicalize_dtype(np.int64))
    return xp.take_along_axis(x, indices, axis), indices


__all__ = ["top_k"]
