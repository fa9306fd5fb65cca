"""TopK: versions 1 (``k`` attribute), 10 (``K`` input), 11 (``largest``, ``sorted``) and 24."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import int_list, namespace, normalize_axis


@register("TopK", 11, 24, static=("K",), padding="top_k")
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


@register("TopK", 10, static=("K",), padding="top_k")
def _top_k_10(X, K, *, axis=-1):
    return top_k(X, K, axis=axis)


@register("TopK", 1, padding="top_k")
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
        # lax.top_k (largest first, ties by lower index) is ~100x faster than a full sort on
        # CPU. The smallest are the largest of an order-reversing key: -x for floats (NaN
        # stays the largest, as in numpy's sort), ~x for integers (no overflow).
        if not largest:
            keys = -keys if x.dtype.kind == "f" else ~keys
        _, indices = jax.lax.top_k(jnp.moveaxis(keys, axis, -1), k)
        indices = jnp.moveaxis(indices, -1, axis).astype(jax.dtypes.canonicalize_dtype(np.int64))
    return xp.take_along_axis(x, indices, axis), indices


__all__ = ["top_k"]
