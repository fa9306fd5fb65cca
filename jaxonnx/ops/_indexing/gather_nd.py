"""GatherND: versions 11, 12 (adds `batch_dims`) and 13 (adds bfloat16)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from jaxonnx._core.padding import Call, Marks, as_tuple, merge, real_mask
from jaxonnx._core.registry import register
from jaxonnx._errors import OnnxValidationError
from jaxonnx.ops._helpers.common import namespace
from jaxonnx.ops._helpers.indexing import nd_indices


def _on_padding(call: Call):
    """GatherND's rule on padding: marked index rows read zeros and stay marked; data marked
    along a batch axis or an axis the rows do not index keeps its marks."""
    indices = call.args[1]
    batch = call.attributes.get("batch_dims", 0) or 0
    call.no_lengths()
    index_axes = call.axis_marks(1)
    if indices.ndim - 1 in index_axes:
        call.refuse("marks the coordinates of its index rows as padding")
    args = list(call.args)
    mask = real_mask(indices.shape[:-1], index_axes)
    if index_axes:
        args[1] = jnp.where(mask[..., None], indices, 0)
    out = as_tuple(call.run(args))[0]
    axes = dict(index_axes)
    if index_axes:
        out = jnp.where(mask.reshape(mask.shape + (1,) * (out.ndim - mask.ndim)), out, 0)
    k = indices.shape[-1]
    for a, mark in call.axis_marks(0).items():
        if a < batch:
            merge(axes, a, mark)
        elif a >= batch + k:
            merge(axes, indices.ndim - 1 + a - batch - k, mark)
    return (out,), [Marks(axes) if axes else None]


@register("GatherND", 12, 13, concrete=("indices",), padding=_on_padding)
def gather_nd(data, indices, *, batch_dims: int = 0, checks=None):
    """Implements ONNX GatherND: slices of ``data`` addressed by the last axis of ``indices``.

    With ``b = batch_dims`` and ``k = indices.shape[-1]``, each row ``indices[..., :]``
    is the index of a slice of ``data`` over dims ``[b, b + k)``, within the batch that
    the first ``b`` dims (equal in both) select. The output shape is
    ``indices.shape[:-1] + data.shape[b + k:]``. Negative indices count from the back.

    Out-of-bounds indices raise when ``indices`` is concrete (numpy, or a JAX array outside
    ``jax.jit``), naming the value and its position. Under ``jax.jit`` an out-of-bounds
    row gathers zeros (``False`` for bool): this is what makes ``x[mask]`` exported as
    NonZero -> Transpose -> GatherND exact with a size hint, since the padding columns
    of :func:`non_zero` hold out-of-range indices, so the padded rows are zeros and sums
    over the result are right. The gradient with respect to ``data`` is a scatter-add
    (nothing for those rows).

    Args:
        data: the array to gather from, of rank >= 1.
        indices: int64 array of rank >= 1; its last dim is at most ``data.ndim - batch_dims``.
        batch_dims: the number of leading batch dims shared by ``data`` and ``indices``.
        checks: where the bounds check of traced ``indices`` goes, to be made after the
            computation (an eager call's compiled graph, :mod:`jaxonnx._core.checks`).

    Returns:
        An array with the dtype of ``data``.

    Example:
        >>> jaxonnx.ops.gather_nd(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 0], [0, -1]]))
        Array([3, 2], dtype=int32)
    """
    b = batch_dims
    if data.ndim < 1 or indices.ndim < 1:
        raise OnnxValidationError(
            f"needs `data` and `indices` of rank >= 1, got shapes {tuple(data.shape)} and {tuple(indices.shape)}."
        )
    if not 0 <= b < min(data.ndim, indices.ndim):
        raise OnnxValidationError(
            f"got `batch_dims`={b} for `data` of rank {data.ndim} and `indices` of rank "
            f"{indices.ndim}; it must be in [0, {min(data.ndim, indices.ndim) - 1}]."
        )
    if data.shape[:b] != indices.shape[:b]:
        raise OnnxValidationError(
            f"needs the first {b} dims (`batch_dims`) of `data` {tuple(data.shape)} and "
            f"`indices` {tuple(indices.shape)} equal."
        )
    k = indices.shape[-1]
    if k > data.ndim - b:
        raise OnnxValidationError(
            f"got `indices` of shape {tuple(indices.shape)}, whose last dim {k} exceeds the "
            f"{data.ndim - b} dims of `data` {tuple(data.shape)} after {b} batch dims."
        )
    address = nd_indices(indices, data.shape, first_dim=b, checks=checks)
    batch = math.prod(data.shape[:b])
    # The batch dims as one leading dim of both, indexed by an iota that broadcasts.
    data = data.reshape((batch, *data.shape[b:]))
    rows = (batch, *indices.shape[b:-1])
    batch_index = np.broadcast_to(np.arange(batch).reshape((batch,) + (1,) * (len(rows) - 1)), rows)
    index = (batch_index, *(a.reshape(rows) for a in address))
    out_shape = (*indices.shape[:-1], *data.shape[1 + k :])
    if namespace(data) is jnp:
        out = data.at[index].get(mode="fill", fill_value=0)
    else:
        out = data[index]
    return out.reshape(out_shape)


@register("GatherND", 11, concrete=("indices",), padding=_on_padding)
def _gather_nd_11(data, indices, *, checks=None):
    return gather_nd(data, indices, batch_dims=0, checks=checks)


__all__ = ["gather_nd"]
